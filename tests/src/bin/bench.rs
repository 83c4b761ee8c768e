//! `cargo run --release -p tabwire-e2e --bin bench`: round-trip figures for cheap tools through
//! the whole real path (rmcp client → tabwire-mcp → hub → extension in headless Chromium).
//!
//! Prints a table; no pass/fail. Later issues extend it with peers side by side.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tabwire_e2e::{Browser, Fixtures, Hub, McpClient, eventually};

const ROUNDS: usize = 100;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    tabwire_e2e::quiet_logs();
    let fixtures = Fixtures::serve().await;
    let hub = Hub::spawn();
    let _browser = Browser::launch(&hub, "Bench", &fixtures.url("login.html"));
    let client = McpClient::connect(&hub).await;
    eventually(
        "the browser to connect",
        Duration::from_secs(30),
        || async {
            let reply = client.call("list_browsers", json!({})).await;
            (reply.data()["browsers"][0]["connected"] == true).then_some(())
        },
    )
    .await;

    let tools = serde_json::to_string(&client.list_tools().await).unwrap();
    println!(
        "tools/list: {} tools, {} chars (~{} tokens)\n",
        client.list_tools().await.len(),
        tools.len(),
        tools.len() / 4
    );
    println!(
        "{:<34} {:>6} {:>9} {:>9} {:>9} {:>10}",
        "call (through tabwire-mcp)", "n", "p50 ms", "p90 ms", "max ms", "bytes"
    );
    measure(&client, "list_browsers (hub only)", json!({})).await;
    measure(&client, "list_tabs", json!({})).await;
    measure(&client, "get_page_snapshot (login page)", json!({})).await;
    measure(
        &client,
        "click_element (#username)",
        json!({"selector": "#username"}),
    )
    .await;
}

async fn measure(client: &McpClient, label: &str, args: Value) {
    let tool = label.split_whitespace().next().unwrap();
    for _ in 0..10 {
        client.call(tool, args.clone()).await.data();
    }
    let mut samples = Vec::with_capacity(ROUNDS);
    let mut bytes = 0;
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let reply = client.call(tool, args.clone()).await;
        samples.push(started.elapsed());
        bytes = reply.text.len() + reply.structured.to_string().len();
        reply.data();
    }
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{:<34} {:>6} {:>9.2} {:>9.2} {:>9.2} {:>10}",
        label,
        ROUNDS,
        ms(samples[ROUNDS / 2]),
        ms(samples[ROUNDS * 9 / 10]),
        ms(samples[ROUNDS - 1]),
        bytes
    );
}
