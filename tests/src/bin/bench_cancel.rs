//! `cargo run --release -p tabwire-e2e --bin bench-cancel [-- --runs N]`: how soon a tab is
//! free again after an MCP client cancels the call holding it (issue 23 §4: within 100 ms).
//!
//! One local hub, one headless Chromium on the counter fixture, one MCP session through the
//! shim. Each run starts a `wait_for` (text) that never matches (60 s) and waits until the tab
//! runs it, twice: once with a `read_element_state` queued behind it (`get_tab_health` shows it
//! waiting) before `notifications/cancelled` is sent, timing the queued read's answer from the
//! cancel; once sending the read right after the cancel, timed the same way. The queued read's
//! answer includes its own run, so the time from the cancel to its start is at most that. The
//! same read on an idle tab is timed for reference. Then, on the slow-keys fixture (4 ms a
//! key), a long `type_text` (keys) is cancelled mid-typing and the read sent right after: its
//! answer waits for the run of keys already handed to Chrome to land. Prints medians and 90th
//! percentiles; asserts nothing.

use std::time::{Duration, Instant};

use serde_json::json;
use tabwire_e2e::bench::stats::{ms, p50_p90, timed_tool_call};
use tabwire_e2e::scenario::{connected_browser, loaded_tab};
use tabwire_e2e::{Browser, Fixtures, Hub, McpClient, eventually};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut runs = 20usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next().and_then(|n| n.parse().ok())) {
            ("--runs", Some(n)) if n > 0 => runs = n,
            _ => {
                eprintln!("usage: bench-cancel [--runs N]");
                std::process::exit(2);
            }
        }
    }
    tabwire_e2e::quiet_logs();
    let fixtures = Fixtures::serve().await;
    let page = fixtures.url("counter.html");
    let hub = Hub::spawn();
    let _browser = Browser::launch(&hub, "Bench", &page);
    let client = McpClient::connect(&hub).await;
    connected_browser(&client, "Bench").await;
    loaded_tab(&client, json!({}), &page).await;
    let read = json!({"selector": "#count"});

    let mut alone = Vec::with_capacity(runs);
    let mut queued_behind = Vec::with_capacity(runs);
    let mut sent_after = Vec::with_capacity(runs);
    for round in 0..runs + 2 {
        let idle = timed_tool_call(&client, "read_element_state", &read).await;

        // The next call sent right after the cancel.
        let wait = start_wait(&client).await;
        queue_holds(&client, 0).await;
        let sent = Instant::now();
        wait.cancel().await;
        timed_tool_call(&client, "read_element_state", &read).await;
        let after = sent.elapsed();

        // The next call already waiting in the tab's queue.
        let wait = start_wait(&client).await;
        queue_holds(&client, 0).await;
        let queued = async {
            let reply = client.call("read_element_state", read.clone()).await;
            assert!(!reply.is_error, "the queued read failed: {}", reply.text);
            Instant::now()
        };
        let cancel = async {
            queue_holds(&client, 1).await;
            let sent = Instant::now();
            wait.cancel().await;
            sent
        };
        let (answered, sent) = tokio::join!(queued, cancel);
        // Two warm-up rounds.
        if round >= 2 {
            alone.push(idle);
            sent_after.push(after);
            queued_behind.push(answered.duration_since(sent));
        }
    }

    // Cancelled mid-typing: the next call waits for the run of keys under way.
    let slow = fixtures.url("slow-keys.html");
    client.call("navigate_to", json!({"url": slow})).await;
    loaded_tab(&client, json!({}), &slow).await;
    let mut after_typing = Vec::with_capacity(runs);
    for round in 0..runs + 2 {
        let typing = client
            .start_call(
                "type_text",
                json!({"selector": "#first", "text": "a".repeat(2000), "inputMethod": "keys",
                       "clear": true, "timeoutMs": 60_000, "observe": false}),
            )
            .await;
        queue_holds_tool(&client, "type_text", 0).await;
        // Into its keys (a bench may sleep; the tests may not).
        tokio::time::sleep(Duration::from_millis(300)).await;
        let sent = Instant::now();
        typing.cancel().await;
        timed_tool_call(
            &client,
            "read_element_state",
            &json!({"selector": "#second"}),
        )
        .await;
        if round >= 2 {
            after_typing.push(sent.elapsed());
        }
    }

    let (a50, a90) = p50_p90(&mut alone);
    let (q50, q90) = p50_p90(&mut queued_behind);
    let (s50, s90) = p50_p90(&mut sent_after);
    let (t50, t90) = p50_p90(&mut after_typing);
    println!(
        "\ncancel → next call on the same tab (local hub, headless Chromium; {runs} runs after 2 \
         warm-up runs)"
    );
    println!("| measure | p50 | p90 |");
    println!("| --- | --- | --- |");
    println!(
        "| read_element_state on an idle tab | {} | {} |",
        ms(a50),
        ms(a90)
    );
    println!(
        "| the read queued behind a 60 s wait: from notifications/cancelled to its answer | {} | \
         {} |",
        ms(q50),
        ms(q90)
    );
    println!(
        "| the read sent right after the cancel: from notifications/cancelled to its answer | {} \
         | {} |",
        ms(s50),
        ms(s90)
    );
    println!(
        "| the read sent right after cancelling a typing (4 ms a key, runs of 20 keys): from \
         notifications/cancelled to its answer | {} | {} |",
        ms(t50),
        ms(t90)
    );
}

/// Starts a wait on the active tab that never matches.
async fn start_wait(client: &McpClient) -> tabwire_e2e::client::InFlight {
    client
        .start_call(
            "wait_for",
            json!({"text": "This never appears", "timeoutMs": 60_000}),
        )
        .await
}

/// Waits until the active tab runs the wait with `queued` requests behind it.
async fn queue_holds(client: &McpClient, queued: u64) {
    queue_holds_tool(client, "wait_for", queued).await;
}

/// Waits until the active tab runs `tool` with `queued` requests behind it.
async fn queue_holds_tool(client: &McpClient, tool: &str, queued: u64) {
    eventually(
        "the tab's queue to hold the call",
        Duration::from_secs(30),
        || async {
            let health = client.call("get_tab_health", json!({})).await;
            let data = &health.structured["data"];
            let running = data["active"]["tool"] == tool;
            (running && data["queued"] == queued).then_some(())
        },
    )
    .await;
}
