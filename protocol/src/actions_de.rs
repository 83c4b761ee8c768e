//! Reading a [`FieldValue`] off the wire, and tests of the enums of `actions` read without
//! serde's buffering (`tagged.rs`).
//!
//! serde's derive reads an untagged enum by buffering the value into its private `Content`
//! tree first and trying each variant on the buffer, which compiles every variant once more,
//! plus the buffer's machinery. A form field's value is a boolean or a string: a visitor says
//! so directly.

use serde::de::{Deserialize, Deserializer, Error, Visitor};

use crate::actions::FieldValue;

impl<'de> Deserialize<'de> for FieldValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Either;
        impl Visitor<'_> for Either {
            type Value = FieldValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a boolean or a string")
            }
            fn visit_bool<E: Error>(self, checked: bool) -> Result<FieldValue, E> {
                Ok(FieldValue::Checked(checked))
            }
            fn visit_str<E: Error>(self, text: &str) -> Result<FieldValue, E> {
                Ok(FieldValue::Text(text.to_owned()))
            }
            fn visit_string<E: Error>(self, text: String) -> Result<FieldValue, E> {
                Ok(FieldValue::Text(text))
            }
        }
        deserializer.deserialize_any(Either)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Target;
    use crate::actions::{
        Action, ClickMode, DragTo, DropPosition, FormField, InputMethod, MouseButton, TypeMode,
        WaitCondition, WaitUntil,
    };

    fn target(n: u32) -> Target {
        Target::Css(format!("#t{n}"))
    }

    /// Every variant, with every optional field set and with none, survives the trip out (the
    /// derived `Serialize`) and back (`Body`).
    #[test]
    fn every_action_reads_back_as_written() {
        let full = vec![
            Action::Click {
                target: target(1),
                mode: ClickMode::Dom,
                button: MouseButton::Right,
                click_count: 2,
                wait_until: Some(WaitUntil::Domcontentloaded),
                wait_for: Some("#done".into()),
            },
            Action::Hover { target: target(2) },
            Action::Drag {
                from: target(3),
                to: DragTo::Target {
                    target: target(4),
                    position: DropPosition::After,
                },
            },
            Action::Type {
                target: target(5),
                text: "hi".into(),
                clear: true,
                mode: TypeMode::Native,
                input_method: InputMethod::Keys,
                allow_readonly: true,
            },
            Action::PressKey {
                key: "Enter".into(),
                modifiers: 3,
                target: Some(target(6)),
            },
            Action::SelectOption {
                target: Some(target(7)),
                value: Some("v".into()),
                text: Some("t".into()),
            },
            Action::FillForm {
                fields: vec![
                    FormField {
                        target: target(8),
                        value: FieldValue::Text("x".into()),
                    },
                    FormField {
                        target: target(9),
                        value: FieldValue::Checked(true),
                    },
                ],
                submit: true,
            },
            Action::Scroll {
                target: Some(target(10)),
                dx: 1.5,
                dy: -2.0,
                to: Some(target(11)),
            },
            Action::Navigate {
                url: "https://a.test/".into(),
                wait_until: WaitUntil::Domcontentloaded,
                wait_for: Some("#x".into()),
            },
            Action::Wait {
                condition: WaitCondition::Text {
                    text: "ok".into(),
                    gone: true,
                },
                timeout_ms: 500,
            },
            Action::Wait {
                condition: WaitCondition::Selector {
                    css: "#a".into(),
                    hidden: false,
                },
                timeout_ms: 1,
            },
            Action::Wait {
                condition: WaitCondition::Url {
                    pattern: "*/x".into(),
                    gone: false,
                },
                timeout_ms: 1,
            },
            Action::Wait {
                condition: WaitCondition::NetworkIdle { idle_ms: 5 },
                timeout_ms: 1,
            },
            Action::Wait {
                condition: WaitCondition::Delay { ms: 5 },
                timeout_ms: 1,
            },
            Action::Drag {
                from: target(12),
                to: DragTo::Offset { dx: 3.0, dy: 4.0 },
            },
        ];
        let bare = vec![
            Action::Click {
                target: target(1),
                mode: ClickMode::default(),
                button: MouseButton::default(),
                click_count: 1,
                wait_until: None,
                wait_for: None,
            },
            Action::PressKey {
                key: "a".into(),
                modifiers: 0,
                target: None,
            },
            Action::SelectOption {
                target: None,
                value: None,
                text: None,
            },
            Action::Scroll {
                target: None,
                dx: 0.0,
                dy: 0.0,
                to: None,
            },
        ];
        for action in full.into_iter().chain(bare) {
            let wire = serde_json::to_string(&action).unwrap();
            assert_eq!(
                serde_json::from_str::<Action>(&wire).unwrap(),
                action,
                "{wire}"
            );
        }
    }

    #[test]
    fn defaults_and_refusals_are_the_derives() {
        let click: Action = serde_json::from_value(
            json!({"clickCount": 1, "target": {"css": "#a"}, "kind": "click"}),
        )
        .unwrap();
        assert_eq!(click.name(), "click");
        let unknown = serde_json::from_value::<Action>(json!({"kind": "fly"})).unwrap_err();
        assert!(
            unknown
                .to_string()
                .starts_with("unknown variant `fly`, expected one of `click`"),
            "{unknown}"
        );
        let extra = serde_json::from_value::<Action>(
            json!({"kind": "hover", "target": {"css": "#a"}, "x": 1}),
        )
        .unwrap_err();
        assert!(
            extra.to_string().starts_with("unknown field `x`"),
            "{extra}"
        );
        let missing =
            serde_json::from_value::<Action>(json!({"target": {"css": "#a"}})).unwrap_err();
        assert!(
            missing.to_string().starts_with("missing field `kind`"),
            "{missing}"
        );
        assert!(serde_json::from_value::<FieldValue>(json!(3)).is_err());
        assert_eq!(
            serde_json::from_value::<FieldValue>(json!(false)).unwrap(),
            FieldValue::Checked(false)
        );
    }
}
