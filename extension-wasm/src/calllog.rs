//! The popup's log of recent calls: the last [`CAPACITY`] requests the hub sent, how long each
//! took, how big its answer was and whether it succeeded.
//!
//! It records only the tool name, numbers and the error code — never page content, selectors or
//! typed text — because the popup is a place people take screenshots of.

use std::cell::RefCell;
use std::collections::VecDeque;

use serde::Serialize;

/// How many calls are kept; older ones fall off.
pub const CAPACITY: usize = 50;

/// One finished call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRecord {
    /// The MCP tool the request served.
    pub tool: String,
    /// When the request arrived, in ms since the epoch.
    pub at: f64,
    /// Milliseconds from receipt to answer.
    pub ms: u32,
    /// Size of the serialised response message; 0 when it was never sent.
    pub bytes: u32,
    /// Whether the operation succeeded.
    pub ok: bool,
    /// The error code, or why the response was not sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A ring buffer of [`CallRecord`]s, oldest first.
#[derive(Debug, Default)]
pub struct CallLog {
    records: VecDeque<CallRecord>,
}

impl CallLog {
    /// Adds a record, dropping the oldest when full.
    pub fn push(&mut self, record: CallRecord) {
        if self.records.len() == CAPACITY {
            self.records.pop_front();
        }
        self.records.push_back(record);
    }

    /// The records, newest first (the order the popup shows).
    pub fn newest_first(&self) -> Vec<CallRecord> {
        self.records.iter().rev().cloned().collect()
    }
}

thread_local! {
    /// The worker's one log (wasm in a service worker is single-threaded).
    static LOG: RefCell<CallLog> = RefCell::new(CallLog::default());
}

/// Records a finished call in the worker's log.
pub fn record(record: CallRecord) {
    LOG.with(|log| log.borrow_mut().push(record));
}

/// The worker's log, newest first.
pub fn recent() -> Vec<CallRecord> {
    LOG.with(|log| log.borrow().newest_first())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: u32) -> CallRecord {
        CallRecord {
            tool: format!("tool{n}"),
            at: 0.0,
            ms: n,
            bytes: 10,
            ok: true,
            error: None,
        }
    }

    #[test]
    fn keeps_the_last_fifty_newest_first() {
        let mut log = CallLog::default();
        for n in 0..(CAPACITY as u32 + 7) {
            log.push(record(n));
        }
        let shown = log.newest_first();
        assert_eq!(shown.len(), CAPACITY);
        assert_eq!(shown[0].ms, CAPACITY as u32 + 6);
        assert_eq!(shown[CAPACITY - 1].ms, 7);
    }

    #[test]
    fn serialises_for_the_popup() {
        let mut failed = record(3);
        failed.ok = false;
        failed.error = Some("STALE_REF".into());
        let json = serde_json::to_string(&failed).unwrap();
        assert_eq!(
            json,
            r#"{"tool":"tool3","at":0.0,"ms":3,"bytes":10,"ok":false,"error":"STALE_REF"}"#
        );
    }
}
