//! One renderer for every peer's observation: pages' and devices' lines, deltas, popups,
//! notes and footers, and the structured data beside them.

use super::*;
use tabwire_protocol::Rect;
use tabwire_protocol::{Delta, DeviceRef, ElementRef, Outside, Settling};

fn page() -> Observation<Page> {
    let of = Page {
        tab_id: 4,
        frame_id: None,
        url: "http://127.0.0.1/login".into(),
        title: "Log in".into(),
        document_id: "D".into(),
    };
    let nodes = vec![
        Node::new(Some(ElementRef::top(1)), "heading[1] \"Welcome\"".into()),
        Node::new(Some(ElementRef::top(2)), "textbox \"Username\"".into()),
    ];
    Observation {
        total_nodes: 5,
        truncated: true,
        omitted_nodes: 3,
        omitted_chars: 61,
        next_offset: Some(2),
        ..Observation::new(of, 3, nodes, None)
    }
}

fn device_node(n: u32, text: &str) -> Node<DeviceRef> {
    Node {
        bounds: Some(Rect {
            left: 0,
            top: 0,
            right: 10,
            bottom: 10,
        }),
        ..Node::new(Some(DeviceRef(n)), text.into())
    }
}

fn screen() -> Observation<Foreground> {
    let of = Foreground {
        package: "com.example.app".into(),
        rotation: 0,
        keyboard_shown: true,
    };
    let nodes = vec![
        device_node(1, "textbox \"Email\""),
        device_node(2, "button \"LOGIN\""),
    ];
    Observation {
        total_nodes: 5,
        truncated: true,
        omitted_nodes: 3,
        omitted_chars: 40,
        next_offset: Some(2),
        settling: Some(Settling {
            dumps: 2,
            settled: true,
        }),
        ..Observation::new(of, 3, nodes, None)
    }
}

#[test]
fn a_page_renders_as_ref_lines_with_a_paging_footer() {
    assert_eq!(
        render_observation(&page(), "Chrome"),
        "tab 4 \"Log in\" http://127.0.0.1/login (version 3)\n\
         @e1 heading[1] \"Welcome\"\n\
         @e2 textbox \"Username\"\n\
         [nodes 1-2 of 5; 3 not shown (61 chars); next: offset=2; or narrow with query/selector]"
    );
    // The subject's fields stand beside the window's in the data, as they always have.
    let data = observation_data(&page());
    assert_eq!(data["tabId"], 4);
    assert_eq!(data["documentId"], "D");
    assert!(data.get("of").is_none(), "{data}");
}

#[test]
fn a_device_renders_as_a_page_does() {
    assert_eq!(
        render_observation(&screen(), "Pixel 7"),
        "device \"Pixel 7\": com.example.app (version 3; keyboard shown; settled)\n\
         @d1 textbox \"Email\"\n\
         @d2 button \"LOGIN\"\n\
         [nodes 1-2 of 5; 3 not shown (40 chars); next: offset=2; or narrow with query]"
    );
    let mut delta = screen();
    delta.nodes.clear();
    delta.of.keyboard_shown = false;
    delta.settling = Some(Settling {
        dumps: 8,
        settled: false,
    });
    delta.delta = Some(Delta {
        since: 2,
        changed: vec![Node {
            ambiguous: true,
            ..device_node(4, "textbox \"Code\"")
        }],
        removed: vec![DeviceRef(2)],
        order: None,
        view_changed: false,
    });
    assert_eq!(
        render_observation(&delta, "Pixel 7"),
        "version 3; not settled: the view was still changing; (ambiguous) refs share their \
         identity with another node: look again before acting on one: changes since version \
         2:\n\
         @d4 textbox \"Code\" (ambiguous)\n\
         removed: @d2"
    );
    let data = observation_data(&delta);
    assert_eq!(data["delta"]["changed"][0]["ref"], "@d4");
    assert_eq!(data["package"], "com.example.app");
    assert_eq!(data["keyboardShown"], false);
    assert_eq!(data["settling"]["settled"], false);
    assert!(
        data.get("nodes").is_none() && data.get("rotation").is_none(),
        "{data}"
    );
}

#[test]
fn a_field_added_to_observations_reaches_both_peers() {
    // `estimated` was a page's alone; on the one type, a device's counts can be estimates too,
    // and both say so the same way.
    let mut estimated = page();
    estimated.estimated = true;
    assert_eq!(
        render_observation(&estimated, "Chrome"),
        "tab 4 \"Log in\" http://127.0.0.1/login (version 3)\n\
         @e1 heading[1] \"Welcome\"\n\
         @e2 textbox \"Username\"\n\
         [nodes 1-2 of about 5; about 3 not shown (about 61 chars); next: offset=2; or narrow with query/selector]"
    );
    assert_eq!(observation_data(&estimated)["estimated"], true);
    assert!(observation_data(&page()).get("estimated").is_none());
    let mut device = screen();
    device.estimated = true;
    assert!(
        render_observation(&device, "Pixel 7")
            .as_str()
            .ends_with("[nodes 1-2 of about 5; about 3 not shown (about 40 chars); next: offset=2; or narrow with query]")
    );
}

#[test]
fn deltas_render_only_what_changed() {
    // The window stays truncated (5 nodes, 2 shown); nothing in it changed.
    let mut empty = page();
    empty.nodes.clear();
    empty.delta = Some(Delta {
        since: 2,
        changed: vec![],
        removed: vec![],
        order: None,
        view_changed: true,
    });
    assert_eq!(
        render_observation(&empty, "Chrome"),
        "version 3: no changes since version 2 [the view now has 5 nodes and is truncated, next: offset=2]"
    );
    assert_eq!(
        observation_data(&empty).to_string(),
        r#"{"delta":{"changed":[],"removed":[],"since":2,"viewChanged":true},"nextOffset":2,"tabId":4,"totalNodes":5,"truncated":true,"version":3}"#
    );
    let mut whole = empty.clone();
    if let Some(delta) = whole.delta.as_mut() {
        delta.view_changed = false;
    }
    assert_eq!(
        render_observation(&whole, "Chrome"),
        "version 3: no changes since version 2"
    );
    assert_eq!(
        observation_data(&whole).to_string(),
        r#"{"delta":{"changed":[],"removed":[],"since":2},"tabId":4,"version":3}"#
    );

    // A popup opened below the window: the delta says so, with its lines, indented.
    let mut popup = whole.clone();
    popup.outside = vec![
        Outside {
            note: "listbox \"States\" opened outside this view (2 lines inside)".into(),
            nodes: vec![
                Node::new(Some(ElementRef::top(9)), "listbox \"States\"".into()),
                Node {
                    depth: 1,
                    ..Node::new(Some(ElementRef::top(10)), "option \"Texas\"".into())
                },
            ],
        },
        Outside {
            note: "menu \"File\" closed".into(),
            nodes: vec![],
        },
    ];
    assert_eq!(
        render_observation(&popup, "Chrome"),
        "version 3: no changes in this view since version 2\n\
         listbox \"States\" opened outside this view (2 lines inside):\n\
         @e9 listbox \"States\"\n  @e10 option \"Texas\"\nmenu \"File\" closed"
    );
    assert!(observation_data(&popup)["outside"][0]["nodes"][1]["depth"] == 1);

    let mut changed = empty.clone();
    changed.delta = Some(Delta {
        since: 2,
        changed: vec![Node::new(
            Some(ElementRef::top(7)),
            "button \"Save\"".into(),
        )],
        removed: vec![ElementRef::top(5), ElementRef::top(6)],
        order: Some(vec![ElementRef::top(7), ElementRef::top(1)]),
        view_changed: true,
    });
    assert_eq!(
        render_observation(&changed, "Chrome"),
        "version 3: changes since version 2 [the view now has 5 nodes and is truncated, next: offset=2]:\n@e7 button \"Save\"\nremoved: @e5 @e6\norder: @e7 @e1"
    );
    let mut framed = changed.clone();
    framed.of.frame_id = Some(9);
    assert!(
        render_observation(&framed, "Chrome")
            .as_str()
            .starts_with("frame 9 version 3: changes")
    );
    assert_eq!(observation_data(&framed)["frameId"], 9);
}

#[test]
fn frames_are_named_in_the_header() {
    let mut framed = page();
    framed.of.frame_id = Some(9);
    framed.truncated = false;
    assert!(
        render_observation(&framed, "Chrome")
            .as_str()
            .starts_with("tab 4 frame 9 \"Log in\"")
    );
}

#[test]
fn an_actions_observation_leaves_out_what_the_action_says_and_the_defaults() {
    let mut whole = page();
    whole.truncated = false;
    whole.omitted_nodes = 0;
    whole.omitted_chars = 0;
    whole.next_offset = None;
    whole.total_nodes = 2;
    let data = action_observation_data(&whole);
    for gone in [
        "tabId",
        "documentId",
        "offset",
        "omittedNodes",
        "omittedChars",
        "truncated",
        "totalNodes",
    ] {
        assert!(data.get(gone).is_none(), "{gone} in {data}");
    }
    assert_eq!(data["url"], "http://127.0.0.1/login");
    // A device's action data names its app beside the observation, which keeps its own.
    let device = action_observation_data(&screen());
    assert_eq!(device["package"], "com.example.app");
    assert_eq!(device["truncated"], true);
    assert!(device.get("offset").is_none(), "{device}");
}

#[test]
fn device_text_is_fenced_and_the_hubs_words_are_not() {
    let fenced = render_observation(&screen(), "Pixel 7").fenced();
    let lines: Vec<&str> = fenced.lines().collect();
    assert!(lines[0].starts_with(super::super::fence::MARK), "{fenced}");
    assert!(lines.last().unwrap().starts_with("[nodes 1-2"), "{fenced}");
}
