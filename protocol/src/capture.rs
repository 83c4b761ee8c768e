//! Network and console capture (SPEC §6): switching it on and off, reading the records in
//! pages, and fetching a captured response's body.
//!
//! Everything here is bounded on the extension side: records are kept up to [`MAX_RECORDS`] per
//! tab and kind, and every read returns a page within a character budget, saying what it left
//! out.

use serde::{Deserialize, Serialize};

use crate::TabId;
use crate::records::{Records, RecordsRequest};

/// Most records kept per tab and kind (network, console); older ones are evicted.
pub const MAX_RECORDS: usize = 500;

/// Start (clearing what was kept) or stop network capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetNetworkCapture {
    /// Start or stop.
    pub on: bool,
}

/// Start (clearing what was kept) or stop console capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetConsoleCapture {
    /// Start or stop.
    pub on: bool,
}

/// Read captured requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GetRequests(pub RecordsRequest);

/// Read captured console messages and uncaught exceptions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GetConsole(pub RecordsRequest);

/// Fetch one captured response's body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetResponseBody {
    /// The request's ID from [`GetRequests`].
    pub request_id: String,
    /// Budget.
    pub max_chars: u32,
}

/// The capture group's operations, nested in [`crate::Operation::Capture`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum CaptureOp {
    /// Network capture on or off.
    NetworkCapture(SetNetworkCapture),
    /// Read captured requests.
    GetRequests(GetRequests),
    /// A response's body.
    GetResponseBody(GetResponseBody),
    /// Console capture on or off.
    ConsoleCapture(SetConsoleCapture),
    /// Read captured console messages.
    GetConsole(GetConsole),
    /// Add, clear and list network mocks, and read what they saw.
    MockNetwork(crate::mocks::MockNetwork),
}

crate::tagged::deserialize_tagged!(CaptureOp, "kind", {
    "networkCapture" => SetNetworkCapture => Self::NetworkCapture,
    "getRequests" => GetRequests => Self::GetRequests,
    "getResponseBody" => GetResponseBody => Self::GetResponseBody,
    "consoleCapture" => SetConsoleCapture => Self::ConsoleCapture,
    "getConsole" => GetConsole => Self::GetConsole,
    "mockNetwork" => crate::mocks::MockNetwork => Self::MockNetwork,
});

impl CaptureOp {
    /// Every capture operation runs beside the tab's queue: it only reads or switches what
    /// tabwire keeps, and must not wait behind a long action.
    pub fn bypasses_queue(&self) -> bool {
        true
    }

    /// Whether it can change what the page gets: adding mocks does.
    pub fn is_mutation(&self) -> bool {
        matches!(self, CaptureOp::MockNetwork(mocks) if mocks.adds())
    }
}

/// Capture switched on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaptureState {
    /// The tab.
    pub tab_id: TabId,
    /// Whether it is on now.
    pub capturing: bool,
    /// Records kept.
    pub kept: u32,
}

/// One request of a network capture. Strings are capped; a field the request has not reached
/// yet (its response, its end) is absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkRecord {
    /// Increases for the life of the tab's capture: tells records apart across reads.
    pub seq: u64,
    /// Chrome's request ID, for `get_response_body`.
    pub request_id: String,
    /// The HTTP method.
    pub method: String,
    /// The URL.
    pub url: String,
    /// Chrome's resource type (`document`, `script`, `fetch`, …).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// The response's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u32>,
    /// The response's status text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_text: Option<String>,
    /// The response's MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Bytes received (encoded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Milliseconds from start to end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    /// Why it failed (or was blocked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// It was cancelled.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub canceled: bool,
}

/// One console message, uncaught exception or browser log entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConsoleRecord {
    /// Increases for the life of the tab's capture.
    pub seq: u64,
    /// `log`, `info`, `warning`, `error` or `debug`.
    pub level: String,
    /// The message (capped).
    pub text: String,
    /// Where it was logged from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Its 1-based line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// An uncaught exception or unhandled rejection.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exception: bool,
    /// For a browser log entry: its source (`network`, `security`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// A response body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResponseBody {
    /// The tab.
    pub tab_id: TabId,
    /// The request.
    pub request_id: String,
    /// The body's MIME type.
    pub mime_type: String,
    /// The body as text, cut to the budget; empty when omitted.
    pub body: String,
    /// The body's full length in characters (bytes for binary).
    pub total_chars: u32,
    /// True when cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Why the body is cut or left out (binary, too large, gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What a [`CaptureOp`] produced, nested in [`crate::OpResult::Capture`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum CaptureResult {
    /// Capture switched on or off.
    Capture(CaptureState),
    /// Captured requests.
    Requests(Records<NetworkRecord>),
    /// Captured console messages.
    Console(Records<ConsoleRecord>),
    /// A response body.
    Body(ResponseBody),
    /// A tab's mocks.
    Mocks(crate::mocks::MockState),
}

crate::tagged::deserialize_tagged!(CaptureResult, "kind", {
    "capture" => CaptureState => Self::Capture,
    "requests" => Records<NetworkRecord> => Self::Requests,
    "console" => Records<ConsoleRecord> => Self::Console,
    "body" => ResponseBody => Self::Body,
    "mocks" => crate::mocks::MockState => Self::Mocks,
});
