//! Input schemas for tools, generated from the argument structs so the schema and the parser
//! cannot disagree.
//!
//! Every word of `tools/list` is paid for by every agent in every conversation, so the generated
//! schema is trimmed to what a model needs: no `$schema` or titles, no `null` alternatives for
//! optional fields (omit them instead), no non-standard integer formats. Defaults are the
//! `default` keyword, not a description.
//!
//! [`tagged_union`] gives the exact schema of a tagged enum such as a batch's steps, for the tests
//! that hold it to the parser (and for `tools/list`, whatever of it fits there).

use std::sync::Arc;

use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::envelope::ToolError;

/// The trimmed JSON Schema of `T`, as a tool's `inputSchema`.
pub fn input_schema<T: JsonSchema>() -> Arc<JsonObject> {
    match generate::<T>() {
        Value::Object(mut object) => {
            // The tool's own description says what the arguments are for.
            object.remove("description");
            // MCP requires an object schema even for tools without arguments.
            object
                .entry("properties")
                .or_insert_with(|| Value::Object(Default::default()));
            Arc::new(object)
        }
        _ => unreachable!("argument structs always produce object schemas"),
    }
}

/// The exact schema of one value of `T`, an internally tagged enum (`#[serde(tag = "...")]`):
/// `anyOf` its variants, each a closed object whose tag is a `const`, with the fields of its
/// struct and the required ones marked.
///
/// `anyOf` rather than schemars' `oneOf`: the tags make the variants exclusive, so the two say the
/// same, and `anyOf` is the union OpenAI's strict function calling and Gemini's schema subset
/// accept. Descriptions and defaults are left out: a variant's fields are described where the
/// struct is a tool's arguments.
pub fn tagged_union<T: JsonSchema>() -> Value {
    let mut value = generate::<T>();
    strip_annotations(&mut value);
    match value {
        Value::Object(mut object) => match object.remove("oneOf") {
            Some(variants) => serde_json::json!({ "anyOf": variants }),
            None => unreachable!("an internally tagged enum's schema is a oneOf of its variants"),
        },
        _ => unreachable!("an internally tagged enum's schema is an object"),
    }
}

/// A tagged union ([`tagged_union`]) written compactly: one object listing every field once
/// (each with the schema all its kinds share), closed to other fields, whose `anyOf` has one
/// variant per kind naming its tag, its required fields, and its own schema for any field the
/// kinds do not share (a `mode` whose values differ by kind). It accepts exactly what the union
/// accepts, but for a field of another kind on a step, which the parser still refuses; the exact
/// union of 14 batch steps is ~900 tokens, this ~450.
pub fn compact_union(union: &Value, tag: &str) -> Value {
    let variants = union["anyOf"].as_array().cloned().unwrap_or_default();
    let mut shared = Map::new();
    let mut differing: Vec<String> = Vec::new();
    let mut tags = Vec::new();
    for variant in &variants {
        tags.push(variant["properties"][tag]["const"].clone());
        for (name, schema) in variant["properties"].as_object().into_iter().flatten() {
            if name == tag {
                continue;
            }
            match shared.get(name) {
                Some(seen) if seen != schema && !differing.contains(name) => {
                    differing.push(name.clone())
                }
                Some(_) => {}
                None => {
                    shared.insert(name.clone(), schema.clone());
                }
            }
        }
    }
    for name in &differing {
        // Listed once by its type(s) alone; each kind gives its own schema below.
        let mut types: Vec<Value> = Vec::new();
        for variant in &variants {
            if let Some(own) = variant["properties"].get(name)
                && !types.contains(&own["type"])
            {
                types.push(own["type"].clone());
            }
        }
        let listed = match types.as_slice() {
            [one] => serde_json::json!({ "type": one }),
            _ => serde_json::json!({
                "anyOf": types.iter().map(|t| serde_json::json!({ "type": t })).collect::<Vec<_>>()
            }),
        };
        shared.insert(name.clone(), listed);
    }
    // Kinds that require the same fields and have no schema of their own share a variant, which
    // names them with an enum (the tag is required by the object around).
    // (its kinds, its own field schemas, its required fields)
    type Alternative = (Vec<Value>, Map<String, Value>, Vec<Value>);
    let mut alternatives: Vec<Alternative> = Vec::new();
    for (variant, kind) in variants.iter().zip(&tags) {
        let mut own = Map::new();
        for name in &differing {
            if let Some(schema) = variant["properties"].get(name) {
                own.insert(name.clone(), schema.clone());
            }
        }
        let required: Vec<Value> = variant["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|name| name.as_str() != Some(tag))
            .cloned()
            .collect();
        match alternatives
            .iter_mut()
            .find(|(_, o, r)| own.is_empty() && o.is_empty() && *r == required)
        {
            Some((kinds, _, _)) => kinds.push(kind.clone()),
            None => alternatives.push((vec![kind.clone()], own, required)),
        }
    }
    let alternatives: Vec<Value> = alternatives
        .into_iter()
        .map(|(kinds, own, required)| {
            let mut properties = Map::new();
            let named = match kinds.as_slice() {
                [one] => serde_json::json!({"type": "string", "const": one}),
                _ => serde_json::json!({"type": "string", "enum": kinds}),
            };
            properties.insert(tag.to_owned(), named);
            properties.extend(own);
            let mut alternative = serde_json::json!({"type": "object", "properties": properties});
            if !required.is_empty() {
                alternative["required"] = Value::Array(required);
            }
            alternative
        })
        .collect();
    let mut properties = Map::new();
    properties.insert(
        tag.to_owned(),
        serde_json::json!({"type": "string", "enum": tags}),
    );
    properties.extend(shared);
    serde_json::json!({
        "type": "object",
        "properties": properties,
        "required": [tag],
        "additionalProperties": false,
        "anyOf": alternatives,
    })
}

/// `T`'s schema, trimmed, with every subschema inlined.
fn generate<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.meta_schema = None;
            settings.inline_subschemas = true;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    trim(&mut value);
    value
}

/// Removes the `description` and `default` keywords (not properties of those names).
fn strip_annotations(value: &mut Value) {
    match value {
        Value::Object(object) => {
            object.remove("description");
            object.remove("default");
            for (key, child) in object.iter_mut() {
                match (key.as_str(), child) {
                    ("properties", Value::Object(properties)) => {
                        properties.values_mut().for_each(strip_annotations)
                    }
                    (_, child) => strip_annotations(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_annotations),
        _ => {}
    }
}

fn trim(value: &mut Value) {
    match value {
        Value::Object(object) => {
            // `Option<Enum>` comes as `anyOf: [enum, null]`: keep the enum, with the field's
            // own description. Other alternatives (an untagged `bool | String`) stay.
            if let Some(Value::Array(alternatives)) = object.get("anyOf")
                && alternatives.len() == 2
                && alternatives
                    .iter()
                    .any(|alternative| alternative.get("type") == Some(&Value::from("null")))
                && let Some(inner) = alternatives
                    .iter()
                    .find(|alternative| alternative.get("type") != Some(&Value::from("null")))
                    .cloned()
                && let Value::Object(inner) = inner
            {
                object.remove("anyOf");
                for (key, value) in inner {
                    object.entry(key).or_insert(value);
                }
            }
            // A unit enum comes as `oneOf` of documented constants: a plain `enum` list says
            // the same in a fraction of the characters (the field's description explains it).
            if let Some(Value::Array(variants)) = object.get("oneOf")
                && let Some(names) = variants
                    .iter()
                    .map(|variant| variant.get("const").cloned())
                    .collect::<Option<Vec<_>>>()
            {
                object.remove("oneOf");
                object.insert("type".into(), Value::from("string"));
                object.insert("enum".into(), Value::Array(names));
            }
            object.remove("title");
            object.remove("$schema");
            // Numeric formats (`uint32`, `double`) are not standard JSON Schema and say nothing
            // the type does not.
            if object
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| {
                    f.starts_with("int") || f.starts_with("uint") || f == "double" || f == "float"
                })
            {
                object.remove("format");
            }
            // An array's own description covers its items.
            if object.contains_key("description")
                && let Some(Value::Object(items)) = object.get_mut("items")
            {
                items.remove("description");
            }
            // Unsigned integers: negative numbers fail parsing with a clear message anyway.
            if object.get("minimum") == Some(&Value::from(0)) {
                object.remove("minimum");
            }
            if let Some(Value::Array(types)) = object.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.pop().unwrap();
                    object.insert("type".into(), only);
                }
            }
            for (key, child) in object.iter_mut() {
                match (key.as_str(), child) {
                    // Property names are not keywords: a property called `title` stays.
                    ("properties", Value::Object(properties)) => {
                        properties.values_mut().for_each(trim)
                    }
                    (_, child) => trim(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(trim),
        _ => {}
    }
}

/// Parses tool arguments strictly: unknown fields, wrong types and missing fields are
/// `INVALID_ARGUMENT` errors that name the problem, and nothing reaches a browser.
pub fn parse_args<T: DeserializeOwned + JsonSchema>(args: JsonObject) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(args)).map_err(|error| {
        let mut message = format!("invalid arguments: {error}");
        // Through flattened structs serde names only the stranger; name the arguments the tool
        // takes, as serde does for a plain struct, so a typo can be put right.
        if message.contains("unknown field") && !message.contains("expected") {
            let schema = input_schema::<T>();
            let known: Vec<String> = schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|properties| properties.keys().map(|key| format!("`{key}`")).collect())
                .unwrap_or_default();
            if !known.is_empty() {
                message = format!("{message}, expected one of {}", known.join(", "));
            }
        }
        ToolError::invalid(message)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// Example arguments.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    #[allow(dead_code)]
    struct Example {
        /// The tab.
        tab_id: Option<u32>,
        /// Required text.
        text: String,
    }

    /// Properties named like schema keywords.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct KeywordNames {
        /// Text in the title.
        title: Option<String>,
        format: Option<String>,
    }

    #[test]
    fn properties_named_like_keywords_stay() {
        let schema = Value::Object((*input_schema::<KeywordNames>()).clone());
        assert_eq!(
            schema["properties"],
            serde_json::json!({
                "title": {"type": "string", "description": "Text in the title."},
                "format": {"type": "string"}
            })
        );
    }

    #[test]
    fn schema_is_trimmed_and_strict() {
        let schema = Value::Object((*input_schema::<Example>()).clone());
        assert_eq!(
            schema,
            serde_json::json!({
                "type": "object",
                "properties": {
                    "tabId": {"type": "integer", "description": "The tab."},
                    "text": {"type": "string", "description": "Required text."}
                },
                "required": ["text"],
                "additionalProperties": false
            })
        );
    }

    /// A choice.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Choice {
        /// First.
        One,
        /// Second.
        Two,
    }

    /// Arguments with an optional enum.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct WithEnum {
        /// one or two.
        choice: Option<Choice>,
    }

    #[test]
    fn optional_enums_become_plain_enum_lists() {
        let schema = Value::Object((*input_schema::<WithEnum>()).clone());
        assert_eq!(
            schema["properties"]["choice"],
            serde_json::json!({"description": "one or two.", "type": "string", "enum": ["one", "two"]})
        );
    }

    #[test]
    fn unknown_arguments_are_rejected_by_name() {
        let args = serde_json::json!({"text": "x", "bogus": 1});
        let Value::Object(args) = args else {
            unreachable!()
        };
        let error = parse_args::<Example>(args).unwrap_err();
        assert_eq!(error.code, tabwire_protocol::ErrorCode::InvalidArgument);
        assert!(error.message.contains("bogus"), "{}", error.message);
    }

    /// A string or a boolean.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum Either {
        Flag(bool),
        Text(String),
    }

    /// An item.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Item {
        /// Either.
        value: Either,
        /// A fraction.
        share: Option<f64>,
    }

    /// Arguments with a list.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct WithList {
        /// The items.
        items: Vec<Item>,
    }

    #[test]
    fn untagged_alternatives_stay_and_items_are_not_described_twice() {
        let schema = Value::Object((*input_schema::<WithList>()).clone());
        let item = &schema["properties"]["items"]["items"];
        assert!(item.get("description").is_none(), "{schema}");
        assert_eq!(
            item["properties"]["value"],
            serde_json::json!({"description": "Either.", "anyOf": [{"type": "boolean"}, {"type": "string"}]})
        );
        assert_eq!(
            item["properties"]["share"],
            serde_json::json!({"description": "A fraction.", "type": "number"})
        );
    }
}
