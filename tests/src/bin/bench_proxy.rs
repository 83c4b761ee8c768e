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

use tabwire_e2e::bench::stats::{ms, p50_p90, timed_tool_call};

use serde_json::json;
use tabwire_e2e::Fixtures;
use tabwire_e2e::hosted::{Hosted, Role};
use tabwire_e2e::scenario::connected_browser;

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
            let a = timed_tool_call(&through, tool, &args).await;
            let b = timed_tool_call(&direct, tool, &args).await;
            if round >= 5 {
                via.push(a);
                straight.push(b);
            }
        }
        let (via50, via90) = p50_p90(&mut via);
        let (st50, st90) = p50_p90(&mut straight);
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
