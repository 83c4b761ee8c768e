//! Keeping ref state in `chrome.storage.session`, which survives a service-worker restart
//! (but not a browser restart, when every document is new anyway).
//!
//! Each tab is one entry, `refs:<tabId>` → its frames' state as a JSON string: the ref numbers
//! with their keys and identities, the ref counter and the version. Baselines are not kept
//! (they would be large, and a delta request after a restart simply gets a full observation with
//! `reset`).
//!
//! Writes happen in the background, at most every [`SAVE_DELAY_MS`] for all tabs observed
//! meanwhile, so serialising a big table never delays an answer. A worker stopped before the
//! write loses the latest refs; so that it can never hand out one of those numbers again for a
//! different element, a restored counter jumps ahead by [`RESTART_MARGIN`]. A failed write is
//! logged, never reported to the agent.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tabwire_protocol::TabId;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::spawn_local;

use super::table::{Binding, RefTable};
use super::{DocState, FrameState, RefTables, with_tables};
use crate::chrome;

const PREFIX: &str = "refs:";

/// How long after an observation its tab's refs are written.
const SAVE_DELAY_MS: f64 = 250.0;

/// How far a restored ref counter jumps ahead: more refs than can be handed out between an
/// observation and its write (one observation shows at most 5,000 nodes).
const RESTART_MARGIN: u32 = 20_000;

thread_local! {
    /// Tabs observed since the last write, and whether a write is already scheduled.
    static PENDING: RefCell<(bool, BTreeSet<TabId>)> = const { RefCell::new((false, BTreeSet::new())) };
}

/// One frame's state as saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedFrame {
    frame: u32,
    last_index: u32,
    document_id: String,
    doc_token: String,
    version: u64,
    /// `(ref number, binding)` pairs, by ref number.
    refs: Vec<(u32, Binding)>,
}

/// The saved form of a tab's frames (those with an observed document).
pub fn saved_tab(tables: &RefTables, tab: TabId) -> Vec<SavedFrame> {
    tables
        .frames_of(tab)
        .into_iter()
        .filter_map(|(frame, state)| {
            let doc = state.doc.as_ref()?;
            let mut refs: Vec<(u32, Binding)> =
                doc.refs.bindings().map(|(i, b)| (i, b.clone())).collect();
            refs.sort_unstable_by_key(|(i, _)| *i);
            Some(SavedFrame {
                frame,
                last_index: state.last_index,
                document_id: doc.document_id.clone(),
                doc_token: doc.doc_token.clone(),
                version: doc.version,
                refs,
            })
        })
        .collect()
}

/// Rebuilds a frame's state from its saved form.
pub fn restored_frame(saved: SavedFrame) -> (u32, FrameState) {
    let refs = RefTable::from_bindings(saved.refs);
    let state = FrameState {
        // Never a number that may already have been handed out: not below the saved counter or
        // the highest saved ref, and past any refs issued after the last write.
        last_index: saved
            .last_index
            .max(refs.highest())
            .saturating_add(RESTART_MARGIN),
        doc: Some(DocState {
            refs,
            ..DocState::new(&saved.document_id, &saved.doc_token, saved.version)
        }),
        ..FrameState::default()
    };
    (saved.frame, state)
}

/// Loads every saved table. The worker awaits this before it connects, so no request can see
/// the tables half-restored.
pub async fn load_all() {
    let items: HashMap<String, Value> =
        match chrome::call(chrome::storage_session_get(&JsValue::NULL)).await {
            Ok(value) => chrome::from_js(value).unwrap_or_default(),
            Err(e) => {
                crate::chrome::log!("could not read saved refs: {e}");
                return;
            }
        };
    let mut restored = 0;
    for (key, value) in items {
        let Some(tab) = key
            .strip_prefix(PREFIX)
            .and_then(|t| t.parse::<TabId>().ok())
        else {
            continue;
        };
        // Entries in an older format are ignored: those refs simply start again.
        let Some(saved) = value
            .as_str()
            .and_then(|json| serde_json::from_str::<Vec<SavedFrame>>(json).ok())
        else {
            continue;
        };
        with_tables(|tables| {
            for frame in saved {
                let (frame, state) = restored_frame(frame);
                tables.restore(tab, frame, state);
            }
        });
        restored += 1;
    }
    if restored > 0 {
        crate::chrome::log!("restored the refs of {restored} tab(s)");
    }
}

/// Schedules a background write of `tab`'s refs (see the module docs).
pub fn save(tab: TabId) {
    let schedule = PENDING.with(|pending| {
        let mut pending = pending.borrow_mut();
        pending.1.insert(tab);
        !std::mem::replace(&mut pending.0, true)
    });
    if !schedule {
        return;
    }
    spawn_local(async {
        crate::timer::sleep(SAVE_DELAY_MS).await;
        let tabs = PENDING.with(|pending| {
            let mut pending = pending.borrow_mut();
            pending.0 = false;
            std::mem::take(&mut pending.1)
        });
        for tab in tabs {
            write(tab).await;
        }
    });
}

/// Writes `tab`'s current refs.
async fn write(tab: TabId) {
    let Some(json) = with_tables(|tables| serde_json::to_string(&saved_tab(tables, tab)).ok())
    else {
        return;
    };
    let mut items = serde_json::Map::new();
    items.insert(format!("{PREFIX}{tab}"), Value::String(json));
    let result = match chrome::to_js(&items) {
        Ok(items) => chrome::call(chrome::storage_session_set(&items))
            .await
            .map(|_| ()),
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        crate::chrome::log!("could not save the refs of tab {tab}: {e}");
    }
}

/// Deletes a closed tab's saved table in the background.
pub fn forget(tab: TabId) {
    spawn_local(async move {
        let _ = chrome::call(chrome::storage_session_remove(&format!("{PREFIX}{tab}"))).await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use tabwire_observation::facts::{Anchors, Identity};
    use tabwire_protocol::ElementRef;

    #[test]
    fn a_saved_tab_comes_back_identical() {
        let mut tables = RefTables::default();
        for (frame, doc) in [(0, "TOP"), (3, "INNER")] {
            let state = tables.frame(4, frame);
            let mut last = 10;
            let refs = &mut state.document(doc, "tok").refs;
            refs.assign(30, &mut last);
            let second = refs.assign(10, &mut last);
            refs.rebind(second, 10);
            refs.mark_gone(&[30]);
            state.last_index = last;
            state.doc.as_mut().unwrap().version = 5;
        }
        let identity = Identity {
            anchors: Anchors {
                tag: "button".into(),
                id: Some("save".into()),
                ..Anchors::default()
            },
            role: "button".into(),
            name: "Save".into(),
        };
        let frame = tables.frame(4, 0);
        frame
            .doc
            .as_mut()
            .unwrap()
            .refs
            .note_identities(&[tabwire_observation::PageNode {
                key: 10,
                role: "button".into(),
                name: "Save".into(),
                anchors: Some(identity.anchors.clone()),
                ..Default::default()
            }]);
        let json = serde_json::to_string(&saved_tab(&tables, 4)).unwrap();

        let mut restarted = RefTables::default();
        for saved in serde_json::from_str::<Vec<SavedFrame>>(&json).unwrap() {
            let (frame, state) = restored_frame(saved);
            restarted.restore(4, frame, state);
        }
        let back = restarted.resolve(4, ElementRef::top(12)).unwrap();
        assert_eq!(back.key, 10);
        assert_eq!(back.identity, Some(identity));
        let inner = restarted
            .resolve(
                4,
                ElementRef {
                    frame: Some(3),
                    index: 11,
                },
            )
            .unwrap();
        assert_eq!(inner.document_id, "INNER");
        let state = restarted.get(4, 3).unwrap();
        assert_eq!(
            state.last_index,
            12 + RESTART_MARGIN,
            "refs issued after the last write are never handed out again"
        );
        assert_eq!(state.doc.as_ref().unwrap().version, 5);
        assert_eq!(
            state.doc.as_ref().unwrap().refs.live_keys(),
            [10],
            "gone refs stay gone"
        );
    }
}
