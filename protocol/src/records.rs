//! Pages of kept records (network and console capture, what network mocks saw): the read an
//! agent asks for and the page it gets, within a record limit and a character budget.

use serde::{Deserialize, Serialize};

use crate::TabId;

/// A read of kept records (network, console, what mocks saw).
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

/// A page of kept records, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Records<R> {
    /// The tab.
    pub tab_id: TabId,
    /// Whether capture is on.
    pub capturing: bool,
    /// The records of this page, oldest first.
    pub records: Vec<R>,
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
