//! Running one action: the [`ActionTool`] trait every single-action tool implements, the one
//! handler they all share ([`act`]), and the rendering of what came back.
//!
//! A tool's own module only says what its arguments are and how they become a protocol
//! [`Action`]; checking the common options, choosing the deadline, sending the [`ActRequest`]
//! and rendering the outcome with its observation happen here, once. Batch steps reuse the same
//! conversions (see `batch.rs`).

use std::time::Duration;

use serde_json::{Map, Value, json};
use tabwire_protocol::{ActRequest, Acted, Action, Observation, OpError, Outcome, Page};

use super::args::ActionOptions;
use super::envelope::{Rendering, ToolError, ToolOutput};
use super::observation::{action_observation_data, render_page};
use super::routing::ToolContext;

/// `timeoutMs` of an action when the caller gives none.
pub const ACTION_TIMEOUT_MS: u32 = 5000;

/// A tool that performs one page action.
pub trait ActionTool {
    /// `timeoutMs` when the caller gives none.
    const DEFAULT_TIMEOUT_MS: u32 = ACTION_TIMEOUT_MS;
    /// Time the request gets beyond `timeoutMs`. Waits use it so that the extension reports
    /// `WAIT_TIMEOUT` itself, with what it saw, before the request's own deadline passes.
    const DEADLINE_MARGIN_MS: u32 = 0;

    /// Checks the arguments and builds the action. `timeout_ms` is the resolved `timeoutMs`,
    /// which bounds a wait.
    fn into_action(self, timeout_ms: u32) -> Result<Action, ToolError>;
}

/// The handler of every single-action tool: validates everything, then sends one
/// [`ActRequest`] with the tool's deadline and renders the result.
pub async fn act<T: ActionTool>(
    ctx: &ToolContext,
    args: T,
    options: ActionOptions,
) -> Result<ToolOutput, ToolError> {
    let options = options.resolve(T::DEFAULT_TIMEOUT_MS)?;
    let action = args.into_action(options.timeout_ms)?;
    let deadline = Duration::from_millis(u64::from(options.timeout_ms + T::DEADLINE_MARGIN_MS));
    let request = ActRequest {
        action,
        observe: options.observe,
    };
    Ok(acted_output(ctx.call(request, deadline).await?))
}

/// An outcome's facts as the data shows them, flat: what the action reports about itself (its
/// element, its value…), the dialog it opened, the tabs it opened, the navigation and the
/// downloads it started.
pub fn outcome_facts(outcome: &Outcome) -> Map<String, Value> {
    let mut facts = match outcome.facts.as_ref().map(serde_json::to_value) {
        Some(Ok(Value::Object(facts))) => facts,
        _ => Map::new(),
    };
    // The kind of facts is the action's, which the agent named itself.
    facts.remove("kind");
    if let Some(dialog) = &outcome.dialog {
        facts.insert("dialog".into(), json!(dialog));
    }
    if !outcome.opened_tabs.is_empty() {
        facts.insert("openedTabs".into(), json!(outcome.opened_tabs));
    }
    if let Some(navigation) = outcome.navigation {
        facts.insert("navigation".into(), json!(navigation));
    }
    if !outcome.downloads.is_empty() {
        facts.insert("downloads".into(), json!(outcome.downloads));
    }
    facts
}

/// The result of one action: `data` is `{tabId, ...facts, observation?, observationError?}`;
/// the text is the summary line and the observation.
pub fn acted_output(acted: Acted) -> ToolOutput {
    // The summary is the text's first line; the data carries the facts behind it.
    let mut data = Map::new();
    data.insert("tabId".into(), json!(acted.outcome.tab_id));
    for (key, value) in outcome_facts(&acted.outcome) {
        // No action's facts are called `tabId`.
        data.entry(key).or_insert(value);
    }
    // The browser writes the summary around the element's line, a URL, a dialog's text.
    let mut text = Rendering::page(acted.outcome.summary);
    observation_tail(
        &mut data,
        &mut text,
        acted.observation.as_ref(),
        acted.observation_error.as_ref(),
    );
    ToolOutput::new(Value::Object(data), text)
}

/// Adds the observation after an action (or a batch) to its data and text: the same compact
/// shape and rendering as `get_page_snapshot`, or why there is none. Nothing is added when no
/// observation was asked for.
pub fn observation_tail(
    data: &mut Map<String, Value>,
    text: &mut Rendering,
    observation: Option<&Observation<Page>>,
    error: Option<&OpError>,
) {
    if let Some(observation) = observation {
        // A navigation's URL is the observation's: said once.
        if data.get("url").and_then(Value::as_str) == Some(observation.of.url.as_str())
            && observation.delta.is_none()
        {
            data.remove("url");
        }
        data.insert("observation".into(), action_observation_data(observation));
        text.push("\n");
        text.append(render_page(observation));
    }
    if let Some(error) = error {
        data.insert("observationError".into(), json!(error));
        text.push(&format!("\nNo observation ({}): ", error.code));
        text.push_page(&error.message);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use tabwire_protocol::{ActionFacts, ElementRef, ErrorCode, Node};

    fn outcome() -> Outcome {
        Outcome::new(
            4,
            "Dragged button \"Go\" to (10, 20)",
            ActionFacts::Drag {
                target: "button \"Go\"".into(),
                to: None,
                x: 10.0,
                y: 20.0,
                html5: false,
                brought_forward: false,
            },
        )
    }

    /// A one-node observation of tab 4 (shared with the screenshot tests).
    pub(in crate::mcp) fn observation() -> Observation<Page> {
        let page = Page {
            tab_id: 4,
            frame_id: None,
            url: "http://x/".into(),
            title: "X".into(),
            document_id: "D".into(),
        };
        let nodes = vec![Node::new(Some(ElementRef::top(1)), "button \"Go\"".into())];
        Observation::new(page, 2, nodes, None)
    }

    #[test]
    fn an_action_renders_its_summary_details_and_observation() {
        let output = acted_output(Acted {
            outcome: outcome(),
            observation: Some(observation()),
            observation_error: None,
        });
        assert_eq!(output.data["tabId"], 4);
        assert!(output.data.get("summary").is_none());
        assert_eq!(output.data["target"], "button \"Go\"");
        assert_eq!(output.data["x"], 10.0);
        assert!(output.data.get("kind").is_none());
        assert_eq!(output.data["observation"]["version"], 2);
        assert_eq!(output.data["observation"]["nodes"][0]["ref"], "@e1");
        assert!(output.data.get("observationError").is_none());
        assert_eq!(
            output.text,
            "Dragged button \"Go\" to (10, 20)\ntab 4 \"X\" http://x/ (version 2)\n@e1 button \"Go\""
        );
    }

    #[test]
    fn a_missing_observation_says_why() {
        let output = acted_output(Acted {
            outcome: outcome(),
            observation: None,
            observation_error: Some(OpError::new(
                ErrorCode::DialogOpen,
                "a confirm dialog is open",
            )),
        });
        assert!(output.data.get("observation").is_none());
        assert_eq!(output.data["observationError"]["code"], "DIALOG_OPEN");
        assert_eq!(
            output.text,
            "Dragged button \"Go\" to (10, 20)\nNo observation (DIALOG_OPEN): a confirm dialog is open"
        );
        let quiet = acted_output(Acted {
            outcome: outcome(),
            observation: None,
            observation_error: None,
        });
        assert_eq!(quiet.text, "Dragged button \"Go\" to (10, 20)");
    }
}
