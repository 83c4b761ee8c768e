//! Recorded demonstrations (issue 28): a person's input in a tab, noted as steps an agent can
//! replay with `run_browser_actions` (docs/recording.md).
//!
//! A recording starts when an agent asks (`record_actions {start}`) and the person at the
//! browser allows it in the popup or the notification, or with a handoff (`request_human`),
//! whose question tells the person. The collector's recorder (js/collector/80-record.js) runs
//! in every frame of the tab, and again in every document the tab loads while it records; it
//! sends each trusted event to the worker (background.js hands them to [`on_recorded`]), and
//! [`Fold`] turns them into steps. It is shown while it runs: the toolbar badge reads `REC` on
//! the tab, and the popup lists it with a *Stop* button.
//!
//! Input is recorded only where the policy lets agents make sensitive reads (a recording holds
//! what a person types), judged on the URL Chrome gives for the sending frame and on the tab's
//! page; the rest is counted as omitted. Input that happened (by the page's clock) while an
//! agent's request or input run was in the tab is the agent's own and is left out. A recording ends with the agent's `stop`, the person's *Stop*
//! (its steps wait for the agent's `stop`), the tab closing, its session ending or the hub's
//! connection ending.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::{Value, json};
use tabwire_protocol::policy::Need;
use tabwire_protocol::recording::{
    ActionRecording, MAX_RECORDED_STEPS, RecordedElement, RecordedStep, RecordingEnd, Replay, Typed,
};
use tabwire_protocol::{ErrorCode, HandedBack, MouseButton, OpError, TabId};
use wasm_bindgen::prelude::*;

use crate::approvals::{self, Asker};
use crate::page::{self, PageCommand};
use crate::{chrome, queue};

/// One element as the recorder named it.
#[derive(Debug, Clone, PartialEq)]
struct Named {
    selector: String,
    line: String,
    key: Option<u32>,
    secret: Option<String>,
}

/// One event the recorder sent.
#[derive(Debug, Clone, PartialEq, Default)]
struct Noted {
    kind: String,
    target: Option<Named>,
    to: Option<Named>,
    text: Option<String>,
    button: u64,
    count: u64,
    key: String,
    modifiers: u64,
    value: String,
    files: Vec<String>,
    /// The collector's token of the document it came from.
    doc: String,
}

/// The most a page may put into one recorded string, in characters (the recorder caps them
/// first; a page could send longer ones through a recorder it took over).
const MAX_SELECTOR: usize = 300;
const MAX_LINE: usize = 200;
const MAX_TEXT: usize = 2000;
const MAX_VALUE: usize = 300;
const MAX_KEY: usize = 20;
const MAX_FILES: usize = 20;

/// A page's string, when it is not longer than `max` characters.
fn bounded(value: &Value, max: usize) -> Option<String> {
    value
        .as_str()
        .filter(|text| text.chars().count() <= max)
        .map(str::to_owned)
}

impl Named {
    fn read(value: &Value) -> Option<Named> {
        Some(Named {
            selector: bounded(&value["selector"], MAX_SELECTOR).filter(|s| !s.is_empty())?,
            line: crate::text::cap(value["line"].as_str().unwrap_or_default(), MAX_LINE),
            key: value["key"]
                .as_u64()
                .and_then(|key| u32::try_from(key).ok()),
            secret: bounded(&value["secret"], MAX_LINE),
        })
    }
}

impl Noted {
    /// Reads an event by hand (a derived reader costs the wasm more than these lines).
    fn read(value: &Value) -> Option<Noted> {
        Some(Noted {
            kind: bounded(&value["kind"], MAX_KEY)?,
            target: Named::read(&value["target"]),
            to: Named::read(&value["to"]),
            text: value["text"]
                .as_str()
                .map(|text| crate::text::cap(text, MAX_TEXT)),
            button: value["button"].as_u64().unwrap_or(0),
            count: value["count"].as_u64().unwrap_or(1),
            key: bounded(&value["key"], MAX_KEY).unwrap_or_default(),
            modifiers: value["modifiers"].as_u64().unwrap_or(0),
            value: match &value["value"] {
                Value::Null => String::new(),
                given => bounded(given, MAX_VALUE)?,
            },
            files: value["files"]
                .as_array()
                .map(|files| {
                    files
                        .iter()
                        .take(MAX_FILES)
                        .filter_map(|f| bounded(f, MAX_LINE))
                        .collect()
                })
                .unwrap_or_default(),
            doc: bounded(&value["doc"], MAX_LINE).unwrap_or_default(),
        })
    }
}

/// Where a step's element was: its frame, its document and its collector key.
#[derive(Debug, Clone, PartialEq)]
struct Origin {
    frame: u32,
    doc: String,
    key: Option<u32>,
}

/// The steps of a recording, folded from the recorder's events: pure, unit-tested natively.
#[derive(Debug, Default)]
struct Fold {
    steps: Vec<RecordedStep>,
    /// Beside each step, where its element was.
    origins: Vec<Option<Origin>>,
    /// Each frame's document at its last event.
    docs: HashMap<u32, String>,
    omitted: u32,
}

impl Fold {
    /// Adds one event of frame `frame`.
    fn note(&mut self, frame: u32, event: Noted) {
        let new_document = self
            .docs
            .insert(frame, event.doc.clone())
            .is_some_and(|doc| doc != event.doc);
        let Some(target) = event.target.clone() else {
            if event.kind == "key" && !event.key.is_empty() {
                let step = Replay::PressKey {
                    key: event.key,
                    modifiers: modifiers(event.modifiers),
                    selector: None,
                };
                self.push(step, None, false);
            }
            return;
        };
        let origin = Origin {
            frame,
            doc: event.doc.clone(),
            key: target.key,
        };
        let step = match event.kind.as_str() {
            "click" => {
                let count = u32::try_from(event.count.max(1)).unwrap_or(1);
                if count > 1
                    && let Some(Replay::Click { click_count, .. }) =
                        self.last_on(&origin, &target.selector)
                {
                    *click_count = Some(count);
                    return;
                }
                Replay::Click {
                    selector: target.selector.clone(),
                    button: match event.button {
                        1 => Some(MouseButton::Middle),
                        2 => Some(MouseButton::Right),
                        _ => None,
                    },
                    click_count: (count > 1).then_some(count),
                }
            }
            "type" => {
                let typed = match &target.secret {
                    Some(kind) => Typed::Secret {
                        secret: kind.clone(),
                    },
                    None => Typed::Text(event.text.unwrap_or_default()),
                };
                if let Some(Replay::Type { text, .. }) = self.last_on(&origin, &target.selector) {
                    *text = typed;
                    return;
                }
                Replay::Type {
                    selector: target.selector.clone(),
                    text: typed,
                    clear: true,
                }
            }
            "select" => {
                if let Some(Replay::SelectOption { value, .. }) =
                    self.last_on(&origin, &target.selector)
                {
                    *value = event.value;
                    return;
                }
                Replay::SelectOption {
                    selector: target.selector.clone(),
                    value: event.value,
                }
            }
            // A character in a secret field is part of the secret, whatever modifier came with
            // it (AltGr is Ctrl+Alt, Option is Alt).
            "key" if target.secret.is_some() && event.key.chars().count() == 1 => return,
            "key" if !event.key.is_empty() => Replay::PressKey {
                key: event.key,
                modifiers: modifiers(event.modifiers),
                selector: Some(target.selector.clone()),
            },
            "drag" => match &event.to {
                Some(to) => Replay::Drag {
                    selector: target.selector.clone(),
                    to: to.selector.clone(),
                },
                None => return,
            },
            "upload" => Replay::Upload {
                selector: target.selector.clone(),
                files: event.files,
            },
            _ => return,
        };
        let element = RecordedElement {
            line: target.line,
            element_ref: None,
            frame_id: frame,
        };
        self.push(step, Some((element, origin)), new_document);
    }

    /// Adds a navigation the person made (typed, a bookmark, a reload).
    fn navigated(&mut self, url: String) {
        self.push(Replay::Navigate { url }, None, false);
    }

    /// Adds a dialog the page opened and the person answered.
    fn dialog(&mut self, dialog: String, accepted: bool) {
        self.push(Replay::Dialog { dialog, accepted }, None, false);
    }

    /// The last step, when it acts on `selector` in the same document.
    fn last_on(&mut self, origin: &Origin, selector: &str) -> Option<&mut Replay> {
        let last = self.origins.last()?.as_ref()?;
        if last.frame != origin.frame || last.doc != origin.doc {
            return None;
        }
        let step = &mut self.steps.last_mut()?.step;
        (step.selector() == Some(selector)).then_some(step)
    }

    /// Appends a step, after a wait for its element when it is the first in a new document
    /// (a click that loaded a page, a form that posted), unless a navigation step waits for
    /// the load already.
    fn push(
        &mut self,
        step: Replay,
        element: Option<(RecordedElement, Origin)>,
        new_document: bool,
    ) {
        let after_navigation = matches!(
            self.steps.last().map(|s| &s.step),
            Some(Replay::Navigate { .. })
        );
        let wait = (new_document && !after_navigation)
            .then(|| step.selector().map(str::to_owned))
            .flatten();
        let needed = 1 + usize::from(wait.is_some());
        if self.steps.len() + needed > MAX_RECORDED_STEPS {
            self.omitted += 1;
            return;
        }
        let (element, origin) = match element {
            Some((element, origin)) => (Some(element), Some(origin)),
            None => (None, None),
        };
        if let Some(selector) = wait {
            self.steps.push(RecordedStep {
                step: Replay::WaitFor { selector },
                element: element.clone(),
            });
            self.origins.push(origin.clone());
        }
        self.steps.push(RecordedStep { step, element });
        self.origins.push(origin);
    }

    /// The steps from `from` on, each element with its ref when `ref_of` finds one.
    fn steps_from(
        &self,
        from: usize,
        ref_of: impl Fn(&Origin) -> Option<tabwire_protocol::ElementRef>,
    ) -> Vec<RecordedStep> {
        self.steps
            .iter()
            .zip(&self.origins)
            .skip(from)
            .map(|(step, origin)| {
                let mut step = step.clone();
                if let (Some(element), Some(origin)) = (&mut step.element, origin) {
                    element.element_ref = ref_of(origin);
                }
                step
            })
            .collect()
    }
}

fn modifiers(bits: u64) -> Option<u8> {
    u8::try_from(bits & 15).ok().filter(|bits| *bits != 0)
}

/// One tab's recording.
#[derive(Debug, Default)]
struct Recorder {
    /// The agent's session that asked for it; `None` while only a handoff watches.
    session: Option<String>,
    /// The step that session's recording started at (a handoff's may have come before).
    agent_from: usize,
    /// The handoffs watching ([`Watch`]).
    handoffs: Vec<u64>,
    fold: Fold,
    /// Set once the person pressed *Stop*: nothing more is noted.
    ended_by: Option<RecordingEnd>,
    /// The tab's page, as its last top-frame navigation left it.
    top_url: String,
    /// The kind of the dialog open in the tab, until it closes.
    dialog: Option<String>,
}

impl Recorder {
    fn listening(&self) -> bool {
        self.ended_by.is_none() && (self.session.is_some() || !self.handoffs.is_empty())
    }
}

thread_local! {
    static NEXT_WATCH: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static RECORDERS: RefCell<BTreeMap<TabId, Recorder>> = const { RefCell::new(BTreeMap::new()) };
}

fn with_recorder<R>(tab: TabId, f: impl FnOnce(&mut Recorder) -> R) -> Option<R> {
    RECORDERS.with(|recorders| recorders.borrow_mut().get_mut(&tab).map(f))
}

/// Whether the policy lets agents have what a person does on a page at `url`.
fn recordable(url: &str) -> bool {
    matches!(crate::policy::check_url(url, Need::SensitiveRead), Ok(true))
}

/// One event from the recorder in frame `frame` of `tab`, whose URL Chrome gives as `url`
/// (background.js; the page cannot choose it), as the JSON the recorder sent.
pub fn on_recorded(tab: TabId, frame: u32, url: &str, json: &str) {
    let Ok(value) = serde_json::from_str::<Value>(json) else {
        return;
    };
    let Some(event) = Noted::read(&value) else {
        return;
    };
    // The agent's own input in the tab is trusted too: it is not the person's. The page says
    // when each event happened, which may be a moment before its report arrives.
    let at = value["at"].as_f64().unwrap_or_else(crate::timer::now_ms);
    let agent_acts = queue::agent_acted_at(tab, at);
    with_recorder(tab, |recorder| {
        if !recorder.listening() || agent_acts {
            return;
        }
        let top = if frame == 0 { url } else { &recorder.top_url };
        if recordable(url) && (top.is_empty() || recordable(top)) {
            recorder.fold.note(frame, event);
        } else {
            recorder.fold.omitted += 1;
        }
    });
}

/// The tab's document committed (`webNavigation.onCommitted`): a navigation the person made is
/// a step, and the new document gets the recorder once it is parsed. A page can reload itself
/// or redirect, which Chrome reports as the person's: a reload is a step only to the address
/// the tab showed, and nothing a redirect led to is.
fn on_committed(tab: TabId, frame: u32, url: &str, transition: &str, redirected: bool) {
    with_recorder(tab, |recorder| {
        if frame != 0 || !recorder.listening() {
            return;
        }
        let previous = std::mem::replace(&mut recorder.top_url, url.to_owned());
        let person = match transition {
            "typed" | "auto_bookmark" | "generated" | "keyword" | "start_page" => true,
            "reload" => previous == url,
            _ => false,
        };
        if !person || redirected || queue::agent_acted_at(tab, crate::timer::now_ms()) {
            return;
        }
        if recordable(url) {
            recorder.fold.navigated(url.to_owned());
        } else {
            recorder.fold.omitted += 1;
        }
    });
}

/// A CDP event of `tab` (the debugger forwards them all): a dialog the person answered is a
/// note (`handle_dialog` replays it).
pub fn on_debugger_event(tab: TabId, method: &str, params: &JsValue) {
    let opening = method == "Page.javascriptDialogOpening";
    if !opening && method != "Page.javascriptDialogClosed" {
        return;
    }
    let Ok(params) = chrome::from_js::<Value>(params.clone()) else {
        return;
    };
    let agent_acts = queue::agent_acted_at(tab, crate::timer::now_ms());
    with_recorder(tab, |recorder| {
        if opening {
            recorder.dialog = params["type"].as_str().map(str::to_owned);
            return;
        }
        let Some(kind) = recorder.dialog.take() else {
            return;
        };
        if !recorder.listening() || agent_acts {
            return;
        }
        if recordable(&recorder.top_url) {
            let accepted = params["result"].as_bool().unwrap_or(false);
            recorder.fold.dialog(kind, accepted);
        } else {
            recorder.fold.omitted += 1;
        }
    });
}

/// Runs the recorder in a frame's new document.
fn on_parsed(tab: TabId, frame: u32) {
    if with_recorder(tab, |recorder| recorder.listening()) == Some(true) {
        wasm_bindgen_futures::spawn_local(async move {
            listen(tab, &[frame], true).await;
        });
    }
}

/// Starts (`on`) or stops the recorder in `frames` of `tab` (all of them when empty). A frame
/// the policy keeps from sensitive reads is left out; one that cannot be scripted is logged.
async fn listen(tab: TabId, frames: &[u32], on: bool) {
    let all;
    let frames = if frames.is_empty() {
        all = match chrome::active_frames(tab).await {
            Ok(all) => all
                .iter()
                .filter_map(|f| u32::try_from(f.frame_id).ok())
                .collect::<Vec<_>>(),
            Err(error) => {
                chrome::log!("tab {tab}: its frames are unknown ({})", error.message);
                vec![0]
            }
        };
        &all
    } else {
        frames
    };
    let command = PageCommand::Record { on };
    if let Err(error) = page::run_all::<Value>(tab, frames, &command).await {
        chrome::log!(
            "tab {tab}: the recorder could not be switched ({})",
            error.message
        );
    }
}

/// Shows a recording on the toolbar button while the tab records.
fn show(tab: TabId, on: bool) {
    let text = json!({"tabId": tab, "text": if on { "REC" } else { "" }});
    let color = json!({"tabId": tab, "color": "#c5221f"});
    wasm_bindgen_futures::spawn_local(async move {
        if let (Ok(text), Ok(color)) = (chrome::to_js(&text), chrome::to_js(&color)) {
            if on {
                let _ = chrome::call(chrome::action_set_badge_background_color(&color)).await;
            }
            if let Err(e) = chrome::call(chrome::action_set_badge_text(&text)).await {
                chrome::log!("tab {tab}: could not set the badge ({})", e.message);
            }
        }
    });
}

/// `record_actions {start}` for `asker` on `tab`: the person is asked within `budget_ms`, then
/// the recorder runs in every frame.
pub async fn start(tab: TabId, asker: Asker, budget_ms: f64) -> Result<ActionRecording, OpError> {
    let Some(session) = asker.session.clone() else {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            "a recording belongs to an MCP session, and this request names none",
        ));
    };
    let owned = |session: &str| {
        with_recorder(tab, |r| match &r.session {
            Some(owner) if owner == session && r.ended_by.is_some() => Err(OpError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "The person stopped this session's recording of tab {tab}; call \
                     record_actions {{stop: true}} for its steps before starting another."
                ),
            )),
            Some(owner) if owner == session => Ok(true),
            Some(_) => Err(OpError::new(
                ErrorCode::TabLeased,
                format!("Tab {tab} is being recorded for another agent session; use another tab."),
            )),
            None => Ok(false),
        })
        .unwrap_or(Ok(false))
    };
    if owned(&session)? {
        return Ok(state(tab, true));
    }
    let origin_now = async || -> Result<(String, String), OpError> {
        let url = crate::chrome_tabs::get_tab(tab)
            .await?
            .url
            .unwrap_or_default();
        let origin = tabwire_protocol::policy::origin_of(&url).unwrap_or_else(|| url.clone());
        Ok((url, origin))
    };
    let (url, origin) = origin_now().await?;
    if !recordable(&url) {
        return Err(OpError::new(
            ErrorCode::OriginBlocked,
            "The policy does not let agents record what a person does on this page (its origin \
             keeps sensitive reads from agents); nothing is recorded.",
        ));
    }
    approvals::consent_to_recording(tab, &origin, asker, budget_ms).await?;
    // The person allowed a recording of the site they were shown, for this session alone.
    let (url, now) = origin_now().await?;
    if now != origin || !recordable(&url) {
        return Err(OpError::new(
            ErrorCode::DocumentChanged,
            "The tab left the site the person allowed recording on while they were asked; \
             nothing is recorded. Ask again on the page to record.",
        ));
    }
    if owned(&session)? {
        return Ok(state(tab, true));
    }
    let fresh = RECORDERS.with(|recorders| {
        let mut recorders = recorders.borrow_mut();
        let recorder = recorders.entry(tab).or_default();
        let fresh = !recorder.listening();
        if recorder.ended_by.is_some() {
            *recorder = Recorder::default();
        }
        recorder.session = Some(session);
        recorder.agent_from = recorder.fold.steps.len();
        recorder.top_url = url;
        fresh
    });
    if fresh {
        listen(tab, &[], true).await;
        // Dialogs are seen through tabwire's debugger session.
        if let Err(error) = crate::debugger::ensure_attached(tab).await {
            chrome::log!(
                "tab {tab}: dialogs will not be recorded ({})",
                error.message
            );
        }
    }
    show(tab, true);
    Ok(state(tab, true))
}

/// `record_actions {stop}` for `session`: the steps, and the recording ends.
pub fn stop(tab: TabId, session: &str) -> Result<ActionRecording, OpError> {
    let recorded = with_recorder(tab, |r| {
        (r.session.as_deref() == Some(session)).then(|| {
            let steps = r
                .fold
                .steps_from(r.agent_from, |origin| ref_of(tab, origin));
            (
                steps,
                r.fold.omitted,
                r.ended_by.unwrap_or(RecordingEnd::Agent),
            )
        })
    })
    .flatten();
    let Some((steps, omitted, ended_by)) = recorded else {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            format!(
                "This session is not recording tab {tab}. Start with record_actions {{start: \
                 true}}, let the person do the task, then stop."
            ),
        ));
    };
    end(tab, Some(session));
    Ok(ActionRecording {
        tab_id: tab,
        recording: false,
        steps,
        omitted,
        ended_by: Some(ended_by),
    })
}

fn state(tab: TabId, recording: bool) -> ActionRecording {
    ActionRecording {
        tab_id: tab,
        recording,
        steps: Vec::new(),
        omitted: 0,
        ended_by: None,
    }
}

/// The ref the element of a step has now, when its document is still the frame's and an
/// observation gave it one.
fn ref_of(tab: TabId, origin: &Origin) -> Option<tabwire_protocol::ElementRef> {
    let key = origin.key?;
    crate::refs::with_tables(|tables| {
        let doc = tables.get(tab, origin.frame)?.doc.as_ref()?;
        if doc.doc_token != origin.doc {
            return None;
        }
        let index = doc.refs.index_of(key)?;
        Some(crate::refs::element_ref(origin.frame, index))
    })
}

/// Ends the agent's part of `tab`'s recording (`session`'s; anyone's when `None`); the
/// recorder stops once no handoff watches either.
fn end(tab: TabId, session: Option<&str>) {
    let stopped = RECORDERS.with(|recorders| {
        let mut recorders = recorders.borrow_mut();
        let Some(recorder) = recorders.get_mut(&tab) else {
            return false;
        };
        if session.is_none_or(|s| recorder.session.as_deref() == Some(s)) {
            recorder.session = None;
        }
        if recorder.session.is_none() && recorder.handoffs.is_empty() {
            recorders.remove(&tab);
            return true;
        }
        false
    });
    if stopped {
        quiet(tab);
    }
}

/// Stops the recorder in the tab's pages and takes the badge down.
fn quiet(tab: TabId) {
    show(tab, false);
    wasm_bindgen_futures::spawn_local(async move {
        listen(tab, &[], false).await;
    });
}

/// The person pressed *Stop* in the popup: nothing more is noted, the steps wait for the
/// agent's `stop`. Returns whether the tab was recording.
pub fn stop_by_person(tab: TabId) -> bool {
    let stopped = with_recorder(tab, |recorder| {
        let listening = recorder.listening();
        if listening {
            recorder.ended_by = Some(RecordingEnd::Person);
        }
        listening
    })
    .unwrap_or(false);
    if stopped {
        quiet(tab);
    }
    stopped
}

/// A tab's recording as the popup lists it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Shown {
    /// The tab.
    pub tab_id: TabId,
    /// Steps so far.
    pub steps: usize,
    /// Made for a handoff (`request_human`) rather than an agent's recording.
    pub handoff: bool,
}

/// The recordings running, for the popup.
pub fn shown() -> Vec<Shown> {
    RECORDERS.with(|recorders| {
        recorders
            .borrow()
            .iter()
            .filter(|(_, r)| r.listening())
            .map(|(tab, r)| Shown {
                tab_id: *tab,
                steps: r.fold.steps.len(),
                handoff: r.session.is_none(),
            })
            .collect()
    })
}

/// `request_human`: hands `tab` over (approvals.rs) and returns what the person did
/// meanwhile, when the policy lets agents have it.
pub async fn hand_over(
    tab: TabId,
    asker: Asker,
    reason: String,
    budget_ms: f64,
) -> Result<HandedBack, OpError> {
    let url = crate::chrome_tabs::get_tab(tab)
        .await?
        .url
        .unwrap_or_default();
    let watched = recordable(&url)
        .then(|| {
            RECORDERS.with(|recorders| {
                let mut recorders = recorders.borrow_mut();
                let recorder = recorders.entry(tab).or_default();
                if recorder.ended_by.is_some() {
                    // The person stopped the agent's recording: a handoff does not restart it.
                    if recorder.session.is_some() {
                        return None;
                    }
                    *recorder = Recorder::default();
                }
                let fresh = !recorder.listening();
                if recorder.top_url.is_empty() {
                    recorder.top_url = url.clone();
                }
                let id = NEXT_WATCH.with(|next| {
                    next.set(next.get() + 1);
                    next.get()
                });
                recorder.handoffs.push(id);
                let from = recorder.fold.steps.len();
                Some((Watch { tab, from, id }, fresh))
            })
        })
        .flatten();
    if let Some((_, true)) = watched {
        listen(tab, &[], true).await;
        show(tab, true);
    }
    let answer = approvals::hand_over(tab, asker, reason, watched.is_some(), budget_ms).await;
    let Some((watch, _)) = watched else {
        return answer;
    };
    let recorded = with_recorder(tab, |recorder| {
        let steps = recorder
            .fold
            .steps_from(watch.from, |origin| ref_of(tab, origin));
        (steps, recorder.fold.omitted)
    });
    drop(watch);
    let mut back = answer?;
    if let Some((steps, omitted)) = recorded {
        back.steps = steps;
        back.omitted = omitted;
    }
    Ok(back)
}

/// A handoff's place in a tab's recording. Dropped however the handoff ends (answered,
/// cancelled, out of time, its connection gone), it takes the place out, and the recorder
/// stops unless an agent's recording goes on.
struct Watch {
    tab: TabId,
    from: usize,
    id: u64,
}

impl Drop for Watch {
    fn drop(&mut self) {
        let alone = with_recorder(self.tab, |recorder| {
            recorder.handoffs.retain(|id| *id != self.id);
            recorder.session.is_none() && recorder.handoffs.is_empty()
        });
        if alone == Some(true) {
            end(self.tab, None);
        }
    }
}

/// A closed tab's recording is gone.
pub fn forget(tab: TabId) {
    RECORDERS.with(|recorders| recorders.borrow_mut().remove(&tab));
}

/// A session ended: its recordings end.
pub fn session_ended(session: &str) {
    for tab in tabs() {
        end(tab, Some(session));
    }
}

/// The hub's connection ended: every recording ends, agents' and handoffs' (their sessions
/// were the hub's).
pub fn connection_ended() {
    for tab in tabs() {
        with_recorder(tab, |recorder| recorder.handoffs.clear());
        end(tab, None);
    }
}

fn tabs() -> Vec<TabId> {
    RECORDERS.with(|recorders| recorders.borrow().keys().copied().collect())
}

/// Listens to navigations: the new documents of recorded tabs get the recorder, and the
/// person's own navigations become steps. Called once at worker start, which also takes down
/// the badges a stopped worker left: its recordings ended with it.
pub fn install_listeners() {
    wasm_bindgen_futures::spawn_local(async {
        if let Ok(tabs) = crate::chrome_tabs::query(&json!({})).await {
            for tab in tabs.iter().filter_map(|t| TabId::try_from(t.id?).ok()) {
                show(tab, false);
            }
        }
    });
    let read = |details: &JsValue| -> Option<(TabId, u32, Value)> {
        let details = chrome::from_js::<Value>(details.clone()).ok()?;
        let tab = TabId::try_from(details["tabId"].as_i64()?).ok()?;
        let frame = u32::try_from(details["frameId"].as_i64()?).ok()?;
        Some((tab, frame, details))
    };
    let committed = Closure::<dyn FnMut(JsValue)>::new(move |details: JsValue| {
        if let Some((tab, frame, details)) = read(&details) {
            let url = details["url"].as_str().unwrap_or_default();
            let transition = details["transitionType"].as_str().unwrap_or_default();
            let redirected = details["transitionQualifiers"]
                .as_array()
                .is_some_and(|qualifiers| {
                    qualifiers
                        .iter()
                        .any(|q| matches!(q.as_str(), Some("client_redirect" | "server_redirect")))
                });
            on_committed(tab, frame, url, transition, redirected);
        }
    });
    let parsed = Closure::<dyn FnMut(JsValue)>::new(move |details: JsValue| {
        if let Some((tab, frame, _)) = read(&details) {
            on_parsed(tab, frame);
        }
    });
    chrome::web_navigation_on_committed(committed.as_ref().unchecked_ref());
    chrome::web_navigation_on_dom_content_loaded(parsed.as_ref().unchecked_ref());
    // The listeners live as long as the worker.
    committed.forget();
    parsed.forget();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(selector: &str) -> Named {
        Named {
            selector: selector.into(),
            line: format!("textbox \"{selector}\""),
            key: Some(7),
            secret: None,
        }
    }

    fn event(kind: &str, selector: &str, doc: &str) -> Noted {
        Noted {
            kind: kind.into(),
            target: Some(named(selector)),
            doc: doc.into(),
            count: 1,
            ..Noted::default()
        }
    }

    fn typed(selector: &str, text: &str, doc: &str) -> Noted {
        Noted {
            text: Some(text.into()),
            ..event("type", selector, doc)
        }
    }

    fn kinds(fold: &Fold) -> Vec<Value> {
        fold.steps
            .iter()
            .map(|s| serde_json::to_value(&s.step).unwrap())
            .collect()
    }

    #[test]
    fn keystrokes_in_one_field_are_one_type_step_and_a_secret_is_a_placeholder() {
        let mut fold = Fold::default();
        for text in ["a", "an", "ann"] {
            fold.note(0, typed("#user", text, "d1"));
        }
        let mut password = typed("#password", "S3cret", "d1");
        password.target.as_mut().unwrap().secret = Some("password field".into());
        fold.note(0, password.clone());
        password.text = None;
        fold.note(0, password);
        fold.note(0, typed("#user", "anna", "d1"));
        assert_eq!(
            kinds(&fold),
            vec![
                json!({"kind": "type", "selector": "#user", "text": "ann", "clear": true}),
                json!({"kind": "type", "selector": "#password", "text": {"secret": "password field"}, "clear": true}),
                json!({"kind": "type", "selector": "#user", "text": "anna", "clear": true}),
            ]
        );
        assert!(!format!("{:?}", fold.steps).contains("S3cret"));
    }

    #[test]
    fn the_first_step_in_a_new_document_waits_for_its_element() {
        let mut fold = Fold::default();
        fold.note(0, event("click", "#next", "d1"));
        fold.note(0, typed("#email", "a@b.c", "d2"));
        fold.note(0, event("click", "#submit", "d2"));
        // A navigation the person typed waits for the load itself.
        fold.navigated("https://example.com/x".into());
        fold.note(0, event("click", "#go", "d3"));
        assert_eq!(
            kinds(&fold),
            vec![
                json!({"kind": "click", "selector": "#next"}),
                json!({"kind": "waitFor", "selector": "#email"}),
                json!({"kind": "type", "selector": "#email", "text": "a@b.c", "clear": true}),
                json!({"kind": "click", "selector": "#submit"}),
                json!({"kind": "navigate", "url": "https://example.com/x"}),
                json!({"kind": "click", "selector": "#go"}),
            ]
        );
        // Another frame's first document is no new document.
        fold.note(3, event("click", "#in-frame", "f1"));
        assert_eq!(fold.steps.len(), 7);
        assert_eq!(fold.steps[6].element.as_ref().unwrap().frame_id, 3);
    }

    #[test]
    fn a_double_click_is_one_step_and_keys_drags_selects_uploads_and_dialogs_are_kept() {
        let mut fold = Fold::default();
        fold.note(0, event("click", "#row", "d1"));
        fold.note(
            0,
            Noted {
                count: 2,
                ..event("click", "#row", "d1")
            },
        );
        fold.note(
            0,
            Noted {
                button: 2,
                ..event("click", "#menu", "d1")
            },
        );
        fold.note(
            0,
            Noted {
                value: "b".into(),
                ..event("select", "#size", "d1")
            },
        );
        fold.note(
            0,
            Noted {
                value: "c".into(),
                ..event("select", "#size", "d1")
            },
        );
        fold.note(
            0,
            Noted {
                key: "Enter".into(),
                ..event("key", "#q", "d1")
            },
        );
        fold.note(
            0,
            Noted {
                key: "a".into(),
                modifiers: 2,
                target: None,
                ..event("key", "", "d1")
            },
        );
        fold.note(
            0,
            Noted {
                to: Some(named("#zone")),
                ..event("drag", "#card", "d1")
            },
        );
        fold.note(
            0,
            Noted {
                files: vec!["a.pdf".into()],
                ..event("upload", "#file", "d1")
            },
        );
        fold.note(
            0,
            Noted {
                to: None,
                ..event("drag", "#card", "d1")
            },
        );
        fold.dialog("confirm".into(), true);
        assert_eq!(
            kinds(&fold),
            vec![
                json!({"kind": "click", "selector": "#row", "clickCount": 2}),
                json!({"kind": "click", "selector": "#menu", "button": "right"}),
                json!({"kind": "selectOption", "selector": "#size", "value": "c"}),
                json!({"kind": "pressKey", "key": "Enter", "selector": "#q"}),
                json!({"kind": "pressKey", "key": "a", "modifiers": 2}),
                json!({"kind": "drag", "selector": "#card", "to": "#zone"}),
                json!({"kind": "upload", "selector": "#file", "files": ["a.pdf"]}),
                json!({"kind": "dialog", "dialog": "confirm", "accepted": true}),
            ]
        );
    }

    #[test]
    fn what_a_page_makes_too_long_or_a_secret_fields_characters_are_not_recorded() {
        let long = "#".to_owned() + &"x".repeat(MAX_SELECTOR);
        let value =
            json!({"kind": "click", "doc": "d1", "target": {"selector": long, "line": "x"}});
        let mut fold = Fold::default();
        fold.note(0, Noted::read(&value).unwrap());
        let too_long = json!({"kind": "select", "doc": "d1", "value": "v".repeat(MAX_VALUE + 1),
            "target": {"selector": "#s", "line": "x"}});
        assert!(Noted::read(&too_long).is_none());
        // AltGr+Q is "@" on a German keyboard: in a password field it is the secret's.
        let mut chord = Noted {
            key: "@".into(),
            modifiers: 3,
            ..event("key", "#password", "d1")
        };
        chord.target.as_mut().unwrap().secret = Some("password field".into());
        fold.note(0, chord.clone());
        chord.key = "Enter".into();
        chord.modifiers = 0;
        fold.note(0, chord);
        assert_eq!(
            kinds(&fold),
            vec![json!({"kind": "pressKey", "key": "Enter", "selector": "#password"})]
        );
    }

    #[test]
    fn a_full_recording_counts_what_it_leaves_out() {
        let mut fold = Fold::default();
        for i in 0..MAX_RECORDED_STEPS + 5 {
            fold.note(0, event("click", &format!("#b{i}"), "d1"));
        }
        assert_eq!(fold.steps.len(), MAX_RECORDED_STEPS);
        assert_eq!(fold.omitted, 5);
    }

    #[test]
    fn events_are_read_from_the_recorders_json() {
        let value = json!({
            "kind": "type", "doc": "tok",
            "target": {"selector": "#pw", "line": "textbox \"Password\"", "key": 4, "secret": "password field"},
        });
        let event = Noted::read(&value).unwrap();
        assert_eq!(event.kind, "type");
        assert_eq!(event.text, None);
        let target = event.target.unwrap();
        assert_eq!(
            (target.key, target.secret.as_deref()),
            (Some(4), Some("password field"))
        );
        // No kind, nothing; an element without a selector is no element.
        assert!(Noted::read(&json!({"doc": "x"})).is_none());
        assert!(Named::read(&json!({"selector": "", "line": "x"})).is_none());
    }

    #[test]
    fn refs_are_filled_in_for_steps_whose_element_still_lives() {
        let mut fold = Fold::default();
        fold.note(0, event("click", "#a", "d1"));
        fold.note(0, event("click", "#b", "d2"));
        let live = fold.steps_from(0, |origin| {
            (origin.doc == "d2").then(|| crate::refs::element_ref(0, 3))
        });
        // #a's document is gone; #b (after its wait) lives.
        assert_eq!(live[0].element.as_ref().unwrap().element_ref, None);
        assert_eq!(
            live[2]
                .element
                .as_ref()
                .unwrap()
                .element_ref
                .map(|r| r.to_string()),
            Some("@e3".to_owned())
        );
        assert_eq!(fold.steps_from(2, |_| None).len(), 1);
    }
}
