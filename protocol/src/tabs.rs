//! Tabs and navigation (SPEC §3, §6): listing, finding, switching, opening and closing tabs;
//! loading a URL, going back and forward, reloading.

use serde::{Deserialize, Serialize};

use crate::TabId;

/// List the browser's tabs, in every window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListTabs {}

/// The active tab of the last-focused window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GetActiveTab {}

/// Select the request's tab in its window and focus that window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchTab {}

/// Close the request's tab.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloseTab {}

/// Open a tab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateTab {
    /// Its URL (the hub checked it); a blank tab when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Select it.
    pub active: bool,
    /// Open it in a new window that does not take the focus: shown (so it can be captured)
    /// without changing what the user sees.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub new_window: bool,
}

/// Load `url` in the tab and wait until it has finished loading.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Navigate {
    /// An absolute URL; the hub has already checked its scheme.
    pub url: String,
}

/// Which way through the tab's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HistoryDirection {
    /// `history.back()`.
    Back,
    /// `history.forward()`.
    Forward,
}

/// Go back or forward in the request's tab and wait for the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HistoryStep {
    /// Which way.
    pub direction: HistoryDirection,
}

/// Reload the request's tab and wait for the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReloadTab {
    /// Bypass the cache.
    pub bypass_cache: bool,
}

/// The tabs group's operations, nested in [`crate::Operation::Tabs`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum TabsOp {
    /// List every tab.
    ListTabs(ListTabs),
    /// The active tab.
    GetActive(GetActiveTab),
    /// Select a tab.
    Switch(SwitchTab),
    /// Close a tab.
    Close(CloseTab),
    /// Open a tab.
    Create(CreateTab),
    /// Load a URL.
    Navigate(Navigate),
    /// Back or forward.
    History(HistoryStep),
    /// Reload.
    Reload(ReloadTab),
}

impl TabsOp {
    /// Whether the operation changes a tab.
    pub fn is_mutation(&self) -> bool {
        !matches!(self, TabsOp::ListTabs(_) | TabsOp::GetActive(_))
    }

    /// Whether it runs beside the tab's queue: it is about the browser rather than one page
    /// (listing tabs, the active tab, a new tab).
    pub fn bypasses_queue(&self) -> bool {
        matches!(
            self,
            TabsOp::ListTabs(_) | TabsOp::GetActive(_) | TabsOp::Create(_)
        )
    }
}

/// One tab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TabInfo {
    /// Chrome's tab ID.
    pub tab_id: TabId,
    /// The window holding the tab.
    pub window_id: u32,
    /// Whether it is the selected tab of its window.
    pub active: bool,
    /// The tab's URL (empty when Chrome does not disclose it).
    pub url: String,
    /// The tab's title.
    pub title: String,
    /// Chrome's loading status: `"loading"`, `"complete"` or `"unloaded"` (a discarded tab).
    pub status: String,
}

/// Every tab of every window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TabList {
    /// The tabs.
    pub tabs: Vec<TabInfo>,
}

/// The tab after a navigation finished.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Navigated {
    /// The tab navigated.
    pub tab_id: TabId,
    /// The URL it ended on (after redirects).
    pub url: String,
    /// The loaded page's title.
    pub title: String,
}

/// A tab was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClosedTab {
    /// The tab.
    pub tab_id: TabId,
}

/// What a [`TabsOp`] produced, nested in [`crate::OpResult::Tabs`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum TabsResult {
    /// Every tab.
    Tabs(TabList),
    /// One tab afterwards (active, switched to, created, after a history step or reload).
    Tab(TabInfo),
    /// A closed tab.
    Closed(ClosedTab),
    /// A finished navigation.
    Navigated(Navigated),
}
