//! `cargo run --release -p tabwire-e2e --bin bench-cli [-- --calls N]`: what the `tabwire` CLI
//! costs per call over an MCP client that is already connected.
//!
//! One hub, one headless Chromium with the extension on the login fixture, one rmcp client
//! through `tabwire-mcp` (connected once, as an agent's MCP client is). Each call is made by
//! both, interleaved: the client's tool call, and a whole `tabwire` process (start, connect to
//! the socket, MCP handshake, the call, one JSON line, exit). Three forms of the CLI call:
//! arguments only through `--json` (one round trip after the handshake), flags (the tool's
//! schema from `tools/list` first), and `--browser NAME` (`list_browsers` and `tools/list`
//! first). Prints medians and 90th percentiles; asserts nothing.

use std::time::{Duration, Instant};

use serde_json::json;
use tabwire_e2e::bench::stats::{ms, p50_p90, timed_tool_call};
use tabwire_e2e::cli::Shell;
use tabwire_e2e::scenario::{connected_browser, loaded_tab};
use tabwire_e2e::{Browser, Fixtures, Hub, McpClient};

/// Runs `tabwire ARGS` piped in `shell` and times it; panics unless it succeeds.
async fn timed_cli(shell: &Shell, args: &[&str]) -> Duration {
    let started = Instant::now();
    let run = shell.run(args).await;
    let elapsed = started.elapsed();
    run.expect_code(0);
    elapsed
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut calls = 30usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next().and_then(|n| n.parse().ok())) {
            ("--calls", Some(n)) if n > 0 => calls = n,
            _ => {
                eprintln!("usage: bench-cli [--calls N]");
                std::process::exit(2);
            }
        }
    }
    tabwire_e2e::quiet_logs();
    let fixtures = Fixtures::serve().await;
    let hub = Hub::spawn();
    let page = fixtures.url("login.html");
    let _browser = Browser::launch(&hub, "Bench", &page);
    let client = McpClient::connect(&hub).await;
    connected_browser(&client, "Bench").await;
    let tab = loaded_tab(&client, json!({}), &page).await.to_string();
    let shell = Shell::on(&hub);
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!(
        "per-call cost of the tabwire CLI ({build} build) vs an MCP client already connected \
         (rmcp through tabwire-mcp); {calls} calls each, interleaved, after 3 warm-up calls; \
         login fixture"
    );
    println!("| tool | CLI form | MCP client p50 | p90 | tabwire p50 | p90 | CLI overhead (p50) |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let tab_json = format!("{{\"tabId\": {tab}}}");
    let cases: [(&str, &str, Vec<&str>); 6] = [
        ("list_tabs", "no arguments", vec!["list_tabs"]),
        (
            "list_tabs",
            "--browser Bench",
            vec!["--browser", "Bench", "list_tabs"],
        ),
        (
            "get_page_snapshot",
            "--json",
            vec!["get_page_snapshot", "--json", &tab_json],
        ),
        (
            "get_page_snapshot",
            "--tab-id (schema)",
            vec!["get_page_snapshot", "--tab-id", &tab],
        ),
        (
            "get_page_snapshot",
            "--browser Bench --tab-id",
            vec!["--browser", "Bench", "get_page_snapshot", "--tab-id", &tab],
        ),
        ("tools/list", "tabwire tools", vec!["tools"]),
    ];
    for (tool, form, cli_args) in cases {
        let mut mcp = Vec::new();
        let mut cli = Vec::new();
        for round in 0..calls + 3 {
            let a = if tool == "tools/list" {
                let started = Instant::now();
                let tools = client.list_tools().await;
                assert!(!tools.is_empty());
                started.elapsed()
            } else {
                let args = if tool == "list_tabs" {
                    json!({})
                } else {
                    json!({"tabId": tab.parse::<u64>().unwrap()})
                };
                timed_tool_call(&client, tool, &args).await
            };
            let b = timed_cli(&shell, &cli_args).await;
            if round >= 3 {
                mcp.push(a);
                cli.push(b);
            }
        }
        let (mcp50, mcp90) = p50_p90(&mut mcp);
        let (cli50, cli90) = p50_p90(&mut cli);
        println!(
            "| {tool} | {form} | {} | {} | {} | {} | {} |",
            ms(mcp50),
            ms(mcp90),
            ms(cli50),
            ms(cli90),
            ms(cli50.saturating_sub(mcp50))
        );
    }
}
