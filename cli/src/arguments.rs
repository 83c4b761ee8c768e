//! A tool's flags turned into its arguments object, by the tool's input schema from
//! `tools/list`.
//!
//! - Names: the schema's own (`--tabId`) or their kebab-case spelling (`--tab-id`); `--no-NAME`
//!   is a boolean's `false`.
//! - Values by the property's type (`type`, a list of types, `anyOf`/`oneOf`, `enum`, a local
//!   `$ref`): integer, number, boolean (a bare flag is `true`), null, string; arrays and objects
//!   as JSON. An array also takes one item per flag, repeated (`--groups network --groups
//!   console`). Where several types fit, the first of integer, number, boolean, null, JSON,
//!   string that parses wins, so `--tabId 3` is a number and a string property keeps `"3"`.
//! - `--json` gives the whole object; each flag replaces its key in it (repeated array flags
//!   build one new array).
//!
//! The hub checks the arguments again, strictly; this only spares a round trip for what is
//! certainly wrong, and says so with the tool's arguments listed.

use serde_json::{Map, Value};

use crate::command::ToolFlag;

/// Why the flags do not make arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentError {
    /// No property of this name.
    #[error("{tool} has no argument --{name}")]
    Unknown {
        /// The tool.
        tool: String,
        /// The name as written.
        name: String,
    },
    /// A value that does not read as the property's type.
    #[error("--{name} {value:?}: expected {expected}")]
    BadValue {
        /// The name as written.
        name: String,
        /// The value as written.
        value: String,
        /// The types it could have had.
        expected: String,
    },
    /// A flag that is not a boolean but has no value.
    #[error("--{name} needs a value ({expected})")]
    MissingValue {
        /// The name as written.
        name: String,
        /// The types it could have had.
        expected: String,
    },
    /// A flag given twice for a property that takes one value.
    #[error("--{name} is given twice")]
    Repeated {
        /// The name as written.
        name: String,
    },
}

/// A JSON Schema type, as far as the command line cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Integer,
    Number,
    Boolean,
    Null,
    Object,
    Array,
    String,
}

impl Kind {
    fn from_name(name: &str) -> Option<Kind> {
        Some(match name {
            "integer" => Kind::Integer,
            "number" => Kind::Number,
            "boolean" => Kind::Boolean,
            "null" => Kind::Null,
            "object" => Kind::Object,
            "array" => Kind::Array,
            "string" => Kind::String,
            _ => return None,
        })
    }

    fn of(value: &Value) -> Kind {
        match value {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Boolean,
            Value::Number(n) if n.is_i64() || n.is_u64() => Kind::Integer,
            Value::Number(_) => Kind::Number,
            Value::String(_) => Kind::String,
            Value::Array(_) => Kind::Array,
            Value::Object(_) => Kind::Object,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Integer => "integer",
            Kind::Number => "number",
            Kind::Boolean => "boolean",
            Kind::Null => "null",
            Kind::Object => "object (JSON)",
            Kind::Array => "array (JSON, or one item per flag)",
            Kind::String => "string",
        }
    }
}

/// Builds the arguments of `tool` from `--json` (already parsed, if given) and the flags.
/// `schema` is the tool's input schema; `None` when the hub did not list the tool, in which
/// case values are read as JSON where they parse and as strings otherwise.
pub fn build(
    tool: &str,
    schema: Option<&Map<String, Value>>,
    json: Option<Map<String, Value>>,
    flags: &[ToolFlag],
) -> Result<Map<String, Value>, ArgumentError> {
    let mut arguments = json.unwrap_or_default();
    // Keys set by flags so far: a second flag for the same key appends (arrays) or is an error.
    let mut set_by_flags: Vec<String> = Vec::new();
    for flag in flags {
        let (key, negated, property) = match schema {
            Some(schema) => {
                let (key, negated) =
                    resolve(schema, &flag.name).ok_or_else(|| ArgumentError::Unknown {
                        tool: tool.to_owned(),
                        name: flag.name.clone(),
                    })?;
                let property = schema_property(schema, &key);
                (key, negated, property)
            }
            None => (flag.name.clone(), false, None),
        };
        let kinds = match property {
            Some(property) => kinds(schema.expect("a property has a schema"), property),
            None => Vec::new(),
        };
        let repeated = set_by_flags.contains(&key);
        let value = if negated {
            if flag.value.is_some() {
                return Err(ArgumentError::BadValue {
                    name: flag.name.clone(),
                    value: flag.value.clone().unwrap_or_default(),
                    expected: "no value (--no-NAME is false)".into(),
                });
            }
            Value::Bool(false)
        } else {
            convert(&flag.name, flag.value.as_deref(), &kinds, property, schema)?
        };
        if repeated {
            match arguments.get_mut(&key) {
                Some(Value::Array(items)) if kinds.contains(&Kind::Array) => match value {
                    Value::Array(more) => items.extend(more),
                    one => items.push(one),
                },
                _ => {
                    return Err(ArgumentError::Repeated {
                        name: flag.name.clone(),
                    });
                }
            }
        } else {
            arguments.insert(key.clone(), value);
            set_by_flags.push(key);
        }
    }
    Ok(arguments)
}

/// The property a flag names, and whether it was `--no-NAME`.
fn resolve(schema: &Map<String, Value>, name: &str) -> Option<(String, bool)> {
    let properties = schema.get("properties")?.as_object()?;
    let find = |name: &str| {
        if properties.contains_key(name) {
            return Some(name.to_owned());
        }
        let camel = camel_case(name);
        properties.contains_key(&camel).then_some(camel)
    };
    if let Some(key) = find(name) {
        return Some((key, false));
    }
    let positive = name.strip_prefix("no-")?;
    let key = find(positive)?;
    let is_boolean = kinds(schema, &properties[&key]).contains(&Kind::Boolean);
    is_boolean.then_some((key, true))
}

fn schema_property<'a>(schema: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    schema.get("properties")?.as_object()?.get(key)
}

/// `tab-id` → `tabId`.
pub fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '-' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `tabId` → `tab-id`.
pub fn kebab_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The types a property may have, in [`Kind`] order, without repeats.
fn kinds(root: &Map<String, Value>, property: &Value) -> Vec<Kind> {
    let mut found = Vec::new();
    collect_kinds(root, property, &mut found, 0);
    found.sort();
    found.dedup();
    found
}

fn collect_kinds(root: &Map<String, Value>, schema: &Value, found: &mut Vec<Kind>, depth: u8) {
    // A schema that refers to itself in a loop is not followed for ever.
    if depth > 8 {
        return;
    }
    match schema.get("type") {
        Some(Value::String(name)) => found.extend(Kind::from_name(name)),
        Some(Value::Array(names)) => found.extend(
            names
                .iter()
                .filter_map(Value::as_str)
                .filter_map(Kind::from_name),
        ),
        _ => {}
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        found.extend(values.iter().map(Kind::of));
    }
    if let Some(value) = schema.get("const") {
        found.push(Kind::of(value));
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(options)) = schema.get(key) {
            for option in options {
                collect_kinds(root, option, found, depth + 1);
            }
        }
    }
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| local_ref(root, reference))
    {
        collect_kinds(root, target, found, depth + 1);
    }
}

/// `#/$defs/Name` (or `#/definitions/Name`) inside the tool's own schema.
fn local_ref<'a>(root: &'a Map<String, Value>, reference: &str) -> Option<&'a Value> {
    let path = reference.strip_prefix("#/")?;
    let mut parts = path.split('/');
    let mut at = root.get(parts.next()?)?;
    for part in parts {
        at = at.get(part)?;
    }
    Some(at)
}

/// The schema of an array property's items, if it says.
fn items_schema<'a>(root: &'a Map<String, Value>, property: &'a Value) -> Option<&'a Value> {
    if let Some(items) = property.get("items") {
        return Some(items);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = property.get(key) {
            for option in options {
                if let Some(items) = option.get("items") {
                    return Some(items);
                }
            }
        }
    }
    let target = local_ref(root, property.get("$ref")?.as_str()?)?;
    target.get("items")
}

/// A flag's value read as one of `kinds` (any JSON value, else a string, when they are
/// unknown).
fn convert(
    name: &str,
    value: Option<&str>,
    kinds: &[Kind],
    property: Option<&Value>,
    root: Option<&Map<String, Value>>,
) -> Result<Value, ArgumentError> {
    let expected = || {
        if kinds.is_empty() {
            "a value".to_owned()
        } else {
            kinds
                .iter()
                .map(|kind| kind.name())
                .collect::<Vec<_>>()
                .join(" or ")
        }
    };
    let Some(text) = value else {
        if kinds.is_empty() || kinds.contains(&Kind::Boolean) {
            return Ok(Value::Bool(true));
        }
        return Err(ArgumentError::MissingValue {
            name: name.to_owned(),
            expected: expected(),
        });
    };
    if kinds.is_empty() {
        return Ok(serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())));
    }
    for kind in kinds {
        let parsed = match kind {
            Kind::Integer => text
                .parse::<i64>()
                .ok()
                .map(Value::from)
                .or_else(|| text.parse::<u64>().ok().map(Value::from)),
            Kind::Number => text
                .parse::<f64>()
                .ok()
                .filter(|n| n.is_finite())
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number),
            Kind::Boolean => match text {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
            Kind::Null => (text == "null").then_some(Value::Null),
            Kind::Object => serde_json::from_str::<Value>(text)
                .ok()
                .filter(Value::is_object),
            Kind::Array => serde_json::from_str::<Value>(text)
                .ok()
                .filter(Value::is_array)
                .or_else(|| {
                    // One item, read by the items' own schema.
                    let (root, property) = (root?, property?);
                    let items = items_schema(root, property);
                    let item_kinds = items.map(|items| self::kinds(root, items));
                    let item_kinds = item_kinds.unwrap_or_default();
                    if item_kinds.contains(&Kind::Array) {
                        return None;
                    }
                    convert(name, Some(text), &item_kinds, items, Some(root))
                        .ok()
                        .map(|item| Value::Array(vec![item]))
                }),
            Kind::String => Some(Value::String(text.to_owned())),
        };
        if let Some(parsed) = parsed {
            return Ok(parsed);
        }
    }
    Err(ArgumentError::BadValue {
        name: name.to_owned(),
        value: text.to_owned(),
        expected: expected(),
    })
}

/// The arguments of a tool for a person: `--tab-id integer (tabId): description`, one a line,
/// required ones marked.
pub fn describe(schema: &Map<String, Value>) -> Vec<String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    properties
        .iter()
        .map(|(key, property)| {
            let kinds = kinds(schema, property);
            let mut line = format!("  --{}", kebab_case(key));
            if !kinds.is_empty() {
                let names: Vec<&str> = kinds
                    .iter()
                    .map(|kind| kind.name().split(' ').next().unwrap_or_default())
                    .collect();
                line.push(' ');
                line.push_str(&names.join("|"));
            }
            if let Some(Value::Array(values)) = property.get("enum") {
                let values: Vec<String> = values.iter().map(Value::to_string).collect();
                line.push_str(&format!(" (one of {})", values.join(", ")));
            }
            if required.contains(&key.as_str()) {
                line.push_str(" [required]");
            }
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                line.push_str(": ");
                line.push_str(description);
            }
            line
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Map<String, Value> {
        json!({
            "type": "object",
            "properties": {
                "tabId": {"type": "integer", "description": "The tab."},
                "text": {"type": "string"},
                "clear": {"type": "boolean"},
                "maxChars": {"type": ["integer", "null"]},
                "ratio": {"type": "number"},
                "groups": {"type": "array", "items": {"type": "string", "enum": ["network", "console"]}},
                "ids": {"type": "array", "items": {"type": "integer"}},
                "mode": {"enum": ["dom", "trusted"]},
                "target": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/Point"}]},
                "step": {"$ref": "#/$defs/Point"},
            },
            "required": ["text"],
            "$defs": {"Point": {"type": "object"}},
        })
        .as_object()
        .unwrap()
        .clone()
    }

    fn flag(name: &str, value: Option<&str>) -> ToolFlag {
        ToolFlag {
            name: name.into(),
            value: value.map(str::to_owned),
        }
    }

    fn built(flags: &[ToolFlag], json: Option<Value>) -> Result<Value, ArgumentError> {
        let json = json.map(|json| match json {
            Value::Object(map) => map,
            other => panic!("--json is an object by then, not {other}"),
        });
        build("t", Some(&schema()), json, flags).map(Value::Object)
    }

    #[test]
    fn names_and_types() {
        let args = built(
            &[
                flag("tab-id", Some("3")),
                flag("text", Some("42")),
                flag("clear", None),
                flag("maxChars", Some("null")),
                flag("ratio", Some("0.5")),
                flag("mode", Some("dom")),
                flag("target", Some("#login")),
                flag("step", Some("{\"x\":1}")),
            ],
            None,
        )
        .unwrap();
        assert_eq!(
            args,
            json!({"tabId": 3, "text": "42", "clear": true, "maxChars": null, "ratio": 0.5,
                   "mode": "dom", "target": "#login", "step": {"x": 1}})
        );
    }

    #[test]
    fn booleans_take_true_false_or_nothing() {
        let args = built(
            &[flag("clear", Some("false")), flag("text", Some("a"))],
            None,
        )
        .unwrap();
        assert_eq!(args["clear"], false);
        let args = built(&[flag("no-clear", None)], None).unwrap();
        assert_eq!(args["clear"], false);
        assert!(matches!(
            built(&[flag("clear", Some("yes"))], None),
            Err(ArgumentError::BadValue { .. })
        ));
        // --no- only for booleans.
        assert!(matches!(
            built(&[flag("no-text", None)], None),
            Err(ArgumentError::Unknown { .. })
        ));
    }

    #[test]
    fn arrays_take_json_or_one_item_per_flag() {
        let args = built(
            &[
                flag("groups", Some("network")),
                flag("groups", Some("console")),
                flag("ids", Some("[1,2]")),
                flag("ids", Some("3")),
            ],
            None,
        )
        .unwrap();
        assert_eq!(args["groups"], json!(["network", "console"]));
        assert_eq!(args["ids"], json!([1, 2, 3]));
        assert!(matches!(
            built(&[flag("ids", Some("x"))], None),
            Err(ArgumentError::BadValue { .. })
        ));
    }

    #[test]
    fn flags_replace_keys_of_json() {
        let args = built(
            &[flag("tabId", Some("9")), flag("ids", Some("5"))],
            Some(json!({"tabId": 1, "text": "kept", "ids": [1, 2]})),
        )
        .unwrap();
        assert_eq!(args, json!({"tabId": 9, "text": "kept", "ids": [5]}));
    }

    #[test]
    fn mistakes() {
        assert_eq!(
            built(&[flag("tabid", Some("3"))], None),
            Err(ArgumentError::Unknown {
                tool: "t".into(),
                name: "tabid".into()
            })
        );
        assert!(matches!(
            built(&[flag("tab-id", Some("three"))], None),
            Err(ArgumentError::BadValue { .. })
        ));
        assert!(matches!(
            built(&[flag("tab-id", None)], None),
            Err(ArgumentError::MissingValue { .. })
        ));
        assert!(matches!(
            built(&[flag("text", Some("a")), flag("text", Some("b"))], None),
            Err(ArgumentError::Repeated { .. })
        ));
        assert!(matches!(
            built(&[flag("ratio", Some("NaN"))], None),
            Err(ArgumentError::BadValue { .. })
        ));
    }

    #[test]
    fn without_a_schema_values_are_json_or_strings() {
        let args = build(
            "hidden",
            None,
            None,
            &[
                flag("n", Some("3")),
                flag("s", Some("hello")),
                flag("b", None),
            ],
        )
        .unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"n": 3, "s": "hello", "b": true})
        );
    }

    #[test]
    fn spellings() {
        assert_eq!(camel_case("tab-id"), "tabId");
        assert_eq!(camel_case("tabId"), "tabId");
        assert_eq!(kebab_case("maxChars"), "max-chars");
        let lines = describe(&schema());
        assert!(
            lines.contains(&"  --tab-id integer: The tab.".to_owned()),
            "{lines:?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("  --text string [required]"))
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("--mode string (one of \"dom\", \"trusted\")"))
        );
    }
}
