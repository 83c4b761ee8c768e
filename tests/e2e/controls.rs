//! Every control found, every outcome true (issue 25), on fixtures that reproduce what
//! third-party widgets do: actions of their own inside a clickable row, icons whose pointer
//! cursor shows only under the mouse, a widget that arms itself on hover, fields disabled or
//! read-only by ARIA alone, and date and time inputs.
//!
//! What the page did is read from it through DevTools, so a test cannot pass on what a tool
//! says it did.

use serde_json::{Value, json};
use tabwire_e2e::scenario::{OneBrowser, element_state, inline_ref, ref_of};

/// The text of mailbox.html's status line.
async fn status(setup: &OneBrowser) -> Value {
    setup
        .evaluate(
            "mailbox.html",
            "document.getElementById('status').textContent",
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn separate_controls_inside_a_clickable_row_keep_refs_of_their_own() {
    let setup = OneBrowser::on("Work", "mailbox.html").await;
    let snapshot = setup.snapshot(json!({})).await;
    let text = &snapshot.text;
    assert!(!text.contains("clickable \"Reply Forward\""), "{text}");
    // The row is still one clickable line, with each action as a ref inside it.
    let reply = inline_ref(&snapshot, "Reply");
    let forward = inline_ref(&snapshot, "Forward");
    let row = text
        .lines()
        .find(|line| line.contains(&format!("[{reply} Reply]")))
        .unwrap();
    assert!(row.contains("clickable \""), "{text}");
    assert!(row.contains(&format!("[{forward} Forward]")), "{text}");
    setup.click(&reply).await;
    assert_eq!(status(&setup).await, "Replying");
    setup.click(&forward).await;
    assert_eq!(status(&setup).await, "Forwarding");
    // The row itself still opens the message.
    let row_ref = row.split_whitespace().next().unwrap();
    setup.click(row_ref).await;
    assert_eq!(status(&setup).await, "Opened the message");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn icons_whose_pointer_shows_only_under_hover_are_found_before_any_hover() {
    let setup = OneBrowser::on("Work", "mailbox.html").await;
    // No mouse has been over the page: nothing is hovered.
    let hovered = setup
        .evaluate("mailbox.html", "document.querySelectorAll(':hover').length")
        .await;
    assert!(
        hovered.as_u64().unwrap() <= 2,
        "only html and body: {hovered}"
    );
    let snapshot = setup.snapshot(json!({})).await;
    let archive = ref_of(&snapshot, "clickable \"Archive\"");
    ref_of(&snapshot, "clickable \"Snooze\"");
    // After a hover elsewhere the same icons are listed: what is found does not move with
    // the mouse.
    setup
        .call("hover_element", json!({"selector": archive.clone()}))
        .await;
    let after = setup.snapshot(json!({})).await;
    ref_of(&after, "clickable \"Archive\"");
    ref_of(&after, "clickable \"Snooze\"");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_trusted_click_works_on_a_widget_that_arms_itself_on_hover() {
    let setup = OneBrowser::on("Work", "mailbox.html").await;
    // A fresh page, the mouse never over it: one click, as a person's, is enough.
    let clicked = setup.click("#archive").await;
    assert!(!clicked.is_error, "{}", clicked.text);
    assert_eq!(status(&setup).await, "Archived", "{}", clicked.text);
    let ignored = setup.evaluate("mailbox.html", "window.ignoredClicks").await;
    assert_eq!(ignored, 0);
    setup.click("#snooze").await;
    assert_eq!(status(&setup).await, "Snoozed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_where_the_pointer_already_rests_presses_without_moving_and_lands() {
    let setup = OneBrowser::on("Work", "mailbox.html").await;
    setup
        .evaluate(
            "mailbox.html",
            "window.moves = 0; window.archives = 0; \
             document.addEventListener('mousemove', () => { window.moves += 1; }, true); \
             document.getElementById('archive').addEventListener('click', () => { window.archives += 1; }); 0",
        )
        .await;
    // The first click moves there (the page sees the move, and the icon arms itself).
    setup.click("#archive").await;
    let moves = setup.evaluate("mailbox.html", "window.moves").await;
    assert!(moves.as_u64().unwrap() >= 1, "{moves}");
    assert_eq!(status(&setup).await, "Archived");
    // The pointer rests on the icon: the next click presses where it is, and counts.
    let again = setup.click("#archive").await;
    assert!(!again.is_error, "{}", again.text);
    assert_eq!(setup.evaluate("mailbox.html", "window.archives").await, 2);
    assert_eq!(setup.evaluate("mailbox.html", "window.moves").await, moves);
    // Another element: the pointer moves again, and that element arms itself first.
    setup.click("#snooze").await;
    assert_eq!(status(&setup).await, "Snoozed");
    let after = setup.evaluate("mailbox.html", "window.moves").await;
    assert!(after.as_u64() > moves.as_u64(), "{after} after {moves}");
    assert_eq!(
        setup.evaluate("mailbox.html", "window.ignoredClicks").await,
        0
    );
}

/// How many changes disabled.html's fields heard (and threw away).
async fn changes(setup: &OneBrowser) -> Value {
    setup.evaluate("disabled.html", "window.changes").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_outcome_claims_text_or_a_choice_went_into_a_disabled_field() {
    let setup = OneBrowser::on("Work", "disabled.html").await;
    let snapshot = setup.snapshot(json!({})).await;
    let locked = ref_of(&snapshot, "textbox \"Locked note\"");
    assert!(
        snapshot.text.contains("textbox \"Locked note\" [disabled]"),
        "{}",
        snapshot.text
    );
    // Disabled by an ancestor's aria-disabled is disabled too, in the line and in the state.
    assert!(
        snapshot.text.contains("textbox \"Inner note\" [disabled]"),
        "{}",
        snapshot.text
    );
    let state = setup
        .call("read_element_state", json!({"selector": "#inner"}))
        .await;
    assert_eq!(element_state(&state)["disabled"], true, "{}", state.text);
    for mode in [None, Some("native"), Some("trusted")] {
        let mut args = json!({"selector": locked, "text": "hello"});
        if let Some(mode) = mode {
            args["mode"] = json!(mode);
        }
        let typed = setup.call("type_text", args).await;
        assert!(typed.is_error, "{mode:?}: {}", typed.text);
        assert_eq!(typed.error_code(), "NOT_EDITABLE", "{}", typed.text);
        assert!(typed.text.contains("disabled"), "{}", typed.text);
        assert!(!typed.may_have_acted(), "{}", typed.text);
    }
    // Disabled by an ancestor's aria-disabled, and read-only by aria-readonly.
    for (selector, word) in [("#inner", "disabled"), ("#frozen", "read-only")] {
        let typed = setup
            .call("type_text", json!({"selector": selector, "text": "hello"}))
            .await;
        assert_eq!(typed.error_code(), "NOT_EDITABLE", "{}", typed.text);
        assert!(typed.text.contains(word), "{}", typed.text);
    }
    let filled = setup
        .call(
            "fill_form",
            json!({"fields": [
                {"selector": "#open", "value": "fine"},
                {"selector": "#locked", "value": "hello"},
            ]}),
        )
        .await;
    assert_eq!(filled.error_code(), "NOT_EDITABLE", "{}", filled.text);
    let chosen = setup
        .call("select_option", json!({"selector": "#size", "value": "m"}))
        .await;
    assert_eq!(chosen.error_code(), "NOT_EDITABLE", "{}", chosen.text);
    let picked = setup
        .call("select_option", json!({"text": "Green", "timeoutMs": 1000}))
        .await;
    assert_eq!(picked.error_code(), "NOT_EDITABLE", "{}", picked.text);
    assert_eq!(changes(&setup).await, 0, "nothing reached the page");
    let values = setup
        .evaluate(
            "disabled.html",
            "['locked', 'inner', 'frozen', 'open', 'size'].map((id) => document.getElementById(id).value)\
             .concat(document.getElementById('chosen').textContent)",
        )
        .await;
    assert_eq!(values, json!(["", "", "as is", "", "s", "No colour"]));
    // An enabled field beside them still takes text.
    let typed = setup
        .call("type_text", json!({"selector": "#open", "text": "fine"}))
        .await;
    assert!(!typed.is_error, "{}", typed.text);
}

/// A field of when.html: its value, and the input and change events it heard.
async fn field(setup: &OneBrowser, id: &str) -> Value {
    setup
        .evaluate(
            "when.html",
            &format!(
                "[document.getElementById('{id}').value, window.heard['{id}'].input, window.heard['{id}'].change]"
            ),
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn date_and_time_fields_say_their_format_and_take_type_text_in_it() {
    let setup = OneBrowser::on("Work", "when.html").await;
    let snapshot = setup.snapshot(json!({})).await;
    for line in [
        "textbox \"Day\" (YYYY-MM-DD)",
        "textbox \"Start\" (HH:MM)",
        "textbox \"Reminder\" (YYYY-MM-DDTHH:MM)",
        "textbox \"Billing month\" (YYYY-MM)",
        "textbox \"Sprint week\" (YYYY-Www) = \"2026-W01\"",
    ] {
        ref_of(&snapshot, line);
    }
    let day = ref_of(&snapshot, "textbox \"Day\"");
    let typed = setup
        .call("type_text", json!({"selector": day, "text": "2026-12-03"}))
        .await;
    assert!(!typed.is_error, "{}", typed.text);
    assert!(
        typed
            .text
            .contains("Typed into textbox \"Day\" (YYYY-MM-DD)"),
        "{}",
        typed.text
    );
    assert_eq!(field(&setup, "day").await, json!(["2026-12-03", 1, 1]));
    // Every mode, and a value already there replaced (a date is not appended to).
    for (id, text, mode) in [
        ("start", "13:45", "default"),
        ("at", "2026-12-03T13:45", "native"),
        ("month", "2026-12", "trusted"),
        ("week", "2026-W49", "default"),
    ] {
        let mut args = json!({"selector": format!("#{id}"), "text": text});
        if mode != "default" {
            args["mode"] = json!(mode);
        }
        let typed = setup.call("type_text", args).await;
        assert!(!typed.is_error, "{id}: {}", typed.text);
        assert_eq!(field(&setup, id).await, json!([text, 1, 1]), "{id}");
    }
    // A text not in the format is an error naming it, and nothing changes.
    let wrong = setup
        .call(
            "type_text",
            json!({"selector": "#day", "text": "03/12/2026"}),
        )
        .await;
    assert_eq!(wrong.error_code(), "INVALID_ARGUMENT", "{}", wrong.text);
    assert!(wrong.text.contains("YYYY-MM-DD"), "{}", wrong.text);
    assert_eq!(field(&setup, "day").await, json!(["2026-12-03", 1, 1]));
    // fill_form takes the same values and reports the same lines.
    let filled = setup
        .call(
            "fill_form",
            json!({"fields": [{"selector": "#start", "value": "09:30"}, {"selector": "#day", "value": "2027-01-02"}]}),
        )
        .await;
    assert!(!filled.is_error, "{}", filled.text);
    assert!(filled.text.contains("(HH:MM)"), "{}", filled.text);
    assert_eq!(field(&setup, "start").await, json!(["09:30", 2, 2]));
    assert_eq!(field(&setup, "day").await, json!(["2027-01-02", 2, 2]));
}
