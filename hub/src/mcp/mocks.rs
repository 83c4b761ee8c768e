//! `mock_network` (issue 28): stubbed responses for a tab's requests, and what they saw.
//!
//! The hub checks every mock before anything is sent: the pattern, method, status, headers
//! and bounds (`tabwire_protocol::mocks`), exactly one body source (text, base64, or a file
//! under `--upload-dir`), and the operator's policy for the origin a pattern names. A hosted
//! hub offers mocks only on origins its operator's policy names in a rule that lets agents
//! act there: a mock decides what a page of that origin runs, so the default rule is not
//! enough. The extension judges the page and every answered request again where it answers.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::ErrorCode;
use tabwire_protocol::mocks::{
    MAX_CALL_BODY_BYTES, MAX_MOCK_BODY_BYTES, MockHeader, MockInfo, MockNetwork, MockOutcome,
    MockRecord, MockSpec, MockState, check_spec, pattern_origin, status_allowed, status_refused,
};
use tabwire_protocol::policy::{Gate, Need, Owner};

use super::capture::{DEADLINE, Kind, cut, records_request, render_records, short_text};
use super::envelope::{Rendering, ToolError, ToolOutput};
use super::routing::ToolContext;
use crate::state::Destinations;

/// A URL pattern in a line is cut to this many characters (the data has it whole).
const MAX_LINE_PATTERN: usize = 200;

/// Arguments of mock_network.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MockNetworkArgs {
    /// Newest match answers.
    pub add: Option<Vec<MockArg>>,
    /// This session's mocks of the tab, first.
    pub clear: Option<bool>,
    pub list: Option<bool>,
    /// Requests seen: mocked, missed.
    pub requests: Option<bool>,
    /// URL contains.
    pub filter: Option<String>,
    pub limit: Option<u32>,
    pub offset: Option<u32>,
}

/// One mock to add.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MockArg {
    /// e.g. `*/api/items*`
    pub url_pattern: String,
    pub method: Option<String>,
    #[schemars(extend("default" = 200))]
    pub status: Option<u32>,
    pub headers: Option<BTreeMap<String, String>>,
    pub body: Option<String>,
    pub body_base64: Option<String>,
    /// Under --upload-dir.
    pub file: Option<String>,
    pub delay_ms: Option<u32>,
}

pub const MOCK_NETWORK: &str = "Stub a tab's responses until clear or the session ends; \
others go on untouched.";

pub async fn mock_network(
    ctx: &ToolContext,
    args: MockNetworkArgs,
) -> Result<ToolOutput, ToolError> {
    let clear = args.clear.unwrap_or(false);
    let wants_requests = args.requests.unwrap_or(false);
    if args.add.as_ref().is_some_and(Vec::is_empty) {
        return Err(ToolError::invalid(
            "add is empty: give at least one mock, or leave it out",
        ));
    }
    let add = args.add.unwrap_or_default();
    let nothing_asked = add.is_empty() && !clear && !wants_requests && args.list != Some(true);
    if nothing_asked {
        return Err(ToolError::invalid(
            "give add (mocks to add), clear, list or requests",
        ));
    }
    let paging = args.filter.is_some() || args.limit.is_some() || args.offset.is_some();
    if paging && !wants_requests {
        return Err(ToolError::invalid(
            "filter, limit and offset page the requests: give requests: true",
        ));
    }
    let requests = if wants_requests {
        Some(records_request(
            args.limit,
            args.offset,
            short_text(args.filter, "filter")?,
            Vec::new(),
            None,
            None,
        )?)
    } else {
        None
    };
    let hub = ctx.hub.clone();
    let specs = tokio::task::spawn_blocking(move || mocks(&hub.uploads, add))
        .await
        .map_err(|e| {
            ToolError::new(
                ErrorCode::Internal,
                format!("reading the mocks failed: {e}"),
            )
        })??;
    judge(&ctx.destinations(), &specs)?;
    let request = MockNetwork {
        add: specs,
        clear,
        requests,
    };
    let state = ctx.call(request, DEADLINE).await?;
    Ok(ToolOutput::new(json!(state), render(&state)))
}

/// Every mock checked and its body turned into base64, within the bounds.
fn mocks(uploads: &crate::uploads::Uploads, add: Vec<MockArg>) -> Result<Vec<MockSpec>, ToolError> {
    let mut total = 0;
    let mut specs = Vec::with_capacity(add.len());
    for arg in add {
        let bytes = match (arg.body, arg.body_base64, arg.file) {
            (None, None, None) => Vec::new(),
            (Some(text), None, None) => text.into_bytes(),
            (None, Some(data), None) => {
                if data.len() > (MAX_MOCK_BODY_BYTES / 3 + 1) * 4 {
                    return Err(ToolError::invalid(format!(
                        "a mock's body is at most {} KiB",
                        MAX_MOCK_BODY_BYTES / 1024
                    )));
                }
                STANDARD.decode(data.trim()).map_err(|e| {
                    ToolError::invalid(format!(
                        "bodyBase64 of {} is not base64 (standard alphabet, padded): {e}",
                        arg.url_pattern
                    ))
                })?
            }
            (None, None, Some(path)) => {
                let refused = |refusal: crate::uploads::Refusal| {
                    ToolError::new(refusal.code, refusal.message)
                };
                uploads.read(&path, total as u64).map_err(refused)?.1
            }
            _ => {
                return Err(ToolError::invalid(format!(
                    "the mock of {} gives more than one of body, bodyBase64 and file",
                    arg.url_pattern
                )));
            }
        };
        let headers = arg
            .headers
            .unwrap_or_default()
            .into_iter()
            .map(|(name, value)| MockHeader { name, value })
            .collect();
        let status = arg.status.unwrap_or(200);
        let spec = MockSpec {
            url_pattern: arg.url_pattern,
            method: arg.method.map(|m| m.to_ascii_uppercase()),
            status: u16::try_from(status)
                .ok()
                .filter(|status| status_allowed(*status))
                .ok_or_else(|| ToolError::invalid(status_refused(status)))?,
            headers,
            body_base64: STANDARD.encode(&bytes),
            delay_ms: arg.delay_ms.unwrap_or(0),
        };
        check_spec(&spec, bytes.len()).map_err(ToolError::invalid)?;
        total += bytes.len();
        if total > MAX_CALL_BODY_BYTES {
            return Err(ToolError::invalid(format!(
                "one call adds at most {} KiB of bodies; add the rest in another call",
                MAX_CALL_BODY_BYTES / 1024
            )));
        }
        specs.push(spec);
    }
    Ok(specs)
}

/// The operator's word on each mocked origin, before anything is sent. A hosted hub asks for
/// more than the default rule: an operator's rule that names the origin and lets agents act.
fn judge(destinations: &Destinations, specs: &[MockSpec]) -> Result<(), ToolError> {
    for spec in specs {
        let origin = pattern_origin(&spec.url_pattern);
        if destinations.hosted {
            let named = origin.as_ref().map(|origin| {
                let verdict = destinations.policy.verdict(origin, Owner::Operator);
                verdict.rule != "default" && verdict.gate(Need::Act, origin) == Gate::Allowed
            });
            if named != Some(true) {
                return Err(ToolError::new(
                    ErrorCode::OriginBlocked,
                    format!(
                        "this hosted hub mocks only origins its operator's policy names in a \
                         rule that lets agents act there; {} {}",
                        spec.url_pattern,
                        match &origin {
                            Some(origin) => format!("reaches {origin}, which no such rule names"),
                            None => "names no single origin (a wildcard host or scheme)".into(),
                        }
                    ),
                ));
            }
        }
        if let Some(origin) = origin
            && let Gate::Blocked(why) = destinations
                .policy
                .verdict(&origin, Owner::Operator)
                .gate(Need::Act, &origin)
        {
            return Err(ToolError::new(ErrorCode::OriginBlocked, why));
        }
    }
    Ok(())
}

/// `tab 3: 2 mocks (1 added)`, a line per mock, then the page of requests when asked.
fn render(state: &MockState) -> Rendering {
    let mut head = format!("tab {}: ", state.tab_id);
    head.push_str(&match state.mocks.len() {
        0 => "no mocks of this session".to_owned(),
        1 => "1 mock".to_owned(),
        n => format!("{n} mocks"),
    });
    let mut done = Vec::new();
    if state.added > 0 {
        done.push(format!("{} added", state.added));
    }
    if state.cleared > 0 {
        done.push(format!("{} cleared", state.cleared));
    }
    if !done.is_empty() {
        head.push_str(&format!(" ({})", done.join(", ")));
    }
    if !state.mocks.is_empty() && !state.active {
        head.push_str("; not answering now: tabwire's debugger is not attached to the tab");
    }
    let mut lines = vec![Rendering::hub(head)];
    // The patterns and the records' URLs are the agent's and the page's words.
    lines.extend(
        state
            .mocks
            .iter()
            .map(|mock| Rendering::page(mock_line(mock))),
    );
    if let Some(records) = &state.requests {
        lines.push(render_records(Kind::Mocks, records, record_line));
    }
    Rendering::lines(lines)
}

/// `#3 GET */api/items* → 200, 42 B, delay 500 ms, 4 hits`
fn mock_line(mock: &MockInfo) -> String {
    let method = mock.method.as_deref().unwrap_or("any");
    let mut line = format!(
        "#{} {method} {} → {}, {} B",
        mock.id,
        cut(&mock.url_pattern, MAX_LINE_PATTERN),
        mock.status,
        mock.body_bytes
    );
    if mock.delay_ms > 0 {
        line.push_str(&format!(", delay {} ms", mock.delay_ms));
    }
    line.push_str(&match mock.hits {
        1 => ", 1 hit".to_owned(),
        n => format!(", {n} hits"),
    });
    line
}

/// `#12 mocked GET https://x/api/items by #3 → 200`
fn record_line(record: &MockRecord) -> String {
    let outcome = match record.outcome {
        MockOutcome::Mocked => "mocked",
        MockOutcome::Missed => "missed",
        MockOutcome::Passed => "passed",
    };
    let mut line = format!(
        "#{} {outcome} {} {}",
        record.seq,
        record.method,
        cut(&record.url, super::capture::MAX_LINE_URL)
    );
    if let Some(id) = record.mock_id {
        line.push_str(&format!(" by #{id}"));
    }
    if let Some(status) = record.status {
        line.push_str(&format!(" → {status}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::state::FileUrls;

    fn mock(pattern: &str) -> MockSpec {
        MockSpec {
            url_pattern: pattern.into(),
            method: None,
            status: 200,
            headers: Vec::new(),
            body_base64: String::new(),
            delay_ms: 0,
        }
    }

    fn under(policy: &str, hosted: bool) -> Destinations {
        Destinations {
            policy: Arc::new(crate::policy::parse(policy).unwrap()),
            hosted,
            ..Destinations::from(FileUrls::Refused)
        }
    }

    #[test]
    fn a_hosted_hub_mocks_only_origins_its_operator_names_for_acting() {
        let policy = "[[rules]]\norigin = \"https://api.example.com\"\naccess = \"act\"\n\
                      [[rules]]\norigin = \"https://read.example.com\"\naccess = \"read\"\n";
        let hosted = under(policy, true);
        assert!(judge(&hosted, &[mock("https://api.example.com/items*")]).is_ok());
        for refused in [
            // A wildcard host could reach any origin.
            "*/items*",
            "https://*.example.com/x",
            // The default rule allows acting, but names no origin.
            "https://other.example.com/x",
            // Named, but read-only.
            "https://read.example.com/x",
            // A `*` right after the host could reach another host.
            "https://api.example.com*",
        ] {
            let error = judge(&hosted, &[mock(refused)]).unwrap_err();
            assert_eq!(error.code, ErrorCode::OriginBlocked, "{refused}");
        }
        // A local hub leaves wildcards to the extension, and refuses what its operator denies.
        let local = under(policy, false);
        assert!(judge(&local, &[mock("*/items*")]).is_ok());
        assert!(judge(&local, &[mock("https://other.example.com/x")]).is_ok());
        let error = judge(&local, &[mock("https://read.example.com/x")]).unwrap_err();
        assert_eq!(error.code, ErrorCode::OriginBlocked);
    }
}
