//! A device's screen as observations show it, through the model browsers use
//! (`tabwire-observation`): each kept node becomes the same facts a page's node is (role,
//! name, value, states), rendered by the same code into one line, windowed by the same budget,
//! query and offset, and compared with the same baselines for `since` deltas — each viewer's
//! (MCP session's) own, as in the browser.

use tabwire_observation::PageNode;
use tabwire_observation::delta::{self, Baseline, Entry, Params, View, ViewerBaselines};
use tabwire_observation::window::{self, Budget};
use tabwire_protocol::devices::{DeviceView, Foreground};
use tabwire_protocol::refs::DeviceRef;
use tabwire_protocol::{Node, Observation, Settling};
use tabwire_protocol::{Point, Rect};

use crate::node::ScreenNode;
use crate::refs::Assigned;

/// One dump's kept nodes and their refs: what an observation shows and what an action's ref
/// is resolved against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Screen {
    /// The foreground app, as the dump names it.
    pub package: String,
    /// Quarter turns.
    pub rotation: u8,
    /// Whether the keyboard shows.
    pub keyboard_shown: bool,
    /// The kept nodes, in pre-order.
    pub nodes: Vec<ScreenNode>,
    /// Their refs, one per node.
    pub refs: Vec<Assigned>,
}

impl Screen {
    /// The bounds of the node `target` names, if this screen has it.
    pub fn bounds_of(&self, target: DeviceRef) -> Option<Rect> {
        self.refs
            .iter()
            .position(|a| a.index == target.0)
            .map(|i| self.nodes[i].bounds)
    }

    /// The app of the node `target` names, if this screen has it.
    pub fn package_of(&self, target: DeviceRef) -> Option<&str> {
        self.refs
            .iter()
            .position(|a| a.index == target.0)
            .map(|i| self.nodes[i].package.as_str())
    }

    /// The topmost kept node under `point` (the last in pre-order whose bounds hold it: a
    /// child draws over its parent, a later sibling over an earlier one).
    pub fn node_at(&self, point: Point) -> Option<&ScreenNode> {
        self.nodes.iter().rev().find(|node| {
            let b = node.bounds;
            b.left <= point.x && point.x < b.right && b.top <= point.y && point.y < b.bottom
        })
    }

    /// Whether a busy indicator shows.
    pub fn busy(&self) -> bool {
        self.nodes.iter().any(|n| n.busy)
    }

    /// Every app whose nodes the screen shows (the dump's package first).
    pub fn packages(&self) -> Vec<&str> {
        let mut packages = vec![self.package.as_str()];
        for node in &self.nodes {
            if !node.package.is_empty() && !packages.contains(&node.package.as_str()) {
                packages.push(&node.package);
            }
        }
        packages.retain(|p| !p.is_empty());
        packages
    }

    /// The node `target` names, else the first whose line contains `query` (without case, as
    /// a view's query matches), with its line as an observation shows it.
    pub fn find(&self, query: Option<&str>, target: Option<DeviceRef>) -> Option<Node<DeviceRef>> {
        let query = query.map(str::to_lowercase);
        let facts = self.facts();
        window::units(&facts, None)
            .into_iter()
            .find(|unit| match (target, &query) {
                (Some(target), _) => unit.key == target.0,
                (None, Some(query)) => unit.lines.iter().any(|line| {
                    tabwire_observation::inline::plain(line)
                        .to_lowercase()
                        .contains(query)
                }),
                (None, None) => false,
            })
            .map(|unit| self.node(unit.key, unit.lines.join("\n")))
    }

    /// The nodes as the observation model's facts, keyed by their ref numbers.
    fn facts(&self) -> Vec<PageNode> {
        self.nodes
            .iter()
            .zip(&self.refs)
            .map(|(node, assigned)| {
                let mut fact = PageNode::new(assigned.index, node.role, &node.name);
                fact.value = node.value.clone();
                fact.secret = node.secret;
                fact.states = node.states.iter().map(|s| (*s).to_owned()).collect();
                fact.in_view = true;
                fact
            })
            .collect()
    }

    fn node(&self, index: u32, text: String) -> Node<DeviceRef> {
        let at = self
            .refs
            .iter()
            .position(|a| a.index == index)
            .expect("a window shows only the screen's nodes");
        Node {
            bounds: Some(self.nodes[at].bounds),
            ambiguous: self.refs[at].ambiguous,
            ..Node::new(Some(DeviceRef(index)), text)
        }
    }
}

/// A device's observation versions (one count for every viewer) and each viewer's baselines.
#[derive(Debug, Default)]
pub struct Views {
    baselines: ViewerBaselines,
    version: u64,
}

impl Views {
    /// Forgets what `viewer` was shown (its session ended).
    pub fn forget(&mut self, viewer: &str) {
        self.baselines.forget(viewer);
    }

    /// Observes `screen` through `view` for `viewer`. With `since`, the changes since that
    /// version when it is a baseline of the same view that this viewer was shown (else a full
    /// window with `reset`); after an action without `since` (`after_action`), the changes
    /// since this viewer's latest observation of the same view when there is one — never
    /// since another session's.
    pub fn observe(
        &mut self,
        screen: &Screen,
        view: &DeviceView,
        viewer: &str,
        after_action: bool,
        settling: Option<Settling>,
    ) -> Observation<Foreground> {
        let budget = Budget {
            max_nodes: view.max_nodes,
            max_chars: view.max_chars,
        };
        let params = Params::new(view.query.clone(), view.offset, budget);
        let facts = screen.facts();
        let units = window::filter(window::units(&facts, None), view.query.as_deref());
        let shown = window::window(&units, view.offset, budget);
        let entries: Vec<Entry> = shown
            .slices
            .iter()
            .map(|slice| {
                let unit = &units[slice.unit];
                Entry {
                    index: unit.key,
                    text: unit.lines[slice.from..slice.to].join("\n"),
                }
            })
            .collect();
        let around = View {
            total_nodes: shown.total_nodes,
            truncated: shown.truncated(),
            next_offset: shown.next_offset,
        };
        self.version += 1;
        let version = self.version;
        let kept = self.baselines.of_mut(viewer);
        let since = match view.since {
            Some(since) => Some(since),
            None if after_action => kept.latest(&params),
            None => None,
        };
        let baseline = since.and_then(|since| kept.matching(since, &params));
        let reset = view.since.is_some() && baseline.is_none();
        let (nodes, delta) = match baseline {
            Some(old) => {
                let diff = delta::diff(&old.entries, &entries);
                let changed = diff
                    .changed
                    .iter()
                    .map(|&i| screen.node(entries[i].index, entries[i].text.clone()))
                    .collect();
                let delta = diff.into_delta(old.version, changed, DeviceRef, old.view != around);
                (Vec::new(), Some(delta))
            }
            None => (
                entries
                    .iter()
                    .map(|e| screen.node(e.index, e.text.clone()))
                    .collect(),
                None,
            ),
        };
        kept.push(Baseline {
            version,
            params,
            entries,
            view: around,
            frames: Vec::new(),
            page_generation: 0,
        });
        let foreground = Foreground {
            package: screen.package.clone(),
            rotation: screen.rotation,
            keyboard_shown: screen.keyboard_shown,
        };
        Observation {
            reset,
            settling,
            ..shown.observation(foreground, version, nodes, delta)
        }
    }
}
