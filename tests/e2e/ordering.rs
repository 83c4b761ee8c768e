//! When actions happen, end to end in real Chromium (docs/actions.md): waits, navigation
//! waits, batches (preflight, stopping at a failed step), per-tab queues that let other tabs go
//! on, and deadlines that are kept: an operation queued past its deadline never starts, and a
//! click given up at its deadline never lands later.
//!
//! No assertion depends on timing figures: order is shown by which call finished first, and
//! "never happened" by counters the fixture pages keep.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::json;
use tabwire_e2e::eventually;
use tabwire_e2e::scenario::{CONNECT_LIMIT, OneBrowser, tab_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_for_text_urls_network_idle_and_navigations() {
    let setup = OneBrowser::on("Work", "waits.html").await;
    let page = |expression: &'static str| setup.evaluate("waits.html", expression);

    // An element appears later: the wait answers with its line and a ref to act on.
    setup.quiet_click("#show").await.data();
    let shown = setup
        .call("wait_for", json!({"selector": "#arrived"}))
        .await;
    let element = &shown.data()["element"];
    assert!(
        element["text"]
            .as_str()
            .is_some_and(|t| t.contains("Message arrived")),
        "{}",
        shown.structured
    );
    let element_ref = element["ref"].as_str().expect("a ref").to_owned();
    assert!(shown.text.contains(&element_ref), "{}", shown.text);
    assert_eq!(page("!!document.getElementById('arrived')").await, true);
    let state = setup
        .call("read_element_state", json!({"selector": element_ref}))
        .await;
    assert_eq!(state.data()["state"]["visible"], true, "{}", state.text);
    // Text: the line holding it, with its ref (the same element's: one ref per element).
    let text = setup
        .call("wait_for", json!({"text": "Message  arrived"}))
        .await;
    assert_eq!(
        text.data()["element"]["ref"],
        element_ref.as_str(),
        "{}",
        text.structured
    );
    assert!(text.text.contains("Message arrived"), "{}", text.text);
    // ...and "Loading…" went away at the same moment: nothing to show for it.
    let gone = setup
        .call("wait_for", json!({"text": "Loading…", "gone": true}))
        .await;
    assert!(gone.data()["element"].is_null(), "{}", gone.structured);
    assert_eq!(page("!!document.getElementById('loading')").await, false);
    let never = setup
        .call(
            "wait_for",
            json!({"text": "This never appears", "timeoutMs": 500}),
        )
        .await;
    assert_eq!(never.error_code(), "WAIT_TIMEOUT");
    // One thing at a time, and gone only where it means something.
    for bad in [
        json!({"text": "Message arrived", "url": "step=2"}),
        json!({"networkIdle": true, "gone": true}),
        json!({}),
    ] {
        let refused = setup.call("wait_for", bad.clone()).await;
        assert_eq!(
            refused.error_code(),
            "INVALID_ARGUMENT",
            "{bad}: {}",
            refused.text
        );
    }

    // The URL changes later without a navigation (pushState); the answer says which URL.
    setup.quiet_click("#push").await.data();
    let moved = setup
        .call("wait_for", json!({"url": "*waits.html?step=2"}))
        .await;
    assert!(
        moved.data()["url"]
            .as_str()
            .is_some_and(|u| u.ends_with("?step=2")),
        "{}",
        moved.structured
    );
    assert_eq!(page("location.search").await, "?step=2");
    let other = setup
        .call("wait_for", json!({"url": "step=3", "timeoutMs": 500}))
        .await;
    assert_eq!(other.error_code(), "WAIT_TIMEOUT");
    let still = setup
        .call(
            "wait_for",
            json!({"url": "step=2", "gone": true, "timeoutMs": 500}),
        )
        .await;
    assert_eq!(still.error_code(), "WAIT_TIMEOUT", "{}", still.text);
    let left = setup
        .call("wait_for", json!({"url": "step=3", "gone": true}))
        .await;
    assert!(!left.is_error, "{}", left.text);

    // A request started before the wait (by the click) counts: idle only once it finished.
    setup.quiet_click("#fetch").await.data();
    setup
        .call("wait_for", json!({"networkIdle": 500}))
        .await
        .data();
    assert_eq!(page("waits.fetched").await, true);
    assert_eq!(setup.fixtures.slow_hits(), 1);

    // click_and_wait without a navigation: waits for its selector, which appears later.
    let stayed = setup
        .call(
            "click_and_wait",
            json!({"selector": "#reveal", "waitFor": "#revealed"}),
        )
        .await;
    assert_eq!(stayed.data()["navigated"], false, "{}", stayed.text);
    assert_eq!(page("!!document.getElementById('revealed')").await, true);

    // navigate_and_wait: the load state, then the element that appears later.
    let url = setup.fixtures.url("waits.html?ready=800");
    let loaded = setup
        .call(
            "navigate_and_wait",
            json!({"url": url, "waitUntil": "domcontentloaded", "waitFor": "#ready"}),
        )
        .await;
    // The URL is said once: in the observation (the data's own `url` only after a redirect).
    assert!(
        loaded.data()["observation"]["url"]
            .as_str()
            .is_some_and(|text| text.contains("ready=800")),
        "{}",
        loaded.structured
    );
    assert!(
        loaded.text.contains("Ready to go"),
        "the observation was taken after the wait: {}",
        loaded.text
    );
    assert_eq!(page("!!document.getElementById('ready')").await, true);

    // click_and_wait with a navigation: it waits for the new page and its selector.
    let moved = setup
        .call(
            "click_and_wait",
            json!({"selector": "#next", "waitFor": "#increment"}),
        )
        .await;
    let data = moved.data();
    assert_eq!(data["navigated"], true, "{data}");
    assert!(
        data["observation"]["url"]
            .as_str()
            .is_some_and(|text| text.contains("counter.html")),
        "{data}"
    );
    assert_eq!(
        setup
            .evaluate("counter.html", "!!document.getElementById('increment')")
            .await,
        true
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_runs_its_steps_in_order_and_returns_each_result() {
    let setup = OneBrowser::on("Work", "login.html").await;

    let batch = setup
        .call(
            "run_browser_actions",
            json!({"steps": [
                {"kind": "type", "selector": "#username", "text": "alice"},
                {"kind": "type", "selector": "#password", "text": "s3cret!"},
                {"kind": "click", "selector": "#remember"},
                {"kind": "click", "selector": "#submit"},
                {"kind": "waitFor", "text": "Signed in as alice"},
                {"kind": "content", "selector": "#result"},
            ]}),
        )
        .await;
    let data = batch.data();
    let steps = data["steps"].as_array().expect("one result per step");
    assert_eq!(steps.len(), 6, "{data}");
    // The waitFor step is wait_for: what appeared, with its ref.
    assert!(
        steps[4]["element"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Signed in as alice")),
        "{}",
        steps[4]
    );
    let expected = "Signed in as alice; password ok: true; trusted: true; clicks: 1; \
                    remember me: true";
    assert!(
        steps[5].to_string().contains(expected),
        "the content step read the result: {}",
        steps[5]
    );
    assert!(
        data["observation"].is_object(),
        "one observation at the end"
    );
    assert!(!batch.structured.to_string().contains("s3cret!"));
    assert!(!batch.text.contains("s3cret!"), "{}", batch.text);
    assert_eq!(
        setup
            .evaluate(
                "login.html",
                "document.getElementById('result').textContent"
            )
            .await,
        expected
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_whose_third_step_has_a_bad_selector_changes_nothing() {
    let setup = OneBrowser::on("Work", "login.html").await;
    let page = || {
        setup.evaluate(
            "login.html",
            "[document.getElementById('username').value, \
             document.getElementById('result').textContent, clicks]",
        )
    };
    let before = page().await;
    assert_eq!(before, json!(["", "Not signed in", 0]));

    for bad in ["div[", "text=Sign in"] {
        let refused = setup
            .call(
                "run_browser_actions",
                json!({"steps": [
                    {"kind": "type", "selector": "#username", "text": "mallory"},
                    {"kind": "click", "selector": "#submit"},
                    {"kind": "click", "selector": bad},
                ]}),
            )
            .await;
        let error = refused.error();
        assert_eq!(error["phase"], "preflight", "{bad}: {error}");
        assert_eq!(error["failedStep"], 2, "{bad}: {error}");
        assert!(!refused.may_have_acted(), "{bad}: {error}");
        assert_eq!(page().await, before, "{bad}: nothing ran");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_failing_at_step_two_reports_step_one_and_keeps_its_effect() {
    let setup = OneBrowser::on("Work", "login.html").await;

    // Step 2 names a ref that was never issued: it fails when it runs, after step 1 ran.
    let failed = setup
        .call(
            "run_browser_actions",
            json!({"steps": [
                {"kind": "type", "selector": "#username", "text": "alice"},
                {"kind": "click", "selector": "@e999999"},
                {"kind": "type", "selector": "#password", "text": "s3cret!"},
            ]}),
        )
        .await;
    assert_eq!(failed.error_code(), "STALE_REF", "{}", failed.text);
    let error = failed.error();
    assert_eq!(error["phase"], "run", "{error}");
    assert_eq!(error["failedStep"], 1, "{error}");
    let completed = error["completedSteps"]
        .as_array()
        .expect("the completed steps' results");
    assert_eq!(completed.len(), 1, "{error}");
    assert!(
        completed[0].to_string().contains("alice"),
        "step 1's result: {}",
        completed[0]
    );
    // Step 1's effect stays (nothing is rolled back); step 3 never ran.
    assert_eq!(
        setup
            .evaluate(
                "login.html",
                "[document.getElementById('username').value, \
                 document.getElementById('password').value]"
            )
            .await,
        json!(["alice", ""])
    );

    // A step still running when the batch's deadline comes ends the batch with what was done.
    let late = setup
        .call(
            "run_browser_actions",
            json!({"timeoutMs": 1500, "steps": [
                {"kind": "type", "selector": "#username", "text": "bob", "clear": true},
                {"kind": "waitFor", "text": "This never appears"},
                {"kind": "click", "selector": "#submit"},
            ]}),
        )
        .await;
    let error = late.error();
    assert!(
        ["WAIT_TIMEOUT", "TAB_UNRESPONSIVE"].contains(&late.error_code()),
        "{}",
        late.text
    );
    assert_eq!(error["failedStep"], 1, "{error}");
    assert_eq!(error["completedSteps"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        setup
            .evaluate(
                "login.html",
                "document.getElementById('result').textContent"
            )
            .await,
        "Not signed in",
        "the step after the deadline never ran"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_wait_in_one_tab_does_not_hold_up_another_tab() {
    let setup = OneBrowser::on("Work", "waits.html").await;
    let a = tab_with(&setup.call("list_tabs", json!({})).await, "waits.html");
    let b = setup.open_tab("counter.html").await;

    // The order in which the two sides finished.
    let finished = Mutex::new(Vec::new());
    let wait_in_a = async {
        let reply = setup
            .call(
                "wait_for",
                json!({"tabId": a, "text": "This never appears", "timeoutMs": 8000}),
            )
            .await;
        finished.lock().unwrap().push("A");
        reply
    };
    let clicks_in_b = async {
        // Tab A is busy with its wait before tab B starts.
        let running = setup
            .running("tab A to run its wait", json!({"tabId": a}))
            .await;
        assert!(
            running["tool"].as_str().unwrap().contains("wait"),
            "{running}"
        );
        for _ in 0..3 {
            setup
                .call(
                    "click_element",
                    json!({"tabId": b, "selector": "#increment", "observe": false}),
                )
                .await
                .data();
        }
        let counted = setup
            .call(
                "get_page_content",
                json!({"tabId": b, "selector": "#count"}),
            )
            .await;
        finished.lock().unwrap().push("B");
        counted
    };
    let (waited, counted) = tokio::join!(wait_in_a, clicks_in_b);
    assert_eq!(waited.error_code(), "WAIT_TIMEOUT", "{}", waited.text);
    assert_eq!(
        *finished.lock().unwrap(),
        ["B", "A"],
        "tab B's clicks completed while tab A was still waiting"
    );
    assert!(
        counted.data()["content"]
            .as_str()
            .unwrap()
            .contains("Count: 3"),
        "{}",
        counted.text
    );
    assert_eq!(
        setup
            .evaluate(
                "counter.html",
                "document.getElementById('count').textContent"
            )
            .await,
        "Count: 3"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_queued_past_its_deadline_never_runs() {
    let setup = OneBrowser::on("Work", "actions.html").await;

    let long_wait = setup.call(
        "wait_for",
        json!({"text": "This never appears", "timeoutMs": 4000}),
    );
    let queued_click = async {
        setup.running("the wait to hold the tab", json!({})).await;
        // Recovering the debugger of a busy tab is refused, not forced.
        let busy = setup
            .call("get_tab_health", json!({"recoverDebugger": true}))
            .await;
        assert_eq!(busy.error_code(), "TAB_BUSY", "{}", busy.text);
        setup
            .call(
                "click_element",
                json!({"selector": "#press", "timeoutMs": 1000}),
            )
            .await
    };
    let (waited, clicked) = tokio::join!(long_wait, queued_click);
    assert_eq!(waited.error_code(), "WAIT_TIMEOUT", "{}", waited.text);
    assert_eq!(clicked.error_code(), "QUEUE_TIMEOUT", "{}", clicked.text);
    assert!(
        !clicked.may_have_acted(),
        "it never started: {}",
        clicked.text
    );

    // A read runs in the tab's queue, behind anything still queued there.
    let log = setup
        .call("get_page_content", json!({"selector": "#press-log"}))
        .await;
    assert_eq!(
        log.data()["content"].as_str().unwrap().trim(),
        "Presses: 0",
        "{}",
        log.text
    );
    assert_eq!(setup.evaluate("actions.html", "page.presses").await, 0);
    let health = setup.call("get_tab_health", json!({})).await;
    assert_eq!(health.data()["queued"], 0, "{}", health.text);
    assert!(health.data()["active"].is_null(), "{}", health.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_whose_target_appears_after_the_deadline_never_lands() {
    let setup = OneBrowser::on("Work", "late.html?ms=2500").await;

    let missed = setup
        .call(
            "click_element",
            json!({"selector": "#late", "timeoutMs": 1000}),
        )
        .await;
    assert_eq!(missed.error_code(), "SELECTOR_NOT_FOUND", "{}", missed.text);
    assert!(!missed.may_have_acted(), "{}", missed.text);

    eventually("the late button to appear", CONNECT_LIMIT, || async {
        let shown = setup
            .evaluate("late.html", "!!document.getElementById('late')")
            .await;
        (shown == true).then_some(())
    })
    .await;
    // Proving that something did not happen takes time: a click that outlived its deadline
    // would land as soon as the button exists, so give it a second to do so.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        setup.evaluate("late.html", "window.lateClicks").await,
        0,
        "the click given up at its deadline never landed"
    );

    // The counter does count: a click now lands once.
    setup.click("#late").await.data();
    assert_eq!(setup.evaluate("late.html", "window.lateClicks").await, 1);
}
