//! Keyboard and form actions: `type_text`, `press_key`, `select_option`, `fill_form`
//! (docs/actions.md).
//!
//! As in `actions.rs`, each argument struct doubles as a batch step's payload and holds its
//! rules in [`ActionTool::into_action`].

use schemars::JsonSchema;
use serde::Deserialize;
use tabwire_protocol::{Action, FieldValue, FormField, Target};

use super::act::ActionTool;
use super::args::{self, InputMethod, TypeMode};
use super::envelope::ToolError;

/// The named keys `press_key` accepts (besides one character).
const NAMED_KEYS: &[&str] = &[
    "Enter",
    "Tab",
    "Escape",
    "Backspace",
    "Delete",
    "ArrowUp",
    "ArrowDown",
    "ArrowLeft",
    "ArrowRight",
    "Home",
    "End",
    "PageUp",
    "PageDown",
    "Space",
    "Insert",
    "F1",
    "F2",
    "F3",
    "F4",
    "F5",
    "F6",
    "F7",
    "F8",
    "F9",
    "F10",
    "F11",
    "F12",
];
/// Alt=1 | Control=2 | Meta=4 | Shift=8.
const MAX_MODIFIERS: u8 = 15;
/// A form is filled in one go up to this many fields.
const MAX_FIELDS: usize = 50;

/// Arguments of type_text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TypeArgs {
    pub selector: String,
    pub text: String,
    pub clear: Option<bool>,
    pub mode: Option<TypeMode>,
    // Plain comment (the description says it): keys, a key per character, implies trusted.
    pub input_method: Option<InputMethod>,
    /// Accept a read-only picker.
    pub allow_readonly: Option<bool>,
}

// Without mode or inputMethod, the protocol's `TypeMode::Auto` (docs/actions.md).
pub const TYPE_TEXT: &str = "Type real keys into a field (appends; clear replaces; over 100 \
chars: one insertion, then the last key). mode native: value setter; trusted: one insertion (keys \
with inputMethod). Date/time fields take the format their line shows, e.g. (YYYY-MM-DD), and are \
replaced. Returns the value.";

impl ActionTool for TypeArgs {
    fn into_action(self, _timeout_ms: u32) -> Result<Action, ToolError> {
        let target = args::target(&self.selector, "selector")?;
        args::text(&self.text, "text", false)?;
        let mode = match (self.mode, self.input_method) {
            (Some(TypeMode::Native), Some(_)) => {
                return Err(ToolError::invalid(
                    "inputMethod applies to mode \"trusted\" only; drop one of them",
                ));
            }
            // Asking for key events or an insertion is asking for trusted input.
            (None, Some(_)) => Some(TypeMode::Trusted),
            (mode, _) => mode,
        };
        Ok(Action::Type {
            target,
            text: self.text,
            clear: self.clear.unwrap_or(false),
            // Neither given: keys as a person types them.
            mode: mode.map_or(tabwire_protocol::TypeMode::Auto, Into::into),
            input_method: self.input_method.map(Into::into).unwrap_or_default(),
            allow_readonly: self.allow_readonly.unwrap_or(false),
        })
    }
}

/// Arguments of press_key.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PressKeyArgs {
    pub key: String,
    /// Alt=1, Control=2, Meta=4, Shift=8 (summed).
    pub modifiers: Option<u32>,
    pub selector: Option<String>,
}

pub const PRESS_KEY: &str = "Press a key (trusted): a name (Enter, Tab, Escape, ArrowDown, \
PageUp, F1-F12…) or one character; selector is focused first.";

impl ActionTool for PressKeyArgs {
    fn into_action(self, _timeout_ms: u32) -> Result<Action, ToolError> {
        check_key(&self.key)?;
        let given = self.modifiers.unwrap_or(0);
        let modifiers = u8::try_from(given)
            .ok()
            .filter(|modifiers| *modifiers <= MAX_MODIFIERS)
            .ok_or_else(|| {
                ToolError::invalid(format!(
                    "modifiers must be between 0 and {MAX_MODIFIERS} (Alt=1, Control=2, Meta=4, \
                     Shift=8, summed); got {given}"
                ))
            })?;
        Ok(Action::PressKey {
            key: self.key,
            modifiers,
            target: args::optional_selector(self.selector.as_deref(), "selector")?,
        })
    }
}

/// A key is one of [`NAMED_KEYS`] or exactly one printable character.
fn check_key(key: &str) -> Result<(), ToolError> {
    let mut chars = key.chars();
    let one_char = matches!((chars.next(), chars.next()), (Some(c), None) if !c.is_control());
    if one_char || NAMED_KEYS.contains(&key) {
        return Ok(());
    }
    Err(ToolError::invalid(format!(
        "key must be one of {}, or a single character; got {}. For combinations such as \
         Control+A, pass key \"a\" with modifiers 2",
        NAMED_KEYS.join(", "),
        serde_json::Value::String(key.chars().take(40).collect())
    )))
}

/// Arguments of select_option.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelectOptionArgs {
    pub selector: Option<String>,
    pub value: Option<String>,
    pub text: Option<String>,
}

pub const SELECT_OPTION: &str = "Choose a <select>'s option by value or text; without selector, \
the visible option with exactly text in an open custom dropdown.";

impl ActionTool for SelectOptionArgs {
    fn into_action(self, _timeout_ms: u32) -> Result<Action, ToolError> {
        let target = args::optional_selector(self.selector.as_deref(), "selector")?;
        match (&target, &self.value, &self.text) {
            (Some(_), Some(_), Some(_)) => {
                return Err(ToolError::invalid(
                    "give the option's value or its text, not both",
                ));
            }
            (Some(_), None, None) => {
                return Err(ToolError::invalid(
                    "give the option to choose: value or text",
                ));
            }
            (None, Some(_), _) => {
                return Err(ToolError::invalid(
                    "value needs selector (a native <select>); in an open custom dropdown, \
                     give the option's visible text only",
                ));
            }
            (None, None, None) => {
                return Err(ToolError::invalid(
                    "give text: the exact visible text of the option in the open dropdown (or \
                     selector with value or text for a native <select>)",
                ));
            }
            _ => {}
        }
        if let Some(value) = &self.value {
            args::text(value, "value", false)?;
        }
        if let Some(text) = &self.text {
            args::text(text, "text", true)?;
        }
        Ok(Action::SelectOption {
            target,
            value: self.value,
            text: self.text,
        })
    }
}

/// Arguments of fill_form.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FillFormArgs {
    /// 1-50.
    pub fields: Vec<FieldArgs>,
    pub submit: Option<bool>,
}

/// One field of fill_form.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FieldArgs {
    pub selector: String,
    pub value: FieldValueArg,
}

// The protocol's `FieldValue`, with a schema; the doc comment is the schema's description.
/// Text, an option, or true/false for a checkbox.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum FieldValueArg {
    // Plain comments: variant doc comments would be repeated inside the schema.
    // A checkbox or radio button's state.
    Checked(bool),
    // Text, or a select's option.
    Text(String),
}

pub const FILL_FORM: &str = "Fill one form's fields, all checked first. Returns each field's \
value and validation message; submit requests submission. Date/time fields take the format \
their line shows.";

impl ActionTool for FillFormArgs {
    fn into_action(self, _timeout_ms: u32) -> Result<Action, ToolError> {
        if self.fields.is_empty() || self.fields.len() > MAX_FIELDS {
            return Err(ToolError::invalid(format!(
                "fields must hold 1 to {MAX_FIELDS} fields; got {}",
                self.fields.len()
            )));
        }
        let fields = self
            .fields
            .into_iter()
            .enumerate()
            .map(|(index, field)| {
                let name = format!("fields[{index}].selector");
                let target = args::target(&field.selector, &name)?;
                let value = match field.value {
                    FieldValueArg::Checked(checked) => FieldValue::Checked(checked),
                    FieldValueArg::Text(text) => {
                        args::text(&text, &format!("fields[{index}].value"), false)?;
                        FieldValue::Text(text)
                    }
                };
                Ok(FormField { target, value })
            })
            .collect::<Result<Vec<_>, ToolError>>()?;
        // A form lives in one frame: refs of two frames cannot be one form's fields.
        let frame_of = |target: &Target| match target {
            Target::Ref(r) => r.frame,
            Target::Css(_) => None,
        };
        if fields
            .iter()
            .any(|f| frame_of(&f.target) != frame_of(&fields[0].target))
        {
            return Err(ToolError::invalid(
                "the fields are in different frames (see their refs); a form lives in one frame, \
                 so fill each frame's fields with its own call",
            ));
        }
        Ok(Action::FillForm {
            fields,
            submit: self.submit.unwrap_or(false),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tabwire_protocol::{ErrorCode, Target};

    fn typing(mode: Option<TypeMode>, method: Option<InputMethod>) -> Result<Action, ToolError> {
        TypeArgs {
            selector: "#name".into(),
            text: "alice".into(),
            clear: Some(true),
            mode,
            input_method: method,
            allow_readonly: None,
        }
        .into_action(5000)
    }

    #[test]
    fn typing_modes() {
        let Action::Type {
            mode,
            clear,
            input_method,
            ..
        } = typing(None, None).unwrap()
        else {
            panic!("a type action");
        };
        assert_eq!(mode, tabwire_protocol::TypeMode::Auto);
        assert!(clear);
        assert_eq!(input_method, tabwire_protocol::InputMethod::Insert);
        let Action::Type {
            mode, input_method, ..
        } = typing(None, Some(InputMethod::Keys)).unwrap()
        else {
            panic!("a type action");
        };
        assert_eq!(mode, tabwire_protocol::TypeMode::Trusted);
        assert_eq!(input_method, tabwire_protocol::InputMethod::Keys);
        assert!(typing(Some(TypeMode::Native), Some(InputMethod::Keys)).is_err());
        // The description states the extension's limit of keyed characters.
        let limit = format!("over {} chars", tabwire_protocol::actions::KEYED_MAX);
        assert!(TYPE_TEXT.contains(&limit), "{TYPE_TEXT}");
        // The explicit modes keep their meaning.
        for (given, sent) in [
            (TypeMode::Native, tabwire_protocol::TypeMode::Native),
            (TypeMode::Trusted, tabwire_protocol::TypeMode::Trusted),
        ] {
            let Action::Type {
                mode, input_method, ..
            } = typing(Some(given), None).unwrap()
            else {
                panic!("a type action");
            };
            assert_eq!(mode, sent);
            assert_eq!(input_method, tabwire_protocol::InputMethod::Insert);
        }
        let long = TypeArgs {
            selector: "#name".into(),
            text: "x".repeat(args::MAX_TEXT_LEN + 1),
            clear: None,
            mode: None,
            input_method: None,
            allow_readonly: None,
        };
        assert!(long.into_action(5000).unwrap_err().message.contains("text"));
    }

    fn key(key: &str, modifiers: Option<u32>) -> Result<Action, ToolError> {
        PressKeyArgs {
            key: key.into(),
            modifiers,
            selector: None,
        }
        .into_action(5000)
    }

    #[test]
    fn keys_are_named_keys_or_one_character() {
        for ok in ["Enter", "ArrowDown", "F12", "Space", "a", "é", " ", "/"] {
            assert!(key(ok, None).is_ok(), "{ok}");
        }
        for bad in ["", "enter", "Ctrl+A", "ab", "F13", "\n"] {
            let error = key(bad, None).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidArgument, "{bad}");
            assert!(error.message.contains("key must be"), "{}", error.message);
        }
        assert!(key("a", Some(15)).is_ok());
        assert!(
            key("a", Some(16))
                .unwrap_err()
                .message
                .contains("modifiers")
        );
        assert!(key("a", Some(300)).unwrap_err().message.contains("got 300"));
    }

    fn select(
        selector: Option<&str>,
        value: Option<&str>,
        text: Option<&str>,
    ) -> Result<Action, ToolError> {
        SelectOptionArgs {
            selector: selector.map(Into::into),
            value: value.map(Into::into),
            text: text.map(Into::into),
        }
        .into_action(5000)
    }

    #[test]
    fn select_option_rules() {
        assert!(select(Some("#country"), Some("fr"), None).is_ok());
        assert!(select(Some("#country"), None, Some("France")).is_ok());
        assert!(select(None, None, Some("France")).is_ok());
        assert!(select(Some("#country"), Some("fr"), Some("France")).is_err());
        assert!(select(Some("#country"), None, None).is_err());
        assert!(select(None, Some("fr"), None).is_err());
        assert!(select(None, Some("fr"), Some("France")).is_err());
        assert!(select(None, None, None).is_err());
        assert!(select(None, None, Some("")).is_err());
    }

    fn field(selector: &str, value: FieldValueArg) -> FieldArgs {
        FieldArgs {
            selector: selector.into(),
            value,
        }
    }

    #[test]
    fn forms_take_one_to_fifty_fields() {
        let form = FillFormArgs {
            fields: vec![
                field("#name", FieldValueArg::Text("alice".into())),
                field("@e7", FieldValueArg::Checked(true)),
            ],
            submit: Some(true),
        };
        assert_eq!(
            form.into_action(5000).unwrap(),
            Action::FillForm {
                fields: vec![
                    FormField {
                        target: Target::Css("#name".into()),
                        value: FieldValue::Text("alice".into())
                    },
                    FormField {
                        target: Target::Ref(tabwire_protocol::ElementRef::top(7)),
                        value: FieldValue::Checked(true)
                    },
                ],
                submit: true,
            }
        );
        let empty = FillFormArgs {
            fields: vec![],
            submit: None,
        };
        assert!(empty.into_action(5000).is_err());
        let many = FillFormArgs {
            fields: (0..51)
                .map(|i| field(&format!("#f{i}"), FieldValueArg::Checked(false)))
                .collect(),
            submit: None,
        };
        assert!(many.into_action(5000).unwrap_err().message.contains("51"));
        let bad = FillFormArgs {
            fields: vec![
                field("#ok", FieldValueArg::Checked(true)),
                field("text=Name", FieldValueArg::Text("x".into())),
            ],
            submit: None,
        };
        let error = bad.into_action(5000).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidSelector);
        assert!(
            error.message.starts_with("fields[1].selector: "),
            "{}",
            error.message
        );
    }

    #[test]
    fn field_values_are_strings_or_booleans() {
        let parse = |value: serde_json::Value| {
            serde_json::from_value::<FieldArgs>(
                serde_json::json!({"selector": "#a", "value": value}),
            )
        };
        assert!(matches!(
            parse(true.into()).unwrap().value,
            FieldValueArg::Checked(true)
        ));
        assert!(matches!(
            parse("x".into()).unwrap().value,
            FieldValueArg::Text(_)
        ));
        assert!(parse(3.into()).is_err());
        assert!(
            serde_json::from_value::<FieldArgs>(
                serde_json::json!({"selector": "#a", "value": "x", "extra": 1})
            )
            .is_err()
        );
    }
}
