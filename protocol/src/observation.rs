//! One observation for every peer: what a page or a device's screen shows, as lines with refs.
//!
//! A browser observes a page ([`crate::observe::Page`]) and a device backend its foreground
//! app ([`crate::devices::Foreground`]); both answer with an [`Observation`] of that subject:
//! the same window over the same kind of list ([`Node`] lines, paged and budgeted), the same
//! [`Delta`] against an earlier version, the same popups outside the window and the same note
//! of how the view settled after an action. Only the subject and the kind of ref differ, so a
//! field every observation should carry is added here once, and the hub renders every
//! observation with one function.

use std::fmt::{Debug, Display};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// What an observation looked at, and the kind of ref its lines carry.
pub trait Subject {
    /// `@e3`/`@f2e5` on a page, `@d7` on a device.
    type Ref: Copy + Eq + Debug + Display + Serialize + DeserializeOwned;
}

/// A bounded view of a page or a screen: its meaningful nodes in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Observation<S: Subject> {
    /// What was observed: a page's tab, frame, URL, title and document, or a device's
    /// foreground app, rotation and keyboard.
    pub of: S,
    /// Increases with every observation of the same document (on a device, of the device).
    pub version: u64,
    /// The nodes shown, in document order (empty when `delta` is set).
    pub nodes: Vec<Node<S::Ref>>,
    /// How many nodes the scoped, filtered list has in all.
    pub total_nodes: u32,
    /// The index in that list of the first node shown.
    pub offset: u32,
    /// True when nodes of the list are not shown (before `offset` or past the budget).
    pub truncated: bool,
    /// How many nodes of the list are not shown.
    pub omitted_nodes: u32,
    /// How many characters of node text those omitted nodes hold.
    pub omitted_chars: u32,
    /// The `offset` that shows the next nodes, when there are more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u32>,
    /// The changes since the requested version, instead of `nodes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<Delta<S::Ref>>,
    /// True when a delta was asked for but its baseline was gone or made for another scope,
    /// query, offset or budget: `nodes` is then a full observation to use as the new baseline.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reset: bool,
    /// True when `total_nodes` and the omitted counts are estimates: the page had not read the
    /// whole document yet (a first snapshot of a big page reads only as far as its window).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    /// Popups (a listbox, menu, dialog, alert or tooltip) that opened since the last
    /// observation and that the window leaves out, with their lines; and those shown that way
    /// before that have closed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside: Vec<Outside<S::Ref>>,
    /// After an action: how the peer waited for the view to settle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settling: Option<Settling>,
}

impl<S: Subject> Observation<S> {
    /// An observation of `of` at `version` showing `nodes` (or `delta`), with the window's
    /// figures left for the caller to set: everything shown, nothing estimated, nothing outside.
    pub fn new(
        of: S,
        version: u64,
        nodes: Vec<Node<S::Ref>>,
        delta: Option<Delta<S::Ref>>,
    ) -> Self {
        let total_nodes = u32::try_from(nodes.len()).unwrap_or(u32::MAX);
        Observation {
            of,
            version,
            nodes,
            total_nodes,
            offset: 0,
            truncated: false,
            omitted_nodes: 0,
            omitted_chars: 0,
            next_offset: None,
            delta,
            reset: false,
            estimated: false,
            outside: Vec::new(),
            settling: None,
        }
    }

    /// Every node line the observation carries: the window's (or the delta's changed ones) and
    /// those of popups outside it.
    pub fn lines(&self) -> impl Iterator<Item = &Node<S::Ref>> {
        let changed = self.delta.iter().flat_map(|delta| &delta.changed);
        let outside = self.outside.iter().flat_map(|outside| &outside.nodes);
        self.nodes.iter().chain(changed).chain(outside)
    }
}

/// One line of an observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    bound(deserialize = "R: Deserialize<'de>")
)]
pub struct Node<R> {
    /// The node's ref; absent only for a select's option lines, which are chosen through
    /// their select.
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub node_ref: Option<R>,
    /// The one-line rendering, e.g. `button "Sign in" [disabled]`.
    pub text: String,
    /// How many boundaries (a dialog, menu, listbox, grid or form, each with a line of its own
    /// above) enclose the node: it is shown indented that many steps.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub depth: u8,
    /// Its bounds on the screen (devices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<Rect>,
    /// Another node of the screen has the same identity (a device's resource ID, description,
    /// or text and class), so the ref is held by position among them and may name the other
    /// one after the screen changes: look before acting on it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ambiguous: bool,
}

impl<R> Node<R> {
    /// A line with nothing around it: not indented, no bounds, not ambiguous.
    pub fn new(node_ref: Option<R>, text: String) -> Node<R> {
        Node {
            node_ref,
            text,
            depth: 0,
            bounds: None,
            ambiguous: false,
        }
    }
}

fn is_zero(depth: &u8) -> bool {
    *depth == 0
}

/// What changed in an observed window since an earlier version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    bound(deserialize = "R: Deserialize<'de>")
)]
pub struct Delta<R> {
    /// The version compared against.
    pub since: u64,
    /// Nodes that are new or whose line changed.
    pub changed: Vec<Node<R>>,
    /// Refs of nodes no longer in the window.
    pub removed: Vec<R>,
    /// The window's full order of refs, present only when new nodes were inserted before
    /// existing ones or nodes moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Vec<R>>,
    /// The list around the window changed since the baseline: its total, whether the view is
    /// truncated, or the next offset (see the observation's fields for the new values).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub view_changed: bool,
}

impl<R> Delta<R> {
    /// Whether it says nothing changed.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty()
            && self.removed.is_empty()
            && self.order.is_none()
            && !self.view_changed
    }
}

/// A popup outside an observation's window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, bound(deserialize = "R: Deserialize<'de>"))]
pub struct Outside<R> {
    /// One line: `listbox "States" appeared (6 lines)`, `menu "File" closed`.
    pub note: String,
    /// The popup's lines (at most 30), with refs; none for a closed one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<Node<R>>,
}

/// How an observation after an action waited for the view to settle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settling {
    /// Looks taken (a device's hierarchy dumps).
    pub dumps: u32,
    /// False when the view still showed a busy indicator or kept changing when the looks'
    /// bound or the deadline was reached: the observation is the last one taken.
    pub settled: bool,
}

/// A point on the screen, in physical pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Point {
    /// From the left edge.
    pub x: u32,
    /// From the top edge.
    pub y: u32,
}

/// A node's bounds on the screen, in physical pixels: `[left,top][right,bottom]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rect {
    /// Left edge.
    pub left: u32,
    /// Top edge.
    pub top: u32,
    /// Right edge (exclusive).
    pub right: u32,
    /// Bottom edge (exclusive).
    pub bottom: u32,
}

impl Rect {
    /// The centre, where a tap on the node lands.
    pub fn centre(&self) -> Point {
        Point {
            x: self.left + (self.right.saturating_sub(self.left)) / 2,
            y: self.top + (self.bottom.saturating_sub(self.top)) / 2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centre_of_bounds() {
        let rect = Rect {
            left: 100,
            top: 200,
            right: 301,
            bottom: 260,
        };
        assert_eq!(rect.centre(), Point { x: 200, y: 230 });
    }
}
