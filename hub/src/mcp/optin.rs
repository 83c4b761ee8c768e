//! Opt-in tool groups: tools left out of the default `tools/list` so that it stays within its
//! budget (SPEC §7), listed for a session once it asks with `show_tools`.
//!
//! Every tool stays callable by name whether it is listed or not: listing is what a model sees,
//! not what it may do. After `show_tools` the hub tells the client that its tool list changed
//! (`notifications/tools/list_changed`), and the session's next `tools/list` includes the
//! groups it asked for. Each session has its own listing; over stateless HTTP, where every
//! request is a session of its own, the default listing is all a client sees, and naming a tool
//! still calls it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::envelope::{ToolError, ToolOutput};
use super::routing::ToolContext;

/// A group of tools that is listed only on request.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum OptIn {
    /// Network capture: start, stop, the captured requests, a response's body.
    Network,
    /// Console capture: start, stop, the messages.
    Console,
    /// Cookies and local storage.
    Storage,
    /// The browser's clipboard.
    Clipboard,
    /// Recording what a person does.
    Recording,
}

impl OptIn {
    /// Every opt-in group.
    pub const ALL: [OptIn; 5] = [
        OptIn::Network,
        OptIn::Console,
        OptIn::Storage,
        OptIn::Clipboard,
        OptIn::Recording,
    ];

    /// The group's name, as `show_tools` takes it.
    pub fn name(self) -> &'static str {
        match self {
            OptIn::Network => "network",
            OptIn::Console => "console",
            OptIn::Storage => "storage",
            OptIn::Clipboard => "clipboard",
            OptIn::Recording => "recording",
        }
    }

    /// The tools of the group.
    pub fn tools(self) -> &'static [&'static str] {
        match self {
            OptIn::Network => &[
                "start_network_capture",
                "stop_network_capture",
                "get_captured_requests",
                "get_response_body",
                "mock_network",
            ],
            OptIn::Console => &[
                "start_console_capture",
                "stop_console_capture",
                "get_console_logs",
            ],
            OptIn::Storage => &["get_cookies", "get_local_storage"],
            OptIn::Clipboard => &["clipboard"],
            OptIn::Recording => &["record_actions"],
        }
    }

    /// The opt-in group a tool belongs to; `None` for a tool listed by default.
    pub fn of(tool: &str) -> Option<OptIn> {
        OptIn::ALL
            .into_iter()
            .find(|group| group.tools().contains(&tool))
    }
}

/// `show_tools`' arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowToolsArgs {
    /// The groups to list.
    pub groups: Vec<OptIn>,
}

pub const SHOW_TOOLS: &str = "List more tools in this session: network (capture, response \
bodies, mocks), console (capture), storage (cookies, local storage), clipboard, recording.";

/// `show_tools`: adds the groups to the session's listing; the client is told its list changed
/// once the call has returned.
pub async fn show_tools(ctx: &ToolContext, args: ShowToolsArgs) -> Result<ToolOutput, ToolError> {
    if args.groups.is_empty() {
        return Err(ToolError::new(
            tabwire_protocol::ErrorCode::InvalidArgument,
            "groups is empty: name at least one of network, console, storage, clipboard",
        ));
    }
    ctx.session
        .show(args.groups.iter().map(|group| group.name()));
    let shown: Vec<OptIn> = OptIn::ALL
        .into_iter()
        .filter(|group| ctx.session.shows(group.name()))
        .collect();
    let tools: Vec<&str> = shown
        .iter()
        .flat_map(|group| group.tools().iter().copied())
        .collect();
    let names: Vec<&str> = shown.iter().map(|group| group.name()).collect();
    let text = format!(
        "Listed now: {}. If your tool list does not show them, call them by name.",
        tools.join(", ")
    );
    Ok(ToolOutput::new(
        json!({"groups": names, "tools": tools}),
        text,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::catalogue;

    #[test]
    fn every_opt_in_tool_is_in_the_catalogue_once() {
        let mut seen = std::collections::BTreeSet::new();
        for group in OptIn::ALL {
            for tool in group.tools() {
                assert!(
                    catalogue::tools().any(|t| t.name == *tool),
                    "{tool} of {} is not a tool",
                    group.name()
                );
                assert!(seen.insert(*tool), "{tool} is in two groups");
            }
            assert!(SHOW_TOOLS.contains(group.name()), "{}", group.name());
        }
    }
}
