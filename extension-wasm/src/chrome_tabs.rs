//! Chrome's tabs as every operation needs them: the tab a request is about, one tab read,
//! every tab, a tab as the protocol describes it, and Chrome's tab errors as error codes.

use serde_json::json;
use tabwire_protocol::{ErrorCode, OpError, TabId, TabInfo};

use crate::chrome::{self, ChromeTab};
use crate::text::cap;

/// A tab whose ID is known to be valid.
pub struct ResolvedTab {
    /// Its ID.
    pub id: TabId,
    /// Its URL when resolved (for rendering same-origin links).
    pub url: String,
}

/// The tab a request names, or the active tab of the last-focused window when it names none.
pub async fn resolve_tab(tab_id: Option<TabId>) -> Result<ResolvedTab, OpError> {
    let tab = match tab_id {
        Some(id) => get_tab(id).await?,
        None => active_tab().await?,
    };
    let id = tab.tab_id().ok_or_else(|| {
        OpError::new(
            ErrorCode::TabNotFound,
            "That tab is not an ordinary browser tab. Call list_tabs to see the open tabs.",
        )
    })?;
    Ok(ResolvedTab {
        id,
        url: tab.url.unwrap_or_default(),
    })
}

/// `chrome.tabs.get`, with a missing tab reported as `TAB_NOT_FOUND`.
pub async fn get_tab(id: TabId) -> Result<ChromeTab, OpError> {
    let value = chrome::call(chrome::tabs_get(id))
        .await
        .map_err(|failure| tab_error(id, &failure.message))?;
    chrome::from_js(value).map_err(|e| internal_read("chrome.tabs.get", &e))
}

async fn active_tab() -> Result<ChromeTab, OpError> {
    let focused = query(&json!({"active": true, "lastFocusedWindow": true})).await?;
    if let Some(tab) = focused.into_iter().find(|t| t.tab_id().is_some()) {
        return Ok(tab);
    }
    // Headless Chromium (and a browser with no focused window) may report no last-focused
    // window; any window's active tab is the next best guess.
    let any = query(&json!({"active": true})).await?;
    any.into_iter()
        .find(|t| t.tab_id().is_some())
        .ok_or_else(|| {
            OpError::new(
                ErrorCode::NoActiveTab,
                "The browser has no active tab. Open a tab, or pass a tabId from list_tabs.",
            )
        })
}

/// The tabs `chrome.tabs.query` finds for `filter` (`{}`: every tab).
pub async fn query(filter: &serde_json::Value) -> Result<Vec<ChromeTab>, OpError> {
    let filter = chrome::to_js(filter).map_err(|e| internal_read("a tab query", &e))?;
    let value = chrome::call(chrome::tabs_query(&filter))
        .await
        .map_err(|e| {
            OpError::new(
                ErrorCode::Internal,
                format!("chrome.tabs.query failed: {e}"),
            )
        })?;
    chrome::from_js(value).map_err(|e| internal_read("chrome.tabs.query", &e))
}

/// The longest tab URL reported, in characters.
const TAB_URL_MAX: usize = 2000;
/// The longest tab title reported, in characters.
const TAB_TITLE_MAX: usize = 300;

/// A `TabInfo` for an ordinary tab.
pub fn tab_info(tab: &ChromeTab) -> Option<TabInfo> {
    let url = tab
        .url
        .clone()
        .or_else(|| tab.pending_url.clone())
        .unwrap_or_default();
    // A denied origin's tab is listed, so an agent knows it is there, and nothing more.
    let blocked = !crate::policy::shows(&url);
    Some(TabInfo {
        tab_id: tab.tab_id()?,
        window_id: tab
            .window_id
            .and_then(|w| u32::try_from(w).ok())
            .unwrap_or_default(),
        active: tab.active,
        // A page sets its own URL and title: both are capped like every page-made string.
        url: if blocked {
            String::new()
        } else {
            cap(&url, TAB_URL_MAX)
        },
        title: if blocked {
            String::new()
        } else {
            cap(&tab.title.clone().unwrap_or_default(), TAB_TITLE_MAX)
        },
        status: tab.status.clone().unwrap_or_else(|| "complete".to_owned()),
        blocked,
    })
}

/// Makes `id` the selected tab of its window (the window's focus is left alone).
pub async fn select_in_window(id: TabId) -> Result<(), OpError> {
    let properties =
        chrome::to_js(&json!({"active": true})).map_err(|e| internal_read("the tab update", &e))?;
    chrome::call(chrome::tabs_update(id, &properties))
        .await
        .map(|_| ())
        .map_err(|failure| tab_error(id, &failure.message))
}

/// Maps a `chrome.tabs` failure about tab `id`.
pub fn tab_error(id: TabId, message: &str) -> OpError {
    if message.to_ascii_lowercase().contains("no tab with id") {
        OpError::new(
            ErrorCode::TabNotFound,
            format!(
                "No tab with ID {id} exists in this browser. Call list_tabs to see the open tabs."
            ),
        )
    } else {
        OpError::new(
            ErrorCode::TabUnresponsive,
            format!("Chrome could not act on tab {id}: {message} Retry in a moment."),
        )
    }
}

fn internal_read(what: &str, error: &chrome::JsFailure) -> OpError {
    OpError::new(
        ErrorCode::Internal,
        format!("could not read the result of {what}: {error}"),
    )
}

/// Tab `tab` as the protocol describes it (as `list_tabs` shows it).
pub async fn info(tab: TabId) -> Result<TabInfo, OpError> {
    tab_info(&get_tab(tab).await?).ok_or_else(|| {
        OpError::new(
            ErrorCode::TabNotFound,
            format!("Tab {tab} is not an ordinary browser tab."),
        )
    })
}
