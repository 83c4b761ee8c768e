//! A JSON Schema checker for the keywords the hub's schemas use, for tests: with it the tests
//! hold a schema and the parser it describes to the same verdicts without a validator crate.
//!
//! It knows exactly [`KEYWORDS`]; a schema with any other keyword is an error, so a new keyword
//! from schemars shows up as a failing test here rather than as a check silently skipped.

use serde_json::Value;

/// The keywords `tools/list` may use. Besides validation keywords, `description` and `default`,
/// which only annotate.
pub const KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "description",
    "default",
];

/// Whether `value` is valid under `schema`; the error says where and why not.
pub fn check(schema: &Value, value: &Value) -> Result<(), String> {
    check_at(schema, value, "$")
}

fn check_at(schema: &Value, value: &Value, path: &str) -> Result<(), String> {
    let Value::Object(schema) = schema else {
        return Err(format!("{path}: the schema is not an object"));
    };
    if let Some(keyword) = schema.keys().find(|key| !KEYWORDS.contains(&key.as_str())) {
        return Err(format!("{path}: unknown keyword {keyword}"));
    }
    if let Some(types) = schema.get("type") {
        let types: Vec<&str> = match types {
            Value::String(one) => vec![one.as_str()],
            Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
            _ => return Err(format!("{path}: bad type keyword")),
        };
        if !types.iter().any(|name| has_type(value, name)) {
            return Err(format!("{path}: {value} is not of type {types:?}"));
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        return Err(format!("{path}: {value} is not one of {allowed:?}"));
    }
    if let Some(constant) = schema.get("const")
        && constant != value
    {
        return Err(format!("{path}: {value} is not {constant}"));
    }
    if let Value::Object(object) = value {
        let properties = schema.get("properties").and_then(Value::as_object);
        for (name, field) in object {
            match properties.and_then(|properties| properties.get(name)) {
                Some(property) => check_at(property, field, &format!("{path}.{name}"))?,
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    return Err(format!("{path}: unknown property {name}"));
                }
                None => {}
            }
        }
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !object.contains_key(name) {
                return Err(format!("{path}: {name} is required"));
            }
        }
    }
    if let Value::Array(items) = value {
        let count = items.len() as u64;
        if schema
            .get("minItems")
            .and_then(Value::as_u64)
            .is_some_and(|min| count < min)
            || schema
                .get("maxItems")
                .and_then(Value::as_u64)
                .is_some_and(|max| count > max)
        {
            return Err(format!("{path}: {count} items is out of range"));
        }
        if let Some(item) = schema.get("items") {
            for (index, element) in items.iter().enumerate() {
                check_at(item, element, &format!("{path}[{index}]"))?;
            }
        }
    }
    if let Some(Value::Array(alternatives)) = schema.get("anyOf") {
        let errors: Vec<String> = alternatives
            .iter()
            .filter_map(|alternative| check_at(alternative, value, path).err())
            .collect();
        if errors.len() == alternatives.len() {
            return Err(format!(
                "{path}: no alternative matches ({})",
                errors.join("; ")
            ));
        }
    }
    if let Some(Value::Array(alternatives)) = schema.get("oneOf") {
        let matches = alternatives
            .iter()
            .filter(|alternative| check_at(alternative, value, path).is_ok())
            .count();
        if matches != 1 {
            return Err(format!("{path}: {matches} alternatives match, not one"));
        }
    }
    Ok(())
}

/// JSON Schema's types; an integer is a number without a fractional part.
fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|number| number.fract() == 0.0),
        _ => false,
    }
}

/// Every subschema of `schema` with its path, the root first (property names are not keywords,
/// so the values of `properties` are subschemas and its keys are not).
pub fn subschemas<'a>(schema: &'a Value, path: &str, out: &mut Vec<(String, &'a Value)>) {
    out.push((path.to_string(), schema));
    let Value::Object(object) = schema else {
        return;
    };
    if let Some(Value::Object(properties)) = object.get("properties") {
        for (name, property) in properties {
            subschemas(property, &format!("{path}.{name}"), out);
        }
    }
    if let Some(items) = object.get("items") {
        subschemas(items, &format!("{path}[]"), out);
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alternatives)) = object.get(keyword) {
            for (index, alternative) in alternatives.iter().enumerate() {
                subschemas(alternative, &format!("{path}/{keyword}/{index}"), out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_checker_refuses_what_each_keyword_forbids() {
        let schema = json!({
            "type": "object",
            "properties": {
                "kind": {"type": "string", "const": "a"},
                "n": {"type": "integer"},
                "list": {"type": "array", "items": {"enum": ["x", "y"], "type": "string"}, "maxItems": 2},
                "either": {"anyOf": [{"type": "boolean"}, {"type": "string"}]}
            },
            "required": ["kind"],
            "additionalProperties": false
        });
        assert!(
            check(
                &schema,
                &json!({"kind": "a", "n": 3, "list": ["x"], "either": true})
            )
            .is_ok()
        );
        for bad in [
            json!({"n": 3}),
            json!({"kind": "b"}),
            json!({"kind": "a", "n": 1.5}),
            json!({"kind": "a", "list": ["z"]}),
            json!({"kind": "a", "list": ["x", "y", "x"]}),
            json!({"kind": "a", "either": 3}),
            json!({"kind": "a", "other": 1}),
            json!([]),
        ] {
            assert!(check(&schema, &bad).is_err(), "{bad}");
        }
        assert!(check(&json!({"pattern": "x"}), &json!("x")).is_err());
        let one_of = json!({"oneOf": [{"type": "integer"}, {"type": "number"}]});
        assert!(check(&one_of, &json!(1.5)).is_ok());
        assert!(check(&one_of, &json!(1)).is_err(), "both match");
    }
}
