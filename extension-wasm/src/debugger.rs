//! Trusted input through `chrome.debugger` (the Chrome DevTools Protocol).
//!
//! Attaching takes tens of milliseconds and shows Chrome's "is debugging this browser" bar, so
//! tabwire attaches to a tab once, on its first click, and stays attached; the set of attached
//! tabs is forgotten on `chrome.debugger.onDetach` (DevTools took over, the user cancelled the
//! bar, the tab crashed) and when the tab closes. Concurrent first clicks on one tab share a
//! single attach.
//!
//! Every attach enables the `Page` domain, so a JavaScript dialog opening in the tab is seen at
//! once (`Page.javascriptDialogOpening`) and reported by whatever tool runs into it, instead of
//! that tool hanging until its deadline; and the `Network` domain, whose request events keep
//! the count of requests in flight (`activity`).
//!
//! The debugger knows nothing of what listens to it: modules above it subscribe (the worker
//! wires them at start) to every CDP event ([`on_event`]), to an attach completing
//! ([`on_attached`]) and to a tab's session being forgotten ([`on_forgotten`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

use js_sys::Promise;
use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::{DialogInfo, ErrorCode, OpError, TabId};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::chrome;
use crate::text::cap;
use crate::timer::{Either, select, sleep};

/// How long enabling one domain on attach may take.
const ENABLE_WAIT_MS: f64 = 2000.0;

/// The CDP version Chrome's debugger API speaks.
const PROTOCOL_VERSION: &str = "1.3";

enum Attachment {
    /// An attach is under way; later callers await the same promise.
    Attaching(Promise),
    Attached,
}

/// A JavaScript dialog open in a tab, as Chrome reported it.
struct OpenDialog {
    /// Its type and text, as the page wrote them.
    info: DialogInfo,
    /// Which opening this is: a judgement of an earlier dialog must not land on a later one.
    serial: u64,
    /// Whether agents may read the frame that opened it; `None` while that is being judged.
    readable: Option<bool>,
}

impl OpenDialog {
    /// What agents are told: all of it when they may read its frame, otherwise (or while
    /// not yet judged) only its type.
    fn shown(&self) -> DialogInfo {
        if self.readable == Some(true) {
            self.info.clone()
        } else {
            DialogInfo::withheld(&self.info.kind)
        }
    }
}

/// What the debugger's events told about a tab.
#[derive(Default)]
struct TabEvents {
    /// The JavaScript dialog open in the tab.
    dialog: Option<OpenDialog>,
    /// The drag data of an intercepted HTML5 drag (`Input.dragIntercepted`).
    drag: Option<serde_json::Value>,
    /// How many file choosers Chrome kept closed for tabwire (`Page.fileChooserOpened`, while
    /// an upload intercepts them).
    choosers: u32,
}

/// Told every CDP event of every tab tabwire is attached to: the tab, the method, its params.
pub type EventHandler = fn(TabId, &str, &JsValue);
/// Told when an attach to a tab completed (with the domains enabled); the attach waits for it.
pub type AttachHandler = fn(TabId) -> Pin<Box<dyn Future<Output = ()>>>;
/// Told when tabwire's session with a tab is forgotten: its events stop.
pub type ForgetHandler = fn(TabId);

#[derive(Default)]
struct Subscribers {
    events: Vec<EventHandler>,
    attached: Vec<AttachHandler>,
    forgotten: Vec<ForgetHandler>,
}

thread_local! {
    static ATTACHED: RefCell<HashMap<TabId, Attachment>> = RefCell::new(HashMap::new());
    static EVENTS: RefCell<HashMap<TabId, TabEvents>> = RefCell::new(HashMap::new());
    static SUBSCRIBERS: RefCell<Subscribers> = RefCell::new(Subscribers::default());
    static DIALOG_SERIAL: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Subscribes `handler` to every CDP event.
pub fn on_event(handler: EventHandler) {
    SUBSCRIBERS.with(|s| s.borrow_mut().events.push(handler));
}

/// Subscribes `handler` to completed attaches.
pub fn on_attached(handler: AttachHandler) {
    SUBSCRIBERS.with(|s| s.borrow_mut().attached.push(handler));
}

/// Subscribes `handler` to forgotten sessions.
pub fn on_forgotten(handler: ForgetHandler) {
    SUBSCRIBERS.with(|s| s.borrow_mut().forgotten.push(handler));
}

/// The subscribers, copied out so none is called with the list borrowed.
fn subscribers<T: Copy>(pick: impl Fn(&Subscribers) -> &Vec<T>) -> Vec<T> {
    SUBSCRIBERS.with(|s| pick(&s.borrow()).clone())
}

/// The dialog open in `tab`, if tabwire's debugger saw one open, as agents may see it (its
/// text withheld while its frame is not yet judged readable).
pub fn dialog(tab: TabId) -> Option<DialogInfo> {
    EVENTS.with(|events| {
        events
            .borrow()
            .get(&tab)
            .and_then(|e| e.dialog.as_ref().map(OpenDialog::shown))
    })
}

/// The dialog open in `tab` once its frame is judged (or [`JUDGE_WAIT_MS`] passed: it then
/// stays withheld).
pub async fn judged_dialog(tab: TabId) -> Option<DialogInfo> {
    let mut waited = 0.0;
    loop {
        let (open, judged) = EVENTS.with(|events| {
            let events = events.borrow();
            let open = events.get(&tab).and_then(|e| e.dialog.as_ref());
            (
                open.map(OpenDialog::shown),
                open.is_none_or(|d| d.readable.is_some()),
            )
        });
        if judged || waited >= JUDGE_WAIT_MS {
            return open;
        }
        sleep(DIALOG_POLL_MS).await;
        waited += DIALOG_POLL_MS;
    }
}

/// How long a dialog's frame may take to judge (one `webNavigation.getAllFrames`) before it is
/// reported withheld.
const JUDGE_WAIT_MS: f64 = 1000.0;

/// Forgets the dialog of `tab` (it was handled).
pub fn dialog_closed(tab: TabId) {
    EVENTS.with(|events| {
        if let Some(e) = events.borrow_mut().get_mut(&tab) {
            e.dialog = None;
        }
    });
}

/// Completes when a dialog is open in `tab` (and its frame judged).
pub async fn dialog_opened(tab: TabId) -> DialogInfo {
    loop {
        if dialog(tab).is_some()
            && let Some(dialog) = judged_dialog(tab).await
        {
            return dialog;
        }
        sleep(DIALOG_POLL_MS).await;
    }
}

/// Runs `work`, or fails with `DIALOG_OPEN` as soon as a dialog blocks `tab`: a page behind a
/// dialog answers nothing, so `work` would otherwise wait for its deadline.
pub async fn unless_dialog<T>(
    tab: TabId,
    work: impl std::future::Future<Output = Result<T, OpError>>,
) -> Result<T, OpError> {
    match select(work, dialog_opened(tab)).await {
        Either::Left(result) => result,
        Either::Right(dialog) => Err(dialog_error(&dialog)),
    }
}

/// How often a running operation looks for a dialog that blocks its page.
const DIALOG_POLL_MS: f64 = 25.0;

/// Takes the data of the HTML5 drag Chrome intercepted in `tab`, if any.
pub fn take_drag(tab: TabId) -> Option<serde_json::Value> {
    EVENTS.with(|events| {
        events
            .borrow_mut()
            .get_mut(&tab)
            .and_then(|e| e.drag.take())
    })
}

/// How many file choosers Chrome has kept closed in `tab` while an upload intercepted them
/// (compare two readings).
pub fn choosers_opened(tab: TabId) -> u32 {
    EVENTS.with(|events| events.borrow().get(&tab).map_or(0, |e| e.choosers))
}

/// Whether tabwire's debugger is attached to `tab`.
pub fn is_attached(tab: TabId) -> bool {
    ATTACHED.with(|attached| matches!(attached.borrow().get(&tab), Some(Attachment::Attached)))
}

/// The error for an operation that ran into an open dialog.
pub fn dialog_error(dialog: &DialogInfo) -> OpError {
    if dialog.withheld {
        return OpError::new(
            ErrorCode::DialogOpen,
            format!(
                "A JavaScript {} dialog blocks the page. A frame of an origin agents may not \
                 read opened it, so its text is withheld and it can only be dismissed: call \
                 handle_dialog with accept false, then retry.",
                dialog.kind
            ),
        );
    }
    OpError::new(
        ErrorCode::DialogOpen,
        format!(
            "A JavaScript {} dialog blocks the page: \"{}\". Call handle_dialog to accept or \
             dismiss it, then retry.",
            dialog.kind,
            cap(&dialog.message, 200)
        ),
    )
}

/// The error for work the dialog open in `tab` keeps from running.
pub fn blocking_dialog_error(tab: TabId) -> OpError {
    dialog(tab).map_or_else(
        || OpError::new(ErrorCode::DialogOpen, "A dialog blocks the page."),
        |d| dialog_error(&d),
    )
}

fn handle_event(tab: TabId, method: &str, params: JsValue) {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Opening {
        #[serde(rename = "type")]
        kind: String,
        #[serde(default)]
        message: String,
        #[serde(default)]
        default_prompt: String,
        /// The URL of the frame that opened it.
        #[serde(default)]
        url: String,
    }
    #[derive(Deserialize)]
    struct Intercepted {
        data: serde_json::Value,
    }
    for handler in subscribers(|s| &s.events) {
        handler(tab, method, &params);
    }
    match method {
        "Page.javascriptDialogOpening" => {
            if let Ok(opening) = chrome::from_js::<Opening>(params) {
                let serial = DIALOG_SERIAL.with(|s| {
                    s.set(s.get() + 1);
                    s.get()
                });
                // With nothing restricted there is nothing to judge.
                let readable = crate::policy::allows_everything().then_some(true);
                let dialog = OpenDialog {
                    info: DialogInfo {
                        kind: opening.kind,
                        message: opening.message,
                        default_prompt: opening.default_prompt,
                        withheld: false,
                    },
                    serial,
                    readable,
                };
                EVENTS.with(|events| {
                    events.borrow_mut().entry(tab).or_default().dialog = Some(dialog)
                });
                if readable.is_none() {
                    wasm_bindgen_futures::spawn_local(judge_dialog(tab, serial, opening.url));
                }
            }
        }
        "Page.javascriptDialogClosed" => dialog_closed(tab),
        "Page.fileChooserOpened" => EVENTS.with(|events| {
            let mut events = events.borrow_mut();
            let counted = &mut events.entry(tab).or_default().choosers;
            *counted = counted.wrapping_add(1);
        }),
        "Input.dragIntercepted" => {
            if let Ok(Intercepted { data }) = chrome::from_js::<Intercepted>(params) {
                EVENTS.with(|events| events.borrow_mut().entry(tab).or_default().drag = Some(data));
            }
        }
        _ => {}
    }
}

/// Judges whether agents may read the frame (at `url`) that opened dialog `serial` of `tab`,
/// and records it unless that dialog closed meanwhile. A failed read of the frames withholds.
async fn judge_dialog(tab: TabId, serial: u64, url: String) {
    let readable = match chrome::active_frames(tab).await {
        Ok(frames) => crate::policy::dialog_readable(&frames, &url, |url| {
            crate::policy::verdict(url).access == tabwire_protocol::policy::Access::Deny
        }),
        Err(_) => false,
    };
    EVENTS.with(|events| {
        if let Some(open) = events
            .borrow_mut()
            .get_mut(&tab)
            .and_then(|e| e.dialog.as_mut())
            .filter(|d| d.serial == serial)
        {
            open.readable = Some(readable);
        }
    });
}

/// Registers the `onDetach` listener. Called once at worker start.
pub fn install_listeners() {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Debuggee {
        tab_id: Option<TabId>,
    }
    let on_detach =
        Closure::<dyn FnMut(JsValue, JsValue)>::new(|source: JsValue, reason: JsValue| {
            if let Ok(Debuggee { tab_id: Some(tab) }) = chrome::from_js::<Debuggee>(source) {
                forget(tab);
                crate::chrome::log!(
                    "debugger detached from tab {tab} ({})",
                    reason.as_string().unwrap_or_default()
                );
            }
        });
    chrome::debugger_on_detach(on_detach.as_ref().unchecked_ref());
    let on_cdp_event = Closure::<dyn FnMut(JsValue, JsValue, JsValue)>::new(
        |source: JsValue, method: JsValue, params: JsValue| {
            if let (Ok(Debuggee { tab_id: Some(tab) }), Some(method)) =
                (chrome::from_js::<Debuggee>(source), method.as_string())
            {
                handle_event(tab, &method, params);
            }
        },
    );
    chrome::debugger_on_event(on_cdp_event.as_ref().unchecked_ref());
    // The listeners live as long as the worker.
    on_detach.forget();
    on_cdp_event.forget();
}

/// Forgets that tabwire is attached to `tab`, and what its events said; tells the
/// subscribers that its events stop.
pub fn forget(tab: TabId) {
    ATTACHED.with(|attached| attached.borrow_mut().remove(&tab));
    EVENTS.with(|events| events.borrow_mut().remove(&tab));
    for handler in subscribers(|s| &s.forgotten) {
        handler(tab);
    }
}

/// Detaches from `tab` and attaches again (`get_tab_health {recoverDebugger}`); attaching
/// turns the dialog and network events back on.
pub async fn reattach(tab: TabId) -> Result<(), OpError> {
    if is_attached(tab) {
        // A failed detach means there was nothing to detach: attaching is what matters.
        let _ = chrome::call(chrome::debugger_detach(&debuggee(tab)?)).await;
    }
    forget(tab);
    ensure_attached(tab).await
}

fn debuggee(tab: TabId) -> Result<JsValue, OpError> {
    chrome::to_js(&json!({ "tabId": tab })).map_err(OpError::from)
}

/// Attaches to `tab` unless already attached.
pub async fn ensure_attached(tab: TabId) -> Result<(), OpError> {
    let pending = ATTACHED.with(|attached| match attached.borrow().get(&tab) {
        Some(Attachment::Attached) => Ok(None),
        Some(Attachment::Attaching(promise)) => Ok(Some(promise.clone())),
        None => Err(()),
    });
    let promise = match pending {
        Ok(None) => return Ok(()),
        Ok(Some(promise)) => promise,
        Err(()) => {
            let attach = chrome::debugger_attach(&debuggee(tab)?, PROTOCOL_VERSION)
                .map_err(|e| attach_error(tab, &chrome::js_message(&e)))?;
            // Attached means attached with the events on: callers that share this promise
            // must not act before the dialog events are.
            let promise = wasm_bindgen_futures::future_to_promise(async move {
                JsFuture::from(attach).await?;
                enable_events(tab).await;
                Ok(JsValue::UNDEFINED)
            });
            ATTACHED.with(|attached| {
                attached
                    .borrow_mut()
                    .insert(tab, Attachment::Attaching(promise.clone()))
            });
            promise
        }
    };
    match JsFuture::from(promise.clone()).await {
        Ok(_) => {
            ATTACHED.with(|attached| attached.borrow_mut().insert(tab, Attachment::Attached));
            // A reattach (after DevTools took over, or `recoverDebugger`) lets the subscribers
            // bring back what they had on (capture modes). Not inside the attach promise: they
            // send commands that wait for the attachment.
            for handler in subscribers(|s| &s.attached) {
                handler(tab).await;
            }
            Ok(())
        }
        Err(error) => {
            // Only this attach is forgotten: a newer one may have started meanwhile.
            let ours = ATTACHED.with(|attached| {
                matches!(attached.borrow().get(&tab), Some(Attachment::Attaching(p)) if JsValue::from(p) == JsValue::from(&promise))
            });
            if ours {
                forget(tab);
            }
            let message = chrome::js_message(&error);
            // After a worker restart Chrome may still hold tabwire's own earlier session; a
            // command that succeeds proves the session is ours.
            if message.contains("already attached") && probe(tab).await {
                ATTACHED.with(|attached| attached.borrow_mut().insert(tab, Attachment::Attached));
                // The earlier worker's network mocks are gone with it: nothing here would answer
                // the requests its Fetch patterns still pause.
                let _ = issue_attached(tab, "Fetch.disable", &json!({})).await;
                enable_events(tab).await;
                return Ok(());
            }
            Err(attach_error(tab, &message))
        }
    }
}

/// Enables the `Page` domain's events (dialogs; Chrome also reports a dialog that is already
/// open) and the `Network` domain's (requests in flight, for network-idle waits). Without them
/// tabwire still works; it just cannot tell a dialog from a hung page, or see requests.
async fn enable_events(tab: TabId) {
    let Ok(target) = debuggee(tab) else {
        return;
    };
    let Ok(params) = chrome::to_js(&json!({})) else {
        return;
    };
    for domain in ["Page.enable", "Network.enable"] {
        // Bounded: every operation on the tab waits for the attach this runs in.
        let enable = chrome::call(chrome::debugger_send_command(&target, domain, &params));
        match select(enable, sleep(ENABLE_WAIT_MS)).await {
            Either::Left(Ok(_)) => {}
            Either::Left(Err(failure)) => {
                crate::chrome::log!("tab {tab}: {domain} failed ({failure})");
            }
            Either::Right(()) => {
                crate::chrome::log!("tab {tab}: {domain} did not answer in {ENABLE_WAIT_MS} ms");
            }
        }
    }
}

async fn probe(tab: TabId) -> bool {
    let Ok(target) = debuggee(tab) else {
        return false;
    };
    chrome::call(chrome::debugger_send_command(
        &target,
        "Page.getLayoutMetrics",
        &JsValue::UNDEFINED,
    ))
    .await
    .is_ok()
}

/// Maps a failed attach.
pub fn attach_error(tab: TabId, message: &str) -> OpError {
    let lower = message.to_ascii_lowercase();
    if lower.contains("already attached") {
        return OpError::new(
            ErrorCode::DebuggerUnavailable,
            "Another debugger (DevTools or another extension) is attached to this tab, so \
             tabwire cannot send trusted input. Close DevTools for this tab or stop the other \
             tool, then retry.",
        );
    }
    if lower.contains("no tab with") {
        return OpError::new(
            ErrorCode::TabNotFound,
            format!("No tab with ID {tab} exists. Call list_tabs to see the open tabs."),
        );
    }
    if lower.contains("cannot access") || lower.contains("cannot attach") {
        return OpError::new(
            ErrorCode::RestrictedPage,
            format!(
                "Chrome does not allow debugging this page: {message} Use an ordinary web page."
            ),
        );
    }
    OpError::new(
        ErrorCode::DebuggerUnavailable,
        format!(
            "Chrome would not let tabwire attach its debugger to the tab: {message} Retry in a moment."
        ),
    )
}

/// Sends one CDP command on the session as it is, never attaching: for input already let
/// through by its checkpoint, which must not wait for an attach first.
pub async fn send_attached(
    tab: TabId,
    method: &str,
    params: &serde_json::Value,
) -> Result<JsValue, OpError> {
    issue_attached(tab, method, params).await
}

/// Like [`send_attached`], but the command goes to Chrome now, when this is called, and the
/// returned future only waits for its answer: several issued in a row travel together, in
/// order, without waiting for each other's answers.
pub fn issue_attached(
    tab: TabId,
    method: &str,
    params: &serde_json::Value,
) -> impl Future<Output = Result<JsValue, OpError>> + use<> {
    let method = method.to_owned();
    let issued = debuggee(tab).and_then(|debuggee| {
        let params = chrome::to_js(params).map_err(OpError::from)?;
        Ok(chrome::debugger_send_command(&debuggee, &method, &params))
    });
    async move {
        chrome::call(issued?).await.map_err(|failure| {
            if failure.message.contains("not attached") {
                forget(tab);
            }
            OpError::new(
                ErrorCode::DebuggerUnavailable,
                format!("Chrome's debugger rejected {method}: {failure}"),
            )
        })
    }
}

/// Sends one CDP command, reattaching once if Chrome says the session is gone.
pub async fn send(
    tab: TabId,
    method: &str,
    params: &serde_json::Value,
) -> Result<JsValue, OpError> {
    let mut reattached = false;
    loop {
        ensure_attached(tab).await?;
        match send_attached(tab, method, params).await {
            // `send_attached` forgot the lost session; the next round attaches anew.
            Err(error) if !reattached && error.message.contains("not attached") => {
                reattached = true;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_failures_map_to_codes() {
        let other = attach_error(
            3,
            "Another debugger is already attached to the tab with id: 3.",
        );
        assert_eq!(other.code, ErrorCode::DebuggerUnavailable);
        assert!(other.message.contains("Close DevTools"));
        assert_eq!(
            attach_error(3, "No tab with given id 3.").code,
            ErrorCode::TabNotFound
        );
        assert_eq!(
            attach_error(3, "Cannot access a chrome:// URL").code,
            ErrorCode::RestrictedPage
        );
    }
}
