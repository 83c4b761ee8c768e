//! `doctor`: the hub's checks of its own set-up for the caller's account
//! ([`crate::doctor::report`]), each problem with its fix; `tabwire-hub doctor` calls it over
//! the Unix socket and prints the same for a person.

use serde_json::json;

use super::args::NoArgs;
use super::envelope::{Rendering, ToolError, ToolOutput};
use super::routing::ToolContext;
use crate::doctor::{self, Report};

pub const DOCTOR: &str = "Check tabwire's set-up (browsers, devices, pairing, policy, audit log, \
socket); each problem comes with its fix.";

/// `doctor`: the report as checks, then the account's peers.
pub async fn doctor(ctx: &ToolContext, _args: NoArgs) -> Result<ToolOutput, ToolError> {
    let report = doctor::report(&ctx.hub, &ctx.account);
    let text = render(&report);
    let data = serde_json::to_value(&report).unwrap_or_else(|_| json!({}));
    Ok(ToolOutput::new(data, text))
}

/// The report for the model: a line per check (and its fix), a line per peer with the reason
/// it gave for going away marked as the peer's words, and the number of problems.
fn render(report: &Report) -> Rendering {
    let mut lines: Vec<Rendering> = report
        .checks
        .iter()
        .map(|check| Rendering::hub(check.render()))
        .collect();
    for peer in &report.peers {
        let mut line = Rendering::hub(Report::peer_line(peer));
        if let Some(reason) = &peer.reason {
            line.push("; it said: ");
            line.push_page(reason);
        }
        lines.push(line);
    }
    lines.push(Rendering::hub(match report.problems().count() {
        0 => "No problem found.".to_owned(),
        1 => "1 problem.".to_owned(),
        n => format!("{n} problems."),
    }));
    Rendering::lines(lines)
}
