//! Which elements of a tab's top document have click listeners of their own, for the
//! collector's `clickable` decision (`listened` in js/collector/12-listeners.js): a span or an
//! icon given a click listener by script, with no pointer cursor, no `onclick` attribute, no
//! role and no tabindex, is found only this way.
//!
//! Listeners are invisible from the collector's isolated world; the debugger sees them. Before
//! a snapshot of the top document, when tabwire's debugger session is attached already (this
//! never attaches: attaching shows Chrome's "is debugging this browser" bar, and tabwire
//! attaches at a tab's first click or screenshot):
//! 1. the policy is checked: the top document must be readable, and the listing pierces into
//!    frames and shadow roots only while every frame of the tab is readable (a denied frame's
//!    listeners are never listed);
//! 2. this extension's isolated world in the top frame is found (its execution context id,
//!    learned from `Runtime.executionContextCreated`: a short `Runtime.enable` replays the
//!    existing contexts, ~1 ms; the world is created first by the collector's probe when the
//!    document has none yet);
//! 3. one `Runtime.evaluate` in that world (no page code runs there) says whether an element
//!    was added since the last listing; when none was, nothing more is done (one round trip);
//! 4. otherwise `DOMDebugger.getEventListeners` (depth -1) on the document lists every
//!    listener with its `backendNodeId` — on the document resolved into that world when
//!    piercing (Chrome then reports the listeners of every world), else on the document
//!    resolved in the page's world (without `pierce` Chrome reports only the listeners of the
//!    object's own world: none from the isolated one); resolving runs no page code. The
//!    elements with a click,
//!    mousedown, mouseup, pointerdown or pointerup listener (at most [`MOST_ELEMENTS`]) are
//!    resolved (`DOM.resolveNode`) straight into the same world, and ONE
//!    `Runtime.callFunctionOn` there puts them in the collector's state (`__tabwireListened`:
//!    a `WeakSet`, the list, a generation, and a `MutationObserver` that notes added elements).
//!    The object group is released after.
//!
//! No code is run in the page's main world and nothing the page can replace is called — with
//! one exception Chrome makes: for a listener registered as an object (`{handleEvent}`),
//! `getEventListeners` reads its `handleEvent` property, so a getter or a Proxy there runs
//! during the listing. So a listing is followed by one animation frame (and the tasks its
//! callbacks queue) before the walk: what such a hook inserts has been rendered at least once
//! by then, or removed again, as a person would see it (tests/e2e/controls.rs attacks this).
//!
//! Cost (measured, headless Chromium here): the listing takes ~7 µs per listener without
//! handler objects (14 ms for 2,000 rows with a listener each); a listing that took more than
//! [`COSTLY_MS`] with more than [`COSTLY_LISTENERS`] listeners is not taken again in that
//! document (what it found stays). A call with no
//! element added since the last listing costs one `Runtime.evaluate` round trip.
//!
//! What it cannot see: a listener added to an element already in the document, with no element
//! added anywhere (a listener moved from one element to another): it is found at the next
//! listing, after the next added element or in the next document. Elements added inside
//! shadow roots do not start a listing either (the observer watches the document). Frames'
//! own documents are not listed for their walks (only the top document's), and a listing
//! pierces into frames and shadow roots only while every frame of the tab may be read.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::TabId;
use tabwire_protocol::policy::Need;
use wasm_bindgen::JsValue;

use crate::page::{self, MissingFrame, PageCommand};
use crate::timer::now_ms;
use crate::{chrome, debugger, policy};

/// The most elements handed to the collector per listing.
const MOST_ELEMENTS: usize = 300;
/// A listing (`getEventListeners` alone) that took longer (ms) and listed more than
/// [`COSTLY_LISTENERS`] is not taken again in the same document.
const COSTLY_MS: f64 = 40.0;
/// ... a short list is slow only on a loaded machine, and is worth taking again.
const COSTLY_LISTENERS: usize = 1000;
/// The event types that make an element clickable: what a click starts with or is. Key and
/// focus listeners are left out (a field's or a shortcut's, not a control's).
const CLICK_TYPES: [&str; 5] = ["click", "mousedown", "mouseup", "pointerdown", "pointerup"];
/// The object group of one listing's remote objects, released after it.
const GROUP: &str = "tabwire-listeners";

thread_local! {
    /// This extension's isolated-world execution contexts per tab: (context id, CDP frame id),
    /// as `Runtime.executionContextCreated` reported them.
    static CONTEXTS: RefCell<HashMap<TabId, Vec<(i64, String)>>> = RefCell::new(HashMap::new());
    /// The tabs whose `Runtime` domain someone else keeps enabled (console capture): a
    /// listing must not disable it there.
    static RUNTIME_KEPT: RefCell<HashSet<TabId>> = RefCell::new(HashSet::new());
    /// The contexts (documents) whose listing was costly: not listed again.
    static COSTLY: RefCell<HashSet<(TabId, i64)>> = RefCell::new(HashSet::new());
}

/// Told by console capture whether it keeps `tab`'s `Runtime` domain enabled.
pub fn runtime_kept(tab: TabId, kept: bool) {
    RUNTIME_KEPT.with(|k| {
        if kept {
            k.borrow_mut().insert(tab);
        } else {
            k.borrow_mut().remove(&tab);
        }
    });
}

/// The debugger's events: execution contexts created, destroyed or cleared.
pub fn on_event(tab: TabId, method: &str, params: &JsValue) {
    #[derive(Deserialize)]
    struct Created {
        context: Context,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Context {
        id: i64,
        #[serde(default)]
        origin: String,
        #[serde(default)]
        aux_data: Option<AuxData>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct AuxData {
        #[serde(rename = "type", default)]
        kind: String,
        #[serde(default)]
        frame_id: String,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Destroyed {
        execution_context_id: i64,
    }
    match method {
        "Runtime.executionContextCreated" => {
            let Ok(Created { context }) = chrome::from_js::<Created>(params.clone()) else {
                return;
            };
            let Some(aux) = context.aux_data else {
                return;
            };
            // Only this extension's own world: another extension's isolated world, or a
            // DevTools one, is not where the collector lives.
            if aux.kind != "isolated" || context.origin != own_origin() {
                return;
            }
            CONTEXTS.with(|c| {
                c.borrow_mut()
                    .entry(tab)
                    .or_default()
                    .push((context.id, aux.frame_id))
            });
        }
        "Runtime.executionContextDestroyed" => {
            if let Ok(Destroyed {
                execution_context_id,
            }) = chrome::from_js::<Destroyed>(params.clone())
            {
                drop_context(tab, execution_context_id);
            }
        }
        "Runtime.executionContextsCleared" => {
            CONTEXTS.with(|c| c.borrow_mut().remove(&tab));
        }
        _ => {}
    }
}

/// `chrome-extension://<id>`, the origin of this extension's isolated worlds.
fn own_origin() -> String {
    chrome::runtime_get_url("").trim_end_matches('/').to_owned()
}

fn drop_context(tab: TabId, id: i64) {
    CONTEXTS.with(|c| {
        if let Some(list) = c.borrow_mut().get_mut(&tab) {
            list.retain(|(known, _)| *known != id);
        }
    });
}

/// Forgets what was learnt about `tab` (its debugger session ended, or it closed; capture
/// says again that it keeps `Runtime` on when it re-enables it after a reattach).
pub fn forget(tab: TabId) {
    CONTEXTS.with(|c| c.borrow_mut().remove(&tab));
    RUNTIME_KEPT.with(|k| k.borrow_mut().remove(&tab));
    COSTLY.with(|c| c.borrow_mut().retain(|(t, _)| *t != tab));
}

#[wasm_bindgen::prelude::wasm_bindgen(module = "/js/page.js")]
extern "C" {
    #[wasm_bindgen(catch, js_name = nextFrame)]
    fn next_frame(tab_id: u32) -> Result<js_sys::Promise, JsValue>;
}

#[derive(Deserialize)]
struct RemoteObject {
    #[serde(rename = "objectId")]
    object_id: Option<String>,
    #[serde(default)]
    value: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Resolved {
    object: RemoteObject,
}

#[derive(Deserialize)]
struct Evaluated {
    result: RemoteObject,
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

#[derive(Deserialize)]
struct FrameTree {
    #[serde(rename = "frameTree")]
    frame_tree: FrameNode,
}

#[derive(Deserialize)]
struct FrameNode {
    frame: Frame,
}

#[derive(Deserialize)]
struct Frame {
    id: String,
}

#[derive(Deserialize)]
struct Document {
    root: DocumentNode,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DocumentNode {
    backend_node_id: u64,
}

/// Brings the collector's record of `tab`'s top-document click listeners up to date before a
/// snapshot walks it (see the module docs). Never fails: without a listing the walk goes on
/// with what the last one found.
pub async fn prepare(tab: TabId) {
    if !debugger::is_attached(tab) {
        return;
    }
    let Some(pierce) = policy_allows(tab).await else {
        return;
    };
    if let Err(why) = list_if_grown(tab, pierce).await {
        chrome::log!("tab {tab}: listeners not listed ({why})");
    }
}

/// `None` when the top document may not be read; otherwise whether the listing may pierce into
/// frames (every frame of the tab readable).
async fn policy_allows(tab: TabId) -> Option<bool> {
    if policy::allows_everything() {
        return Some(true);
    }
    let views = policy::frame_views(tab).await.ok()?;
    if !views.get(&0).is_some_and(policy::FrameView::readable) {
        return None;
    }
    // The verdict for reading, not only for denying (an `ask` top document is still read).
    if policy::check_view(tab, &views, 0, Need::Read).is_err() {
        return None;
    }
    Some(views.values().all(policy::FrameView::readable))
}

async fn list_if_grown(tab: TabId, pierce: bool) -> Result<(), String> {
    let mut context = top_context(tab, false).await?;
    let grown = match grown(tab, context).await {
        Ok(grown) => grown,
        // A context of a document gone: find the current one once.
        Err(_) => {
            drop_context(tab, context);
            context = top_context(tab, true).await?;
            grown(tab, context).await?
        }
    };
    if !grown || COSTLY.with(|c| c.borrow().contains(&(tab, context))) {
        return Ok(());
    }
    let listed = list(tab, context, pierce).await;
    let _ = debugger::issue_attached(
        tab,
        "Runtime.releaseObjectGroup",
        &json!({ "objectGroup": GROUP }),
    )
    .await;
    let (count, took) = listed?;
    if took > COSTLY_MS && count > COSTLY_LISTENERS {
        chrome::log!(
            "tab {tab}: listing {count} listeners took {took:.0} ms: not listed again in this document"
        );
        COSTLY.with(|c| c.borrow_mut().insert((tab, context)));
    }
    // A listener read as an object's `handleEvent` ran page code during the listing: the
    // walk waits until the page has drawn a frame (see the module docs).
    if let Ok(promise) = next_frame(tab) {
        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    }
    Ok(())
}

/// This extension's isolated world in `tab`'s top frame; with `fresh`, or when none is known,
/// the contexts are replayed by a short `Runtime.enable`, after the collector's probe has made
/// the world exist.
async fn top_context(tab: TabId, fresh: bool) -> Result<i64, String> {
    let top: FrameTree = chrome::from_js(
        debugger::issue_attached(tab, "Page.getFrameTree", &json!({}))
            .await
            .map_err(|e| e.message)?,
    )
    .map_err(|e| e.message)?;
    let top = top.frame_tree.frame.id;
    let known = || {
        CONTEXTS.with(|c| {
            c.borrow().get(&tab).and_then(|list| {
                list.iter()
                    .rev()
                    .find(|(_, f)| *f == top)
                    .map(|(id, _)| *id)
            })
        })
    };
    if !fresh && let Some(id) = known() {
        return Ok(id);
    }
    // The collector's world exists once anything ran there; a probe installs it if needed.
    page::run::<serde_json::Value>(tab, 0, &PageCommand::Probe, MissingFrame::Requested)
        .await
        .map_err(|e| e.message)?;
    // With `Runtime` kept on by console capture the contexts are reported as they come (a
    // replay would repeat old console messages to capture).
    if !RUNTIME_KEPT.with(|k| k.borrow().contains(&tab)) {
        CONTEXTS.with(|c| c.borrow_mut().remove(&tab));
        debugger::issue_attached(tab, "Runtime.enable", &json!({}))
            .await
            .map_err(|e| e.message)?;
        let _ = debugger::issue_attached(tab, "Runtime.disable", &json!({})).await;
    }
    // The replayed events travel apart from the command's answer: a moment for them.
    for _ in 0..10 {
        if let Some(id) = known() {
            return Ok(id);
        }
        crate::timer::sleep(5.0).await;
    }
    known().ok_or_else(|| "no isolated world of tabwire in the top frame".to_owned())
}

/// Whether an element was added to the document since the last listing there (or none was
/// made), asked in the collector's world.
async fn grown(tab: TabId, context: i64) -> Result<bool, String> {
    let answer: Evaluated = chrome::from_js(
        debugger::issue_attached(
            tab,
            "Runtime.evaluate",
            &json!({
                "expression": "(() => { const s = globalThis.__tabwireListened; return !s || s.grown === true; })()",
                "contextId": context,
                "returnByValue": true,
                "silent": true,
            }),
        )
        .await
        .map_err(|e| e.message)?,
    )
    .map_err(|e| e.message)?;
    Ok(answer.result.value != Some(serde_json::Value::Bool(false)))
}

/// The listing itself (step 4 of the module docs); the number of listeners listed and how long
/// Chrome took to list them (ms).
async fn list(tab: TabId, context: i64, pierce: bool) -> Result<(usize, f64), String> {
    let document: Document = chrome::from_js(
        debugger::issue_attached(tab, "DOM.getDocument", &json!({ "depth": 0 }))
            .await
            .map_err(|e| e.message)?,
    )
    .map_err(|e| e.message)?;
    let document_node = document.root.backend_node_id;
    let document = resolve(tab, document_node, Some(context))
        .await
        .ok_or("the document did not resolve")?;
    // Chrome reports the listeners of every world only when piercing; otherwise only those of
    // the world the object is in, so without piercing the document is taken in the page's
    // world (resolving a node runs no page code).
    let listed_on = if pierce {
        document.clone()
    } else {
        resolve(tab, document_node, None)
            .await
            .ok_or("the document did not resolve in the page's world")?
    };
    let asked = now_ms();
    let listing: Listing = chrome::from_js(
        debugger::issue_attached(
            tab,
            "DOMDebugger.getEventListeners",
            &json!({ "objectId": listed_on, "depth": -1, "pierce": pierce }),
        )
        .await
        .map_err(|e| e.message)?,
    )
    .map_err(|e| e.message)?;
    let took = now_ms() - asked;
    let count = listing.listeners.len();
    let mut seen = HashSet::new();
    let ids: Vec<u64> = listing
        .listeners
        .iter()
        .filter(|l| CLICK_TYPES.contains(&l.kind.as_str()))
        .filter_map(|l| l.backend_node_id)
        .filter(|id| seen.insert(*id))
        .take(MOST_ELEMENTS)
        .collect();
    // All resolved at once (they travel together), then handed over in one call.
    let resolving: Vec<_> = ids
        .iter()
        .map(|id| {
            debugger::issue_attached(
                tab,
                "DOM.resolveNode",
                &json!({ "backendNodeId": id, "executionContextId": context, "objectGroup": GROUP }),
            )
        })
        .collect();
    let mut arguments = Vec::with_capacity(resolving.len());
    for resolved in resolving {
        if let Ok(Ok(Resolved {
            object:
                RemoteObject {
                    object_id: Some(id),
                    ..
                },
        })) = resolved.await.map(chrome::from_js::<Resolved>)
        {
            arguments.push(json!({ "objectId": id }));
        }
    }
    debugger::issue_attached(
        tab,
        "Runtime.callFunctionOn",
        &json!({
            "objectId": document,
            "functionDeclaration": HAND_OVER,
            "arguments": arguments,
            "silent": true,
            "returnByValue": true,
        }),
    )
    .await
    .map_err(|e| e.message)?;
    Ok((count, took))
}

/// Runs in the collector's isolated world with `this` the document: keeps the elements of this
/// document (an element of a frame inside it is not this world's) in a new set, and watches
/// for added elements until the next listing.
const HAND_OVER: &str = "function (...elements) {
  const doc = this;
  let state = globalThis.__tabwireListened;
  if (!state || typeof state !== 'object') {
    state = globalThis.__tabwireListened = { set: new WeakSet(), list: [], generation: 0, grown: true, observer: null };
    state.observer = new MutationObserver((records) => {
      if (state.grown) return;
      for (const record of records) {
        for (const node of record.addedNodes) if (node.nodeType === 1) { state.grown = true; return; }
      }
    });
    state.observer.observe(doc, { childList: true, subtree: true });
  }
  const set = new WeakSet();
  const list = [];
  for (const el of elements) {
    try {
      if (el && el.nodeType === 1 && !set.has(el) && el.ownerDocument === doc) { set.add(el); list.push(el); }
    } catch (e) { /* an element this world may not touch */ }
  }
  state.set = set;
  state.list = list;
  state.generation += 1;
  state.grown = false;
}";

/// The remote object of node `backend_node_id` in execution context `context` (`None`: the
/// page's own world).
async fn resolve(tab: TabId, backend_node_id: u64, context: Option<i64>) -> Option<String> {
    let mut params = json!({ "backendNodeId": backend_node_id, "objectGroup": GROUP });
    if let Some(context) = context {
        params["executionContextId"] = context.into();
    }
    let resolved: Resolved = chrome::from_js(
        debugger::issue_attached(tab, "DOM.resolveNode", &params)
            .await
            .ok()?,
    )
    .ok()?;
    resolved.object.object_id
}
