//! Tabs and navigation (SPEC §3, §6): listing, finding, switching, opening and closing tabs;
//! loading a URL, going back and forward, reloading; and [`check_navigable_url`], the one rule
//! for which URLs a tab may be pointed at.

use std::fmt;

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
    /// Its URL (both sides check it with [`check_navigable_url`]); a blank tab when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Select it.
    pub active: bool,
    /// Open it in a new window that does not take the focus: shown (so it can be captured)
    /// without changing what the user sees.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub new_window: bool,
}

/// Give up the caller's lease on the request's tab (issue 14 §3): it leaves its tab group,
/// and other sessions may change it again. Refused when another session holds it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseTab {}

/// A [`ReleaseTab`] done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TabReleased {
    /// The tab.
    pub tab_id: TabId,
    /// Whether the caller held it; false: nobody did, and nothing changed.
    pub was_leased: bool,
}

/// Load `url` in the tab and wait until it has finished loading.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Navigate {
    /// An absolute URL; both sides check it with [`check_navigable_url`].
    pub url: String,
}

/// The URL schemes a tab may be pointed at: web pages and local files (`http://`, `https://`,
/// `file://`, each followed by something) and the blank page.
const NAVIGABLE_SCHEMES: [&str; 3] = ["http://", "https://", "file://"];

/// Checks that `url` is one an agent has reason to open: an absolute `http://`, `https://` or
/// `file://` URL, or `about:blank` (any case), with no control characters.
///
/// Everything else is refused: `javascript:` and `data:` (they run or show the caller's own
/// content with the page's or a blank origin), browser and extension pages (`chrome:`,
/// `chrome-extension:`, `devtools:`, `view-source:`), `blob:`, `filesystem:` and relative or
/// scheme-less text. Control characters are refused because Chrome strips some of them (tabs,
/// newlines) before parsing, so what was checked would not be what was loaded.
///
/// The hub applies it to every URL argument before anything reaches a browser, and the
/// extension applies it again before it points a tab at a URL, so a hub that is not the one it
/// trusts (or a buggy one) cannot make it open anything else. Both call this function, so the
/// two sides cannot disagree. Length limits and mode rules (such as refusing `file://` to hosted
/// agents) are the caller's.
pub fn check_navigable_url(url: &str) -> Result<(), NotNavigable> {
    let lower = url.to_ascii_lowercase();
    let allowed = NAVIGABLE_SCHEMES
        .iter()
        .any(|scheme| lower.len() > scheme.len() && lower.starts_with(scheme))
        || lower == "about:blank";
    if allowed && !url.chars().any(char::is_control) {
        Ok(())
    } else {
        Err(NotNavigable {
            shown: url.chars().take(NOT_NAVIGABLE_SHOWN).collect(),
        })
    }
}

/// How many characters of a refused URL its error repeats.
const NOT_NAVIGABLE_SHOWN: usize = 100;

/// A URL [`check_navigable_url`] refused. Its message names what is accepted and repeats the
/// start of the URL, quoted as JSON so that control characters are visible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotNavigable {
    /// The first characters of the refused URL.
    shown: String,
}

impl fmt::Display for NotNavigable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "url must be an absolute http://, https:// or file:// URL, or about:blank; got {}",
            serde_json::Value::String(self.shown.clone())
        )
    }
}

impl std::error::Error for NotNavigable {}

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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// Give up a lease.
    Release(ReleaseTab),
    /// Hand the tab to a person and wait for their answer (`request_human`).
    Handoff(Handoff),
    /// Start or stop recording the person's input (`record_actions`).
    Record(crate::recording::RecordActions),
}

crate::tagged::deserialize_tagged!(TabsOp, "kind", {
    "listTabs" => ListTabs => Self::ListTabs,
    "getActive" => GetActiveTab => Self::GetActive,
    "switch" => SwitchTab => Self::Switch,
    "close" => CloseTab => Self::Close,
    "create" => CreateTab => Self::Create,
    "navigate" => Navigate => Self::Navigate,
    "history" => HistoryStep => Self::History,
    "reload" => ReloadTab => Self::Reload,
    "release" => ReleaseTab => Self::Release,
    "handoff" => Handoff => Self::Handoff,
    "record" => crate::recording::RecordActions => Self::Record,
});

/// Hand the request's tab to the person at the browser for something only a person should do,
/// and wait, within the request's deadline, until they answer *Done* or *Decline*.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Handoff {
    /// Why, in the agent's words, shown to the person.
    pub reason: String,
}

/// At most this many characters of a handoff's reason.
pub const HANDOFF_REASON_MAX: usize = 500;

/// What the person chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HandoffChoice {
    /// They did what was asked.
    Done,
    /// They will not.
    Declined,
}

/// The person's answer to a [`Handoff`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HandedBack {
    /// The tab.
    pub tab_id: TabId,
    /// Their answer.
    pub choice: HandoffChoice,
    /// What they did meanwhile, as replayable steps (none where the policy does not let agents
    /// read what a person types).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<crate::recording::RecordedStep>,
    /// Their input left out of `steps` (see [`crate::recording::ActionRecording::omitted`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl TabsOp {
    /// Whether the operation changes a tab (releasing a lease changes no page).
    pub fn is_mutation(&self) -> bool {
        // A handoff's changes are the person's, not the agent's; a recording changes no page.
        !matches!(
            self,
            TabsOp::ListTabs(_)
                | TabsOp::GetActive(_)
                | TabsOp::Release(_)
                | TabsOp::Handoff(_)
                | TabsOp::Record(_)
        )
    }

    /// Whether it runs beside the tab's queue: it is about the browser rather than one page
    /// (listing tabs, the active tab, a new tab).
    pub fn bypasses_queue(&self) -> bool {
        // A handoff waits for a person, beside the queue: the agent's other calls on the tab
        // are refused meanwhile (`HUMAN_IN_CONTROL`) instead of waiting behind it.
        // A recording's start waits for the person's consent beside it too.
        matches!(
            self,
            TabsOp::ListTabs(_)
                | TabsOp::GetActive(_)
                | TabsOp::Create(_)
                | TabsOp::Handoff(_)
                | TabsOp::Record(_)
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
    /// The tab shows an origin the policy denies: its URL and title are left empty.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocked: bool,
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
    /// The download the address turned into: the tab then stays on the page it showed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download: Option<crate::files::DownloadInfo>,
}

/// A tab was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClosedTab {
    /// The tab.
    pub tab_id: TabId,
}

/// What a [`TabsOp`] produced, nested in [`crate::OpResult::Tabs`].
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// A person's answer to a handoff.
    HandedBack(HandedBack),
    /// A lease given up (or none held).
    Released(TabReleased),
    /// A recording started, or stopped with its steps.
    Recording(crate::recording::ActionRecording),
}

crate::tagged::deserialize_tagged!(TabsResult, "kind", {
    "tabs" => TabList => Self::Tabs,
    "tab" => TabInfo => Self::Tab,
    "closed" => ClosedTab => Self::Closed,
    "navigated" => Navigated => Self::Navigated,
    "handedBack" => HandedBack => Self::HandedBack,
    "released" => TabReleased => Self::Released,
    "recording" => crate::recording::ActionRecording => Self::Recording,
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn web_pages_files_and_the_blank_page_may_be_opened() {
        for ok in [
            "http://127.0.0.1:8080/login.html",
            "https://example.com/a?b#c",
            "HTTPS://EXAMPLE.COM",
            "file:///tmp/x.html",
            "about:blank",
            "About:Blank",
        ] {
            assert_eq!(check_navigable_url(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn scripts_inline_documents_browser_pages_and_bare_text_are_refused() {
        for bad in [
            "javascript:alert(1)",
            "JavaScript:alert(document.cookie)",
            "data:text/html,<script>alert(1)</script>",
            "chrome://settings",
            "chrome-extension://hjpjigandemmiglamagndeppmlncdhag/popup.html",
            "chrome-untrusted://terminal/",
            "devtools://devtools/bundled/inspector.html",
            "view-source:https://example.com",
            "blob:https://example.com/0b5e",
            "filesystem:https://example.com/temporary/x",
            "about:settings",
            "about:blank#x",
            " https://example.com",
            "\tjavascript:alert(1)",
            "java\nscript:alert(1)",
            "example.com",
            "//example.com",
            "http://",
            "file://",
            "",
            "http://a/\nb",
            "https://a/\u{7f}",
        ] {
            assert!(check_navigable_url(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_refusal_names_what_is_accepted_and_shows_the_url_escaped_and_cut() {
        let refused = check_navigable_url("javascript:a\nb").unwrap_err();
        assert_eq!(
            refused.to_string(),
            "url must be an absolute http://, https:// or file:// URL, or about:blank; got \
             \"javascript:a\\nb\""
        );
        let long = format!("data:{}", "x".repeat(500));
        let message = check_navigable_url(&long).unwrap_err().to_string();
        assert!(
            message.ends_with(&format!("\"data:{}\"", "x".repeat(95))),
            "{message}"
        );
    }
}
