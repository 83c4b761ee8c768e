//! `Snapshot`: observe one document of the tab — one collector walk in the page, then refs,
//! query, window, delta and baseline in the engine (`observation::engine`).
//!
//! The snapshot takes a generation from its frame's fence when it starts and commits only if
//! no snapshot that started later has committed meanwhile (else `SUPERSEDED`, changing
//! nothing). The commit is synchronous once the page has answered, so a snapshot dropped at its
//! deadline, or whose connection closed, never gets there.

use tabwire_protocol::{OpError, OpResult, SnapshotRequest, TabId, Target};

use crate::observation::engine::{self, SnapshotFacts, Source};
use crate::ops::{frames, tabs::resolve_tab, target};
use crate::page::{self, MissingFrame, PageCommand};
use crate::refs::{self, TOP_FRAME};
use crate::requests::Checkpoint;
use crate::timer::now_ms;

/// Snapshots slower than this are logged with a breakdown of their time.
const SLOW_SNAPSHOT_MS: f64 = 50.0;

/// Takes an observation of a document of the tab.
pub async fn snapshot(
    tab_id: Option<TabId>,
    request: SnapshotRequest,
    checkpoint: &Checkpoint,
) -> Result<OpResult, OpError> {
    let tab = resolve_tab(tab_id).await?.id;
    let frame = target::frame_for(request.frame_id, request.scope.as_ref())?;
    let scope = request
        .scope
        .as_ref()
        .map(|scope| target::prepare(tab, scope, frame))
        .transpose()?;
    let (ticket, known) =
        refs::with_tables(|tables| (tables.begin(tab, frame), tables.live_keys(tab, frame)));
    let missing = scope
        .as_ref()
        .map_or(MissingFrame::Requested, |s| s.missing_frame());
    let asked = now_ms();
    let reply = page::run::<SnapshotFacts>(
        tab,
        frame,
        &PageCommand::Snapshot {
            scope: scope.as_ref().map(|s| s.page.clone()),
            known,
        },
        missing,
    )
    .await?;
    let page_ms = now_ms() - asked;
    if let Some(scope) = &scope {
        scope.check_document(&reply.document_id)?;
    }
    let mut reply = reply;
    frames::name_child_frames(tab, frame, &mut reply.value.nodes).await;
    // Nothing is kept for a request whose answer nobody will read.
    checkpoint.check()?;
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
        let observation = engine::observe(state, source, &request, reply.value);
        if new_top_document {
            tables.forget_subframes(tab);
        }
        Ok::<_, OpError>(observation)
    })?;
    // Where the time went, for the slow ones only: a line per snapshot costs time itself.
    let engine_ms = now_ms() - started;
    if page_ms + engine_ms >= SLOW_SNAPSHOT_MS {
        crate::log!(
            "snapshot of tab {tab} frame {frame}: {node_count} nodes ({} KB) collected in \
             {collector_ms} ms, page call {page_ms:.0} ms (reading {:.0} ms), engine \
             {engine_ms:.0} ms",
            reply.bytes / 1024,
            reply.parse_ms,
        );
    }
    refs::store::save(tab);
    Ok(OpResult::Snapshot(observation))
}
