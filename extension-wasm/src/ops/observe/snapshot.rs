//! A snapshot: observe one document of the tab — one collector walk in the page, then refs,
//! query, window, delta and baseline in the [engine](super::engine).
//!
//! The snapshot takes a generation from its frame's fence when it starts and commits only if
//! no snapshot that started later has committed meanwhile (else `SUPERSEDED`, changing
//! nothing). The commit is synchronous once the page has answered, so a snapshot dropped at its
//! deadline, or whose connection closed, never gets there.

use std::collections::HashSet;

use tabwire_protocol::{Observation, OpError, SnapshotRequest, TabId, Target};

use super::engine::{self, SnapshotFacts, Source};
use super::frames;
use crate::checkpoint::Checkpoint;
use crate::chrome_tabs::resolve_tab;
use crate::ops::target::ReadScope;
use crate::page::{self, MissingFrame, PageCommand, PageWindow};
use crate::refs::table::AnchorKey;
use crate::refs::{self, TOP_FRAME};
use crate::timer::now_ms;

/// The anchors of this walk's possible replacements (see `RefTable::replacement_candidates`)
/// that the page finds on exactly one element of the whole document: the walk alone cannot tell,
/// since it skips hidden elements and, for a scoped snapshot, everything outside the scope. The
/// extra page call happens only when a removed element's lookalike turned up, which is rare;
/// if it fails, nothing is rebound.
async fn unique_anchors(
    tab: TabId,
    frame: u32,
    document_id: &str,
    facts: &SnapshotFacts,
    missing: MissingFrame<'_>,
) -> HashSet<AnchorKey> {
    let candidates: Vec<AnchorKey> = refs::with_tables(|tables| {
        tables
            .get(tab, frame)
            .and_then(|state| state.doc.as_ref())
            .filter(|doc| doc.document_id == document_id && doc.doc_token == facts.doc)
            .map(|doc| {
                doc.refs
                    .replacement_candidates(&facts.nodes, &facts.gone)
                    .into_iter()
                    .map(|(_, _, anchors)| anchors)
                    .collect()
            })
            .unwrap_or_default()
    });
    if candidates.is_empty() {
        return HashSet::new();
    }
    let command = PageCommand::CountAnchors {
        anchors: candidates.clone(),
    };
    match page::run::<Vec<u32>>(tab, frame, &command, missing).await {
        Ok(counts) if counts.document_id == document_id => candidates
            .into_iter()
            .zip(counts.value)
            .filter(|(_, count)| *count == 1)
            .map(|(anchors, _)| anchors)
            .collect(),
        _ => HashSet::new(),
    }
}

/// Snapshots slower than this are logged with a breakdown of their time.
const SLOW_SNAPSHOT_MS: f64 = 50.0;

/// Takes an observation of a document of the tab.
pub async fn snapshot(
    tab_id: Option<TabId>,
    request: SnapshotRequest,
    checkpoint: &Checkpoint,
) -> Result<Observation, OpError> {
    let tab = resolve_tab(tab_id).await?.id;
    let scope = ReadScope::prepare(tab, request.frame_id, request.scope.as_ref())?;
    let frame = scope.frame;
    let (ticket, known) =
        refs::with_tables(|tables| (tables.begin(tab, frame), tables.live_keys(tab, frame)));
    let missing = scope.missing_frame();
    let asked = now_ms();
    let reply = page::run::<SnapshotFacts>(
        tab,
        frame,
        &PageCommand::Snapshot {
            scope: scope.page_target(),
            known,
            window: request.query.is_none().then_some(PageWindow {
                offset: request.offset,
                lines: request.max_nodes,
                chars: request.max_chars,
            }),
        },
        missing,
    )
    .await?;
    let page_ms = now_ms() - asked;
    scope.check_document(&reply.document_id)?;
    let mut reply = reply;
    frames::name_child_frames(tab, frame, &mut reply.value.nodes).await;
    let unique_anchors =
        unique_anchors(tab, frame, &reply.document_id, &reply.value, missing).await;
    // Nothing is kept for a request whose answer nobody will read.
    checkpoint.check_alive()?;
    let started = now_ms();
    let collector_ms = reply.value.ms;
    let node_count = reply.value.nodes.len();
    let scope_ref = match &request.scope {
        Some(Target::Ref(element_ref)) => Some(element_ref.index),
        _ => None,
    };
    let document_id = reply.document_id;
    let observation = refs::with_tables(|tables| {
        let state = tables.commit(ticket)?;
        // The top document changed (not merely observed for the first time): the old page's
        // frames are gone, and their refs with them.
        let new_top_document = frame == TOP_FRAME
            && state
                .doc
                .as_ref()
                .is_some_and(|d| d.document_id != document_id);
        let source = Source {
            tab,
            frame,
            document_id: &document_id,
            scope_ref,
        };
        let observation = engine::observe(state, source, &request, reply.value, &unique_anchors);
        if new_top_document {
            tables.forget_subframes(tab);
        }
        Ok::<_, OpError>(observation)
    })?;
    // Where the time went, for the slow ones only: a line per snapshot costs time itself.
    let engine_ms = now_ms() - started;
    if page_ms + engine_ms >= SLOW_SNAPSHOT_MS {
        crate::chrome::log!(
            "snapshot of tab {tab} frame {frame}: {node_count} nodes ({} KB) collected in \
             {collector_ms} ms, page call {page_ms:.0} ms (reading {:.0} ms), engine \
             {engine_ms:.0} ms",
            reply.bytes / 1024,
            reply.parse_ms,
        );
    }
    refs::store::save(tab);
    Ok(observation)
}
