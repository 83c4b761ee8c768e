//! Navigating: load a URL in a tab and wait until it has finished loading.
//!
//! The `chrome.tabs.onUpdated` listener is added *before* `chrome.tabs.update` is called, so
//! no event can slip by, and the load counts as finished only after a `loading` → `complete`
//! transition that follows the update: a `complete` from the page that was there before does
//! not end the wait. Listeners are removed when the wait ends or is dropped at the deadline.

use serde::Deserialize;
use tabwire_protocol::{ErrorCode, Navigated, OpError, TabId};
use wasm_bindgen::prelude::Closure;
use wasm_bindgen::{JsCast, JsValue};

use crate::checkpoint::Checkpoint;
use crate::chrome::{self, ChromeTab};
use crate::chrome_tabs::resolve_tab;
use crate::mailbox::Mailbox;
use crate::ops::load::load_url;
use crate::page::{self, MissingFrame, PageCommand};
use crate::refs::TOP_FRAME;
use crate::timer::{Either, select, sleep};

/// Loads `url` in the tab and waits for it.
pub async fn navigate(
    tab_id: Option<TabId>,
    url: &str,
    viewer: &str,
    checkpoint: &Checkpoint,
) -> Result<Navigated, OpError> {
    let tab = resolve_tab(tab_id).await?.id;
    let downloads = crate::downloads::mark();
    let _acting = crate::downloads::acting(tab, viewer);
    let watch = LoadWatch::start(tab);
    load_url(tab, url, checkpoint).await?;
    // An address that turns into a download never loads: the tab stays where it was.
    let loaded = match select(watch.finished(), downloaded(tab, downloads, viewer)).await {
        Either::Left(loaded) => loaded?,
        Either::Right(download) => {
            let shown = crate::chrome_tabs::get_tab(tab).await?;
            return Ok(Navigated {
                tab_id: tab,
                url: shown.url.unwrap_or_default(),
                title: shown.title.unwrap_or_default(),
                download: Some(download),
            });
        }
    };
    drop(watch);
    // A redirect may have ended the load on an origin the policy closes: it stops there.
    crate::ops::load::check_arrival(tab).await?;
    let mut navigated = Navigated {
        tab_id: tab,
        url: loaded.url.unwrap_or_else(|| url.to_owned()),
        title: loaded.title.unwrap_or_default(),
        download: None,
    };
    // Chrome reports a failed load (unreachable host, unknown name) as a completed load of
    // its error page; only asking the page tells the two apart.
    match page::run::<PageIdentity>(tab, TOP_FRAME, &PageCommand::Probe, MissingFrame::Requested)
        .await
    {
        Ok(page) => {
            navigated.url = page.value.url;
            navigated.title = page.value.title;
        }
        Err(error)
            if error.code == ErrorCode::RestrictedPage && error.message.contains("error page") =>
        {
            return Err(OpError::new(
                ErrorCode::NavigationFailed,
                format!(
                    "{url} did not load: Chrome shows its error page (the server may be \
                     unreachable, or the address wrong). Check the URL and that the site is up."
                ),
            )
            .action_may_have_occurred());
        }
        // Pages extensions may not script (chrome://…) still loaded fine.
        Err(_) => {}
    }
    Ok(navigated)
}

/// Completes with the first download of `viewer`'s that `tab` starts after `mark` (raced with
/// the load, which has its own deadline).
async fn downloaded(tab: TabId, mark: u64, viewer: &str) -> tabwire_protocol::files::DownloadInfo {
    loop {
        if let Some(download) = crate::downloads::started_since(tab, mark, viewer)
            .into_iter()
            .next()
        {
            return download;
        }
        sleep(DOWNLOAD_POLL_MS).await;
    }
}

/// How often a navigation looks for a download it turned into.
const DOWNLOAD_POLL_MS: f64 = 20.0;

/// The probe's answer.
#[derive(Deserialize)]
struct PageIdentity {
    url: String,
    title: String,
}

/// What the tab listeners saw.
enum LoadEvent {
    Status { status: String, tab: ChromeTab },
    Removed,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ChangeInfo {
    status: Option<String>,
}

/// Tab listeners for one navigation; removed on drop.
struct LoadWatch {
    events: Mailbox<LoadEvent>,
    on_updated: Closure<dyn FnMut(JsValue, JsValue, JsValue)>,
    on_removed: Closure<dyn FnMut(JsValue, JsValue)>,
}

impl LoadWatch {
    fn start(tab: TabId) -> Self {
        let events = Mailbox::new();
        let updates = events.clone();
        let on_updated = Closure::new(move |id: JsValue, change: JsValue, info: JsValue| {
            if id.as_f64() != Some(f64::from(tab)) {
                return;
            }
            let Ok(change) = chrome::from_js::<ChangeInfo>(change) else {
                return;
            };
            if let Some(status) = change.status {
                let tab = chrome::from_js::<ChromeTab>(info).unwrap_or_default();
                updates.post(LoadEvent::Status { status, tab });
            }
        });
        let removals = events.clone();
        let on_removed = Closure::new(move |id: JsValue, _info: JsValue| {
            if id.as_f64() == Some(f64::from(tab)) {
                removals.post(LoadEvent::Removed);
            }
        });
        chrome::tabs_on_updated_add(on_updated.as_ref().unchecked_ref());
        chrome::tabs_on_removed_add(on_removed.as_ref().unchecked_ref());
        LoadWatch {
            events,
            on_updated,
            on_removed,
        }
    }

    /// Waits for `loading` then `complete`, and returns the tab as it was on completion.
    async fn finished(&self) -> Result<ChromeTab, OpError> {
        let mut saw_loading = false;
        loop {
            match self.events.recv().await {
                LoadEvent::Status { status, tab } => match status.as_str() {
                    "loading" => saw_loading = true,
                    "complete" if saw_loading => return Ok(tab),
                    _ => {}
                },
                LoadEvent::Removed => {
                    return Err(OpError::new(
                        ErrorCode::TabNotFound,
                        "The tab was closed while the page was loading.",
                    )
                    .action_may_have_occurred());
                }
            }
        }
    }
}

impl Drop for LoadWatch {
    fn drop(&mut self) {
        chrome::tabs_on_updated_remove(self.on_updated.as_ref().unchecked_ref());
        chrome::tabs_on_removed_remove(self.on_removed.as_ref().unchecked_ref());
    }
}
