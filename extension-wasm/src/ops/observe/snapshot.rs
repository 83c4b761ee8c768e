//! A snapshot: observe one document of the tab — one collector walk in the page, then refs,
//! query, window, delta and baseline in the [engine](super::engine).
//!
//! The snapshot takes a generation from its frame's fence when it starts and commits only if
//! no snapshot that started later has committed meanwhile (else `SUPERSEDED`, changing
//! nothing). The commit is synchronous once the page has answered, so a snapshot dropped at its
//! deadline, or whose connection closed, never gets there.

use std::collections::{HashMap, HashSet};

use tabwire_protocol::{
    ElementRef, Node, Observation, OpError, Outside, Page, SnapshotRequest, TabId, Target,
};

use std::future::Future;
use std::pin::Pin;

use super::engine::{self, Observed, ShownFrame, SnapshotFacts, Source};
use super::frames;
use crate::checkpoint::Checkpoint;
use crate::chrome_tabs::resolve_tab;
use crate::ops::target::ReadScope;
use crate::page::{self, MissingFrame, PageCommand, PageWindow};
use crate::refs::table::AnchorKey;
use crate::refs::{self, TOP_FRAME};
use crate::timer::{join, now_ms};
use tabwire_observation::delta::Params;

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

/// Takes an observation of a document of the tab for `viewer` (its `since` and the baseline it
/// leaves are that viewer's). Without a `frameId`, the visible iframes that the window shows
/// have their documents inlined under their lines (see [`with_frames`]).
pub async fn snapshot(
    tab_id: Option<TabId>,
    request: SnapshotRequest,
    viewer: &str,
    checkpoint: &Checkpoint,
) -> Result<Observation<Page>, OpError> {
    observe(tab_id, request, viewer, Changes::SinceBaseline, checkpoint).await
}

/// What an observation says about the lines outside its window that changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changes {
    /// Those that changed since the delta's baseline (nothing for a full window).
    SinceBaseline,
    /// Those that changed since the viewer's latest observation of the document, whatever
    /// its window: what an action's observation shows, even when it is a full window of its
    /// own budget (the agent's last view was a snapshot with another one).
    SinceLastView,
}

/// [`snapshot`], saying what changed outside the window as `changes` asks.
pub async fn observe(
    tab_id: Option<TabId>,
    request: SnapshotRequest,
    viewer: &str,
    changes: Changes,
    checkpoint: &Checkpoint,
) -> Result<Observation<Page>, OpError> {
    let Some(tab) = tab_id else {
        let tab = resolve_tab(None).await?.id;
        return observe_tab(tab, request, viewer, changes, checkpoint).await;
    };
    // A named tab is checked (that it is an ordinary tab, and its error if it is gone) beside
    // the page's work rather than before it: one round trip to the browser (~0.3 ms) less on
    // every snapshot. The check's error comes first.
    let (checked, observed) = join(
        resolve_tab(Some(tab)),
        observe_tab(tab, request, viewer, changes, checkpoint),
    )
    .await;
    checked?;
    observed
}

/// [`observe`] for a tab the call has just acted on: Chrome's view of it is not read again (a
/// round trip to the browser, about as long as the page's own work on a small page).
pub async fn observe_tab(
    tab: TabId,
    request: SnapshotRequest,
    viewer: &str,
    changes: Changes,
    checkpoint: &Checkpoint,
) -> Result<Observation<Page>, OpError> {
    let observed = observe_document(tab, &request, viewer, changes, checkpoint).await?;
    let observation = if request.frame_id.is_none() {
        with_frames(tab, &request, observed, viewer, checkpoint).await
    } else {
        observed.observation
    };
    refs::store::save(tab);
    Ok(observation)
}

/// How deep frames are inlined: frames, their frames, and theirs.
const FRAME_LEVELS: u8 = 3;

/// A frame's document as inlined under its iframe's line.
struct Inlined {
    /// The iframe.
    shown: ShownFrame,
    /// Its lines, one level deeper than the iframe's (its own frames inlined in turn), after
    /// the iframe's line when the window did not show it, and a line saying how to page on
    /// when it did not fit.
    nodes: Vec<Node<ElementRef>>,
}

impl Inlined {
    /// Puts the frame's lines after its iframe's line in `lines` (at the end when the window
    /// did not show that line: they start with it then).
    fn splice_into(self, lines: &mut Vec<Node<ElementRef>>) {
        let at = match &self.shown.hidden_line {
            Some(_) => lines.len(),
            None => lines
                .iter()
                .position(|n| n.node_ref == Some(self.shown.iframe))
                .map_or(lines.len(), |i| i + 1),
        };
        lines.splice(at..at, self.nodes);
    }
}

/// The top document's observation with its frames inlined. In a full observation their lines
/// follow their iframes' lines; in a delta, their lines are compared with those the baseline
/// showed (kept in the baseline's `frames`): lines that are new or changed join the
/// delta's changes, refs no longer shown its removals, and the new lines go into the new
/// baseline (a new version even when the document's own window did not change).
async fn with_frames(
    tab: TabId,
    request: &SnapshotRequest,
    observed: Observed,
    viewer: &str,
    checkpoint: &Checkpoint,
) -> Observation<Page> {
    let Observed {
        mut observation,
        frames,
        lines,
        chars,
    } = observed;
    let inlined = inline_frames(
        tab,
        request,
        frames,
        lines,
        chars,
        Inlining {
            viewer,
            checkpoint,
            level: 1,
        },
        &mut observation.outside,
    )
    .await;
    let shown: Vec<Node<ElementRef>> = inlined.iter().flat_map(|f| f.nodes.clone()).collect();
    let params = Params::of(request);
    let document_id = observation.of.document_id.clone();
    let since = observation.delta.as_ref().map(|d| d.since);
    let before = refs::with_tables(|tables| {
        let doc = tables.frame(tab, TOP_FRAME).doc.as_mut()?;
        if doc.document_id != document_id {
            return None;
        }
        let old = since
            .and_then(|since| doc.views.of(viewer)?.matching(since, &params))
            .map(|b| b.frames.clone())
            .unwrap_or_default();
        let (changed, removed) = compare_lines(&old, &shown);
        let version = match &observation.delta {
            Some(delta) if observation.version == delta.since => {
                if changed.is_empty() && removed.is_empty() {
                    return Some((changed, removed, observation.version));
                }
                // The document's window did not change but a frame did: a new baseline.
                let mut baseline = doc
                    .views
                    .of(viewer)?
                    .matching(delta.since, &params)?
                    .clone();
                doc.version += 1;
                baseline.version = doc.version;
                doc.views.of_mut(viewer).push(baseline);
                doc.version
            }
            _ => observation.version,
        };
        if let Some(baseline) = doc.views.of_mut(viewer).get_mut(version) {
            baseline.frames = shown.clone();
        }
        Some((changed, removed, version))
    });
    match observation.delta.as_mut() {
        None => {
            for frame in inlined {
                frame.splice_into(&mut observation.nodes);
            }
        }
        Some(delta) => {
            if let Some((changed, removed, version)) = before {
                delta.changed.extend(changed);
                delta.removed.extend(removed);
                observation.version = version;
            }
        }
    }
    observation
}

/// The lines of `new` that are not in `old` as they are (a ref's line with the option lines
/// after it), and the refs of `old` that `new` no longer shows.
fn compare_lines(
    old: &[Node<ElementRef>],
    new: &[Node<ElementRef>],
) -> (Vec<Node<ElementRef>>, Vec<ElementRef>) {
    fn groups(lines: &[Node<ElementRef>]) -> Vec<(Option<ElementRef>, &[Node<ElementRef>])> {
        let mut out = Vec::new();
        let mut start = 0;
        for i in 1..=lines.len() {
            if i == lines.len() || lines[i].node_ref.is_some() {
                if start < i {
                    out.push((lines[start].node_ref, &lines[start..i]));
                }
                start = i;
            }
        }
        out
    }
    let before: HashMap<ElementRef, &[Node<ElementRef>]> = groups(old)
        .into_iter()
        .filter_map(|(r, lines)| Some((r?, lines)))
        .collect();
    let mut changed = Vec::new();
    let mut kept = HashSet::new();
    for (element_ref, lines) in groups(new) {
        if let Some(element_ref) = element_ref {
            kept.insert(element_ref);
            if before.get(&element_ref) == Some(&lines) {
                continue;
            }
        }
        changed.extend(lines.iter().cloned());
    }
    let removed = groups(old)
        .into_iter()
        .filter_map(|(r, _)| r)
        .filter(|r| !kept.contains(r))
        .collect();
    (changed, removed)
}

/// What inlining frames at one level carries down: whom the observation is for, the request's
/// checkpoint, and how deep the frames are.
#[derive(Clone, Copy)]
struct Inlining<'a> {
    viewer: &'a str,
    checkpoint: &'a Checkpoint,
    level: u8,
}

/// The documents of the iframes a window showed, each observed whole (no delta: the top
/// document's baseline keeps what was shown of them) in what is left of the request's budget,
/// their own frames inlined in turn. A frame that cannot be read keeps only its iframe line,
/// which names its `frameId`. Popups the frames' observations report go into `outside`.
fn inline_frames<'a>(
    tab: TabId,
    request: &'a SnapshotRequest,
    frames: Vec<ShownFrame>,
    mut lines: u32,
    mut chars: u32,
    at: Inlining<'a>,
    outside: &'a mut Vec<Outside<ElementRef>>,
) -> Pin<Box<dyn Future<Output = Vec<Inlined>> + 'a>> {
    Box::pin(async move {
        let mut inlined = Vec::new();
        for shown in frames {
            let lines_left = request.max_nodes.saturating_sub(lines);
            let chars_left = request.max_chars.saturating_sub(chars);
            if lines_left == 0 || chars_left < MIN_FRAME_CHARS {
                break;
            }
            let child_request = SnapshotRequest {
                frame_id: Some(shown.frame),
                scope: None,
                query: request.query.clone(),
                max_nodes: lines_left,
                max_chars: chars_left,
                offset: 0,
                since: None,
                include_hidden: request.include_hidden,
            };
            let Ok(child) = observe_document(
                tab,
                &child_request,
                at.viewer,
                Changes::SinceBaseline,
                at.checkpoint,
            )
            .await
            else {
                continue;
            };
            let Observed {
                observation: mut child_observation,
                frames: grandchildren,
                lines: child_lines,
                chars: child_chars,
            } = child;
            lines += child_lines;
            chars += child_chars;
            let step = shown.depth.saturating_add(1);
            let under = |mut node: Node<ElementRef>| {
                node.depth = node.depth.saturating_add(step);
                node
            };
            if at.level < FRAME_LEVELS {
                let deeper = inline_frames(
                    tab,
                    &child_request,
                    grandchildren,
                    child_lines,
                    child_chars,
                    Inlining {
                        level: at.level + 1,
                        ..at
                    },
                    &mut child_observation.outside,
                )
                .await;
                for frame in deeper {
                    frame.splice_into(&mut child_observation.nodes);
                }
            }
            outside.extend(child_observation.outside.into_iter().map(|mut popup| {
                popup.nodes = popup.nodes.into_iter().map(under).collect();
                popup
            }));
            if child_observation.nodes.is_empty() {
                continue;
            }
            let mut nodes: Vec<Node<ElementRef>> = shown
                .hidden_line
                .clone()
                .map(|text| Node {
                    depth: shown.depth,
                    ..Node::new(Some(shown.iframe), text)
                })
                .into_iter()
                .collect();
            nodes.extend(child_observation.nodes.into_iter().map(under));
            if let Some(next) = child_observation.next_offset {
                let about = if child_observation.estimated {
                    "about "
                } else {
                    ""
                };
                let more = format!(
                    "(frame {}: {about}{} more lines; snapshot it with frameId {} and offset {next})",
                    shown.frame, child_observation.omitted_nodes, shown.frame
                );
                nodes.push(Node {
                    depth: step,
                    ..Node::new(None, more)
                });
            }
            inlined.push(Inlined { shown, nodes });
        }
        inlined
    })
}

/// A frame is inlined only when at least this many characters of the budget are left.
const MIN_FRAME_CHARS: u32 = 40;

/// Observes one document (the request's frame, else the top one) for `viewer` and commits its
/// refs and that viewer's baseline.
async fn observe_document(
    tab: TabId,
    request: &SnapshotRequest,
    viewer: &str,
    changes: Changes,
    checkpoint: &Checkpoint,
) -> Result<Observed, OpError> {
    let scope = ReadScope::prepare(tab, request.frame_id, request.scope.as_ref())?;
    let frame = scope.frame;
    let (ticket, known, viewer_number, changed_since) = refs::with_tables(|tables| {
        // The page model's generation of the baseline a delta will compare with.
        let changed_since = (|| {
            let views = tables.get(tab, frame)?.doc.as_ref()?.views.of(viewer)?;
            let baseline = match (request.since, changes) {
                (Some(since), _) => views.matching(since, &Params::of(request)),
                (None, Changes::SinceLastView) => views.newest(),
                (None, Changes::SinceBaseline) => None,
            };
            Some(baseline?.page_generation)
        })();
        (
            tables.begin(tab, frame),
            tables.live_keys(tab, frame),
            tables.viewer_number(viewer),
            changed_since,
        )
    });
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
                changed_since,
            }),
            include_hidden: request.include_hidden,
            viewer: Some(viewer_number),
            query: request.query.clone(),
            check: page::checks_page_model(),
        },
        missing,
    )
    .await?;
    if let Some(mismatch) = &reply.value.model_mismatch {
        return Err(page::page_model_differs(tab, frame, mismatch));
    }
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
            viewer,
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
