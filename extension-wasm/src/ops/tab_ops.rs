//! `Operation::Tab`: getting, switching, closing and opening tabs, going back and forward,
//! reloading, the selected text and local storage. Screenshots are in `screenshot`; network
//! and console capture and cookies in `capture`.
//!
//! Switching tabs is the one operation that takes the user's focus, because it is asked for:
//! nothing else here (screenshots included) changes which tab is shown.

use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::{
    ErrorCode, HistoryDirection, OpError, OpResult, StorageEntries, TabId, TabOp, TabResult,
    WaitUntil,
};

use super::act::waits::{self, LOAD_START_MS};
use super::content::slice_chars;
use super::tabs::{get_tab, resolve_tab, select_in_window, tab_error, tab_info};
use super::{capture, frames, screenshot};
use crate::activity;
use crate::chrome::{self, ChromeTab};
use crate::page::{self, MissingFrame, PageCommand};
use crate::refs::TOP_FRAME;
use crate::requests::Checkpoint;

/// Runs one tab operation. `tab_id` is the request's tab (resolved already for queued ones).
pub async fn run(
    tab_id: Option<TabId>,
    op: TabOp,
    checkpoint: &Checkpoint,
) -> Result<OpResult, OpError> {
    let result = match op {
        TabOp::GetActive => TabResult::Tab {
            tab: info(resolve_tab(None).await?.id).await?,
        },
        TabOp::Create {
            url,
            active,
            new_window,
        } => create(url, active, new_window).await?,
        op => {
            let tab = resolve_tab(tab_id).await?.id;
            match op {
                TabOp::Switch => switch(tab, checkpoint).await?,
                TabOp::Close => {
                    checkpoint.check()?;
                    chrome::call(chrome::tabs_remove(tab))
                        .await
                        .map_err(|f| tab_error(tab, &f.message))?;
                    TabResult::Closed { tab_id: tab }
                }
                TabOp::History { direction } => history(tab, direction, checkpoint).await?,
                TabOp::Reload { bypass_cache } => reload(tab, bypass_cache, checkpoint).await?,
                TabOp::SelectedText { max_chars } => selected_text(tab, max_chars).await?,
                TabOp::LocalStorage { filter, max_chars } => {
                    local_storage(tab, filter, max_chars).await?
                }
                TabOp::Screenshot(request) => screenshot::take(tab, request, checkpoint).await?,
                other => return capture::run(tab, other).await,
            }
        }
    };
    Ok(OpResult::Tab { result })
}

/// The tab as `list_tabs` shows it.
async fn info(tab: TabId) -> Result<tabwire_protocol::TabInfo, OpError> {
    tab_info(&get_tab(tab).await?).ok_or_else(|| {
        OpError::new(
            ErrorCode::TabNotFound,
            format!("Tab {tab} is not an ordinary browser tab."),
        )
    })
}

fn js(value: serde_json::Value) -> Result<wasm_bindgen::JsValue, OpError> {
    chrome::to_js(&value).map_err(|e| OpError::new(ErrorCode::Internal, e.to_string()))
}

/// Selects the tab in its window and focuses the window.
async fn switch(tab: TabId, checkpoint: &Checkpoint) -> Result<TabResult, OpError> {
    let chrome_tab = get_tab(tab).await?;
    checkpoint.check()?;
    select_in_window(tab).await?;
    if let Some(window) = chrome_tab.window_id.and_then(|w| u32::try_from(w).ok()) {
        // Focusing can fail (no window manager in headless); the tab is selected either way.
        let _ = chrome::call(chrome::windows_update(
            window,
            &js(json!({"focused": true}))?,
        ))
        .await;
    }
    Ok(TabResult::Tab {
        tab: info(tab).await?,
    })
}

/// Opens a tab (it loads on its own; `list_tabs` shows its status), in the current window or
/// in a new one that does not take the focus.
async fn create(url: Option<String>, active: bool, new_window: bool) -> Result<TabResult, OpError> {
    if new_window {
        let mut properties = json!({ "focused": false });
        if let Some(url) = &url {
            properties["url"] = json!(url);
        }
        let window = chrome::call(chrome::windows_create(&js(properties)?))
            .await
            .map_err(|f| {
                OpError::new(
                    ErrorCode::NavigationFailed,
                    format!("Chrome would not open the window: {f}"),
                )
            })?;
        #[derive(Deserialize)]
        struct Window {
            #[serde(default)]
            tabs: Vec<ChromeTab>,
        }
        let window: Window = chrome::from_js(window)
            .map_err(|e| OpError::new(ErrorCode::Internal, format!("reading the window: {e}")))?;
        let id = window
            .tabs
            .first()
            .and_then(ChromeTab::tab_id)
            .ok_or_else(|| OpError::new(ErrorCode::Internal, "the new window has no tab"))?;
        return Ok(TabResult::Tab {
            tab: info(id).await?,
        });
    }
    let mut properties = json!({ "active": active });
    if let Some(url) = &url {
        properties["url"] = json!(url);
    }
    let created = chrome::call(chrome::tabs_create(&js(properties)?))
        .await
        .map_err(|f| {
            OpError::new(
                ErrorCode::NavigationFailed,
                format!("Chrome would not open the tab: {f}"),
            )
        })?;
    let tab: ChromeTab = chrome::from_js(created)
        .map_err(|e| OpError::new(ErrorCode::Internal, format!("reading the new tab: {e}")))?;
    let id = tab
        .tab_id()
        .ok_or_else(|| OpError::new(ErrorCode::Internal, "the new tab has no ID"))?;
    Ok(TabResult::Tab {
        tab: info(id).await?,
    })
}

/// Goes back or forward and waits for the page.
///
/// Through the debugger's own history (`Page.navigateToHistoryEntry`): `chrome.tabs.goBack`
/// skips entries Chrome marks as added without a user gesture — every page an agent opened —
/// and reports "no earlier page" (measured). Tabs the debugger may not attach to (chrome://
/// pages) use `chrome.tabs` anyway.
async fn history(
    tab: TabId,
    direction: HistoryDirection,
    checkpoint: &Checkpoint,
) -> Result<TabResult, OpError> {
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
    if crate::debugger::ensure_attached(tab).await.is_ok() {
        let history: History = crate::debugger::send(tab, "Page.getNavigationHistory", &json!({}))
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
        crate::debugger::send(
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
async fn reload(
    tab: TabId,
    bypass_cache: bool,
    checkpoint: &Checkpoint,
) -> Result<TabResult, OpError> {
    let mark = activity::load_mark(tab);
    checkpoint.check()?;
    chrome::call(chrome::tabs_reload(
        tab,
        &js(json!({"bypassCache": bypass_cache}))?,
    ))
    .await
    .map_err(|f| tab_error(tab, &f.message))?;
    settle(tab, mark, checkpoint).await
}

/// Waits for the load a history step or reload started (if it started one), within the
/// deadline, and reports the tab.
async fn settle(tab: TabId, mark: u64, checkpoint: &Checkpoint) -> Result<TabResult, OpError> {
    if activity::wait_load_start(tab, mark, LOAD_START_MS).await {
        waits::loaded(tab, WaitUntil::Complete, checkpoint).await?;
    }
    Ok(TabResult::Tab {
        tab: info(tab).await?,
    })
}

#[derive(Deserialize)]
struct Selected {
    text: String,
}

/// The selection of the frame that has one (the top document first).
async fn selected_text(tab: TabId, max_chars: u32) -> Result<TabResult, OpError> {
    let mut ids: Vec<u32> = frames::all_frames(tab)
        .await?
        .iter()
        .filter_map(|f| u32::try_from(f.frame_id).ok())
        .collect();
    if ids.is_empty() {
        ids.push(TOP_FRAME);
    }
    let mut answers = page::run_all::<Selected>(tab, &ids, &PageCommand::SelectedText).await?;
    answers.sort_by_key(|(frame, _)| *frame);
    let text = answers
        .into_iter()
        .map(|(_, s)| s.text)
        .find(|t| !t.is_empty())
        .unwrap_or_default();
    let slice = slice_chars(&text, 0, max_chars);
    Ok(TabResult::SelectedText {
        tab_id: tab,
        text: slice.text,
        total_chars: slice.total,
    })
}

#[derive(Deserialize)]
struct Storage {
    origin: String,
    entries: Vec<serde_json::Value>,
    total: u32,
    truncated: bool,
}

/// The top document's `localStorage`.
async fn local_storage(
    tab: TabId,
    filter: Option<String>,
    max_chars: u32,
) -> Result<TabResult, OpError> {
    let reply = page::run::<Storage>(
        tab,
        TOP_FRAME,
        &PageCommand::LocalStorage { filter, max_chars },
        MissingFrame::Requested,
    )
    .await?;
    let storage = reply.value;
    Ok(TabResult::Storage(StorageEntries {
        tab_id: tab,
        origin: storage.origin,
        entries: storage.entries,
        total: storage.total,
        truncated: storage.truncated,
    }))
}
