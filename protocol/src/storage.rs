//! Storage (SPEC §6): the cookies a URL would be sent, and a page's `localStorage`, as bounded
//! lists of entries.

use serde::{Deserialize, Serialize};

use crate::TabId;

/// The cookies that would be sent to `url` (default: the tab's URL).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetCookies {
    /// The URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Only cookies with this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Budget.
    pub max_chars: u32,
}

/// The tab's `localStorage`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetLocalStorage {
    /// Only keys containing this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// Budget.
    pub max_chars: u32,
}

/// The storage group's operations, nested in [`crate::Operation::Storage`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum StorageOp {
    /// Cookies.
    Cookies(GetCookies),
    /// Local storage.
    LocalStorage(GetLocalStorage),
}

crate::tagged::deserialize_tagged!(StorageOp, "kind", {
    "cookies" => GetCookies => Self::Cookies,
    "localStorage" => GetLocalStorage => Self::LocalStorage,
});

impl StorageOp {
    /// Cookies come from the browser's cookie store and run beside the tab's queue; local
    /// storage is read in the page and waits its turn.
    pub fn bypasses_queue(&self) -> bool {
        matches!(self, StorageOp::Cookies(_))
    }
}

/// Cookies or storage entries, within a budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageEntries<E> {
    /// The tab.
    pub tab_id: TabId,
    /// The origin or URL read.
    pub origin: String,
    /// The entries.
    pub entries: Vec<E>,
    /// How many match in all.
    pub total: u32,
    /// True when the budget cut the list or values short.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// One cookie. Strings are capped (`valueTruncated` says when the value was).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cookie {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: String,
    /// The value was cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub value_truncated: bool,
    /// Its domain.
    pub domain: String,
    /// Its path.
    pub path: String,
    /// When it expires, in seconds since the epoch; absent for a session cookie.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<u64>,
    /// A session cookie.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub session: bool,
    /// Hidden from the page's scripts.
    pub http_only: bool,
    /// Sent over HTTPS only.
    pub secure: bool,
    /// Its `SameSite` policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_site: Option<String>,
}

/// One `localStorage` entry. Strings are capped (`valueTruncated` says when the value was).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageEntry {
    /// Its key.
    pub key: String,
    /// Its value.
    pub value: String,
    /// The value was cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub value_truncated: bool,
}

/// What a [`StorageOp`] produced, nested in [`crate::OpResult::Storage`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum StorageResult {
    /// Cookies.
    Cookies(StorageEntries<Cookie>),
    /// Local storage entries.
    LocalStorage(StorageEntries<StorageEntry>),
}

crate::tagged::deserialize_tagged!(StorageResult, "kind", {
    "cookies" => StorageEntries<Cookie> => Self::Cookies,
    "localStorage" => StorageEntries<StorageEntry> => Self::LocalStorage,
});
