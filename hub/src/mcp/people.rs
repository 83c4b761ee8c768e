//! Handing a tab to a person: `request_human` (issue 14 §2).
//!
//! The agent names a reason; the browser selects the tab in its window, shows the reason in the
//! popup and a notification with *Done* and *Decline*, and answers once the person has. The call
//! may wait up to 15 minutes, so while it waits the hub sends MCP progress notifications every
//! 10 s to a client that asked for them (a `progressToken`), and clients that time calls out
//! by inactivity keep waiting. Afterwards the tab is observed afresh, so the agent sees what
//! the person left.

use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::tabs::HANDOFF_REASON_MAX;
use tabwire_protocol::{Handoff, HandoffChoice, SnapshotRequest};

use super::envelope::{ToolError, ToolOutput};
use super::fence::Rendering;
use super::observation::{observation_data, render_page};
use super::routing::ToolContext;

/// The longest a person is given.
const HANDOFF_DEADLINE: Duration = Duration::from_secs(15 * 60);
/// How often a waiting client hears that the call is still going.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);
/// The observation afterwards: an action's default window.
const AFTER_NODES: u32 = 30;
const AFTER_CHARS: u32 = 1500;
const AFTER_DEADLINE: Duration = Duration::from_secs(20);

/// `request_human`'s own arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestHumanArgs {
    /// What the person should do, shown to them.
    pub reason: String,
}

pub const REQUEST_HUMAN: &str = "Hand the tab to the person at the browser for what only they \
should do (log in, CAPTCHA, 2FA, payment) and wait up to 15 min for Done or Decline; returns \
their choice and the page afterwards.";

/// `request_human`.
pub async fn request_human(
    ctx: &ToolContext,
    args: RequestHumanArgs,
) -> Result<ToolOutput, ToolError> {
    let reason = args.reason.trim();
    if reason.is_empty() || reason.chars().count() > HANDOFF_REASON_MAX {
        return Err(ToolError::invalid(format!(
            "reason must say what the person should do, in 1-{HANDOFF_REASON_MAX} characters"
        )));
    }
    let connection = ctx.connection()?;
    let handoff = Handoff {
        reason: reason.to_owned(),
    };
    let call = ctx.call_on(&connection, ctx.route.tab_id, handoff, HANDOFF_DEADLINE);
    tokio::pin!(call);
    let started = Instant::now();
    let mut progress =
        tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    let handed = loop {
        tokio::select! {
            answer = &mut call => break answer?,
            _ = progress.tick() => {
                // A cancelled call's client has stopped listening for it.
                if let Some(reporter) = ctx.progress.as_ref().filter(|_| !ctx.cancel.is_cancelled()) {
                    let waited = started.elapsed().as_secs();
                    reporter
                        .report(waited as f64, &format!("waiting for the person at the browser ({waited} s)"))
                        .await;
                }
            }
        }
    };
    let choice = match handed.choice {
        HandoffChoice::Done => "done",
        HandoffChoice::Declined => "declined",
    };
    let mut text = Rendering::hub(format!(
        "The person {} (tab {}).",
        match handed.choice {
            HandoffChoice::Done => "is done",
            HandoffChoice::Declined => "declined",
        },
        handed.tab_id
    ));
    let mut data = json!({"tabId": handed.tab_id, "choice": choice});
    let after = SnapshotRequest {
        frame_id: None,
        scope: None,
        query: None,
        max_nodes: AFTER_NODES,
        max_chars: AFTER_CHARS,
        offset: 0,
        since: None,
        include_hidden: false,
    };
    match ctx
        .call_on(&connection, Some(handed.tab_id), after, AFTER_DEADLINE)
        .await
    {
        Ok(observation) => {
            text.push("\n");
            text.append(render_page(&observation));
            data["observation"] = observation_data(&observation);
        }
        // The person's answer stands; the page can be observed again.
        Err(error) => text.push(&format!(
            "\n(The page could not be observed afterwards: {}.)",
            error.code
        )),
    }
    Ok(ToolOutput::new(data, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_fits_and_says_when_to_use_it() {
        assert!(REQUEST_HUMAN.len() < 260, "{}", REQUEST_HUMAN.len());
        for word in ["log in", "CAPTCHA", "Done", "Decline", "15 min"] {
            assert!(REQUEST_HUMAN.contains(word), "{word}");
        }
    }
}
