//! From the collector's full node list to the window an observation shows: rendering each node
//! into its lines, the query filter (whole rows and list items), and paging within the node and
//! character budget.
//!
//! Counting is in lines: a `<select>` is one node whose option lines follow it, and every line
//! counts against `maxNodes` and `maxChars`, against `total_nodes` and in `offset`. A node's
//! lines stay together in a window unless the node alone is larger than the budget (then it is
//! split, so paging always moves forward and every line stays reachable).

use std::collections::HashSet;

use tabwire_protocol::{Delta, Node, Observation, Subject};

use super::facts::PageNode;
use super::inline;
use super::render::{Detail, render_node, render_option};

/// One node of the list, rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// The element's key in the page.
    pub key: u32,
    /// Its row or list item, for queries.
    pub group: Option<u32>,
    /// The node's line, then its option lines; inline refs still as markers (see `inline`).
    pub lines: Vec<String>,
    /// The keys of its inline refs.
    pub inline: Vec<u32>,
    /// Characters of each line.
    pub widths: Vec<u32>,
    /// Index of the node in the collector's list.
    pub node: usize,
}

impl Unit {
    fn chars(&self, lines: std::ops::Range<usize>) -> u64 {
        self.widths[lines].iter().map(|&w| u64::from(w)).sum()
    }
}

/// Renders every node, in document order. A key seen twice (which a well-behaved peer never
/// sends) keeps its first node only, so one ref never names two lines. `document_url` shortens
/// same-origin links (see [`render_node`]); a device's screen has none.
pub fn units(nodes: &[PageNode], document_url: Option<&str>) -> Vec<Unit> {
    let mut seen = HashSet::with_capacity(nodes.len());
    let mut out = Vec::with_capacity(nodes.len());
    for (index, node) in nodes.iter().enumerate() {
        if !seen.insert(node.key) {
            continue;
        }
        let mut lines = Vec::with_capacity(1 + node.options.len());
        lines.push(render_node(node, document_url, Detail::Full));
        lines.extend(node.options.iter().map(render_option));
        // Each step of indentation is two characters on every line of the node.
        let indent = 2 * u32::from(node.depth);
        let widths = lines.iter().map(|l| indent + inline::width(l)).collect();
        out.push(Unit {
            key: node.key,
            group: node.group,
            lines,
            inline: node.inline.clone(),
            widths,
            node: index,
        });
    }
    out
}

/// Keeps the units whose lines contain `query` (case-insensitive), plus every unit of the same
/// row or list item, in document order. No query keeps everything.
pub fn filter(units: Vec<Unit>, query: Option<&str>) -> Vec<Unit> {
    let Some(query) = query.map(str::to_lowercase).filter(|q| !q.is_empty()) else {
        return units;
    };
    let matched: Vec<bool> = units
        .iter()
        .map(|u| {
            u.lines
                .iter()
                .any(|l| inline::plain(l).to_lowercase().contains(&query))
        })
        .collect();
    let groups: HashSet<u32> = units
        .iter()
        .zip(&matched)
        .filter_map(|(u, &m)| if m { u.group } else { None })
        .collect();
    units
        .into_iter()
        .zip(matched)
        .filter(|(u, m)| *m || u.group.is_some_and(|g| groups.contains(&g)))
        .map(|(u, _)| u)
        .collect()
}

/// The observation's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Most lines shown.
    pub max_nodes: u32,
    /// Most characters of line text shown, summed.
    pub max_chars: u32,
}

/// The lines of one unit that a window shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// Index of the unit in the filtered list.
    pub unit: usize,
    /// Its lines shown: `from..to`.
    pub from: usize,
    /// See `from`.
    pub to: usize,
}

/// What a window shows of the list and what it leaves out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The units shown, in order.
    pub slices: Vec<Slice>,
    /// Lines in the whole (filtered) list.
    pub total_nodes: u32,
    /// Index of the first line shown (the requested offset, at most `total_nodes`).
    pub offset: u32,
    /// Lines not shown.
    pub omitted_nodes: u32,
    /// Characters of the lines not shown.
    pub omitted_chars: u32,
    /// The offset of the next page, when lines after the window remain.
    pub next_offset: Option<u32>,
}

impl Window {
    /// Whether lines of the list are not shown.
    pub fn truncated(&self) -> bool {
        self.omitted_nodes > 0
    }

    /// An observation of `of` at `version` that shows this window: as `nodes`, or as `delta`
    /// against an earlier version.
    pub fn observation<S: Subject>(
        &self,
        of: S,
        version: u64,
        nodes: Vec<Node<S::Ref>>,
        delta: Option<Delta<S::Ref>>,
    ) -> Observation<S> {
        Observation {
            total_nodes: self.total_nodes,
            offset: self.offset,
            truncated: self.truncated(),
            omitted_nodes: self.omitted_nodes,
            omitted_chars: self.omitted_chars,
            next_offset: self.next_offset,
            ..Observation::new(of, version, nodes, delta)
        }
    }
}

/// Takes the window `[offset, …)` of the list, stopping before the first unit that would
/// exceed the budget. The first unit is always shown, split if it alone is too big, so that
/// paging with `next_offset` reaches every line.
pub fn window(units: &[Unit], offset: u32, budget: Budget) -> Window {
    let total_lines: u64 = units.iter().map(|u| u.lines.len() as u64).sum();
    let total_chars: u64 = units.iter().map(|u| u.chars(0..u.lines.len())).sum();
    let offset = u64::from(offset).min(total_lines);
    let max_nodes = u64::from(budget.max_nodes);
    let max_chars = u64::from(budget.max_chars);

    let mut slices = Vec::new();
    let mut shown_lines = 0u64;
    let mut shown_chars = 0u64;
    let mut line_at = 0u64;
    for (index, unit) in units.iter().enumerate() {
        let len = unit.lines.len() as u64;
        if line_at + len <= offset {
            line_at += len;
            continue;
        }
        let from = offset.saturating_sub(line_at) as usize;
        line_at += len;
        let to = unit.lines.len();
        let lines = (to - from) as u64;
        let chars = unit.chars(from..to);
        if shown_lines + lines <= max_nodes && shown_chars + chars <= max_chars {
            shown_lines += lines;
            shown_chars += chars;
            slices.push(Slice {
                unit: index,
                from,
                to,
            });
            continue;
        }
        if slices.is_empty() && max_nodes > 0 {
            // The first unit does not fit whole: show what fits of it, at least one line.
            let mut end = from;
            while end < to
                && (end == from
                    || (shown_lines < max_nodes
                        && shown_chars + u64::from(unit.widths[end]) <= max_chars))
            {
                shown_lines += 1;
                shown_chars += u64::from(unit.widths[end]);
                end += 1;
            }
            slices.push(Slice {
                unit: index,
                from,
                to: end,
            });
        }
        break;
    }
    let end = offset + shown_lines;
    Window {
        slices,
        total_nodes: clamp(total_lines),
        offset: clamp(offset),
        omitted_nodes: clamp(total_lines - shown_lines),
        omitted_chars: clamp(total_chars - shown_chars),
        next_offset: (end < total_lines && shown_lines > 0).then(|| clamp(end)),
    }
}

/// The lines of the list that the page counted but did not send, around the units sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unsent {
    /// Lines before the first unit.
    pub before: u32,
    /// A lower bound of their characters.
    pub before_chars: u32,
    /// Lines after the last unit.
    pub after: u32,
    /// A lower bound of their characters.
    pub after_chars: u32,
}

/// [`window`] over the part of the list the page sent, `units`, which starts at line
/// `unsent.before` of the whole list: positions and counts are of the whole list.
pub fn window_around(units: &[Unit], offset: u32, budget: Budget, unsent: Unsent) -> Window {
    let part = window(units, offset.saturating_sub(unsent.before), budget);
    let total = part.total_nodes + unsent.before + unsent.after;
    let shown: u32 = part.slices.iter().map(|s| (s.to - s.from) as u32).sum();
    let offset = (part.offset + unsent.before).min(total);
    let end = offset + shown;
    Window {
        total_nodes: total,
        offset,
        omitted_nodes: total - shown,
        omitted_chars: part
            .omitted_chars
            .saturating_add(unsent.before_chars)
            .saturating_add(unsent.after_chars),
        next_offset: (end < total && shown > 0).then_some(end),
        slices: part.slices,
    }
}

fn clamp(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{PROSE_ROLE, PageOption};

    const URL: Option<&str> = Some("http://x/");

    fn button(key: u32, name: &str) -> PageNode {
        PageNode::new(key, "button", name)
    }

    fn select(key: u32, options: usize) -> PageNode {
        PageNode {
            key,
            role: "combobox".into(),
            name: "Size".into(),
            options: (0..options)
                .map(|i| PageOption {
                    text: format!("O{i}"),
                    selected: i == 0,
                })
                .collect(),
            ..PageNode::default()
        }
    }

    fn budget(max_nodes: u32, max_chars: u32) -> Budget {
        Budget {
            max_nodes,
            max_chars,
        }
    }

    fn texts(units: &[Unit], window: &Window) -> Vec<String> {
        window
            .slices
            .iter()
            .flat_map(|s| units[s.unit].lines[s.from..s.to].iter().cloned())
            .collect()
    }

    #[test]
    fn budget_by_nodes_keeps_document_order() {
        let list = units(
            &(1..=5)
                .map(|k| button(k, &format!("B{k}")))
                .collect::<Vec<_>>(),
            URL,
        );
        let w = window(&list, 0, budget(3, 10_000));
        assert_eq!(
            texts(&list, &w),
            [r#"button "B1""#, r#"button "B2""#, r#"button "B3""#]
        );
        assert_eq!(w.total_nodes, 5);
        assert_eq!(w.omitted_nodes, 2);
        assert_eq!(w.omitted_chars, 22);
        assert_eq!(w.next_offset, Some(3));
        assert!(w.truncated());
    }

    #[test]
    fn budget_by_chars_stops_at_the_first_node_that_does_not_fit() {
        let list = units(
            &[
                button(1, "B1"),
                button(2, "a much longer name"),
                button(3, "B3"),
            ],
            URL,
        );
        // `button "B1"` is 11 characters; the second line does not fit in 20, and the third,
        // although short, is not shown after it: document order is kept.
        let w = window(&list, 0, budget(100, 20));
        assert_eq!(texts(&list, &w), [r#"button "B1""#]);
        assert_eq!(w.next_offset, Some(1));
    }

    #[test]
    fn option_lines_count_and_stay_with_their_select() {
        let list = units(&[button(1, "A"), select(2, 3), button(3, "B")], URL);
        assert_eq!(list[1].lines.len(), 4);
        let w = window(&list, 0, budget(4, 10_000));
        // The select (4 lines) does not fit after the button: it starts the next page whole.
        assert_eq!(texts(&list, &w), [r#"button "A""#]);
        assert_eq!(w.total_nodes, 6);
        assert_eq!(w.next_offset, Some(1));
        let w = window(&list, 1, budget(4, 10_000));
        assert_eq!(
            texts(&list, &w),
            [
                r#"combobox "Size""#,
                r#"  option "O0" [selected]"#,
                r#"  option "O1""#,
                r#"  option "O2""#
            ]
        );
        assert_eq!(w.next_offset, Some(5));
    }

    #[test]
    fn a_node_bigger_than_the_budget_is_split_so_paging_moves_on() {
        let list = units(&[select(1, 5)], URL);
        let w = window(&list, 0, budget(2, 10_000));
        assert_eq!(
            w.slices,
            [Slice {
                unit: 0,
                from: 0,
                to: 2
            }]
        );
        assert_eq!(w.next_offset, Some(2));
        let w = window(&list, 2, budget(2, 10_000));
        assert_eq!(
            w.slices,
            [Slice {
                unit: 0,
                from: 2,
                to: 4
            }]
        );
        // A single line longer than maxChars is still shown alone.
        let list = units(&[button(1, &"x".repeat(150))], URL);
        let w = window(&list, 0, budget(10, 100));
        assert_eq!(w.slices.len(), 1);
        assert_eq!(w.next_offset, None);
        assert!(!w.truncated());
    }

    #[test]
    fn paging_reaches_every_line_exactly_once() {
        let mut nodes = Vec::new();
        for k in 1..=40u32 {
            if k % 7 == 0 {
                nodes.push(select(k, (k % 5) as usize + 1));
            } else {
                nodes.push(button(k, &"n".repeat((k * 13 % 60) as usize)));
            }
        }
        let list = units(&nodes, URL);
        let all: Vec<String> = list.iter().flat_map(|u| u.lines.clone()).collect();
        for (max_nodes, max_chars) in [(1, 10), (3, 100), (7, 250), (1000, 100_000), (2, 30)] {
            let mut seen = Vec::new();
            let mut offset = Some(0);
            let mut pages = 0;
            while let Some(at) = offset {
                let w = window(&list, at, budget(max_nodes, max_chars));
                assert_eq!(w.offset, at);
                assert_eq!(w.total_nodes as usize, all.len());
                let page = texts(&list, &w);
                assert!(!page.is_empty());
                assert_eq!(
                    w.omitted_nodes as usize,
                    all.len() - page.len(),
                    "omitted counts every line not on this page"
                );
                seen.extend(page);
                offset = w.next_offset;
                pages += 1;
                assert!(pages <= all.len(), "paging must end");
            }
            assert_eq!(seen, all, "budget ({max_nodes}, {max_chars})");
        }
    }

    #[test]
    fn an_offset_past_the_end_shows_nothing() {
        let list = units(&[button(1, "A")], URL);
        let w = window(&list, 5, budget(10, 100));
        assert!(w.slices.is_empty());
        assert_eq!(w.offset, 1);
        assert_eq!(w.next_offset, None);
        assert_eq!(w.omitted_nodes, 1);
    }

    #[test]
    fn query_matches_lines_and_brings_whole_groups() {
        let row = |key: u32, name: &str| PageNode {
            key,
            role: "row".into(),
            name: name.into(),
            group: Some(key),
            ..PageNode::default()
        };
        let in_row = |key: u32, name: &str, group: u32| PageNode {
            group: Some(group),
            ..button(key, name)
        };
        let nodes = vec![
            button(1, "Search"),
            row(10, "Row 1499 | Customer 1"),
            in_row(11, "Open 1499", 10),
            row(20, "Row 1500 | Customer 500"),
            in_row(21, "Open 1500", 20),
            row(30, "Row 1501 | Customer 2"),
            in_row(31, "Open 1501", 30),
        ];
        let list = filter(units(&nodes, URL), Some("row 1500"));
        let lines: Vec<&str> = list.iter().map(|u| u.lines[0].as_str()).collect();
        assert_eq!(
            lines,
            [r#"row "Row 1500 | Customer 500""#, r#"button "Open 1500""#]
        );
        // A match on a member brings its row; role words match too.
        let list = filter(units(&nodes, URL), Some("OPEN 1501"));
        assert_eq!(list.iter().map(|u| u.key).collect::<Vec<_>>(), [30, 31]);
        let list = filter(units(&nodes, URL), Some("button \"search"));
        assert_eq!(list.iter().map(|u| u.key).collect::<Vec<_>>(), [1]);
        assert_eq!(filter(units(&nodes, URL), Some("")).len(), nodes.len());
        assert!(filter(units(&nodes, URL), Some("nothing")).is_empty());
    }

    #[test]
    fn query_matches_option_lines_too() {
        let list = filter(units(&[button(1, "A"), select(2, 3)], URL), Some("o2"));
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].key, 2);
    }

    /// What the collector's `windowOf` sends for a window (js/collector/20-walk.js), written
    /// again here: the nodes from the one holding line `offset`, until `lines` lines or a lower
    /// bound of `chars` characters, and the counts around them.
    fn sent(nodes: &[PageNode], offset: u32, lines: u32, chars: u32) -> (Vec<PageNode>, Unsent) {
        let lines_of = |n: &PageNode| 1 + n.options.len() as u32;
        let chars_of = |n: &PageNode| {
            (n.name.len().min(190)
                + n.options
                    .iter()
                    .map(|o| o.text.len().min(190))
                    .sum::<usize>()) as u32
        };
        let (mut line, mut first, mut before_chars) = (0, 0, 0);
        while first < nodes.len() && line + lines_of(&nodes[first]) <= offset {
            line += lines_of(&nodes[first]);
            before_chars += chars_of(&nodes[first]);
            first += 1;
        }
        let (mut end, mut taken, mut taken_chars) = (first, 0, 0);
        while end < nodes.len() && taken < lines + (offset - line) && taken_chars < chars {
            taken += lines_of(&nodes[end]);
            taken_chars += chars_of(&nodes[end]);
            end += 1;
        }
        let after = nodes[end..].iter().map(lines_of).sum();
        let after_chars = nodes[end..].iter().map(chars_of).sum();
        let unsent = Unsent {
            before: line,
            before_chars,
            after,
            after_chars,
        };
        (nodes[first..end].to_vec(), unsent)
    }

    #[test]
    fn a_window_over_the_nodes_sent_is_the_window_over_all_of_them() {
        // Names longer than a line's cap too: the page's bound must hold for capped lines.
        let nodes: Vec<PageNode> = (1..=60u32)
            .map(|k| match k % 7 {
                0 => select(k, (k % 4) as usize),
                5 => button(k, &"long ".repeat(60)),
                _ => button(k, &"w".repeat((k % 13) as usize)),
            })
            .collect();
        let all = units(&nodes, URL);
        for offset in [0, 1, 5, 17, 30, 70, 79, 80, 200] {
            for (lines, chars) in [(1, 10_000), (3, 10_000), (10, 60), (30, 1500), (200, 40)] {
                let whole = window(&all, offset, budget(lines, chars));
                let (part, unsent) = sent(&nodes, offset, lines, chars);
                let part_units = units(&part, URL);
                let around = window_around(&part_units, offset, budget(lines, chars), unsent);
                let case = format!("offset {offset}, {lines} lines, {chars} chars");
                assert_eq!(texts(&part_units, &around), texts(&all, &whole), "{case}");
                assert_eq!(around.total_nodes, whole.total_nodes, "{case}");
                assert_eq!(around.offset, whole.offset, "{case}");
                assert_eq!(around.omitted_nodes, whole.omitted_nodes, "{case}");
                assert_eq!(around.next_offset, whole.next_offset, "{case}");
                assert!(around.omitted_chars <= whole.omitted_chars, "{case}");
            }
        }
    }

    #[test]
    fn duplicate_keys_keep_the_first_node() {
        let list = units(&[button(1, "A"), button(1, "B")], URL);
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].lines[0], r#"button "A""#);
    }

    #[test]
    fn a_screen_without_a_url_is_windowed_and_queried_like_a_page() {
        let field = |key: u32, name: &str, value: &str, secret: bool| PageNode {
            value: Some(value.into()),
            secret,
            ..PageNode::new(key, "textbox", name)
        };
        let nodes = vec![
            PageNode::new(1, PROSE_ROLE, "Sign in"),
            field(2, "Email", "ada@example.org", false),
            field(3, "Password", "hunter2", true),
            button(4, "LOGIN"),
        ];
        let list = units(&nodes, None);
        let w = window(&list, 0, budget(3, 10_000));
        assert_eq!(
            texts(&list, &w),
            [
                r#""Sign in""#,
                r#"textbox "Email" = "ada@example.org""#,
                r#"textbox "Password" = "••••""#
            ]
        );
        assert_eq!(w.next_offset, Some(3));
        // A query reads the rendered lines, so it cannot find a secret's text.
        assert!(filter(units(&nodes, None), Some("hunter2")).is_empty());
        let found = filter(units(&nodes, None), Some("login"));
        assert_eq!(found.iter().map(|u| u.key).collect::<Vec<_>>(), [4]);
    }
}
