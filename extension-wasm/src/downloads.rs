//! Downloads (issue 26, docs/files.md): which tab, and so which agent session, started each of
//! Chrome's downloads.
//!
//! `chrome.downloads` says nothing of tabs. The tab's debugger does: `Page.downloadWillBegin`
//! arrives just before `downloads.onCreated`, with the same URL. A download announced in a tab
//! belongs to the session holding that tab's lease (the one whose action runs or last ran
//! there); the action itself claims what started during it ([`started_since`]). A download no
//! tab announced (the person's own, another extension's) belongs to no session and is never
//! listed. A session sees only its own, at most [`MAX_DOWNLOADS_LISTED`], newest first.

use std::cell::RefCell;

use js_sys::Promise;
use serde::Deserialize;
use tabwire_protocol::files::{DownloadInfo, DownloadState, MAX_DOWNLOADS_LISTED};
use tabwire_protocol::{ErrorCode, OpError, TabId};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

use crate::chrome;
use crate::timer::now_ms;

#[wasm_bindgen(module = "/js/downloads.js")]
extern "C" {
    #[wasm_bindgen(catch, js_name = fetchBytes)]
    fn fetch_bytes(url: &str, max: f64) -> Result<Promise, JsValue>;
}

/// How long an announcement waits for Chrome's item with its URL.
const ANNOUNCED_FOR_MS: f64 = 30_000.0;
/// How many downloads are remembered over all sessions.
const REMEMBERED: usize = 200;

/// A download a tab's debugger announced, not yet matched with Chrome's item.
struct Announced {
    tab: TabId,
    url: String,
    name: String,
    at: f64,
}

/// A download of a tab, and whose it is.
struct Tracked {
    info: DownloadInfo,
    /// The session it belongs to; `None` until an action or a lease claims it.
    session: Option<String>,
    /// The page that started it, which the policy judges a read of its bytes by.
    page_url: String,
    /// Order of arrival, for [`started_since`].
    serial: u64,
}

#[derive(Default)]
struct State {
    announced: Vec<Announced>,
    /// Chrome's items no announcement matched yet (the two may arrive in either order), with
    /// when they came.
    unmatched: Vec<(Item, f64)>,
    tracked: Vec<Tracked>,
    serial: u64,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

fn with<T>(f: impl FnOnce(&mut State) -> T) -> T {
    STATE.with(|state| f(&mut state.borrow_mut()))
}

/// The debugger's events: a tab announcing a download.
pub fn on_debugger_event(tab: TabId, method: &str, params: &JsValue) {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct WillBegin {
        url: String,
        #[serde(default)]
        suggested_filename: String,
    }
    if method != "Page.downloadWillBegin" {
        return;
    }
    let Ok(event) = chrome::from_js::<WillBegin>(params.clone()) else {
        return;
    };
    let now = now_ms();
    with(|state| {
        state.announced.retain(|a| now - a.at < ANNOUNCED_FOR_MS);
        state.announced.push(Announced {
            tab,
            url: event.url,
            name: event.suggested_filename,
            at: now,
        });
    });
    // Chrome's item may have come first.
    let waiting = with(|state| {
        state
            .unmatched
            .retain(|(_, at)| now - at < ANNOUNCED_FOR_MS);
        std::mem::take(&mut state.unmatched)
    });
    for (item, _) in waiting {
        created(item);
    }
}

/// Chrome's download item, as its events give it.
#[derive(Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase")]
struct Item {
    id: u32,
    #[serde(default)]
    url: String,
    #[serde(default)]
    final_url: String,
    #[serde(default)]
    filename: String,
    #[serde(default)]
    mime: String,
    #[serde(default)]
    total_bytes: f64,
    #[serde(default)]
    state: String,
    #[serde(default)]
    danger: String,
    #[serde(default)]
    error: Option<String>,
}

/// One field's change in `downloads.onChanged`.
#[derive(Deserialize)]
struct Delta<T> {
    current: Option<T>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Change {
    id: u32,
    filename: Option<Delta<String>>,
    state: Option<Delta<String>>,
    danger: Option<Delta<String>>,
    error: Option<Delta<String>>,
    total_bytes: Option<Delta<f64>>,
    file_size: Option<Delta<f64>>,
    mime: Option<Delta<String>>,
}

fn state_of(state: &str, danger: &str) -> DownloadState {
    match state {
        "complete" => DownloadState::Complete,
        "interrupted" => DownloadState::Interrupted,
        _ if !matches!(danger, "" | "safe" | "accepted") => DownloadState::Waiting,
        _ => DownloadState::InProgress,
    }
}

/// The file's name without its directory.
fn base_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// Chrome created a download: tracked when a tab announced it.
fn created(item: Item) {
    let url = if item.final_url.is_empty() {
        item.url.clone()
    } else {
        item.final_url.clone()
    };
    with(|state| {
        let Some(at) = state
            .announced
            .iter()
            .position(|a| a.url == url || a.url == item.url)
        else {
            // No tab announced it (yet): kept a while for an announcement to come.
            if state.unmatched.len() < REMEMBERED {
                state.unmatched.push((item, now_ms()));
            }
            return;
        };
        let announced = state.announced.remove(at);
        let session = crate::leases::holder_session(announced.tab);
        state.serial += 1;
        let name = if item.filename.is_empty() {
            announced.name.clone()
        } else {
            base_name(&item.filename).to_owned()
        };
        let info = DownloadInfo {
            id: item.id,
            name,
            url,
            tab_id: announced.tab,
            mime_type: item.mime,
            size: (item.total_bytes > 0.0).then_some(item.total_bytes as u64),
            state: state_of(&item.state, &item.danger),
            error: item.error,
            path: (!item.filename.is_empty()).then_some(item.filename),
        };
        let (tab, id) = (announced.tab, info.id);
        state.tracked.insert(
            0,
            Tracked {
                info,
                session,
                page_url: String::new(),
                serial: state.serial,
            },
        );
        state.tracked.truncate(REMEMBERED);
        // The page that started it, which a read of its bytes is judged by.
        wasm_bindgen_futures::spawn_local(async move {
            let url = crate::chrome_tabs::get_tab(tab)
                .await
                .ok()
                .and_then(|tab| tab.url)
                .unwrap_or_default();
            with(|state| {
                if let Some(tracked) = state.tracked.iter_mut().find(|t| t.info.id == id) {
                    tracked.page_url = url;
                }
            });
        });
    });
}

/// Chrome changed a download.
fn changed(change: Change) {
    with(|state| {
        let Some(tracked) = state.tracked.iter_mut().find(|t| t.info.id == change.id) else {
            return;
        };
        let info = &mut tracked.info;
        if let Some(path) = change.filename.and_then(|d| d.current)
            && !path.is_empty()
        {
            info.name = base_name(&path).to_owned();
            info.path = Some(path);
        }
        if let Some(mime) = change.mime.and_then(|d| d.current) {
            info.mime_type = mime;
        }
        for size in [change.total_bytes, change.file_size].into_iter().flatten() {
            if let Some(size) = size.current.filter(|s| *s > 0.0) {
                info.size = Some(size as u64);
            }
        }
        if let Some(error) = change.error.and_then(|d| d.current) {
            info.error = Some(error);
        }
        let danger = change.danger.and_then(|d| d.current);
        match change.state.and_then(|d| d.current) {
            Some(state) => info.state = state_of(&state, danger.as_deref().unwrap_or("")),
            None => {
                if let Some(danger) = danger
                    && info.state != DownloadState::Complete
                {
                    info.state = state_of("in_progress", &danger);
                }
            }
        }
    });
}

/// Listens to Chrome's download events for the worker's life.
pub fn install_listeners() {
    let on_created = Closure::<dyn FnMut(JsValue)>::new(|item: JsValue| {
        if let Ok(item) = chrome::from_js::<Item>(item) {
            created(item);
        }
    });
    chrome::downloads_on_created(on_created.as_ref().unchecked_ref());
    on_created.forget();
    let on_changed = Closure::<dyn FnMut(JsValue)>::new(|change: JsValue| {
        if let Ok(change) = chrome::from_js::<Change>(change) {
            changed(change);
        }
    });
    chrome::downloads_on_changed(on_changed.as_ref().unchecked_ref());
    on_changed.forget();
}

/// The newest download's serial, to compare with [`started_since`] after an action.
pub fn mark() -> u64 {
    with(|state| state.serial)
}

/// The downloads `tab` started since `mark`, claimed for `session` (the action's caller) when
/// no session had them yet; without their paths (`get_downloads` gives a path where the hub
/// may show it).
pub fn started_since(tab: TabId, mark: u64, session: &str) -> Vec<DownloadInfo> {
    with(|state| {
        state
            .tracked
            .iter_mut()
            .filter(|t| t.serial > mark && t.info.tab_id == tab)
            .map(|t| {
                t.session.get_or_insert_with(|| session.to_owned());
                DownloadInfo {
                    path: None,
                    ..t.info.clone()
                }
            })
            .rev()
            .collect()
    })
}

/// The first download `tab` started since `mark`, without its path; claimed by nobody here
/// (the lease holder took it when it was created).
pub fn first_since(tab: TabId, mark: u64) -> Option<DownloadInfo> {
    with(|state| {
        state
            .tracked
            .iter()
            .rev()
            .find(|t| t.serial > mark && t.info.tab_id == tab)
            .map(|t| DownloadInfo {
                path: None,
                ..t.info.clone()
            })
    })
}

/// Whether a download announced in `tab` since `since` (ms) is still waiting for its item.
pub fn announced_since(tab: TabId, since: f64) -> bool {
    with(|state| {
        state
            .announced
            .iter()
            .any(|a| a.tab == tab && a.at >= since)
    })
}

/// `session`'s downloads, newest first.
pub fn list(session: &str) -> Vec<DownloadInfo> {
    with(|state| {
        state
            .tracked
            .iter()
            .filter(|t| t.session.as_deref() == Some(session))
            .take(MAX_DOWNLOADS_LISTED)
            .map(|t| t.info.clone())
            .collect()
    })
}

/// `session`'s download `id` and the page that started it.
pub fn find(session: &str, id: u32) -> Result<(DownloadInfo, String), OpError> {
    with(|state| {
        state
            .tracked
            .iter()
            .find(|t| t.info.id == id && t.session.as_deref() == Some(session))
            .map(|t| (t.info.clone(), t.page_url.clone()))
    })
    .ok_or_else(|| {
        OpError::new(
            ErrorCode::InvalidArgument,
            format!(
                "No download {id} of this session: get_downloads without id lists the ones its \
                 actions started."
            ),
        )
    })
}

/// The bytes of `info` (base64) and how they were read: a `data:` URL's own, a page's `blob:`
/// while it lives, or an http(s) URL fetched again with the profile's cookies; at most `max`.
pub async fn bytes(info: &DownloadInfo, max: u64) -> Result<(String, &'static str), OpError> {
    let url = info.url.as_str();
    let how = if url.starts_with("data:") {
        "data"
    } else if url.starts_with("blob:") {
        "blob"
    } else if url.starts_with("http://") || url.starts_with("https://") {
        "refetched"
    } else {
        return Err(unavailable(info, "its address cannot be read again"));
    };
    let fetched = chrome::call(fetch_bytes(url, max as f64))
        .await
        .map_err(|failure| unavailable(info, &failure.message))?;
    let data = fetched.as_string().unwrap_or_default();
    // A URL fetched again may answer other bytes (a form's POST, an expired link).
    let decoded = data.len() / 4 * 3 - data.bytes().rev().take_while(|&b| b == b'=').count();
    if let Some(size) = info.size
        && size != decoded as u64
    {
        return Err(unavailable(
            info,
            &format!("fetched again, it answered {decoded} bytes instead of {size}"),
        ));
    }
    Ok((data, how))
}

fn unavailable(info: &DownloadInfo, why: &str) -> OpError {
    let place = match &info.path {
        Some(path) => format!(" The file is on the browser's computer at {path}."),
        None => String::new(),
    };
    OpError::new(
        ErrorCode::InvalidArgument,
        format!(
            "The bytes of download {} are not available: {why} (a form's download cannot be \
             fetched again, nor an object the page revoked).{place}",
            info.id
        ),
    )
}
