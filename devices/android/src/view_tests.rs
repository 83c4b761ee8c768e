//! The kit's view of real Android screens: rendering, windows, queries and `since` deltas of
//! observations built from `uiautomator` dumps.

use crate::hierarchy::parse_dump;
use crate::screen::screen_nodes;
use crate::screen::tests::{PHONE, login_screen};
use tabwire_device_kit::refs::RefTable;
use tabwire_device_kit::view::*;
use tabwire_protocol::devices::DeviceView;

fn screen(refs: &mut RefTable, xml: &str) -> Screen {
    let h = parse_dump(xml).unwrap();
    let nodes = screen_nodes(&h, PHONE);
    Screen {
        package: "com.example.shop".into(),
        rotation: 0,
        keyboard_shown: false,
        refs: refs.assign(nodes.iter().map(|n| &n.identity)),
        nodes,
    }
}

fn view(max_nodes: u32, since: Option<u64>) -> DeviceView {
    DeviceView {
        query: None,
        max_nodes,
        max_chars: 10_000,
        offset: 0,
        since,
    }
}

#[test]
fn a_screen_renders_as_lines_through_the_shared_renderer() {
    let mut refs = RefTable::default();
    let s = screen(&mut refs, &login_screen("hunter2", ""));
    let obs = Views::default().observe(&s, &view(100, None), "s1", false, None);
    let lines: Vec<String> = obs
        .nodes
        .iter()
        .map(|n| format!("{} {}", n.node_ref.unwrap(), n.text))
        .collect();
    assert_eq!(
        lines,
        [
            r#"@d1 "Welcome back""#,
            r#"@d2 textbox "Email""#,
            r#"@d3 textbox "Password" = "••••""#,
            r#"@d4 checkbox "Remember me" [checked]"#,
            r#"@d5 switch "Dark mode" [disabled]"#,
            r#"@d6 button "LOG IN""#,
            r##"@d7 button "#settings""##,
            r#"@d8 img "Shop logo""#,
            r##"@d9 list "#offers" [scrollable]"##,
            r#"@d10 "Offer""#,
            r#"@d11 "Offer""#,
        ]
    );
    assert!(obs.nodes[9].ambiguous && obs.nodes[10].ambiguous);
    assert!(!obs.nodes[0].ambiguous);
    assert_eq!(obs.version, 1);
    assert_eq!(obs.total_nodes, 11);
    assert!(!obs.truncated);
}

#[test]
fn budgets_queries_paging_and_deltas_work_as_for_browsers() {
    let mut refs = RefTable::default();
    let mut views = Views::default();
    let first = screen(&mut refs, &login_screen("", ""));
    let page = views.observe(&first, &view(3, None), "s1", false, None);
    assert_eq!(page.nodes.len(), 3);
    assert_eq!(page.next_offset, Some(3));
    assert!(page.truncated);

    let mut query = view(100, None);
    query.query = Some("offer".into());
    let found = views.observe(&first, &query, "s1", false, None);
    assert_eq!(found.nodes.len(), 3, "the list and both offers");

    // Typing changes one line: the delta since the first page names only it.
    let typed = screen(&mut refs, &login_screen("", "ann@example.com"));
    let delta = views.observe(&typed, &view(3, Some(page.version)), "s1", false, None);
    let d = delta.delta.expect("a delta");
    assert_eq!(d.since, page.version);
    assert_eq!(d.changed.len(), 1);
    assert_eq!(d.changed[0].text, r#"textbox "Email" = "ann@example.com""#);
    assert!(d.removed.is_empty() && d.order.is_none());
    assert!(delta.nodes.is_empty());

    // After an action, without since: against the latest observation of the same view.
    let again = views.observe(&typed, &view(3, None), "s1", true, None);
    assert!(again.delta.as_ref().unwrap().changed.is_empty());
    // A since that is no baseline of this view: a full window, reset.
    let reset = views.observe(&typed, &view(5, Some(page.version)), "s1", false, None);
    assert!(reset.reset && reset.delta.is_none());
    assert_eq!(reset.nodes.len(), 5);
    // An action with no earlier observation of its view gets a full window.
    let fresh = views.observe(&typed, &view(7, None), "s1", true, None);
    assert!(fresh.delta.is_none() && !fresh.reset);
    assert_eq!(fresh.nodes.len(), 7);
}

#[test]
fn each_session_gets_the_changes_since_its_own_view() {
    let mut refs = RefTable::default();
    let mut views = Views::default();
    let empty = screen(&mut refs, &login_screen("", ""));
    let typed = screen(&mut refs, &login_screen("", "ann@example.com"));
    let alpha = views.observe(&empty, &view(30, None), "alpha", false, None);
    // The screen changes; then another session looks.
    let beta = views.observe(&typed, &view(30, None), "beta", false, None);
    assert!(beta.delta.is_none());
    // Alpha's action: its delta is against alpha's view, so the change is in it.
    let after = views.observe(&typed, &view(30, None), "alpha", true, None);
    let d = after.delta.expect("a delta against alpha's view");
    assert_eq!(d.since, alpha.version);
    assert_eq!(d.changed.len(), 1, "{d:?}");
    assert_eq!(d.changed[0].text, r#"textbox "Email" = "ann@example.com""#);
    // A version another session was shown is no baseline of this one's.
    let reset = views.observe(&typed, &view(30, Some(alpha.version)), "beta", false, None);
    assert!(reset.reset && reset.delta.is_none());
    // A session that ended has nothing left to compare with.
    views.forget("alpha");
    let fresh = views.observe(&typed, &view(30, Some(after.version)), "alpha", false, None);
    assert!(fresh.reset);
}
