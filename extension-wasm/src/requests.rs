//! Serving one hub request: run the operation under its deadline, answer exactly once, record
//! the call for the popup.
//!
//! Requests run concurrently (each in its own task). When the deadline passes first, the
//! operation's future is dropped — its late result can no longer be sent or written anywhere —
//! and the hub gets a timeout error that says whether the action may already have happened.
//! When the connection the request came on closes, the operation is dropped too: the hub has
//! already told the agent the outcome is unknown, so nothing may happen after that. Dropping
//! the future stops it at its next await; a [`Checkpoint`] checked right before each mutating
//! step closes the remaining gap.

use tabwire_protocol::{ErrorCode, ExtensionMessage, OpError, Operation, Request, Response};

use crate::calllog::CallRecord;
use crate::connection::Link;
use crate::ops;
use crate::timer::{Either, now_ms, select, sleep};
use crate::worker;

/// Requests slower than this are logged even when they succeed.
const SLOW_REQUEST_MS: u32 = 1000;

/// How often a running request checks whether its connection is still open.
const LIVENESS_POLL_MS: f64 = 100.0;

/// Whether a request may still act: its connection is the live one and its deadline has not
/// passed. Operations call [`Checkpoint::check`] immediately before a click, a keystroke or a
/// navigation is dispatched.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    generation: u64,
    deadline_at: f64,
    timeout: OpError,
}

impl Checkpoint {
    /// Fails when the request must not act any more.
    pub fn check(&self) -> Result<(), OpError> {
        if worker::with(|w| w.live_generation) != self.generation {
            return Err(OpError::new(
                ErrorCode::BrowserDisconnected,
                "the connection this request came on has closed; nothing was done",
            ));
        }
        if now_ms() >= self.deadline_at {
            let mut error = self.timeout.clone();
            // Stopped before acting: nothing happened at this step.
            error.action_may_have_occurred = false;
            return Err(error);
        }
        Ok(())
    }
}

/// Completes when the connection of `generation` is no longer the live one.
async fn connection_closed(generation: u64) {
    while worker::with(|w| w.live_generation) == generation {
        sleep(LIVENESS_POLL_MS).await;
    }
}

/// Runs `request` and answers it on `link`.
pub async fn handle(request: Request, link: Link) {
    let started = now_ms();
    let Request {
        id,
        tab_id,
        deadline_ms,
        tool,
        op,
    } = request;
    let timeout = deadline_error(&op, deadline_ms);
    let checkpoint = Checkpoint {
        generation: link.generation(),
        deadline_at: started + deadline_ms as f64,
        timeout: timeout.clone(),
    };
    let stop = select(
        sleep(deadline_ms as f64),
        connection_closed(link.generation()),
    );
    let outcome = match select(ops::execute(tab_id, op, &checkpoint), stop).await {
        Either::Left(outcome) => outcome,
        Either::Right(Either::Left(())) => Err(timeout),
        Either::Right(Either::Right(())) => {
            crate::log!("request {id} {tool}: stopped, its connection closed");
            return;
        }
    };
    let error_code = outcome.as_ref().err().map(|e| e.code.as_str().to_owned());
    let message = ExtensionMessage::Response(Response::new(id, outcome));
    let text = serde_json::to_string(&message).unwrap_or_else(|e| {
        // Cannot happen with these types; answer anyway so the hub is not left waiting.
        let error = OpError::new(ErrorCode::Internal, format!("encoding the response: {e}"));
        serde_json::to_string(&ExtensionMessage::Response(Response::new(id, Err(error))))
            .unwrap_or_default()
    });
    let sent = link.send(&text);
    let ms = (now_ms() - started).max(0.0).round() as u32;
    let ok = error_code.is_none();
    // Successful, ordinary calls are in the popup's call log; the console gets what deserves
    // a look (a line per call costs time of its own on every call).
    match &sent {
        Ok(()) if error_code.is_none() && ms < SLOW_REQUEST_MS => {}
        Ok(()) => crate::log!(
            "request {id} {tool}: {} in {ms} ms",
            error_code.as_deref().unwrap_or("ok")
        ),
        Err(why) => crate::log!("request {id} {tool}: result discarded ({why})"),
    }
    let record = CallRecord {
        tool,
        at: started,
        ms,
        bytes: if sent.is_ok() { text.len() as u32 } else { 0 },
        ok: ok && sent.is_ok(),
        error: match sent {
            Ok(()) => error_code,
            Err(why) => Some(why.to_owned()),
        },
    };
    worker::with(|w| w.calls.push(record));
}

/// The error for an operation that ran out of time.
pub fn deadline_error(op: &Operation, deadline_ms: u64) -> OpError {
    let error = match op {
        Operation::Navigate { .. } => OpError::new(
            ErrorCode::NavigationTimeout,
            format!(
                "The page did not finish loading within {deadline_ms} ms. It may still be \
                 loading: take a snapshot to see where the tab is before retrying."
            ),
        ),
        _ if op.is_mutation() => OpError::new(
            ErrorCode::TabUnresponsive,
            format!(
                "The page did not respond within {deadline_ms} ms. The action may already have \
                 happened: take a snapshot to check before retrying."
            ),
        ),
        _ => OpError::new(
            ErrorCode::TabUnresponsive,
            format!("The page did not respond within {deadline_ms} ms; it may be busy or hung."),
        ),
    };
    if op.is_mutation() {
        error.action_may_have_occurred()
    } else {
        error
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tabwire_protocol::Target;

    #[test]
    fn timeouts_say_whether_the_action_may_have_happened() {
        let nav = deadline_error(
            &Operation::Navigate {
                url: "http://x/".into(),
            },
            500,
        );
        assert_eq!(nav.code, ErrorCode::NavigationTimeout);
        assert!(nav.action_may_have_occurred);

        let click = deadline_error(
            &Operation::Click {
                target: Target::Css("#a".into()),
            },
            500,
        );
        assert_eq!(click.code, ErrorCode::TabUnresponsive);
        assert!(click.action_may_have_occurred);

        let read = deadline_error(
            &Operation::Snapshot(tabwire_protocol::SnapshotRequest {
                frame_id: None,
                scope: None,
                query: None,
                max_nodes: 1,
                max_chars: 1,
                offset: 0,
                since: None,
            }),
            500,
        );
        assert_eq!(read.code, ErrorCode::TabUnresponsive);
        assert!(!read.action_may_have_occurred);
        assert!(read.message.contains("500 ms"));
    }
}
