//! `tabwire tools` (every tool with its description and input schema) and `tabwire TOOL
//! --help` (one tool's), from the hub's `tools/list`: JSON when the output is JSON, a readable
//! list on a terminal. Also the help a usage error shows, and the suggestions for a tool name
//! the hub does not know.

use rmcp::model::Tool;
use serde_json::{Map, Value, json};

use crate::arguments::describe;
use crate::error::CliError;
use crate::output::{Format, print_either};

/// A tool as `tools` prints it in JSON: name, description, input schema, annotations.
fn tool_json(tool: &Tool) -> Value {
    let mut entry = json!({
        "name": tool.name,
        "description": tool.description,
        "inputSchema": Value::Object((*tool.input_schema).clone()),
    });
    if let Some(annotations) = &tool.annotations {
        entry["annotations"] = serde_json::to_value(annotations).unwrap_or(Value::Null);
    }
    entry
}

/// `tabwire tools`.
pub fn print_tools(tools: &[Tool], format: Format) {
    let json = json!({"tools": tools.iter().map(tool_json).collect::<Vec<_>>()});
    let mut text = String::new();
    for tool in tools {
        text.push_str(&tool.name);
        if let Some(description) = &tool.description {
            text.push_str(": ");
            text.push_str(description);
        }
        text.push('\n');
        for line in describe(&tool.input_schema) {
            text.push_str("  ");
            text.push_str(&line);
            text.push('\n');
        }
    }
    text.push_str(&format!(
        "\n{} tools. `tabwire TOOL --help` shows one; `tabwire --output json tools` gives their \
         input schemas.",
        tools.len()
    ));
    print_either(format, &json, &text);
}

/// `tabwire TOOL --help`.
pub fn print_tool(tool: &Tool, format: Format) {
    let mut text = format!("{}\n", tool.name);
    if let Some(description) = &tool.description {
        text.push_str(&format!("\n{description}\n"));
    }
    text.push('\n');
    text.push_str(&arguments_help(&tool.name, &tool.input_schema));
    print_either(format, &tool_json(tool), &text);
}

/// A tool's arguments for a person, with how to call it.
pub fn arguments_help(tool: &str, schema: &Map<String, Value>) -> String {
    let lines = describe(schema);
    let mut text = format!("Usage: tabwire {tool} [--ARG VALUE]... [--json '{{...}}']\n");
    if lines.is_empty() {
        text.push_str("It takes no arguments.");
    } else {
        text.push_str("Arguments:\n");
        text.push_str(&lines.join("\n"));
    }
    text
}

/// The error for a tool the hub does not have, with the names closest to it.
pub fn unknown_tool(tool: &str, tools: &[Tool], hub_said: Option<&str>) -> CliError {
    let mut near: Vec<(usize, &str)> = tools
        .iter()
        .map(|t| (distance(tool, &t.name), t.name.as_ref()))
        .filter(|(d, name)| *d <= 3 || name.contains(tool) || tool.contains(name))
        .collect();
    near.sort();
    let names: Vec<&str> = near.iter().take(3).map(|(_, name)| *name).collect();
    let mut message = match hub_said {
        Some(said) => format!("the hub has no tool {tool} ({said})"),
        None => format!("the hub has no tool {tool}"),
    };
    if !names.is_empty() {
        message.push_str(&format!("; did you mean {}?", names.join(", ")));
    }
    message.push_str(" See tabwire tools.");
    CliError::UnknownTool { message }
}

/// Levenshtein distance, for suggestions.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(previous + usize::from(ca != *cb));
            previous = here;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn tool(name: &str) -> Tool {
        let schema = json!({"type": "object", "properties": {"tabId": {"type": "integer"}}});
        Tool::new(
            name.to_owned(),
            "does things",
            Arc::new(schema.as_object().unwrap().clone()),
        )
    }

    #[test]
    fn suggestions() {
        assert_eq!(distance("list_tab", "list_tabs"), 1);
        assert_eq!(distance("", "abc"), 3);
        let tools = [tool("list_tabs"), tool("click"), tool("get_page_snapshot")];
        let error = unknown_tool("list_tab", &tools, None);
        assert_eq!(error.code(), "UNKNOWN_TOOL");
        assert!(
            error.to_string().contains("did you mean list_tabs?"),
            "{error}"
        );
        let error = unknown_tool("snapshot", &tools, Some("unknown tool snapshot"));
        assert!(error.to_string().contains("get_page_snapshot"), "{error}");
    }

    #[test]
    fn help_lists_arguments() {
        let help = arguments_help("list_tabs", &tool("list_tabs").input_schema);
        assert!(help.contains("--tab-id integer"), "{help}");
        assert!(arguments_help("x", &Map::new()).contains("no arguments"));
    }
}
