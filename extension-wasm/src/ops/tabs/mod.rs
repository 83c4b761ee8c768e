//! The tabs group (SPEC §3, §6): listing, finding, switching, opening and closing tabs,
//! loading a URL ([`navigate`]), going back and forward and reloading ([`history`]).
//!
//! Switching tabs is the one operation that takes the user's focus, because it is asked for:
//! nothing else (screenshots included) changes which tab is shown. A new tab is selected only
//! when its `create_tab` says `active: true`, and a new window never takes the focus.

mod history;
mod navigate;

use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::{
    ClosedTab, CreateTab, ErrorCode, OpError, OpResult, TabId, TabInfo, TabList, TabsOp,
};

use crate::checkpoint::Checkpoint;
use crate::chrome::{self, ChromeTab};
use crate::chrome_tabs::{
    get_tab, info, query, resolve_tab, select_in_window, tab_error, tab_info,
};
use crate::ops::load::check_navigable;

/// Runs one operation of the group for `viewer` (whose a download a navigation turns into is).
/// `tab_id` is the request's tab (resolved already for queued ones).
pub async fn run(
    tab_id: Option<TabId>,
    op: TabsOp,
    viewer: &str,
    checkpoint: &Checkpoint,
) -> Result<OpResult, OpError> {
    Ok(match op {
        TabsOp::ListTabs(_) => list_tabs().await?.into(),
        TabsOp::GetActive(_) => info(resolve_tab(None).await?.id).await?.into(),
        TabsOp::Create(request) => create(request, checkpoint).await?.into(),
        TabsOp::Navigate(request) => navigate::navigate(tab_id, &request.url, viewer, checkpoint)
            .await?
            .into(),
        TabsOp::Handoff(_) | TabsOp::Record(_) => {
            return Err(OpError::new(
                ErrorCode::Internal,
                "handoffs and recordings are served where the request's caller is known \
                 (requests.rs)",
            ));
        }
        op => {
            let tab = resolve_tab(tab_id).await?.id;
            match op {
                TabsOp::Switch(_) => switch(tab, checkpoint).await?.into(),
                TabsOp::Close(_) => {
                    checkpoint.check()?;
                    chrome::call(chrome::tabs_remove(tab))
                        .await
                        .map_err(|f| tab_error(tab, &f.message))?;
                    ClosedTab { tab_id: tab }.into()
                }
                TabsOp::History(step) => {
                    history::step(tab, step.direction, checkpoint).await?.into()
                }
                TabsOp::Reload(reload) => history::reload(tab, reload.bypass_cache, checkpoint)
                    .await?
                    .into(),
                // Leases are the request's business: `requests` answers a release with the
                // caller in hand, before any operation runs.
                TabsOp::Release(_) => {
                    return Err(OpError::new(
                        ErrorCode::Internal,
                        "release_tab reached the tab operations instead of the leases",
                    ));
                }
                TabsOp::ListTabs(_)
                | TabsOp::GetActive(_)
                | TabsOp::Create(_)
                | TabsOp::Navigate(_)
                | TabsOp::Handoff(_)
                | TabsOp::Record(_) => unreachable!("handled above"),
            }
        }
    })
}

/// Every tab Chrome reports.
async fn list_tabs() -> Result<TabList, OpError> {
    let tabs = query(&json!({})).await?;
    Ok(TabList {
        tabs: tabs.iter().filter_map(tab_info).collect(),
    })
}

/// Selects the tab in its window and focuses the window.
async fn switch(tab: TabId, checkpoint: &Checkpoint) -> Result<TabInfo, OpError> {
    let chrome_tab = get_tab(tab).await?;
    checkpoint.check()?;
    select_in_window(tab).await?;
    if let Some(window) = chrome_tab.window_id.and_then(|w| u32::try_from(w).ok()) {
        // Focusing can fail (no window manager in headless); the tab is selected either way.
        let _ = chrome::call(chrome::windows_update(
            window,
            &chrome::to_js(&json!({"focused": true}))?,
        ))
        .await;
    }
    info(tab).await
}

/// Opens a tab (it loads on its own; `list_tabs` shows its status), in the current window or
/// in a new one that does not take the focus. Its URL passes the same check as a navigation's.
async fn create(request: CreateTab, checkpoint: &Checkpoint) -> Result<TabInfo, OpError> {
    let CreateTab {
        url,
        active,
        new_window,
    } = request;
    if let Some(url) = &url {
        check_navigable(url)?;
    }
    checkpoint.check()?;
    if new_window {
        let mut properties = json!({ "focused": false });
        if let Some(url) = &url {
            properties["url"] = json!(url);
        }
        let window = chrome::call(chrome::windows_create(&chrome::to_js(&properties)?))
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
        return info(id).await;
    }
    let mut properties = json!({ "active": active });
    if let Some(url) = &url {
        properties["url"] = json!(url);
    }
    let created = chrome::call(chrome::tabs_create(&chrome::to_js(&properties)?))
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
    info(id).await
}
