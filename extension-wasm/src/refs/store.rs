//! Keeping ref state in `chrome.storage.session`, which survives a service-worker restart
//! (but not a browser restart, when every document is new anyway).
//!
//! Each tab is one entry, `refs:<tabId>` → its frames' state as a JSON string, written after
//! every observation of the tab: the ref numbers with their keys and identities, the ref
//! counter and the version. Baselines are not kept (they would be large, and a delta request
//! after a restart simply gets a full observation with `reset`). Writes are fire-and-forget: a
//! failed write only means refs would restart after a worker restart, so it is logged, never
//! reported to the agent.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tabwire_protocol::TabId;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::spawn_local;

use super::table::{Binding, RefTable};
use super::{DocState, FrameState, RefTables, with_tables};
use crate::chrome;

const PREFIX: &str = "refs:";

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
        // Never below a number already handed out, even if the saved counter is damaged.
        last_index: saved.last_index.max(refs.highest()),
        doc: Some(DocState {
            document_id: saved.document_id,
            doc_token: saved.doc_token,
            version: saved.version,
            refs,
            baselines: Default::default(),
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
                crate::log!("could not read saved refs: {e}");
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
        crate::log!("restored the refs of {restored} tab(s)");
    }
}

/// Saves `tab`'s current table in the background.
pub fn save(tab: TabId) {
    let Some(json) = with_tables(|tables| serde_json::to_string(&saved_tab(tables, tab)).ok())
    else {
        return;
    };
    spawn_local(async move {
        let mut items = serde_json::Map::new();
        items.insert(format!("{PREFIX}{tab}"), Value::String(json));
        let result = match chrome::to_js(&items) {
            Ok(items) => chrome::call(chrome::storage_session_set(&items))
                .await
                .map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            crate::log!("could not save the refs of tab {tab}: {e}");
        }
    });
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
    use crate::observation::facts::{Anchors, Identity};
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
            .note_identities(&[crate::observation::PageNode {
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
        assert_eq!(state.last_index, 12);
        assert_eq!(state.doc.as_ref().unwrap().version, 5);
        assert_eq!(
            state.doc.as_ref().unwrap().refs.live_keys(),
            [10],
            "gone refs stay gone"
        );
    }
}
