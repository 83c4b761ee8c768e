//! Typing and forms, end to end in real Chromium (docs/actions.md): a framework-controlled
//! input, appending and replacing, native selects, `fill_form` (checks first, per-field
//! validation, submission) and `read_element_state` (hidden inputs, redacted passwords).
//!
//! Values are read back from the page through DevTools (`evaluate`) as well as through the
//! tools, so a tool cannot pass by reporting what it meant to do.

use serde_json::json;
use tabwire_e2e::scenario::{OneBrowser, element_state, ref_of};
use tabwire_protocol::REDACTED;

/// The hidden input of form.html, longer than the `maxChars` the tests read it with.
const TOKEN: &str = "csrf-7f3a9c1e5b2d4f6a8c0e1b3d5f7a9c1e5b2d4f6a8c0e";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_appends_replaces_and_updates_a_framework_controlled_input() {
    let setup = OneBrowser::on("Work", "controlled.html").await;
    let read = || {
        setup.evaluate(
            "controlled.html",
            "[app.state, document.getElementById('name').value]",
        )
    };

    // The fixture really is controlled: assigning through the element's own value property,
    // as naive automation does, is ignored by the framework and undone.
    let naive = setup
        .evaluate(
            "controlled.html",
            "(() => { const f = document.getElementById('name'); f.value = 'naive'; \
             f.dispatchEvent(new Event('input', {bubbles: true})); \
             return [app.state, f.value]; })()",
        )
        .await;
    assert_eq!(naive, json!(["", ""]), "the fixture's framework imitation");

    // The default types keys: the field and the framework's state both take the text.
    let typed = setup
        .call("type_text", json!({"selector": "#name", "text": "Ada"}))
        .await;
    assert_eq!(typed.data()["value"], "Ada");
    assert_eq!(read().await, json!(["Ada", "Ada"]));
    assert_eq!(setup.evaluate("controlled.html", "app.keys").await, 3);

    // Native: the value setter, which the framework notices too; no key is pressed.
    let native = setup
        .call(
            "type_text",
            json!({"selector": "#name", "text": " Byron", "mode": "native"}),
        )
        .await;
    assert_eq!(native.data()["value"], "Ada Byron");
    assert_eq!(read().await, json!(["Ada Byron", "Ada Byron"]));
    assert_eq!(setup.evaluate("controlled.html", "app.keys").await, 3);

    // Trusted key events append, one key press per character.
    let keys = setup
        .call(
            "type_text",
            json!({"selector": "#name", "text": " Lovelace", "mode": "trusted", "inputMethod": "keys"}),
        )
        .await;
    assert_eq!(keys.data()["value"], "Ada Byron Lovelace");
    assert_eq!(
        read().await,
        json!(["Ada Byron Lovelace", "Ada Byron Lovelace"])
    );
    assert_eq!(setup.evaluate("controlled.html", "app.keys").await, 12);

    // Trusted insertion with clear replaces the value.
    setup
        .call(
            "type_text",
            json!({"selector": "#name", "text": "Grace", "mode": "trusted", "clear": true}),
        )
        .await
        .data();
    assert_eq!(read().await, json!(["Grace", "Grace"]));

    // Native with clear replaces too; the framework's own rendering shows it.
    let replaced = setup
        .call(
            "type_text",
            json!({"selector": "#name", "text": "Hopper", "clear": true}),
        )
        .await;
    assert_eq!(replaced.data()["value"], "Hopper");
    assert_eq!(read().await, json!(["Hopper", "Hopper"]));
    let snapshot = setup.snapshot(json!({})).await;
    assert!(
        snapshot
            .text
            .lines()
            .any(|line| line.contains("State:") && line.contains("Hopper")),
        "{}",
        snapshot.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_select_by_visible_text_and_by_value() {
    let setup = OneBrowser::on("Work", "actions.html").await;
    let size = || {
        setup.evaluate(
            "actions.html",
            "[document.getElementById('size').value, page.sizeChanges]",
        )
    };

    setup
        .call(
            "select_option",
            json!({"selector": "#size", "text": "Large"}),
        )
        .await
        .data();
    assert_eq!(size().await, json!(["l", 1]), "chosen by visible text");
    setup
        .call("select_option", json!({"selector": "#size", "value": "s"}))
        .await
        .data();
    assert_eq!(size().await, json!(["s", 2]), "chosen by value");
    let missing = setup
        .call(
            "select_option",
            json!({"selector": "#size", "text": "Huge"}),
        )
        .await;
    assert_eq!(missing.error_code(), "OPTION_NOT_FOUND");
    assert!(
        missing.text.contains("Medium"),
        "the error lists what is there: {}",
        missing.text
    );
    assert_eq!(size().await, json!(["s", 2]), "nothing changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fill_form_checks_every_field_first_then_fills_validates_and_submits() {
    let setup = OneBrowser::on("Work", "form.html").await;
    let values = || {
        setup.evaluate(
            "form.html",
            "['name', 'email', 'country', 'newsletter'].map((id) => document.getElementById(id).value)\
             .concat([document.getElementById('terms').checked, \
             document.getElementById('plan-pro').checked, window.submissions])",
        )
    };
    let untouched = json!(["", "", "", "", false, false, 0]);

    // A field outside the form: refused before anything is set.
    let mixed = setup
        .call(
            "fill_form",
            json!({"fields": [
                {"selector": "#name", "value": "Mallory"},
                {"selector": "#newsletter", "value": "m@example.org"},
            ]}),
        )
        .await;
    assert!(mixed.is_error, "{}", mixed.text);
    assert!(!mixed.may_have_acted(), "{}", mixed.text);
    assert_eq!(values().await, untouched, "nothing was set");

    // A missing field: refused (after waiting for it), nothing set.
    let missing = setup
        .call(
            "fill_form",
            json!({"fields": [
                {"selector": "#name", "value": "Mallory"},
                {"selector": "#nope", "value": "x"},
            ], "timeoutMs": 1000}),
        )
        .await;
    assert_eq!(
        missing.error_code(),
        "SELECTOR_NOT_FOUND",
        "{}",
        missing.text
    );
    assert_eq!(values().await, untouched, "nothing was set");

    // Every kind of field, one of them invalid: per-field results with the browser's message.
    let filled = setup
        .call(
            "fill_form",
            json!({"fields": [
                {"selector": "#name", "value": "Ada Lovelace"},
                {"selector": "#email", "value": "not-an-email"},
                {"selector": "#terms", "value": true},
                {"selector": "#plan-pro", "value": true},
                {"selector": "#country", "value": "France"},
            ]}),
        )
        .await;
    let data = filled.data();
    let fields = data["fields"].as_array().expect("per-field results");
    assert_eq!(fields.len(), 5, "{data}");
    let message = setup
        .evaluate(
            "form.html",
            "document.getElementById('email').validationMessage",
        )
        .await;
    assert!(!message.as_str().unwrap().is_empty());
    assert_eq!(fields[1]["valid"], false, "{data}");
    assert_eq!(fields[1]["validationMessage"], message, "{data}");
    // The valid fields are not marked invalid and carry no message.
    for index in [0, 2, 3, 4] {
        assert_ne!(fields[index]["valid"], false, "field {index}: {data}");
        assert!(
            fields[index]["validationMessage"]
                .as_str()
                .is_none_or(str::is_empty),
            "field {index}: {data}"
        );
    }
    assert_eq!(data["formValid"], false, "{data}");
    assert_eq!(
        values().await,
        json!(["Ada Lovelace", "not-an-email", "fr", "", true, true, 0])
    );

    // Fixed and submitted: the page's submit handler saw every value.
    let submitted = setup
        .call(
            "fill_form",
            json!({"fields": [{"selector": "#email", "value": "ada@example.org"}], "submit": true}),
        )
        .await;
    assert_eq!(submitted.data()["submitted"], true, "{}", submitted.text);
    // requestSubmit() fires the submit event before it returns.
    assert_eq!(
        setup
            .evaluate(
                "form.html",
                "document.getElementById('submitted').textContent"
            )
            .await,
        format!(
            "Submitted: name=Ada Lovelace; email=ada@example.org; terms=on; plan=pro; \
             country=fr; token={TOKEN}"
        )
    );
    assert_eq!(setup.evaluate("form.html", "window.submissions").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn element_state_reads_hidden_inputs_and_redacts_passwords() {
    let setup = OneBrowser::on("Work", "login.html").await;

    setup
        .call(
            "type_text",
            json!({"selector": "#password", "text": "s3cret!"}),
        )
        .await
        .data();
    let password = setup
        .call("read_element_state", json!({"selector": "#password"}))
        .await;
    assert_eq!(
        element_state(&password)["value"],
        REDACTED,
        "{}",
        password.text
    );
    assert!(!password.structured.to_string().contains("s3cret!"));
    assert!(!password.text.contains("s3cret!"), "{}", password.text);
    // The page has the real value: only tabwire's report is redacted.
    assert_eq!(
        setup
            .evaluate("login.html", "document.getElementById('password').value")
            .await,
        "s3cret!"
    );

    setup
        .call(
            "type_text",
            json!({"selector": "#username", "text": "alice"}),
        )
        .await
        .data();
    setup.click("#remember").await.data();
    let username = setup
        .call(
            "read_element_state",
            json!({"selector": "#username", "attributes": ["name", "autocomplete"]}),
        )
        .await;
    let username_state = element_state(&username);
    assert_eq!(username_state["value"], "alice", "{}", username.text);
    assert_eq!(username_state["visible"], true);
    assert_eq!(username_state["attributes"]["name"], "username");
    assert_eq!(username_state["attributes"]["autocomplete"], "off");
    let remember = setup
        .call("read_element_state", json!({"selector": "#remember"}))
        .await;
    assert_eq!(
        element_state(&remember)["checked"],
        true,
        "{}",
        remember.text
    );

    // Hidden inputs are read too, and reported as not visible.
    setup
        .call(
            "navigate_and_wait",
            json!({"url": setup.fixtures.url("form.html")}),
        )
        .await
        .data();
    let token = setup
        .call(
            "read_element_state",
            json!({"selector": "#token", "maxChars": 20}),
        )
        .await;
    let token_state = element_state(&token);
    assert_eq!(token_state["visible"], false, "{}", token.text);
    assert_eq!(
        token_state["value"],
        TOKEN[..20],
        "bounded by maxChars: {}",
        token.text
    );
    assert_eq!(token_state["valueTruncated"], true, "{}", token.text);
    let whole = setup
        .call("read_element_state", json!({"selector": "#token"}))
        .await;
    assert_eq!(element_state(&whole)["value"], TOKEN, "{}", whole.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trusted_keys_and_text_reach_a_field_inside_a_cross_origin_frame() {
    let setup = OneBrowser::on("Work", "frames.html").await;
    let frame_id = tabwire_e2e::eventually(
        "the cross-origin frame to load",
        std::time::Duration::from_secs(15),
        || async {
            let reply = setup.call("list_frames", json!({})).await;
            reply.data()["frames"]
                .as_array()?
                .iter()
                .find(|f| f["url"].as_str().is_some_and(|u| u.contains("localhost")))
                .and_then(|f| f["frameId"].as_u64())
        },
    )
    .await;
    let inside = setup.snapshot(json!({ "frameId": frame_id })).await;
    let email = ref_of(&inside, "textbox \"Email\"");
    let send = ref_of(&inside, "button \"Send\"");

    // Trusted insertion, then trusted key events, into the other process's field.
    let typed = setup
        .call(
            "type_text",
            json!({"selector": email, "text": "bob@", "mode": "trusted"}),
        )
        .await;
    assert_eq!(typed.data()["value"], "bob@", "{}", typed.text);
    let keyed = setup
        .call(
            "type_text",
            json!({"selector": email, "text": "example.com", "inputMethod": "keys"}),
        )
        .await;
    assert_eq!(keyed.data()["value"], "bob@example.com", "{}", keyed.text);
    // The action's observation is of the frame it acted in.
    let pressed = setup
        .call("press_key", json!({"key": "Enter", "selector": send}))
        .await;
    assert!(
        pressed
            .text
            .contains("Sent bob@example.com from the cross frame (trusted: true)"),
        "{}",
        pressed.text
    );
}
