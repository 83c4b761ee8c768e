//! Element refs (`@e12`, `@f3e5`) and the per-document state behind them.
//!
//! The in-page collector gives every element it reports a numeric identity `key`, stable for
//! the document's life (a WeakMap in the frame's isolated world). The wasm turns keys into the
//! short refs agents see. State is kept per (tab, frame) — frame 0 is the top document, whose
//! refs print as `@e<n>`; a frame's print as `@f<frameId>e<n>` — in a [`FrameState`]:
//! - the ref numbers handed out so far, which keep counting across the frame's documents, so a
//!   ref from an earlier page is always `STALE_REF` and never names an element of the new one;
//! - the snapshot fence ([`RefTables::begin`] / [`RefTables::commit`]): a snapshot commits
//!   its refs and baseline only if no snapshot that started later has committed first;
//! - the current document ([`DocState`]): Chrome's `documentId`, the collector's document
//!   token, the refs ([`table::RefTable`]), the observation version and the baselines, kept
//!   per viewer (the MCP session each observation was shown to). A different `documentId`
//!   means the frame navigated: the document state is replaced.
//!
//! Refs are the document's, whoever observed it: any session may use a ref another session was
//! shown. Baselines are each viewer's own, so a delta never counts what another session saw.
//!
//! The document token is a random value the collector keeps next to its keys, which the page
//! checks before acting on a key, so a key can never be applied to a different document even
//! for the instant before the wasm sees the new `documentId`.
//!
//! Refs survive a service-worker restart through `chrome.storage.session` ([`store`]);
//! baselines do not (a delta request after a restart gets a full observation with `reset`).

pub mod store;
pub mod table;

use std::cell::RefCell;
use std::collections::HashMap;

use tabwire_protocol::{ElementRef, ErrorCode, OpError, TabId};

use table::RefTable;
use tabwire_observation::delta::ViewerBaselines;
use tabwire_observation::facts::Identity;

/// Frame 0 is the top document.
pub const TOP_FRAME: u32 = 0;

/// The frame number a ref lives in (`@e3` and `@f0e3` both name the top document).
pub fn frame_of(element_ref: ElementRef) -> u32 {
    element_ref.frame.unwrap_or(TOP_FRAME)
}

/// The ref for number `index` in `frame`.
pub fn element_ref(frame: u32, index: u32) -> ElementRef {
    ElementRef {
        frame: (frame != TOP_FRAME).then_some(frame),
        index,
    }
}

/// What one document of one frame has: refs, observation version, baselines.
#[derive(Debug, Clone)]
pub struct DocState {
    /// Chrome's ID of the document.
    pub document_id: String,
    /// The collector's token for the same document (see the module docs).
    pub doc_token: String,
    /// The latest observation's version (of any viewer's); versions keep counting across the
    /// frame's documents.
    pub version: u64,
    /// Its refs.
    pub refs: RefTable,
    /// Its last observations' windows, each viewer's apart.
    pub views: ViewerBaselines,
}

impl DocState {
    /// A document first seen now, whose versions go on from `version`.
    pub fn new(document_id: &str, doc_token: &str, version: u64) -> Self {
        DocState {
            document_id: document_id.to_owned(),
            doc_token: doc_token.to_owned(),
            version,
            refs: RefTable::default(),
            views: ViewerBaselines::default(),
        }
    }
}

/// A snapshot's place in its frame's order: the generation it took when it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    /// The tab.
    pub tab: TabId,
    /// The frame.
    pub frame: u32,
    generation: u64,
}

/// Everything kept for one frame of one tab.
#[derive(Debug, Clone, Default)]
pub struct FrameState {
    /// The last ref number handed out in this frame, over all its documents.
    pub last_index: u32,
    /// Generations handed to snapshots that started.
    issued: u64,
    /// The generation of the last snapshot that committed.
    committed: u64,
    /// The current document, once observed.
    pub doc: Option<DocState>,
}

impl FrameState {
    /// The state of document `document_id`, replacing the previous document's. Versions go on
    /// counting from the previous document's, so a `since` from it never names one of this
    /// document's baselines.
    pub fn document(&mut self, document_id: &str, doc_token: &str) -> &mut DocState {
        let current = self
            .doc
            .as_ref()
            .is_some_and(|d| d.document_id == document_id && d.doc_token == doc_token);
        if !current {
            let version = self.doc.as_ref().map_or(0, |d| d.version);
            self.doc = Some(DocState::new(document_id, doc_token, version));
        }
        self.doc.as_mut().expect("just set")
    }
}

/// Where a ref points: what the page needs to find the element again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedRef {
    /// The frame the element lives in.
    pub frame: u32,
    /// The ref number.
    pub index: u32,
    /// The collector's element key.
    pub key: u32,
    /// The page-side document token the key belongs to.
    pub doc_token: String,
    /// Chrome's document ID the key belongs to.
    pub document_id: String,
    /// What the element looked like, to recognise a replacement if it is gone.
    pub identity: Option<Identity>,
}

/// Every tab's and frame's ref state.
#[derive(Debug, Default)]
pub struct RefTables {
    frames: HashMap<(TabId, u32), FrameState>,
    /// The numbers the collector knows viewers by, oldest first (see
    /// [`RefTables::viewer_number`]).
    viewers: std::collections::VecDeque<(String, u32)>,
    /// The last viewer number handed out.
    last_viewer: u32,
}

/// How many viewers' numbers are kept; one past them gets a fresh number when it comes back
/// (the collector then shows it the open popups once more).
const VIEWER_NUMBERS_KEPT: usize = 64;

impl RefTables {
    /// The state of a frame, created empty on first use.
    pub fn frame(&mut self, tab: TabId, frame: u32) -> &mut FrameState {
        self.frames.entry((tab, frame)).or_default()
    }

    /// The state of a frame, if it has any.
    pub fn get(&self, tab: TabId, frame: u32) -> Option<&FrameState> {
        self.frames.get(&(tab, frame))
    }

    /// A snapshot of `frame` starts: it takes the next generation.
    pub fn begin(&mut self, tab: TabId, frame: u32) -> Ticket {
        let state = self.frame(tab, frame);
        state.issued += 1;
        Ticket {
            tab,
            frame,
            generation: state.issued,
        }
    }

    /// A snapshot finished and may commit unless a snapshot that started after it has already
    /// committed; then it must change nothing and fail with `SUPERSEDED`.
    pub fn commit(&mut self, ticket: Ticket) -> Result<&mut FrameState, OpError> {
        let state = self.frame(ticket.tab, ticket.frame);
        if state.committed > ticket.generation {
            return Err(OpError::new(
                ErrorCode::Superseded,
                "A newer snapshot of this page finished first, so this one's refs and version \
                 were not kept. Use the newer snapshot, or take a new one.",
            ));
        }
        state.committed = ticket.generation;
        Ok(state)
    }

    /// A committed snapshot saw a new top document: every other frame of the tab belonged to
    /// the old one (frames of the new page get new frame IDs).
    pub fn forget_subframes(&mut self, tab: TabId) {
        self.frames
            .retain(|&(t, frame), _| t != tab || frame == TOP_FRAME);
    }

    /// Keys of the frame's current refs whose elements are not yet known to be gone.
    pub fn live_keys(&self, tab: TabId, frame: u32) -> Vec<u32> {
        self.get(tab, frame)
            .and_then(|f| f.doc.as_ref())
            .map(|d| d.refs.live_keys())
            .unwrap_or_default()
    }

    /// Finds what `element_ref` points at in `tab`, or says why it cannot be used.
    pub fn resolve(&self, tab: TabId, element_ref: ElementRef) -> Result<ResolvedRef, OpError> {
        let frame = frame_of(element_ref);
        let Some(doc) = self.get(tab, frame).and_then(|f| f.doc.as_ref()) else {
            let why = if frame == TOP_FRAME {
                "no snapshot of this tab has been taken since the extension started".to_owned()
            } else {
                format!("frame {frame} of this tab has not been observed (or has gone)")
            };
            return Err(stale(element_ref, &why));
        };
        let Some(binding) = doc.refs.binding(element_ref.index) else {
            return Err(stale(
                element_ref,
                "it was not issued for the current document of its frame",
            ));
        };
        Ok(ResolvedRef {
            frame,
            index: element_ref.index,
            key: binding.key,
            doc_token: doc.doc_token.clone(),
            document_id: doc.document_id.clone(),
            identity: binding.identity.clone(),
        })
    }

    /// Records that the page found ref `resolved` gone and acted on its replacement `key`.
    pub fn rebind(&mut self, tab: TabId, resolved: &ResolvedRef, key: u32) {
        if let Some(doc) = self
            .frames
            .get_mut(&(tab, resolved.frame))
            .and_then(|f| f.doc.as_mut())
            .filter(|d| d.document_id == resolved.document_id && d.doc_token == resolved.doc_token)
        {
            doc.refs.rebind(resolved.index, key);
        }
    }

    /// Forgets what `viewer` was shown, in every document (its session ended).
    pub fn forget_viewer(&mut self, viewer: &str) {
        for doc in self.frames.values_mut().filter_map(|f| f.doc.as_mut()) {
            doc.views.forget(viewer);
        }
        self.viewers.retain(|(name, _)| name != viewer);
    }

    /// The number the in-page collector knows `viewer` by: its own memory of what each viewer
    /// was shown (popups) is kept under it. A number, not the hub's session name, which no
    /// page needs to see; never reused, so a forgotten viewer's memory is never another's.
    pub fn viewer_number(&mut self, viewer: &str) -> u32 {
        if let Some((_, number)) = self.viewers.iter().find(|(name, _)| name == viewer) {
            return *number;
        }
        if self.viewers.len() == VIEWER_NUMBERS_KEPT {
            self.viewers.pop_front();
        }
        self.last_viewer += 1;
        self.viewers
            .push_back((viewer.to_owned(), self.last_viewer));
        self.last_viewer
    }

    /// Drops a closed tab's state.
    pub fn forget_tab(&mut self, tab: TabId) {
        self.frames.retain(|&(t, _), _| t != tab);
    }

    /// The frames of `tab` that have state, sorted.
    pub fn frames_of(&self, tab: TabId) -> Vec<(u32, &FrameState)> {
        let mut frames: Vec<(u32, &FrameState)> = self
            .frames
            .iter()
            .filter(|((t, _), _)| *t == tab)
            .map(|(&(_, f), s)| (f, s))
            .collect();
        frames.sort_unstable_by_key(|(f, _)| *f);
        frames
    }

    /// Puts back a frame loaded from storage, unless it already has newer state.
    pub fn restore(&mut self, tab: TabId, frame: u32, state: FrameState) {
        self.frames.entry((tab, frame)).or_insert(state);
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
    /// The worker's ref state, restored from session storage when the worker starts.
    static TABLES: RefCell<RefTables> = RefCell::new(RefTables::default());
}

/// Runs `f` with the worker's ref state. `f` must not await (it cannot: it is synchronous), so
/// no observation can interleave with another's ref assignment.
pub fn with_tables<R>(f: impl FnOnce(&mut RefTables) -> R) -> R {
    TABLES.with(|tables| f(&mut tables.borrow_mut()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fence_keeps_the_newest_snapshot() {
        let mut tables = RefTables::default();
        let first = tables.begin(1, 0);
        let second = tables.begin(1, 0);
        // The later snapshot finishes first and commits; the earlier one may not overwrite it.
        tables.commit(second).unwrap();
        let err = tables.commit(first).unwrap_err();
        assert_eq!(err.code, ErrorCode::Superseded);
        // In order, both commit.
        let third = tables.begin(1, 0);
        let fourth = tables.begin(1, 0);
        tables.commit(third).unwrap();
        tables.commit(fourth).unwrap();
    }

    #[test]
    fn fences_are_per_frame_and_per_tab() {
        let mut tables = RefTables::default();
        let top = tables.begin(1, 0);
        let frame = tables.begin(1, 3);
        let other_tab = tables.begin(2, 0);
        let newer_top = tables.begin(1, 0);
        tables.commit(newer_top).unwrap();
        tables.commit(frame).unwrap();
        tables.commit(other_tab).unwrap();
        assert_eq!(tables.commit(top).unwrap_err().code, ErrorCode::Superseded);
    }

    /// Shows `key` in `document` of frame `frame`, as an observation would.
    fn show(tables: &mut RefTables, frame: u32, document: &str, token: &str, key: u32) -> u32 {
        let state = tables.frame(1, frame);
        let mut last = state.last_index;
        let index = state.document(document, token).refs.assign(key, &mut last);
        state.last_index = last;
        index
    }

    #[test]
    fn a_new_document_keeps_counting_and_old_refs_stay_stale() {
        let mut tables = RefTables::default();
        assert_eq!(show(&mut tables, 0, "DOC-A", "t1", 5), 1);
        // The new page's first element does not reuse @e1, so the old @e1 cannot hit it.
        assert_eq!(show(&mut tables, 0, "DOC-B", "t2", 1), 2);
        assert_eq!(tables.get(1, 0).unwrap().doc.as_ref().unwrap().version, 0);
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
    fn frame_refs_resolve_in_their_own_frame() {
        let mut tables = RefTables::default();
        show(&mut tables, 0, "D0", "t", 10);
        show(&mut tables, 4, "D4", "t", 20);
        let top = tables.resolve(1, ElementRef::top(1)).unwrap();
        assert_eq!((top.frame, top.key), (0, 10));
        let framed = ElementRef {
            frame: Some(4),
            index: 1,
        };
        assert_eq!(framed.to_string(), "@f4e1");
        let inner = tables.resolve(1, framed).unwrap();
        assert_eq!((inner.frame, inner.key), (4, 20));
        assert_eq!(inner.document_id, "D4");
        // `@f0e1` is the top document's `@e1`.
        let zero = ElementRef {
            frame: Some(0),
            index: 1,
        };
        assert_eq!(tables.resolve(1, zero).unwrap().key, 10);
        // A frame that was never observed (or has gone) is stale.
        let missing = ElementRef {
            frame: Some(9),
            index: 1,
        };
        let err = tables.resolve(1, missing).unwrap_err();
        assert_eq!(err.code, ErrorCode::StaleRef);
        assert!(err.message.contains("frame 9"), "{}", err.message);
        tables.forget_subframes(1);
        assert!(tables.resolve(1, framed).is_err());
        assert!(tables.resolve(1, ElementRef::top(1)).is_ok());
        assert_eq!(element_ref(0, 3), ElementRef::top(3));
        assert_eq!(element_ref(4, 3).to_string(), "@f4e3");
    }

    #[test]
    fn unknown_refs_and_tabs_are_stale() {
        let mut tables = RefTables::default();
        show(&mut tables, 0, "D", "t", 5);
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
    fn viewers_are_numbers_to_the_page_and_never_share_one() {
        let mut tables = RefTables::default();
        let alpha = tables.viewer_number("s1-abc");
        let beta = tables.viewer_number("token:j1");
        assert_ne!(alpha, beta);
        assert_eq!(tables.viewer_number("s1-abc"), alpha);
        tables.forget_viewer("s1-abc");
        let again = tables.viewer_number("s1-abc");
        assert!(
            again != alpha && again != beta,
            "a forgotten viewer starts afresh"
        );
        for n in 0..VIEWER_NUMBERS_KEPT {
            tables.viewer_number(&format!("v{n}"));
        }
        assert_eq!(tables.viewers.len(), VIEWER_NUMBERS_KEPT, "bounded");
    }

    #[test]
    fn a_viewer_that_ends_leaves_no_baselines_behind() {
        let mut tables = RefTables::default();
        show(&mut tables, 0, "D", "t", 5);
        let doc = tables.frame(1, 0).doc.as_mut().unwrap();
        doc.views.of_mut("alpha");
        doc.views.of_mut("beta");
        tables.forget_viewer("alpha");
        let doc = tables.get(1, 0).unwrap().doc.as_ref().unwrap();
        assert_eq!(doc.views.viewers(), ["beta"]);
    }

    #[test]
    fn action_rebinding_applies_only_to_the_same_document() {
        let mut tables = RefTables::default();
        show(&mut tables, 0, "D", "t", 5);
        let resolved = tables.resolve(1, ElementRef::top(1)).unwrap();
        let mut elsewhere = resolved.clone();
        elsewhere.document_id = "OTHER".into();
        tables.rebind(1, &elsewhere, 9);
        assert_eq!(tables.resolve(1, ElementRef::top(1)).unwrap().key, 5);
        tables.rebind(1, &resolved, 9);
        assert_eq!(tables.resolve(1, ElementRef::top(1)).unwrap().key, 9);
    }
}
