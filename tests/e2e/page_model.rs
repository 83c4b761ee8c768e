//! The page model kept between calls (js/collector/25-model.js): every way the docs say a
//! change is caught, made by the page's own script between snapshots, shows in the next
//! snapshot — and, since the tests run with the check mode on (`checkPageModel`), every one of
//! those snapshots (and every other snapshot of the suite) also equalled a fresh walk. A change
//! the docs name as unseen is caught by the check mode, which proves the check is live.
//! Deltas name what changed outside their window.

use serde_json::json;
use tabwire_e2e::Reply;
use tabwire_e2e::browser::checks_page_model;
use tabwire_e2e::scenario::{OneBrowser, ref_of};

/// Runs `script` in the page, then takes a whole-document snapshot, which must succeed.
async fn change(setup: &OneBrowser, script: &str) -> Reply {
    setup.evaluate("model.html", script).await;
    let snapshot = setup.snapshot(json!({})).await;
    assert!(!snapshot.is_error, "after `{script}`: {}", snapshot.text);
    snapshot
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_follows_every_change_the_docs_name() {
    assert!(
        checks_page_model(),
        "the end-to-end tests run with the page model's check mode on"
    );
    let setup = OneBrowser::on("Model", "model.html").await;
    let first = setup.snapshot(json!({})).await;
    assert!(first.text.contains("\"Status one\""), "{}", first.text);
    assert!(!first.text.contains("Panel action"), "{}", first.text);

    // Text.
    let text = change(
        &setup,
        "document.getElementById('status').textContent = 'Status two'",
    )
    .await;
    assert!(text.text.contains("\"Status two\""), "{}", text.text);
    // An attribute (a name).
    let attribute = change(
        &setup,
        "document.getElementById('link').setAttribute('aria-label', 'Aria name')",
    )
    .await;
    assert!(
        attribute.text.contains("link \"Aria name\""),
        "{}",
        attribute.text
    );
    // A class that shows, and one that hides.
    let shown = change(
        &setup,
        "document.getElementById('panel').classList.remove('hidden')",
    )
    .await;
    assert!(
        shown.text.contains("button \"Panel action\""),
        "{}",
        shown.text
    );
    let hidden = change(
        &setup,
        "document.getElementById('item-5').classList.add('hidden')",
    )
    .await;
    assert!(!hidden.text.contains("Item 5\""), "{}", hidden.text);
    // Subtrees inserted and removed.
    let inserted = change(
        &setup,
        "document.getElementById('items').insertAdjacentHTML('afterbegin', '<li><a href=\"#x\">Inserted link</a></li>')",
    )
    .await;
    assert!(
        inserted.text.contains("link \"Inserted link\""),
        "{}",
        inserted.text
    );
    let removed = change(&setup, "document.getElementById('item-2').remove()").await;
    assert!(!removed.text.contains("Item 2\""), "{}", removed.text);
    // A shadow root attached later (no mutation record says so: the stamp does).
    let shadow = change(
        &setup,
        "document.getElementById('host').attachShadow({mode: 'open'}).innerHTML = '<button>Shadow late</button>'",
    )
    .await;
    assert!(
        shadow.text.contains("button \"Shadow late\""),
        "{}",
        shadow.text
    );
    // Inside that shadow root, later.
    let inside = change(
        &setup,
        "document.getElementById('host').shadowRoot.querySelector('button').textContent = 'Shadow renamed'",
    )
    .await;
    assert!(
        inside.text.contains("button \"Shadow renamed\""),
        "{}",
        inside.text
    );
    // A frame added.
    let frame = change(
        &setup,
        "document.getElementById('frames').innerHTML = '<iframe title=\"Late frame\" srcdoc=\"<button>In frame</button>\"></iframe>'",
    )
    .await;
    assert!(
        frame.text.contains("iframe \"Late frame\""),
        "{}",
        frame.text
    );
    // A state rule (:focus-within) shows a tip; a :checked rule with a sibling combinator
    // shows more text: events, not mutations, change them.
    let focus = change(&setup, "document.getElementById('focus-me').focus()").await;
    assert!(focus.text.contains("Tip shown on focus"), "{}", focus.text);
    let blur = change(&setup, "document.getElementById('focus-me').blur()").await;
    assert!(!blur.text.contains("Tip shown on focus"), "{}", blur.text);
    let checked = change(&setup, "document.getElementById('more-toggle').click()").await;
    assert!(
        checked.text.contains("More text revealed"),
        "{}",
        checked.text
    );
    // Scrolling moves what is in view, not the lines.
    change(&setup, "window.scrollTo(0, document.body.scrollHeight)").await;
    // A style sheet added.
    let sheet = change(
        &setup,
        "document.head.insertAdjacentHTML('beforeend', '<style>#status { display: none }</style>')",
    )
    .await;
    assert!(!sheet.text.contains("Status two"), "{}", sheet.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_check_mode_catches_a_change_the_model_cannot_see() {
    let setup = OneBrowser::on("Model", "model.html").await;
    let first = setup.snapshot(json!({})).await;
    assert!(first.text.contains("Shown by a rule"), "{}", first.text);
    // A rule edited in place: no mutation, no event, no new rule (docs/observation.md names
    // it). The model still shows the paragraph; a fresh walk does not.
    setup
        .evaluate(
            "model.html",
            "[...document.styleSheets[0].cssRules].find((r) => r.selectorText === '.quiet-rule').style.display = 'none'",
        )
        .await;
    let caught = setup.snapshot(json!({})).await;
    assert!(caught.is_error, "{}", caught.text);
    assert!(
        caught.text.contains("page model check") && caught.text.contains("Shown by a rule"),
        "{}",
        caught.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delta_names_what_changed_outside_its_window() {
    let setup = OneBrowser::on("Rows", "rows.html?rows=300").await;
    let snapshot = setup.snapshot(json!({})).await;
    assert!(
        !snapshot.text.contains("Nothing selected"),
        "the status line is below the window: {}",
        snapshot.text
    );
    // A click in the window changes the status line below it.
    let button = ref_of(&snapshot, "button \"Select 3\"");
    let clicked = setup
        .call("click_element", json!({ "selector": button }))
        .await;
    assert!(
        clicked.text.contains("changed outside this view")
            && clicked.text.contains("\"Selected entry 3\""),
        "{}",
        clicked.text
    );
    assert!(!clicked.text.contains("no changes"), "{}", clicked.text);
    // Typing into the Note field, far below the window.
    let typed = setup
        .call(
            "type_text",
            json!({ "selector": "#note", "text": "remember" }),
        )
        .await;
    assert!(
        typed.text.contains("changed outside this view") && typed.text.contains("remember"),
        "{}",
        typed.text
    );
    // Nothing more changed: a delta against a fresh snapshot says so.
    let version = setup.snapshot(json!({})).await.data()["version"]
        .as_u64()
        .expect("a version");
    let again = setup.snapshot(json!({ "since": version })).await;
    assert!(again.text.contains("no changes"), "{}", again.text);
    // A change that makes the model walk the whole page again (a style sheet added) must not
    // lose what changed below the window: that walk reads everything.
    setup
        .evaluate(
            "rows.html",
            "document.head.append(Object.assign(document.createElement('style'), { textContent: 'h1 { letter-spacing: 1px }' })); document.getElementById('status').textContent = 'Card declined';",
        )
        .await;
    let after = setup.snapshot(json!({ "since": version })).await;
    assert!(
        after.text.contains("changed outside this view") && after.text.contains("Card declined"),
        "{}",
        after.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_snapshot_reads_only_its_window_and_the_rest_after() {
    let setup = OneBrowser::on("Rows", "rows.html?rows=2000").await;
    // The walk stops at the window: the lines after it are counted by an estimate, and said
    // to be. (With the check mode on, the same call also read the rest, checked that the
    // window sent is the one the whole model gives, and that the whole model equals a fresh
    // walk: an error otherwise.)
    let first = setup.snapshot(json!({})).await;
    assert!(!first.is_error, "{}", first.text);
    assert_eq!(first.data()["estimated"], true, "{}", first.text);
    assert!(first.text.contains(" of about "), "{}", first.text);
    assert!(first.text.contains("button \"Select 1\""), "{}", first.text);
    assert!(!first.text.contains("Select 1999\""), "{}", first.text);
    // The model is whole now: counts are exact.
    let again = setup.snapshot(json!({})).await;
    assert!(again.data().get("estimated").is_none(), "{}", again.text);
    assert!(!again.text.contains(" of about "), "{}", again.text);

    // A query on a fresh load searches the whole page, not only what the window read.
    let url = setup.fixtures.url("rows.html?rows=2000");
    let loaded = setup.call("navigate_to", json!({ "url": url })).await;
    assert!(!loaded.is_error, "{}", loaded.text);
    let found = setup.snapshot(json!({ "query": "Select 1999" })).await;
    assert!(
        found.text.contains("button \"Select 1999\""),
        "{}",
        found.text
    );
    assert!(found.data().get("estimated").is_none(), "{}", found.text);

    // A popup far below the window is sent whole by a first snapshot, as before: it is
    // looked for in the part not read yet.
    let loaded = setup.call("navigate_to", json!({ "url": url })).await;
    assert!(!loaded.is_error, "{}", loaded.text);
    setup
        .evaluate(
            "rows.html",
            "document.querySelector('#ledger tbody tr:nth-child(1700) td').insertAdjacentHTML('beforeend', '<div role=\"dialog\" aria-label=\"Deep dialog\"><button>Inside it</button></div>')",
        )
        .await;
    let popup = setup.snapshot(json!({})).await;
    assert_eq!(popup.data()["estimated"], true, "{}", popup.text);
    assert!(
        popup.text.contains("Deep dialog") && popup.text.contains("Inside it"),
        "{}",
        popup.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_snapshot_sends_popups_far_below_its_window() {
    // Answered from the model alone, as in a user's browser: the check mode would read the
    // rest of the page first and find them anyway. The dialogs are there from the load (no
    // mutation points at them): one in a row far below, and two in open shadow roots at the end
    // of the body, as a web component's modal is (a div's, a custom element's).
    let setup = OneBrowser::with_model_check("Rows", "rows.html?rows=2000&dialogs=1", false).await;
    let first = setup.snapshot(json!({})).await;
    assert_eq!(first.data()["estimated"], true, "{}", first.text);
    for expected in [
        "Deep dialog",
        "Inside it",
        "Shadow dialog",
        "Confirm it",
        "Custom dialog",
        "Accept it",
    ] {
        assert!(first.text.contains(expected), "{expected}: {}", first.text);
    }
}
