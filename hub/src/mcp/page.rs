//! The first page tools: `get_page_snapshot`, `click_element`, `type_text`.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::{Observation, OpResult, Operation, TabId};

use super::envelope::{ToolError, ToolOutput};
use super::routing::{ToolContext, unexpected};
use super::selector;

const SNAPSHOT_DEADLINE: Duration = Duration::from_secs(20);
const ACTION_DEADLINE: Duration = Duration::from_secs(20);
const DEFAULT_MAX_NODES: u32 = 300;
const DEFAULT_MAX_CHARS: u32 = 12_000;
const MAX_TEXT_LEN: usize = 100_000;

/// Arguments of get_page_snapshot.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SnapshotArgs {
    /// Default: the active tab.
    pub tab_id: Option<TabId>,
    /// Browser to use instead of the session's.
    pub browser_id: Option<String>,
    /// Node budget (default 300).
    #[schemars(range(min = 1, max = 5000))]
    pub max_nodes: Option<u32>,
    /// Character budget for node text (default 12000).
    #[schemars(range(min = 100, max = 200000))]
    pub max_chars: Option<u32>,
}

pub const GET_PAGE_SNAPSHOT: &str = "Observe a tab's page: one line per meaningful element, \
like `@e3 button \"Sign in\" [disabled]`, in document order, within a budget. Pass the @refs to \
click_element/type_text; they stay valid until the page navigates.";

pub async fn get_page_snapshot(
    ctx: &ToolContext,
    args: SnapshotArgs,
) -> Result<ToolOutput, ToolError> {
    let max_nodes = args.max_nodes.unwrap_or(DEFAULT_MAX_NODES);
    let max_chars = args.max_chars.unwrap_or(DEFAULT_MAX_CHARS);
    if !(1..=5000).contains(&max_nodes) {
        return Err(ToolError::invalid("maxNodes must be between 1 and 5000"));
    }
    if !(100..=200_000).contains(&max_chars) {
        return Err(ToolError::invalid(
            "maxChars must be between 100 and 200000",
        ));
    }
    let result = ctx
        .call(
            "get_page_snapshot",
            args.browser_id.as_deref(),
            args.tab_id,
            Operation::Snapshot {
                max_nodes,
                max_chars,
            },
            SNAPSHOT_DEADLINE,
        )
        .await?;
    let OpResult::Snapshot(observation) = result else {
        return Err(unexpected("get_page_snapshot", result));
    };
    Ok(ToolOutput {
        text: render_observation(&observation),
        data: json!(observation),
    })
}

/// The model's view of an observation: a header line, then `@ref text` lines.
pub fn render_observation(observation: &Observation) -> String {
    let mut text = format!(
        "tab {} {} {} (version {})\n",
        observation.tab_id,
        serde_json::Value::String(observation.title.clone()),
        observation.url,
        observation.version
    );
    for node in &observation.nodes {
        if let Some(element_ref) = node.element_ref {
            text.push_str(&element_ref.to_string());
            text.push(' ');
        }
        text.push_str(&node.text);
        text.push('\n');
    }
    if observation.truncated {
        text.push_str(&format!(
            "[truncated: {} of {} nodes not shown; raise maxNodes/maxChars]\n",
            observation.omitted_nodes, observation.total_nodes
        ));
    }
    text.truncate(text.trim_end().len());
    text
}

/// Arguments of click_element.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClickArgs {
    /// An @ref from a snapshot, or a CSS selector matching exactly one element.
    pub selector: String,
    /// Default: the active tab.
    pub tab_id: Option<TabId>,
    /// Browser to use instead of the session's.
    pub browser_id: Option<String>,
}

pub const CLICK_ELEMENT: &str = "Click an element with trusted mouse input at its centre, after \
scrolling it into view. Fails with TARGET_COVERED if another element is on top of it.";

pub async fn click_element(ctx: &ToolContext, args: ClickArgs) -> Result<ToolOutput, ToolError> {
    let target = selector::parse(&args.selector)?;
    let result = ctx
        .call(
            "click_element",
            args.browser_id.as_deref(),
            args.tab_id,
            Operation::Click { target },
            ACTION_DEADLINE,
        )
        .await?;
    let OpResult::Clicked(clicked) = result else {
        return Err(unexpected("click_element", result));
    };
    Ok(ToolOutput {
        text: format!("Clicked {} in tab {}.", clicked.target, clicked.tab_id),
        data: json!(clicked),
    })
}

/// Arguments of type_text.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TypeArgs {
    /// An @ref from a snapshot, or a CSS selector matching exactly one element.
    pub selector: String,
    /// Text to enter.
    pub text: String,
    /// Replace the current value instead of appending (default false).
    #[serde(default)]
    pub clear: bool,
    /// Default: the active tab.
    pub tab_id: Option<TabId>,
    /// Browser to use instead of the session's.
    pub browser_id: Option<String>,
}

pub const TYPE_TEXT: &str = "Enter text into a text field or editable element. Sets the value \
natively and fires input/change events, so framework-controlled fields notice.";

pub async fn type_text(ctx: &ToolContext, args: TypeArgs) -> Result<ToolOutput, ToolError> {
    let target = selector::parse(&args.selector)?;
    if args.text.chars().count() > MAX_TEXT_LEN {
        return Err(ToolError::invalid(format!(
            "text is longer than {MAX_TEXT_LEN} characters"
        )));
    }
    let result = ctx
        .call(
            "type_text",
            args.browser_id.as_deref(),
            args.tab_id,
            Operation::TypeText {
                target,
                text: args.text,
                clear: args.clear,
            },
            ACTION_DEADLINE,
        )
        .await?;
    let OpResult::Typed(typed) = result else {
        return Err(unexpected("type_text", result));
    };
    Ok(ToolOutput {
        text: format!(
            "Typed into {}; value is now {}.",
            typed.target,
            serde_json::Value::String(typed.value.clone())
        ),
        data: json!(typed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tabwire_protocol::{ElementRef, ObservedNode};

    #[test]
    fn observation_renders_as_ref_lines() {
        let observation = Observation {
            tab_id: 4,
            url: "http://127.0.0.1/login".into(),
            title: "Log in".into(),
            document_id: "D".into(),
            version: 1,
            nodes: vec![
                ObservedNode {
                    element_ref: None,
                    text: "heading[1] \"Welcome\"".into(),
                },
                ObservedNode {
                    element_ref: Some(ElementRef::top(2)),
                    text: "textbox \"Username\"".into(),
                },
            ],
            total_nodes: 5,
            truncated: true,
            omitted_nodes: 3,
        };
        assert_eq!(
            render_observation(&observation),
            "tab 4 \"Log in\" http://127.0.0.1/login (version 1)\n\
             heading[1] \"Welcome\"\n\
             @e2 textbox \"Username\"\n\
             [truncated: 3 of 5 nodes not shown; raise maxNodes/maxChars]"
        );
    }
}
