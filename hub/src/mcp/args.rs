//! Argument handling shared by the tools: the options every action tool takes, range and length
//! checks, selectors, and the small enums mirrored from the protocol.
//!
//! The common options live in one struct, [`ActionOptions`], flattened into every action tool's
//! arguments by the catalogue (`catalogue::ToolArgs`): `timeoutMs`, and `observe` — `true`,
//! `false`, or the observation's own options as one object (`{maxNodes, maxChars, selector,
//! since}`), whose schema is only "boolean or object". Their fields carry no description in the
//! schemas: the server instructions explain them once instead of in every tool (every word of
//! `tools/list` costs tokens, and the four observation options spelled out in 17 action tools
//! cost ~370 tokens). Serde's `deny_unknown_fields` on the outer struct still rejects unknown
//! names with `flatten`, and the object's fields are checked as strictly (tests below).

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer};

use tabwire_protocol::{ObserveSpec, Target};

use super::envelope::ToolError;
use super::selector;

/// The smallest and largest `timeoutMs` any tool accepts.
const TIMEOUT_RANGE: (u32, u32) = (100, 60_000);
/// The observation after an action is small by default: the agent usually needs only what
/// changed, and a delta or a window of 30 nodes says that for a few hundred tokens.
pub const DEFAULT_OBSERVE_NODES: u32 = 30;
pub const DEFAULT_OBSERVE_CHARS: u32 = 1500;
const MAX_OBSERVE_NODES: u32 = 500;
const MAX_OBSERVE_CHARS: u32 = 20_000;
/// The longest text an agent may type or wait for.
pub const MAX_TEXT_LEN: usize = 100_000;
const MAX_QUERY_LEN: usize = 200;

/// The arguments of a tool that takes nothing but its routing arguments.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct NoArgs {}

/// The options every action tool takes besides its own and its routing arguments
/// (docs/actions.md, "Common to every action").
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionOptions {
    // Plain comments, not doc comments: a doc comment would become a description repeated in
    // every action tool's schema. INSTRUCTIONS describes these fields once.
    pub timeout_ms: Option<u32>,
    #[serde(default)]
    #[schemars(schema_with = "observe_schema")]
    pub observe: Option<Observe>,
}

/// `observe`: on, off, or on with options.
#[derive(Debug, Clone, PartialEq)]
pub enum Observe {
    /// `true` (the default) or `false`.
    Switch(bool),
    /// The observation's options.
    With(ObserveOptions),
}

/// The options of the observation after an action.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObserveOptions {
    pub max_chars: Option<u32>,
    pub max_nodes: Option<u32>,
    pub selector: Option<String>,
    pub since: Option<u64>,
}

impl<'de> Deserialize<'de> for Observe {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Observe, D::Error> {
        use serde::de::Error;
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::Bool(on) => Ok(Observe::Switch(on)),
            object @ serde_json::Value::Object(_) => serde_json::from_value(object)
                .map(Observe::With)
                .map_err(|e| D::Error::custom(format!("observe: {e}"))),
            other => Err(D::Error::custom(format!(
                "observe must be true, false or {{maxNodes, maxChars, selector, since}}; got {other}"
            ))),
        }
    }
}

fn observe_schema(_generator: &mut SchemaGenerator) -> Schema {
    json_schema!({"anyOf": [{"type": "boolean"}, {"type": "object"}]})
}

/// [`ActionOptions`] checked and filled with defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The action's time budget in milliseconds.
    pub timeout_ms: u32,
    /// The observation to take afterwards; `None` when `observe: false`.
    pub observe: Option<ObserveSpec>,
}

impl ActionOptions {
    /// Checks the options and applies the defaults; `default_timeout_ms` is the tool's own.
    pub fn resolve(self, default_timeout_ms: u32) -> Result<Resolved, ToolError> {
        let (min, max) = TIMEOUT_RANGE;
        let timeout_ms = in_range(self.timeout_ms, default_timeout_ms, min, max, "timeoutMs")?;
        // The budget is checked even with `observe: false`, so a bad value never passes
        // silently.
        let (on, options) = match self.observe {
            None => (true, ObserveOptions::default()),
            Some(Observe::Switch(on)) => (on, ObserveOptions::default()),
            Some(Observe::With(options)) => (true, options),
        };
        let max_nodes = in_range(
            options.max_nodes,
            DEFAULT_OBSERVE_NODES,
            1,
            MAX_OBSERVE_NODES,
            "observe.maxNodes",
        )?;
        let max_chars = in_range(
            options.max_chars,
            DEFAULT_OBSERVE_CHARS,
            100,
            MAX_OBSERVE_CHARS,
            "observe.maxChars",
        )?;
        let scope = optional_selector(options.selector.as_deref(), "observe.selector")?;
        let observe = on.then_some(ObserveSpec {
            max_nodes,
            max_chars,
            scope,
            since: options.since,
        });
        Ok(Resolved {
            timeout_ms,
            observe,
        })
    }
}

/// An optional number with a default, checked against its range.
pub fn in_range(
    value: Option<u32>,
    default: u32,
    min: u32,
    max: u32,
    name: &str,
) -> Result<u32, ToolError> {
    let value = value.unwrap_or(default);
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(ToolError::invalid(format!(
            "{name} must be between {min} and {max}; got {value}"
        )))
    }
}

/// Parses a selector argument, naming the argument in the error when it is not `selector`.
pub fn target(selector: &str, name: &str) -> Result<Target, ToolError> {
    selector::parse(selector).map_err(|mut error| {
        if name != "selector" {
            error.message = format!("{name}: {}", error.message);
        }
        error
    })
}

/// Parses an optional selector argument.
pub fn optional_selector(selector: Option<&str>, name: &str) -> Result<Option<Target>, ToolError> {
    selector.map(|s| target(s, name)).transpose()
}

/// Parses a selector that must be CSS: what a wait watches for may not exist yet, so it has no
/// ref.
pub fn css(selector: &str, name: &str) -> Result<String, ToolError> {
    match target(selector, name)? {
        Target::Css(css) => Ok(css),
        Target::Ref(_) => Err(ToolError::invalid(format!(
            "{name} must be a CSS selector, not an @ref: it names an element that may not exist yet"
        ))),
    }
}

/// Checks a text argument's length (in characters); `non_empty` refuses "".
pub fn text(value: &str, name: &str, non_empty: bool) -> Result<(), ToolError> {
    if non_empty && value.is_empty() {
        return Err(ToolError::invalid(format!("{name} is empty")));
    }
    if value.chars().count() > MAX_TEXT_LEN {
        return Err(ToolError::invalid(format!(
            "{name} is longer than {MAX_TEXT_LEN} characters"
        )));
    }
    Ok(())
}

/// Checks an optional short text argument (a query, a filter, a name): not blank, at most
/// `max` characters.
pub fn short_text(
    value: Option<String>,
    name: &str,
    max: usize,
) -> Result<Option<String>, ToolError> {
    match value {
        Some(text) if text.trim().is_empty() => Err(ToolError::invalid(format!("{name} is empty"))),
        Some(text) if text.chars().count() > max => Err(ToolError::invalid(format!(
            "{name} is longer than {max} characters"
        ))),
        other => Ok(other),
    }
}

/// Checks the optional snapshot query.
pub fn query(query: Option<String>) -> Result<Option<String>, ToolError> {
    short_text(query, "query", MAX_QUERY_LEN)
}

/// Declares a hub-side copy of a protocol enum with a JSON Schema (the protocol crate has no
/// schemars), and its conversion into the protocol's. The enum's doc comment is the schema's
/// description of every field of that type that has none of its own, so it names the default.
macro_rules! mirror {
    ($(#[$meta:meta])* $name:ident => $module:ident :: $proto:ident { $($body:tt)* }) => {
        mirror!(@impl $(#[$meta])* $name, tabwire_protocol::$module::$proto, $($body)*);
    };
    ($(#[$meta:meta])* $name:ident => $proto:ident { $($body:tt)* }) => {
        mirror!(@impl $(#[$meta])* $name, tabwire_protocol::$proto, $($body)*);
    };
    (@impl $(#[$meta:meta])* $name:ident, $proto:ty, $($(#[$vmeta:meta])* $variant:ident,)*) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
        #[serde(rename_all = "camelCase")]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        impl From<$name> for $proto {
            fn from(value: $name) -> Self {
                match value {
                    $($name::$variant => Self::$variant,)*
                }
            }
        }
    };
}

/// For the device tools' enums (`Name => devices::Name { … }`).
pub(super) use mirror;

mirror! {
    /// How a click is delivered; default trusted.
    ClickMode => ClickMode {
        /// Mouse input through the debugger, hit-tested.
        Trusted,
        /// `element.click()`.
        Dom,
    }
}

mirror! {
    MouseButton => MouseButton {
        /// Primary.
        Left,
        /// Wheel.
        Middle,
        /// Secondary.
        Right,
    }
}

mirror! {
    // No doc comment: type_text's description says what the modes do and which is the default.
    TypeMode => TypeMode {
        /// The value setter plus input/change events.
        Native,
        /// Trusted input into the focused field.
        Trusted,
    }
}

mirror! {
    // No doc comment: type_text's description says what the methods do.
    InputMethod => InputMethod {
        /// One insertion.
        Insert,
        /// A key down/up per character.
        Keys,
    }
}

mirror! {
    // No doc comment: the field says what it is, and the names say the rest.
    DropPosition => DropPosition {
        /// The centre.
        Center,
        /// The half facing the item before it.
        Before,
        /// The half facing the item after it.
        After,
    }
}

mirror! {
    WaitUntil => WaitUntil {
        /// The document is parsed.
        Domcontentloaded,
        /// The document and its subresources loaded.
        Complete,
    }
}

mirror! {
    ScreenshotFormat => ImageFormat {
        /// Lossless.
        Png,
        /// Lossy.
        Jpeg,
        /// Lossy, smallest.
        Webp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::catalogue::ToolArgs;
    use crate::mcp::routing::TabRoute;
    use crate::mcp::schema::{input_schema, parse_args};
    use serde_json::{Value, json};
    use tabwire_protocol::{ElementRef, ErrorCode};

    /// Example tool arguments.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Own {
        /// Required.
        selector: String,
        /// Optional.
        click_count: Option<u32>,
    }

    type WithOptions<T> = ToolArgs<T, TabRoute, ActionOptions>;

    fn parse(args: Value) -> Result<WithOptions<Own>, ToolError> {
        let Value::Object(args) = args else {
            unreachable!("tests pass objects")
        };
        parse_args(args)
    }

    #[test]
    fn flattened_options_keep_the_arguments_strict() {
        let parsed = parse(
            json!({"selector": "#go", "clickCount": 2, "tabId": 4, "observe": {"maxNodes": 9}}),
        )
        .unwrap();
        assert_eq!(parsed.args.selector, "#go");
        assert_eq!(parsed.args.click_count, Some(2));
        assert_eq!(parsed.route.tab_id, Some(4));
        assert_eq!(
            parsed.options.observe,
            Some(Observe::With(ObserveOptions {
                max_nodes: Some(9),
                ..Default::default()
            }))
        );
        for bogus in [
            json!({"selector": "#go", "bogus": 1}),
            json!({"selector": "#go", "timeout": 1}),
            json!({"selector": "#go", "maxNodes": 1}),
        ] {
            let error = parse(bogus.clone()).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidArgument, "{bogus}");
            assert!(error.message.contains("unknown field"), "{}", error.message);
            // The arguments it does take are named, to put a typo right.
            assert!(
                error.message.contains("expected one of") && error.message.contains("`clickCount`"),
                "{}",
                error.message
            );
        }
        // Wrong types and missing fields are still caught through the flattening.
        assert!(parse(json!({"selector": "#go", "clickCount": "2"})).is_err());
        assert!(parse(json!({"selector": "#go", "observe": "no"})).is_err());
        assert!(parse(json!({"clickCount": 1})).is_err());
        // The observation's options are as strict as the rest.
        for (bogus, says) in [
            (json!({"maxNode": 1}), "unknown field `maxNode`"),
            (json!({"since": "3"}), "invalid type"),
            (json!(3), "observe must be true, false or"),
        ] {
            let error = parse(json!({"selector": "#go", "observe": bogus})).unwrap_err();
            assert!(error.message.contains(says), "{}", error.message);
        }
    }

    #[test]
    fn flattened_schema_is_one_strict_object_without_option_descriptions() {
        let schema = Value::Object((*input_schema::<WithOptions<Own>>()).clone());
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["required"], json!(["selector"]));
        let properties = schema["properties"].as_object().unwrap();
        for name in [
            "selector",
            "clickCount",
            "tabId",
            "browserId",
            "timeoutMs",
            "observe",
        ] {
            assert!(properties.contains_key(name), "{name} missing: {schema}");
        }
        assert_eq!(properties.len(), 6, "{schema}");
        assert!(
            properties["timeoutMs"].get("description").is_none(),
            "{schema}"
        );
        assert_eq!(
            properties["observe"],
            json!({"anyOf": [{"type": "boolean"}, {"type": "object"}]})
        );
        assert!(schema.get("allOf").is_none(), "{schema}");
    }

    #[test]
    fn options_resolve_with_defaults() {
        let resolved = ActionOptions::default().resolve(5000).unwrap();
        assert_eq!(resolved.timeout_ms, 5000);
        assert_eq!(
            resolved.observe,
            Some(ObserveSpec {
                max_nodes: 30,
                max_chars: 1500,
                scope: None,
                since: None
            })
        );
        let resolved = ActionOptions {
            observe: Some(Observe::With(ObserveOptions {
                selector: Some("@e4".into()),
                since: Some(7),
                ..Default::default()
            })),
            timeout_ms: Some(60_000),
        }
        .resolve(5000)
        .unwrap();
        assert_eq!(resolved.timeout_ms, 60_000);
        let spec = resolved.observe.unwrap();
        assert_eq!(spec.scope, Some(Target::Ref(ElementRef::top(4))));
        assert_eq!(spec.since, Some(7));
        let off = ActionOptions {
            observe: Some(Observe::Switch(false)),
            ..Default::default()
        };
        assert_eq!(off.resolve(5000).unwrap().observe, None);
    }

    #[test]
    fn options_out_of_range_are_refused() {
        let with = |options: ObserveOptions| ActionOptions {
            observe: Some(Observe::With(options)),
            ..Default::default()
        };
        let cases = [
            (
                ActionOptions {
                    timeout_ms: Some(99),
                    ..Default::default()
                },
                "timeoutMs",
            ),
            (
                ActionOptions {
                    timeout_ms: Some(60_001),
                    ..Default::default()
                },
                "timeoutMs",
            ),
            (
                with(ObserveOptions {
                    max_chars: Some(20_001),
                    ..Default::default()
                }),
                "observe.maxChars",
            ),
            (
                with(ObserveOptions {
                    max_nodes: Some(0),
                    ..Default::default()
                }),
                "observe.maxNodes",
            ),
            (
                with(ObserveOptions {
                    selector: Some("text=Go".into()),
                    ..Default::default()
                }),
                "observe.selector",
            ),
        ];
        for (options, name) in cases {
            let error = options.resolve(5000).unwrap_err();
            assert!(error.message.contains(name), "{}", error.message);
        }
    }

    #[test]
    fn selectors_and_texts_are_checked() {
        assert_eq!(
            target("button:has-text(\"Go\")", "to").unwrap_err().code,
            ErrorCode::InvalidSelector
        );
        assert!(target("@x", "to").unwrap_err().message.starts_with("to: "));
        assert_eq!(css(" .row ", "waitFor").unwrap(), ".row");
        assert!(css("@e3", "waitFor").unwrap_err().message.contains("CSS"));
        assert!(text("", "text", true).is_err());
        assert!(text("", "text", false).is_ok());
        assert!(text(&"x".repeat(MAX_TEXT_LEN + 1), "text", false).is_err());
        assert!(text(&"é".repeat(MAX_TEXT_LEN), "text", false).is_ok());
        assert!(query(Some("  ".into())).is_err());
        assert!(query(Some("x".repeat(201))).is_err());
        assert_eq!(in_range(None, 200, 1, 5000, "maxNodes").unwrap(), 200);
        assert!(in_range(Some(0), 200, 1, 5000, "maxNodes").is_err());
    }
}
