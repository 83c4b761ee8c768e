//! Which elements of a tab's top document have click listeners, for the collector's walk
//! (`listened` in js/collector/12-listeners.js): an icon or a span given a click listener by
//! script, with no pointer cursor, no `onclick` attribute and no role, is found only this way.
//!
//! The listeners live in the page's main world, which the collector (an isolated world) cannot
//! read. Before each observation of the top document, through the tab's debugger session:
//! 1. one `Runtime.evaluate` in the main world installs an answerer (replacing this worker's
//!    earlier one) and returns the function that hands it elements;
//! 2. `DOMDebugger.getEventListeners` with `depth: -1` and `pierce: true` lists the listeners
//!    of the whole document, open shadow roots and same-process frames included, each with
//!    its `backendNodeId`;
//! 3. the elements with a click, mousedown, mouseup, pointerdown or pointerup listener (at
//!    most [`MOST_ELEMENTS`], in document order) are resolved (`DOM.resolveNode`) and handed
//!    to the answerer (`Runtime.callFunctionOn`), all pipelined.
//!
//! The document and the answerer stay with the tab ([`Kept`]): later observations take one
//! round trip (the listing) unless an element started listening (it is resolved and handed
//! over) or stopped (the answerer starts afresh); a navigation makes the kept objects fail
//! and everything is done anew.
//!
//! At the start of its walk the collector dispatches the question event on `window`; the
//! answerer dispatches a marker event on each element it holds (weakly), which the collector
//! records. Elements of other frames' documents are refused by `callFunctionOn` (another
//! context) and left out. Events of a name secret to this worker are the only trace in the page.
//!
//! Measured (headless Chromium, CDP over a pipe): the listing costs ~3 ms on a 10,000-row
//! table with one delegated listener, but ~0.1 ms per listener (Chrome resolves each handler's
//! source): 1.1–1.8 s with a listener on each of 10,000 rows. A listing of more than
//! [`COSTLY_LISTENERS`] that took more than [`COSTLY_MS`] is not taken again while the tab stays on its URL: later observations there
//! use the elements it handed over.
//! `getEventListeners` of DevTools' command line, which would answer per element, is not
//! available to extensions (`Runtime.evaluate` with `includeCommandLineAPI` through
//! `chrome.debugger` throws "getEventListeners is not defined").

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::TabId;
use tabwire_protocol::policy::Need;

use crate::timer::now_ms;
use crate::{chrome, debugger, policy};

/// The most elements handed to the collector per observation.
const MOST_ELEMENTS: usize = 300;
/// A listing that took longer (ms) is not taken again while the tab stays on its URL.
const COSTLY_MS: f64 = 25.0;
/// ... when it listed more listeners than this (a short list is slow only on a loaded machine).
const COSTLY_LISTENERS: usize = 100;
/// The event types that make an element clickable.
const CLICK_TYPES: [&str; 5] = ["click", "mousedown", "mouseup", "pointerdown", "pointerup"];
/// Where the kept remote objects of a tab's top document live (its `document` and the
/// answerer's hand-over function), released when a listing with them fails.
const GROUP: &str = "tabwire-listeners";
/// Where the elements one listing resolves live, released after it.
const RESOLVED: &str = "tabwire-listeners-resolved";

thread_local! {
    /// The question's event name: random per worker, so a page cannot guess it in advance.
    static NAME: String = format!(
        "tabwire-listens-{:08x}{:08x}",
        (js_sys::Math::random() * 4_294_967_296.0) as u32,
        (js_sys::Math::random() * 4_294_967_296.0) as u32
    );
    /// The URL of each tab whose document's listing was costly (see [`COSTLY_MS`]).
    static TOO_MANY: RefCell<HashMap<TabId, String>> = RefCell::new(HashMap::new());
    /// What each tab's top document holds of the last listing.
    static KEPT: RefCell<HashMap<TabId, Kept>> = RefCell::new(HashMap::new());
}

/// A tab's top document as the last listing left it: its `document` and its answerer's
/// hand-over function as remote objects (valid until the document's context goes: a
/// navigation makes the next listing fail with them and start over), and the elements handed
/// over already.
struct Kept {
    document: String,
    register: String,
    handed: HashSet<u64>,
}

/// How a tab's debugger session is got for the listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attach {
    /// Attach when the top document's policy lets agents act there without a person's
    /// approval (a whole-document observation: the controls it shows are the ones an agent
    /// will click, and it would attach at its first click anyway).
    WhenActing,
    /// Only when tabwire is attached already (a wait's polling walk attaches nothing).
    IfAttached,
}

#[derive(Deserialize)]
struct Evaluated {
    result: RemoteObject,
    #[serde(rename = "exceptionDetails")]
    exception: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Resolved {
    object: RemoteObject,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RemoteObject {
    object_id: Option<String>,
}

#[derive(Deserialize)]
struct Listing {
    listeners: Vec<Listener>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Listener {
    #[serde(rename = "type")]
    kind: String,
    backend_node_id: Option<u64>,
}

/// The event name the collector dispatches to get the elements with click listeners, with the
/// main world's answerer installed in `tab`'s top document; `None` when there is no
/// debugger session to list them with, or the listing failed (the page is then walked
/// without listeners).
pub async fn question(tab: TabId, attach: Attach) -> Option<String> {
    if let Some(costly) = TOO_MANY.with(|t| t.borrow().get(&tab).cloned()) {
        match policy::frame_url(tab, 0).await {
            // The last listing stands (the answerer still holds its elements; after a reload
            // it is gone, does not answer, and nothing is found).
            Ok(url) if url == costly => {
                return KEPT
                    .with(|k| k.borrow().contains_key(&tab))
                    .then(|| NAME.with(Clone::clone));
            }
            _ => TOO_MANY.with(|t| t.borrow_mut().remove(&tab)),
        };
    }
    if !debugger::is_attached(tab) {
        if attach == Attach::IfAttached
            || !matches!(policy::check_frame(tab, 0, Need::Act).await, Ok(None))
        {
            return None;
        }
        debugger::ensure_attached(tab).await.ok()?;
    }
    let name = NAME.with(Clone::clone);
    // A listing with the kept objects: a single round trip when nothing new listens.
    let mut result = match KEPT.with(|k| k.borrow_mut().remove(&tab)) {
        Some(kept) => list(tab, kept).await,
        None => Err("nothing kept".to_owned()),
    };
    if result.is_err() {
        let _ = debugger::issue_attached(
            tab,
            "Runtime.releaseObjectGroup",
            &json!({ "objectGroup": GROUP }),
        )
        .await;
        result = match install(tab, &name).await {
            Ok(kept) => list(tab, kept).await,
            Err(why) => Err(why),
        };
    }
    // The resolved elements are let go; the document and the answerer are kept.
    let _ = debugger::issue_attached(
        tab,
        "Runtime.releaseObjectGroup",
        &json!({ "objectGroup": RESOLVED }),
    )
    .await;
    match result {
        Ok(kept) => {
            KEPT.with(|k| k.borrow_mut().insert(tab, kept));
            Some(name)
        }
        Err(why) => {
            chrome::log!("tab {tab}: listeners not listed ({why})");
            None
        }
    }
}

/// Step 1: installs the answerer in the top document's main world.
async fn install(tab: TabId, name: &str) -> Result<Kept, String> {
    let installer = format!(
        "(() => {{ const name = {name:?}; let held = []; \
         window.dispatchEvent(new Event(name + '-off')); \
         const answer = (e) => {{ e.stopImmediatePropagation(); e.preventDefault(); \
           for (const ref of held) {{ const el = ref.deref(); \
             if (el !== undefined) el.dispatchEvent(new Event(name + '!', {{ composed: true }})); }} }}; \
         const off = (e) => {{ e.stopImmediatePropagation(); \
           window.removeEventListener(name, answer, true); window.removeEventListener(name + '-off', off, true); }}; \
         window.addEventListener(name, answer, true); window.addEventListener(name + '-off', off, true); \
         return (el) => {{ held.push(new WeakRef(el)); }}; }})()"
    );
    let evaluate = |expression: &str| {
        debugger::issue_attached(
            tab,
            "Runtime.evaluate",
            &json!({ "expression": expression, "objectGroup": GROUP, "silent": true }),
        )
    };
    let register = evaluate(&installer);
    let document = evaluate("document");
    let register = object_of(register.await)?;
    let document = object_of(document.await)?;
    Ok(Kept {
        document,
        register,
        handed: HashSet::new(),
    })
}

/// Steps 2 and 3: lists the listeners and hands the elements not handed yet to the answerer.
async fn list(tab: TabId, mut kept: Kept) -> Result<Kept, String> {
    let asked = now_ms();
    let listing = debugger::issue_attached(
        tab,
        "DOMDebugger.getEventListeners",
        &json!({ "objectId": kept.document, "depth": -1, "pierce": true }),
    )
    .await
    .map_err(|e| e.message)?;
    let listing: Listing = chrome::from_js(listing).map_err(|e| e.message)?;
    if now_ms() - asked > COSTLY_MS
        && listing.listeners.len() > COSTLY_LISTENERS
        && let Ok(url) = policy::frame_url(tab, 0).await
    {
        chrome::log!(
            "tab {tab}: listing {} listeners took {:.0} ms: not listed again on this URL",
            listing.listeners.len(),
            now_ms() - asked
        );
        TOO_MANY.with(|t| t.borrow_mut().insert(tab, url));
    }
    let mut seen = HashSet::new();
    let listed: Vec<u64> = listing
        .listeners
        .iter()
        .filter(|l| CLICK_TYPES.contains(&l.kind.as_str()))
        .filter_map(|l| l.backend_node_id)
        .filter(|id| seen.insert(*id))
        .take(MOST_ELEMENTS)
        .collect();
    // An element handed over that no longer listens (or left): the answerer starts afresh.
    let listed_set: HashSet<u64> = listed.iter().copied().collect();
    if kept.handed.iter().any(|id| !listed_set.contains(id)) {
        return Err("an element stopped listening".to_owned());
    }
    let ids: Vec<u64> = listed
        .into_iter()
        .filter(|id| !kept.handed.contains(id))
        .collect();
    let resolving: Vec<_> = ids
        .iter()
        .map(|id| {
            debugger::issue_attached(
                tab,
                "DOM.resolveNode",
                &json!({ "backendNodeId": id, "objectGroup": RESOLVED }),
            )
        })
        .collect();
    let mut handing = Vec::with_capacity(resolving.len());
    for resolved in resolving {
        let Ok(resolved) = resolved.await else {
            continue;
        };
        let Ok(Resolved {
            object: RemoteObject {
                object_id: Some(element),
            },
        }) = chrome::from_js(resolved)
        else {
            continue;
        };
        handing.push(debugger::issue_attached(
            tab,
            "Runtime.callFunctionOn",
            &json!({
                "objectId": element,
                "functionDeclaration": "function (register) { if (this.nodeType === 1) register(this); }",
                "arguments": [{ "objectId": kept.register }],
                "silent": true,
            }),
        ));
    }
    // Each id once: an element of another frame's document is refused (another context) and
    // not tried again.
    kept.handed.extend(ids);
    for handed in handing {
        let _ = handed.await;
    }
    Ok(kept)
}

/// The object id of a `Runtime.evaluate` answer.
fn object_of(
    answer: Result<wasm_bindgen::JsValue, tabwire_protocol::OpError>,
) -> Result<String, String> {
    let answer: Evaluated =
        chrome::from_js(answer.map_err(|e| e.message)?).map_err(|e| e.message)?;
    if let Some(exception) = answer.exception {
        return Err(format!("the page threw {exception}"));
    }
    answer
        .result
        .object_id
        .ok_or_else(|| "no object".to_owned())
}

/// Forgets what was learnt about `tab`'s documents (it closed).
pub fn forget(tab: TabId) {
    TOO_MANY.with(|t| t.borrow_mut().remove(&tab));
    KEPT.with(|k| k.borrow_mut().remove(&tab));
}
