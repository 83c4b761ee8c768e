//! Tests of what the schemas say about a batch's steps against what `preflight` parses: the
//! exact union ([`step_union`]) and the parser agree kind by kind and field by field, and what
//! `tools/list` shows never refuses a step the parser takes.

use super::*;
use crate::mcp::args::NoArgs;
use crate::mcp::catalogue::{self, ToolArgs};
use crate::mcp::routing::TabRoute;
use crate::mcp::schema::input_schema;
use crate::mcp::schema_check::check;
use crate::state::FileUrls;

/// The kinds that take a tool's own arguments, and the tool.
const TOOL_KINDS: &[(&str, &str)] = &[
    ("click", "click_element"),
    ("clickAndWait", "click_and_wait"),
    ("hover", "hover_element"),
    ("drag", "drag_element"),
    ("type", "type_text"),
    ("fill", "fill_form"),
    ("pressKey", "press_key"),
    ("selectOption", "select_option"),
    ("scroll", "scroll_page"),
    ("navigate", "navigate_and_wait"),
    ("waitFor", "wait_for"),
];

/// The kinds only a batch has; `STEPS` spells out their fields.
const BATCH_KINDS: &[&str] = &["wait", "observe", "content"];

/// A step of every kind, as an agent would write it.
fn examples() -> Vec<Value> {
    vec![
        json!({"kind": "click", "selector": "#go", "mode": "dom", "button": "right", "clickCount": 2}),
        json!({"kind": "clickAndWait", "selector": "@e4", "waitUntil": "domcontentloaded", "waitFor": "#done"}),
        json!({"kind": "hover", "selector": "#menu"}),
        json!({"kind": "drag", "selector": "#card", "to": "#lane"}),
        json!({"kind": "type", "selector": "#name", "text": "alice", "clear": true}),
        json!({"kind": "fill", "fields": [{"selector": "#a", "value": "x"}, {"selector": "#b", "value": true}], "submit": false}),
        json!({"kind": "pressKey", "key": "Enter", "modifiers": 2, "selector": "#q"}),
        json!({"kind": "selectOption", "selector": "#size", "value": "m"}),
        json!({"kind": "scroll", "dy": 200}),
        json!({"kind": "navigate", "url": "https://example.com/", "waitUntil": "complete"}),
        json!({"kind": "wait", "ms": 100}),
        json!({"kind": "waitFor", "text": "Saved", "gone": true}),
        json!({"kind": "observe", "query": "Save", "maxNodes": 50}),
        json!({"kind": "content", "format": "html", "maxChars": 500}),
    ]
}

fn variants() -> Vec<Value> {
    step_union()["anyOf"]
        .as_array()
        .expect("the union is an anyOf")
        .clone()
}

/// The kind of a step, or of a union's variant.
fn kind_of(step: &Value) -> &str {
    step["properties"]["kind"]["const"]
        .as_str()
        .or_else(|| step["kind"].as_str())
        .unwrap_or("?")
}

/// What `tools/list` shows for one step.
fn listed() -> Value {
    let schema = Value::Object(
        (*input_schema::<ToolArgs<RunActionsArgs, TabRoute, ActionOptions>>()).clone(),
    );
    schema["properties"]["steps"]["items"].clone()
}

/// The parser's verdict on a step's shape: its kind, its fields and their types (the values'
/// own rules, such as selector syntax, are `preflight`'s).
fn parses(step: &Value) -> bool {
    serde_json::from_value::<StepArgs>(step.clone()).is_ok()
}

/// A valid value for `schema`.
fn sample(schema: &Value) -> Value {
    if let Some(constant) = schema.get("const") {
        return constant.clone();
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        return values[0].clone();
    }
    if let Some(Value::Array(alternatives)) = schema.get("anyOf") {
        return sample(&alternatives[0]);
    }
    match schema["type"].as_str() {
        Some("string") => json!("#a"),
        Some("integer") => json!(1),
        Some("number") => json!(1.5),
        Some("boolean") => json!(true),
        Some("array") => json!([sample(&schema["items"])]),
        Some("object") => required_only(schema),
        _ => panic!("no sample for {schema}"),
    }
}

/// An object with only the required properties of `schema`.
fn required_only(schema: &Value) -> Value {
    let mut object = Map::new();
    for name in schema["required"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap();
        object.insert(name.into(), sample(&schema["properties"][name]));
    }
    Value::Object(object)
}

/// A value `schema` refuses because of its JSON type.
fn wrong_type(schema: &Value) -> Value {
    [
        json!(7),
        json!(1.5),
        json!("x"),
        json!(true),
        json!([]),
        json!({}),
    ]
    .into_iter()
    .find(|value| check(schema, value).is_err())
    .unwrap_or_else(|| panic!("{schema} takes any type"))
}

fn with(step: &Value, name: &str, value: Value) -> Value {
    let mut step = step.clone();
    step[name] = value;
    step
}

fn without(step: &Value, name: &str) -> Value {
    let mut step = step.clone();
    step.as_object_mut().unwrap().remove(name);
    step
}

#[test]
fn every_kind_has_an_example_the_schemas_and_preflight_accept() {
    let kinds: Vec<String> = variants().iter().map(|v| kind_of(v).to_string()).collect();
    let examples = examples();
    let covered: Vec<String> = examples.iter().map(|e| kind_of(e).to_string()).collect();
    assert_eq!(kinds, covered, "one example per kind, in the union's order");
    let union = step_union();
    let listed = listed();
    for example in &examples {
        check(&union, example).unwrap_or_else(|e| panic!("union refuses {example}: {e}"));
        check(&listed, example).unwrap_or_else(|e| panic!("tools/list refuses {example}: {e}"));
    }
    let plan = preflight(examples, 30_000, &FileUrls::Allowed.into()).unwrap();
    assert_eq!(plan.kinds, kinds);
}

#[test]
fn the_union_and_the_parser_agree_field_by_field() {
    let union = step_union();
    let listed = listed();
    let mut cases = 0;
    for variant in variants() {
        let kind = kind_of(&variant).to_string();
        let properties = variant["properties"].as_object().unwrap();
        let required: Vec<&str> = variant["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(
            variant["additionalProperties"], false,
            "{kind}: the parser refuses unknown fields, so must the schema"
        );
        let minimal = required_only(&variant);
        let mut steps = vec![(minimal.clone(), true)];
        for (name, property) in properties {
            if name == "kind" {
                continue;
            }
            if required.contains(&name.as_str()) {
                steps.push((without(&minimal, name), false));
            } else {
                steps.push((with(&minimal, name, sample(property)), true));
            }
            steps.push((with(&minimal, name, wrong_type(property)), false));
            if property.get("enum").is_some() {
                steps.push((with(&minimal, name, json!("bogus")), false));
            }
        }
        steps.push((with(&minimal, "bogus", json!(1)), false));
        steps.push((with(&minimal, "kind", json!(kind.to_uppercase())), false));
        for (step, valid) in steps {
            cases += 1;
            assert_eq!(check(&union, &step).is_ok(), valid, "union on {step}");
            assert_eq!(parses(&step), valid, "parser on {step}");
            // What the parser takes, tools/list never refuses, and what neither the exact union
            // nor the parser takes, it refuses too (these cases use only the kind's own fields).
            assert_eq!(check(&listed, &step).is_ok(), valid, "tools/list on {step}");
        }
    }
    assert!(cases > 100, "{cases} cases");
}

#[test]
fn unknown_or_missing_kinds_are_refused_by_every_schema_and_the_parser() {
    let union = step_union();
    let listed = listed();
    for step in [
        json!({"kind": "tap", "selector": "#a"}),
        json!({"selector": "#a"}),
        json!({"kind": 5}),
        json!("click #a"),
    ] {
        assert!(check(&union, &step).is_err(), "union takes {step}");
        assert!(check(&listed, &step).is_err(), "tools/list takes {step}");
        assert!(!parses(&step), "parser takes {step}");
    }
}

/// A tool's own arguments as its schema lists them: without routing and the actions' common
/// options, and without annotations.
fn own_arguments(tool: &str) -> (Map<String, Value>, Vec<Value>) {
    let shared = input_schema::<ToolArgs<NoArgs, TabRoute, ActionOptions>>();
    let shared = shared["properties"].as_object().unwrap();
    let tool = catalogue::tools()
        .find(|t| t.name == tool)
        .unwrap_or_else(|| panic!("no tool {tool}"));
    let mut properties = tool.input_schema["properties"].as_object().unwrap().clone();
    properties.retain(|name, _| !shared.contains_key(name));
    let mut properties = Value::Object(properties);
    strip_annotations(&mut properties);
    let required = tool
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .cloned();
    (
        properties.as_object().unwrap().clone(),
        required.unwrap_or_default(),
    )
}

fn strip_annotations(value: &mut Value) {
    match value {
        Value::Object(object) => {
            for (key, child) in object.iter_mut() {
                if let Value::Object(schema) = child
                    && key != "properties"
                {
                    schema.remove("description");
                    schema.remove("default");
                }
                strip_annotations(child);
            }
            object.remove("description");
            object.remove("default");
        }
        Value::Array(items) => items.iter_mut().for_each(strip_annotations),
        _ => {}
    }
}

#[test]
fn tool_kinds_take_exactly_their_tools_arguments() {
    let variants = variants();
    let kinds: Vec<&str> = variants.iter().map(kind_of).collect();
    let classified: Vec<&str> = TOOL_KINDS
        .iter()
        .map(|(kind, _)| *kind)
        .chain(BATCH_KINDS.iter().copied())
        .collect();
    let mut sorted = kinds.clone();
    sorted.sort();
    let mut classified_sorted = classified.clone();
    classified_sorted.sort();
    assert_eq!(
        sorted, classified_sorted,
        "every kind is a tool's or the batch's own"
    );
    for (kind, tool) in TOOL_KINDS {
        let variant = variants.iter().find(|v| kind_of(v) == *kind).unwrap();
        let mut fields = variant["properties"].as_object().unwrap().clone();
        fields.remove("kind");
        let mut required = variant["required"].as_array().unwrap().clone();
        required.retain(|name| name != "kind");
        let (arguments, tool_required) = own_arguments(tool);
        assert_eq!(
            Value::Object(fields),
            Value::Object(arguments),
            "{kind} vs {tool}"
        );
        assert_eq!(required, tool_required, "{kind} vs {tool}");
    }
}

#[test]
fn the_listed_union_names_every_kind_and_leaves_only_another_kinds_field_to_the_parser() {
    let listed = listed();
    assert_eq!(
        listed["properties"]["kind"]["enum"]
            .as_array()
            .unwrap()
            .len(),
        14
    );
    // A field every kind lacks is refused; a field of another kind passes the listed schema,
    // and the parser refuses it.
    let click = json!({"kind": "click", "selector": "#go"});
    assert!(check(&listed, &with(&click, "bogus", json!(1))).is_err());
    let other = with(&click, "url", json!("https://example.com/"));
    assert!(check(&listed, &other).is_ok());
    assert!(!parses(&other));
    // A field whose schema differs by kind is checked by its kind's own schema.
    assert!(check(&listed, &with(&click, "mode", json!("dom"))).is_ok());
    assert!(check(&listed, &with(&click, "mode", json!("native"))).is_err());
    let typed = json!({"kind": "type", "selector": "#a", "text": "x", "mode": "native"});
    assert!(check(&listed, &typed).is_ok());
}
