//! Observation baselines and deltas (SPEC §4).
//!
//! Every committed observation of a document leaves a baseline: the window it showed, as
//! `(ref, text)` entries, with the parameters that made it. A later request with
//! `since: version` whose parameters are equal gets only the differences: entries that are new
//! or whose text changed, refs that left the window, and the window's full order when the
//! surviving entries moved or something was inserted before the end.
//!
//! Baselines are kept per viewer ([`ViewerBaselines`]): the MCP session the observation was
//! shown to. A delta compares with what *this* viewer was shown, never with another session's
//! view of the same document (an automatic delta against a view the agent never saw would
//! leave out whatever changed before it). The last [`BASELINES_KEPT`] baselines of each of
//! the [`VIEWERS_KEPT`] viewers served most recently are kept per document.

use std::collections::{HashMap, HashSet, VecDeque};

use tabwire_protocol::{Delta, ElementRef, Node, SnapshotRequest, Target};

use crate::window::Budget;

/// How many baselines a document keeps for one viewer.
pub const BASELINES_KEPT: usize = 8;

/// How many viewers a document keeps baselines for: a viewer beyond them makes the one served
/// longest ago lose its baselines (its next `since` gets a full window with `reset`). Sessions
/// that end lose theirs at once ([`ViewerBaselines::forget`]); this bounds what sessions that
/// never say they ended (sessionless clients) can hold.
pub const VIEWERS_KEPT: usize = 4;

/// What decides an observation's window besides the page: a delta is only meaningful against a
/// baseline made with the same parameters (the frame is implied by the document).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// The scope element.
    pub scope: Option<Target>,
    /// The text filter.
    pub query: Option<String>,
    /// The first line shown.
    pub offset: u32,
    /// The node budget.
    pub max_nodes: u32,
    /// The character budget.
    pub max_chars: u32,
    /// Whether hidden text is kept.
    pub include_hidden: bool,
}

impl Params {
    /// The parameters of a view with no scope element and no hidden text (a device's screen):
    /// only its query, first line and budget.
    pub fn new(query: Option<String>, offset: u32, budget: Budget) -> Params {
        Params {
            scope: None,
            query,
            offset,
            max_nodes: budget.max_nodes,
            max_chars: budget.max_chars,
            include_hidden: false,
        }
    }

    /// The parameters of a snapshot request.
    pub fn of(request: &SnapshotRequest) -> Params {
        Params {
            scope: request.scope.clone(),
            query: request.query.clone(),
            offset: request.offset,
            max_nodes: request.max_nodes,
            max_chars: request.max_chars,
            include_hidden: request.include_hidden,
        }
    }
}

/// One node of a window: its ref number and its text (a select's lines joined by newlines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The ref number (within the document's frame).
    pub index: u32,
    /// Everything shown for the node.
    pub text: String,
}

/// A window as it was shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Baseline {
    /// The observation version that showed it.
    pub version: u64,
    /// The parameters that made it.
    pub params: Params,
    /// Its nodes, in order.
    pub entries: Vec<Entry>,
    /// The list around the window: total nodes, and the next offset when truncated.
    pub view: View,
    /// The lines of the frames inlined under its iframes, as they were shown (a later delta
    /// compares the frames' lines with these).
    pub frames: Vec<Node<ElementRef>>,
    /// The browser page model's generation it was made from (0 where there is none): a delta
    /// against it also names what changed outside its window after it.
    pub page_generation: u64,
}

/// The list around a window, as a delta compares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct View {
    /// Nodes of the scoped, filtered list.
    pub total_nodes: u32,
    /// Whether part of the list is not shown.
    pub truncated: bool,
    /// Where the next page starts.
    pub next_offset: Option<u32>,
}

/// A document's most recent baselines.
#[derive(Debug, Clone, Default)]
pub struct Baselines {
    kept: VecDeque<Baseline>,
}

impl Baselines {
    /// Keeps `baseline`, forgetting the oldest beyond [`BASELINES_KEPT`].
    pub fn push(&mut self, baseline: Baseline) {
        if self.kept.len() == BASELINES_KEPT {
            self.kept.pop_front();
        }
        self.kept.push_back(baseline);
    }

    /// The baseline of `version`, if it is kept and was made with `params`.
    pub fn matching(&self, version: u64, params: &Params) -> Option<&Baseline> {
        self.kept
            .iter()
            .find(|b| b.version == version && &b.params == params)
    }

    /// The newest baseline made with `params`: what the agent last saw of this view.
    pub fn latest(&self, params: &Params) -> Option<u64> {
        self.kept
            .iter()
            .rev()
            .find(|b| &b.params == params)
            .map(|b| b.version)
    }

    /// The newest baseline, whatever its parameters: what the viewer saw last.
    pub fn newest(&self) -> Option<&Baseline> {
        self.kept.back()
    }

    /// The baseline of `version`, if it is kept.
    pub fn get_mut(&mut self, version: u64) -> Option<&mut Baseline> {
        self.kept.iter_mut().find(|b| b.version == version)
    }

    /// The versions kept, oldest first.
    pub fn versions(&self) -> Vec<u64> {
        self.kept.iter().map(|b| b.version).collect()
    }
}

/// A document's baselines, each viewer's apart: the viewers served most recently, at most
/// [`VIEWERS_KEPT`], each with its last [`BASELINES_KEPT`] baselines. A viewer is named by
/// the hub (its MCP session); the empty name is a request that named none.
#[derive(Debug, Clone, Default)]
pub struct ViewerBaselines {
    /// Least recently served first.
    by_viewer: VecDeque<(String, Baselines)>,
}

impl ViewerBaselines {
    /// The baselines `viewer` was shown, if it has any here.
    pub fn of(&self, viewer: &str) -> Option<&Baselines> {
        self.by_viewer
            .iter()
            .find(|(name, _)| name == viewer)
            .map(|(_, baselines)| baselines)
    }

    /// The baselines of `viewer`, made the most recently served (created empty for a new
    /// viewer, which forgets the viewer served longest ago beyond [`VIEWERS_KEPT`]).
    pub fn of_mut(&mut self, viewer: &str) -> &mut Baselines {
        let entry = match self.by_viewer.iter().position(|(name, _)| name == viewer) {
            Some(at) => self.by_viewer.remove(at).expect("found just now"),
            None => {
                if self.by_viewer.len() == VIEWERS_KEPT {
                    self.by_viewer.pop_front();
                }
                (viewer.to_owned(), Baselines::default())
            }
        };
        self.by_viewer.push_back(entry);
        &mut self.by_viewer.back_mut().expect("pushed just now").1
    }

    /// Forgets `viewer`'s baselines (its session ended).
    pub fn forget(&mut self, viewer: &str) {
        self.by_viewer.retain(|(name, _)| name != viewer);
    }

    /// The viewers with baselines here, least recently served first.
    pub fn viewers(&self) -> Vec<&str> {
        self.by_viewer
            .iter()
            .map(|(name, _)| name.as_str())
            .collect()
    }
}

/// The differences between two windows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Diff {
    /// Positions (in the new window) of entries that are new or whose text changed.
    pub changed: Vec<usize>,
    /// Ref numbers of entries that left the window, in their old order.
    pub removed: Vec<u32>,
    /// The new window's ref numbers, when surviving entries moved or new ones were inserted
    /// anywhere but at the end.
    pub order: Option<Vec<u32>>,
}

impl Diff {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.removed.is_empty() && self.order.is_none()
    }

    /// The delta an observation carries: the changes since version `since`, with `changed` the
    /// lines of [`Diff::changed`]'s entries and `to_ref` the ref of a ref number (a page's
    /// `@f2e5`, a device's `@d7`).
    pub fn into_delta<R>(
        self,
        since: u64,
        changed: Vec<Node<R>>,
        to_ref: impl Fn(u32) -> R,
        view_changed: bool,
    ) -> Delta<R> {
        Delta {
            since,
            changed,
            removed: self.removed.into_iter().map(&to_ref).collect(),
            order: self
                .order
                .map(|order| order.into_iter().map(&to_ref).collect()),
            view_changed,
        }
    }
}

/// Compares a window with its baseline.
pub fn diff(old: &[Entry], new: &[Entry]) -> Diff {
    let old_text: HashMap<u32, &str> = old.iter().map(|e| (e.index, e.text.as_str())).collect();
    let new_refs: HashSet<u32> = new.iter().map(|e| e.index).collect();
    let changed = new
        .iter()
        .enumerate()
        .filter(|(_, e)| old_text.get(&e.index) != Some(&e.text.as_str()))
        .map(|(i, _)| i)
        .collect();
    let removed: Vec<u32> = old
        .iter()
        .map(|e| e.index)
        .filter(|index| !new_refs.contains(index))
        .collect();
    let survivors_old: Vec<u32> = old
        .iter()
        .map(|e| e.index)
        .filter(|i| new_refs.contains(i))
        .collect();
    let survivors_new: Vec<u32> = new
        .iter()
        .map(|e| e.index)
        .filter(|i| old_text.contains_key(i))
        .collect();
    let moved = survivors_old != survivors_new;
    // New entries only at the end can be appended by the reader; anywhere else it needs the
    // order to place them.
    let last_survivor = new.iter().rposition(|e| old_text.contains_key(&e.index));
    let first_new = new.iter().position(|e| !old_text.contains_key(&e.index));
    let inserted_before_end = matches!((first_new, last_survivor), (Some(f), Some(l)) if f < l);
    let order = (moved || inserted_before_end).then(|| new.iter().map(|e| e.index).collect());
    Diff {
        changed,
        removed,
        order,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(list: &[(u32, &str)]) -> Vec<Entry> {
        list.iter()
            .map(|&(index, text)| Entry {
                index,
                text: text.into(),
            })
            .collect()
    }

    fn params(offset: u32) -> Params {
        Params::new(
            None,
            offset,
            Budget {
                max_nodes: 10,
                max_chars: 100,
            },
        )
    }

    #[test]
    fn an_unchanged_window_is_an_empty_diff() {
        let a = entries(&[(1, "a"), (2, "b")]);
        let d = diff(&a, &a);
        assert!(d.is_empty(), "{d:?}");
    }

    #[test]
    fn changed_text_and_removals_are_reported_without_order() {
        let old = entries(&[(1, "a"), (2, "b"), (3, "c")]);
        let new = entries(&[(1, "a"), (3, "C!")]);
        let d = diff(&old, &new);
        assert_eq!(d.changed, [1]);
        assert_eq!(d.removed, [2]);
        assert_eq!(d.order, None, "removing keeps the survivors' order");
    }

    #[test]
    fn appending_needs_no_order_but_inserting_does() {
        let old = entries(&[(1, "a"), (2, "b")]);
        let appended = entries(&[(1, "a"), (2, "b"), (7, "new")]);
        let d = diff(&old, &appended);
        assert_eq!(d.changed, [2]);
        assert_eq!(d.order, None);

        let inserted = entries(&[(7, "new"), (1, "a"), (2, "b")]);
        let d = diff(&old, &inserted);
        assert_eq!(d.changed, [0]);
        assert_eq!(d.order, Some(vec![7, 1, 2]));
    }

    #[test]
    fn moving_survivors_gives_the_order() {
        let old = entries(&[(1, "a"), (2, "b"), (3, "c")]);
        let reversed = entries(&[(3, "c"), (2, "b"), (1, "a")]);
        let d = diff(&old, &reversed);
        assert!(d.changed.is_empty());
        assert!(d.removed.is_empty());
        assert_eq!(d.order, Some(vec![3, 2, 1]));
    }

    #[test]
    fn a_completely_new_window_needs_no_order() {
        let old = entries(&[(1, "a")]);
        let new = entries(&[(5, "x"), (6, "y")]);
        let d = diff(&old, &new);
        assert_eq!(d.changed, [0, 1]);
        assert_eq!(d.removed, [1]);
        assert_eq!(d.order, None);
    }

    #[test]
    fn baselines_keep_the_last_eight_and_match_parameters() {
        let mut kept = Baselines::default();
        for version in 1..=10 {
            kept.push(Baseline {
                version,
                params: params(0),
                entries: vec![],
                view: View::default(),
                frames: vec![],
                page_generation: 0,
            });
        }
        assert_eq!(kept.versions(), (3..=10).collect::<Vec<_>>());
        assert!(kept.matching(2, &params(0)).is_none(), "evicted");
        assert!(kept.matching(3, &params(0)).is_some());
        assert!(kept.matching(3, &params(1)).is_none(), "other parameters");
        let mut scoped = params(0);
        scoped.scope = Some(Target::Css("main".into()));
        assert!(kept.matching(10, &scoped).is_none());
    }

    fn baseline(version: u64) -> Baseline {
        Baseline {
            version,
            params: params(0),
            entries: vec![],
            view: View::default(),
            frames: vec![],
            page_generation: 0,
        }
    }

    #[test]
    fn each_viewer_has_its_own_baselines() {
        let mut views = ViewerBaselines::default();
        views.of_mut("a").push(baseline(1));
        views.of_mut("b").push(baseline(2));
        // Each viewer's latest view is its own, whoever looked last.
        assert_eq!(views.of("a").unwrap().latest(&params(0)), Some(1));
        assert_eq!(views.of("b").unwrap().latest(&params(0)), Some(2));
        // A version another viewer was shown is no baseline of this one's.
        assert!(views.of("a").unwrap().matching(2, &params(0)).is_none());
        assert!(views.of("b").unwrap().matching(1, &params(0)).is_none());
        assert!(views.of("c").is_none());
        views.forget("a");
        assert!(views.of("a").is_none());
        assert_eq!(views.viewers(), ["b"]);
    }

    #[test]
    fn the_viewer_served_longest_ago_is_forgotten_first() {
        let mut views = ViewerBaselines::default();
        for (version, viewer) in ["a", "b", "c", "d"].into_iter().enumerate() {
            views.of_mut(viewer).push(baseline(version as u64));
        }
        // Serving "a" again makes "b" the oldest; a fifth viewer pushes it out.
        views.of_mut("a").push(baseline(9));
        views.of_mut("e");
        assert_eq!(views.viewers(), ["c", "d", "a", "e"]);
        assert_eq!(views.of("a").unwrap().versions(), [0, 9]);
        assert_eq!(views.viewers().len(), VIEWERS_KEPT);
        // However many baselines each viewer keeps, no more than eight.
        for version in 10..30 {
            views.of_mut("c").push(baseline(version));
        }
        assert_eq!(views.of("c").unwrap().versions().len(), BASELINES_KEPT);
    }

    #[test]
    fn a_plain_view_has_the_parameters_of_a_plain_request() {
        let budget = Budget {
            max_nodes: 50,
            max_chars: 4000,
        };
        let request = SnapshotRequest {
            frame_id: None,
            scope: None,
            query: Some("login".into()),
            max_nodes: 50,
            max_chars: 4000,
            offset: 20,
            since: Some(3),
            include_hidden: false,
        };
        let plain = Params::new(Some("login".into()), 20, budget);
        assert_eq!(plain, Params::of(&request));
        assert_ne!(plain, Params::new(None, 20, budget), "the query counts");
        assert_ne!(plain, Params::new(Some("login".into()), 0, budget));
    }
}
