//! Keeping ref tables in `chrome.storage.session`, which survives a service-worker restart
//! (but not a browser restart, when every document is new anyway).
//!
//! Each tab's table is one entry, `refs:<tabId>` → the table as a JSON string, written after
//! every observation of the tab. Writes are fire-and-forget: a failed write only means refs
//! would restart after a worker restart, so it is logged, never reported to the agent.

use std::collections::HashMap;

use serde_json::Value;
use tabwire_protocol::TabId;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::spawn_local;

use super::{RefTable, SavedTable, with_tables};
use crate::chrome;

const PREFIX: &str = "refs:";

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
        let Some(saved) = value
            .as_str()
            .and_then(|json| serde_json::from_str::<SavedTable>(json).ok())
        else {
            continue;
        };
        with_tables(|tables| tables.restore(tab, RefTable::from_saved(saved)));
        restored += 1;
    }
    if restored > 0 {
        crate::log!("restored the refs of {restored} tab(s)");
    }
}

/// Saves `tab`'s current table in the background.
pub fn save(tab: TabId) {
    let Some(json) = with_tables(|tables| {
        tables
            .table(tab)
            .and_then(|table| serde_json::to_string(&table.to_saved()).ok())
    }) else {
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
