//! Third-party widget patterns (issue 13), each driven the way an agent would: from a
//! snapshot, by role and name, never by a selector. Date pickers whose days are grid cells or
//! focusable spans, a to-do list in nested shadow roots, clickable words inside prose, an
//! accordion of spans, and a modal dialog with a nested confirmation.

use serde_json::json;
use tabwire_e2e::scenario::{OneBrowser, inline_ref, ref_of};
use tabwire_e2e::wait::eventually;

/// The lines of a reply's text.
fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines()
        .find(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn date_picker_days_are_refs_inside_their_rows() {
    let setup = OneBrowser::on("Work", "datepicker.html").await;
    let snapshot = setup.snapshot(json!({})).await;
    let text = &snapshot.text;
    // The picker's boundary and its grid, named, with their nodes indented under them.
    assert!(
        line_with(text, "dialog \"Choose date\"").starts_with("@e"),
        "{text}"
    );
    assert!(
        line_with(text, "grid \"March 2026\"").starts_with("  @e"),
        "{text}"
    );
    assert!(
        line_with(text, "clickable \"Next month\"").starts_with("  @e"),
        "{text}"
    );
    // Every day is in its row's line with a ref of its own, none dropped.
    let week = line_with(text, "[@");
    assert!(
        week.starts_with("    @e") && week.contains("row \"["),
        "{text}"
    );
    for day in 1..=31 {
        inline_ref(&snapshot, &day.to_string());
    }
    let fifteen = inline_ref(&snapshot, "15");
    let clicked = setup
        .call("click_element", json!({"selector": fifteen}))
        .await;
    assert!(clicked.text.contains("(selected)"), "{}", clicked.text);
    let after = setup.snapshot(json!({})).await;
    assert!(
        after.text.contains("textbox \"Date\" = \"2026-03-15\""),
        "{}",
        after.text
    );
    assert!(after.text.contains(" 15 (selected)]"), "{}", after.text);
    // The arrow is a span with a listener and an aria-label: a clickable line.
    let next = ref_of(&after, "clickable \"Next month\"");
    let moved = setup.call("click_element", json!({"selector": next})).await;
    assert!(moved.text.contains("April 2026"), "{}", moved.text);
    // Focusable spans inside plain cells are inline refs too, and their text stays in the row.
    let week = setup.snapshot(json!({"query": "Week 12"})).await;
    assert!(
        line_with(&week.text, "Week 12").contains("row \"Week 12 | [@"),
        "{}",
        week.text
    );
    let seventeen = inline_ref(&week, "17");
    setup
        .call("click_element", json!({"selector": seventeen}))
        .await;
    let picked = setup.snapshot(json!({"query": "Picked"})).await;
    assert!(picked.text.contains("Picked March 17"), "{}", picked.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn todos_in_nested_shadow_roots_have_names_and_a_query_finds_them() {
    let setup = OneBrowser::on("Work", "todos.html").await;
    let snapshot = setup.snapshot(json!({})).await;
    for title in ["Buy milk", "Walk the dog", "Call the bank"] {
        assert!(
            snapshot.text.contains(&format!("\"{title}\"")),
            "{title} missing:\n{}",
            snapshot.text
        );
    }
    assert!(
        !snapshot.text.contains("Closed root text"),
        "{}",
        snapshot.text
    );
    assert!(snapshot.text.contains("2 items left"), "{}", snapshot.text);
    // All three checkboxes share a name; a query for a title returns its whole list item.
    let item = setup.snapshot(json!({"query": "Call the bank"})).await;
    let checkbox = ref_of(&item, "checkbox \"Toggle Todo\"");
    assert_eq!(
        item.text.matches("checkbox \"Toggle Todo\"").count(),
        1,
        "{}",
        item.text
    );
    assert!(item.text.contains("button \"Delete\""), "{}", item.text);
    setup
        .call("click_element", json!({"selector": checkbox}))
        .await;
    eventually(
        "the count to drop",
        std::time::Duration::from_secs(5),
        || async {
            let after = setup.snapshot(json!({"query": "left"})).await;
            after.text.contains("1 item left").then_some(())
        },
    )
    .await;
    let done = setup.snapshot(json!({"query": "Call the bank"})).await;
    assert!(
        done.text.contains("checkbox \"Toggle Todo\" [checked]"),
        "{}",
        done.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clickable_words_in_prose_and_accordion_spans_have_refs() {
    let setup = OneBrowser::on("Work", "prose.html").await;
    let snapshot = setup.snapshot(json!({})).await;
    let sentence = line_with(&snapshot.text, "Lorem ipsum");
    // The sentence stays one readable line, each clickable word an inline ref in it.
    assert!(sentence.contains("amet, [@"), "{sentence}");
    assert!(sentence.contains(" tempor incididunt"), "{sentence}");
    for word in ["laoreet", "eiusmod", "dolore"] {
        let word_ref = inline_ref(&snapshot, word);
        let clicked = setup
            .call("click_element", json!({"selector": word_ref}))
            .await;
        assert!(
            clicked.text.contains(&format!("Defined {word}")),
            "{word}: {}",
            clicked.text
        );
    }
    let shipping = ref_of(&snapshot, "clickable \"Shipping\"");
    assert!(
        !snapshot.text.contains("Parcels leave"),
        "{}",
        snapshot.text
    );
    let opened = setup
        .call("click_element", json!({"selector": shipping}))
        .await;
    assert!(
        opened.text.contains("Parcels leave within two days."),
        "{}",
        opened.text
    );
    assert!(
        opened.text.contains("link \"Track a parcel\""),
        "{}",
        opened.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modal_dialog_shows_its_boundary_and_which_save_is_inside() {
    let setup = OneBrowser::on("Work", "modal.html").await;
    let snapshot = setup.snapshot(json!({})).await;
    assert!(
        line_with(&snapshot.text, "form \"Settings\"").starts_with("@e"),
        "{}",
        snapshot.text
    );
    assert!(
        line_with(&snapshot.text, "button \"Save\"").starts_with("  @e"),
        "the page's Save is inside its form:\n{}",
        snapshot.text
    );
    // A dialog's own words are part of its line.
    assert!(
        snapshot
            .text
            .contains("alertdialog \"Notice: Your session ends soon.\""),
        "{}",
        snapshot.text
    );
    let edit = ref_of(&snapshot, "button \"Edit profile\"");
    let opened = setup.call("click_element", json!({"selector": edit})).await;
    let dialog = line_with(&opened.text, "dialog \"Edit profile\"");
    assert!(dialog.ends_with("[modal]"), "{}", opened.text);
    let view = setup.snapshot(json!({})).await;
    // The dialog's Save is the indented one under the dialog line.
    let lines: Vec<&str> = view.text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("dialog \"Edit profile\""))
        .expect("dialog line");
    let save_line = lines[at..]
        .iter()
        .find(|l| l.contains("button \"Save\""))
        .expect("a Save in the dialog");
    assert!(save_line.starts_with("  @e"), "{}", view.text);
    let bio = ref_of(&view, "textbox \"Bio\"");
    setup
        .call("type_text", json!({"selector": bio, "text": "Hello"}))
        .await;
    let save = save_line.split_whitespace().next().unwrap();
    let confirm = setup.call("click_element", json!({"selector": save})).await;
    assert!(
        line_with(&confirm.text, "dialog \"Confirm changes\"").ends_with("[modal]"),
        "{}",
        confirm.text
    );
    let view = setup.snapshot(json!({})).await;
    let confirm_button = line_with(&view.text, "button \"Confirm\"");
    assert!(
        confirm_button.starts_with("    @e"),
        "nested twice:\n{}",
        view.text
    );
    let yes = confirm_button.split_whitespace().next().unwrap();
    let done = setup.call("click_element", json!({"selector": yes})).await;
    assert!(done.text.contains("Saved bio Hello"), "{}", done.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_popup_that_opens_outside_the_window_is_always_shown() {
    let setup = OneBrowser::on("Work", "popup.html").await;
    let small = json!({"maxNodes": 5});
    let first = setup.snapshot(small.clone()).await;
    assert!(first.text.contains("[nodes 1-5 of"), "{}", first.text);
    let open = ref_of(&first, "button \"Actions\"");
    // The click's observation is a short window; the menu is appended at the end of the page.
    let clicked = setup.call("click_element", json!({"selector": open})).await;
    assert!(
        clicked
            .text
            .contains("menu \"Actions\" opened outside this view (3 lines inside):"),
        "{}",
        clicked.text
    );
    let archive = ref_of(&clicked, "menuitem \"Archive\"");
    assert!(
        line_with(&clicked.text, "menuitem \"Archive\"").starts_with("  @e"),
        "{}",
        clicked.text
    );
    let chose = setup
        .call("click_element", json!({"selector": archive}))
        .await;
    assert!(chose.text.contains("Chose Archive"), "{}", chose.text);
    assert!(
        chose.text.contains("menu \"Actions\" closed"),
        "{}",
        chose.text
    );

    // The walk is reused while the page is unchanged, and never once it changed: by a script
    // with no event, and by a style rule added to an existing sheet.
    let base = setup.snapshot(small.clone()).await;
    let version = base.data()["version"].as_u64().unwrap();
    let same = setup
        .snapshot(json!({"maxNodes": 5, "since": version}))
        .await;
    assert!(same.text.contains("no changes since"), "{}", same.text);
    setup
        .evaluate(
            "popup.html",
            "document.getElementById('first').textContent = 'Changed by a script'",
        )
        .await;
    let changed = setup
        .snapshot(json!({"maxNodes": 5, "since": version}))
        .await;
    assert!(
        changed.text.contains("Changed by a script"),
        "{}",
        changed.text
    );
    let version = changed.data()["version"].as_u64().unwrap();
    setup
        .evaluate(
            "popup.html",
            "document.styleSheets[1].insertRule('#hide-me { display: none }')",
        )
        .await;
    let hidden = setup
        .snapshot(json!({"maxNodes": 5, "since": version}))
        .await;
    assert!(hidden.text.contains("removed: @e"), "{}", hidden.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn visible_frames_are_inlined_under_their_lines_in_one_snapshot() {
    let setup = OneBrowser::on("Work", "frames.html").await;
    let snapshot = eventually(
        "both frames to be inlined",
        std::time::Duration::from_secs(10),
        || async {
            let snapshot = setup.snapshot(json!({})).await;
            (snapshot.text.matches("button \"Send\"").count() == 2).then_some(snapshot)
        },
    )
    .await;
    let lines: Vec<&str> = snapshot.text.lines().collect();
    let cross = lines
        .iter()
        .position(|l| l.contains("iframe \"Cross-origin frame\" (frameId"))
        .expect("the cross-origin iframe's line");
    // The frame's nodes follow its line, one step deeper, with refs of that frame.
    let email = lines[cross + 1..]
        .iter()
        .find(|l| l.contains("textbox \"Email\""))
        .expect("the frame's email field");
    assert!(email.starts_with("  @f"), "{}", snapshot.text);
    let email_ref = email.split_whitespace().next().unwrap();
    let send_ref = lines[cross + 1..]
        .iter()
        .find(|l| l.contains("button \"Send\""))
        .and_then(|l| l.split_whitespace().next())
        .unwrap();
    setup
        .call(
            "type_text",
            json!({"selector": email_ref, "text": "ada@example.com"}),
        )
        .await;
    setup
        .call("click_element", json!({"selector": send_ref}))
        .await;
    // A delta of the top document carries what changed in its frames.
    let version = snapshot.data()["version"].as_u64().unwrap();
    let delta = setup.snapshot(json!({"since": version})).await;
    assert!(
        delta
            .text
            .contains("Sent ada@example.com from the cross frame (trusted: true)"),
        "{}",
        delta.text
    );
    let after = setup.snapshot(json!({"query": "Sent"})).await;
    assert!(
        after
            .text
            .contains("Sent ada@example.com from the cross frame (trusted: true)"),
        "{}",
        after.text
    );
    // frameId still narrows to one frame, and its own refs.
    let frame = email_ref[2..].split('e').next().unwrap();
    let only = setup
        .snapshot(json!({"frameId": frame.parse::<u64>().unwrap()}))
        .await;
    assert!(!only.text.contains("Same-origin frame"), "{}", only.text);
    assert!(only.text.contains(email_ref), "{}", only.text);
}
