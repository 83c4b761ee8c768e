//! Reading and unblocking a tab: `read_element_state`, `handle_dialog`, `get_tab_health`
//! (docs/actions.md).
//!
//! None of them acts on the page through the action machinery, so they take no common action
//! options and have a fixed deadline. `handle_dialog` and `get_tab_health` run beside the tab's
//! queue in the extension: they must work while the queue is blocked.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::{
    DialogHandled, DialogInfo, ElementBox, ElementState, GetTabHealth, HandleDialog,
    ReadStateRequest, TabHealth,
};

use super::args::{self, in_range};
use super::envelope::{Rendering, ToolError, ToolOutput, candidate_line, quoted};
use super::routing::ToolContext;

const DEADLINE: Duration = Duration::from_secs(10);
const MAX_ATTRIBUTES: usize = 20;
const MAX_ATTRIBUTE_LEN: usize = 100;
const DEFAULT_STATE_CHARS: u32 = 500;

/// Arguments of read_element_state.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadStateArgs {
    pub selector: String,
    /// Up to 20 names.
    pub attributes: Option<Vec<String>>,
    /// Default 500.
    pub max_chars: Option<u32>,
}

pub const READ_ELEMENT_STATE: &str = "One element's state: value, checked, selected, readonly, \
disabled, visible, box, focused, validity, attributes (hidden inputs too).";

pub async fn read_element_state(
    ctx: &ToolContext,
    args: ReadStateArgs,
) -> Result<ToolOutput, ToolError> {
    let request = read_state_request(args.selector, args.attributes, args.max_chars)?;
    let state = ctx.call(request, DEADLINE).await?;
    Ok(ToolOutput::new(json!(state), state_text(&state)))
}

/// The element's line, then one `name=value` per fact in the order of their names; the box as
/// `box=x,y,WxH`.
fn state_text(state: &ElementState) -> Rendering {
    let mut fields = serde_json::to_value(&state.state).unwrap_or_default();
    if let (Some(bounds), Some(object)) = (state.state.bounds, fields.as_object_mut()) {
        let ElementBox {
            x,
            y,
            width,
            height,
        } = bounds;
        object.insert("box".into(), json!(format!("{x},{y},{width}x{height}")));
    }
    // The element's line, its value, text and attributes are the page's.
    Rendering::page(format!("{}\n{}", state.target, candidate_line(&fields)))
}

/// Checks read_element_state's arguments.
fn read_state_request(
    selector: String,
    attributes: Option<Vec<String>>,
    max_chars: Option<u32>,
) -> Result<ReadStateRequest, ToolError> {
    let attributes = attributes.unwrap_or_default();
    if attributes.len() > MAX_ATTRIBUTES {
        return Err(ToolError::invalid(format!(
            "attributes holds at most {MAX_ATTRIBUTES} names; got {}",
            attributes.len()
        )));
    }
    if let Some(bad) = attributes.iter().find(|name| {
        name.is_empty() || name.len() > MAX_ATTRIBUTE_LEN || name.chars().any(char::is_whitespace)
    }) {
        return Err(ToolError::invalid(format!(
            "attributes must be attribute names (no spaces, at most {MAX_ATTRIBUTE_LEN} \
             characters); got {}",
            quoted(&bad.chars().take(40).collect::<String>())
        )));
    }
    Ok(ReadStateRequest {
        target: args::target(&selector, "selector")?,
        attributes,
        max_chars: in_range(max_chars, DEFAULT_STATE_CHARS, 1, 10_000, "maxChars")?,
    })
}

/// Arguments of handle_dialog.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HandleDialogArgs {
    /// OK or Cancel.
    pub accept: bool,
    /// A prompt's answer.
    pub prompt_text: Option<String>,
}

pub const HANDLE_DIALOG: &str = "Accept or dismiss a tab's alert, confirm or prompt (other tools \
fail with DIALOG_OPEN meanwhile).";

pub async fn handle_dialog(
    ctx: &ToolContext,
    args: HandleDialogArgs,
) -> Result<ToolOutput, ToolError> {
    if let Some(text) = &args.prompt_text {
        if !args.accept {
            return Err(ToolError::invalid(
                "promptText answers a prompt that is accepted; drop it or set accept: true",
            ));
        }
        args::text(text, "promptText", false)?;
    }
    let request = HandleDialog {
        accept: args.accept,
        prompt_text: args.prompt_text,
    };
    let handled = ctx.call(request, DEADLINE).await?;
    Ok(ToolOutput::new(json!(handled), dialog_text(&handled)))
}

/// `Accepted confirm "Delete?" in tab 4.`
fn dialog_text(handled: &DialogHandled) -> Rendering {
    let verb = if handled.accepted {
        "Accepted"
    } else {
        "Dismissed"
    };
    let mut text = Rendering::hub(format!("{verb} {} ", handled.dialog.kind));
    push_dialog_text(&mut text, &handled.dialog);
    text.push(&format!(" in tab {}.", handled.tab_id));
    text
}

/// A dialog's message, quoted as page text; or, for one a frame agents may not read opened,
/// what the hub says instead.
fn push_dialog_text(text: &mut Rendering, dialog: &DialogInfo) {
    if dialog.withheld {
        text.push("(its text withheld: a frame of an origin agents may not read opened it)");
    } else {
        text.push_page(&quoted(&dialog.message));
    }
}

/// Arguments of get_tab_health.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TabHealthArgs {
    pub recover_debugger: Option<bool>,
}

pub const GET_TAB_HEALTH: &str = "Why a tab is stuck: responsiveness, operation, queue, debugger, \
dialog. recoverDebugger reattaches an idle tab's debugger.";

pub async fn get_tab_health(
    ctx: &ToolContext,
    args: TabHealthArgs,
) -> Result<ToolOutput, ToolError> {
    let request = GetTabHealth {
        recover_debugger: args.recover_debugger.unwrap_or(false),
    };
    let health = ctx.call(request, DEADLINE).await?;
    Ok(ToolOutput::new(json!(health), health_text(&health)))
}

/// One line per fact that matters, the healthy ones short.
fn health_text(health: &TabHealth) -> Rendering {
    let mut head = Rendering::hub(format!("tab {} ", health.tab_id));
    head.push_page(&health.url);
    let mut lines = vec![head];
    lines.push(Rendering::hub(match (health.responsive, health.probe_ms) {
        (true, Some(ms)) => format!("page responsive ({ms} ms)"),
        (true, None) => "page responsive".into(),
        (false, _) => "page NOT responsive (no answer within 1 s)".into(),
    }));
    lines.push(Rendering::hub(match &health.active {
        Some(work) => format!(
            "running {} for {} ms of its {} ms; {} queued",
            work.tool, work.elapsed_ms, work.deadline_ms, health.queued
        ),
        None => format!("idle; {} queued", health.queued),
    }));
    lines.push(Rendering::hub(format!(
        "debugger {}",
        if health.debugger_attached {
            "attached"
        } else {
            "not attached"
        }
    )));
    if let Some(dialog) = &health.dialog {
        let mut line = Rendering::hub(format!("{} dialog open: ", dialog.kind));
        push_dialog_text(&mut line, dialog);
        line.push(if dialog.withheld {
            " (call handle_dialog with accept false)"
        } else {
            " (call handle_dialog)"
        });
        lines.push(line);
    }
    if let Some(recovery) = &health.recovery {
        lines.push(Rendering::hub(format!("recovery: {recovery}")));
    }
    Rendering::lines(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tabwire_protocol::{ActiveWork, ElementFacts, ErrorCode};

    #[test]
    fn element_state_arguments_are_bounded() {
        let request = read_state_request("#email".into(), None, None).unwrap();
        assert_eq!(request.max_chars, 500);
        assert!(request.attributes.is_empty());
        let many = (0..21).map(|i| format!("data-{i}")).collect();
        assert!(read_state_request("#email".into(), Some(many), None).is_err());
        assert!(read_state_request("#email".into(), Some(vec!["a b".into()]), None).is_err());
        assert!(read_state_request("#email".into(), None, Some(0)).is_err());
        assert!(read_state_request("#email".into(), None, Some(10_001)).is_err());
        assert_eq!(
            read_state_request("//input".into(), None, None)
                .unwrap_err()
                .code,
            ErrorCode::InvalidSelector
        );
    }

    #[test]
    fn element_state_renders_its_box_compactly() {
        let mut state = ElementState {
            tab_id: 4,
            target: "@e7 listitem \"Charlie\"".into(),
            state: ElementFacts {
                tag: "li".into(),
                input_type: None,
                value: None,
                value_truncated: false,
                checked: None,
                selected: None,
                selected_text: None,
                readonly: None,
                disabled: None,
                required: None,
                visible: true,
                focused: false,
                bounds: Some(ElementBox {
                    x: 8,
                    y: -20,
                    width: 240,
                    height: 40,
                }),
                validation_message: None,
                attributes: None,
            },
        };
        assert_eq!(
            state_text(&state),
            "@e7 listitem \"Charlie\"\nbox=8,-20,240x40 focused=false tag=li visible=true"
        );
        assert_eq!(
            json!(state.state)["box"],
            json!({"x": 8, "y": -20, "width": 240, "height": 40})
        );
        state.state.bounds = None;
        assert_eq!(
            state_text(&state),
            "@e7 listitem \"Charlie\"\nfocused=false tag=li visible=true"
        );
    }

    #[test]
    fn dialogs_and_health_render_in_a_few_lines() {
        let dialog = DialogInfo {
            kind: "confirm".into(),
            message: "Delete?".into(),
            default_prompt: String::new(),
            withheld: false,
        };
        assert_eq!(
            dialog_text(&DialogHandled {
                tab_id: 4,
                dialog: dialog.clone(),
                accepted: true
            }),
            "Accepted confirm \"Delete?\" in tab 4."
        );
        let health = TabHealth {
            tab_id: 4,
            url: "http://x/".into(),
            responsive: false,
            probe_ms: None,
            active: Some(ActiveWork {
                tool: "click_element".into(),
                elapsed_ms: 1200,
                deadline_ms: 5000,
            }),
            queued: 2,
            debugger_attached: true,
            dialog: Some(dialog),
            recovery: None,
        };
        assert_eq!(
            health_text(&health),
            "tab 4 http://x/\npage NOT responsive (no answer within 1 s)\nrunning click_element \
             for 1200 ms of its 5000 ms; 2 queued\ndebugger attached\nconfirm dialog open: \
             \"Delete?\" (call handle_dialog)"
        );
        // A denied frame's dialog: its type only, and only dismissing offered.
        assert_eq!(
            dialog_text(&DialogHandled {
                tab_id: 4,
                dialog: DialogInfo::withheld("prompt"),
                accepted: false
            }),
            "Dismissed prompt (its text withheld: a frame of an origin agents may not read \
             opened it) in tab 4."
        );
    }
}
