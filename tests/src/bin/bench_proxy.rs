//! `cargo run --release -p tabwire-e2e --bin bench-proxy [-- --calls N]`: what a TLS reverse
//! proxy adds to a tool call in hosted mode.
//!
//! The hub runs in hosted mode behind nginx, configured with the repository's
//! `deploy/nginx/tabwire-locations.conf`, and one headless Chromium with the extension connects
//! through the proxy with a browser token. Two MCP sessions with the same agent token call the
//! same tools, interleaved: one through nginx (`https://…/mcp`), one straight to the hub's port
//! with the public Host. `list_browsers` never leaves the hub; `list_tabs` goes on to the
//! browser (through nginx's WebSocket on both paths, so the difference is the `/mcp` hop).
//! Prints the medians and 90th percentiles; asserts nothing.

use std::time::{Duration, Instant};

use serde_json::json;
use tabwire_e2e::hosted::{Hosted, Role};
use tabwire_e2e::scenario::connected_browser;
use tabwire_e2e::{Fixtures, McpClient};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut calls = 50usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next().and_then(|n| n.parse().ok())) {
            ("--calls", Some(n)) if n > 0 => calls = n,
            _ => {
                eprintln!("usage: bench-proxy [--calls N]");
                std::process::exit(2);
            }
        }
    }
    tabwire_e2e::quiet_logs();
    let fixtures = Fixtures::serve().await;
    let hosted = Hosted::start();
    let browser_token = hosted.issue("alice", Role::Browser);
    let agent = hosted.issue("alice", Role::Agent);
    let _browser = hosted.launch_browser(&browser_token, "Work", &fixtures.url("login.html"));
    let through = hosted.session(&agent).await;
    let direct = hosted.direct_session(&agent).await;
    let browser_id = connected_browser(&through, "Work").await;
    println!(
        "tool call latency, hosted mode: through nginx 1.22 (TLS, keep-alive) vs straight to the \
         hub; {calls} calls each, interleaved, after 5 warm-up calls"
    );
    println!("| tool | through nginx p50 | p90 | straight p50 | p90 | added by the proxy (p50) |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for (tool, args) in [
        ("list_browsers", json!({})),
        ("list_tabs", json!({ "browserId": browser_id })),
    ] {
        let mut via = Vec::new();
        let mut straight = Vec::new();
        for round in 0..calls + 5 {
            let a = timed(&through, tool, &args).await;
            let b = timed(&direct, tool, &args).await;
            if round >= 5 {
                via.push(a);
                straight.push(b);
            }
        }
        let (via50, via90) = percentiles(&mut via);
        let (st50, st90) = percentiles(&mut straight);
        println!(
            "| {tool} | {} | {} | {} | {} | {} |",
            ms(via50),
            ms(via90),
            ms(st50),
            ms(st90),
            ms(via50.saturating_sub(st50))
        );
    }
}

async fn timed(client: &McpClient, tool: &str, args: &serde_json::Value) -> Duration {
    let started = Instant::now();
    let reply = client.call(tool, args.clone()).await;
    let elapsed = started.elapsed();
    assert!(!reply.is_error, "{tool} failed: {}", reply.text);
    elapsed
}

fn percentiles(times: &mut [Duration]) -> (Duration, Duration) {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.9))
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}
