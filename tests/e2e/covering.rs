//! A frame the policy denies, in every output that carries a frame's pixels or text (issue 23
//! §1), with the real hub, the real extension in Chromium and a real MCP client: screenshots
//! painted over where denied frames are drawn (inside an allowed frame, in a closed shadow root,
//! below the fold, in a full page, in an element's box, with an observation, under either
//! owner's rule), and reads that must leave such a frame out — content, snapshots and action
//! observations that inline frames, the selected text, element state through refs taken
//! before the rule, frames an allowed page shows inside a denied one, a frame's markup under its
//! own origin's sensitive rule — and captured requests and console lines of a denied frame that
//! carry only allowed URLs.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};
use tabwire_e2e::image::{Pixmap, decode_base64};
use tabwire_e2e::scenario::{CONNECT_LIMIT, loaded_tab, ref_of};
use tabwire_e2e::{Reply, eventually};

use crate::policy::{Setup, localhost, origin};

/// What tabwire paints over a frame (extension-wasm's `paint::FILL`).
pub(crate) const FILL: [u8; 3] = [0x80, 0x80, 0x80];
/// The secret page's background (secret.html).
pub(crate) const RED: [u8; 3] = [220, 0, 0];
/// The page's own colours (cover.html, cover-outer.html).
const GREEN: [u8; 3] = [0, 160, 0];
const YELLOW: [u8; 3] = [240, 240, 0];
const BLUE: [u8; 3] = [0, 0, 200];
pub(crate) const WHITE: [u8; 3] = [255, 255, 255];

/// Where cover.html draws its denied frames, in CSS pixels of the page: `(x, y, width,
/// height)`.
const DENIED: (u32, u32, u32, u32) = (100, 120, 300, 200);
const NESTED: (u32, u32, u32, u32) = (550, 160, 200, 150);
const IN_SHADOW: (u32, u32, u32, u32) = (950, 450, 250, 150);
const BELOW: (u32, u32, u32, u32) = (100, 1500, 300, 200);

/// A box without the pixel tabwire may add on each side and the one antialiasing may blur.
fn inner((x, y, width, height): (u32, u32, u32, u32)) -> (u32, u32, u32, u32) {
    (x + 3, y + 3, width - 6, height - 6)
}

/// The box moved up by `dy` (scrolled) or into an element's image at (`dx`, `dy`).
fn moved((x, y, width, height): (u32, u32, u32, u32), dx: u32, dy: u32) -> (u32, u32, u32, u32) {
    (x - dx, y - dy, width, height)
}

pub(crate) fn png_of(reply: &Reply) -> Pixmap {
    assert!(!reply.is_error, "{}", reply.text);
    assert_eq!(reply.image().mime_type, "image/png", "{}", reply.text);
    Pixmap::decode_png(&decode_base64(&reply.image().data))
}

#[track_caller]
pub(crate) fn assert_covered(png: &Pixmap, what: &str, rect: (u32, u32, u32, u32)) {
    let other = png.other_than(inner(rect), FILL);
    assert!(
        other.is_empty(),
        "{what}: {} pixels of {rect:?} are not the fill, e.g. {:?}",
        other.len(),
        &other[..other.len().min(5)]
    );
}

/// The frame IDs a screenshot says it painted over; each has one of `origins`.
pub(crate) fn covered(reply: &Reply, origins: &[&str]) -> BTreeSet<u64> {
    let frames = reply.data()["coveredFrames"]
        .as_array()
        .unwrap_or_else(|| panic!("no coveredFrames: {}", reply.structured));
    frames
        .iter()
        .map(|frame| {
            assert!(
                origins.iter().any(|o| frame["origin"] == *o),
                "{frame} not of {origins:?}"
            );
            frame["frameId"].as_u64().unwrap()
        })
        .collect()
}

/// `list_frames`: every frame's ID, URL and whether it is blocked; `None` when the call failed
/// (a tab between documents can answer that it has no frame 0 for a moment: issue 23 §5).
async fn frames(setup: &Setup, tab: u64) -> Option<Vec<(u64, String, bool)>> {
    let reply = setup.call("list_frames", json!({ "tabId": tab })).await;
    if reply.is_error {
        return None;
    }
    let listed = reply.data()["frames"].as_array()?;
    Some(
        listed
            .iter()
            .map(|f| {
                (
                    f["frameId"].as_u64().unwrap(),
                    f["url"].as_str().unwrap_or_default().to_owned(),
                    f["blocked"] == true,
                )
            })
            .collect(),
    )
}

/// Waits until `list_frames` lists `blocked` blocked frames (the policy reached the browser).
pub(crate) async fn blocked_frames(setup: &Setup, tab: u64, blocked: usize) -> BTreeSet<u64> {
    eventually(
        &format!("{blocked} blocked frames"),
        Duration::from_secs(20),
        || async {
            let listed = frames(setup, tab).await?;
            let ids: BTreeSet<u64> = listed.iter().filter(|f| f.2).map(|f| f.0).collect();
            (ids.len() == blocked).then_some(ids)
        },
    )
    .await
}

/// The operator's rule that denies the other loopback name (the secret pages' origin).
pub(crate) fn deny(origin: &str) -> String {
    format!("[[rules]]\norigin = \"{origin}\"\naccess = \"deny\"\n")
}

pub(crate) async fn screenshot(setup: &Setup, tab: u64, args: Value) -> Reply {
    let mut args = args;
    args["tabId"] = json!(tab);
    args["format"] = json!("png");
    args["maxWidth"] = json!(2000);
    setup.call("take_screenshot", args).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_screenshot_paints_over_every_denied_frame_and_shows_the_rest_of_the_page() {
    // Nothing is denied at first, so the test sees the secret drawn where it looks.
    let setup = Setup::start("cover.html", |_, _| String::new()).await;
    let tab = loaded_tab(&setup.client, json!({}), &setup.fixtures.url("cover.html")).await;
    let denied = localhost(&setup.fixtures);
    // The frames named: the denied origin's. The page of the allowed origin the top secret page
    // frames is painted over with it, never named: which sites a denied page frames is its own.
    let painted = [denied.as_str()];
    let framed = eventually("the framed page", CONNECT_LIMIT, || async {
        let listed = frames(&setup, tab).await?;
        listed
            .iter()
            .find(|f| f.1.contains("secret-child.html"))
            .map(|f| f.0)
    })
    .await;
    eventually("the secret pages to be drawn", CONNECT_LIMIT, || async {
        let shot = screenshot(&setup, tab, json!({})).await;
        let png = png_of(&shot);
        assert!(shot.data().get("coveredFrames").is_none(), "{}", shot.text);
        // Clear of the words of each secret frame on screen.
        [(130, 250), (700, 260), (1150, 530)]
            .iter()
            .all(|&(x, y)| png.at(x, y) == RED)
            .then_some(())
    })
    .await;

    // The operator denies the secret pages' origin.
    std::fs::write(&setup.policy, deny(&denied)).unwrap();
    // The top one, its child, the nested one, the one in the shadow root, the one below.
    let blocked = blocked_frames(&setup, tab, 5).await;

    // The viewport: each denied frame's box is the fill, the page around them is the page's.
    let shot = screenshot(&setup, tab, json!({})).await;
    let png = png_of(&shot);
    assert_covered(&png, "the denied frame", DENIED);
    assert_covered(&png, "the denied frame inside an allowed frame", NESTED);
    assert_covered(&png, "the denied frame in a closed shadow root", IN_SHADOW);
    for (what, (x, y), colour) in [
        ("the page's green mark", (50, 50), GREEN),
        ("the card left of the frame", (90, 220), YELLOW),
        ("the card under the frame", (250, 332), YELLOW),
        // The allowed frame that holds the nested denied one sits in the tab's page beside
        // the top denied frame: its frame element is hidden for the capture with every other
        // of that document, so the page's background shows where it is.
        (
            "the allowed frame left of its denied one",
            (520, 300),
            WHITE,
        ),
        ("the allowed frame under its denied one", (650, 400), WHITE),
        ("the page's background", (1100, 640), WHITE),
    ] {
        assert_eq!(png.at(x, y), colour, "{what} at ({x}, {y})");
    }
    // The top one, the nested one, the one in the shadow root.
    let on_screen = covered(&shot, &painted);
    assert_eq!(on_screen.len(), 3, "{}", shot.structured);
    assert!(!on_screen.contains(&framed), "{}", shot.structured);
    assert!(on_screen.is_subset(&blocked), "{on_screen:?} {blocked:?}");
    assert!(shot.text.contains("Painted over"), "{}", shot.text);
    assert!(shot.text.contains(&denied), "{}", shot.text);

    // The full page: the frame below the fold too.
    let full = screenshot(&setup, tab, json!({"fullPage": true})).await;
    let png = png_of(&full);
    assert!(png.height >= 1700, "{}x{}", png.width, png.height);
    for (what, rect) in [("top", DENIED), ("nested", NESTED), ("below", BELOW)] {
        assert_covered(&png, what, rect);
    }
    assert_eq!(covered(&full, &painted).len(), 4, "{}", full.structured);

    // Scrolled down: the viewport shows the frame below the fold, and names only it.
    setup
        .browser
        .evaluate_in("cover.html", "window.scrollTo(0, 1400); window.scrollY")
        .await;
    let scrolled = screenshot(&setup, tab, json!({})).await;
    let png = png_of(&scrolled);
    assert_covered(&png, "below, scrolled into view", moved(BELOW, 0, 1400));
    let below = covered(&scrolled, &painted);
    assert_eq!(below.len(), 1, "{}", scrolled.structured);
    assert!(below.is_disjoint(&on_screen));
    setup
        .browser
        .evaluate_in("cover.html", "window.scrollTo(0, 0); window.scrollY")
        .await;

    // One element's box (the card around the denied frame).
    let card = screenshot(&setup, tab, json!({"selector": "#card"})).await;
    let png = png_of(&card);
    assert_eq!((png.width, png.height), (340, 240));
    assert_covered(&png, "the frame in the card", moved(DENIED, 80, 100));
    assert_eq!(png.at(5, 5), YELLOW);
    assert_eq!(
        covered(&card, &painted).len(),
        1,
        "the frame, not the page it frames"
    );

    // With an observation, in the default format: covered and named alike, and the
    // observation shows nothing of the frames either.
    let both = setup
        .call("take_screenshot", json!({"withSnapshot": true}))
        .await;
    assert!(!both.is_error, "{}", both.text);
    assert_eq!(both.image().mime_type, "image/webp");
    assert_eq!(covered(&both, &painted), on_screen);
    assert!(both.text.contains("Refresh"), "{}", both.text);
    assert!(!both.text.contains("SECRET"), "{}", both.text);

    // The browser owner's rule covers as the operator's does: the operator's is lifted, the
    // owner denies the origin in the popup.
    std::fs::write(&setup.policy, "# nothing denied\n").unwrap();
    blocked_frames(&setup, tab, 0).await;
    setup.owner_rules(&format!("{denied} deny")).await;
    blocked_frames(&setup, tab, 5).await;
    let owners = screenshot(&setup, tab, json!({})).await;
    assert_covered(&png_of(&owners), "under the owner's rule", DENIED);
    assert_eq!(covered(&owners, &painted), on_screen);

    // The frame elements hidden for the capture are shown again once it is done (while it
    // runs, the page's own frame elements read hidden).
    eventually("the page's frames shown again", CONNECT_LIMIT, || async {
        let hidden = setup
            .browser
            .evaluate_in(
                "cover.html",
                "[...document.querySelectorAll('iframe')]\
                 .filter((f) => getComputedStyle(f).visibility !== 'visible').length",
            )
            .await;
        (hidden == json!(0)).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_frame_inside_a_frame_without_an_origin_is_covered() {
    // A data: frame has an opaque origin; the policy judges it by the default (readable here),
    // and the denied frame it holds is placed through it.
    let setup = Setup::start("cover-opaque.html", |here, _| {
        deny(&here.replace("127.0.0.1", "localhost"))
    })
    .await;
    let denied = localhost(&setup.fixtures);
    let tab = loaded_tab(
        &setup.client,
        json!({}),
        &setup.fixtures.url("cover-opaque.html"),
    )
    .await;
    let blocked = blocked_frames(&setup, tab, 1).await;
    let shot = screenshot(&setup, tab, json!({})).await;
    let png = png_of(&shot);
    assert_covered(&png, "the denied frame", (150, 150, 200, 150));
    assert_eq!(png.at(120, 120), BLUE, "the data: frame around it");
    assert_eq!(png.at(90, 150), WHITE);
    assert_eq!(covered(&shot, &[denied.as_str()]), blocked);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_leave_a_denied_frame_out_and_what_it_frames_with_it() {
    let setup = Setup::start("cover.html", |_, _| String::new()).await;
    let tab = loaded_tab(&setup.client, json!({}), &setup.fixtures.url("cover.html")).await;
    let denied = localhost(&setup.fixtures);
    // The frames, read while nothing is denied: the secret page at the top, and the page of
    // the allowed origin it frames.
    let (secret, child) = eventually("the frames to load", CONNECT_LIMIT, || async {
        let listed = frames(&setup, tab).await?;
        let find = |needle: &str| listed.iter().find(|f| f.1.contains(needle)).map(|f| f.0);
        Some((find("secret.html?at=top")?, find("secret-child.html")?))
    })
    .await;
    // Before the rule: inlined into snapshots, readable by frameId, and selected.
    let snapshot = eventually("the frames inlined", CONNECT_LIMIT, || async {
        let snapshot = setup
            .call("get_page_snapshot", json!({ "tabId": tab }))
            .await;
        (snapshot.text.contains("SECRET") && snapshot.text.contains("Card number"))
            .then_some(snapshot)
    })
    .await;
    let pay = ref_of(&snapshot, "button \"Pay\"");
    let pin = ref_of(&snapshot, "PIN");
    let selected = setup
        .call("get_selected_text", json!({ "tabId": tab }))
        .await;
    let was_selected = selected.data()["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        was_selected.contains("SECRET") || was_selected.contains("Card number"),
        "{}",
        selected.text
    );

    std::fs::write(&setup.policy, deny(&denied)).unwrap();
    blocked_frames(&setup, tab, 5).await;
    let listed = eventually("the frames", CONNECT_LIMIT, || frames(&setup, tab)).await;
    let listed_child = listed.iter().find(|f| f.0 == child).unwrap();
    assert!(
        listed_child.2 && listed_child.1.is_empty(),
        "an allowed page inside a denied frame is listed as blocked: {listed_child:?}"
    );

    // Nothing of the secret page or of what it frames, in any read of the page.
    let secret_words = [
        "SECRET",
        "4242",
        "Card number",
        "5555",
        "hunter2",
        "\"Pay\"",
    ];
    let clean = |what: &str, reply: &Reply| {
        assert!(!reply.is_error, "{what}: {}", reply.text);
        let all = format!("{}{}", reply.text, reply.structured);
        for word in secret_words {
            assert!(!all.contains(word), "{what} shows {word:?}: {}", reply.text);
        }
    };
    clean(
        "the snapshot",
        &setup
            .call("get_page_snapshot", json!({ "tabId": tab }))
            .await,
    );
    clean(
        "the text",
        &setup
            .call("get_page_content", json!({ "tabId": tab }))
            .await,
    );
    clean(
        "the markup",
        &setup
            .call("get_page_content", json!({"tabId": tab, "format": "html"}))
            .await,
    );
    clean(
        "the page as an observation",
        &setup
            .call("get_page_content", json!({"tabId": tab, "format": "aria"}))
            .await,
    );
    clean(
        "the selection",
        &setup
            .call("get_selected_text", json!({ "tabId": tab }))
            .await,
    );
    let outer = listed
        .iter()
        .find(|f| f.1.contains("cover-outer.html"))
        .unwrap()
        .0;
    clean(
        "the allowed frame holding a denied one",
        &setup
            .call("get_page_snapshot", json!({"tabId": tab, "frameId": outer}))
            .await,
    );
    let clicked = setup
        .call(
            "click_element",
            json!({"tabId": tab, "selector": "#refresh"}),
        )
        .await;
    clean("an action's observation", &clicked);
    assert!(clicked.text.contains("Refresh"), "{}", clicked.text);

    // Named directly, by frameId or by refs taken before the rule: refused, the allowed page
    // inside the denied frame too.
    for (what, tool, args) in [
        (
            "snapshot",
            "get_page_snapshot",
            json!({"tabId": tab, "frameId": secret}),
        ),
        (
            "content",
            "get_page_content",
            json!({"tabId": tab, "frameId": secret}),
        ),
        (
            "snapshot of the page it frames",
            "get_page_snapshot",
            json!({"tabId": tab, "frameId": child}),
        ),
        (
            "content of the page it frames",
            "get_page_content",
            json!({"tabId": tab, "frameId": child}),
        ),
        (
            "state through a ref",
            "read_element_state",
            json!({"tabId": tab, "selector": pin}),
        ),
        (
            "state of the framed page's button",
            "read_element_state",
            json!({"tabId": tab, "selector": pay}),
        ),
    ] {
        let reply = setup.call(tool, args).await;
        assert_eq!(
            reply.error_code(),
            "ORIGIN_BLOCKED",
            "{what}: {}",
            reply.text
        );
        assert!(
            reply.text.contains(&denied),
            "{what} names the rule: {}",
            reply.text
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frames_markup_is_a_sensitive_read_of_the_frames_own_origin() {
    // The tab's page allows sensitive reads; the frame's origin does not.
    let setup = Setup::start("frames.html", |here, _| {
        let framed = here.replace("127.0.0.1", "localhost");
        format!("[[rules]]\norigin = \"{framed}\"\naccess = \"read\"\nsensitive = \"deny\"\n")
    })
    .await;
    let tab = loaded_tab(&setup.client, json!({}), &setup.fixtures.url("frames.html")).await;
    let cross = eventually("the cross-origin frame", CONNECT_LIMIT, || async {
        let listed = frames(&setup, tab).await?;
        listed
            .iter()
            .find(|f| f.1.contains("frame=cross"))
            .map(|f| f.0)
    })
    .await;
    let text = setup
        .call("get_page_content", json!({"tabId": tab, "frameId": cross}))
        .await;
    assert!(text.text.contains("Inside a frame"), "{}", text.text);
    let html = setup
        .call(
            "get_page_content",
            json!({"tabId": tab, "frameId": cross, "format": "html"}),
        )
        .await;
    assert_eq!(html.error_code(), "ORIGIN_BLOCKED", "{}", html.text);
    assert!(html.text.contains("sensitive"), "{}", html.text);
    let top = setup
        .call("get_page_content", json!({"tabId": tab, "format": "html"}))
        .await;
    assert!(!top.is_error, "{}", top.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_keeps_nothing_a_denied_frame_does_even_with_allowed_urls() {
    let setup = Setup::start("blank.html", |_, _| String::new()).await;
    let denied = origin(&setup.other);
    let page = setup
        .fixtures
        .url(&format!("cover-capture.html?deny={}", urlencode(&denied)));
    let loaded = setup.call("navigate_to", json!({"url": page})).await;
    assert!(!loaded.is_error, "{}", loaded.text);
    let tab = loaded.data()["tabId"]
        .as_u64()
        .or_else(|| loaded.data()["tab"]["tabId"].as_u64())
        .unwrap_or_else(|| panic!("a tab ID: {}", loaded.structured));
    let records = |tool: &'static str| {
        let setup = &setup;
        async move {
            let reply = setup
                .call(
                    tool,
                    json!({"tabId": tab, "limit": 200, "clearAfter": true}),
                )
                .await;
            assert!(!reply.is_error, "{tool}: {}", reply.text);
            format!("{}\n{}", reply.text, reply.structured)
        }
    };
    let capture = || async {
        for tool in ["start_network_capture", "start_console_capture"] {
            let started = setup.call(tool, json!({"tabId": tab})).await;
            assert!(!started.is_error, "{}", started.text);
        }
        let reloaded = setup.call("reload_tab", json!({"tabId": tab})).await;
        assert!(!reloaded.is_error, "{}", reloaded.text);
    };
    // The marks of what the denied page does (secret-capture.html): its inline line, its
    // request to the allowed origin, the line of the allowed origin's script it runs, its
    // srcdoc frame's request and line, and a line from code made of a string.
    let marks = ["4200", "4201", "4202", "4203", "4204"];

    // Nothing denied: capture sees all of it (so the test can see it go).
    capture().await;
    let seen = eventually(
        "the denied page's records",
        Duration::from_secs(20),
        || async {
            let mut all = String::new();
            for tool in ["get_captured_requests", "get_console_logs"] {
                all.push_str(&records(tool).await);
            }
            marks.iter().all(|m| all.contains(m)).then_some(all)
        },
    )
    .await;
    assert!(seen.contains("1111"));

    std::fs::write(&setup.policy, deny(&denied)).unwrap();
    eventually(
        "the rule to reach the browser",
        Duration::from_secs(20),
        || async {
            let listed = setup.call("list_frames", json!({"tabId": tab})).await;
            listed.text.contains("blocked").then_some(())
        },
    )
    .await;
    capture().await;
    // The page's own line and request show the capture works; nothing of the denied page's
    // comes, however long one waits.
    let all = std::cell::RefCell::new(String::new());
    eventually(
        "the page's own records",
        Duration::from_secs(20),
        || async {
            for tool in ["get_captured_requests", "get_console_logs"] {
                let got = records(tool).await;
                all.borrow_mut().push_str(&got);
            }
            let all = all.borrow();
            (all.contains("top line 1111") && all.contains("json?n=1111")).then_some(())
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    for tool in ["get_captured_requests", "get_console_logs"] {
        let got = records(tool).await;
        all.borrow_mut().push_str(&got);
    }
    let all = all.into_inner();
    for mark in marks {
        assert!(!all.contains(mark), "{mark} was captured:\n{all}");
    }
}

/// Percent-encodes a URL for a query parameter.
fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
