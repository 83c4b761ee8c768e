//! The walking skeleton, end to end: agent → tabwire-mcp → Unix socket → tabwire-hub →
//! `/browser` WebSocket → the wasm extension in headless Chromium → fixture pages.

use std::time::Duration;

use serde_json::{Value, json};
use tabwire_e2e::scenario::{
    CONNECT_LIMIT, OneBrowser, POPUP, connected_browser, popup_text, ref_of, tab_with,
};
use tabwire_e2e::{Browser, Fixtures, Hub, McpClient, eventually};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_on_a_fixture_page_with_trusted_input() {
    // Keep the whole cast alive for the test: each part stops its process when dropped.
    let setup = OneBrowser::on("Work", "login.html").await;
    let (fixtures, browser, client) = (&setup.fixtures, &setup.browser, &setup.client);
    let browsers = client.call("list_browsers", json!({})).await;
    assert_eq!(browsers.data()["browsers"].as_array().unwrap().len(), 1);
    assert!(
        browsers.text.contains("name=Work connected"),
        "{}",
        browsers.text
    );

    let tabs = client.call("list_tabs", json!({})).await;
    let tab = tab_with(&tabs, "/login.html");
    assert!(tabs.text.contains("\"Fixture login\""), "{}", tabs.text);

    let snapshot = client
        .call("get_page_snapshot", json!({"tabId": tab}))
        .await;
    let username = ref_of(&snapshot, "textbox \"Username\"");
    let password = ref_of(&snapshot, "\"Password\"");
    let submit = ref_of(&snapshot, "button \"Sign in\"");
    assert!(snapshot.text.contains("Not signed in"), "{}", snapshot.text);

    let typed = client
        .call(
            "type_text",
            json!({"selector": username, "text": "alice", "tabId": tab}),
        )
        .await;
    assert_eq!(typed.data()["value"], "alice");
    let typed = client
        .call(
            "type_text",
            json!({"selector": password, "text": "s3cret!", "tabId": tab}),
        )
        .await;
    assert_eq!(
        typed.data()["value"],
        tabwire_protocol::REDACTED,
        "password values are redacted"
    );
    assert!(!typed.structured.to_string().contains("s3cret!"));
    assert!(!typed.text.contains("s3cret!"), "{}", typed.text);

    let clicked = client
        .call("click_element", json!({"selector": submit, "tabId": tab}))
        .await;
    assert!(clicked.text.contains("Sign in"), "{}", clicked.text);

    let after = client
        .call("get_page_snapshot", json!({"tabId": tab}))
        .await;
    assert!(
        after
            .text
            .contains("Signed in as alice; password ok: true; trusted: true; clicks: 1"),
        "{}",
        after.text
    );
    // The field saw what a framework listens to, as from a keyboard: an input event per key,
    // and change once focus left it for the password.
    assert!(
        after.text.contains("Username events: input 5, change 1"),
        "{}",
        after.text
    );
    // The same elements keep their refs across snapshots of one document.
    assert_eq!(ref_of(&after, "button \"Sign in\""), submit);
    assert!(
        !after.text.contains("s3cret!"),
        "password leaked: {}",
        after.text
    );

    // Navigation loads a new document; refs from the old one are stale.
    let navigated = client
        .call(
            "navigate_to",
            json!({"url": fixtures.url("counter.html"), "tabId": tab}),
        )
        .await;
    assert_eq!(navigated.data()["title"], "Counter");
    let stale = client
        .call("click_element", json!({"selector": submit, "tabId": tab}))
        .await;
    assert_eq!(stale.error_code(), "STALE_REF");
    // Still stale once the new page has refs of its own: an old ref never names a new element.
    let counter = client
        .call("get_page_snapshot", json!({"tabId": tab}))
        .await;
    let increment = ref_of(&counter, "button \"Increment\"");
    for old in [&username, &password, &submit] {
        assert_ne!(&increment, old);
        let reply = client
            .call("click_element", json!({"selector": old, "tabId": tab}))
            .await;
        assert_eq!(reply.error_code(), "STALE_REF", "{old} after navigation");
    }
    let counter = client
        .call("get_page_snapshot", json!({"tabId": tab}))
        .await;
    assert!(counter.text.contains("Count: 0"), "{}", counter.text);

    // The popup shows the connection and the recent calls with their time and size.
    let popup = browser.open_tab(POPUP).await;
    let shown = popup_text(&popup, "the popup to list the calls", |text| {
        text.contains("click_element")
    })
    .await;
    for expected in [
        "Connected",
        "type_text",
        "get_page_snapshot",
        "navigate_to",
        "STALE_REF",
    ] {
        assert!(
            shown.contains(expected),
            "popup lacks {expected:?}:\n{shown}"
        );
    }
    let name = Browser::evaluate(&popup, "document.getElementById('browserName').value").await;
    assert_eq!(name, "Work");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_profiles_two_sessions_each_on_its_own_browser() {
    let fixtures = Fixtures::serve().await;
    let hub = Hub::spawn();
    let _work = Browser::launch(&hub, "Work", &fixtures.url("counter.html?profile=work"));
    let _personal = Browser::launch(
        &hub,
        "Personal",
        &fixtures.url("counter.html?profile=personal"),
    );
    let agent_a = McpClient::connect(&hub).await;
    let agent_b = McpClient::connect(&hub).await;
    let work = connected_browser(&agent_a, "Work").await;
    let personal = connected_browser(&agent_a, "Personal").await;

    // Two browsers and no selection: browser tools refuse and list both.
    let refused = agent_a.call("list_tabs", json!({})).await;
    assert_eq!(refused.error_code(), "BROWSER_NOT_SELECTED");
    let candidates = refused.error()["candidates"].as_array().unwrap();
    let mut names: Vec<_> = candidates
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["Personal", "Work"]);
    assert!(refused.text.contains(&work) && refused.text.contains(&personal));

    agent_a
        .call("select_browser", json!({"browserId": work}))
        .await
        .data();
    agent_b
        .call("select_browser", json!({"browserId": personal}))
        .await
        .data();
    let listed = agent_a.call("list_browsers", json!({})).await;
    let selected: Vec<_> = listed.data()["browsers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["selected"] == true)
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(selected, ["Work"], "selection is per session");

    let tabs_a = agent_a.call("list_tabs", json!({})).await;
    let tabs_b = agent_b.call("list_tabs", json!({})).await;
    assert!(tabs_a.text.contains("profile=work") && !tabs_a.text.contains("profile=personal"));
    assert!(tabs_b.text.contains("profile=personal") && !tabs_b.text.contains("profile=work"));

    // Agent A clicks in its browser; agent B's page is untouched.
    agent_a
        .call("click_element", json!({"selector": "#increment"}))
        .await
        .data();
    let page_a = agent_a.call("get_page_snapshot", json!({})).await;
    let page_b = agent_b.call("get_page_snapshot", json!({})).await;
    assert!(page_a.text.contains("Count: 1"), "{}", page_a.text);
    assert!(page_b.text.contains("Count: 0"), "{}", page_b.text);

    // An explicit browserId routes one call without changing the session's selection.
    let explicit = agent_a
        .call("list_tabs", json!({"browserId": personal}))
        .await;
    assert!(
        explicit.text.contains("profile=personal"),
        "{}",
        explicit.text
    );
    let still_a = agent_a.call("list_tabs", json!({})).await;
    assert!(still_a.text.contains("profile=work"), "{}", still_a.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_browser_fails_calls_and_never_falls_back() {
    let fixtures = Fixtures::serve().await;
    let hub = Hub::spawn();
    let mut work = Browser::launch(&hub, "Work", &fixtures.url("blank.html"));
    let _personal = Browser::launch(&hub, "Personal", &fixtures.url("counter.html"));
    let client = McpClient::connect(&hub).await;
    let work_id = connected_browser(&client, "Work").await;
    connected_browser(&client, "Personal").await;
    client
        .call("select_browser", json!({"browserId": work_id}))
        .await
        .data();

    // A navigation that will still be loading when the browser dies.
    let slow_url = fixtures.url("slow?ms=20000");
    let in_flight = {
        let client = &client;
        async move { client.call("navigate_to", json!({"url": slow_url})).await }
    };
    let killer = async {
        eventually(
            "the slow page to be requested",
            Duration::from_secs(10),
            || async { (fixtures.slow_hits() > 0).then_some(()) },
        )
        .await;
        let killed_at = tokio::time::Instant::now();
        work.kill();
        killed_at
    };
    let (failed, killed_at) = tokio::join!(in_flight, killer);
    assert_eq!(failed.error_code(), "BROWSER_DISCONNECTED");
    assert_eq!(failed.error()["actionMayHaveOccurred"], true);
    assert!(
        killed_at.elapsed() < Duration::from_secs(10),
        "pending requests fail at once, not at their deadline"
    );

    // Later calls fail too; the other browser is never used instead.
    let after = client.call("list_tabs", json!({})).await;
    assert_eq!(after.error_code(), "BROWSER_DISCONNECTED");
    let listed = client.call("list_browsers", json!({})).await;
    assert!(
        listed.text.contains("name=Work disconnected selected"),
        "{}",
        listed.text
    );
    assert!(
        listed.text.contains("name=Personal connected"),
        "{}",
        listed.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hub_restart_under_a_running_shim_restores_the_session_without_replay() {
    let fixtures = Fixtures::serve().await;
    let mut hub = Hub::spawn();
    let work = Browser::launch(&hub, "Work", &fixtures.url("counter.html"));
    work.open_tab(&fixtures.url("blank.html")).await;
    let _personal = Browser::launch(&hub, "Personal", &fixtures.url("blank.html"));
    let client = McpClient::connect(&hub).await;
    let work_id = connected_browser(&client, "Work").await;
    connected_browser(&client, "Personal").await;
    client
        .call("select_browser", json!({"browserId": work_id}))
        .await
        .data();
    let tabs = client.call("list_tabs", json!({})).await;
    let counter_tab = tab_with(&tabs, "counter.html");
    let blank_tab = tab_with(&tabs, "blank.html");
    client
        .call(
            "click_element",
            json!({"selector": "#increment", "tabId": counter_tab}),
        )
        .await
        .data();

    // A navigation is in flight when the hub dies: the client learns its outcome is unknown.
    let slow_url = fixtures.url("slow?ms=8000");
    let in_flight = {
        let client = &client;
        async move {
            client
                .try_call("navigate_to", json!({"url": slow_url, "tabId": blank_tab}))
                .await
        }
    };
    let crash = async {
        eventually(
            "the slow page to be requested",
            Duration::from_secs(10),
            || async { (fixtures.slow_hits() > 0).then_some(()) },
        )
        .await;
        hub.kill();
    };
    let (outcome, ()) = tokio::join!(in_flight, crash);
    let error = outcome.expect_err("the in-flight call cannot succeed once the hub is gone");
    assert!(
        error.to_string().contains("outcome is unknown"),
        "unexpected error: {error}"
    );

    hub.restart();
    // The same MCP client keeps working: the shim reconnects and the hub restores the session's
    // selection. Until Work is back its calls say it is disconnected: never "not found", never
    // "not selected", never another browser's tabs.
    eventually("both browsers to return", CONNECT_LIMIT, || async {
        let tabs = client.call("list_tabs", json!({})).await;
        if tabs.is_error {
            assert_eq!(tabs.error_code(), "BROWSER_DISCONNECTED", "{}", tabs.text);
        } else {
            assert!(tabs.text.contains("counter.html"), "{}", tabs.text);
        }
        let listed = client.call("list_browsers", json!({})).await;
        let browsers = listed.data()["browsers"].as_array()?.clone();
        let connected = browsers.iter().filter(|b| b["connected"] == true).count();
        (connected == 2).then_some(())
    })
    .await;
    let listed = client.call("list_browsers", json!({})).await;
    assert!(
        listed.text.contains("name=Work connected selected"),
        "{}",
        listed.text
    );

    // Nothing was replayed: one click, one request for the slow page.
    let page = client
        .call("get_page_snapshot", json!({"tabId": counter_tab}))
        .await;
    assert!(page.text.contains("Count: 1"), "{}", page.text);
    client
        .call(
            "click_element",
            json!({"selector": "#increment", "tabId": counter_tab}),
        )
        .await
        .data();
    let page = client
        .call("get_page_snapshot", json!({"tabId": counter_tab}))
        .await;
    assert!(page.text.contains("Count: 2"), "{}", page.text);
    assert_eq!(fixtures.slow_hits(), 1, "the navigation was not replayed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_stays_connected_through_a_long_idle_period() {
    let setup = OneBrowser::on("Idle", "blank.html").await;
    let client = &setup.client;

    // Chrome stops an idle MV3 service worker after ~30 s; only the hub's heartbeat keeps it.
    tokio::time::sleep(Duration::from_secs(70)).await;

    let listed = client.call("list_browsers", json!({})).await;
    let browser = &listed.data()["browsers"][0];
    assert_eq!(browser["connected"], true);
    assert!(
        browser["connectedForSecs"].as_u64().unwrap() >= 70,
        "the connection was re-established instead of kept: {browser}"
    );
    let tabs = client.call("list_tabs", json!({})).await;
    assert!(tabs.text.contains("blank.html"), "{}", tabs.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_refused_before_reaching_the_browser() {
    let setup = OneBrowser::on("Work", "login.html").await;
    let client = &setup.client;

    let unknown = client
        .call(
            "type_text",
            json!({"selector": "#username", "text": "mallory", "bogus": true}),
        )
        .await;
    assert_eq!(unknown.error_code(), "INVALID_ARGUMENT");
    assert_eq!(unknown.error()["category"], "INPUT");
    assert!(unknown.text.contains("bogus"), "{}", unknown.text);

    let playwright = client
        .call(
            "click_element",
            json!({"selector": "button:has-text(\"Sign in\")"}),
        )
        .await;
    assert_eq!(playwright.error_code(), "INVALID_SELECTOR");

    let missing = client.call("navigate_to", json!({})).await;
    assert_eq!(missing.error_code(), "INVALID_ARGUMENT");
    let scheme = client
        .call("navigate_to", json!({"url": "javascript:alert(1)"}))
        .await;
    assert_eq!(scheme.error_code(), "INVALID_ARGUMENT");

    // Nothing reached the page: the field is still empty and still on the same document.
    let snapshot = client.call("get_page_snapshot", json!({})).await;
    let line = snapshot
        .text
        .lines()
        .find(|line| line.contains("textbox \"Username\""))
        .unwrap();
    assert!(!line.contains('='), "the field was changed: {line}");
    assert!(!snapshot.text.contains("mallory"));

    // A CSS selector that matches several elements is refused by the page, not guessed.
    let ambiguous = client
        .call("click_element", json!({"selector": "input"}))
        .await;
    assert_eq!(ambiguous.error_code(), "SELECTOR_NOT_UNIQUE");
    // A missing element is looked for until the deadline (it may still render): a short one.
    let absent = client
        .call(
            "click_element",
            json!({"selector": "#nope", "timeoutMs": 1000}),
        )
        .await;
    assert_eq!(absent.error_code(), "SELECTOR_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_with_strict_schemas() {
    let hub = Hub::spawn();
    let client = McpClient::connect(&hub).await;
    let tools = client.list_tools().await;
    let mut names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "click_and_wait",
            "click_element",
            "close_tab",
            "create_tab",
            "doctor",
            "drag_element",
            "fill_form",
            "get_active_tab",
            "get_downloads",
            "get_page_content",
            "get_page_snapshot",
            "get_selected_text",
            "get_tab_health",
            "go_back",
            "go_forward",
            "handle_dialog",
            "hover_element",
            "list_browsers",
            "list_frames",
            "list_tabs",
            "navigate_and_wait",
            "navigate_to",
            "press_key",
            "read_element_state",
            "release_tab",
            "reload_tab",
            "request_human",
            "run_browser_actions",
            "save_pdf",
            "scroll_page",
            "select_browser",
            "select_option",
            "show_tools",
            "switch_tab",
            "take_screenshot",
            "type_text",
            "upload_file",
            "wait_for"
        ]
    );
    for tool in &tools {
        assert_eq!(
            tool.input_schema.get("additionalProperties"),
            Some(&Value::Bool(false)),
            "{}",
            tool.name
        );
    }
    // Capture and storage tools are listed on request, and callable by name either way.
    let unlisted = client.call("get_cookies", json!({})).await;
    assert_eq!(unlisted.error_code(), "BROWSER_NOT_FOUND");
    let shown = client
        .call("show_tools", json!({"groups": ["storage", "console"]}))
        .await;
    assert!(shown.text.contains("get_cookies"), "{}", shown.text);
    let heard = || {
        client
            .heard()
            .tool_list_changed
            .load(std::sync::atomic::Ordering::SeqCst)
    };
    eventually(
        "the client to hear that its tool list changed",
        Duration::from_secs(5),
        || async { (heard() > 0).then_some(()) },
    )
    .await;
    let listed: Vec<_> = client
        .list_tools()
        .await
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    for name in ["get_cookies", "get_local_storage", "get_console_logs"] {
        assert!(listed.contains(&name.to_owned()), "{name} not listed");
    }
    assert!(!listed.contains(&"get_response_body".to_owned()));
    let bad = client
        .call("show_tools", json!({"groups": ["files"]}))
        .await;
    assert_eq!(bad.error_code(), "INVALID_ARGUMENT");
    // Another session's listing is its own.
    let other = McpClient::connect(&hub).await;
    assert!(
        !other
            .list_tools()
            .await
            .iter()
            .any(|t| t.name == "get_cookies")
    );
    // With no browser connected, a browser tool explains how to connect one.
    let none = client.call("list_tabs", json!({})).await;
    assert_eq!(none.error_code(), "BROWSER_NOT_FOUND");
    assert!(none.text.contains(&hub.browser_url()), "{}", none.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn popup_shows_why_the_hub_refused_the_extension() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    // A stand-in hub that speaks a newer protocol: it refuses every hello, as the real hub
    // does for a version mismatch (the real extension cannot be made to speak another version).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let refusal = tabwire_protocol::HubMessage::Refused(
        tabwire_protocol::Refusal::protocol_mismatch(tabwire_protocol::PROTOCOL_VERSION - 1),
    );
    let refusal_text = serde_json::to_string(&refusal).unwrap();
    let stand_in = tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let mut socket = tokio_tungstenite::accept_async(stream).await.unwrap();
            // A local hub is first sent a challenge, which carries the protocol version.
            let first = socket.next().await.unwrap().unwrap();
            assert!(first.to_text().unwrap().contains("\"type\":\"challenge\""));
            socket
                .send(Message::Text(refusal_text.clone().into()))
                .await
                .unwrap();
            let _ = socket.close(None).await;
        }
    });

    let fixtures = Fixtures::serve().await;
    let browser = Browser::launch_with_server(
        &format!("ws://{addr}/browser"),
        "Work",
        &fixtures.url("blank.html"),
    );
    let popup = browser.open_tab(POPUP).await;
    // The stand-in has not proved itself, so the popup says what the refusal's code means in
    // tabwire's words, not the stand-in's.
    let shown = popup_text(&popup, "the popup to show the refusal", |text| {
        text.contains("speaks another protocol version")
    })
    .await;
    assert!(
        shown.contains("update tabwire-hub or the extension"),
        "{shown}"
    );
    stand_in.abort();
}
