//! Turning the in-page collector's raw facts into an observation: one line of text per node,
//! refs for the nodes an agent can act on, and the node/character budget.
//!
//! The collector (js/page.js) reports facts — role, name, value, states, href, level, options —
//! and nothing rendered, so the wording of observations lives here, in pure Rust with unit tests.
//! Lines look like `textbox "Password" = "••••" [required]`, `link "Docs" -> /docs`,
//! `heading[2] "Pricing"`; prose is shown as itself, without a ref.

use serde::Deserialize;
use tabwire_protocol::{ElementRef, ObservedNode};

/// The role the collector gives to a run of prose text.
pub const PROSE_ROLE: &str = "text";
/// The longest line a single node renders to, in characters.
pub const MAX_LINE_CHARS: usize = 200;
/// States in the order they are shown; anything else the collector sends is ignored.
const STATE_ORDER: [&str; 9] = [
    "checked", "mixed", "pressed", "selected", "expanded", "disabled", "required", "readonly",
    "focused",
];

/// What the collector reports about one node.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PageNode {
    /// The element's identity in the page; absent for prose.
    pub key: Option<u32>,
    /// ARIA role (implicit or explicit), or [`PROSE_ROLE`].
    pub role: String,
    /// Accessible name, or the prose text itself.
    pub name: String,
    /// A field's value (a password's is already redacted by the page).
    pub value: Option<String>,
    /// The states that hold (`checked`, `disabled` …).
    pub states: Vec<String>,
    /// A link's absolute URL.
    pub href: Option<String>,
    /// A heading's level.
    pub level: Option<u32>,
    /// A select's first options.
    pub options: Vec<PageOption>,
    /// The element's box in CSS pixels, for future use by geometry-aware features.
    #[serde(rename = "box")]
    pub bounds: Option<Bounds>,
}

/// One option of a `<select>`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct PageOption {
    /// The option's label.
    pub text: String,
    /// Whether it is selected.
    pub selected: bool,
}

/// A box in viewport CSS pixels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Bounds {
    /// Left.
    pub x: f64,
    /// Top.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

impl PageNode {
    /// Whether the node gets a ref (everything but prose).
    pub fn is_element(&self) -> bool {
        self.role != PROSE_ROLE && self.key.is_some()
    }
}

/// How to render a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Everything, as in an observation.
    Full,
    /// Without the value: the `target` of a `Typed` result, which carries the value separately.
    WithoutValue,
}

/// Renders one node as a single line, at most [`MAX_LINE_CHARS`] long.
pub fn render_node(node: &PageNode, document_url: &str, detail: Detail) -> String {
    let name = one_line(&node.name);
    if node.role == PROSE_ROLE {
        return cap(&name, MAX_LINE_CHARS);
    }
    let mut line = match (node.role.as_str(), node.level) {
        ("heading", Some(level)) => format!("heading[{level}]"),
        (role, _) => one_line(role),
    };
    if !name.is_empty() {
        line.push_str(&format!(" \"{name}\""));
    }
    if detail == Detail::Full
        && let Some(value) = node.value.as_deref().filter(|v| !v.is_empty())
    {
        line.push_str(&format!(" = \"{}\"", one_line(value)));
    }
    if let Some(href) = node.href.as_deref().filter(|h| !h.is_empty()) {
        line.push_str(" -> ");
        line.push_str(&display_href(document_url, href));
    }
    for state in STATE_ORDER {
        if node.states.iter().any(|s| s == state) {
            line.push_str(&format!(" [{state}]"));
        }
    }
    cap(&line, MAX_LINE_CHARS)
}

/// Renders a select option, indented under its select.
pub fn render_option(option: &PageOption) -> String {
    let mut line = format!("  option \"{}\"", one_line(&option.text));
    if option.selected {
        line.push_str(" [selected]");
    }
    cap(&line, MAX_LINE_CHARS)
}

/// Shows a same-origin link as its path (`/docs?x=1`), any other as the full URL.
pub fn display_href(document_url: &str, href: &str) -> String {
    match (origin(document_url), origin(href)) {
        (Some(page), Some(link)) if page.eq_ignore_ascii_case(link) => {
            let rest = &href[link.len()..];
            if rest.is_empty() {
                "/".to_owned()
            } else {
                rest.to_owned()
            }
        }
        _ => href.to_owned(),
    }
}

/// `scheme://authority` of a hierarchical URL.
fn origin(url: &str) -> Option<&str> {
    let after_scheme = url.find("://")? + 3;
    let end = url[after_scheme..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| after_scheme + i);
    (end > after_scheme).then(|| &url[..end])
}

/// Collapses whitespace and control characters to single spaces.
fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Cuts `text` to `max` characters, ending with `…` when cut.
fn cap(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The observation's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Most lines shown.
    pub max_nodes: u32,
    /// Most characters of line text shown, summed.
    pub max_chars: u32,
}

/// The lines of an observation and what was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    /// Lines shown, in document order.
    pub nodes: Vec<ObservedNode>,
    /// How many lines the page has in all.
    pub total_nodes: u32,
    /// Whether any were left out.
    pub truncated: bool,
    /// How many were left out.
    pub omitted_nodes: u32,
}

/// Renders nodes in document order until the budget runs out, handing out refs through
/// `ref_for` only for element nodes that are shown (so ref numbers stay small and dense).
///
/// `page_total` is the collector's count of all lines on the page; it may have stopped
/// reporting facts early (it knows the budget), so the total can exceed `nodes`.
pub fn build(
    nodes: &[PageNode],
    page_total: u32,
    document_url: &str,
    budget: Budget,
    mut ref_for: impl FnMut(u32) -> ElementRef,
) -> Built {
    let mut shown: Vec<ObservedNode> = Vec::new();
    let mut chars: u64 = 0;
    let mut reported_lines: u32 = 0;
    let mut full = false;
    for node in nodes {
        let lines = std::iter::once(render_node(node, document_url, Detail::Full))
            .chain(node.options.iter().map(render_option));
        for (i, text) in lines.enumerate() {
            reported_lines += 1;
            if full {
                continue;
            }
            let len = text.chars().count() as u64;
            if shown.len() as u32 >= budget.max_nodes || chars + len > u64::from(budget.max_chars) {
                full = true;
                continue;
            }
            chars += len;
            let element_ref = match node.key {
                Some(key) if i == 0 && node.is_element() => Some(ref_for(key)),
                _ => None,
            };
            shown.push(ObservedNode { element_ref, text });
        }
    }
    let total_nodes = page_total.max(reported_lines);
    let omitted_nodes = total_nodes - shown.len() as u32;
    Built {
        nodes: shown,
        total_nodes,
        truncated: omitted_nodes > 0,
        omitted_nodes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "https://shop.example/login?x=1";

    fn node(role: &str, name: &str) -> PageNode {
        PageNode {
            key: Some(1),
            role: role.into(),
            name: name.into(),
            ..PageNode::default()
        }
    }

    fn render(n: &PageNode) -> String {
        render_node(n, URL, Detail::Full)
    }

    #[test]
    fn renders_the_spec_examples() {
        let mut user = node("textbox", "Username");
        assert_eq!(render(&user), r#"textbox "Username""#);
        user.value = Some(String::new());
        assert_eq!(render(&user), r#"textbox "Username""#);

        let mut password = node("textbox", "Password");
        password.value = Some(tabwire_protocol::ops::REDACTED.into());
        password.states = vec!["required".into()];
        assert_eq!(
            render(&password),
            r#"textbox "Password" = "••••" [required]"#
        );

        let mut button = node("button", "Sign in");
        button.states = vec!["disabled".into()];
        assert_eq!(render(&button), r#"button "Sign in" [disabled]"#);

        let mut link = node("link", "Docs");
        link.href = Some("https://shop.example/docs".into());
        assert_eq!(render(&link), r#"link "Docs" -> /docs"#);

        let mut heading = node("heading", "Pricing");
        heading.level = Some(2);
        assert_eq!(render(&heading), r#"heading[2] "Pricing""#);

        let mut remember = node("checkbox", "Remember me");
        remember.states = vec!["checked".into()];
        assert_eq!(render(&remember), r#"checkbox "Remember me" [checked]"#);

        let mut country = node("combobox", "Country");
        country.value = Some("France".into());
        assert_eq!(render(&country), r#"combobox "Country" = "France""#);

        let prose = PageNode {
            role: PROSE_ROLE.into(),
            name: "Welcome  back,\n friend".into(),
            ..PageNode::default()
        };
        assert_eq!(render(&prose), "Welcome back, friend");
    }

    #[test]
    fn states_render_in_a_fixed_order_and_unknown_ones_are_dropped() {
        let mut n = node("checkbox", "A");
        n.states = vec![
            "focused".into(),
            "bogus".into(),
            "disabled".into(),
            "checked".into(),
        ];
        assert_eq!(render(&n), r#"checkbox "A" [checked] [disabled] [focused]"#);
    }

    #[test]
    fn the_value_can_be_left_out() {
        let mut n = node("textbox", "Email");
        n.value = Some("a@b.c".into());
        assert_eq!(
            render_node(&n, URL, Detail::WithoutValue),
            r#"textbox "Email""#
        );
    }

    #[test]
    fn hrefs_are_shortened_only_on_the_same_origin() {
        assert_eq!(display_href(URL, "https://shop.example/a?b#c"), "/a?b#c");
        assert_eq!(display_href(URL, "https://SHOP.example"), "/");
        assert_eq!(
            display_href(URL, "https://shop.example:8443/a"),
            "https://shop.example:8443/a"
        );
        assert_eq!(
            display_href(URL, "http://shop.example/a"),
            "http://shop.example/a"
        );
        assert_eq!(display_href(URL, "mailto:a@b.c"), "mailto:a@b.c");
        assert_eq!(display_href("about:blank", "https://x/y"), "https://x/y");
    }

    #[test]
    fn long_lines_are_capped() {
        let n = node("button", &"x".repeat(500));
        let line = render(&n);
        assert_eq!(line.chars().count(), MAX_LINE_CHARS);
        assert!(line.ends_with('…'));
    }

    fn numbered(count: u32) -> Vec<PageNode> {
        (1..=count)
            .map(|k| PageNode {
                key: Some(k * 10),
                role: "button".into(),
                name: format!("B{k}"),
                ..PageNode::default()
            })
            .collect()
    }

    #[test]
    fn budget_by_nodes_keeps_document_order() {
        let nodes = numbered(5);
        let mut issued = Vec::new();
        let built = build(
            &nodes,
            5,
            URL,
            Budget {
                max_nodes: 3,
                max_chars: 10_000,
            },
            |key| {
                issued.push(key);
                ElementRef::top(issued.len() as u32)
            },
        );
        let texts: Vec<&str> = built.nodes.iter().map(|n| n.text.as_str()).collect();
        assert_eq!(
            texts,
            [r#"button "B1""#, r#"button "B2""#, r#"button "B3""#]
        );
        assert_eq!(issued, [10, 20, 30], "refs only for shown nodes");
        assert!(built.truncated);
        assert_eq!(built.omitted_nodes, 2);
        assert_eq!(built.total_nodes, 5);
    }

    #[test]
    fn budget_by_chars_stops_at_the_first_node_that_does_not_fit() {
        let mut nodes = numbered(3);
        nodes[1].name = "a much longer name".into();
        // `button "B1"` is 11 characters; the second line does not fit in 20, and the third,
        // although short, is not shown after it: document order is kept.
        let built = build(
            &nodes,
            3,
            URL,
            Budget {
                max_nodes: 100,
                max_chars: 20,
            },
            ElementRef::top,
        );
        assert_eq!(built.nodes.len(), 1);
        assert_eq!(built.omitted_nodes, 2);
    }

    #[test]
    fn prose_has_no_ref_and_options_follow_their_select() {
        let select = PageNode {
            key: Some(3),
            role: "combobox".into(),
            name: "Country".into(),
            value: Some("France".into()),
            options: vec![
                PageOption {
                    text: "Spain".into(),
                    selected: false,
                },
                PageOption {
                    text: "France".into(),
                    selected: true,
                },
            ],
            ..PageNode::default()
        };
        let prose = PageNode {
            role: PROSE_ROLE.into(),
            name: "Choose a country".into(),
            ..PageNode::default()
        };
        let built = build(
            &[prose, select],
            0,
            URL,
            Budget {
                max_nodes: 10,
                max_chars: 1000,
            },
            ElementRef::top,
        );
        let lines: Vec<(Option<String>, &str)> = built
            .nodes
            .iter()
            .map(|n| (n.element_ref.map(|r| r.to_string()), n.text.as_str()))
            .collect();
        assert_eq!(
            lines,
            [
                (None, "Choose a country"),
                (Some("@e3".into()), r#"combobox "Country" = "France""#),
                (None, r#"  option "Spain""#),
                (None, r#"  option "France" [selected]"#),
            ]
        );
        assert_eq!(built.total_nodes, 4);
        assert!(!built.truncated);
    }

    #[test]
    fn the_page_total_counts_nodes_it_did_not_report() {
        let built = build(
            &numbered(2),
            40,
            URL,
            Budget {
                max_nodes: 2,
                max_chars: 1000,
            },
            ElementRef::top,
        );
        assert_eq!(built.total_nodes, 40);
        assert_eq!(built.omitted_nodes, 38);
        assert!(built.truncated);
    }

    #[test]
    fn collector_facts_parse_leniently() {
        let json = r#"{"key":4,"role":"textbox","name":"Email","value":"","states":["required"],
            "box":{"x":1,"y":2,"w":3,"h":4},"later":"ignored"}"#;
        let parsed: PageNode = serde_json::from_str(json).unwrap();
        assert_eq!(parsed.key, Some(4));
        assert_eq!(
            parsed.bounds,
            Some(Bounds {
                x: 1.0,
                y: 2.0,
                w: 3.0,
                h: 4.0
            })
        );
    }
}
