//! A snapshot: observe one document of the tab — one collector walk in the page, then refs,
//! query, window, delta and baseline in the [engine](super::engine).
//!
//! The snapshot takes a generation from its frame's fence when it starts and commits only if
//! no snapshot that started later has committed meanwhile (else `SUPERSEDED`, changing
//! nothing). The commit is synchronous once the page has answered, so a snapshot dropped at its
//! deadline, or whose connection closed, never gets there.

use std::collections::HashSet;

use tabwire_protocol::{Observation, ObservedNode, OpError, SnapshotRequest, TabId, Target};

use std::future::Future;
use std::pin::Pin;

use super::engine::{self, Observed, SnapshotFacts, Source};
use super::frames;
use crate::checkpoint::Checkpoint;
use crate::chrome_tabs::resolve_tab;
use crate::observation::delta::Params;
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

/// Takes an observation of a document of the tab. Without a `frameId`, the visible iframes
/// that the window shows have their documents inlined under their lines (see
/// [`inline_frames`]).
pub async fn snapshot(
    tab_id: Option<TabId>,
    request: SnapshotRequest,
    checkpoint: &Checkpoint,
) -> Result<Observation, OpError> {
    let tab = resolve_tab(tab_id).await?.id;
    let observed = observe_document(tab, &request, checkpoint).await?;
    let observed = if request.frame_id.is_none() {
        inline_frames(tab, &request, observed, checkpoint, 1).await
    } else {
        observed
    };
    refs::store::save(tab);
    Ok(observed.observation)
}

/// How deep frames are inlined: a page, its iframes, theirs.
const FRAME_LEVELS: u8 = 3;

/// The documents of the iframes `observed` showed, observed in the rest of the request's
/// budget and put under their iframe's line, one step deeper: their lines in a full
/// observation (with a line saying how to page on when a frame did not fit), their changes in
/// a delta (against the frame's latest baseline for the same budget; all its lines when there
/// is none). A frame that cannot be read keeps only its line, which names its `frameId`.
fn inline_frames<'a>(
    tab: TabId,
    request: &'a SnapshotRequest,
    observed: Observed,
    checkpoint: &'a Checkpoint,
    level: u8,
) -> Pin<Box<dyn Future<Output = Observed> + 'a>> {
    Box::pin(async move {
        let Observed {
            mut observation,
            frames,
            mut lines,
            mut chars,
        } = observed;
        for shown in frames {
            let lines_left = request.max_nodes.saturating_sub(lines);
            let chars_left = request.max_chars.saturating_sub(chars);
            if lines_left == 0 || chars_left < MIN_FRAME_CHARS {
                break;
            }
            let params = Params {
                scope: None,
                query: request.query.clone(),
                offset: 0,
                max_nodes: lines_left,
                max_chars: chars_left,
            };
            let since = match observation.delta {
                Some(_) => refs::with_tables(|tables| {
                    tables
                        .get(tab, shown.frame)
                        .and_then(|state| state.doc.as_ref())
                        .and_then(|doc| doc.baselines.latest(&params))
                }),
                None => None,
            };
            let child_request = SnapshotRequest {
                frame_id: Some(shown.frame),
                scope: None,
                query: request.query.clone(),
                max_nodes: lines_left,
                max_chars: chars_left,
                offset: 0,
                since,
            };
            let Ok(child) = observe_document(tab, &child_request, checkpoint).await else {
                continue;
            };
            let child = if level < FRAME_LEVELS {
                inline_frames(tab, &child_request, child, checkpoint, level + 1).await
            } else {
                child
            };
            lines += child.lines;
            chars += child.chars;
            let step = shown.depth.saturating_add(1);
            let under = |mut node: ObservedNode| {
                node.depth = node.depth.saturating_add(step);
                node
            };
            let child = child.observation;
            observation
                .outside
                .extend(child.outside.into_iter().map(|mut outside| {
                    outside.nodes = outside.nodes.into_iter().map(under).collect();
                    outside
                }));
            match (&mut observation.delta, child.delta) {
                (None, _) => {
                    if child.nodes.is_empty() {
                        continue;
                    }
                    let mut inserted: Vec<ObservedNode> = shown
                        .hidden_line
                        .map(|text| ObservedNode {
                            element_ref: Some(shown.iframe),
                            text,
                            depth: shown.depth,
                        })
                        .into_iter()
                        .collect();
                    inserted.extend(child.nodes.into_iter().map(under));
                    if let Some(next) = child.next_offset {
                        inserted.push(ObservedNode {
                            element_ref: None,
                            text: format!(
                                "(frame {}: {} more lines; snapshot it with frameId {} and \
                                 offset {next})",
                                shown.frame, child.omitted_nodes, shown.frame
                            ),
                            depth: step,
                        });
                    }
                    let at = observation
                        .nodes
                        .iter()
                        .position(|n| n.element_ref == Some(shown.iframe))
                        .map_or(observation.nodes.len(), |i| i + 1);
                    observation.nodes.splice(at..at, inserted);
                }
                (Some(delta), Some(child_delta)) => {
                    delta
                        .changed
                        .extend(child_delta.changed.into_iter().map(under));
                    delta.removed.extend(child_delta.removed);
                }
                (Some(delta), None) => delta.changed.extend(child.nodes.into_iter().map(under)),
            }
        }
        Observed {
            observation,
            frames: Vec::new(),
            lines,
            chars,
        }
    })
}

/// A frame is inlined only when at least this many characters of the budget are left.
const MIN_FRAME_CHARS: u32 = 40;

/// Observes one document (the request's frame, else the top one) and commits its refs and
/// baseline.
async fn observe_document(
    tab: TabId,
    request: &SnapshotRequest,
    checkpoint: &Checkpoint,
) -> Result<Observed, OpError> {
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
    let observed = refs::with_tables(|tables| {
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
        let observed = engine::observe(state, source, request, reply.value, &unique_anchors);
        if new_top_document {
            tables.forget_subframes(tab);
        }
        Ok::<_, OpError>(observed)
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
    Ok(observed)
}
