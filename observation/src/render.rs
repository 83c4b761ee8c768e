//! The wording of observation lines: one line per node, the text after the ref.
//!
//! A peer reports facts — role, name, value, states, href, level, options — and nothing
//! rendered (the browser's collector, js/collector/, and a device backend's UI hierarchy alike),
//! so the wording lives here, in pure Rust with unit tests. Lines look
//! like `textbox "Password" = "••••" [required]`, `link "Docs" -> /docs`, `heading[2] "Pricing"`,
//! `row "Row 1 | Customer 7 | 13.37 EUR"`, `iframe "Checkout" (frameId 4)`; prose is its text in
//! double quotes, so it cannot be mistaken for a role word. Every character is paid for by the
//! model, so nothing is said twice and lines are capped at [`MAX_LINE_CHARS`].

use super::facts::{PROSE_ROLE, PageNode, PageOption};
use crate::text::cap;
use tabwire_protocol::REDACTED;

/// The longest line a single node renders to, in characters.
pub const MAX_LINE_CHARS: usize = 200;
/// States in the order they are shown; anything else a peer sends is ignored. Focus is left
/// out: it moves with every action, so every delta would carry a line for the element that
/// lost it and one for the element that gained it (`read_element_state` reports it). The
/// browser's collector never reports `scrollable`; a device backend does, for the lists and
/// views a swipe moves.
const STATE_ORDER: [&str; 10] = [
    "checked",
    "mixed",
    "pressed",
    "selected",
    "expanded",
    "disabled",
    "required",
    "readonly",
    "modal",
    "scrollable",
];

/// How to render a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Everything, as in an observation.
    Full,
    /// Without the value: the `target` of a `Typed` result, which carries the value separately.
    WithoutValue,
}

/// Renders one node as a single line, at most [`MAX_LINE_CHARS`] long. Links on the same origin
/// as `document_url` are shown as paths; with no URL (a device's screen) every link is shown
/// whole. A secret's value is shown as [`REDACTED`], whatever the peer sent.
pub fn render_node(node: &PageNode, document_url: Option<&str>, detail: Detail) -> String {
    let name = one_line(&node.name);
    if node.role == PROSE_ROLE {
        return cap(&format!("\"{name}\""), MAX_LINE_CHARS);
    }
    let mut line = match (node.role.as_str(), node.level) {
        ("heading", Some(level)) => format!("heading[{level}]"),
        (role, _) => one_line(role),
    };
    if !name.is_empty() {
        line.push_str(&format!(" \"{name}\""));
    }
    if let Some(format) = node.format.as_deref().filter(|f| !f.is_empty()) {
        line.push_str(&format!(" ({})", one_line(format)));
    }
    if detail == Detail::Full
        && let Some(value) = node.value.as_deref().filter(|v| !v.is_empty())
    {
        let value = if node.secret { REDACTED } else { value };
        line.push_str(&format!(" = \"{}\"", one_line(value)));
    }
    if let Some(href) = node.href.as_deref().filter(|h| !h.is_empty()) {
        line.push_str(" -> ");
        line.push_str(&display_href(document_url, href));
    }
    if let Some(frame) = node.frame {
        line.push_str(&format!(" (frameId {frame})"));
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

/// Shows a link on the document's origin as its path (`/docs?x=1`), any other (or any, with no
/// document URL) as the full URL.
pub fn display_href(document_url: Option<&str>, href: &str) -> String {
    match (document_url.and_then(origin), origin(href)) {
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

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "https://shop.example/login?x=1";

    fn node(role: &str, name: &str) -> PageNode {
        PageNode {
            key: 1,
            role: role.into(),
            name: name.into(),
            ..PageNode::default()
        }
    }

    fn render(n: &PageNode) -> String {
        render_node(n, Some(URL), Detail::Full)
    }

    #[test]
    fn renders_the_spec_examples() {
        let mut user = node("textbox", "Username");
        assert_eq!(render(&user), r#"textbox "Username""#);
        user.value = Some(String::new());
        assert_eq!(render(&user), r#"textbox "Username""#);

        let mut password = node("textbox", "Password");
        password.value = Some(REDACTED.into());
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

        let mut size = node("combobox", "Size");
        size.value = Some("Medium".into());
        assert_eq!(render(&size), r#"combobox "Size" = "Medium""#);
        assert_eq!(
            render_option(&PageOption {
                text: "Medium".into(),
                selected: true
            }),
            r#"  option "Medium" [selected]"#
        );
    }

    #[test]
    fn prose_is_quoted_text_on_one_line() {
        let prose = node(PROSE_ROLE, "Plain prose  that\n explains something.");
        assert_eq!(render(&prose), r#""Plain prose that explains something.""#);
        let long = node(PROSE_ROLE, &"word ".repeat(100));
        let line = render(&long);
        assert_eq!(line.chars().count(), MAX_LINE_CHARS);
        assert!(line.starts_with('"') && line.ends_with('…'));
    }

    #[test]
    fn rows_render_as_one_line_of_cells() {
        let row = node("row", "Row 1500 | Customer 500 | 20055.00 EUR");
        assert_eq!(
            render(&row),
            r#"row "Row 1500 | Customer 500 | 20055.00 EUR""#
        );
    }

    #[test]
    fn frames_say_how_to_observe_them() {
        let mut frame = node("iframe", "Checkout");
        frame.frame = Some(4);
        assert_eq!(render(&frame), r#"iframe "Checkout" (frameId 4)"#);
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
        assert_eq!(render(&n), r#"checkbox "A" [checked] [disabled]"#);
    }

    #[test]
    fn the_value_can_be_left_out() {
        let mut n = node("textbox", "Email");
        n.value = Some("a@b.c".into());
        assert_eq!(
            render_node(&n, Some(URL), Detail::WithoutValue),
            r#"textbox "Email""#
        );
    }

    #[test]
    fn hrefs_are_shortened_only_on_the_same_origin() {
        assert_eq!(
            display_href(Some(URL), "https://shop.example/a?b#c"),
            "/a?b#c"
        );
        assert_eq!(display_href(Some(URL), "https://SHOP.example"), "/");
        assert_eq!(
            display_href(Some(URL), "https://shop.example:8443/a"),
            "https://shop.example:8443/a"
        );
        assert_eq!(
            display_href(Some(URL), "http://shop.example/a"),
            "http://shop.example/a"
        );
        assert_eq!(display_href(Some(URL), "mailto:a@b.c"), "mailto:a@b.c");
        assert_eq!(
            display_href(Some("about:blank"), "https://x/y"),
            "https://x/y"
        );
    }

    #[test]
    fn long_lines_are_capped() {
        let n = node("button", &"x".repeat(500));
        let line = render(&n);
        assert_eq!(line.chars().count(), MAX_LINE_CHARS);
        assert!(line.ends_with('…'));
    }

    #[test]
    fn a_date_field_says_its_format_with_or_without_its_value() {
        let mut due = node("textbox", "Due");
        due.format = Some("YYYY-MM-DD".into());
        assert_eq!(render(&due), "textbox \"Due\" (YYYY-MM-DD)");
        due.value = Some("2026-12-03".into());
        assert_eq!(
            render(&due),
            "textbox \"Due\" (YYYY-MM-DD) = \"2026-12-03\""
        );
        assert_eq!(
            render_node(&due, Some(URL), Detail::WithoutValue),
            "textbox \"Due\" (YYYY-MM-DD)"
        );
    }

    /// A node as a device backend fills it in: no URL, no href, no frame.
    fn device(role: &str, name: &str, states: &[&str]) -> PageNode {
        PageNode {
            states: states.iter().map(|s| (*s).to_owned()).collect(),
            ..PageNode::new(1, role, name)
        }
    }

    fn on_device(n: &PageNode) -> String {
        render_node(n, None, Detail::Full)
    }

    #[test]
    fn device_nodes_render_in_the_browsers_words() {
        // An EditText named by its hint, empty and then with text typed.
        let mut email = device("textbox", "Email", &[]);
        assert_eq!(on_device(&email), r#"textbox "Email""#);
        email.value = Some("ada@example.org".into());
        assert_eq!(on_device(&email), r#"textbox "Email" = "ada@example.org""#);
        assert_eq!(
            on_device(&device("button", "LOGIN", &[])),
            r#"button "LOGIN""#
        );
        assert_eq!(
            on_device(&device("button", "LOGIN", &["disabled", "focused"])),
            r#"button "LOGIN" [disabled]"#
        );
        assert_eq!(
            on_device(&device("switch", "Wi-Fi", &["checked"])),
            r#"switch "Wi-Fi" [checked]"#
        );
        assert_eq!(
            on_device(&device("switch", "Bluetooth", &[])),
            r#"switch "Bluetooth""#
        );
        assert_eq!(
            on_device(&device("checkbox", "Remember me", &["checked", "disabled"])),
            r#"checkbox "Remember me" [checked] [disabled]"#
        );
        assert_eq!(
            on_device(&device("radio", "Express", &["checked"])),
            r#"radio "Express" [checked]"#
        );
        assert_eq!(
            on_device(&device("img", "Profile photo", &[])),
            r#"img "Profile photo""#
        );
        assert_eq!(
            on_device(&device(PROSE_ROLE, "Welcome back,\nAda", &[])),
            r#""Welcome back, Ada""#
        );
        let mut volume = device("slider", "Volume", &[]);
        volume.value = Some("40".into());
        assert_eq!(on_device(&volume), r#"slider "Volume" = "40""#);
        assert_eq!(on_device(&device("progressbar", "", &[])), "progressbar");
        let mut country = device("combobox", "Country", &[]);
        country.value = Some("Norway".into());
        assert_eq!(on_device(&country), r#"combobox "Country" = "Norway""#);
        assert_eq!(
            on_device(&device("tab", "Chats", &["selected"])),
            r#"tab "Chats" [selected]"#
        );
        assert_eq!(
            on_device(&device("list", "", &["scrollable"])),
            "list [scrollable]"
        );
    }

    #[test]
    fn a_secret_value_never_shows_whatever_the_peer_sent() {
        // A device's dump can carry a password field's text in the clear.
        let mut password = device("textbox", "Password", &[]);
        password.value = Some("hunter2".into());
        password.secret = true;
        assert_eq!(on_device(&password), r#"textbox "Password" = "••••""#);
        assert_eq!(
            render_node(&password, Some(URL), Detail::Full),
            r#"textbox "Password" = "••••""#
        );
        assert_eq!(
            render_node(&password, None, Detail::WithoutValue),
            r#"textbox "Password""#
        );
        // An empty secret says nothing, as an empty field does.
        password.value = Some(String::new());
        assert_eq!(on_device(&password), r#"textbox "Password""#);
        password.value = None;
        assert_eq!(on_device(&password), r#"textbox "Password""#);
    }

    #[test]
    fn without_a_document_url_links_show_whole() {
        let mut link = device("link", "Docs", &[]);
        link.href = Some("https://shop.example/docs".into());
        assert_eq!(
            on_device(&link),
            r#"link "Docs" -> https://shop.example/docs"#
        );
        assert_eq!(display_href(None, "/relative"), "/relative");
    }
}
