//! What each tab is doing on the network and in its top frame's loads, watched all the time
//! so waits can answer for requests and navigations that started before they were called.
//!
//! - Requests in flight, from the debugger's `Network` events, on from tabwire's first attach
//!   to the tab (its first action): `wait_for {networkIdle}` is "none in flight for the quiet time".
//!   (`chrome.webRequest` would see every request without the debugger, but with its
//!   permission headless Chromium sometimes never loads the start page: measured here, 2 runs
//!   in 3 stalled.)
//! - Top-frame loads, from `chrome.webNavigation`: a counter of loads started, and the load
//!   state each reached. An action notes the counter before it dispatches input; afterwards a
//!   higher counter means the action started a navigation, which it then waits for.
//!
//! - Tabs each tab opened (`chrome.tabs.onCreated` with an opener), so an action can say that
//!   its click opened a new tab.
//!
//! Listeners are added once at worker start. Waits poll these counters: they are cheap reads,
//! and polling keeps the listeners free of per-wait bookkeeping.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use tabwire_protocol::{ErrorCode, OpError, TabId, WaitUntil};
use wasm_bindgen::prelude::*;

use crate::chrome;
use crate::timer::{now_ms, sleep};

/// How often waits look at the counters.
const POLL_MS: f64 = 20.0;

#[derive(Default)]
struct TabActivity {
    /// `requestId`s in flight.
    in_flight: HashSet<String>,
    /// When the set last changed.
    network_changed_at: f64,
    /// Top-frame loads started.
    started: u64,
    /// The latest load that reached `DOMContentLoaded`.
    parsed: u64,
    /// The latest load that finished (completed or failed).
    finished: u64,
    /// The error of the latest failed load.
    failure: Option<(u64, String)>,
    /// Tabs this tab opened (links with a target, `window.open`), oldest first.
    opened: Vec<TabId>,
}

thread_local! {
    static TABS: RefCell<HashMap<TabId, TabActivity>> = RefCell::new(HashMap::new());
}

fn with_tab<R>(tab: TabId, f: impl FnOnce(&mut TabActivity) -> R) -> R {
    TABS.with(|tabs| f(tabs.borrow_mut().entry(tab).or_default()))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Details {
    tab_id: i64,
    #[serde(default)]
    frame_id: i64,
    #[serde(default)]
    error: String,
}

fn listener(f: impl Fn(TabId, Details) + 'static) -> Closure<dyn FnMut(JsValue)> {
    Closure::new(move |details: JsValue| {
        if let Ok(details) = chrome::from_js::<Details>(details)
            && let Ok(tab) = TabId::try_from(details.tab_id)
        {
            f(tab, details);
        }
    })
}

/// Adds the listeners. Called once at worker start.
pub fn install_listeners() {
    let top = |f: fn(&mut TabActivity, Details)| {
        listener(move |tab, d| {
            if d.frame_id == 0 {
                with_tab(tab, |a| f(a, d));
            }
        })
    };
    let load_started = top(|a, _| a.started += 1);
    let parsed = top(|a, _| a.parsed = a.started);
    let completed = top(|a, _| {
        a.parsed = a.started;
        a.finished = a.started;
    });
    let failed = top(|a, d| {
        // A failed load (an aborted one too: a download, a 204) gets no further.
        a.parsed = a.started;
        a.finished = a.started;
        a.failure = Some((a.started, d.error));
    });
    let tab_created = Closure::<dyn FnMut(JsValue)>::new(|tab: JsValue| {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Created {
            id: Option<TabId>,
            opener_tab_id: Option<TabId>,
        }
        if let Ok(Created {
            id: Some(id),
            opener_tab_id: Some(opener),
        }) = chrome::from_js::<Created>(tab)
        {
            with_tab(opener, |a| a.opened.push(id));
        }
    });
    chrome::tabs_on_created_add(tab_created.as_ref().unchecked_ref());
    tab_created.forget();
    chrome::web_navigation_on_before_navigate(load_started.as_ref().unchecked_ref());
    chrome::web_navigation_on_dom_content_loaded(parsed.as_ref().unchecked_ref());
    chrome::web_navigation_on_completed(completed.as_ref().unchecked_ref());
    chrome::web_navigation_on_error_occurred(failed.as_ref().unchecked_ref());
    // The listeners live as long as the worker.
    for closure in [load_started, parsed, completed, failed] {
        closure.forget();
    }
}

/// Counts the tab's requests from the debugger's `Network` events (a debugger subscriber).
pub fn on_debugger_event(tab: TabId, method: &str, params: &JsValue) {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct NetworkEvent {
        request_id: String,
    }
    let read = || chrome::from_js::<NetworkEvent>(params.clone()).ok();
    match method {
        "Network.requestWillBeSent" => {
            if let Some(event) = read() {
                request_started(tab, event.request_id);
            }
        }
        "Network.loadingFinished" | "Network.loadingFailed" => {
            if let Some(event) = read() {
                request_ended(tab, &event.request_id);
            }
        }
        _ => {}
    }
}

/// A request of the tab started (`Network.requestWillBeSent`).
fn request_started(tab: TabId, request_id: String) {
    with_tab(tab, |a| {
        a.in_flight.insert(request_id);
        a.network_changed_at = now_ms();
    });
}

/// A request of the tab ended (`Network.loadingFinished` / `loadingFailed`).
fn request_ended(tab: TabId, request_id: &str) {
    with_tab(tab, |a| {
        if a.in_flight.remove(request_id) {
            a.network_changed_at = now_ms();
        }
    });
}

/// Forgets the tab's requests (a debugger subscriber: the session is gone, so their ends will
/// not be reported).
pub fn forget_requests(tab: TabId) {
    with_tab(tab, |a| a.in_flight.clear());
}

/// Forgets a closed tab.
pub fn forget(tab: TabId) {
    TABS.with(|tabs| tabs.borrow_mut().remove(&tab));
}

/// The tab's load counter, to compare with after an action.
pub fn load_mark(tab: TabId) -> u64 {
    with_tab(tab, |a| a.started)
}

/// How many tabs the tab has opened so far, to compare with after an action.
pub fn opened_mark(tab: TabId) -> usize {
    with_tab(tab, |a| a.opened.len())
}

/// The tabs the tab opened after `mark`.
pub fn opened_since(tab: TabId, mark: usize) -> Vec<TabId> {
    with_tab(tab, |a| a.opened.get(mark..).unwrap_or_default().to_vec())
}

/// Whether a top-frame load started after `mark`.
pub fn load_started_since(tab: TabId, mark: u64) -> bool {
    with_tab(tab, |a| a.started > mark)
}

/// Whether a top-frame load started after `mark` and was aborted (`net::ERR_ABORTED`: a
/// navigation that turned into a download, or an answer without content).
pub fn aborted_since(tab: TabId, mark: u64) -> bool {
    with_tab(tab, |a| {
        a.started > mark
            && a.failure
                .as_ref()
                .is_some_and(|(load, error)| *load > mark && error == "net::ERR_ABORTED")
    })
}

/// Waits up to `ms` for a top-frame load to start after `mark`.
pub async fn wait_load_start(tab: TabId, mark: u64, ms: f64) -> bool {
    let until = now_ms() + ms;
    loop {
        if load_started_since(tab, mark) {
            return true;
        }
        if now_ms() >= until {
            return false;
        }
        sleep(POLL_MS).await;
    }
}

/// Waits until the latest top-frame load reaches `until`.
pub async fn wait_load(tab: TabId, until: WaitUntil) -> Result<(), OpError> {
    loop {
        let state = with_tab(tab, |a| {
            let reached = match until {
                WaitUntil::Domcontentloaded => a.parsed,
                WaitUntil::Complete => a.finished,
            };
            let failure = a
                .failure
                .as_ref()
                .filter(|(load, _)| *load == a.started)
                .map(|(_, error)| error.clone());
            (reached >= a.started, failure)
        });
        match state {
            (_, Some(error)) if error != "net::ERR_ABORTED" => {
                return Err(OpError::new(
                    ErrorCode::NavigationFailed,
                    format!("The page did not load ({error}). Check the address and the site."),
                )
                .action_may_have_occurred());
            }
            (true, _) => return Ok(()),
            _ => sleep(POLL_MS).await,
        }
    }
}

/// Requests of the tab in flight, and how long the set has been unchanged.
pub fn network(tab: TabId) -> (usize, f64) {
    with_tab(tab, |a| {
        (
            a.in_flight.len(),
            (now_ms() - a.network_changed_at).max(0.0),
        )
    })
}

/// Waits until no request of the tab has been in flight for `idle_ms`.
pub async fn wait_network_idle(tab: TabId, idle_ms: f64) {
    loop {
        let (in_flight, quiet_for) = network(tab);
        if in_flight == 0 && quiet_for >= idle_ms {
            return;
        }
        let wait = if in_flight == 0 {
            (idle_ms - quiet_for).clamp(1.0, POLL_MS * 5.0)
        } else {
            POLL_MS * 2.0
        };
        sleep(wait).await;
    }
}
