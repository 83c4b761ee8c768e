//! Reading snapshots the way completeness is scored: which refs name interactive elements, and
//! what the page says its own interactive-element count is.
//!
//! A ref counts when the line it sits on has an interactive role (the list below). `option` is
//! left out on purpose: the fixture pages count a native `<select>` as one element (`count.js`),
//! and its options are reached through it, so counting them as well would score more than the
//! page has.

use std::collections::BTreeSet;

/// Roles an agent acts on. Both servers use ARIA role names.
pub const INTERACTIVE_ROLES: &[&str] = &[
    "button",
    "link",
    "textbox",
    "searchbox",
    "checkbox",
    "radio",
    "combobox",
    "listbox",
    "switch",
    "slider",
    "spinbutton",
    "tab",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "treeitem",
];

/// What each fixture page (and frame) prints from `count.js`.
const COUNT_LINE: &str = "Interactive elements here: ";

/// Whether `role` is one of [`INTERACTIVE_ROLES`].
pub fn is_interactive(role: &str) -> bool {
    INTERACTIVE_ROLES.contains(&role)
}

/// The role of a tabwire node's text (`button "Open 1500"`, `heading[2] "Orders"`,
/// `checkbox "Pick 1" [checked]`); `None` for prose (`"Some text"`).
pub fn tabwire_role(node_text: &str) -> Option<&str> {
    let first = node_text.split_whitespace().next()?;
    if first.starts_with('"') {
        return None;
    }
    Some(first.split('[').next().unwrap_or(first))
}

/// Distinct refs on lines with an interactive role in a playwright-mcp snapshot, whose lines
/// look like `- button "Open 1" [ref=f3e17]` or `- combobox [ref=e3940]:` (iframe content
/// included, with refs such as `f1e3`).
pub fn playwright_interactive_refs(snapshot: &str) -> BTreeSet<String> {
    snapshot
        .lines()
        .filter_map(|line| {
            let item = line.trim_start().strip_prefix("- ")?;
            let role = item.split([' ', ':', '[']).next()?;
            if !is_interactive(role) {
                return None;
            }
            let (_, after) = item.split_once("[ref=")?;
            let (reference, _) = after.split_once(']')?;
            Some(reference.to_owned())
        })
        .collect()
}

/// Every `Interactive elements here: N` figure in `text`, in order.
pub fn page_counts(text: &str) -> Vec<u32> {
    text.match_indices(COUNT_LINE)
        .filter_map(|(at, _)| {
            let digits: String = text[at + COUNT_LINE.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tabwire_roles_come_from_the_first_word() {
        assert_eq!(tabwire_role(r#"button "Open 1500""#), Some("button"));
        assert_eq!(tabwire_role(r#"heading[2] "Orders""#), Some("heading"));
        assert_eq!(
            tabwire_role(r#"checkbox "Pick 1" [checked]"#),
            Some("checkbox")
        );
        assert_eq!(tabwire_role(r#""Interactive elements here: 3""#), None);
        assert_eq!(tabwire_role(""), None);
    }

    #[test]
    fn playwright_refs_with_interactive_roles_only() {
        let snapshot = r#"
- generic [active] [ref=e1]:
  - textbox "Coupon" [ref=e5]
  - button "Apply coupon" [ref=e6]
  - paragraph [ref=e7]: No coupon
  - iframe [ref=e9]:
    - generic [ref=f1e1]:
      - text: Email
      - textbox "Email" [ref=f1e3]
      - link "Item 300" [ref=e3943] [cursor=pointer]:
        - /url: /item/300
      - combobox [ref=e3940]:
        - option "Small" [selected]
      - button "Send" [ref=f1e5]
      - paragraph [ref=f1e7]: "Interactive elements here: 3"
"#;
        let refs: Vec<_> = playwright_interactive_refs(snapshot).into_iter().collect();
        assert_eq!(refs, ["e3940", "e3943", "e5", "e6", "f1e3", "f1e5"]);
    }

    #[test]
    fn count_lines_are_read_wherever_they_appear() {
        let text = r#"- paragraph [ref=f1e7]: "Interactive elements here: 3"
@e9 "Interactive elements here: 2000"
Interactive elements here: none"#;
        assert_eq!(page_counts(text), [3, 2000]);
    }
}
