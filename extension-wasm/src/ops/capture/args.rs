//! The text of a console call's arguments, as DevTools shows it.
//!
//! Arguments arrive as CDP `RemoteObject`s: primitives carry their `value`, objects a
//! `description` ("Object", "Array(3)", an error's message and stack) and usually a `preview` of
//! their first properties, which says far more (`{id: 1, name: "x"}`). A first string argument
//! may hold `%s`/`%d`/`%o` substitutions that take the next arguments. Each argument is capped, so
//! one huge string cannot crowd out the rest (the record caps the whole text).

use serde_json::Value;

use crate::text::cap;

/// Longest text of one argument.
const ARG_CHARS: usize = 500;

/// The text of a console call's arguments, as DevTools shows it: a first string argument's
/// `%s %d %i %f %o %O %c` take the next arguments, the rest are joined by spaces.
pub fn format_args(args: &[Value]) -> String {
    let mut parts = Vec::new();
    let mut rest = args.iter();
    if let Some(first) = args.first()
        && first.get("type").and_then(Value::as_str) == Some("string")
    {
        rest.next();
        let template = first.get("value").and_then(Value::as_str).unwrap_or("");
        parts.push(substitute(template, &mut rest));
    }
    parts.extend(rest.map(format_arg));
    parts.join(" ")
}

fn substitute<'a>(template: &str, args: &mut impl Iterator<Item = &'a Value>) -> String {
    let mut out = String::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(&spec) = chars.peek() else {
            out.push('%');
            break;
        };
        if spec == '%' {
            chars.next();
            out.push('%');
            continue;
        }
        if !"sdifoOc".contains(spec) {
            out.push('%');
            continue;
        }
        let Some(arg) = args.next() else {
            // Nothing left to substitute: the specifier stays, as in DevTools.
            out.push('%');
            continue;
        };
        chars.next();
        match spec {
            'c' => {}
            'd' | 'i' => out.push_str(&number(arg, true)),
            'f' => out.push_str(&number(arg, false)),
            _ => out.push_str(&format_arg(arg)),
        }
    }
    cap(&out, ARG_CHARS)
}

fn number(arg: &Value, integer: bool) -> String {
    match arg.get("value").and_then(Value::as_f64) {
        Some(n) if integer => format!("{}", n.trunc()),
        Some(n) => format!("{n}"),
        None => "NaN".to_owned(),
    }
}

/// The text of one argument (a CDP `RemoteObject`), capped.
pub fn format_arg(arg: &Value) -> String {
    let field = |name: &str| arg.get(name).and_then(Value::as_str).unwrap_or_default();
    let text = match field("type") {
        "string" => field("value").to_owned(),
        "undefined" => "undefined".to_owned(),
        "number" | "boolean" | "bigint" => match arg.get("unserializableValue") {
            Some(Value::String(special)) => special.clone(),
            _ => arg.get("value").map(Value::to_string).unwrap_or_default(),
        },
        "object" if field("subtype") == "null" => "null".to_owned(),
        "object" => arg
            .get("preview")
            .and_then(preview)
            .unwrap_or_else(|| field("description").to_owned()),
        _ => match arg.get("value") {
            Some(Value::String(value)) => value.clone(),
            Some(value) if !value.is_null() => value.to_string(),
            _ => field("description").to_owned(),
        },
    };
    cap(&text, ARG_CHARS)
}

/// An object's preview, `{a: 1, b: "x"}` or `[1, 2]`; `None` for kinds whose description says
/// more (errors, nodes, dates, regular expressions, functions).
fn preview(preview: &Value) -> Option<String> {
    let field = |name: &str| {
        preview
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let subtype = field("subtype");
    let is_array = matches!(subtype, "array" | "typedarray");
    if !matches!(subtype, "" | "array" | "typedarray" | "map" | "set") {
        return None;
    }
    let mut items: Vec<String> = if let Some(entries) = preview.get("entries") {
        entries
            .as_array()?
            .iter()
            .map(|entry| {
                let part = |name| {
                    entry
                        .get(name)
                        .map(|p: &Value| {
                            p.get("description")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned()
                        })
                        .unwrap_or_default()
                };
                if entry.get("key").is_some() {
                    format!("{} => {}", part("key"), part("value"))
                } else {
                    part("value")
                }
            })
            .collect()
    } else {
        preview
            .get("properties")?
            .as_array()?
            .iter()
            .map(|property| {
                let value = property_value(property);
                let name = property.get("name").and_then(Value::as_str).unwrap_or("");
                if is_array && name.parse::<u64>().is_ok() {
                    value
                } else {
                    format!("{name}: {value}")
                }
            })
            .collect()
    };
    if preview.get("overflow").and_then(Value::as_bool) == Some(true) {
        items.push("…".to_owned());
    }
    let inner = items.join(", ");
    let description = field("description");
    Some(if is_array {
        format!("[{inner}]")
    } else if description.is_empty() || description == "Object" {
        format!("{{{inner}}}")
    } else {
        format!("{description} {{{inner}}}")
    })
}

fn property_value(property: &Value) -> String {
    let field = |name: &str| property.get(name).and_then(Value::as_str);
    match (field("type"), field("value")) {
        (Some("string"), Some(value)) => format!("{value:?}"),
        (Some("undefined"), _) => "undefined".to_owned(),
        (Some("accessor"), _) => "(...)".to_owned(),
        (_, Some(value)) => value.to_owned(),
        _ => "…".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn string(text: &str) -> Value {
        json!({ "type": "string", "value": text })
    }

    #[test]
    fn primitives_show_their_value() {
        let args = [
            string("total"),
            json!({ "type": "number", "value": 3, "description": "3" }),
            json!({ "type": "boolean", "value": true }),
            json!({ "type": "undefined" }),
            json!({ "type": "object", "subtype": "null", "value": null }),
            json!({ "type": "number", "unserializableValue": "NaN", "description": "NaN" }),
            json!({ "type": "bigint", "unserializableValue": "12n", "description": "12n" }),
        ];
        assert_eq!(format_args(&args), "total 3 true undefined null NaN 12n");
    }

    #[test]
    fn objects_show_their_preview_or_description() {
        let object = json!({
            "type": "object", "className": "Object", "description": "Object",
            "preview": { "type": "object", "description": "Object", "overflow": false,
                "properties": [
                    { "name": "id", "type": "number", "value": "1" },
                    { "name": "name", "type": "string", "value": "Ada" },
                    { "name": "tags", "type": "object", "subtype": "array", "value": "Array(2)" },
                    { "name": "get", "type": "accessor" }
                ] }
        });
        assert_eq!(
            format_arg(&object),
            "{id: 1, name: \"Ada\", tags: Array(2), get: (...)}"
        );
        let array = json!({
            "type": "object", "subtype": "array", "description": "Array(120)",
            "preview": { "type": "object", "subtype": "array", "description": "Array(120)",
                "overflow": true,
                "properties": [
                    { "name": "0", "type": "number", "value": "1" },
                    { "name": "1", "type": "number", "value": "2" }
                ] }
        });
        assert_eq!(format_arg(&array), "[1, 2, …]");
        let map = json!({
            "type": "object", "subtype": "map", "description": "Map(1)",
            "preview": { "type": "object", "subtype": "map", "description": "Map(1)",
                "overflow": false, "properties": [],
                "entries": [{ "key": { "type": "string", "description": "a" },
                              "value": { "type": "number", "description": "1" } }] }
        });
        assert_eq!(format_arg(&map), "Map(1) {a => 1}");
        let error = json!({
            "type": "object", "subtype": "error", "description": "Error: boom\n    at x.js:1",
            "preview": { "type": "object", "subtype": "error", "description": "Error: boom",
                         "overflow": false, "properties": [] }
        });
        assert_eq!(format_arg(&error), "Error: boom\n    at x.js:1");
        let node = json!({ "type": "object", "subtype": "node", "description": "div#app" });
        assert_eq!(format_arg(&node), "div#app");
        let function = json!({ "type": "function", "description": "function f() {}" });
        assert_eq!(format_arg(&function), "function f() {}");
    }

    #[test]
    fn format_specifiers_take_the_next_arguments() {
        let args = [
            string("%cUser %s has %d items (%f%%) %o"),
            string("color: red"),
            string("ada"),
            json!({ "type": "number", "value": 3.7 }),
            json!({ "type": "number", "value": 0.5 }),
        ];
        assert_eq!(format_args(&args), "User ada has 3 items (0.5%) %o");
        assert_eq!(format_args(&[string("100%"), string("sure")]), "100% sure");
        assert_eq!(
            format_args(&[json!({ "type": "number", "value": 1 }), string("%s")]),
            "1 %s"
        );
    }

    #[test]
    fn each_argument_is_capped() {
        let text = format_args(&[string(&"a".repeat(900)), string("tail")]);
        assert!(text.starts_with(&format!("{}…", "a".repeat(ARG_CHARS - 1))));
        assert!(text.ends_with(" tail"));
    }
}
