//! The action tools on elements, end to end in real Chromium (docs/actions.md): trusted clicks
//! and what the page saw of them, the observation after an action, covered targets, hovering,
//! other buttons and double clicks, keys with modifiers, scrolling, a custom dropdown and a
//! read-only picker, and JavaScript dialogs. `drag.rs` covers dragging.
//!
//! Every test checks what happened in the page, not only that a tool said `ok`: through the
//! tools' own reads and, independently of them, through DevTools (`evaluate`), reading what the
//! fixture page recorded. `forms.rs` covers typing and forms, `ordering.rs` waits, batches,
//! queues and deadlines.

use serde_json::json;
use tabwire_e2e::scenario::{OneBrowser, element_state};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clicks_are_trusted_by_default_and_dom_clicks_are_not() {
    let setup = OneBrowser::on("Work", "actions.html").await;

    let clicked = setup.click("#press").await;
    let data = clicked.data();
    assert!(
        data["target"]
            .as_str()
            .is_some_and(|text| text.contains("Press me")),
        "{data}"
    );
    assert_eq!(
        setup
            .evaluate("actions.html", "[page.presses, page.lastPressTrusted]")
            .await,
        json!([1, true]),
        "the page received one trusted click"
    );

    let dom = setup
        .call(
            "click_element",
            json!({"selector": "#press", "mode": "dom"}),
        )
        .await;
    dom.data();
    assert_eq!(
        setup
            .evaluate("actions.html", "[page.presses, page.lastPressTrusted]")
            .await,
        json!([2, false]),
        "mode dom calls element.click(): untrusted"
    );

    // The tab is healthy and idle, with tabwire's debugger attached for the trusted click.
    let health = setup.call("get_tab_health", json!({})).await;
    let health = health.data();
    assert_eq!(health["responsive"], true, "{health}");
    assert_eq!(health["queued"], 0, "{health}");
    assert!(health["active"].is_null(), "{health}");
    assert_eq!(health["debuggerAttached"], true, "{health}");
    // Recovering the debugger of an idle tab reattaches it and says what it did.
    let recovered = setup
        .call("get_tab_health", json!({"recoverDebugger": true}))
        .await;
    assert!(
        recovered.data()["recovery"].is_string(),
        "{}",
        recovered.text
    );
    assert_eq!(recovered.data()["debuggerAttached"], true);
    // And trusted clicks still work afterwards.
    setup.click("#press").await.data();
    assert_eq!(
        setup
            .evaluate("actions.html", "[page.presses, page.lastPressTrusted]")
            .await,
        json!([3, true])
    );

    // A click that opens a tab says which.
    let opened = setup.click("#new-tab").await;
    let tabs = opened.data()["openedTabs"].clone();
    assert_eq!(tabs.as_array().map(Vec::len), Some(1), "{}", opened.text);
    assert!(opened.text.contains("it opened tab"), "{}", opened.text);
    let listed = setup.call("list_tabs", json!({})).await;
    assert!(
        listed.text.contains(&tabs[0].to_string()),
        "{}",
        listed.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actions_return_an_observation_unless_told_not_to() {
    let setup = OneBrowser::on("Work", "counter.html").await;

    // By default the result shows the page after the action: here, the new count.
    let observed = setup.click("#increment").await;
    assert!(
        observed.data()["observation"].is_object(),
        "{}",
        observed.text
    );
    assert!(
        observed.text.starts_with("Clicked button \"Increment\""),
        "the summary comes first: {}",
        observed.text
    );
    assert!(observed.text.contains("Count: 1"), "{}", observed.text);
    assert!(observed.text.lines().count() > 1, "{}", observed.text);

    // observe: false returns the summary alone.
    let quiet = setup
        .call(
            "click_element",
            json!({"selector": "#increment", "observe": false}),
        )
        .await;
    assert!(
        quiet.data().get("observation").is_none(),
        "{}",
        quiet.structured
    );
    assert_eq!(quiet.text.lines().count(), 1, "{}", quiet.text);
    assert!(!quiet.text.contains("Count:"), "{}", quiet.text);

    // The next observed action shows what changed since the last observation, two clicks ago.
    let again = setup.click("#increment").await;
    assert!(again.text.contains("Count: 3"), "{}", again.text);
    let page = setup
        .evaluate(
            "counter.html",
            "document.getElementById('count').textContent",
        )
        .await;
    assert_eq!(page, "Count: 3", "three trusted clicks landed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_covered_button_is_refused_with_what_covers_it() {
    let setup = OneBrowser::on("Work", "actions.html").await;

    let covered = setup
        .call(
            "click_element",
            json!({"selector": "#covered", "timeoutMs": 1000}),
        )
        .await;
    assert_eq!(covered.error_code(), "TARGET_COVERED", "{}", covered.text);
    assert!(!covered.may_have_acted());
    assert!(
        covered.text.to_lowercase().contains("cookie"),
        "the covering banner is named: {}",
        covered.text
    );
    assert_eq!(
        setup.evaluate("actions.html", "page.covered").await,
        0,
        "nothing reached the covered button"
    );

    // mode dom does no hit test: it reaches the button under the banner, untrusted.
    setup
        .call(
            "click_element",
            json!({"selector": "#covered", "mode": "dom"}),
        )
        .await
        .data();
    assert_eq!(setup.evaluate("actions.html", "page.covered").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hover_other_buttons_double_clicks_and_keys_reach_the_page() {
    let setup = OneBrowser::on("Work", "actions.html").await;

    setup
        .call("hover_element", json!({"selector": "#hover-target"}))
        .await
        .data();
    assert_eq!(
        setup
            .evaluate(
                "actions.html",
                "document.getElementById('hover-log').textContent"
            )
            .await,
        "Hovered (trusted: true)"
    );

    setup
        .call(
            "click_element",
            json!({"selector": "#mouse", "button": "right"}),
        )
        .await
        .data();
    let events = setup.evaluate("actions.html", "page.mouse.join(' ')").await;
    assert!(
        events.as_str().unwrap().contains("contextmenu/2"),
        "a right click opens the context menu: {events}"
    );
    assert!(
        !events.as_str().unwrap().contains("click/0"),
        "a right click is not a primary click: {events}"
    );

    setup
        .call(
            "click_element",
            json!({"selector": "#mouse", "clickCount": 2}),
        )
        .await
        .data();
    let events = setup.evaluate("actions.html", "page.mouse.join(' ')").await;
    assert!(
        events.as_str().unwrap().contains("dblclick/0"),
        "clickCount 2 is a double click: {events}"
    );

    // Keys go to the field named by `selector` (focused first), with their modifiers.
    setup
        .call(
            "press_key",
            json!({"selector": "#keys", "key": "Enter", "modifiers": 8}),
        )
        .await
        .data();
    setup
        .call("press_key", json!({"key": "b", "modifiers": 2}))
        .await
        .data();
    setup
        .call("press_key", json!({"key": "ArrowLeft", "modifiers": 10}))
        .await
        .data();
    assert_eq!(
        setup.evaluate("actions.html", "page.keys").await,
        json!(["Shift+Enter", "Control+b", "Control+Shift+ArrowLeft"]),
        "trusted key presses with their modifiers"
    );
    // Tab moves the focus on, as it does for a person.
    setup.call("press_key", json!({"key": "Tab"})).await.data();
    assert_eq!(
        setup
            .evaluate("actions.html", "document.activeElement.id")
            .await,
        "after-keys"
    );
    let focused = setup
        .call("read_element_state", json!({"selector": "#after-keys"}))
        .await;
    assert_eq!(element_state(&focused)["focused"], true, "{}", focused.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrolling_the_page_and_a_scroll_container() {
    let setup = OneBrowser::on("Work", "actions.html").await;

    // A scroll container, named by an element inside it; the page itself does not move.
    setup
        .call("scroll_page", json!({"selector": "#box-top", "dy": 120}))
        .await
        .data();
    assert_eq!(
        setup
            .evaluate(
                "actions.html",
                "[document.getElementById('box').scrollTop, window.scrollY]"
            )
            .await,
        json!([120, 0])
    );

    // With no arguments: one screen down.
    let screen = setup.call("scroll_page", json!({})).await;
    let data = screen.data();
    let scrolled = setup.evaluate("actions.html", "window.scrollY").await;
    assert!(scrolled.as_f64().unwrap() > 0.0, "{data}");
    assert_eq!(
        data["scrollY"].as_f64().unwrap().round(),
        scrolled.as_f64().unwrap().round(),
        "{data}"
    );
    assert_eq!(data["atEnd"], false, "{data}");

    // `to` brings an element into view.
    setup
        .call("scroll_page", json!({"to": "#bottom"}))
        .await
        .data();
    let in_view = setup
        .evaluate(
            "actions.html",
            "(() => { const r = document.getElementById('bottom').getBoundingClientRect(); \
             return r.top >= 0 && r.bottom <= window.innerHeight; })()",
        )
        .await;
    assert_eq!(in_view, true);

    // By an amount past the end: at the end, and it says so.
    let end = setup.call("scroll_page", json!({"dy": 100000})).await;
    assert_eq!(end.data()["atEnd"], true, "{}", end.structured);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_dropdown_options_and_a_readonly_picker() {
    let setup = OneBrowser::on("Work", "dropdown.html").await;

    // Open the dropdown, then choose an option below its fold.
    setup.click("#fruit").await.data();
    let chosen = setup
        .call("select_option", json!({"text": "Honeydew"}))
        .await;
    chosen.data();
    assert_eq!(
        setup
            .evaluate("dropdown.html", "[widgets.fruit, widgets.fruitTrusted]")
            .await,
        json!(["Honeydew", true]),
        "the option was clicked with trusted input"
    );
    assert_eq!(
        setup
            .evaluate(
                "dropdown.html",
                "document.getElementById('fruit-list').hidden"
            )
            .await,
        true,
        "choosing closed the list"
    );

    // A hidden option is refused, and the error lists the visible ones; a missing one too.
    setup.click("#fruit").await.data();
    let hidden = setup
        .call(
            "select_option",
            json!({"text": "Secret fruit", "timeoutMs": 1000}),
        )
        .await;
    assert_eq!(hidden.error_code(), "TARGET_NOT_VISIBLE", "{}", hidden.text);
    assert!(hidden.text.contains("Apple"), "{}", hidden.text);
    let missing = setup
        .call("select_option", json!({"text": "Durian", "timeoutMs": 500}))
        .await;
    assert_eq!(missing.error_code(), "OPTION_NOT_FOUND", "{}", missing.text);
    assert!(hidden.text.contains("Apple"), "{}", hidden.text);
    assert_eq!(
        setup.evaluate("dropdown.html", "widgets.fruit").await,
        "Honeydew",
        "nothing else was chosen"
    );

    // The read-only date field refuses text unless allowReadonly says it is a picker.
    let refused = setup
        .call(
            "type_text",
            json!({"selector": "#date", "text": "2026-12-24", "timeoutMs": 1000}),
        )
        .await;
    assert_eq!(refused.error_code(), "NOT_EDITABLE", "{}", refused.text);
    assert_eq!(
        setup
            .evaluate("dropdown.html", "document.getElementById('date').value")
            .await,
        ""
    );
    let typed = setup
        .call(
            "type_text",
            json!({"selector": "#date", "text": "2026-12-24", "allowReadonly": true}),
        )
        .await;
    assert_eq!(typed.data()["value"], "2026-12-24");
    assert_eq!(
        setup
            .evaluate(
                "dropdown.html",
                "document.getElementById('date-log').textContent"
            )
            .await,
        "Date: 2026-12-24 (readonly: true)",
        "the page heard the change and the field stayed read-only"
    );
    let date = setup
        .call("read_element_state", json!({"selector": "#date"}))
        .await;
    assert_eq!(element_state(&date)["readonly"], true, "{}", date.text);
    assert_eq!(element_state(&date)["value"], "2026-12-24", "{}", date.text);

    // The picker itself works with plain clicks.
    setup.click("#open-picker").await.data();
    setup.click("#picker [data-day=\"15\"]").await.data();
    assert_eq!(
        setup
            .evaluate("dropdown.html", "document.getElementById('date').value")
            .await,
        "2026-12-15"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dialogs_are_reported_block_other_tools_and_are_handled() {
    let setup = OneBrowser::on("Work", "dialog.html").await;
    let result = || async {
        let content = setup
            .call("get_page_content", json!({"selector": "#result"}))
            .await;
        content.data()["content"]
            .as_str()
            .unwrap()
            .trim()
            .to_owned()
    };

    // The click succeeds and says which dialog opened.
    let clicked = setup.click("#confirm").await;
    let data = clicked.data();
    assert_eq!(data["dialog"]["type"], "confirm", "{data}");
    assert_eq!(data["dialog"]["message"], "Delete the item?", "{data}");
    assert!(
        !data["observationError"].is_null(),
        "the page cannot be observed behind a dialog: {data}"
    );

    // Any other tool on the tab fails at once instead of hanging.
    let blocked = setup.snapshot(json!({})).await;
    assert_eq!(blocked.error_code(), "DIALOG_OPEN", "{}", blocked.text);
    assert!(
        blocked.text.contains("confirm") && blocked.text.contains("Delete the item?"),
        "{}",
        blocked.text
    );
    let blocked = setup.click("#alert").await;
    assert_eq!(blocked.error_code(), "DIALOG_OPEN", "{}", blocked.text);
    let health = setup.call("get_tab_health", json!({})).await;
    assert_eq!(
        health.data()["dialog"]["type"],
        "confirm",
        "{}",
        health.text
    );

    let accepted = setup.call("handle_dialog", json!({"accept": true})).await;
    assert_eq!(accepted.data()["accepted"], true);
    assert_eq!(accepted.data()["dialog"]["type"], "confirm");
    assert_eq!(result().await, "Confirm returned true");

    setup.click("#confirm").await.data();
    setup
        .call("handle_dialog", json!({"accept": false}))
        .await
        .data();
    assert_eq!(result().await, "Confirm returned false");

    let prompted = setup.click("#prompt").await;
    assert_eq!(prompted.data()["dialog"]["type"], "prompt");
    assert_eq!(prompted.data()["dialog"]["defaultPrompt"], "Untitled");
    setup
        .call(
            "handle_dialog",
            json!({"accept": true, "promptText": "Report 2027"}),
        )
        .await
        .data();
    assert_eq!(result().await, "Prompt returned \"Report 2027\"");

    let alerted = setup.click("#alert").await;
    assert_eq!(alerted.data()["dialog"]["type"], "alert");
    setup
        .call("handle_dialog", json!({"accept": true}))
        .await
        .data();
    assert_eq!(result().await, "Alert closed");

    let none = setup.call("handle_dialog", json!({"accept": true})).await;
    assert_eq!(none.error_code(), "NO_DIALOG");
}
