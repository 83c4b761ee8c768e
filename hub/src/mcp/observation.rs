//! Showing an observation, any peer's: a page's ([`Page`]) or a device's ([`Foreground`]).
//!
//! Every observation is the one protocol type, [`Observation`], of some subject, so it is shown
//! one way: a header (what was observed, its version, notes on how it settled and on ambiguous
//! refs), one `@ref text` line per node (indented by its depth, page or device text, fenced),
//! popups outside the window, and a footer saying what was left out and how to page on; a delta
//! shows a short header and only what changed. Its structured data is the observation with its
//! subject's fields at the top level; a delta leaves out what the caller already has from its
//! baseline, and an action's observation what is at its default.
//!
//! What differs between subjects is only what [`Shown`] says: how the header names the
//! subject, what narrows the list, and which of its fields a delta keeps.

use serde::Serialize;
use serde_json::{Map, Value, json};
use tabwire_protocol::devices::Foreground;
use tabwire_protocol::{Node, Observation, Page, Subject, TabId};

use super::envelope::{Rendering, quoted};

/// How the hub shows what an observation is of.
pub(super) trait Shown: Subject + Serialize {
    /// What narrows the list, as the footer says it.
    const NARROW: &'static str;
    /// The fields of the subject that a delta's data keeps (the rest was in its baseline).
    const KEPT_IN_DELTA: &'static [&'static str];
    /// The fields of the subject that an action's data leaves out of its observation (the
    /// action's own data says them).
    const SAID_BY_ACTION: &'static [&'static str];

    /// A full observation's header, before its version: where it comes from. `peer` is the
    /// name the hub knows the peer by.
    fn head(&self, peer: &str) -> Rendering;
    /// A delta's header, before its version (the caller has the rest from its baseline).
    fn delta_head(&self) -> String;
    /// Notes after the version: what the subject says about itself.
    fn notes(&self) -> String;
}

impl Shown for Page {
    const NARROW: &'static str = "query/selector";
    const KEPT_IN_DELTA: &'static [&'static str] = &["tabId", "frameId"];
    const SAID_BY_ACTION: &'static [&'static str] = &["tabId", "documentId"];

    fn head(&self, _peer: &str) -> Rendering {
        page_header(self.tab_id, self.frame_id, &self.title, &self.url)
    }

    fn delta_head(&self) -> String {
        // The tab is in the data and was in the baseline's header: not repeated here.
        self.frame_id
            .map(|frame| format!("frame {frame} "))
            .unwrap_or_default()
    }

    fn notes(&self) -> String {
        String::new()
    }
}

impl Shown for Foreground {
    const NARROW: &'static str = "query";
    const KEPT_IN_DELTA: &'static [&'static str] = &["package", "keyboardShown"];
    const SAID_BY_ACTION: &'static [&'static str] = &[];

    fn head(&self, peer: &str) -> Rendering {
        // The device's name is the phone's words, like the package.
        let mut head = Rendering::hub("device ");
        head.push_page(&quoted(peer));
        head.push(": ");
        head.push_page(&self.package);
        head
    }

    fn delta_head(&self) -> String {
        String::new()
    }

    fn notes(&self) -> String {
        if self.keyboard_shown {
            "; keyboard shown".into()
        } else {
            String::new()
        }
    }
}

/// The header line of a page's observations and content: where it comes from (the title and
/// URL are the page's).
pub(super) fn page_header(
    tab_id: TabId,
    frame_id: Option<u32>,
    title: &str,
    url: &str,
) -> Rendering {
    let mut line = Rendering::hub(match frame_id {
        Some(frame) => format!("tab {tab_id} frame {frame} "),
        None => format!("tab {tab_id} "),
    });
    line.push_page(&format!("{} {url}", quoted(title)));
    line
}

/// The model's view of an observation: a header, `@ref text` lines (or the delta), popups
/// outside the window, and a footer saying what was left out and how to page on. `peer` is
/// the name the hub knows the peer by.
pub(super) fn render_observation<S: Shown>(observation: &Observation<S>, peer: &str) -> Rendering {
    let version = format!("version {}{}", observation.version, notes(observation));
    let mut outside = Vec::new();
    for popup in &observation.outside {
        // Their notes name the popups: page text.
        if popup.nodes.is_empty() {
            outside.push(Rendering::page(popup.note.as_str()));
        } else {
            outside.push(Rendering::page(format!("{}:", popup.note)));
            outside.extend(popup.nodes.iter().map(node_line));
        }
    }
    match &observation.delta {
        Some(delta) => {
            let head = format!("{}{version}", observation.of.delta_head());
            render_changes(observation, head, delta, outside)
        }
        None => {
            let mut head = observation.of.head(peer);
            head.push(&format!(" ({version})"));
            render_full(observation, head, outside)
        }
    }
}

/// A page's observation, shown: its header names the tab (the browser is the caller's choice
/// already).
pub(super) fn render_page(observation: &Observation<Page>) -> Rendering {
    render_observation(observation, "")
}

/// The notes after the version: the subject's own, how the view settled, and what `(ambiguous)`
/// means when a line carries it.
fn notes<S: Shown>(observation: &Observation<S>) -> String {
    let mut notes = observation.of.notes();
    match observation.settling {
        Some(settling) if settling.settled => notes.push_str("; settled"),
        Some(_) => notes.push_str("; not settled: the view was still changing"),
        None => {}
    }
    if observation.lines().any(|node| node.ambiguous) {
        // Said once here rather than on every such line: a list of alike rows can hold dozens.
        notes.push_str(
            "; (ambiguous) refs share their identity with another node: look again before \
             acting on one",
        );
    }
    notes
}

/// `@e5 button "Save"`, indented two spaces for each boundary around the node: the peer's text
/// (the role and states are its words, but the name is the page's or the app's).
fn node_line<R: std::fmt::Display>(node: &Node<R>) -> Rendering {
    let indent = "  ".repeat(usize::from(node.depth));
    let mut line = Rendering::page(match &node.node_ref {
        Some(node_ref) => format!("{indent}{node_ref} {}", node.text),
        None => format!("{indent}{}", node.text),
    });
    if node.ambiguous {
        line.push(" (ambiguous)");
    }
    line
}

/// Refs on one line (`removed: @e5 @e6`).
fn refs_line<R: std::fmt::Display>(refs: &[R]) -> String {
    refs.iter().map(R::to_string).collect::<Vec<_>>().join(" ")
}

/// `about ` when the counts are estimates (the page was not read to its end yet).
fn about<S: Subject>(observation: &Observation<S>) -> &'static str {
    if observation.estimated { "about " } else { "" }
}

/// A full observation's lines: the header, a note when a delta's baseline was gone, the node
/// lines, what lies outside the window, and a footer saying what was left out and how to page.
fn render_full<S: Shown>(
    observation: &Observation<S>,
    head: Rendering,
    outside: Vec<Rendering>,
) -> Rendering {
    let mut lines = vec![head];
    if observation.reset {
        lines.push("(that version is no longer a baseline for these arguments; full view)".into());
    }
    lines.extend(observation.nodes.iter().map(node_line));
    if observation.nodes.is_empty() && observation.total_nodes == 0 {
        lines.push("(no nodes: nothing in this view matches)".into());
    }
    lines.extend(outside);
    if observation.truncated {
        let shown_from = observation.offset + 1;
        // Lines of this list only: a browser's inlined frames' lines are not positions of it.
        let shown_to = observation.offset + (observation.total_nodes - observation.omitted_nodes);
        let about = about(observation);
        let mut footer = format!(
            "[nodes {shown_from}-{shown_to} of {about}{}; {about}{} not shown ({about}{} chars)",
            observation.total_nodes, observation.omitted_nodes, observation.omitted_chars
        );
        if let Some(next) = observation.next_offset {
            footer.push_str(&format!("; next: offset={next}"));
        }
        footer.push_str(&format!("; or narrow with {}]", S::NARROW));
        lines.push(footer.into());
    }
    Rendering::lines(lines)
}

/// A delta: a short header (the caller has the rest from its baseline), then the changes and
/// what lies outside the window.
fn render_changes<S: Shown>(
    observation: &Observation<S>,
    head: String,
    delta: &tabwire_protocol::Delta<S::Ref>,
    outside: Vec<Rendering>,
) -> Rendering {
    let more = match (delta.view_changed, observation.truncated) {
        (false, _) => String::new(),
        (true, true) => {
            let next = observation
                .next_offset
                .map(|next| format!(", next: offset={next}"))
                .unwrap_or_default();
            format!(
                " [the view now has {}{} nodes and is truncated{next}]",
                about(observation),
                observation.total_nodes
            )
        }
        (true, false) => format!(
            " [the view now has {} nodes, all shown]",
            observation.total_nodes
        ),
    };
    let since = delta.since;
    let mut lines = Vec::new();
    if delta.changed.is_empty() && delta.removed.is_empty() && delta.order.is_none() {
        let nothing = if outside.is_empty() {
            "no changes"
        } else {
            "no changes in this view"
        };
        lines.push(format!("{head}: {nothing} since version {since}{more}").into());
        lines.extend(outside);
        return Rendering::lines(lines);
    }
    lines.push(format!("{head}: changes since version {since}{more}:").into());
    lines.extend(delta.changed.iter().map(node_line));
    if !delta.removed.is_empty() {
        lines.push(format!("removed: {}", refs_line(&delta.removed)).into());
    }
    if let Some(order) = &delta.order {
        lines.push(format!("order: {}", refs_line(order)).into());
    }
    lines.extend(outside);
    Rendering::lines(lines)
}

/// The structured observation: its subject's fields at the top level beside the window's. A
/// delta leaves out what the caller already has from its baseline (the subject but for
/// [`Shown::KEPT_IN_DELTA`], the list around the window), so an unchanged view costs a few
/// hundred bytes; the list's figures come back whenever they changed, since a delta can grow
/// the view past its budget.
pub(super) fn observation_data<S: Shown>(observation: &Observation<S>) -> Value {
    let Value::Object(mut whole) = json!(observation) else {
        unreachable!("an observation serialises as an object");
    };
    let Some(Value::Object(of)) = whole.remove("of") else {
        unreachable!("an observation's subject serialises as an object");
    };
    let Some(delta) = &observation.delta else {
        whole.extend(of);
        return Value::Object(whole);
    };
    let mut data = Map::new();
    for key in S::KEPT_IN_DELTA {
        if let Some(value) = of.get(*key) {
            data.insert((*key).into(), value.clone());
        }
    }
    let mut kept = vec!["version", "delta", "outside", "settling"];
    if delta.view_changed {
        kept.extend(["truncated", "totalNodes", "nextOffset"]);
    }
    for key in kept {
        if let Some(value) = whole.remove(key) {
            data.insert(key.into(), value);
        }
    }
    Value::Object(data)
}

/// An observation in an action's data: as a snapshot gives it, less what the action's data
/// already says ([`Shown::SAID_BY_ACTION`]) or what is at its default (a zero offset, nothing
/// omitted, the total of an untruncated view, an empty `removed`) — every character of every
/// action result is paid for.
pub(super) fn action_observation_data<S: Shown>(observation: &Observation<S>) -> Value {
    let mut data = observation_data(observation);
    if let Value::Object(map) = &mut data {
        for key in S::SAID_BY_ACTION {
            map.remove(*key);
        }
        for (key, default) in [
            ("offset", json!(0)),
            ("omittedNodes", json!(0)),
            ("omittedChars", json!(0)),
            ("truncated", json!(false)),
        ] {
            if map.get(key) == Some(&default) {
                map.remove(key);
            }
        }
        // Everything shown: the total is the number of nodes.
        if !map.contains_key("truncated") && !map.contains_key("delta") {
            map.remove("totalNodes");
        }
        if let Some(Value::Object(delta)) = map.get_mut("delta")
            && delta
                .get("removed")
                .is_some_and(|r| r.as_array().is_some_and(Vec::is_empty))
        {
            delta.remove("removed");
        }
    }
    data
}

#[cfg(test)]
#[path = "observation_tests.rs"]
mod tests;
