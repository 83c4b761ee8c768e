//! Network mocks (issue 28): a tab's requests answered with stubbed responses through the CDP
//! Fetch domain on tabwire's debugger session, and the record of what they saw.
//!
//! Each mock belongs to the tab and the session (the request's viewer) that added it. While a
//! tab has mocks, Fetch pauses its XHR and fetch requests (and their CORS preflights): mocks
//! answer those only, never a document, script or style, which would run as the mocked
//! origin. Each paused request gets exactly one answer: the newest matching mock fulfils it
//! (after its delay), anything else continues to the network untouched. Whoever takes a
//! request out of `pending` answers it, so a mock cleared while its answer waits lets the
//! request through at once.
//!
//! The policy is judged where a request is answered too: a mock answers only a URL the policy
//! lets agents act on, from a frame whose whole chain up to the top they may act on, while no
//! other session holds the tab; the mocked origin of a pattern that names one is judged when
//! the mock is added.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;
use tabwire_protocol::mocks::{
    MAX_MOCKS, MAX_TAB_MOCK_BYTES, MockInfo, MockNetwork, MockOutcome, MockRecord, MockSpec,
    MockState, check_spec, pattern_matches, pattern_origin,
};
use tabwire_protocol::policy::Need;
use tabwire_protocol::{ErrorCode, OpError, TabId};
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::spawn_local;

use super::buffer::{Record, RecordBuffer};
use crate::ops::budget::Fitted;
use crate::{chrome, debugger};

/// One mock of a tab.
struct Mock {
    id: u32,
    session: String,
    spec: MockSpec,
    body_bytes: usize,
    hits: u32,
}

/// A request a mock answers after its delay.
struct Pending {
    mock: u32,
    session: String,
    seq: u64,
}

/// A tab's mocks, every session's, and what each session's mocks saw.
#[derive(Default)]
struct TabMocks {
    next_id: u32,
    /// Newest first: the first that matches answers.
    mocks: Vec<Mock>,
    records: HashMap<String, RecordBuffer<MockRecord>>,
    /// Paused requests (Fetch's IDs) waiting for their mock's answer.
    pending: HashMap<String, Pending>,
}

thread_local! {
    static MOCKS: RefCell<HashMap<TabId, TabMocks>> = RefCell::new(HashMap::new());
}

fn with_mocks<R>(tab: TabId, f: impl FnOnce(&mut TabMocks) -> R) -> R {
    MOCKS.with(|tabs| f(tabs.borrow_mut().entry(tab).or_default()))
}

/// Whether `tab` has mocks (its requests are paused, its frames followed).
pub(super) fn any(tab: TabId) -> bool {
    MOCKS.with(|tabs| tabs.borrow().get(&tab).is_some_and(TabMocks::any))
}

/// Forgets a closed tab's mocks.
pub(super) fn forget(tab: TabId) {
    MOCKS.with(|tabs| tabs.borrow_mut().remove(&tab));
}

/// A session ended: its mocks end in every tab (every session's when `None`: the hub's
/// connection ended, and its sessions with it).
pub(super) fn sessions_ended(session: Option<&str>) {
    let tabs: Vec<TabId> = MOCKS.with(|tabs| tabs.borrow().keys().copied().collect());
    for tab in tabs {
        end(tab, session);
    }
}

impl TabMocks {
    fn any(&self) -> bool {
        !self.mocks.is_empty()
    }

    fn bytes(&self) -> usize {
        self.mocks.iter().map(|m| m.body_bytes).sum()
    }

    /// Removes `session`'s mocks (all when `None`), and its records when it ended. Returns how
    /// many went and the paused requests to let through.
    fn remove(&mut self, session: Option<&str>, records_too: bool) -> (u32, Vec<String>) {
        let before = self.mocks.len();
        let mut gone = Vec::new();
        self.mocks.retain(|m| {
            let keep = session.is_some_and(|s| s != m.session);
            if !keep {
                gone.push(m.id);
            }
            keep
        });
        let released: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, p)| gone.contains(&p.mock))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &released {
            if let Some(pending) = self.pending.remove(id)
                && let Some(record) = self
                    .records
                    .get_mut(&pending.session)
                    .and_then(|r| r.get_mut(pending.seq))
            {
                record.outcome = MockOutcome::Passed;
                record.status = None;
            }
        }
        if records_too {
            match session {
                Some(session) => {
                    self.records.remove(session);
                }
                None => self.records.clear(),
            }
        }
        ((before - self.mocks.len()) as u32, released)
    }

    fn listed(&self, session: &str) -> Vec<MockInfo> {
        self.mocks
            .iter()
            .filter(|m| m.session == session)
            .map(|m| MockInfo {
                id: m.id,
                url_pattern: m.spec.url_pattern.clone(),
                method: m.spec.method.clone(),
                status: m.spec.status,
                body_bytes: m.body_bytes as u32,
                delay_ms: m.spec.delay_ms,
                hits: m.hits,
            })
            .collect()
    }

    /// The Fetch patterns: every request of the kinds mocks answer (the rest are never
    /// paused), so the ones no mock answers can be recorded as missed.
    fn patterns() -> serde_json::Value {
        let patterns: Vec<serde_json::Value> = PAUSED
            .iter()
            .map(|kind| json!({"urlPattern": "*", "resourceType": kind, "requestStage": "Request"}))
            .collect();
        json!({ "patterns": patterns })
    }
}

/// The kinds of request mocks answer: data a page fetches, and the CORS preflights before it.
/// Never a document, script, style or frame: those would run as the mocked origin.
const ANSWERED: [&str; 3] = ["XHR", "Fetch", "Preflight"];
/// The kinds Fetch is asked to pause (its filter knows no `Preflight`: a preflight is answered
/// only when Chrome pauses it as one of these).
const PAUSED: [&str; 2] = ["XHR", "Fetch"];
/// Longer URLs are not matched (their pattern matching would stall the worker): they go on.
const MAX_MATCHED_URL: usize = 16 * 1024;
/// A record keeps at most this many characters of its URL.
const MAX_RECORD_URL: usize = 2000;
/// At most this many answers wait for their delay in one tab; later requests go on.
const MAX_PENDING: usize = 500;

/// The decoded size of a base64 body, or `None` when it is not base64.
fn decoded_len(body: &str) -> Option<usize> {
    STANDARD.decode(body).ok().map(|bytes| bytes.len())
}

fn invalid(message: String) -> OpError {
    OpError::new(ErrorCode::InvalidArgument, message)
}

/// Runs a `mock_network` request of `session` on `tab`: clear, add, then the list and the page
/// of records asked for. `follow_frames` starts following the tab's frames (the policy judges
/// each answered request's frame chain); it is awaited before mocks are added.
pub(super) async fn run(
    tab: TabId,
    session: &str,
    op: MockNetwork,
    follow_frames: impl Future<Output = ()>,
) -> Result<MockState, OpError> {
    let mut sizes = Vec::with_capacity(op.add.len());
    for spec in &op.add {
        let bytes = decoded_len(&spec.body_base64)
            .ok_or_else(|| invalid(format!("the body of {} is not base64", spec.url_pattern)))?;
        check_spec(spec, bytes).map_err(invalid)?;
        // A pattern that can reach one origin only is judged on it now; a wildcard's requests
        // are judged one by one as they are answered.
        if let Some(origin) = pattern_origin(&spec.url_pattern)
            && !crate::policy::check_url(&origin, Need::Act)?
        {
            return Err(OpError::new(
                ErrorCode::OriginBlocked,
                format!(
                    "the policy asks a person before agents act on {origin}: its requests cannot \
                     be mocked (mock an origin the policy allows)"
                ),
            ));
        }
        sizes.push(bytes);
    }
    let (cleared, released) = if op.clear {
        with_mocks(tab, |t| t.remove(Some(session), false))
    } else {
        (0, Vec::new())
    };
    continue_all(tab, released);
    let added = op.add.len() as u32;
    let mut new_ids = Vec::new();
    if !op.add.is_empty() {
        debugger::ensure_attached(tab).await?;
        follow_frames.await;
        new_ids = with_mocks(tab, |t| {
            let mine = t.mocks.iter().filter(|m| m.session == session).count();
            if mine + op.add.len() > MAX_MOCKS {
                return Err(invalid(format!(
                    "a session keeps at most {MAX_MOCKS} mocks in a tab ({mine} kept); clear \
                     some first"
                )));
            }
            if t.bytes() + sizes.iter().sum::<usize>() > MAX_TAB_MOCK_BYTES {
                return Err(invalid(format!(
                    "a tab's mocks hold at most {} MiB of bodies",
                    MAX_TAB_MOCK_BYTES / (1024 * 1024)
                )));
            }
            let mut ids = Vec::new();
            for (spec, body_bytes) in op.add.into_iter().zip(sizes) {
                t.next_id += 1;
                ids.push(t.next_id);
                let mock = Mock {
                    id: t.next_id,
                    session: session.to_owned(),
                    spec,
                    body_bytes,
                    hits: 0,
                };
                t.mocks.insert(0, mock);
            }
            t.records.entry(session.to_owned()).or_default();
            Ok(ids)
        })?;
    }
    if (added > 0 || cleared > 0)
        && let Err(error) = apply(tab).await
    {
        // The mocks just added cannot answer: they are taken back.
        with_mocks(tab, |t| t.mocks.retain(|m| !new_ids.contains(&m.id)));
        return Err(error);
    }
    let attached = debugger::is_attached(tab);
    Ok(with_mocks(tab, |t| {
        let active = attached && t.any();
        let requests = op.requests.as_ref().map(|request| {
            let buffer = t.records.entry(session.to_owned()).or_default();
            let evicted = buffer.evicted();
            let page = buffer.read(request, matcher(request.filter.as_deref()));
            page.into_records(tab, active, request, evicted)
        });
        MockState {
            tab_id: tab,
            mocks: t.listed(session),
            added,
            cleared,
            active,
            requests,
        }
    }))
}

/// Whether a record matches a read's filter (its URL contains the text, ignoring ASCII case).
fn matcher(filter: Option<&str>) -> impl Fn(&MockRecord) -> bool + use<> {
    let needle = filter.unwrap_or_default().to_ascii_lowercase();
    move |record| needle.is_empty() || record.url.to_ascii_lowercase().contains(&needle)
}

/// Sends the tab's patterns to Chrome (or switches Fetch off when no mock is left). Never
/// attaches: without tabwire's session nothing is paused, and a later attach applies them.
async fn apply(tab: TabId) -> Result<(), OpError> {
    if !debugger::is_attached(tab) {
        return Ok(());
    }
    let patterns = any(tab).then(TabMocks::patterns);
    match patterns {
        Some(patterns) => debugger::send_attached(tab, "Fetch.enable", &patterns).await?,
        None => debugger::send_attached(tab, "Fetch.disable", &json!({})).await?,
    };
    Ok(())
}

/// Lets paused requests go on to the network untouched.
fn continue_all(tab: TabId, requests: Vec<String>) {
    for request in requests {
        let sent =
            debugger::issue_attached(tab, "Fetch.continueRequest", &json!({"requestId": request}));
        spawn_local(async move {
            if let Err(error) = sent.await {
                chrome::log!(
                    "tab {tab}: could not let a mocked request go on ({})",
                    error.message
                );
            }
        });
    }
}

/// Reapplies the tab's mocks after tabwire's debugger reattached (a new session pauses
/// nothing).
pub(super) async fn restore(tab: TabId) {
    if any(tab)
        && let Err(error) = apply(tab).await
    {
        chrome::log!(
            "tab {tab}: its mocks could not be applied again ({})",
            error.message
        );
    }
}

/// Tabwire's session with the tab is gone: Chrome let its paused requests go on.
pub(super) fn detached(tab: TabId) {
    MOCKS.with(|tabs| {
        if let Some(mocks) = tabs.borrow_mut().get_mut(&tab) {
            mocks.pending.clear();
        }
    });
}

/// Drops `session`'s mocks and records in `tab` (every session's when `None`), letting their
/// paused requests through.
fn end(tab: TabId, session: Option<&str>) {
    let (removed, released) = with_mocks(tab, |t| t.remove(session, true));
    continue_all(tab, released);
    if removed > 0 {
        spawn_local(async move {
            if let Err(error) = apply(tab).await {
                chrome::log!(
                    "tab {tab}: mocks could not be switched off ({})",
                    error.message
                );
            }
        });
    }
}

/// `Fetch.requestPaused`'s parameters that matter here.
struct Paused {
    request_id: String,
    request: PausedRequest,
    frame_id: Option<String>,
    resource_type: Option<String>,
}

struct PausedRequest {
    url: String,
    method: String,
    headers: Vec<(String, String)>,
}

impl Paused {
    /// Reads the event's parameters by hand: a derived reader per type costs the extension's
    /// wasm more than these few lines (extension/README.md, "Size and start").
    fn read(params: &serde_json::Value) -> Option<Paused> {
        let text = |value: &serde_json::Value| value.as_str().map(str::to_owned);
        let request = &params["request"];
        let headers = request["headers"]
            .as_object()
            .map_or_else(Vec::new, |headers| {
                headers
                    .iter()
                    .filter_map(|(name, value)| Some((name.clone(), text(value)?)))
                    .collect()
            });
        Some(Paused {
            request_id: text(&params["requestId"])?,
            request: PausedRequest {
                url: text(&request["url"])?,
                method: text(&request["method"])?,
                headers,
            },
            frame_id: text(&params["frameId"]),
            resource_type: text(&params["resourceType"]),
        })
    }
}

impl PausedRequest {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// What becomes of a paused request.
#[derive(Debug, PartialEq)]
enum Answer {
    /// Fulfilled with these parameters (the request ID added), after the delay.
    Fulfil {
        params: serde_json::Value,
        delay_ms: u32,
    },
    /// Let through.
    Continue,
}

/// Whether the policy, through `denied` (a URL's verdict), denies frame (CDP's ID) of the tab or
/// one above it; an unknown frame counts as denied. The capture group follows the frames.
pub(super) type DeniesFrame<'a> = &'a dyn Fn(&str, &dyn Fn(&str) -> bool) -> bool;

/// Answers one paused request of `tab`: always exactly once.
pub(super) fn on_paused(tab: TabId, params: &JsValue, denies_frame: DeniesFrame) {
    let params = chrome::from_js::<serde_json::Value>(params.clone()).unwrap_or_default();
    let Some(paused) = Paused::read(&params) else {
        // Unreadable: whatever it is goes on untouched.
        if let Some(id) = params["requestId"].as_str() {
            continue_all(tab, vec![id.to_owned()]);
        }
        return;
    };
    let everything = crate::policy::allows_everything();
    let hidden = !everything
        && paused
            .frame_id
            .as_deref()
            .is_some_and(|frame| denies_frame(frame, &|url| !crate::policy::shows(url)));
    let readable = !hidden && crate::policy::shows(&paused.request.url);
    let acts = |url: &str| matches!(crate::policy::check_url(url, Need::Act), Ok(true));
    // The request's URL, and every frame from the one that asked up to the top: a mock's
    // answer is data that page acts on. A request of no known frame (a worker's) is not
    // answered.
    let actable = acts(&paused.request.url)
        && paused
            .frame_id
            .as_deref()
            .is_some_and(|frame| everything || !denies_frame(frame, &|url| !acts(url)));
    let recorded = readable && !crate::approvals::person_has(tab);
    // A mock answers for its session while no other session holds the tab.
    let answers = |session: &str| crate::leases::may_change(tab, session);
    let answer = with_mocks(tab, |t| decide(t, &paused, actable, recorded, &answers));
    let id = paused.request_id;
    match answer {
        Answer::Continue => continue_all(tab, vec![id]),
        Answer::Fulfil {
            mut params,
            delay_ms,
        } => {
            params["requestId"] = json!(id);
            spawn_local(async move {
                if delay_ms > 0 {
                    crate::timer::sleep(f64::from(delay_ms)).await;
                }
                // A mock removed meanwhile took the request out and let it through.
                if with_mocks(tab, |t| t.pending.remove(&id)).is_none() {
                    return;
                }
                if let Err(error) =
                    debugger::send_attached(tab, "Fetch.fulfillRequest", &params).await
                {
                    chrome::log!("tab {tab}: a mock's answer failed ({})", error.message);
                    let fail = json!({"requestId": id, "errorReason": "Failed"});
                    let _ = debugger::send_attached(tab, "Fetch.failRequest", &fail).await;
                }
            });
        }
    }
}

/// Decides a paused request's answer and records it: pure, over the tab's mocks.
fn decide(
    mocks: &mut TabMocks,
    paused: &Paused,
    actable: bool,
    recorded: bool,
    answers: &dyn Fn(&str) -> bool,
) -> Answer {
    let request = &paused.request;
    let answered_kind = paused
        .resource_type
        .as_deref()
        .is_some_and(|kind| ANSWERED.contains(&kind));
    let by_url = |m: &&mut Mock| pattern_matches(&m.spec.url_pattern, &request.url);
    let preflight =
        request.method == "OPTIONS" && request.header("Access-Control-Request-Method").is_some();
    let method_of = |m: &Mock| {
        m.spec
            .method
            .as_deref()
            .is_none_or(|method| method == request.method)
    };
    let mut record = MockRecord {
        seq: 0,
        method: request.method.clone(),
        url: crate::text::cap(&request.url, MAX_RECORD_URL),
        resource_type: paused.resource_type.clone(),
        outcome: MockOutcome::Missed,
        mock_id: None,
        status: None,
    };
    let matchable = answered_kind && request.url.len() <= MAX_MATCHED_URL;
    let found = mocks
        .mocks
        .iter_mut()
        .filter(|_| matchable)
        .filter(by_url)
        .find(|m| method_of(m) || (preflight && m.spec.method.as_deref() != Some("OPTIONS")));
    let Some(mock) = found else {
        if recorded {
            // Every session with mocks in the tab sees what none of them answered.
            for buffer in mocks.records.values_mut() {
                buffer.push(record.clone());
            }
        }
        return Answer::Continue;
    };
    let id = mock.id;
    record.mock_id = Some(id);
    let session = mock.session.clone();
    if !actable || !answers(&session) || mocks.pending.len() >= MAX_PENDING {
        record.outcome = MockOutcome::Passed;
        if recorded && let Some(buffer) = mocks.records.get_mut(&session) {
            buffer.push(record);
        }
        return Answer::Continue;
    }
    mock.hits += 1;
    let (status, headers, body) = if preflight && !method_of(mock) {
        (204, preflight_headers(request, mock), String::new())
    } else {
        (
            mock.spec.status,
            response_headers(request, &mock.spec),
            mock.spec.body_base64.clone(),
        )
    };
    let delay_ms = mock.spec.delay_ms;
    record.outcome = MockOutcome::Mocked;
    record.status = Some(status);
    // Recorded or not, the request is answered: the record's number only lets a cleared
    // mock mark what it no longer answered.
    let seq = match mocks.records.get_mut(&session) {
        Some(buffer) if recorded => buffer.push(record),
        _ => 0,
    };
    mocks.pending.insert(
        paused.request_id.clone(),
        Pending {
            mock: id,
            session,
            seq,
        },
    );
    Answer::Fulfil {
        params: json!({
            "responseCode": status,
            "responseHeaders": headers,
            "body": body,
        }),
        delay_ms,
    }
}

/// A mock's response headers: its own, plus what a page needs that it did not say — the body's
/// type, no caching (a mock must not outlive itself in the page's cache), and the CORS header
/// that lets a page of another origin read it.
fn response_headers(request: &PausedRequest, spec: &MockSpec) -> Vec<serde_json::Value> {
    let has = |name: &str| {
        spec.headers
            .iter()
            .any(|h| h.name.eq_ignore_ascii_case(name))
    };
    let mut headers: Vec<serde_json::Value> = spec
        .headers
        .iter()
        .map(|h| json!({"name": h.name, "value": h.value}))
        .collect();
    if !has("content-type") {
        let json_body = STANDARD
            .decode(&spec.body_base64)
            .ok()
            .is_some_and(|bytes| {
                !bytes.is_empty() && serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok()
            });
        let kind = if json_body {
            "application/json"
        } else {
            "text/plain; charset=utf-8"
        };
        headers.push(json!({"name": "Content-Type", "value": kind}));
    }
    if !has("cache-control") {
        headers.push(json!({"name": "Cache-Control", "value": "no-store"}));
    }
    if let Some(origin) = request.header("Origin")
        && !has("access-control-allow-origin")
    {
        headers.push(json!({"name": "Access-Control-Allow-Origin", "value": origin}));
        headers.push(json!({"name": "Access-Control-Allow-Credentials", "value": "true"}));
    }
    headers
}

/// The answer to a CORS preflight for a mocked request of another method: it may be sent.
fn preflight_headers(request: &PausedRequest, mock: &Mock) -> Vec<serde_json::Value> {
    let origin = request.header("Origin").unwrap_or("*");
    let method = mock.spec.method.as_deref().unwrap_or("*");
    let mut headers = vec![
        json!({"name": "Access-Control-Allow-Origin", "value": origin}),
        json!({"name": "Access-Control-Allow-Methods", "value": method}),
        json!({"name": "Access-Control-Allow-Credentials", "value": "true"}),
        json!({"name": "Cache-Control", "value": "no-store"}),
    ];
    if let Some(asked) = request.header("Access-Control-Request-Headers") {
        headers.push(json!({"name": "Access-Control-Allow-Headers", "value": asked}));
    }
    headers
}

impl Fitted for MockRecord {
    fn strings(&mut self) -> Vec<&mut String> {
        // The order of their JSON names: method, type, url.
        let mut strings = vec![&mut self.method];
        if let Some(kind) = &mut self.resource_type {
            strings.push(kind);
        }
        strings.push(&mut self.url);
        strings
    }
}

impl Record for MockRecord {
    fn set_seq(&mut self, seq: u64) {
        self.seq = seq;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(pattern: &str, method: Option<&str>, body: &str) -> MockSpec {
        MockSpec {
            url_pattern: pattern.into(),
            method: method.map(str::to_owned),
            status: 200,
            headers: Vec::new(),
            body_base64: STANDARD.encode(body),
            delay_ms: 0,
        }
    }

    fn tab(mocks: &[(&str, MockSpec)]) -> TabMocks {
        let mut tab = TabMocks::default();
        for (session, spec) in mocks {
            tab.next_id += 1;
            let mock = Mock {
                id: tab.next_id,
                session: (*session).to_owned(),
                spec: spec.clone(),
                body_bytes: 0,
                hits: 0,
            };
            tab.mocks.insert(0, mock);
            tab.records.entry((*session).to_owned()).or_default();
        }
        tab
    }

    fn paused(id: &str, method: &str, url: &str, headers: &[(&str, &str)]) -> Paused {
        Paused {
            request_id: id.into(),
            request: PausedRequest {
                url: url.into(),
                method: method.into(),
                headers: headers
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            },
            frame_id: None,
            resource_type: Some(
                if method == "OPTIONS" {
                    "Preflight"
                } else {
                    "Fetch"
                }
                .into(),
            ),
        }
    }

    fn outcomes(tab: &mut TabMocks, session: &str) -> Vec<(MockOutcome, Option<u32>)> {
        let request = tabwire_protocol::RecordsRequest {
            limit: 50,
            offset: 0,
            filter: None,
            levels: Vec::new(),
            max_chars: 10_000,
            clear_after: false,
        };
        let buffer = tab.records.get_mut(session).unwrap();
        buffer
            .read(&request, |_| true)
            .records
            .into_iter()
            .map(|r| (r.outcome, r.mock_id))
            .collect()
    }

    #[test]
    fn the_newest_matching_mock_answers_and_the_rest_go_on() {
        let mut mocks = tab(&[
            ("s1", spec("*/api/*", None, "old")),
            ("s1", spec("*/api/items*", Some("GET"), "new")),
        ]);
        let get = paused("1", "GET", "https://x.test/api/items", &[]);
        let Answer::Fulfil { params, .. } = decide(&mut mocks, &get, true, true, &|_| true) else {
            panic!("not mocked");
        };
        assert_eq!(params["body"], STANDARD.encode("new"));
        // The POST is answered by the older mock, whose method is any.
        let post = paused("2", "POST", "https://x.test/api/items", &[]);
        let Answer::Fulfil { params, .. } = decide(&mut mocks, &post, true, true, &|_| true) else {
            panic!("not mocked");
        };
        assert_eq!(params["body"], STANDARD.encode("old"));
        let other = paused("3", "GET", "https://x.test/other", &[]);
        assert_eq!(
            decide(&mut mocks, &other, true, true, &|_| true),
            Answer::Continue
        );
        assert_eq!(
            outcomes(&mut mocks, "s1"),
            [
                (MockOutcome::Mocked, Some(2)),
                (MockOutcome::Mocked, Some(1)),
                (MockOutcome::Missed, None)
            ]
        );
    }

    #[test]
    fn a_request_the_policy_keeps_from_agents_goes_on_untouched() {
        let mut mocks = tab(&[("s1", spec("*", None, "x"))]);
        let request = paused("1", "GET", "https://bank.test/", &[]);
        assert_eq!(
            decide(&mut mocks, &request, false, true, &|_| true),
            Answer::Continue
        );
        assert_eq!(outcomes(&mut mocks, "s1"), [(MockOutcome::Passed, Some(1))]);
        // Not readable either: answered the same, and recorded nowhere.
        assert_eq!(
            decide(&mut mocks, &request, false, false, &|_| true),
            Answer::Continue
        );
        assert_eq!(outcomes(&mut mocks, "s1").len(), 1);
        // Another session holds the tab: the mock does not answer for its session.
        let allowed = paused("2", "GET", "https://shop.test/api", &[]);
        assert_eq!(
            decide(&mut mocks, &allowed, true, true, &|_| false),
            Answer::Continue
        );
        // A document (or script, style, frame) would run as the mocked origin: never answered.
        let mut page = paused("3", "GET", "https://shop.test/", &[]);
        page.resource_type = Some("Document".into());
        assert_eq!(
            decide(&mut mocks, &page, true, true, &|_| true),
            Answer::Continue
        );
        assert_eq!(
            outcomes(&mut mocks, "s1")[1..],
            [(MockOutcome::Passed, Some(1)), (MockOutcome::Missed, None)]
        );
        assert!(mocks.pending.is_empty());
    }

    #[test]
    fn a_preflight_for_a_mocked_post_is_allowed_and_the_answer_readable_cross_origin() {
        let mut mocks = tab(&[("s1", spec("https://api.test/*", Some("POST"), "{\"ok\":1}"))]);
        let preflight = paused(
            "1",
            "OPTIONS",
            "https://api.test/save",
            &[
                ("Origin", "https://app.test"),
                ("Access-Control-Request-Method", "POST"),
                ("Access-Control-Request-Headers", "content-type"),
            ],
        );
        let Answer::Fulfil { params, .. } = decide(&mut mocks, &preflight, true, true, &|_| true)
        else {
            panic!("the preflight went on");
        };
        assert_eq!(params["responseCode"], 204);
        let headers = params["responseHeaders"].to_string();
        assert!(
            headers.contains("\"Access-Control-Allow-Methods\",\"value\":\"POST\""),
            "{headers}"
        );
        let post = paused(
            "2",
            "POST",
            "https://api.test/save",
            &[("Origin", "https://app.test")],
        );
        let Answer::Fulfil { params, .. } = decide(&mut mocks, &post, true, true, &|_| true) else {
            panic!("not mocked");
        };
        let headers = params["responseHeaders"].to_string();
        assert!(headers.contains("application/json"), "{headers}");
        assert!(
            headers.contains("\"value\":\"https://app.test\""),
            "{headers}"
        );
        assert!(headers.contains("no-store"), "{headers}");
    }

    #[test]
    fn removing_a_mock_lets_its_waiting_requests_through_and_says_so() {
        let mut mocks = tab(&[("s1", spec("*", None, "x")), ("s2", spec("*/b", None, "y"))]);
        let first = paused("1", "GET", "https://x.test/a", &[]);
        assert!(matches!(
            decide(&mut mocks, &first, true, true, &|_| true),
            Answer::Fulfil { .. }
        ));
        let second = paused("2", "GET", "https://x.test/b", &[]);
        assert!(matches!(
            decide(&mut mocks, &second, true, true, &|_| true),
            Answer::Fulfil { .. }
        ));
        let (removed, released) = mocks.remove(Some("s1"), false);
        assert_eq!((removed, released), (1, vec!["1".to_owned()]));
        assert_eq!(outcomes(&mut mocks, "s1"), [(MockOutcome::Passed, Some(1))]);
        // The other session's mock and its waiting request are untouched.
        assert!(mocks.pending.contains_key("2") && mocks.any());
        let (removed, released) = mocks.remove(None, true);
        assert_eq!((removed, released), (1, vec!["2".to_owned()]));
        assert!(mocks.records.is_empty() && !mocks.any());
    }

    #[test]
    fn a_paused_request_is_read_from_cdp_s_parameters() {
        let params = json!({
            "requestId": "interception-7",
            "request": {
                "url": "https://api.example/items",
                "method": "POST",
                "headers": {"Origin": "https://app.example", "X-Count": 3},
            },
            "frameId": "F1",
            "resourceType": "Fetch",
        });
        let paused = Paused::read(&params).unwrap();
        assert_eq!(paused.request_id, "interception-7");
        assert_eq!(paused.request.method, "POST");
        assert_eq!(paused.request.url, "https://api.example/items");
        assert_eq!(paused.frame_id.as_deref(), Some("F1"));
        assert_eq!(paused.resource_type.as_deref(), Some("Fetch"));
        // Header names ignore case; a value that is not text is left out.
        assert_eq!(paused.request.header("origin"), Some("https://app.example"));
        assert_eq!(paused.request.header("x-count"), None);
        // Without its ID or URL a request cannot be answered as a mock: it goes on untouched.
        for missing in ["requestId", "request"] {
            let mut partial = params.clone();
            partial.as_object_mut().unwrap().remove(missing);
            assert!(Paused::read(&partial).is_none(), "{missing}");
        }
    }
}
