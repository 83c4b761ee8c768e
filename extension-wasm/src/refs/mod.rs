//! Element refs (`@e12`) and the per-tab tables that bind them to page elements.
//!
//! The in-page collector gives every element it reports a numeric identity `key`, stable for
//! the document's life (a WeakMap in the page's isolated world). The wasm turns keys into the
//! short refs agents see: per tab, one [`RefTable`] bound to the Chrome `documentId` the
//! observation came from. The same key always gets the same ref; numbers are handed out from 1
//! and never reused within a document. A different `documentId` means the tab navigated: the
//! table is replaced and every old ref becomes stale.
//!
//! Tables are saved to `chrome.storage.session` after every observation ([`store`]) and
//! loaded when the worker starts, so a service worker that Chrome stopped and restarted keeps
//! handing out the same refs instead of starting again from `@e1` (which could silently point an
//! agent's old ref at a different element).
//!
//! The table also remembers the page's `doc_token` (a random value the collector keeps next to
//! its keys), which the page checks before acting on a key, so a key can never be applied to a
//! different document even for the instant before the wasm sees the new `documentId`.

pub mod store;

use std::cell::RefCell;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use tabwire_protocol::{ElementRef, ErrorCode, OpError, TabId};

/// The refs handed out for one document of one tab.
#[derive(Debug, Clone)]
pub struct RefTable {
    /// Chrome's ID of the document these refs belong to.
    document_id: String,
    /// The collector's token for the same document (see the module docs).
    doc_token: String,
    /// Observations of this document so far; the latest observation's version.
    version: u64,
    /// The last ref number handed out.
    last_index: u32,
    by_key: HashMap<u32, u32>,
    by_index: HashMap<u32, u32>,
}

impl RefTable {
    fn new(document_id: &str, doc_token: &str) -> Self {
        RefTable {
            document_id: document_id.to_owned(),
            doc_token: doc_token.to_owned(),
            version: 0,
            last_index: 0,
            by_key: HashMap::new(),
            by_index: HashMap::new(),
        }
    }

    /// The ref of the element with `key`, handing out the next number on first sight.
    pub fn ref_for(&mut self, key: u32) -> ElementRef {
        if let Some(&index) = self.by_key.get(&key) {
            return ElementRef::top(index);
        }
        self.last_index += 1;
        self.by_key.insert(key, self.last_index);
        self.by_index.insert(self.last_index, key);
        ElementRef::top(self.last_index)
    }

    /// The observation version of the latest snapshot.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The table as saved in session storage.
    pub fn to_saved(&self) -> SavedTable {
        let mut keys: Vec<(u32, u32)> = self.by_key.iter().map(|(&k, &i)| (k, i)).collect();
        keys.sort_unstable_by_key(|&(_, index)| index);
        SavedTable {
            document_id: self.document_id.clone(),
            doc_token: self.doc_token.clone(),
            version: self.version,
            last_index: self.last_index,
            keys,
        }
    }

    /// Rebuilds a table from its saved form.
    pub fn from_saved(saved: SavedTable) -> Self {
        let by_key: HashMap<u32, u32> = saved.keys.iter().copied().collect();
        let by_index = saved.keys.iter().map(|&(k, i)| (i, k)).collect();
        let highest = saved.keys.iter().map(|&(_, i)| i).max().unwrap_or(0);
        RefTable {
            document_id: saved.document_id,
            doc_token: saved.doc_token,
            version: saved.version,
            // Never below a number already handed out, even if the saved counter is damaged.
            last_index: saved.last_index.max(highest),
            by_key,
            by_index,
        }
    }
}

/// A [`RefTable`] in the form kept in `chrome.storage.session`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedTable {
    document_id: String,
    doc_token: String,
    version: u64,
    last_index: u32,
    /// `(key, ref number)` pairs.
    keys: Vec<(u32, u32)>,
}

/// Where a ref points: what the page needs to find the element again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedRef {
    /// The collector's element key.
    pub key: u32,
    /// The page-side document token the key belongs to.
    pub doc_token: String,
    /// Chrome's document ID the key belongs to.
    pub document_id: String,
}

/// Every tab's current ref table.
#[derive(Debug, Default)]
pub struct RefTables {
    tabs: HashMap<TabId, RefTable>,
}

impl RefTables {
    /// Starts a new observation of `tab`, whose document is `document_id`: replaces the table
    /// when the document changed, and bumps the version. Returns the table to assign refs from.
    pub fn begin_observation(
        &mut self,
        tab: TabId,
        document_id: &str,
        doc_token: &str,
    ) -> &mut RefTable {
        let table = self
            .tabs
            .entry(tab)
            .or_insert_with(|| RefTable::new(document_id, doc_token));
        if table.document_id != document_id || table.doc_token != doc_token {
            // Numbers keep counting up across the tab's documents: a ref from the previous
            // page must come back STALE_REF, never name whatever element of the new page
            // happened to get the same number.
            let last_index = table.last_index;
            *table = RefTable::new(document_id, doc_token);
            table.last_index = last_index;
        }
        table.version += 1;
        table
    }

    /// Finds what `element_ref` points at in `tab`, or says why it cannot be used.
    pub fn resolve(&self, tab: TabId, element_ref: ElementRef) -> Result<ResolvedRef, OpError> {
        if element_ref.frame.is_some() {
            return Err(OpError::new(
                ErrorCode::StaleRef,
                format!(
                    "{element_ref} names an element inside a frame; frame refs are not supported \
                     yet (frames come later): use a ref without a frame part or a CSS selector"
                ),
            ));
        }
        let Some(table) = self.tabs.get(&tab) else {
            return Err(stale(
                element_ref,
                "no snapshot of this tab has been taken since the extension started",
            ));
        };
        let Some(&key) = table.by_index.get(&element_ref.index) else {
            return Err(stale(
                element_ref,
                "it was not issued for the tab's current document",
            ));
        };
        Ok(ResolvedRef {
            key,
            doc_token: table.doc_token.clone(),
            document_id: table.document_id.clone(),
        })
    }

    /// Drops a closed tab's table.
    pub fn forget_tab(&mut self, tab: TabId) {
        self.tabs.remove(&tab);
    }

    /// The table of `tab`, if it has one.
    pub fn table(&self, tab: TabId) -> Option<&RefTable> {
        self.tabs.get(&tab)
    }

    /// Puts back a table loaded from storage, unless the tab already has a newer one.
    pub fn restore(&mut self, tab: TabId, table: RefTable) {
        self.tabs.entry(tab).or_insert(table);
    }
}

/// The error for a ref that no longer (or never did) point at anything.
pub fn stale(element_ref: ElementRef, why: &str) -> OpError {
    OpError::new(
        ErrorCode::StaleRef,
        format!("{element_ref} is stale: {why}. Take a new snapshot and use a ref from it."),
    )
}

thread_local! {
    /// The worker's ref tables, restored from session storage when the worker starts.
    static TABLES: RefCell<RefTables> = RefCell::new(RefTables::default());
}

/// Runs `f` with the worker's ref tables. `f` must not await (it cannot: it is synchronous),
/// so no observation can interleave with another's ref assignment.
pub fn with_tables<R>(f: impl FnOnce(&mut RefTables) -> R) -> R {
    TABLES.with(|tables| f(&mut tables.borrow_mut()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_key_same_ref_and_numbers_grow_from_one() {
        let mut tables = RefTables::default();
        let table = tables.begin_observation(1, "DOC-A", "t1");
        assert_eq!(table.ref_for(40), ElementRef::top(1));
        assert_eq!(table.ref_for(7), ElementRef::top(2));
        assert_eq!(table.version(), 1);
        let table = tables.begin_observation(1, "DOC-A", "t1");
        assert_eq!(table.ref_for(7), ElementRef::top(2));
        assert_eq!(table.ref_for(99), ElementRef::top(3));
        assert_eq!(table.version(), 2);
        assert_eq!(tables.resolve(1, ElementRef::top(1)).unwrap().key, 40);
    }

    #[test]
    fn a_new_document_gets_a_new_table_and_old_refs_stay_stale() {
        let mut tables = RefTables::default();
        tables.begin_observation(1, "DOC-A", "t1").ref_for(5);
        let table = tables.begin_observation(1, "DOC-B", "t2");
        assert_eq!(table.version(), 1);
        // The new page's first element does not reuse @e1, so the old @e1 cannot hit it.
        assert_eq!(table.ref_for(1), ElementRef::top(2));
        assert_eq!(
            tables.resolve(1, ElementRef::top(1)).unwrap_err().code,
            ErrorCode::StaleRef
        );
        let resolved = tables.resolve(1, ElementRef::top(2)).unwrap();
        assert_eq!(resolved.key, 1);
        assert_eq!(resolved.document_id, "DOC-B");
        assert_eq!(resolved.doc_token, "t2");
    }

    #[test]
    fn unknown_refs_and_tabs_are_stale() {
        let mut tables = RefTables::default();
        tables.begin_observation(1, "DOC-A", "t1").ref_for(5);
        let err = tables.resolve(1, ElementRef::top(2)).unwrap_err();
        assert_eq!(err.code, ErrorCode::StaleRef);
        assert!(err.message.contains("new snapshot"), "{}", err.message);
        assert_eq!(
            tables.resolve(2, ElementRef::top(1)).unwrap_err().code,
            ErrorCode::StaleRef
        );
        tables.forget_tab(1);
        assert!(tables.resolve(1, ElementRef::top(1)).is_err());
    }

    #[test]
    fn a_saved_table_comes_back_identical() {
        let mut tables = RefTables::default();
        let table = tables.begin_observation(4, "DOC", "tok");
        table.ref_for(30);
        table.ref_for(10);
        let saved = serde_json::to_string(&table.to_saved()).unwrap();

        let mut restarted = RefTables::default();
        let loaded = RefTable::from_saved(serde_json::from_str(&saved).unwrap());
        restarted.restore(4, loaded);
        assert_eq!(restarted.resolve(4, ElementRef::top(2)).unwrap().key, 10);
        let table = restarted.begin_observation(4, "DOC", "tok");
        assert_eq!(table.version(), 2);
        assert_eq!(table.ref_for(30), ElementRef::top(1));
        assert_eq!(
            table.ref_for(99),
            ElementRef::top(3),
            "numbers are not reused"
        );
    }

    #[test]
    fn frame_refs_are_not_supported_yet() {
        let tables = RefTables::default();
        let framed = ElementRef {
            frame: Some(1),
            index: 1,
        };
        let err = tables.resolve(1, framed).unwrap_err();
        assert_eq!(err.code, ErrorCode::StaleRef);
        assert!(err.message.contains("frames come later"));
    }
}
