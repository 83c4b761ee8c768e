//! Typing that widgets notice (docs/actions.md, `type_text`): the default types trusted keys,
//! so a keyup-driven autocomplete and a keydown-driven combobox that ignores synthetic events
//! both react, driven the way an agent drives them — a snapshot, the field by role and name,
//! `type_text` with no mode, the option by its ref. The explicit modes keep their meaning, and
//! `fill_form` types its text fields the same way.
//!
//! What each field heard is read from the page through DevTools, so a test cannot pass on what
//! a tool says it did.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tabwire_e2e::scenario::{OneBrowser, active_tabs, element_state, ref_of, tab_with};
use tabwire_protocol::REDACTED;

/// What the field with this ID heard on typing.html: `{keydown, keyup, untrusted}`.
async fn heard(setup: &OneBrowser, id: &str) -> Value {
    setup
        .evaluate("typing.html", &format!("window.heard['{id}']"))
        .await
}

/// The value (a contenteditable region's text) of the field with this ID on typing.html.
async fn value(setup: &OneBrowser, id: &str) -> Value {
    let expression = format!(
        "(() => {{ const el = document.getElementById('{id}'); \
         return el.isContentEditable ? el.innerText : el.value; }})()"
    );
    setup.evaluate("typing.html", &expression).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_typing_opens_a_keyup_autocomplete_and_its_option_is_clicked_by_ref() {
    let setup = OneBrowser::on("Work", "autocomplete.html").await;
    let list_hidden = || {
        setup.evaluate(
            "autocomplete.html",
            "document.getElementById('state-list').hidden",
        )
    };
    let page = setup.snapshot(json!({})).await;
    let state = ref_of(&page, "combobox \"State\"");

    // The fixture needs keys: the value set natively, as the old default did, opens nothing.
    let native = setup
        .call(
            "type_text",
            json!({"selector": state, "text": "Co", "mode": "native"}),
        )
        .await;
    assert_eq!(native.data()["value"], "Co", "{}", native.text);
    assert_eq!(list_hidden().await, true, "no keyup, no list");

    // The default, no mode given: keys, as a person types them.
    let typed = setup
        .call(
            "type_text",
            json!({"selector": state, "text": "Co", "clear": true}),
        )
        .await;
    assert_eq!(typed.data()["value"], "Co", "{}", typed.text);
    assert_eq!(list_hidden().await, false, "the keyups opened the list");
    // The action's own observation shows the options it opened, as does a fresh snapshot.
    assert!(typed.text.contains("option \"Colorado\""), "{}", typed.text);
    let listed = setup.snapshot(json!({})).await;
    assert!(
        listed.text.contains("option \"Colorado\""),
        "{}",
        listed.text
    );
    assert!(
        !listed.text.contains("option \"California\""),
        "{}",
        listed.text
    );
    let connecticut = ref_of(&listed, "option \"Connecticut\"");
    setup.click(&connecticut).await.data();

    let field = setup
        .call("read_element_state", json!({"selector": state}))
        .await;
    assert_eq!(
        element_state(&field)["value"],
        "Connecticut",
        "{}",
        field.text
    );
    let log = || {
        setup.evaluate(
            "autocomplete.html",
            "[document.getElementById('state-log').textContent, window.heard.stateKeyups]",
        )
    };
    assert_eq!(
        log().await,
        json!(["State: Connecticut", 2]),
        "one keyup per typed character, none from the native setter"
    );

    // A batch's type step types the same way; the list it opens offers "New York".
    let batch = setup
        .call(
            "run_browser_actions",
            json!({"steps": [
                {"kind": "type", "selector": state, "text": "New Y", "clear": true},
                {"kind": "selectOption", "text": "New York"},
            ]}),
        )
        .await;
    batch.data();
    assert_eq!(log().await, json!(["State: New York", 7]), "{}", batch.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_typing_drives_a_keydown_combobox_in_a_background_tab() {
    let setup = OneBrowser::on("Work", "autocomplete.html").await;
    let tab = tab_with(
        &setup.call("list_tabs", json!({})).await,
        "autocomplete.html",
    );
    // Another tab comes to the front; the combobox's tab stays behind it.
    setup.open_tab("blank.html").await;
    let in_front = || async { active_tabs(&setup.call("list_tabs", json!({})).await) };
    assert!(
        !in_front().await.contains(&tab),
        "the fixture's tab is behind"
    );

    let page = setup.snapshot(json!({"tabId": tab})).await;
    let city = ref_of(&page, "combobox \"City\"");
    let heard = || {
        setup.evaluate(
            "autocomplete.html",
            "[document.getElementById('city').value, window.heard.cityKeydowns, \
             window.heard.untrusted, document.getElementById('city-list').hidden]",
        )
    };

    // Natively set, the value reaches the field but the combobox hears no key.
    setup
        .call(
            "type_text",
            json!({"tabId": tab, "selector": city, "text": "Bo", "mode": "native"}),
        )
        .await
        .data();
    assert_eq!(heard().await, json!(["Bo", 0, 0, true]));

    // The default types trusted keys, which the combobox takes.
    let typed = setup
        .call(
            "type_text",
            json!({"tabId": tab, "selector": city, "text": "Bo", "clear": true}),
        )
        .await;
    assert_eq!(typed.data()["value"], "Bo", "{}", typed.text);
    // The combobox filters on a timer after the key, and a background tab's timers run late:
    // wait for the list as an agent would.
    setup
        .call(
            "wait_for",
            json!({"tabId": tab, "text": "Boston", "timeoutMs": 5000}),
        )
        .await
        .data();
    let listed = setup.snapshot(json!({"tabId": tab})).await;
    assert!(listed.text.contains("option \"Boise\""), "{}", listed.text);
    assert!(listed.text.contains("option \"Boston\""), "{}", listed.text);
    assert!(
        !listed.text.contains("option \"Buffalo\""),
        "{}",
        listed.text
    );

    // Its own keyboard handling: down twice to the second option, Enter chooses it.
    for key in ["ArrowDown", "ArrowDown", "Enter"] {
        setup
            .call(
                "press_key",
                json!({"tabId": tab, "key": key, "observe": false}),
            )
            .await
            .data();
    }
    assert_eq!(heard().await, json!(["Boston", 5, 0, true]));
    assert!(
        !in_front().await.contains(&tab),
        "typing left the tab in the background"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_typing_replaces_redacts_and_types_every_kind_of_field() {
    let setup = OneBrowser::on("Work", "typing.html").await;
    let type_text = |args: Value| setup.call("type_text", args);
    let value_of = |id: &'static str| value(&setup, id);
    let page = setup.snapshot(json!({})).await;
    let probe = ref_of(&page, "textbox \"Probe\"");
    let quantity = ref_of(&page, "\"Quantity\"");
    let contact = ref_of(&page, "textbox \"Contact email\"");
    let message = ref_of(&page, "textbox \"Message\"");
    let notes = ref_of(&page, "textbox \"Notes\"");
    let pin = ref_of(&page, "\"Password\"");

    // A key down and up per character, trusted.
    let typed = type_text(json!({"selector": probe, "text": "abc"})).await;
    assert_eq!(typed.data()["value"], "abc", "{}", typed.text);
    assert_eq!(
        heard(&setup, "probe").await,
        json!({"keydown": 3, "keyup": 3, "untrusted": 0})
    );
    // Appends; a line break cannot be in a one-line field (nor press Enter there).
    type_text(json!({"selector": probe, "text": "d\ne"}))
        .await
        .data();
    assert_eq!(value_of("probe").await, "abcde");
    // A text over 100 characters goes in at once, its last character as a key.
    let long: String = "0123456789".repeat(15);
    let replaced = type_text(json!({"selector": probe, "text": long, "clear": true})).await;
    assert_eq!(replaced.data()["value"], long.as_str());
    assert_eq!(heard(&setup, "probe").await["keydown"], 6);

    // clear replaces in a number and an email field, whose carets have no API.
    type_text(json!({"selector": quantity, "text": "42", "clear": true}))
        .await
        .data();
    assert_eq!(value_of("quantity").await, "42");
    type_text(json!({"selector": contact, "text": "new@example.org", "clear": true}))
        .await
        .data();
    assert_eq!(value_of("contact").await, "new@example.org");
    // Clearing with no text empties the field.
    type_text(json!({"selector": contact, "text": "", "clear": true}))
        .await
        .data();
    assert_eq!(value_of("contact").await, "");

    // Line breaks stay in a text area, and a contenteditable region takes keys too.
    type_text(json!({"selector": message, "text": "line one\nline two"}))
        .await
        .data();
    assert_eq!(value_of("message").await, "line one\nline two");
    let noted = type_text(json!({"selector": notes, "text": "Hello notes"})).await;
    assert_eq!(noted.data()["value"], "Hello notes", "{}", noted.text);
    assert_eq!(value_of("notes").await, "Hello notes");
    assert_eq!(heard(&setup, "notes").await["keydown"], 11);

    // A password is typed key by key, and its value never leaves the page.
    let secret = type_text(json!({"selector": pin, "text": "s3cret!"})).await;
    assert_eq!(secret.data()["value"], REDACTED, "{}", secret.text);
    assert!(!secret.structured.to_string().contains("s3cret!"));
    assert!(!secret.text.contains("s3cret!"), "{}", secret.text);
    assert_eq!(value_of("pin").await, "s3cret!");
    assert_eq!(heard(&setup, "pin").await["keydown"], 7);

    // A field that cannot take the focus is set natively: keys would reach another field.
    let stashed = type_text(json!({"selector": "#stash", "text": "kept"})).await;
    assert_eq!(stashed.data()["value"], "kept", "{}", stashed.text);
    assert!(
        stashed
            .text
            .contains("set natively: it cannot take the focus"),
        "{}",
        stashed.text
    );
    assert_eq!(
        value_of("pin").await,
        "s3cret!",
        "the focused field got no keys"
    );

    // The explicit modes keep their meaning: native and trusted insertion press no key,
    // inputMethod keys presses one per character.
    for (mode, keys) in [
        (json!({"mode": "native"}), 0),
        (json!({"mode": "trusted"}), 0),
        (json!({"inputMethod": "keys"}), 4),
    ] {
        let before = heard(&setup, "probe").await["keydown"].as_u64().unwrap();
        let mut args = json!({"selector": probe, "text": "wxyz", "clear": true});
        args.as_object_mut()
            .unwrap()
            .extend(mode.as_object().unwrap().clone());
        let reply = type_text(args).await;
        assert_eq!(reply.data()["value"], "wxyz", "{mode}: {}", reply.text);
        let after = heard(&setup, "probe").await["keydown"].as_u64().unwrap();
        assert_eq!(after - before, keys, "{mode}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fill_form_types_its_text_fields_so_keyup_validation_passes() {
    let setup = OneBrowser::on("Work", "typing.html").await;
    let page = setup.snapshot(json!({})).await;
    let name = ref_of(&page, "textbox \"Full name\"");
    let mail = ref_of(&page, "textbox \"Email\"");
    let country = ref_of(&page, "\"Country\"");
    let terms = ref_of(&page, "checkbox \"I accept the terms\"");
    let create = ref_of(&page, "button \"Create account\"");
    let disabled = || async {
        let state = setup
            .call("read_element_state", json!({"selector": create}))
            .await;
        element_state(&state)["disabled"].clone()
    };

    // The fixture validates on keyup: every field set without keys leaves the button off.
    for (field, text) in [(&name, "Ada"), (&mail, "ada@example.org")] {
        setup
            .call(
                "type_text",
                json!({"selector": field, "text": text, "mode": "native"}),
            )
            .await
            .data();
    }
    setup
        .call(
            "select_option",
            json!({"selector": country, "text": "Japan"}),
        )
        .await
        .data();
    setup.click(&terms).await.data();
    assert_eq!(disabled().await, true, "no keys, no validation");

    // fill_form types text as type_text does: the form hears the keys.
    let filled = setup
        .call(
            "fill_form",
            json!({"fields": [
                {"selector": name, "value": "Ada Lovelace"},
                {"selector": mail, "value": "ada@example.org"},
                {"selector": country, "value": "France"},
                {"selector": terms, "value": true},
                // Not rendered: set in the page, as type_text would set it.
                {"selector": "#referral", "value": "friend"},
            ]}),
        )
        .await;
    let data = filled.data();
    let values: Vec<&Value> = data["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["value"])
        .collect();
    assert_eq!(
        values,
        [
            &json!("Ada Lovelace"),
            &json!("ada@example.org"),
            &json!("fr"),
            &json!(true),
            &json!("friend")
        ],
        "{data}"
    );
    assert_eq!(heard(&setup, "name").await["keydown"], 12);
    assert_eq!(heard(&setup, "name").await["untrusted"], 0);
    assert_eq!(heard(&setup, "referral").await["keydown"], 0);
    assert_eq!(disabled().await, false, "the keyup validation passed");
    setup.click(&create).await.data();
    assert_eq!(
        setup
            .evaluate(
                "typing.html",
                "document.getElementById('created').textContent"
            )
            .await,
        "Created account for Ada Lovelace <ada@example.org> in fr"
    );
}

/// The figure for docs/actions.md: what each way of typing costs, end to end through MCP (no
/// observation), for a short and a long text. Printed, not asserted: timings depend on the
/// machine. Run with `--nocapture` to read them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_costs_by_mode() {
    let setup = OneBrowser::on("Work", "typing.html").await;
    // Warm up: the debugger attached, the collector injected.
    setup
        .call(
            "type_text",
            json!({"selector": "#probe", "text": "x", "observe": false}),
        )
        .await
        .data();
    const RUNS: usize = 9;
    let modes = [
        ("default", json!({})),
        ("native", json!({"mode": "native"})),
        ("trusted insert", json!({"mode": "trusted"})),
        ("trusted keys", json!({"inputMethod": "keys"})),
    ];
    for len in [10usize, 200] {
        let text = "abcdefghij".repeat(len / 10);
        // The modes take turns, so a slow moment of the machine is shared among them.
        let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(RUNS); modes.len()];
        for _ in 0..RUNS {
            for ((name, mode), times) in modes.iter().zip(&mut times) {
                let mut args =
                    json!({"selector": "#probe", "text": text, "clear": true, "observe": false});
                args.as_object_mut()
                    .unwrap()
                    .extend(mode.as_object().unwrap().clone());
                let started = Instant::now();
                let reply = setup.call("type_text", args).await;
                times.push(started.elapsed());
                assert_eq!(reply.data()["value"], text.as_str(), "{name}");
            }
        }
        for ((name, _), times) in modes.iter().zip(&mut times) {
            times.sort();
            let ms = |d: Duration| d.as_secs_f64() * 1000.0;
            println!(
                "type_text {len:>3} chars, {name:<14}: median {:>6.1} ms (min {:.1}, max {:.1})",
                ms(times[RUNS / 2]),
                ms(times[0]),
                ms(times[RUNS - 1]),
            );
        }
    }
    // The page heard what each mode types: 1 warm-up key; at 10 characters, a key each for
    // the default and for keys; at 200, the default's one last key and 200 for keys.
    let expected = 1 + RUNS * (10 + 10) + RUNS * (1 + 200);
    assert_eq!(heard(&setup, "probe").await["keydown"], expected);
}
