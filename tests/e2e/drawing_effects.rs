//! Drawing effects that move a denied frame's pixels out of the box it is measured in (issue 23
//! §1): a filter (an SVG feOffset), a reflection, SVG foreignObject, a backdrop filter over it.
//! In the tab's own page the screenshot is refused, naming the effect; inside an allowed frame,
//! that frame is painted over whole (the effect cannot draw outside it).

use serde_json::json;
use tabwire_e2e::eventually;
use tabwire_e2e::scenario::CONNECT_LIMIT;

use crate::covering::{RED, WHITE, assert_covered, blocked_frames, deny, png_of, screenshot};
use crate::policy::{Setup, localhost};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_effect_that_draws_a_denied_frame_elsewhere_is_never_shown() {
    // Nothing denied at first: the test sees SVG draw the secret page 600 px right of the box
    // its frame element is measured in. (Chromium here drew a cross-site frame under a
    // reference filter or a reflection unmoved; they are refused all the same.)
    let setup = Setup::start("cover-effects.html?effect=svg", |_, _| String::new()).await;
    let moved = setup
        .open(&setup.fixtures.url("cover-effects.html?effect=svg"))
        .await;
    eventually("the frame in SVG to be drawn", CONNECT_LIMIT, || async {
        let png = png_of(&screenshot(&setup, moved, json!({})).await);
        (png.at(950, 280) == RED).then_some(())
    })
    .await;

    std::fs::write(&setup.policy, deny(&localhost(&setup.fixtures))).unwrap();
    blocked_frames(&setup, moved, 1).await;
    for (effect, named) in [
        ("filter", "filter"),
        ("reflect", "-webkit-box-reflect"),
        ("svg", "SVG foreignObject"),
        ("backdrop", "backdrop-filter"),
    ] {
        let tab = if effect == "svg" {
            moved
        } else {
            setup
                .open(
                    &setup
                        .fixtures
                        .url(&format!("cover-effects.html?effect={effect}")),
                )
                .await
        };
        blocked_frames(&setup, tab, 1).await;
        let reply = screenshot(&setup, tab, json!({})).await;
        assert_eq!(
            reply.error_code(),
            "ORIGIN_BLOCKED",
            "{effect}: {}",
            reply.text
        );
        assert!(reply.text.contains(named), "{effect}: {}", reply.text);
        assert!(reply.images.is_empty(), "{effect}");
        // The full page and an element's box alike.
        let full = screenshot(&setup, tab, json!({"fullPage": true})).await;
        assert_eq!(
            full.error_code(),
            "ORIGIN_BLOCKED",
            "{effect}: {}",
            full.text
        );
    }

    // Inside an allowed frame, the filter moves the denied frame within that frame only: the
    // allowed frame is painted over whole, the page around it shown.
    let nested = setup
        .open(&setup.fixtures.url("cover-effects.html?effect=nested"))
        .await;
    blocked_frames(&setup, nested, 1).await;
    let shot = screenshot(&setup, nested, json!({})).await;
    let png = png_of(&shot);
    assert_covered(
        &png,
        "the allowed frame holding the filtered one",
        (100, 100, 300, 200),
    );
    assert_eq!(png.at(50, 50), WHITE, "the page around it");
    assert_eq!(png.at(450, 150), WHITE, "right of it");
}
