//! Loading a URL in a tab and waiting for a tab's top-frame loads: what navigation (`tabs`) and
//! the actions that wait for the navigation they start (`act`) share.
//!
//! Loads are seen through `activity`, which counts every top-frame load a tab starts and the
//! state each reached; a caller notes the count (`activity::load_mark`) before it acts and
//! compares afterwards.

use serde_json::json;
use tabwire_protocol::{ErrorCode, OpError, TabId, WaitUntil};

use crate::activity;
use crate::checkpoint::Checkpoint;
use crate::chrome;
use crate::chrome_tabs::tab_error;
use crate::timer::{Either, select, sleep};

/// How long after `chrome.tabs.update` (or a history step, a reload) a navigation must have
/// started: Chrome reports it at once; a step within one document never starts one.
pub const LOAD_START_MS: f64 = 1000.0;

/// Points the tab at `url` (`chrome.tabs.update`), passing the checkpoint just before.
pub async fn load_url(tab: TabId, url: &str, checkpoint: &Checkpoint) -> Result<(), OpError> {
    let properties = chrome::to_js(&json!({ "url": url })).map_err(OpError::from)?;
    checkpoint.check()?;
    chrome::call(chrome::tabs_update(tab, &properties))
        .await
        .map(|_| ())
        .map_err(|failure| refused(tab, url, &failure.message))
}

fn refused(tab: TabId, url: &str, message: &str) -> OpError {
    if message.to_ascii_lowercase().contains("no tab with id") {
        return tab_error(tab, message);
    }
    OpError::new(
        ErrorCode::NavigationFailed,
        format!("Chrome refused to load {url}: {message}"),
    )
}

/// Waits for the tab's latest load to reach `until`, stopping a little before the deadline
/// with `NAVIGATION_TIMEOUT` (the input that started the load has been sent).
pub async fn loaded(tab: TabId, until: WaitUntil, checkpoint: &Checkpoint) -> Result<(), OpError> {
    let budget = checkpoint.budget_ms().max(0.0);
    match select(activity::wait_load(tab, until), sleep(budget)).await {
        Either::Left(result) => result,
        Either::Right(()) => Err(OpError::new(
            ErrorCode::NavigationTimeout,
            format!(
                "The page did not reach {} within the deadline; it may still be loading. Take \
                 a snapshot to see where the tab is before retrying.",
                match until {
                    WaitUntil::Domcontentloaded => "DOMContentLoaded",
                    WaitUntil::Complete => "the end of its load",
                }
            ),
        )
        .action_may_have_occurred()),
    }
}

/// Waits for a load started since `mark` (within [`LOAD_START_MS`]) to reach `until`; a step
/// that started none (a fragment change, history within one document) is done at once.
pub async fn settle(
    tab: TabId,
    mark: u64,
    until: WaitUntil,
    checkpoint: &Checkpoint,
) -> Result<(), OpError> {
    if activity::wait_load_start(tab, mark, LOAD_START_MS).await {
        loaded(tab, until, checkpoint).await?;
    }
    Ok(())
}
