//! The capture group (SPEC §6): network and console capture, response bodies, and network
//! mocks (`mocks`, issue 28).
//!
//! Capture is per tab and goes through tabwire's debugger, whose events are the one source that
//! sees every request and console message of a page without running code in it. Starting a
//! capture attaches, clears what was kept of that kind and records from then on; stopping keeps
//! the records readable until the tab closes or a new capture of that kind starts. The debugger
//! hands every CDP event to [`on_event`] (the worker subscribes it), which turns those of a
//! capture that is on into records (`network`, `console`, `args`) kept in bounded buffers
//! (`buffer`). Bodies (`body`) are fetched on demand with a CDP command.
//!
//! This file is the glue to Chrome; what it glues is plain functions over the events' JSON,
//! unit-tested natively.

mod args;
mod body;
mod buffer;
mod console;
mod frames;
mod mocks;
mod network;

use std::cell::RefCell;
use std::collections::HashMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use tabwire_protocol::{
    CaptureOp, CaptureState, ConsoleRecord, ErrorCode, NetworkRecord, OpError, OpResult, Records,
    RecordsRequest, ResponseBody, TabId,
};
use wasm_bindgen::JsValue;

use self::console::ConsoleCapture;
use self::frames::{FrameTree, FrameTreeAnswer};
use self::network::{NetworkCapture, Outcome, Seen};
use crate::chrome_tabs::resolve_tab;
use crate::text::cap;
use crate::timer::{now_ms, select, sleep};
use crate::{chrome, debugger};

/// How long `get_response_body` waits for a request still loading to finish.
const BODY_WAIT_MS: f64 = 2000.0;
/// How often it looks.
const BODY_POLL_MS: f64 = 50.0;

/// What is captured in one tab. `None` until that kind of capture is first started.
#[derive(Default)]
struct TabCapture {
    network: Option<NetworkCapture>,
    console: Option<ConsoleCapture>,
    /// The tab's frames and contexts, followed while a capture is on or mocks answer: records
    /// of a frame the policy denies are left out, and no mock answers its requests.
    frames: FrameTree,
}

impl TabCapture {
    fn capturing(&self) -> bool {
        self.network.as_ref().is_some_and(|n| n.on) || self.console.as_ref().is_some_and(|c| c.on)
    }
}

/// Whether the tab's frames are followed: a capture is on or mocks answer there.
fn following(tab: TabId) -> bool {
    CAPTURES.with(|c| c.borrow().get(&tab).is_some_and(TabCapture::capturing)) || mocks::any(tab)
}

/// Whether an event of frame `frame` (CDP's ID) of `tab` must be left out: the policy does not
/// let agents read that frame, or capture does not know it. Nothing is looked up while the
/// policy allows everything.
fn hidden_frame(tab: TabId, frame: Option<&str>) -> bool {
    let Some(frame) = frame else {
        return false;
    };
    !crate::policy::allows_everything()
        && with_tab(tab, |t| {
            t.frames
                .denies_frame(frame, |url| !crate::policy::shows(url))
        })
}

/// The same for a JavaScript context's messages (an unknown context's are left out too).
fn hidden_context(tab: TabId, context: Option<i64>) -> bool {
    let Some(context) = context else {
        return false;
    };
    !crate::policy::allows_everything()
        && with_tab(tab, |t| {
            t.frames
                .denies_context(context, |url| !crate::policy::shows(url))
        })
}

/// Learns the tab's frames as they are when a capture starts (CDP's frame tree); later changes
/// come as events.
async fn seed_frames(tab: TabId) {
    match debugger::send(tab, "Page.getFrameTree", &json!({})).await {
        Ok(answer) => match chrome::from_js::<FrameTreeAnswer>(answer) {
            Ok(answer) => with_tab(tab, |t| t.frames.seed(answer)),
            Err(e) => crate::chrome::log!("tab {tab}: could not read its frame tree: {e}"),
        },
        Err(e) => crate::chrome::log!("tab {tab}: Page.getFrameTree failed ({})", e.message),
    }
}

thread_local! {
    static CAPTURES: RefCell<HashMap<TabId, TabCapture>> = RefCell::new(HashMap::new());
}

fn with_tab<R>(tab: TabId, f: impl FnOnce(&mut TabCapture) -> R) -> R {
    CAPTURES.with(|captures| f(captures.borrow_mut().entry(tab).or_default()))
}

/// Runs `f` on the tab's network capture, if one was ever started.
fn with_network<R>(tab: TabId, f: impl FnOnce(&mut NetworkCapture) -> R) -> Option<R> {
    CAPTURES.with(|captures| {
        let mut captures = captures.borrow_mut();
        captures.get_mut(&tab)?.network.as_mut().map(f)
    })
}

/// Runs `f` on the tab's console capture, if one was ever started.
fn with_console<R>(tab: TabId, f: impl FnOnce(&mut ConsoleCapture) -> R) -> Option<R> {
    CAPTURES.with(|captures| {
        let mut captures = captures.borrow_mut();
        captures.get_mut(&tab)?.console.as_mut().map(f)
    })
}

/// Runs one operation of the group on the request's tab, for `viewer` (the session whose mocks
/// a `mockNetwork` request is about).
pub async fn run(tab_id: Option<TabId>, op: CaptureOp, viewer: &str) -> Result<OpResult, OpError> {
    let tab = resolve_tab(tab_id).await?.id;
    Ok(match op {
        CaptureOp::NetworkCapture(set) => network_capture(tab, set.on).await?.into(),
        CaptureOp::GetRequests(request) => get_requests(tab, &request.0)?.into(),
        CaptureOp::GetResponseBody(request) => {
            response_body(tab, &request.request_id, request.max_chars)
                .await?
                .into()
        }
        CaptureOp::ConsoleCapture(set) => console_capture(tab, set.on).await?.into(),
        CaptureOp::GetConsole(request) => get_console(tab, &request.0)?.into(),
        CaptureOp::MockNetwork(request) => {
            let follow_frames = async move {
                if !following(tab) {
                    seed_frames(tab).await;
                }
            };
            mocks::run(tab, viewer, request, follow_frames)
                .await?
                .into()
        }
    })
}

/// Takes one CDP event of `tab` (the debugger forwards them all) and records it when a
/// capture of its kind is on in the tab.
pub fn on_event(tab: TabId, method: &str, params: &JsValue) {
    fn read<T: DeserializeOwned>(params: &JsValue) -> Option<T> {
        chrome::from_js(params.clone()).ok()
    }
    if method == "Fetch.requestPaused" {
        // Only mocks pause requests; every one is answered, whoever has the tab.
        let denies_frame = |frame: &str, denied: &dyn Fn(&str) -> bool| {
            with_tab(tab, |t| t.frames.denies_frame(frame, denied))
        };
        mocks::on_paused(tab, params, &denies_frame);
        return;
    }
    if FrameTree::follows(method) {
        if following(tab)
            && let Some(params) = read::<serde_json::Value>(params)
        {
            with_tab(tab, |t| t.frames.on_event(method, params));
        }
        return;
    }
    // Which frame made each request, for the browser's log entries about requests.
    if method == "Network.requestWillBeSent"
        && !crate::policy::allows_everything()
        && following(tab)
        && let Some(sent) = read::<network::RequestWillBeSent>(params)
        && let Some(frame) = sent.frame_id()
    {
        with_tab(tab, |t| t.frames.note_request(sent.request_id(), frame));
    }
    let on = match method {
        "Network.requestWillBeSent"
        | "Network.responseReceived"
        | "Network.loadingFinished"
        | "Network.loadingFailed" => with_network(tab, |n| n.on),
        "Runtime.consoleAPICalled" | "Runtime.exceptionThrown" | "Log.entryAdded" => {
            with_console(tab, |c| c.on)
        }
        _ => None,
    };
    // Most events are of tabs that capture nothing: they are not even read. Nothing is kept
    // while a person has the tab (`request_human`): what they do there is theirs.
    if on != Some(true) || crate::approvals::person_has(tab) {
        return;
    }
    match method {
        "Network.requestWillBeSent" => {
            read::<network::RequestWillBeSent>(params).and_then(|event| {
                let hidden = hidden_frame(tab, event.frame_id());
                with_network(tab, |n| n.request_will_be_sent(event, hidden))
            })
        }
        "Network.responseReceived" => {
            read(params).and_then(|event| with_network(tab, |n| n.response_received(event)))
        }
        "Network.loadingFinished" => {
            read(params).and_then(|event| with_network(tab, |n| n.loading_finished(event)))
        }
        "Network.loadingFailed" => {
            read(params).and_then(|event| with_network(tab, |n| n.loading_failed(event)))
        }
        "Runtime.consoleAPICalled" => read::<console::ConsoleApiCalled>(params).and_then(|event| {
            if hidden_context(tab, event.context()) {
                return None;
            }
            with_console(tab, |c| c.console_api_called(event))
        }),
        "Runtime.exceptionThrown" => read::<console::ExceptionThrown>(params).and_then(|event| {
            if hidden_context(tab, event.context()) {
                return None;
            }
            with_console(tab, |c| c.exception_thrown(event))
        }),
        "Log.entryAdded" => read::<console::EntryAdded>(params).and_then(|event| {
            let hidden = !crate::policy::allows_everything()
                && with_tab(tab, |t| {
                    t.frames
                        .denies_entry(event.request(), |url| !crate::policy::shows(url))
                });
            if hidden {
                return None;
            }
            with_console(tab, |c| c.entry_added(event))
        }),
        _ => None,
    };
}

/// Forgets a closed tab's captures and mocks.
pub fn forget(tab: TabId) {
    CAPTURES.with(|captures| captures.borrow_mut().remove(&tab));
    mocks::forget(tab);
}

/// Tabwire's debugger session with `tab` is gone: Chrome let the requests it paused go on.
pub fn detached(tab: TabId) {
    mocks::detached(tab);
}

/// A session ended: its mocks end in every tab.
pub fn session_ended(session: &str) {
    mocks::sessions_ended(Some(session));
}

/// The hub's connection ended: every session's mocks end (their sessions are the hub's).
pub fn connection_ended() {
    mocks::sessions_ended(None);
}

/// Turns console capture's domains back on after tabwire's debugger reattached to `tab`
/// (`get_tab_health {recoverDebugger}`): a new debugger session starts with `Runtime` and `Log`
/// off, while the `Network` events come back with every attach.
pub async fn restore(tab: TabId) {
    mocks::restore(tab).await;
    let on = with_console(tab, |c| {
        if c.on {
            c.resume(now_ms());
        }
        c.on
    });
    if on == Some(true) {
        // Bounded: an attach must not hang on a renderer that does not answer.
        let _ = select(enable_console_domains(tab), sleep(ENABLE_WAIT_MS)).await;
    }
}

/// How long re-enabling the console's domains may take after a reattach.
const ENABLE_WAIT_MS: f64 = 2000.0;

async fn network_capture(tab: TabId, on: bool) -> Result<CaptureState, OpError> {
    if on {
        debugger::ensure_attached(tab).await?;
        with_tab(tab, |t| t.network = Some(NetworkCapture::started()));
        seed_frames(tab).await;
        return Ok(capture_switched(tab, true, 0));
    }
    let kept = with_network(tab, |n| {
        n.on = false;
        n.records.len()
    });
    Ok(capture_switched(tab, false, kept.unwrap_or(0)))
}

async fn console_capture(tab: TabId, on: bool) -> Result<CaptureState, OpError> {
    if on {
        debugger::ensure_attached(tab).await?;
        // Recording is on before the domains are, so nothing logged in between is missed;
        // the messages Chrome replays on enabling are older than the start and dropped.
        with_tab(tab, |t| t.console = Some(ConsoleCapture::started(now_ms())));
        seed_frames(tab).await;
        if let Err(error) = debugger::send(tab, "Runtime.enable", &json!({})).await {
            with_console(tab, |c| c.on = false);
            return Err(error);
        }
        if let Err(error) = debugger::send(tab, "Log.enable", &json!({})).await {
            // Console calls and exceptions still come through `Runtime`.
            crate::chrome::log!("tab {tab}: Log.enable failed ({})", error.message);
        }
        return Ok(capture_switched(tab, true, 0));
    }
    let kept = with_console(tab, |c| {
        c.on = false;
        c.records.len()
    });
    if kept.is_some() && debugger::is_attached(tab) {
        for domain in ["Runtime.disable", "Log.disable"] {
            // Only to quiet the events: a failure leaves events that are no longer recorded.
            let _ = debugger::send_attached(tab, domain, &json!({})).await;
        }
    }
    Ok(capture_switched(tab, false, kept.unwrap_or(0)))
}

async fn enable_console_domains(tab: TabId) {
    for domain in ["Runtime.enable", "Log.enable"] {
        if let Err(error) = debugger::send_attached(tab, domain, &json!({})).await {
            crate::chrome::log!("tab {tab}: {domain} failed ({})", error.message);
        }
    }
}

fn capture_switched(tab: TabId, capturing: bool, kept: u32) -> CaptureState {
    CaptureState {
        tab_id: tab,
        capturing,
        kept,
    }
}

fn get_requests(tab: TabId, request: &RecordsRequest) -> Result<Records<NetworkRecord>, OpError> {
    let attached = debugger::is_attached(tab);
    with_network(tab, |n| {
        let page = n
            .records
            .read(request, network::matcher(request.filter.as_deref()));
        page.into_records(tab, n.on && attached, request, n.records.evicted())
    })
    .ok_or_else(|| never_started("Network", "start_network_capture"))
}

fn get_console(tab: TabId, request: &RecordsRequest) -> Result<Records<ConsoleRecord>, OpError> {
    let attached = debugger::is_attached(tab);
    with_console(tab, |c| {
        let page = c.records.read(
            request,
            console::matcher(request.filter.as_deref(), &request.levels),
        );
        page.into_records(tab, c.on && attached, request, c.records.evicted())
    })
    .ok_or_else(|| never_started("Console", "start_console_capture"))
}

fn never_started(kind: &str, tool: &str) -> OpError {
    OpError::new(
        ErrorCode::InvalidArgument,
        format!(
            "{kind} capture was never started in this tab. Call {tool} first, then use the \
             page: only what happens after the start is recorded."
        ),
    )
}

async fn response_body(
    tab: TabId,
    request_id: &str,
    max_chars: u32,
) -> Result<ResponseBody, OpError> {
    let mut seen = remembered(tab, request_id)?;
    // A body is complete only once its request finished; one still loading gets a moment.
    let until = now_ms() + BODY_WAIT_MS;
    while seen.outcome == Outcome::Loading && now_ms() < until {
        sleep(BODY_POLL_MS).await;
        seen = remembered(tab, request_id)?;
    }
    let id = cap(request_id, 100);
    if let Outcome::Failed(error) = &seen.outcome {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            format!("Request {id} failed ({error}), so it has no body."),
        ));
    }
    if !debugger::is_attached(tab) {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            format!(
                "No body is kept for request {id}: tabwire's debugger was detached from the tab \
                 since, and Chrome keeps bodies only for the session that saw them. Start network \
                 capture again and repeat what made the request."
            ),
        ));
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Answer {
        #[serde(default)]
        body: String,
        #[serde(default)]
        base64_encoded: bool,
    }
    let value = debugger::send_attached(
        tab,
        "Network.getResponseBody",
        &json!({ "requestId": request_id }),
    )
    .await
    .map_err(|error| body_error(&id, &seen, error))?;
    let answer: Answer = chrome::from_js(value).map_err(|e| {
        OpError::new(
            ErrorCode::Internal,
            format!("could not read the result of Network.getResponseBody: {e}"),
        )
    })?;
    let prepared = body::prepare(
        &answer.body,
        answer.base64_encoded,
        &seen.mime_type,
        max_chars,
    );
    Ok(ResponseBody {
        tab_id: tab,
        request_id: request_id.to_owned(),
        mime_type: seen.mime_type,
        body: prepared.body,
        total_chars: prepared.total_chars,
        truncated: prepared.truncated,
        note: prepared.note,
    })
}

/// What the tab's network capture remembers of a request.
fn remembered(tab: TabId, request_id: &str) -> Result<Seen, OpError> {
    with_network(tab, |n| n.seen(request_id).cloned())
        .ok_or_else(|| never_started("Network", "start_network_capture"))?
        .ok_or_else(|| {
            OpError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "No request {} was captured in this tab since network capture started (or \
                     it is older than the last {} requests). Call get_captured_requests for the \
                     requestIds.",
                    cap(request_id, 100),
                    2 * tabwire_protocol::capture::MAX_RECORDS
                ),
            )
        })
}

/// Maps a failed `Network.getResponseBody`: Chrome has no body for a request still loading,
/// nor once it dropped it.
fn body_error(id: &str, seen: &Seen, error: OpError) -> OpError {
    if error.message.contains("not attached") {
        return error;
    }
    let chrome_said = cap(&error.message, 200);
    let message = if seen.outcome == Outcome::Loading {
        format!(
            "Request {id} has not finished loading, so Chrome has no body for it yet. Retry \
             once get_captured_requests shows its size. ({chrome_said})"
        )
    } else {
        format!(
            "No body is kept for request {id} (Chrome drops bodies after navigation or when its \
             buffer is full, and redirects have none). ({chrome_said})"
        )
    };
    OpError::new(ErrorCode::InvalidArgument, message)
}
