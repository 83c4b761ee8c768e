//! Trusted input through `chrome.debugger`: mouse, keys and text (CDP `Input.*`).
//!
//! The page sees these events with `event.isTrusted === true`, like a person's. Sequences that
//! must not be cut in half — a press without its release leaves the button held and turns
//! later mouse moves into drags; a key down without its key up leaves the key stuck — run in a
//! promise of their own that finishes even when the caller stops waiting (deadline, closed
//! connection, the hub's cancel). Typed keys go in pipelined runs: a run's events are all
//! issued at once, Chrome delivers them in order, and the answers are awaited together.
//!
//! Every run starts with its request's checkpoint ([`Checkpoint::dispatch`], never in the
//! middle of a run) and holds, until it ends, both its request's answer and its tab's queue
//! ([`queue::delivering`]): a request that stopped is answered only once its last event has
//! landed, and the next request on the tab starts only then, so the two never interleave
//! (issue 23). At most the run already handed to Chrome completes after a cancel. A run
//! holds them no longer than [`HOLD_LIMIT_MS`], or until a JavaScript dialog blocks its page:
//! a page that stopped answering must not keep its tab from everyone.

use std::pin::pin;

use serde_json::{Value, json};
use tabwire_protocol::{ErrorCode, MouseButton, OpError, TabId};
use wasm_bindgen::JsValue;

use crate::checkpoint::{Checkpoint, Dispatch};
use crate::debugger::{self, send, send_attached};
use crate::queue::{self, Delivering};
use crate::timer::{Either, select, sleep};

/// Events sent one after the other on the tab's debugger session.
type Events = Vec<(&'static str, Value)>;

/// How long a run may hold its tab and its request's answer. Runs take milliseconds (a drag's
/// path in a shown tab, under a second); one still going after this is stuck in a page that
/// stopped answering, and goes on without holding anything.
pub const HOLD_LIMIT_MS: f64 = 5_000.0;

/// A run's hold on its request's answer and its tab's queue, taken when the checkpoint lets
/// it through and dropped when the run ends.
struct Handed {
    tab: TabId,
    _request: Dispatch,
    _queue: Delivering,
}

/// Passes the checkpoint for a run on `tab` and takes the run's hold.
fn begin(tab: TabId, checkpoint: &Checkpoint) -> Result<Handed, OpError> {
    let request = checkpoint.dispatch()?;
    Ok(Handed {
        tab,
        _request: request,
        _queue: queue::delivering(tab),
    })
}

/// Sends `events` in order; on failure, says how many went out before it.
async fn send_all(tab: TabId, events: Events) -> Result<(), (usize, OpError)> {
    for (sent, (method, params)) in events.into_iter().enumerate() {
        send_attached(tab, method, &params)
            .await
            .map_err(|error| (sent, error))?;
    }
    Ok(())
}

/// Issues `events` all at once, so they travel together (Chrome takes them in order), then
/// waits for every answer; on failure, says how many were answered without error.
async fn send_pipelined(tab: TabId, events: Events) -> Result<(), (usize, OpError)> {
    let answers: Vec<_> = events
        .iter()
        .map(|(method, params)| debugger::issue_attached(tab, method, params))
        .collect();
    let (mut sent, mut failure) = (0, None);
    for answer in answers {
        match answer.await {
            Ok(_) => sent += 1,
            Err(error) => failure = failure.or(Some(error)),
        }
    }
    failure.map_or(Ok(()), |error| Err((sent, error)))
}

/// Runs `events` in order as a promise that finishes even if nobody awaits it any more (see the
/// module's comment). The session must already be attached: nothing here waits for an attach.
/// An error says the action may have happened only when an event had gone out before it.
async fn unstoppable(handed: Handed, events: Events) -> Result<(), OpError> {
    let tab = handed.tab;
    regardless(handed, done(send_all(tab, events)))
        .await
        .map(|_| ())
}

/// Like [`unstoppable`], with the events pipelined ([`send_pipelined`]).
async fn unstoppable_pipelined(handed: Handed, events: Events) -> Result<(), OpError> {
    let tab = handed.tab;
    regardless(handed, done(send_pipelined(tab, events)))
        .await
        .map(|_| ())
}

/// A run's outcome as its promise settles.
async fn done(
    sending: impl Future<Output = Result<(), (usize, OpError)>>,
) -> Result<JsValue, JsValue> {
    sending
        .await
        .map(|()| JsValue::UNDEFINED)
        .map_err(encode_failure)
}

/// Runs `sending` to its end in a promise of its own, whether or not the caller still waits,
/// holding `handed` until it ends, a dialog blocks the page or [`HOLD_LIMIT_MS`] pass.
async fn regardless(
    handed: Handed,
    sending: impl Future<Output = Result<JsValue, JsValue>> + 'static,
) -> Result<JsValue, OpError> {
    let run = wasm_bindgen_futures::future_to_promise(async move {
        let tab = handed.tab;
        let mut sending = pin!(sending);
        let blocked = select(sleep(HOLD_LIMIT_MS), debugger::dialog_opened(tab));
        match select(sending.as_mut(), blocked).await {
            Either::Left(outcome) => {
                drop(handed);
                outcome
            }
            Either::Right(why) => {
                let why = match why {
                    Either::Left(()) => format!("still going after {HOLD_LIMIT_MS} ms"),
                    Either::Right(_) => "a dialog blocks its page".to_owned(),
                };
                crate::chrome::log!("tab {tab}: an input run no longer holds the tab ({why})");
                drop(handed);
                sending.await
            }
        }
    });
    wasm_bindgen_futures::JsFuture::from(run)
        .await
        .map_err(decode_failure)
}

/// A failed run as its promise rejects: how many events went out before it, and why.
fn encode_failure((sent, error): (usize, OpError)) -> JsValue {
    JsValue::from_str(&format!("{sent}\n{}", error.message))
}

/// The error for a rejected run: the action may have happened only if an event went out.
fn decode_failure(failure: JsValue) -> OpError {
    let text = failure.as_string().unwrap_or_default();
    let (sent, message) = text.split_once('\n').unwrap_or(("1", "the input failed"));
    let error = OpError::new(ErrorCode::DebuggerUnavailable, message);
    if sent == "0" {
        error
    } else {
        error.action_may_have_occurred()
    }
}

fn mouse(kind: &str, x: f64, y: f64, button: &str, buttons: u32, count: u32) -> Value {
    json!({"type": kind, "x": x, "y": y, "button": button, "buttons": buttons, "clickCount": count})
}

/// Moves the mouse to (x, y), CSS pixels of the viewport, once the checkpoint lets it.
pub async fn move_to(tab: TabId, x: f64, y: f64, checkpoint: &Checkpoint) -> Result<(), OpError> {
    let handed = begin(tab, checkpoint)?;
    let moved = mouse("mouseMoved", x, y, "none", 0, 0);
    unstoppable(handed, vec![("Input.dispatchMouseEvent", moved)]).await
}

#[wasm_bindgen::prelude::wasm_bindgen(module = "/js/page.js")]
extern "C" {
    #[wasm_bindgen(catch, js_name = nextFrame)]
    fn next_frame(tab_id: u32) -> Result<js_sys::Promise, JsValue>;
}

/// Waits until the tab's top document has run an animation frame, and the tasks its callbacks
/// queued (at most about 100 ms in a tab that draws none). A failure (the document went away)
/// is no reason not to go on: the press that follows reports its own.
///
/// It starts once the move is answered (delivered), not beside it: a script injected together
/// with the move and counting the frame from the moment the page shows the pointer there (its
/// `:hover`) saved no time measurably (Chrome delivers the move at the next frame either way)
/// and, under load, let a press through before a hover-armed widget had armed itself.
async fn let_page_see_the_move(tab: TabId) {
    if let Ok(promise) = next_frame(tab) {
        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    }
}

/// Clicks (x, y) `count` times with `button`, moving the mouse there first when `with_move`.
/// The checkpoint is passed before the move and again before the press: a move can wait for a
/// frame of a busy page, and the deadline may pass meanwhile.
///
/// Between the move and the press the page is given one animation frame, as a person's hand
/// rests a moment before pressing: widgets that arm themselves on hover (a listener added on
/// `pointerenter`, state rendered on the next frame, a click ignored unless the pointer was
/// seen there) then take the first click, not only the second. It costs one script injection
/// and the rest of the current frame (under 17 ms at 60 Hz; a 2 ms round trip in a tab that
/// draws on demand), and only clicks with a move pay it. The press and release then go out
/// together (Chrome takes a session's input events in order): one round trip, not two.
///
/// Chrome delivers mouse moves in step with frames, and a background tab draws none: a move
/// there waits about 5 s for Chrome's input timeout (measured), while presses and releases
/// arrive at once. So a click in a background tab goes without the move; the page still sees
/// the pointer enter the element (Chrome updates hover on the press).
pub async fn click(
    tab: TabId,
    at: (f64, f64),
    button: MouseButton,
    count: u32,
    with_move: bool,
    checkpoint: &Checkpoint,
) -> Result<(), OpError> {
    let (x, y) = at;
    if with_move {
        move_to(tab, x, y, checkpoint).await?;
        let_page_see_the_move(tab).await;
    }
    let handed = begin(tab, checkpoint)?;
    // Chrome takes a session's input events in order: the release waits for no answer.
    unstoppable_pipelined(handed, click_events(at, button, count)).await
}

/// A click's presses, each followed by its release, in one run.
fn click_events((x, y): (f64, f64), button: MouseButton, count: u32) -> Events {
    let (name, bit) = button.cdp();
    let mut events = Vec::new();
    for n in 1..=count.max(1) {
        events.push((
            "Input.dispatchMouseEvent",
            mouse("mousePressed", x, y, name, bit, n),
        ));
        events.push((
            "Input.dispatchMouseEvent",
            mouse("mouseReleased", x, y, name, 0, n),
        ));
    }
    events
}

/// The first move of a drag, in CSS pixels along its way: past the distance at which pages
/// start a drag (jQuery UI's 1 px, Chrome's HTML5 drag threshold, the activation distances of
/// a few pixels commonly set with dnd-kit or SortableJS), while the pointer is still near its
/// press.
const DRAG_NUDGE_PX: f64 = 10.0;
/// The longest move after the first, about a list row: the page sees the pointer travel over
/// what lies between the two ends, as a hand would move it.
const DRAG_STEP_PX: f64 = 40.0;
/// How many steps a drag takes from its first move to its destination, whatever its length.
const DRAG_STEPS: std::ops::RangeInclusive<u32> = 3..=10;

/// The points a drag's pointer moves through after the press at `from`: a short first move
/// that starts the page's drag, steps of at most [`DRAG_STEP_PX`] to `to` (longer when that
/// would take more steps than [`DRAG_STEPS`] allows), and a second move at `to`. Libraries
/// decide where an item goes from the moves they see, often one move late (a placeholder that
/// moved shifts the layout under a pointer that has not), so the last move repeats the
/// destination for them to look again.
fn drag_path(from: (f64, f64), to: (f64, f64)) -> Vec<(f64, f64)> {
    let (dx, dy) = (to.0 - from.0, to.1 - from.1);
    let distance = dx.hypot(dy);
    if distance < 0.5 {
        return vec![to, to];
    }
    let nudge = DRAG_NUDGE_PX.min(distance);
    let first = (
        from.0 + dx * nudge / distance,
        from.1 + dy * nudge / distance,
    );
    let mut path = vec![first];
    let rest = distance - nudge;
    if rest > 0.0 {
        // Clamped to `DRAG_STEPS`, so the cast never truncates a count that matters.
        let steps =
            ((rest / DRAG_STEP_PX).ceil() as u32).clamp(*DRAG_STEPS.start(), *DRAG_STEPS.end());
        for step in 1..steps {
            let t = f64::from(step) / f64::from(steps);
            path.push((
                first.0 + (to.0 - first.0) * t,
                first.1 + (to.1 - first.1) * t,
            ));
        }
        path.push(to);
    }
    path.push(to);
    path
}

/// Presses on `from`, moves along [`drag_path`] to `to` and releases there, all in one
/// unstoppable run whose release (and the end of drag interception) happen whatever fails
/// before them. With Chrome's drag interception on, an HTML5 drag that a move starts is handed
/// back to tabwire (`Input.dragIntercepted`); the rest of the path is then delivered as drag
/// events (`Input.dispatchDragEvent`, which headless and headed Chrome both honour) and the
/// drop at `to`, instead of mouse moves the page would not see during a drag. Returns whether
/// an HTML5 drag was delivered. The checkpoint is passed before interception is turned on.
pub async fn drag(
    tab: TabId,
    from: (f64, f64),
    to: (f64, f64),
    checkpoint: &Checkpoint,
) -> Result<bool, OpError> {
    let handed = begin(tab, checkpoint)?;
    debugger::take_drag(tab);
    send(tab, "Input.setInterceptDrags", &json!({"enabled": true})).await?;
    let press = vec![
        (
            "Input.dispatchMouseEvent",
            mouse("mouseMoved", from.0, from.1, "none", 0, 0),
        ),
        (
            "Input.dispatchMouseEvent",
            mouse("mousePressed", from.0, from.1, "left", 1, 1),
        ),
    ];
    let path = drag_path(from, to);
    let release = vec![
        (
            "Input.dispatchMouseEvent",
            mouse("mouseReleased", to.0, to.1, "left", 0, 1),
        ),
        ("Input.setInterceptDrags", json!({"enabled": false})),
    ];
    let run = async move {
        let pressed = press.len();
        let mut moved = send_all(tab, press).await;
        // Mouse moves with the button held, until one starts an HTML5 drag.
        let mut html5 = None;
        if moved.is_ok() {
            for (n, &(x, y)) in path.iter().enumerate() {
                let step = mouse("mouseMoved", x, y, "left", 1, 0);
                if let Err(error) = send_attached(tab, "Input.dispatchMouseEvent", &step).await {
                    moved = Err((pressed + n, error));
                    break;
                }
                if let Some(data) = debugger::take_drag(tab) {
                    html5 = Some((data, &path[n + 1..]));
                    break;
                }
            }
        }
        // The HTML5 drag: entering at the next point of the path, over the rest, dropped at `to`.
        let dropped = match (&moved, html5) {
            (Ok(()), Some((data, rest))) => {
                let drag_event = |kind: &str, (x, y): (f64, f64)| {
                    (
                        "Input.dispatchDragEvent",
                        json!({"type": kind, "x": x, "y": y, "data": data.clone()}),
                    )
                };
                // The path ends at `to` twice; a drag that started later still enters there.
                let fallback = [to, to];
                let points = if rest.len() >= 2 { rest } else { &fallback[..] };
                let mut drops = vec![drag_event("dragEnter", points[0])];
                drops.extend(
                    points[1..]
                        .iter()
                        .map(|&point| drag_event("dragOver", point)),
                );
                drops.push(drag_event("drop", to));
                send_all(tab, drops).await.map(|()| true)
            }
            _ => Ok(false),
        };
        // The button is released and interception ended, whatever happened above.
        let released = send_all(tab, release).await;
        moved.map_err(encode_failure)?;
        let html5 = dropped.map_err(|(_, error)| encode_failure((1, error)))?;
        released.map_err(|(_, error)| encode_failure((1, error)))?;
        Ok::<_, JsValue>(JsValue::from_bool(html5))
    };
    regardless(handed, run)
        .await
        .map(|value| value.as_bool().unwrap_or(false))
}

/// A key as CDP wants it.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyDef {
    /// `KeyboardEvent.key`.
    pub key: String,
    /// `KeyboardEvent.code`.
    pub code: String,
    /// The Windows virtual key code Chrome derives `keyCode` from.
    pub key_code: u32,
    /// The text the key types, if any.
    pub text: String,
}

/// The named keys tabwire accepts, with their code and key code.
const NAMED_KEYS: &[(&str, &str, u32, &str)] = &[
    ("Enter", "Enter", 13, "\r"),
    ("Tab", "Tab", 9, ""),
    ("Escape", "Escape", 27, ""),
    ("Backspace", "Backspace", 8, ""),
    ("Delete", "Delete", 46, ""),
    ("Insert", "Insert", 45, ""),
    ("ArrowUp", "ArrowUp", 38, ""),
    ("ArrowDown", "ArrowDown", 40, ""),
    ("ArrowLeft", "ArrowLeft", 37, ""),
    ("ArrowRight", "ArrowRight", 39, ""),
    ("Home", "Home", 36, ""),
    ("End", "End", 35, ""),
    ("PageUp", "PageUp", 33, ""),
    ("PageDown", "PageDown", 34, ""),
    ("Space", "Space", 32, " "),
];

/// Modifier bits (SPEC §5): Alt=1, Control=2, Meta=4, Shift=8 — CDP's own encoding.
const SHIFT: u8 = 8;
const TYPING_BLOCKED_BY: u8 = 1 | 2 | 4;

/// Looks up a named key, F1–F12, or a single character.
pub fn key_def(name: &str, modifiers: u8) -> Result<KeyDef, OpError> {
    if let Some((key, code, key_code, text)) = NAMED_KEYS.iter().find(|(n, ..)| *n == name) {
        let key = if *key == "Space" { " " } else { key };
        return Ok(KeyDef {
            key: key.to_string(),
            code: code.to_string(),
            key_code: *key_code,
            text: text.to_string(),
        });
    }
    if let Some(n) = name.strip_prefix('F').and_then(|n| n.parse::<u32>().ok())
        && (1..=12).contains(&n)
    {
        return Ok(KeyDef {
            key: name.to_string(),
            code: name.to_string(),
            key_code: 111 + n,
            text: String::new(),
        });
    }
    let mut chars = name.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            format!(
                "`{name}` is not a key tabwire knows: use a named key (Enter, Tab, Escape, \
                 Backspace, Delete, ArrowUp/Down/Left/Right, Home, End, PageUp, PageDown, Space, \
                 F1–F12) or exactly one character"
            ),
        ));
    };
    let c = if modifiers & SHIFT != 0 {
        c.to_uppercase().next().unwrap_or(c)
    } else {
        c
    };
    let upper = c.to_ascii_uppercase();
    let (code, key_code) = if upper.is_ascii_alphabetic() {
        (format!("Key{upper}"), upper as u32)
    } else if c.is_ascii_digit() {
        (format!("Digit{c}"), c as u32)
    } else {
        (String::new(), 0)
    };
    Ok(KeyDef {
        key: c.to_string(),
        code,
        key_code,
        text: c.to_string(),
    })
}

fn key_events(def: &KeyDef, modifiers: u8) -> Events {
    // With Control, Alt or Meta held a key is a shortcut, not typing.
    let text = if modifiers & TYPING_BLOCKED_BY != 0 {
        ""
    } else {
        def.text.as_str()
    };
    let down = json!({
        "type": if text.is_empty() { "rawKeyDown" } else { "keyDown" },
        "key": def.key, "code": def.code, "windowsVirtualKeyCode": def.key_code,
        "modifiers": modifiers, "text": text, "unmodifiedText": text,
    });
    let up = json!({
        "type": "keyUp", "key": def.key, "code": def.code,
        "windowsVirtualKeyCode": def.key_code, "modifiers": modifiers,
    });
    vec![
        ("Input.dispatchKeyEvent", down),
        ("Input.dispatchKeyEvent", up),
    ]
}

/// Presses and releases one key with `modifiers` held, once the checkpoint lets it.
pub async fn press_key(
    tab: TabId,
    def: &KeyDef,
    modifiers: u8,
    checkpoint: &Checkpoint,
) -> Result<(), OpError> {
    let handed = begin(tab, checkpoint)?;
    unstoppable(handed, key_events(def, modifiers)).await
}

/// Inserts `text` into the focused element as one trusted edit, once the checkpoint lets it.
pub async fn insert_text(tab: TabId, text: &str, checkpoint: &Checkpoint) -> Result<(), OpError> {
    let handed = begin(tab, checkpoint)?;
    let insert = ("Input.insertText", json!({ "text": text }));
    unstoppable(handed, vec![insert]).await
}

/// How many characters' key events go to Chrome in one pipelined run: enough that sending
/// costs no more than the renderer's handling of each key (about 1 ms a character; one event
/// after the other's answer cost twice that, measured), few enough that the deadline is
/// checked often.
const KEYS_PER_RUN: usize = 20;

/// Types `text` into the focused element as a key down/up per character, in pipelined runs
/// of [`KEYS_PER_RUN`] characters. The checkpoint is passed before every run: a long text
/// stops at the deadline or a cancel between two runs, and the run under way lands whole.
pub async fn type_keys(tab: TabId, text: &str, checkpoint: &Checkpoint) -> Result<(), OpError> {
    let chars: Vec<char> = text.chars().collect();
    let mut typed = 0;
    for chunk in chars.chunks(KEYS_PER_RUN) {
        let mut events = Vec::new();
        for c in chunk {
            let def = if *c == '\n' {
                key_def("Enter", 0)?
            } else {
                key_def(&c.to_string(), 0)?
            };
            events.extend(key_events(&def, 0));
        }
        let stopped = |mut error: OpError| {
            if typed > 0 {
                error.message = format!(
                    "{} ({typed} of {} characters were typed)",
                    error.message,
                    chars.len()
                );
                error = error.action_may_have_occurred();
            }
            error
        };
        let handed = begin(tab, checkpoint).map_err(stopped)?;
        unstoppable_pipelined(handed, events)
            .await
            .map_err(stopped)?;
        typed += chunk.len();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_cdp() {
        let enter = key_def("Enter", 0).unwrap();
        assert_eq!((enter.key_code, enter.text.as_str()), (13, "\r"));
        assert_eq!(key_def("Space", 0).unwrap().key, " ");
        assert_eq!(key_def("F5", 0).unwrap().key_code, 116);
        let a = key_def("a", 0).unwrap();
        assert_eq!(
            (a.code.as_str(), a.key_code, a.text.as_str()),
            ("KeyA", 65, "a")
        );
        assert_eq!(key_def("a", SHIFT).unwrap().key, "A");
        assert_eq!(key_def("7", 0).unwrap().code, "Digit7");
        assert_eq!(
            key_def("Return", 0).unwrap_err().code,
            ErrorCode::InvalidArgument
        );
        assert!(key_def("F13", 0).is_err());
    }

    #[test]
    fn a_drag_starts_small_travels_in_steps_and_ends_twice_at_its_point() {
        let path = drag_path((20.0, 20.0), (20.0, 110.0));
        // 10 px first, then 80 px in three steps (at least three), then the point again.
        let ys: Vec<f64> = path
            .iter()
            .map(|&(_, y)| (y * 10.0).round() / 10.0)
            .collect();
        assert_eq!(ys, [30.0, 56.7, 83.3, 110.0, 110.0]);
        assert!(path.iter().all(|&(x, _)| x == 20.0));
        // A long drag: ten steps, longer than 40 px.
        let long = drag_path((0.0, 0.0), (300.0, 400.0));
        assert_eq!(long[0], (6.0, 8.0));
        assert_eq!(long.len(), 1 + 10 + 1);
        let far = drag_path((0.0, 0.0), (0.0, 2000.0));
        assert_eq!(far.len(), 1 + 10 + 1);
        for pair in long.windows(2) {
            let step = (pair[1].0 - pair[0].0).hypot(pair[1].1 - pair[0].1);
            assert!(step <= 49.1, "{step}");
        }
        assert_eq!(long[10], (300.0, 400.0));
        assert_eq!(long[11], (300.0, 400.0));
        // Shorter than the first move: straight there, twice.
        assert_eq!(drag_path((0.0, 0.0), (4.0, 0.0)), [(4.0, 0.0), (4.0, 0.0)]);
        assert_eq!(drag_path((5.0, 5.0), (5.0, 5.0)), [(5.0, 5.0), (5.0, 5.0)]);
    }

    /// What a run leaves held: the buttons and keys pressed and not released at its end.
    fn held_after(events: &Events) -> Vec<String> {
        let mut held = Vec::new();
        for (method, params) in events {
            let what = match *method {
                "Input.dispatchMouseEvent" => params["button"].to_string(),
                "Input.dispatchKeyEvent" => params["key"].to_string(),
                _ => continue,
            };
            match params["type"].as_str().unwrap() {
                "mousePressed" | "keyDown" | "rawKeyDown" => held.push(what),
                "mouseReleased" | "keyUp" => {
                    let at = held.iter().position(|h| *h == what);
                    held.remove(at.expect("a release follows its press"));
                }
                _ => {}
            }
        }
        held
    }

    #[test]
    fn every_press_is_released_in_its_own_run() {
        // A run is handed to Chrome whole and lands whole, even after a cancel: a press and its
        // release are never in two runs, so a cancel between runs leaves nothing held.
        for count in 1..=3 {
            let events = click_events((5.0, 5.0), MouseButton::Right, count);
            assert_eq!(events.len() as u32, 2 * count);
            assert!(held_after(&events).is_empty());
        }
        for (key, modifiers) in [("a", 0), ("Enter", 0), ("c", 2), ("F5", 8)] {
            let events = key_events(&key_def(key, modifiers).unwrap(), modifiers);
            assert!(held_after(&events).is_empty(), "{key}");
        }
    }

    #[test]
    fn shortcuts_type_nothing() {
        let a = key_def("a", 0).unwrap();
        let events = key_events(&a, 2);
        assert_eq!(events[0].1["type"], "rawKeyDown");
        assert_eq!(events[0].1["text"], "");
        assert_eq!(key_events(&a, 0)[0].1["type"], "keyDown");
    }
}
