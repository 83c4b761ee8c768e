//! Going back and forward in a tab's history, and reloading it, each waiting for the load it
//! starts.

use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::{ErrorCode, HistoryDirection, OpError, TabId, TabInfo, WaitUntil};

use crate::checkpoint::Checkpoint;
use crate::chrome;
use crate::chrome_tabs::{info, tab_error};
use crate::ops::load;
use crate::{activity, debugger};

/// Goes back or forward and waits for the page.
///
/// Through the debugger's own history (`Page.navigateToHistoryEntry`): `chrome.tabs.goBack`
/// skips entries Chrome marks as added without a user gesture — every page an agent opened —
/// and reports "no earlier page" (measured). Tabs the debugger may not attach to (chrome://
/// pages) use `chrome.tabs` anyway.
pub async fn step(
    tab: TabId,
    direction: HistoryDirection,
    checkpoint: &Checkpoint,
) -> Result<TabInfo, OpError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Entry {
        id: i64,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct History {
        current_index: i64,
        entries: Vec<Entry>,
    }
    let way = match direction {
        HistoryDirection::Back => "earlier",
        HistoryDirection::Forward => "later",
    };
    let none = || {
        OpError::new(
            ErrorCode::NavigationFailed,
            format!("Tab {tab} has no {way} page in its history."),
        )
    };
    let mark = activity::load_mark(tab);
    if debugger::ensure_attached(tab).await.is_ok() {
        let history: History = debugger::send(tab, "Page.getNavigationHistory", &json!({}))
            .await
            .and_then(|v| {
                chrome::from_js(v).map_err(|e| {
                    OpError::new(ErrorCode::Internal, format!("reading the history: {e}"))
                })
            })?;
        let step = match direction {
            HistoryDirection::Back => -1,
            HistoryDirection::Forward => 1,
        };
        let entry = usize::try_from(history.current_index + step)
            .ok()
            .and_then(|i| history.entries.get(i))
            .ok_or_else(none)?;
        checkpoint.check()?;
        debugger::send(
            tab,
            "Page.navigateToHistoryEntry",
            &json!({ "entryId": entry.id }),
        )
        .await
        .map_err(OpError::action_may_have_occurred)?;
        return settle(tab, mark, checkpoint).await;
    }
    checkpoint.check()?;
    let step = match direction {
        HistoryDirection::Back => chrome::tabs_go_back(tab),
        HistoryDirection::Forward => chrome::tabs_go_forward(tab),
    };
    chrome::call(step).await.map_err(|f| {
        if f.message.to_ascii_lowercase().contains("cannot find") {
            none()
        } else {
            tab_error(tab, &f.message)
        }
    })?;
    settle(tab, mark, checkpoint).await
}

/// Reloads and waits for the page.
pub async fn reload(
    tab: TabId,
    bypass_cache: bool,
    checkpoint: &Checkpoint,
) -> Result<TabInfo, OpError> {
    let mark = activity::load_mark(tab);
    checkpoint.check()?;
    chrome::call(chrome::tabs_reload(
        tab,
        &chrome::to_js(&json!({"bypassCache": bypass_cache}))?,
    ))
    .await
    .map_err(|f| tab_error(tab, &f.message))?;
    settle(tab, mark, checkpoint).await
}

/// Waits for the load a history step or reload started (if it started one), within the
/// deadline, and reports the tab.
async fn settle(tab: TabId, mark: u64, checkpoint: &Checkpoint) -> Result<TabInfo, OpError> {
    load::settle(tab, mark, WaitUntil::Complete, checkpoint).await?;
    info(tab).await
}
