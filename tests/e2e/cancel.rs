//! Cancellation reaching the browser and the phone (issue 23 §4): an MCP client cancels a call
//! (`notifications/cancelled`) or goes away, and the hub tells the peer. A queued call never
//! runs, a running one stops before its next input, the tab or device is free for the next call
//! at once, and the audit log says `cancelled`.
//!
//! "At once" is shown without timing figures: the next call is given a deadline far shorter
//! than the cancelled call's (3 s against 30 s or more), so it could only succeed if the queue
//! was freed; "never ran" by counters the fixture pages and the fake adb keep.
//!
//! "Never after the cancel" is shown by the page's own log of the keys it heard: the run of
//! keys already handed to Chrome lands whole, before the cancelled call's answer (the audit
//! record's time) and before the next call's first key, never in its field.

use std::time::Duration;

use serde_json::{Value, json};
use tabwire_e2e::device::{Android, PIXEL_ID, Phone, Phones, SHOP_RULES, listed_device};
use tabwire_e2e::scenario::{CONNECT_LIMIT, OneBrowser};
use tabwire_e2e::{Hub, McpClient, eventually};

/// The audit records of `tool` once there are `count` of them.
async fn records_of(hub: &Hub, tool: &str, count: usize) -> Vec<Value> {
    eventually(
        &format!("{count} audit records of {tool}"),
        Duration::from_secs(15),
        || async {
            let records: Vec<Value> = hub
                .audit_command(&[])
                .lines()
                .map(|line| serde_json::from_str::<Value>(line).expect("a JSON line"))
                .filter(|record| record["tool"] == tool)
                .collect();
            (records.len() >= count).then_some(records)
        },
    )
    .await
}

/// `get_tab_health`'s data for the active tab.
async fn health(setup: &OneBrowser) -> Value {
    setup.call("get_tab_health", json!({})).await.data().clone()
}

/// The counter page's count, read in the page itself.
async fn count(setup: &OneBrowser) -> Value {
    setup
        .evaluate(
            "counter.html",
            "document.getElementById('count').textContent",
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_batch_frees_its_tab_and_its_click_never_lands() {
    let setup = OneBrowser::on("Work", "counter.html").await;

    // A batch that waits for text that never comes, then clicks: it holds the tab.
    let batch = setup
        .client
        .start_call(
            "run_browser_actions",
            json!({"timeoutMs": 60_000, "steps": [
                {"kind": "waitFor", "text": "This never appears"},
                {"kind": "click", "selector": "#increment"},
            ]}),
        )
        .await;
    let running = setup.running("the batch to hold the tab", json!({})).await;
    assert_eq!(running["tool"], "run_browser_actions", "{running}");

    // A click queued behind it, cancelled before its turn: it leaves the line, never runs.
    // (Its own deadline outlasts the wait below: only the cancel can take it out in time.)
    let queued = setup
        .client
        .start_call(
            "click_element",
            json!({"selector": "#increment", "timeoutMs": 60_000}),
        )
        .await;
    eventually("the click to wait in line", CONNECT_LIMIT, || async {
        (health(&setup).await["queued"] == 1).then_some(())
    })
    .await;
    queued.cancel().await;
    eventually(
        "the cancelled click to leave the line",
        CONNECT_LIMIT,
        || async {
            let health = health(&setup).await;
            (health["queued"] == 0).then_some(health)
        },
    )
    .await;
    assert_eq!(
        health(&setup).await["active"]["tool"],
        "run_browser_actions",
        "the batch still runs"
    );

    // The batch is cancelled: the next call on the tab starts at once (its 3 s would run out
    // behind a batch of 60 s), and it is the only click that ever lands.
    batch.cancel().await;
    let next = setup
        .call(
            "click_element",
            json!({"selector": "#increment", "timeoutMs": 3000, "observe": false}),
        )
        .await;
    next.data();
    assert_eq!(count(&setup).await, "Count: 1");
    let after = health(&setup).await;
    assert!(after["active"].is_null(), "{after}");
    assert_eq!(after["queued"], 0, "{after}");

    // The audit log: both cancelled calls, neither of which sent input.
    let batches = records_of(&setup.hub, "run_browser_actions", 1).await;
    assert_eq!(batches[0]["outcome"], "cancelled", "{}", batches[0]);
    assert_eq!(batches[0]["actionMayHaveOccurred"], false, "{}", batches[0]);
    let clicks = records_of(&setup.hub, "click_element", 2).await;
    let cancelled: Vec<&Value> = clicks
        .iter()
        .filter(|record| record["outcome"] == "cancelled")
        .collect();
    assert_eq!(cancelled.len(), 1, "{clicks:?}");
    assert_eq!(cancelled[0]["actionMayHaveOccurred"], false);
    assert!(clicks.iter().any(|record| record["outcome"] == "ok"));

    // Nothing of the cancelled calls lands later either: a read queued after them sees one.
    let read = setup
        .call("get_page_content", json!({"selector": "#count"}))
        .await;
    assert_eq!(read.data()["content"].as_str().unwrap().trim(), "Count: 1");
}

/// The keys `slow-keys.html` heard, in order: `{field, key, at}`.
async fn keys_heard(setup: &OneBrowser) -> Vec<Value> {
    let keys = setup.evaluate("slow-keys.html", "window.keys").await;
    keys.as_array().expect("the page's key log").clone()
}

/// A field's value on `slow-keys.html`.
async fn field(setup: &OneBrowser, id: &str) -> String {
    let expression = format!("document.getElementById('{id}').value");
    let value = setup.evaluate("slow-keys.html", &expression).await;
    value.as_str().expect("a field's value").to_owned()
}

/// Issue 23's review: a cancel used to answer, and free the tab, while the run of keys already
/// handed to Chrome was still landing, so the next call's typing could start in the middle of
/// it (its focus moved to another field, where the cancelled keys then went).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_typing_lands_its_last_keys_before_its_answer_and_the_next_typing() {
    let setup = OneBrowser::on("Work", "slow-keys.html").await;
    // About 8 s of keys at the page's 4 ms a key, in runs of 20.
    let long = "a".repeat(2000);
    let typing = setup
        .client
        .start_call(
            "type_text",
            json!({"selector": "#first", "text": long, "inputMethod": "keys",
                   "timeoutMs": 60_000, "observe": false}),
        )
        .await;
    eventually("the typing to be under way", CONNECT_LIMIT, || async {
        (field(&setup, "first").await.len() >= 40).then_some(())
    })
    .await;

    // Cancelled mid-typing, and at once another call types into the other field.
    typing.cancel().await;
    let next = setup
        .call(
            "type_text",
            json!({"selector": "#second", "text": "0123456789", "timeoutMs": 30_000,
                   "observe": false}),
        )
        .await;
    assert_eq!(next.data()["value"], "0123456789", "{}", next.text);

    // The fields did not mix: the second has exactly its own text, the first only the
    // cancelled call's keys, and fewer than all of them.
    assert_eq!(field(&setup, "second").await, "0123456789");
    let first = field(&setup, "first").await;
    assert!(first.chars().all(|c| c == 'a'), "{first}");
    assert!(first.len() < long.len(), "the typing was cancelled");

    // The page heard every cancelled key in the first field, all of them before the next
    // call's first key.
    let keys = keys_heard(&setup).await;
    let cancelled: Vec<&Value> = keys.iter().filter(|k| k["key"] == "a").collect();
    assert_eq!(
        cancelled.len(),
        first.len(),
        "each key landed once, in its field"
    );
    assert!(cancelled.iter().all(|k| k["field"] == "first"), "{keys:?}");
    let last_cancelled = keys.iter().rposition(|k| k["key"] == "a").unwrap();
    let first_next = keys
        .iter()
        .position(|k| k["key"] == "0")
        .expect("the next call's keys");
    assert!(last_cancelled < first_next, "interleaved: {keys:?}");
    assert!(
        keys[first_next..].iter().all(|k| k["field"] == "second"),
        "{keys:?}"
    );

    // The cancelled call was answered after its last key landed (both times in milliseconds
    // of the same clock, in the same RFC 3339 form, so they compare as text).
    let typed = records_of(&setup.hub, "type_text", 2).await;
    let record = typed
        .iter()
        .find(|record| record["outcome"] == "cancelled")
        .expect("the cancelled typing's record");
    assert_eq!(record["actionMayHaveOccurred"], true, "{record}");
    let answered = record["time"].as_str().unwrap();
    let last_key = cancelled.last().unwrap()["at"].as_str().unwrap();
    assert!(
        last_key <= answered,
        "a key landed at {last_key}, after the answer at {answered}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_takes_its_running_call_with_it() {
    let setup = OneBrowser::on("Work", "counter.html").await;
    let leaving = McpClient::connect(&setup.hub).await;
    let waiting = leaving
        .start_call(
            "wait_for",
            json!({"text": "This never appears", "timeoutMs": 60_000}),
        )
        .await;
    setup.running("the wait to hold the tab", json!({})).await;
    // The agent's client quits: its shim's input ends and the hub hears the socket close.
    drop(waiting);
    drop(leaving);
    let next = setup
        .call(
            "click_element",
            json!({"selector": "#increment", "timeoutMs": 3000, "observe": false}),
        )
        .await;
    next.data();
    assert_eq!(count(&setup).await, "Count: 1");
    let waits = records_of(&setup.hub, "wait_for", 1).await;
    assert_eq!(waits[0]["outcome"], "cancelled", "{}", waits[0]);
    assert_eq!(waits[0]["actionMayHaveOccurred"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_handoff_gives_the_tab_back_to_the_agent() {
    let setup = OneBrowser::on("Work", "counter.html").await;
    let handoff = setup
        .client
        .start_call("request_human", json!({"reason": "Please sign in"}))
        .await;
    eventually("the person to have the tab", CONNECT_LIMIT, || async {
        let snapshot = setup.call("get_page_snapshot", json!({})).await;
        (snapshot.is_error && snapshot.error_code() == "HUMAN_IN_CONTROL").then_some(())
    })
    .await;
    handoff.cancel().await;
    // Not the handoff's 15 minutes: the question is withdrawn when the cancel arrives. (The
    // next call may overtake the cancel on its way to the browser, hence `eventually`.)
    eventually(
        "the tab to be the agent's again",
        Duration::from_secs(10),
        || async {
            let snapshot = setup.call("get_page_snapshot", json!({})).await;
            (!snapshot.is_error).then_some(())
        },
    )
    .await;
    let handoffs = records_of(&setup.hub, "request_human", 1).await;
    assert_eq!(handoffs[0]["outcome"], "cancelled", "{}", handoffs[0]);
}

#[tokio::test]
async fn a_cancelled_device_call_frees_the_phone_and_a_queued_tap_never_lands() {
    let phones = Phones::new();
    phones.attach(
        Phone::pixel("emulator-5554")
            .showing("login.xml")
            .rules(SHOP_RULES),
    );
    let hub = Hub::spawn();
    let _android = Android::local(&hub, &phones, &[]);
    let client = McpClient::connect(&hub).await;
    listed_device(&client, PIXEL_ID, true).await;
    let first = client.call("device_snapshot", json!({})).await;
    let username = first
        .text
        .lines()
        .find(|line| line.contains("Email or username"))
        .and_then(|line| line.split_whitespace().find(|w| w.starts_with("@d")))
        .expect("the username field's ref")
        .to_owned();

    // A snapshot whose dump hangs holds the phone; a tap waits behind it.
    phones.hang_on("emulator-5554", "uiautomator");
    let look = client.start_call("device_snapshot", json!({})).await;
    eventually("the dump to hang", Duration::from_secs(10), || async {
        (phones.state("emulator-5554").hanging > 0).then_some(())
    })
    .await;
    let tap = client
        .start_call(
            "device_tap",
            json!({"ref": username, "observe": false, "timeoutMs": 60_000}),
        )
        .await;
    // (The backend's queue cannot be watched from here: whether the tap is still on its way or
    // already waiting, it must never run.)
    tap.cancel().await;
    look.cancel().await;

    // The phone is free at once: a button press of 3 s gets through behind a 20 s snapshot.
    let back = client
        .call(
            "press_button",
            json!({"button": "back", "observe": false, "timeoutMs": 3000}),
        )
        .await;
    back.data();
    let inputs = phones.device_calls("emulator-5554", "input");
    assert_eq!(inputs.len(), 1, "only the button went out: {inputs:?}");
    assert!(inputs[0].iter().any(|arg| arg == "keyevent"), "{inputs:?}");

    let looks = records_of(&hub, "device_snapshot", 2).await;
    assert_eq!(looks[1]["outcome"], "cancelled", "{}", looks[1]);
    assert_eq!(looks[1]["actionMayHaveOccurred"], false);
    let taps = records_of(&hub, "device_tap", 1).await;
    assert_eq!(taps[0]["outcome"], "cancelled", "{}", taps[0]);
    assert_eq!(taps[0]["actionMayHaveOccurred"], false);
    phones.release("emulator-5554");
}
