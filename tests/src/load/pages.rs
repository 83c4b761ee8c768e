//! What a simulated browser answers beyond `list_tabs`, for the soak's mixed workload: a page of
//! [`PAGE_NODES`] lines observed within the request's budget (so the agent chooses how large an
//! answer is), clicks and typing that succeed at once, and waits for something that never shows
//! (held until their deadline, the way a page that never shows the text holds them, so the
//! agent has a call to cancel). Answers are built with the protocol crate's types and
//! serialised, not spliced: they are the shapes the hub checks.

use std::time::Duration;

use tabwire_protocol::{
    ActOp, Acted, Action, ActionFacts, ElementRef, ErrorCode, ExtensionMessage, Node, Observation,
    ObserveOp, OpError, OpResult, Operation, Outcome, Page, Request, Response, TabsOp,
};

/// Lines the simulated page has: a budget of up to 5,000 nodes (the hub's maximum) reads all of
/// it in about 150 KB of JSON.
pub const PAGE_NODES: u32 = 3000;

/// The tab every answer is about when the request names none.
const TAB: u32 = 1;

/// How a simulated browser answers one request.
#[derive(Debug)]
pub enum Reply {
    /// With this text after the browser's usual delay.
    Answer(String),
    /// With this text after `after`, unless the hub cancels the request first (then
    /// `CANCELLED`).
    Held {
        /// How long the browser holds it.
        after: Duration,
        /// The answer when the time is up.
        text: String,
    },
    /// Not an operation the simulated browser knows: answered `INVALID_ARGUMENT`.
    Unknown(String),
}

/// The answer to `request`, other than `list_tabs` (which the caller splices).
pub fn reply(request: &Request) -> Reply {
    let id = request.id;
    let tab = request.tab_id.unwrap_or(TAB);
    match &request.op {
        Operation::Observe(ObserveOp::Snapshot(snapshot)) => {
            let observation = observe(tab, snapshot.max_nodes, snapshot.max_chars, snapshot.offset);
            Reply::Answer(ok(id, observation.into()))
        }
        Operation::Act(ActOp::Act(act)) => {
            let facts = match &act.action {
                Action::Click { target, .. } => ActionFacts::Click {
                    target: format!("button \"Target {target}\""),
                    navigated: None,
                    url: None,
                },
                Action::Type { target, text, .. } => ActionFacts::Type {
                    target: format!("textbox \"Field {target}\""),
                    value: text.clone(),
                },
                Action::Wait { timeout_ms, .. } => {
                    // A wait for something that never shows: it ends at its own timeout.
                    let error = OpError::new(
                        ErrorCode::WaitTimeout,
                        "the simulated page never shows what was waited for",
                    );
                    return Reply::Held {
                        after: Duration::from_millis(u64::from(*timeout_ms)),
                        text: message(Response::new(id, Err(error))),
                    };
                }
                _ => return Reply::Unknown(unknown(id)),
            };
            let summary = match &facts {
                ActionFacts::Click { target, .. } => format!("Clicked {target}"),
                _ => "Typed into the field".to_owned(),
            };
            let observation = act
                .observe
                .as_ref()
                .map(|spec| observe(tab, spec.max_nodes, spec.max_chars, 0));
            let acted = Acted {
                outcome: Outcome::new(tab, summary, facts),
                observation,
                observation_error: None,
            };
            Reply::Answer(ok(id, acted.into()))
        }
        Operation::Tabs(TabsOp::ListTabs(_)) => {
            unreachable!("list_tabs is answered by the caller's spliced text")
        }
        _ => Reply::Unknown(unknown(id)),
    }
}

/// The answer to a cancelled request: what a browser says when the cancel finds the request
/// before any input went out.
pub fn cancelled(id: u64) -> String {
    let error = OpError::new(ErrorCode::Cancelled, "cancelled before it ran");
    message(Response::new(id, Err(error)))
}

/// The simulated page observed from `offset` within `max_nodes` nodes and `max_chars`
/// characters of node text.
pub fn observe(tab: u32, max_nodes: u32, max_chars: u32, offset: u32) -> Observation<Page> {
    let mut nodes = Vec::new();
    let mut chars = 0u32;
    let mut index = offset;
    while index < PAGE_NODES && (nodes.len() as u32) < max_nodes {
        let text = format!("link \"Simulated row {index} of the soak page\"");
        if chars + text.len() as u32 > max_chars && !nodes.is_empty() {
            break;
        }
        chars += text.len() as u32;
        nodes.push(Node::new(Some(ElementRef::top(index + 1)), text));
        index += 1;
    }
    let shown = nodes.len() as u32;
    let omitted =
        PAGE_NODES.saturating_sub(offset.min(PAGE_NODES) + shown) + offset.min(PAGE_NODES);
    let page = Page {
        tab_id: tab,
        frame_id: None,
        url: "https://load.example/soak".to_owned(),
        title: "Soak page".to_owned(),
        document_id: "soak-document".to_owned(),
    };
    Observation {
        total_nodes: PAGE_NODES,
        offset,
        truncated: omitted > 0,
        omitted_nodes: omitted,
        // About as many characters as each shown line has.
        omitted_chars: omitted * 40,
        next_offset: (index < PAGE_NODES).then_some(index),
        ..Observation::new(page, 1, nodes, None)
    }
}

fn ok(id: u64, result: OpResult) -> String {
    message(Response::new(id, Ok(result)))
}

fn unknown(id: u64) -> String {
    let error = OpError::new(
        ErrorCode::InvalidArgument,
        "the simulated browser answers listTabs, snapshots, clicks, typing and waits only",
    );
    message(Response::new(id, Err(error)))
}

fn message(response: Response) -> String {
    serde_json::to_string(&ExtensionMessage::Response(response)).expect("responses serialise")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_decides_the_size_of_an_observation() {
        let small = observe(1, 5, 10_000, 0);
        assert_eq!(small.nodes.len(), 5);
        assert_eq!(small.next_offset, Some(5));
        assert_eq!(small.omitted_nodes, PAGE_NODES - 5);
        let by_chars = observe(1, 5000, 1000, 0);
        assert!(by_chars.nodes.len() < 40, "{}", by_chars.nodes.len());
        let whole = observe(1, 5000, 200_000, 0);
        assert_eq!(whole.nodes.len() as u32, PAGE_NODES);
        assert!(!whole.truncated);
        assert_eq!(whole.next_offset, None);
        let text = serde_json::to_string(&whole).unwrap();
        assert!(text.len() > 100_000, "{}", text.len());
    }

    #[test]
    fn answers_are_protocol_responses() {
        let parse = |text: &str| match serde_json::from_str(text).unwrap() {
            ExtensionMessage::Response(response) => response,
            other => panic!("not a response: {other:?}"),
        };
        let request = |op: Operation| Request {
            id: 9,
            tab_id: None,
            deadline_ms: 5000,
            tool: "t".into(),
            holder: None,
            viewer: None,
            op,
        };
        let snapshot = tabwire_protocol::SnapshotRequest {
            frame_id: None,
            scope: None,
            query: None,
            max_nodes: 10,
            max_chars: 10_000,
            offset: 0,
            since: None,
            include_hidden: false,
        };
        let Reply::Answer(text) = reply(&request(snapshot.into())) else {
            panic!("a snapshot is answered at once");
        };
        let answer = parse(&text).into_outcome().unwrap();
        assert_eq!(
            Observation::<Page>::try_from(answer).unwrap().nodes.len(),
            10
        );
        let cancelled = parse(&cancelled(4));
        assert_eq!(cancelled.id, 4);
        assert_eq!(
            cancelled.into_outcome().unwrap_err().code,
            ErrorCode::Cancelled
        );
    }
}
