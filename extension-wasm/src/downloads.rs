//! Downloads (issue 26, docs/files.md): which tab, and so which agent session, started each of
//! Chrome's downloads.
//!
//! `chrome.downloads` says nothing of tabs. The tab's debugger does: `Page.downloadWillBegin`
//! arrives just before `downloads.onCreated`, with the same URL; the two are matched when they
//! come within [`MATCH_WINDOW_MS`] of each other. A download announced in a tab belongs to the
//! session whose action or navigation runs there, or ended there at most [`LATE_MS`] before
//! ([`Acting`]); the action claims what started during it ([`started_since`]). Any other
//! download (the person's own, even in a tab an agent leases; another extension's) belongs to
//! no session and is never listed. A session sees only its own, at most
//! [`MAX_DOWNLOADS_LISTED`], newest first.

use std::cell::RefCell;
use std::rc::Rc;

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

/// How far apart a tab's announcement and Chrome's item with its URL may come (either first)
/// to be one download.
const MATCH_WINDOW_MS: f64 = 3_000.0;
/// How long after a session's action or navigation in a tab ended a download announced there
/// is still its own (a slow server answers a click's request late).
const LATE_MS: f64 = 10_000.0;
/// How many downloads are remembered over all sessions.
const REMEMBERED: usize = 200;
/// How much of a download's address is shown (a `data:` URL holds the whole file).
const SHOWN_URL_CHARS: usize = 512;

/// A download a tab's debugger announced, not yet matched with Chrome's item.
struct Announced {
    tab: TabId,
    url: String,
    name: String,
    at: f64,
    /// The session acting in the tab then, if any.
    session: Option<String>,
    /// The page the tab showed then, filled in by a lookup started at once.
    page_url: Rc<RefCell<String>>,
}

/// A session's action or navigation in a tab: running (`until` infinite) or ended then.
struct Acting {
    tab: TabId,
    session: String,
    /// Which of the session's runs in the tab this is (several may overlap).
    serial: u64,
    until: f64,
}

/// A download of a tab, and whose it is.
struct Tracked {
    info: DownloadInfo,
    /// The whole address (`info.url` is cut to [`SHOWN_URL_CHARS`]).
    url: String,
    /// The session it belongs to; `None` when no session acted in the tab then.
    session: Option<String>,
    /// The page that started it, which the policy judges a read of its bytes by; empty while
    /// (or when) it is not known.
    page_url: Rc<RefCell<String>>,
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
    acting: Vec<Acting>,
    /// Counts downloads tracked.
    serial: u64,
    /// Counts sessions' runs in tabs.
    runs: u64,
}

/// A download found for its session: what is shown of it, its whole address and the page that
/// started it (empty when not known).
pub struct Found {
    pub info: DownloadInfo,
    pub url: String,
    pub page_url: String,
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
    let page_url = announce(tab, event.url, event.suggested_filename, now_ms());
    // The page that starts a download stays in the tab (the download commits no document).
    wasm_bindgen_futures::spawn_local(async move {
        if let Ok(url) = crate::chrome_tabs::get_tab(tab).await.map(|t| t.url) {
            *page_url.borrow_mut() = url.unwrap_or_default();
        }
    });
}

/// Notes a download `tab` announced at `now`, for the session acting there then, and matches
/// the items waiting for it. Returns the place for the page's URL, filled in by the caller.
fn announce(tab: TabId, url: String, name: String, now: f64) -> Rc<RefCell<String>> {
    let page_url = Rc::new(RefCell::new(String::new()));
    let waiting = with(|state| {
        state.announced.retain(|a| now - a.at < MATCH_WINDOW_MS);
        let session = acting_session(&state.acting, tab, now);
        state.announced.push(Announced {
            tab,
            url,
            name,
            at: now,
            session,
            page_url: page_url.clone(),
        });
        // Chrome's item may have come first.
        state.unmatched.retain(|(_, at)| now - at < MATCH_WINDOW_MS);
        std::mem::take(&mut state.unmatched)
    });
    for (item, at) in waiting {
        created(item, at);
    }
    page_url
}

/// The session a download announced in `tab` at `now` belongs to: the one whose run there is
/// in progress, else the one whose run ended there within [`LATE_MS`]; nobody's when two
/// sessions could claim it.
fn acting_session(acting: &[Acting], tab: TabId, now: f64) -> Option<String> {
    let in_tab = || acting.iter().filter(|a| a.tab == tab && a.until >= now);
    let running = in_tab().any(|a| a.until.is_infinite());
    let mut sessions = in_tab()
        .filter(|a| !running || a.until.is_infinite())
        .map(|a| a.session.as_str());
    let first = sessions.next()?;
    sessions.all(|s| s == first).then(|| first.to_owned())
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

/// Chrome created a download (at `at`): tracked when a tab announced it close enough in time.
fn created(item: Item, at: f64) {
    let url = if item.final_url.is_empty() {
        item.url.clone()
    } else {
        item.final_url.clone()
    };
    with(|state| {
        let Some(found) = state.announced.iter().position(|a| {
            (a.url == url || a.url == item.url) && (a.at - at).abs() <= MATCH_WINDOW_MS
        }) else {
            // No tab announced it (yet): kept a moment for an announcement to come.
            state
                .unmatched
                .retain(|(_, came)| at - came < MATCH_WINDOW_MS);
            if state.unmatched.len() < REMEMBERED {
                state.unmatched.push((item, at));
            }
            return;
        };
        let announced = state.announced.remove(found);
        state.serial += 1;
        let name = if item.filename.is_empty() {
            announced.name.clone()
        } else {
            base_name(&item.filename).to_owned()
        };
        let info = DownloadInfo {
            id: item.id,
            name,
            url: shown_url(&url),
            tab_id: announced.tab,
            mime_type: item.mime,
            size: (item.total_bytes > 0.0).then_some(item.total_bytes as u64),
            state: state_of(&item.state, &item.danger),
            error: item.error,
            path: (!item.filename.is_empty()).then_some(item.filename),
        };
        state.tracked.insert(
            0,
            Tracked {
                info,
                url,
                session: announced.session,
                page_url: announced.page_url,
                serial: state.serial,
            },
        );
        state.tracked.truncate(REMEMBERED);
    });
}

/// A download's address as it is shown: a `data:` URL without its data (the file itself, which
/// only a judged read of its bytes gives), any other cut to [`SHOWN_URL_CHARS`].
fn shown_url(url: &str) -> String {
    let cut = |text: &str| match text.char_indices().nth(SHOWN_URL_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    };
    match url.split_once(',') {
        Some((header, _)) if url.starts_with("data:") => format!("{},…", cut(header)),
        _ => cut(url),
    }
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
            created(item, now_ms());
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

/// `session` acts in `tab` until the guard is dropped, and [`LATE_MS`] after: the downloads
/// announced there meanwhile are its own.
pub fn acting(tab: TabId, session: &str) -> ActingGuard {
    let serial = acting_from(tab, session, now_ms());
    ActingGuard { serial }
}

fn acting_from(tab: TabId, session: &str, now: f64) -> u64 {
    with(|state| {
        state.acting.retain(|a| a.until >= now);
        state.runs += 1;
        state.acting.push(Acting {
            tab,
            session: session.to_owned(),
            serial: state.runs,
            until: f64::INFINITY,
        });
        state.runs
    })
}

/// Ends run `serial` at `now`.
fn acted(serial: u64, now: f64) {
    with(|state| {
        if let Some(acting) = state.acting.iter_mut().find(|a| a.serial == serial) {
            acting.until = now + LATE_MS;
        }
    });
}

/// See [`acting`].
pub struct ActingGuard {
    serial: u64,
}

impl Drop for ActingGuard {
    fn drop(&mut self) {
        acted(self.serial, now_ms());
    }
}

/// `session`'s downloads `tab` started since `mark` (oldest first), without their paths
/// (`get_downloads` gives a path where the hub may show it).
pub fn started_since(tab: TabId, mark: u64, session: &str) -> Vec<DownloadInfo> {
    with(|state| {
        state
            .tracked
            .iter()
            .filter(|t| {
                t.serial > mark && t.info.tab_id == tab && t.session.as_deref() == Some(session)
            })
            .map(|t| DownloadInfo {
                path: None,
                ..t.info.clone()
            })
            .rev()
            .collect()
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

/// `session`'s download `id`.
pub fn find(session: &str, id: u32) -> Result<Found, OpError> {
    with(|state| {
        state
            .tracked
            .iter()
            .find(|t| t.info.id == id && t.session.as_deref() == Some(session))
            .map(|t| Found {
                info: t.info.clone(),
                url: t.url.clone(),
                page_url: t.page_url.borrow().clone(),
            })
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

/// The bytes of `found` (base64) and how they were read: a `data:` URL's own, a page's `blob:`
/// while it lives, or an http(s) URL fetched again with the profile's cookies (only when Chrome
/// knows the size, which the answer must match, and never through a redirect); at most `max`.
/// The caller has judged the reads by the policy.
pub async fn bytes(found: &Found, max: u64) -> Result<(String, &'static str), OpError> {
    let (info, url) = (&found.info, found.url.as_str());
    let how = if url.starts_with("data:") {
        "data"
    } else if url.starts_with("blob:") {
        "blob"
    } else if url.starts_with("http://") || url.starts_with("https://") {
        if info.size.is_none() {
            return Err(unavailable(
                info.id,
                "Chrome does not know its size, so bytes fetched again could not be checked \
                 against it",
            ));
        }
        "refetched"
    } else {
        return Err(unavailable(info.id, "its address cannot be read again"));
    };
    if let Some(size) = info.size.filter(|size| *size > max) {
        return Err(unavailable(
            info.id,
            &format!("it holds {size} bytes, more than the {max} returned at once"),
        ));
    }
    let fetched = chrome::call(fetch_bytes(url, max as f64))
        .await
        .map_err(|failure| unavailable(info.id, &failure.message))?;
    let data = fetched.as_string().unwrap_or_default();
    // A URL fetched again may answer other bytes (a form's POST, an expired link).
    let decoded = data.len() / 4 * 3 - data.bytes().rev().take_while(|&b| b == b'=').count();
    if let Some(size) = info.size
        && size != decoded as u64
    {
        return Err(unavailable(
            info.id,
            &format!("fetched again, it answered {decoded} bytes instead of {size}"),
        ));
    }
    Ok((data, how))
}

/// The error for bytes that cannot be read. It never names the file's place on disk (a hosted
/// hub must not show it); `get_downloads` without `bytes` gives it where the hub may.
fn unavailable(id: u32, why: &str) -> OpError {
    OpError::new(
        ErrorCode::InvalidArgument,
        format!(
            "The bytes of download {id} are not available: {why} (a form's download cannot be \
             fetched again, nor an object the page revoked). On a local hub, get_downloads \
             without bytes gives the file's path."
        ),
    )
}

/// The URL a read of `url`'s bytes is judged on: a `blob:` URL's own origin's address, an
/// http(s) URL itself; `None` for `data:` (its bytes come from the page that made it).
pub fn judged_address(url: &str) -> Option<&str> {
    match url.strip_prefix("blob:") {
        Some(inner) => Some(inner),
        None if url.starts_with("data:") => None,
        None => Some(url),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: u32, url: &str) -> Item {
        Item {
            id,
            url: url.to_owned(),
            state: "in_progress".to_owned(),
            ..Item::default()
        }
    }

    fn listed(session: &str) -> Vec<u32> {
        list(session).iter().map(|d| d.id).collect()
    }

    fn reset() {
        with(|state| *state = State::default());
    }

    #[test]
    fn a_download_is_the_acting_sessions_and_no_one_elses() {
        reset();
        let run = acting_from(7, "agent", 1_000.0);
        announce(
            7,
            "https://bank.example/statement.csv".into(),
            "s.csv".into(),
            1_100.0,
        );
        created(item(1, "https://bank.example/statement.csv"), 1_102.0);
        assert_eq!(listed("agent"), [1]);
        assert!(listed("other").is_empty());
        // Its action ended: a slow server's answer in the next seconds is still its own …
        acted(run, 2_000.0);
        announce(
            7,
            "https://bank.example/late.csv".into(),
            String::new(),
            8_000.0,
        );
        created(item(2, "https://bank.example/late.csv"), 8_001.0);
        assert_eq!(listed("agent"), [2, 1]);
        // … but what the person downloads in that tab later is nobody's, lease or not.
        announce(
            7,
            "https://bank.example/mine.csv".into(),
            String::new(),
            20_000.0,
        );
        created(item(3, "https://bank.example/mine.csv"), 20_001.0);
        assert_eq!(listed("agent"), [2, 1]);
        // Nor is another tab's download, while the agent acts in its own.
        let _run = acting_from(7, "agent", 30_000.0);
        announce(
            8,
            "https://bank.example/x.csv".into(),
            String::new(),
            30_010.0,
        );
        created(item(4, "https://bank.example/x.csv"), 30_011.0);
        assert_eq!(listed("agent"), [2, 1]);
    }

    #[test]
    fn an_item_matches_only_an_announcement_close_in_time() {
        reset();
        acting_from(7, "agent", 0.0);
        // The item came first, and keeps the time it came.
        created(item(1, "https://a.example/f.bin"), 1_000.0);
        // An announcement of the same address much later is another download.
        announce(7, "https://a.example/f.bin".into(), String::new(), 9_000.0);
        assert!(listed("agent").is_empty());
        // Either order, close together, matches.
        created(item(2, "https://a.example/g.bin"), 10_000.0);
        announce(7, "https://a.example/g.bin".into(), String::new(), 10_005.0);
        assert_eq!(listed("agent"), [2]);
        announce(7, "https://a.example/h.bin".into(), String::new(), 11_000.0);
        created(item(3, "https://a.example/h.bin"), 11_002.0);
        assert_eq!(listed("agent"), [3, 2]);
    }

    #[test]
    fn an_address_is_shown_without_its_data_and_kept_whole() {
        reset();
        acting_from(7, "agent", 0.0);
        let url = format!("data:text/plain;base64,{}", "QUJD".repeat(1000));
        announce(7, url.clone(), "abc.txt".into(), 10.0);
        created(item(1, &url), 11.0);
        let found = find("agent", 1).unwrap();
        assert_eq!(found.url, url);
        assert_eq!(found.info.url, "data:text/plain;base64,…");
        let long = format!("https://a.example/{}", "x".repeat(1000));
        assert_eq!(shown_url(&long).chars().count(), SHOWN_URL_CHARS + 1);
        assert!(shown_url(&long).ends_with('…'));
    }

    #[test]
    fn a_download_two_sessions_could_claim_is_nobodys() {
        reset();
        // Two sessions' runs ended in the tab a moment ago: neither gets it.
        let first = acting_from(7, "agent", 0.0);
        let second = acting_from(7, "other", 10.0);
        acted(first, 100.0);
        acted(second, 200.0);
        announce(7, "https://a.example/f.csv".into(), String::new(), 1_000.0);
        created(item(1, "https://a.example/f.csv"), 1_001.0);
        assert!(listed("agent").is_empty() && listed("other").is_empty());
        // A run in progress wins over one that ended.
        let _running = acting_from(7, "other", 2_000.0);
        announce(7, "https://a.example/g.csv".into(), String::new(), 2_100.0);
        created(item(2, "https://a.example/g.csv"), 2_101.0);
        assert_eq!(listed("other"), [2]);
        assert!(listed("agent").is_empty());
    }

    #[test]
    fn bytes_are_judged_on_the_address_they_come_from() {
        assert_eq!(
            judged_address("blob:https://evil.example/1f0c"),
            Some("https://evil.example/1f0c")
        );
        assert_eq!(
            judged_address("https://a.example/f"),
            Some("https://a.example/f")
        );
        assert_eq!(judged_address("data:text/plain,hi"), None);
    }
}
