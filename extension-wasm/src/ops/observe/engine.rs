//! The observation engine: from one collector walk to an [`Observation`], in pure Rust.
//!
//! [`observe`] runs after the fence has let a snapshot commit, synchronously, so nothing can
//! interleave with it. In order it: binds the frame's state to the walked document (a new
//! `documentId` replaces refs and baselines); records elements that left the document and
//! rebinds gone refs to unambiguous replacements; renders every node; filters by the query
//! (whole rows and list items); takes the window from `offset` within the budget; hands out
//! refs to the nodes shown; and answers with the window, or with a delta against a matching
//! baseline of the same viewer. The window becomes a new baseline of that viewer's under the
//! next version (versions count per document, whoever looks, so a version names one view).
//!
//! It sits above both the observation vocabulary (`observation`: facts, rendering, windows,
//! deltas) and the per-frame ref state (`refs`), which it puts together.

use std::collections::HashSet;

use serde::Deserialize;
use tabwire_protocol::{
    Delta, ElementRef, Node, Observation, Outside, Page, SnapshotRequest, TabId,
};

use crate::refs::table::AnchorKey;
use crate::refs::{FrameState, TOP_FRAME, element_ref};
use tabwire_observation::delta::{self, Baseline, Entry, Params, View};
use tabwire_observation::facts::{ClosedPopup, PageNode, PagePopup};
use tabwire_observation::inline;
use tabwire_observation::render::{Detail, render_node};
use tabwire_observation::window::{self, Budget, Unit};

/// The collector's snapshot answer.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SnapshotFacts {
    /// The document's URL.
    pub url: String,
    /// The document's title.
    pub title: String,
    /// The collector's document token (see `refs`).
    pub doc: String,
    /// The visible nodes of the document or scope, in document order: all of them, or (when
    /// a window was asked for) those the window can show.
    pub nodes: Vec<PageNode>,
    /// Lines before the first node sent, and a lower bound of their characters.
    pub before: u32,
    /// See `before`.
    pub before_chars: u32,
    /// Lines after the last node sent, and a lower bound of their characters.
    pub after: u32,
    /// See `after`.
    pub after_chars: u32,
    /// Whether `after` and `after_chars` are estimates: the page model had not walked the
    /// whole document yet (`pendingEstimate` in js/collector/25-model.js).
    pub estimated: bool,
    /// Popups that opened outside the window.
    pub outside: Vec<PagePopup>,
    /// Popups sent that way before that have closed.
    pub closed: Vec<ClosedPopup>,
    /// Keys the wasm asked about whose elements have left the document.
    pub gone: Vec<u32>,
    /// When the scope was a gone ref, the key of the replacement the page found.
    pub scope_rebound: Option<u32>,
    /// How long the walk took in the page, in milliseconds.
    pub ms: f64,
    /// In the check mode ([`crate::page::checks_page_model`]): where the kept page model
    /// differed from a fresh walk.
    pub model_mismatch: Option<String>,
    /// The page model's generation these facts come from (0: a walk of a scope, no model).
    pub generation: u64,
    /// Nodes outside the window that changed after the generation the request named.
    pub changed: Option<ChangedOutside>,
}

/// Nodes outside a window that changed since a delta's baseline.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ChangedOutside {
    /// How many changed.
    pub count: u32,
    /// The first of them.
    pub nodes: Vec<PageNode>,
}

/// Where the observation comes from.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The tab.
    pub tab: TabId,
    /// The frame (0: top).
    pub frame: u32,
    /// Chrome's ID of the walked document.
    pub document_id: &'a str,
    /// The ref number of the scope, when the scope was a ref of this frame.
    pub scope_ref: Option<u32>,
    /// Whom the observation is shown to (the hub's name for the MCP session): the baselines it
    /// is compared with and becomes are this viewer's.
    pub viewer: &'a str,
}

/// An observation, and what its window showed that frames inlined into it need.
#[derive(Debug)]
pub struct Observed {
    /// The observation of this frame's document.
    pub observation: Observation<Page>,
    /// The iframes the window showed whose frame is known, in order.
    pub frames: Vec<ShownFrame>,
    /// Lines the window showed.
    pub lines: u32,
    /// Characters of those lines.
    pub chars: u32,
}

/// An iframe the window showed, or (for a query) any iframe of the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShownFrame {
    /// Chrome's ID of its frame.
    pub frame: u32,
    /// The iframe's own ref.
    pub iframe: ElementRef,
    /// The iframe line's depth.
    pub depth: u8,
    /// The iframe's line, when the window did not show it (a query it did not match).
    pub hidden_line: Option<String>,
}

/// Builds the observation of `facts` and commits its refs and baseline into `state`.
pub fn observe(
    state: &mut FrameState,
    source: Source<'_>,
    request: &SnapshotRequest,
    facts: SnapshotFacts,
    unique_anchors: &HashSet<AnchorKey>,
) -> Observed {
    let FrameState {
        last_index, doc, ..
    } = state;
    // Versions keep counting up across the frame's documents, like ref numbers: a `since`
    // from an earlier document can never name one of this document's baselines.
    let previous_version = doc.as_ref().map_or(0, |d| d.version);
    let doc = match doc {
        Some(d) if d.document_id == source.document_id && d.doc_token == facts.doc => d,
        _ => doc.insert(crate::refs::DocState::new(
            source.document_id,
            &facts.doc,
            previous_version,
        )),
    };

    if let (Some(index), Some(key)) = (source.scope_ref, facts.scope_rebound) {
        doc.refs.rebind(index, key);
    }
    doc.refs.mark_gone(&facts.gone);
    doc.refs.rebind_replacements(&facts.nodes, unique_anchors);

    let units = window::filter(
        window::units(&facts.nodes, Some(&facts.url)),
        request.query.as_deref(),
    );
    let shown = window::window_around(
        &units,
        request.offset,
        Budget {
            max_nodes: request.max_nodes,
            max_chars: request.max_chars,
        },
        window::Unsent {
            before: facts.before,
            before_chars: facts.before_chars,
            after: facts.after,
            after_chars: facts.after_chars,
        },
    );

    // Refs for the nodes shown, and the lines as the agent sees them.
    let mut frames = Vec::new();
    let mut shown_lines = 0u32;
    let mut shown_chars = 0u32;
    let mut entries = Vec::with_capacity(shown.slices.len());
    let mut lines: Vec<Vec<Node<ElementRef>>> = Vec::with_capacity(shown.slices.len());
    for slice in &shown.slices {
        let unit = &units[slice.unit];
        let index = doc.refs.assign(unit.key, last_index);
        let node = &facts.nodes[unit.node];
        if let Some(frame) = node.frame {
            frames.push(ShownFrame {
                frame,
                iframe: element_ref(source.frame, index),
                depth: node.depth,
                hidden_line: None,
            });
        }
        shown_lines += (slice.to - slice.from) as u32;
        shown_chars += unit.widths[slice.from..slice.to].iter().sum::<u32>();
        let observed = observed_lines(
            unit,
            slice.from..slice.to,
            element_ref(source.frame, index),
            node.depth,
            |key| element_ref(source.frame, doc.refs.assign(key, last_index)),
        );
        entries.push(Entry {
            index,
            text: observed
                .iter()
                .map(|line| line.text.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        });
        lines.push(observed);
    }
    doc.refs.note_identities(&facts.nodes);
    if request.query.is_some() {
        // A query looks into every frame of the document: those whose iframe line it did not
        // match are searched too, and shown with that line when something in them matches.
        let shown: HashSet<u32> = frames.iter().map(|f| f.frame).collect();
        for node in &facts.nodes {
            if let Some(frame) = node.frame.filter(|f| !shown.contains(f)) {
                let index = doc.refs.assign(node.key, last_index);
                frames.push(ShownFrame {
                    frame,
                    iframe: element_ref(source.frame, index),
                    depth: node.depth,
                    hidden_line: Some(render_node(node, Some(&facts.url), Detail::Full)),
                });
            }
        }
    }

    // Popups the window leaves out, each with the lines it does not show.
    let shown_keys: HashSet<u32> = shown.slices.iter().map(|s| units[s.unit].key).collect();
    let mut outside = Vec::new();
    for popup in &facts.outside {
        let mut nodes = Vec::new();
        for unit in window::units(&popup.nodes, Some(&facts.url)) {
            if shown_keys.contains(&unit.key) {
                continue;
            }
            let index = doc.refs.assign(unit.key, last_index);
            nodes.extend(observed_lines(
                &unit,
                0..unit.lines.len(),
                element_ref(source.frame, index),
                popup.nodes[unit.node].depth,
                |key| element_ref(source.frame, doc.refs.assign(key, last_index)),
            ));
        }
        if !nodes.is_empty() {
            outside.push(Outside {
                note: format!(
                    "{} \"{}\" opened outside this view ({} lines inside)",
                    popup.role, popup.name, popup.count
                ),
                nodes,
            });
        }
    }
    outside.extend(
        facts
            .closed
            .iter()
            .map(|ClosedPopup { role, name }| Outside {
                note: format!("{role} \"{name}\" closed"),
                nodes: Vec::new(),
            }),
    );

    let params = Params::of(request);
    let page_generation = facts.generation;
    let view = View {
        total_nodes: shown.total_nodes,
        truncated: shown.truncated(),
        next_offset: shown.next_offset,
    };
    let baseline = request.since.and_then(|since| {
        doc.views
            .of(source.viewer)
            .and_then(|kept| kept.matching(since, &params))
    });
    if let Some(changed) = &facts.changed {
        // A popup that opened outside the view is shown above already.
        let in_popups: HashSet<u32> = facts
            .outside
            .iter()
            .flat_map(|popup| popup.nodes.iter().map(|node| node.key))
            .collect();
        let mut nodes = Vec::new();
        for unit in window::units(&changed.nodes, Some(&facts.url)) {
            if in_popups.contains(&unit.key) {
                continue;
            }
            let index = doc.refs.assign(unit.key, last_index);
            nodes.extend(observed_lines(
                &unit,
                0..unit.lines.len(),
                element_ref(source.frame, index),
                changed.nodes[unit.node].depth,
                |key| element_ref(source.frame, doc.refs.assign(key, last_index)),
            ));
        }
        let shown = changed.nodes.len() as u32;
        let note = match changed.count {
            1 => "changed outside this view".to_owned(),
            n if n == shown => format!("changed outside this view ({n} lines)"),
            n => format!("changed outside this view ({n} lines; the first {shown})"),
        };
        if !nodes.is_empty() {
            outside.push(Outside { note, nodes });
        }
    }
    let (nodes, delta_part) = match baseline {
        Some(baseline) => {
            let diff = delta::diff(&baseline.entries, &entries);
            let changed = diff
                .changed
                .iter()
                .flat_map(|&i| lines[i].iter().cloned())
                .collect();
            let to_ref = |index: u32| element_ref(source.frame, index);
            let delta = diff.into_delta(baseline.version, changed, to_ref, baseline.view != view);
            (Vec::new(), Some(delta))
        }
        None => (lines.into_iter().flatten().collect(), None),
    };
    let reset = request.since.is_some() && delta_part.is_none();

    // An empty delta is the baseline itself, unchanged: it keeps that version and takes no
    // baseline slot, so polling an unchanged page never pushes its baseline out.
    let unchanged = outside.is_empty() && delta_part.as_ref().is_some_and(Delta::is_empty);
    let version = match (&delta_part, unchanged) {
        (Some(delta), true) => {
            // Served all the same: the viewer's baselines are kept as recently used.
            doc.views.of_mut(source.viewer);
            delta.since
        }
        _ => {
            doc.version += 1;
            // Inlined frames' lines are added by the snapshot once they are observed.
            let kept = doc.views.of_mut(source.viewer);
            let frames = match &delta_part {
                Some(delta) => kept
                    .matching(delta.since, &params)
                    .map(|b| b.frames.clone())
                    .unwrap_or_default(),
                None => Vec::new(),
            };
            kept.push(Baseline {
                version: doc.version,
                params,
                entries,
                view,
                frames,
                page_generation,
            });
            doc.version
        }
    };

    let page = Page {
        tab_id: source.tab,
        frame_id: (source.frame != TOP_FRAME).then_some(source.frame),
        url: facts.url,
        title: facts.title,
        document_id: source.document_id.to_owned(),
    };
    let observation = Observation {
        reset,
        estimated: facts.estimated,
        outside,
        ..shown.observation(page, version, nodes, delta_part)
    };
    Observed {
        observation,
        frames,
        lines: shown_lines,
        chars: shown_chars,
    }
}

/// Lines `range` of `unit` as the agent sees them: inline refs resolved (`ref_for` gives each
/// its ref), the node's own line carrying `own` (option lines follow it without a ref).
pub(super) fn observed_lines(
    unit: &Unit,
    range: std::ops::Range<usize>,
    own: ElementRef,
    depth: u8,
    mut ref_for: impl FnMut(u32) -> ElementRef,
) -> Vec<Node<ElementRef>> {
    let first = range.start;
    unit.lines[range]
        .iter()
        .enumerate()
        .map(|(i, line)| Node {
            depth,
            ..Node::new(
                (first + i == 0).then_some(own),
                inline::resolve(line, &unit.inline, |key| ref_for(key).to_string()),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refs::RefTables;
    use tabwire_observation::facts::{Anchors, PageOption};
    use tabwire_protocol::{ElementRef, ErrorCode, Target};

    const TAB: TabId = 7;

    fn button(key: u32, name: &str) -> PageNode {
        PageNode::new(key, "button", name)
    }

    fn facts(nodes: Vec<PageNode>) -> SnapshotFacts {
        SnapshotFacts {
            url: "http://x/".into(),
            title: "X".into(),
            doc: "tok".into(),
            nodes,
            ..SnapshotFacts::default()
        }
    }

    fn request() -> SnapshotRequest {
        SnapshotRequest {
            frame_id: None,
            scope: None,
            query: None,
            max_nodes: 100,
            max_chars: 10_000,
            offset: 0,
            since: None,
            include_hidden: false,
        }
    }

    fn source(frame: u32) -> Source<'static> {
        Source {
            tab: TAB,
            frame,
            document_id: "DOC",
            scope_ref: None,
            viewer: "s1",
        }
    }

    /// Takes a snapshot through the fence, as the snapshot operation does.
    fn snap(tables: &mut RefTables, req: &SnapshotRequest, f: SnapshotFacts) -> Observation<Page> {
        snap_in(tables, 0, "DOC", req, f)
    }

    fn snap_in(
        tables: &mut RefTables,
        frame: u32,
        document_id: &str,
        req: &SnapshotRequest,
        f: SnapshotFacts,
    ) -> Observation<Page> {
        let ticket = tables.begin(TAB, frame);
        let state = tables.commit(ticket).unwrap();
        let src = Source {
            document_id,
            ..source(frame)
        };
        let unique = as_if_unique(&f);
        observe(state, src, req, f, &unique).observation
    }

    /// As if the page found each walked node's anchors on that node only.
    fn as_if_unique(f: &SnapshotFacts) -> HashSet<AnchorKey> {
        f.nodes
            .iter()
            .filter_map(|node| node.identity())
            .map(|identity| AnchorKey::of(&identity))
            .collect()
    }

    fn lines(o: &Observation<Page>) -> Vec<String> {
        o.nodes
            .iter()
            .map(|n| match n.node_ref {
                Some(r) => format!("{r} {}", n.text),
                None => n.text.clone(),
            })
            .collect()
    }

    fn since(v: u64) -> SnapshotRequest {
        SnapshotRequest {
            since: Some(v),
            include_hidden: false,
            ..request()
        }
    }

    #[test]
    fn every_line_gets_a_ref_and_refs_stay_stable() {
        let mut tables = RefTables::default();
        let prose = PageNode {
            key: 3,
            role: "text".into(),
            name: "Hello".into(),
            ..PageNode::default()
        };
        let page = vec![prose.clone(), button(5, "Go")];
        let first = snap(&mut tables, &request(), facts(page));
        assert_eq!(lines(&first), [r#"@e1 "Hello""#, r#"@e2 button "Go""#]);
        assert_eq!(first.version, 1);
        assert!(!first.truncated);
        let page = vec![button(9, "New"), prose, button(5, "Go")];
        let second = snap(&mut tables, &request(), facts(page));
        assert_eq!(
            lines(&second),
            [
                r#"@e3 button "New""#,
                r#"@e1 "Hello""#,
                r#"@e2 button "Go""#
            ]
        );
        assert_eq!(second.version, 2);
    }

    #[test]
    fn what_changed_outside_the_window_is_named_with_refs() {
        let mut tables = RefTables::default();
        let req = SnapshotRequest {
            max_nodes: 2,
            ..request()
        };
        let shown = vec![button(1, "One"), button(2, "Two")];
        let first = snap(&mut tables, &req, facts(shown.clone()));
        assert!(first.outside.is_empty());
        // The page reports two nodes below the window that changed since; it sends the first.
        let status = PageNode::new(40, "status", "Saved");
        let popup = PageNode::new(41, "listbox", "Choices");
        let changed = SnapshotFacts {
            changed: Some(ChangedOutside {
                count: 3,
                nodes: vec![status, popup.clone()],
            }),
            outside: vec![PagePopup {
                key: 41,
                role: "listbox".into(),
                name: "Choices".into(),
                count: 0,
                nodes: vec![popup],
            }],
            ..facts(shown)
        };
        let delta = snap(
            &mut tables,
            &SnapshotRequest {
                since: Some(first.version),
                ..req
            },
            changed,
        );
        let note = delta
            .outside
            .iter()
            .find(|o| o.note.starts_with("changed outside"))
            .expect("the changes outside are named");
        assert_eq!(
            note.note,
            "changed outside this view (3 lines; the first 2)"
        );
        // The popup is shown as a popup, not twice.
        let texts: Vec<String> = note.nodes.iter().map(|n| n.text.clone()).collect();
        assert_eq!(texts, [r#"status "Saved""#]);
        assert!(note.nodes[0].node_ref.is_some());
        // Nothing in the window changed: it is still a delta, and not an unchanged one.
        let part = delta.delta.as_ref().expect("a delta");
        assert!(part.changed.is_empty());
        assert_ne!(delta.version, first.version);
    }

    #[test]
    fn refs_are_handed_out_only_to_nodes_shown() {
        let mut tables = RefTables::default();
        let page: Vec<PageNode> = (1..=10).map(|k| button(k, &format!("B{k}"))).collect();
        let req = SnapshotRequest {
            max_nodes: 3,
            ..request()
        };
        let o = snap(&mut tables, &req, facts(page.clone()));
        assert_eq!(o.nodes.len(), 3);
        assert_eq!(o.next_offset, Some(3));
        assert_eq!(o.omitted_nodes, 7);
        assert!(o.truncated);
        let next = SnapshotRequest { offset: 3, ..req };
        let o = snap(&mut tables, &next, facts(page));
        assert_eq!(lines(&o)[0], r#"@e4 button "B4""#, "numbers stay dense");
        assert_eq!(o.offset, 3);
    }

    #[test]
    fn an_unchanged_page_gives_an_empty_delta() {
        let mut tables = RefTables::default();
        let page = vec![button(1, "A"), button(2, "B")];
        let first = snap(&mut tables, &request(), facts(page.clone()));
        let delta = snap(&mut tables, &since(first.version), facts(page));
        assert!(delta.nodes.is_empty());
        assert!(!delta.reset);
        let d = delta.delta.as_ref().unwrap();
        assert_eq!(d.since, 1);
        assert!(d.changed.is_empty() && d.removed.is_empty() && d.order.is_none());
        assert_eq!(delta.version, 1, "nothing changed, so no new version");
        assert_eq!(delta.total_nodes, 2);
        let json = serde_json::to_string(&tabwire_protocol::OpResult::from(delta)).unwrap();
        assert!(json.len() < 300, "{} bytes: {json}", json.len());
    }

    /// A snapshot of the top document shown to `viewer`.
    fn snap_as(
        tables: &mut RefTables,
        viewer: &str,
        req: &SnapshotRequest,
        f: SnapshotFacts,
    ) -> Observation<Page> {
        let ticket = tables.begin(TAB, 0);
        let state = tables.commit(ticket).unwrap();
        let unique = as_if_unique(&f);
        let src = Source {
            viewer,
            ..source(0)
        };
        observe(state, src, req, f, &unique).observation
    }

    #[test]
    fn each_viewer_gets_the_changes_since_its_own_view() {
        let mut tables = RefTables::default();
        let before = vec![button(1, "A"), button(2, "B")];
        let after = vec![button(1, "A"), button(2, "B!")];
        let alpha = snap_as(&mut tables, "alpha", &request(), facts(before));
        // The page changes; then the other session looks.
        let beta = snap_as(&mut tables, "beta", &request(), facts(after.clone()));
        assert!(beta.delta.is_none());
        assert!(beta.version > alpha.version, "versions count per document");
        // Alpha's delta is against what alpha saw: the change is in it, though beta saw it.
        let o = snap_as(
            &mut tables,
            "alpha",
            &since(alpha.version),
            facts(after.clone()),
        );
        let d = o.delta.expect("a delta against alpha's view");
        assert_eq!(d.since, alpha.version);
        assert_eq!(d.changed.len(), 1, "{d:?}");
        assert_eq!(d.changed[0].text, r#"button "B!""#);
        // A version another session was shown is no baseline of this one's: a full window.
        let o = snap_as(
            &mut tables,
            "beta",
            &since(alpha.version),
            facts(after.clone()),
        );
        assert!(o.reset && o.delta.is_none());
        assert_eq!(o.nodes.len(), 2);
        let o = snap_as(&mut tables, "gamma", &since(beta.version), facts(after));
        assert!(o.reset, "a third session cannot use beta's version either");
    }

    #[test]
    fn deltas_report_changes_removals_and_order() {
        let mut tables = RefTables::default();
        let a = button(1, "A");
        let b = button(2, "B");
        let c = button(3, "C");
        let first = snap(
            &mut tables,
            &request(),
            facts(vec![a.clone(), b.clone(), c]),
        );
        // B's text changes, C is removed, N is inserted at the top.
        let b2 = button(2, "B!");
        let n = button(4, "N");
        let o = snap(
            &mut tables,
            &since(first.version),
            facts(vec![n, a.clone(), b2.clone()]),
        );
        let d = o.delta.unwrap();
        let changed: Vec<String> = d
            .changed
            .iter()
            .map(|n| format!("{} {}", n.node_ref.unwrap(), n.text))
            .collect();
        assert_eq!(changed, [r#"@e4 button "N""#, r#"@e2 button "B!""#]);
        assert_eq!(d.removed, [ElementRef::top(3)]);
        assert_eq!(
            d.order,
            Some(vec![
                ElementRef::top(4),
                ElementRef::top(1),
                ElementRef::top(2)
            ])
        );
        // The delta is a baseline of its own: against it, reversing is only an order.
        let o = snap(
            &mut tables,
            &since(o.version),
            facts(vec![b2, a, button(4, "N")]),
        );
        let d = o.delta.unwrap();
        assert!(d.changed.is_empty() && d.removed.is_empty());
        assert_eq!(
            d.order,
            Some(vec![
                ElementRef::top(2),
                ElementRef::top(1),
                ElementRef::top(4)
            ])
        );
    }

    #[test]
    fn other_parameters_or_a_lost_baseline_give_a_full_reset() {
        let mut tables = RefTables::default();
        let page = vec![button(1, "A"), button(2, "B")];
        let first = snap(&mut tables, &request(), facts(page.clone()));
        for other in [
            SnapshotRequest {
                max_nodes: 1,
                ..since(first.version)
            },
            SnapshotRequest {
                query: Some("a".into()),
                ..since(first.version)
            },
            SnapshotRequest {
                scope: Some(Target::Css("main".into())),
                ..since(first.version)
            },
            SnapshotRequest {
                offset: 1,
                ..since(first.version)
            },
            since(99),
        ] {
            let o = snap(&mut tables, &other, facts(page.clone()));
            assert!(o.reset, "{other:?}");
            assert!(o.delta.is_none());
            assert!(!o.nodes.is_empty());
        }
        // Without `since` there is no reset.
        assert!(!snap(&mut tables, &request(), facts(page)).reset);
    }

    #[test]
    fn a_delta_says_when_the_list_around_the_window_changed() {
        let mut tables = RefTables::default();
        let small = SnapshotRequest {
            max_nodes: 2,
            ..request()
        };
        let first = snap(
            &mut tables,
            &small,
            facts(vec![button(1, "A"), button(2, "B")]),
        );
        assert!(!first.truncated);
        // A third node appears past the two-node window: the window itself is unchanged, but
        // the view is now truncated, and the delta says so (with a new version).
        let grown = snap(
            &mut tables,
            &SnapshotRequest {
                since: Some(first.version),
                include_hidden: false,
                ..small.clone()
            },
            facts(vec![button(1, "A"), button(2, "B"), button(3, "C")]),
        );
        let delta = grown.delta.as_ref().unwrap();
        assert!(delta.changed.is_empty() && delta.removed.is_empty());
        assert!(delta.view_changed);
        assert!(grown.truncated);
        assert_eq!(grown.next_offset, Some(2));
        assert_eq!(grown.version, first.version + 1);
        // Asked again, nothing moved: an empty delta that keeps the version.
        let same = snap(
            &mut tables,
            &SnapshotRequest {
                since: Some(grown.version),
                include_hidden: false,
                ..small
            },
            facts(vec![button(1, "A"), button(2, "B"), button(3, "C")]),
        );
        assert!(!same.delta.as_ref().unwrap().view_changed);
        assert_eq!(same.version, grown.version);
    }

    #[test]
    fn baselines_are_evicted_after_eight() {
        let mut tables = RefTables::default();
        let page = vec![button(1, "A")];
        let first = snap(&mut tables, &request(), facts(page.clone()));
        for _ in 0..7 {
            snap(&mut tables, &request(), facts(page.clone()));
        }
        // Versions 1..=8 are kept: version 1 still works, as often as asked while nothing
        // changes (an empty delta takes no baseline slot).
        for _ in 0..10 {
            let o = snap(&mut tables, &since(first.version), facts(page.clone()));
            assert_eq!(o.version, first.version);
            assert!(o.delta.is_some());
        }
        // A ninth full observation evicts version 1.
        snap(&mut tables, &request(), facts(page.clone()));
        let o = snap(&mut tables, &since(first.version), facts(page.clone()));
        assert!(o.reset);
        assert_eq!(o.version, 10);
    }

    #[test]
    fn a_new_document_drops_baselines_and_keeps_counting() {
        let mut tables = RefTables::default();
        let first = snap(&mut tables, &request(), facts(vec![button(1, "A")]));
        let mut other = facts(vec![button(1, "A")]);
        other.doc = "tok2".into();
        let o = snap_in(&mut tables, 0, "DOC2", &since(first.version), other);
        assert!(o.reset);
        assert_eq!(o.version, 2, "versions keep counting across documents");
        assert_eq!(lines(&o), [r#"@e2 button "A""#]);
        assert_eq!(
            tables.resolve(TAB, ElementRef::top(1)).unwrap_err().code,
            ErrorCode::StaleRef
        );
    }

    #[test]
    fn a_query_returns_whole_rows_within_the_budget() {
        let mut tables = RefTables::default();
        let mut page = vec![PageNode {
            key: 1,
            role: "heading".into(),
            name: "Orders".into(),
            level: Some(1),
            ..PageNode::default()
        }];
        for i in 1..=2000u32 {
            page.push(PageNode {
                key: i * 10,
                role: "row".into(),
                name: format!(
                    "Row {i} | Customer {} | {:.2} EUR",
                    i * 7919 % 1000,
                    i as f64 * 13.37
                ),
                group: Some(i * 10),
                ..PageNode::default()
            });
            page.push(PageNode {
                group: Some(i * 10),
                ..button(i * 10 + 1, &format!("Open {i}"))
            });
        }
        let req = SnapshotRequest {
            query: Some("Row 1500".into()),
            max_nodes: 30,
            max_chars: 1500,
            ..request()
        };
        let o = snap(&mut tables, &req, facts(page));
        assert_eq!(
            lines(&o),
            [
                r#"@e1 row "Row 1500 | Customer 500 | 20055.00 EUR""#,
                r#"@e2 button "Open 1500""#
            ]
        );
        assert_eq!(o.total_nodes, 2);
        assert!(!o.truncated);
        let resolved = tables.resolve(TAB, ElementRef::top(2)).unwrap();
        assert_eq!(resolved.key, 15001);
    }

    #[test]
    fn paging_through_a_document_reaches_every_node() {
        let mut tables = RefTables::default();
        let mut page = Vec::new();
        for k in 1..=120u32 {
            page.push(if k % 10 == 0 {
                PageNode {
                    key: k,
                    role: "combobox".into(),
                    name: format!("S{k}"),
                    options: (0..4)
                        .map(|i| PageOption {
                            text: format!("opt {i}"),
                            selected: false,
                        })
                        .collect(),
                    ..PageNode::default()
                }
            } else {
                button(k, &"w".repeat((k % 17) as usize))
            });
        }
        let total_lines = 120 + 12 * 4;
        let mut seen = Vec::new();
        let mut offset = Some(0);
        while let Some(at) = offset {
            let req = SnapshotRequest {
                offset: at,
                max_nodes: 9,
                max_chars: 120,
                ..request()
            };
            let o = snap(&mut tables, &req, facts(page.clone()));
            assert_eq!(o.total_nodes, total_lines);
            seen.extend(o.nodes.iter().map(|n| n.text.clone()));
            offset = o.next_offset;
        }
        assert_eq!(seen.len(), total_lines as usize);
        let refs = tables.get(TAB, 0).unwrap().last_index;
        assert_eq!(refs, 120, "one ref per node, none for option lines");
    }

    fn save_button(key: u32) -> PageNode {
        PageNode {
            anchors: Some(Anchors {
                tag: "button".into(),
                id: Some("save".into()),
                ..Anchors::default()
            }),
            ..button(key, "Save")
        }
    }

    fn copy_button(key: u32) -> PageNode {
        PageNode {
            anchors: Some(Anchors {
                tag: "button".into(),
                testid: Some("copy".into()),
                ..Anchors::default()
            }),
            ..button(key, "Copy")
        }
    }

    #[test]
    fn a_rerendered_element_keeps_its_ref_in_snapshots() {
        let mut tables = RefTables::default();
        let o = snap(
            &mut tables,
            &request(),
            facts(vec![save_button(5), copy_button(6)]),
        );
        assert_eq!(lines(&o), [r#"@e1 button "Save""#, r#"@e2 button "Copy""#]);
        // Save is re-rendered (unique id); Copy is replaced by two copies (ambiguous).
        let mut after = facts(vec![save_button(15), copy_button(16), copy_button(17)]);
        after.gone = vec![5, 6];
        let o = snap(&mut tables, &since(o.version), after);
        let d = o.delta.unwrap();
        let changed: Vec<String> = d
            .changed
            .iter()
            .map(|n| format!("{} {}", n.node_ref.unwrap(), n.text))
            .collect();
        assert_eq!(
            changed,
            [r#"@e3 button "Copy""#, r#"@e4 button "Copy""#],
            "Save kept @e1 and is unchanged"
        );
        assert_eq!(d.removed, [ElementRef::top(2)]);
        assert_eq!(tables.resolve(TAB, ElementRef::top(1)).unwrap().key, 15);
        // @e2 still resolves to its gone element; the page will find the replacement ambiguous.
        let copy = tables.resolve(TAB, ElementRef::top(2)).unwrap();
        assert_eq!(copy.key, 6);
        assert_eq!(
            copy.identity.unwrap().anchors.testid.as_deref(),
            Some("copy")
        );
    }

    #[test]
    fn the_page_reports_only_keys_it_was_asked_about() {
        let mut tables = RefTables::default();
        snap(
            &mut tables,
            &request(),
            facts(vec![button(1, "A"), button(2, "B")]),
        );
        assert_eq!(tables.live_keys(TAB, 0), [1, 2]);
        let mut after = facts(vec![button(2, "B")]);
        after.gone = vec![1];
        snap(&mut tables, &request(), after);
        assert_eq!(tables.live_keys(TAB, 0), [2]);
    }

    #[test]
    fn a_rebound_scope_ref_follows_its_replacement() {
        let mut tables = RefTables::default();
        snap(&mut tables, &request(), facts(vec![save_button(5)]));
        let ticket = tables.begin(TAB, 0);
        let state = tables.commit(ticket).unwrap();
        let mut f = facts(vec![save_button(15)]);
        f.scope_rebound = Some(15);
        let req = SnapshotRequest {
            scope: Some(Target::Ref(ElementRef::top(1))),
            ..request()
        };
        let src = Source {
            scope_ref: Some(1),
            ..source(0)
        };
        let unique = as_if_unique(&f);
        let o = observe(state, src, &req, f, &unique).observation;
        assert_eq!(lines(&o), [r#"@e1 button "Save""#]);
    }

    #[test]
    fn frames_have_their_own_ref_namespace() {
        let mut tables = RefTables::default();
        let top = snap(&mut tables, &request(), facts(vec![button(1, "Top")]));
        assert_eq!(top.of.frame_id, None);
        let req = SnapshotRequest {
            frame_id: Some(5),
            ..request()
        };
        let inner = snap_in(
            &mut tables,
            5,
            "FRAME-DOC",
            &req,
            facts(vec![button(1, "Send")]),
        );
        assert_eq!(inner.of.frame_id, Some(5));
        assert_eq!(lines(&inner), [r#"@f5e1 button "Send""#]);
        assert_eq!(inner.version, 1, "versions are per document");
        let resolved = tables
            .resolve(
                TAB,
                ElementRef {
                    frame: Some(5),
                    index: 1,
                },
            )
            .unwrap();
        assert_eq!(resolved.document_id, "FRAME-DOC");
        assert_eq!(
            tables.resolve(TAB, ElementRef::top(1)).unwrap().document_id,
            "DOC"
        );
    }

    #[test]
    fn a_superseded_snapshot_changes_nothing() {
        let mut tables = RefTables::default();
        let slow = tables.begin(TAB, 0);
        let fast = tables.begin(TAB, 0);
        let state = tables.commit(fast).unwrap();
        let o = observe(
            state,
            source(0),
            &request(),
            facts(vec![button(1, "A")]),
            &HashSet::new(),
        )
        .observation;
        assert_eq!(o.version, 1);
        let err = tables.commit(slow).unwrap_err();
        assert_eq!(err.code, ErrorCode::Superseded);
        let state = tables.get(TAB, 0).unwrap();
        assert_eq!(state.doc.as_ref().unwrap().version, 1);
        assert_eq!(state.last_index, 1);
    }
}
