//! Tabs, navigation history, screenshots, network and console capture, storage (SPEC §6).
//!
//! Everything here is bounded on the extension side: records are kept up to a cap per tab, and
//! every read returns a page within a character budget, saying what it left out.

use serde::{Deserialize, Serialize};

use crate::TabId;
use crate::ops::{Observation, TabInfo, Target};

/// Most records kept per tab and kind (network, console); older ones are evicted.
pub const MAX_RECORDS: usize = 500;

/// Which way through the tab's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HistoryDirection {
    /// `history.back()`.
    Back,
    /// `history.forward()`.
    Forward,
}

/// Image formats of a screenshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ImageFormat {
    /// Lossless; the largest.
    Png,
    /// Lossy, `quality` 0–100.
    Jpeg,
    /// Lossy, `quality` 0–100; the smallest at equal quality.
    #[default]
    Webp,
}

/// A screenshot request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScreenshotRequest {
    /// The image format.
    pub format: ImageFormat,
    /// For jpeg and webp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<u8>,
    /// The image is scaled down to at most this many pixels wide.
    pub max_width: u32,
    /// The whole page rather than the viewport.
    #[serde(default)]
    pub full_page: bool,
    /// Only this element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// Take an observation with it (this budget), and fail if the document changed between the
    /// two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_snapshot: Option<SnapshotBudget>,
}

/// The budget of the observation taken with a screenshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SnapshotBudget {
    /// Nodes.
    pub max_nodes: u32,
    /// Characters.
    pub max_chars: u32,
}

/// A screenshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Screenshot {
    /// The tab captured.
    pub tab_id: TabId,
    /// The image format.
    pub format: ImageFormat,
    /// The image, base64.
    pub data: String,
    /// Its width in pixels.
    pub width: u32,
    /// Its height in pixels.
    pub height: u32,
    /// The captured area's width in CSS pixels before scaling.
    pub css_width: u32,
    /// The captured area's height in CSS pixels before scaling.
    pub css_height: u32,
    /// The document captured.
    pub document_id: String,
    /// The observation taken with it, when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation>,
}

/// A read of captured records (network or console).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordsRequest {
    /// At most this many records.
    pub limit: u32,
    /// Skip this many of the matching records (oldest first).
    #[serde(default)]
    pub offset: u32,
    /// Only records whose URL (network) or text (console) contains this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// Console only: only these levels (`log`, `info`, `warning`, `error`, `debug`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<String>,
    /// The page's character budget.
    pub max_chars: u32,
    /// Forget the records returned.
    #[serde(default)]
    pub clear_after: bool,
}

/// A page of captured records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Records {
    /// The tab.
    pub tab_id: TabId,
    /// Whether capture is on.
    pub capturing: bool,
    /// The records of this page, oldest first, each a JSON object.
    pub records: Vec<serde_json::Value>,
    /// How many records match the filter in all.
    pub total: u32,
    /// The index of the first record returned.
    pub offset: u32,
    /// The `offset` of the next page, when there are more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u32>,
    /// Records dropped because the buffer was full since capture started.
    pub evicted: u32,
    /// True when the character budget cut the page short.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
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

/// Cookies or storage entries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageEntries {
    /// The tab.
    pub tab_id: TabId,
    /// The origin or URL read.
    pub origin: String,
    /// The entries, each a JSON object.
    pub entries: Vec<serde_json::Value>,
    /// How many match in all.
    pub total: u32,
    /// True when the budget cut the list or values short.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// Tab and capture operations, nested in [`crate::Operation::Tab`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum TabOp {
    /// The active tab of the last-focused window.
    GetActive,
    /// Select the request's tab in its window and focus that window.
    Switch,
    /// Close the request's tab.
    Close,
    /// Open a tab.
    Create {
        /// Its URL (the hub checked it); a blank tab when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        /// Select it.
        active: bool,
        /// Open it in a new window that does not take the focus: shown (so it can be
        /// captured) without changing what the user sees.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        new_window: bool,
    },
    /// Go back or forward in the request's tab and wait for the load.
    History {
        /// Which way.
        direction: HistoryDirection,
    },
    /// Reload the request's tab and wait for the load.
    Reload {
        /// Bypass the cache.
        bypass_cache: bool,
    },
    /// The text selected in the tab (any frame), bounded.
    SelectedText {
        /// Budget.
        max_chars: u32,
    },
    /// Take a screenshot.
    Screenshot(ScreenshotRequest),
    /// Start (clearing what was kept) or stop network capture.
    NetworkCapture {
        /// Start or stop.
        on: bool,
    },
    /// Read captured requests.
    GetRequests(RecordsRequest),
    /// Fetch one captured response's body.
    GetResponseBody {
        /// The request's ID from `GetRequests`.
        request_id: String,
        /// Budget.
        max_chars: u32,
    },
    /// Start (clearing what was kept) or stop console capture.
    ConsoleCapture {
        /// Start or stop.
        on: bool,
    },
    /// Read captured console messages and uncaught exceptions.
    GetConsole(RecordsRequest),
    /// Cookies that would be sent to `url` (default: the tab's URL).
    Cookies {
        /// The URL.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        /// Only cookies with this name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Budget.
        max_chars: u32,
    },
    /// The tab's `localStorage`.
    LocalStorage {
        /// Only keys containing this.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filter: Option<String>,
        /// Budget.
        max_chars: u32,
    },
}

impl TabOp {
    /// Whether the operation changes a tab.
    pub fn is_mutation(&self) -> bool {
        matches!(
            self,
            TabOp::Switch
                | TabOp::Close
                | TabOp::Create { .. }
                | TabOp::History { .. }
                | TabOp::Reload { .. }
        )
    }

    /// Whether it runs beside the tab's queue: it is about the browser rather than a page, or
    /// only reads what tabwire keeps (capture buffers), or must not wait behind a long action
    /// (screenshots of other tabs are independent; one of this tab waits like any read).
    pub fn bypasses_queue(&self) -> bool {
        matches!(
            self,
            TabOp::GetActive
                | TabOp::Create { .. }
                | TabOp::NetworkCapture { .. }
                | TabOp::GetRequests(_)
                | TabOp::ConsoleCapture { .. }
                | TabOp::GetConsole(_)
                | TabOp::GetResponseBody { .. }
                | TabOp::Cookies { .. }
        )
    }
}

/// What a [`TabOp`] produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum TabResult {
    /// A tab (get, switch, create, history, reload).
    Tab {
        /// The tab afterwards.
        tab: TabInfo,
    },
    /// The tab was closed.
    Closed {
        /// The tab.
        tab_id: TabId,
    },
    /// Selected text.
    SelectedText {
        /// The tab.
        tab_id: TabId,
        /// The text, cut to the budget.
        text: String,
        /// Its full length.
        total_chars: u32,
    },
    /// A screenshot.
    Screenshot(Screenshot),
    /// Capture switched on or off.
    Capture {
        /// The tab.
        tab_id: TabId,
        /// Whether it is on now.
        capturing: bool,
        /// Records kept.
        kept: u32,
    },
    /// Captured records.
    Records(Records),
    /// A response body.
    Body(ResponseBody),
    /// Cookies or storage entries.
    Storage(StorageEntries),
}
