//! What a wait found, as one observation line with its ref: the element a selector matched, or
//! the line that holds a text. `wait_for` answers with it so the agent can act on what
//! appeared without another snapshot.
//!
//! The refs are the document's (the same an observation hands out, kept with its others), but
//! nothing here is an observation: no version, no baseline, no viewer's view changes.

use tabwire_observation::facts::PageNode;
use tabwire_observation::inline;
use tabwire_observation::render::{Detail, render_node};
use tabwire_observation::window::{self, Unit};
use tabwire_protocol::{ElementRef, Node, OpError, TabId};

use super::engine::{SnapshotFacts, observed_lines};
use crate::page::{self, MissingFrame, PageCommand};
use crate::refs::{self, DocState, TOP_FRAME, element_ref};

/// An element of the top document as the page described it.
pub struct Described {
    /// Its facts (`describe` in the collector), with its key.
    pub node: PageNode,
    /// The collector's token of the document it is in.
    pub doc: String,
    /// Chrome's ID of that document.
    pub document_id: String,
    /// The document's URL, for the line's links.
    pub url: String,
}

/// `described` as a line of the top document, with its ref (given now if it had none): the
/// line a snapshot shows for it when it has one (`"Saved"` for a paragraph), else as action
/// results describe an element (`div "Saved"`).
pub async fn line_of(tab: TabId, described: &Described) -> Node<ElementRef> {
    let key = described.node.key;
    let in_walk = line_where(tab, |unit| unit.key == key)
        .await
        .ok()
        .flatten()
        .filter(|(document_id, _)| *document_id == described.document_id);
    match in_walk {
        Some((_, line)) => line,
        None => described_line(tab, described),
    }
}

/// `described` as action results render an element, with its ref.
fn described_line(tab: TabId, described: &Described) -> Node<ElementRef> {
    let text = render_node(&described.node, Some(&described.url), Detail::Full);
    let index = with_document(tab, &described.document_id, &described.doc, |doc, last| {
        let index = doc.refs.assign(described.node.key, last);
        doc.refs
            .note_identities(std::slice::from_ref(&described.node));
        index
    });
    Node::new(Some(element_ref(TOP_FRAME, index)), text)
}

/// The first line of the top document (in document order, as a snapshot shows it) whose words
/// hold `text` (case-sensitive, runs of white space as one space), with its ref; `None` when
/// no single line does (the text runs across lines, or is in what snapshots leave out). A
/// text in a select's option line gives the select's line.
pub async fn line_holding(tab: TabId, text: &str) -> Result<Option<Node<ElementRef>>, OpError> {
    let needle = collapse(text);
    let found = line_where(tab, |unit| {
        unit.lines
            .iter()
            .any(|line| collapse(&inline::plain(line)).contains(&needle))
    })
    .await?;
    Ok(found.map(|(_, line)| line))
}

/// The own line (with its ref) of the first unit of the top document's walk for which `pick`
/// holds, and the document it is in.
async fn line_where(
    tab: TabId,
    pick: impl Fn(&Unit) -> bool,
) -> Result<Option<(String, Node<ElementRef>)>, OpError> {
    // A walk shown to no one: it leaves every viewer's memory of popups alone.
    let command = PageCommand::Snapshot {
        scope: None,
        known: Vec::new(),
        window: None,
        include_hidden: false,
        viewer: None,
        query: None,
        // Not checked: a wait polls this walk many times within its timeout, and observations
        // check the same model on every call.
        check: false,
    };
    let reply =
        page::run::<SnapshotFacts>(tab, TOP_FRAME, &command, MissingFrame::Requested).await?;
    let facts = reply.value;
    let units = window::units(&facts.nodes, Some(&facts.url));
    let Some(unit) = units.iter().find(|unit| pick(unit)) else {
        return Ok(None);
    };
    let depth = facts.nodes[unit.node].depth;
    let line = with_document(tab, &reply.document_id, &facts.doc, |doc, last| {
        let own = element_ref(TOP_FRAME, doc.refs.assign(unit.key, last));
        let lines = observed_lines(unit, 0..1, own, depth, |key| {
            element_ref(TOP_FRAME, doc.refs.assign(key, last))
        });
        doc.refs
            .note_identities(&facts.nodes[unit.node..=unit.node]);
        lines.into_iter().next()
    });
    Ok(line.map(|line| (reply.document_id, line)))
}

/// Runs `f` on the state of the top document `document_id` (collector token `doc`) of `tab` —
/// made afresh when the frame has moved on to it since it was last observed, as a snapshot
/// would — with the frame's ref counter.
fn with_document<R>(
    tab: TabId,
    document_id: &str,
    doc: &str,
    f: impl FnOnce(&mut DocState, &mut u32) -> R,
) -> R {
    refs::with_tables(|tables| {
        let state = tables.frame(tab, TOP_FRAME);
        let moved_on = state
            .doc
            .as_ref()
            .is_some_and(|d| d.document_id != document_id);
        let mut last = state.last_index;
        let result = f(state.document(document_id, doc), &mut last);
        state.last_index = last;
        if moved_on {
            // The old page's frames went with it, and their refs.
            tables.forget_subframes(tab);
        }
        result
    })
}

/// `text` with runs of white space as one space and none at the ends, as the page compares.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_described_element_gets_a_ref_the_document_keeps() {
        let described = Described {
            node: PageNode::new(41, "status", "Saved"),
            doc: "tok".into(),
            document_id: "DOC".into(),
            url: "http://x/".into(),
        };
        let line = described_line(9, &described);
        assert_eq!(line.text, r#"status "Saved""#);
        let element = line.node_ref.unwrap();
        // The same element keeps its ref, and the ref resolves to it.
        assert_eq!(described_line(9, &described).node_ref, Some(element));
        let resolved = refs::with_tables(|tables| tables.resolve(9, element)).unwrap();
        assert_eq!((resolved.key, resolved.document_id.as_str()), (41, "DOC"));
        // In another document it is another element: a new ref, the old one stale.
        let moved = Described {
            document_id: "DOC2".into(),
            doc: "tok2".into(),
            ..described
        };
        let again = described_line(9, &moved).node_ref.unwrap();
        assert_ne!(again, element);
        assert!(refs::with_tables(|tables| tables.resolve(9, element)).is_err());
    }

    #[test]
    fn white_space_runs_compare_as_one_space() {
        assert_eq!(collapse("  Order\n 42\tsaved "), "Order 42 saved");
    }
}
