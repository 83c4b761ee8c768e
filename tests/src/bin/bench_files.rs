//! `cargo run --release -p tabwire-e2e --bin bench-files [-- --runs N --mb M]`: what an upload
//! costs (issue 26): the throughput of `upload_file` with an M MB file (20 by default, sent by
//! the client as base64, the way a hosted client sends it), and the p50 of a cheap call on
//! another tab (`get_page_snapshot` of the small login page) while the upload runs, beside its
//! p50 on a quiet browser.
//!
//! One local hub (`--max-upload-mb 25`), one headless Chromium with tests/fixtures/files.html
//! and login.html in two tabs, one MCP session making both calls at once. Each upload's bytes
//! are checked in the page (its SHA-256, computed by the page) before its time counts.
//!
//! Then a download's bytes in hosted mode (`--download-mb D`, 8 by default, at most 10): a
//! hosted hub behind nginx (TLS), its browser, and an agent session through the proxy;
//! `navigate_to` the fixture server's attachment of D MB starts a download, and the time counted
//! is `get_downloads {id, bytes: true}` once it is complete: the extension reads it again and
//! the bytes travel as an embedded resource, checked against the server's. Prints the medians;
//! asserts nothing else.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;
use sha2::{Digest, Sha256};
use tabwire_e2e::bench::stats::{ms, p50_p90, timed_tool_call};
use tabwire_e2e::client::embedded;
use tabwire_e2e::fixtures::big_body;
use tabwire_e2e::hosted::{Hosted, Role};
use tabwire_e2e::scenario::{connected_browser, loaded_tab};
use tabwire_e2e::{Browser, Fixtures, Hub, McpClient};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let (mut runs, mut mb, mut download_mb) = (5usize, 20usize, 8usize);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next().and_then(|n| n.parse().ok())) {
            ("--runs", Some(n)) if n > 0 => runs = n,
            ("--mb", Some(n)) if (1..=25).contains(&n) => mb = n,
            ("--download-mb", Some(n)) if (1..=10).contains(&n) => download_mb = n,
            _ => {
                eprintln!("usage: bench-files [--runs N] [--mb 1..25] [--download-mb 1..10]");
                std::process::exit(2);
            }
        }
    }
    tabwire_e2e::quiet_logs();
    let fixtures = Fixtures::serve().await;
    let files_page = fixtures.url("files.html");
    let hub = Hub::spawn_with_args(&["--max-upload-mb", "25", "--max-upload-file-mb", "25"]);
    let browser = Browser::launch(&hub, "Bench", &files_page);
    let client = McpClient::connect(&hub).await;
    connected_browser(&client, "Bench").await;
    let upload_tab = loaded_tab(&client, json!({}), &files_page).await;
    let login = fixtures.url("login.html");
    browser.open_tab(&login).await;
    let other_tab = loaded_tab(&client, json!({}), &login).await;
    let cheap = json!({"tabId": other_tab});

    let bytes: Vec<u8> = (0..mb as u64 * 1_000_000)
        .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8)
        .collect();
    let digest: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let upload = json!({
        "tabId": upload_tab, "selector": "#plain", "observe": false, "timeoutMs": 60_000,
        "files": [{"name": "big.bin", "dataBase64": STANDARD.encode(&bytes)}],
    });

    let mut quiet = Vec::new();
    for _ in 0..20 {
        quiet.push(timed_tool_call(&client, "get_page_snapshot", &cheap).await);
    }
    let mut uploads = Vec::with_capacity(runs);
    let mut during = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let finished = AtomicBool::new(false);
        let running = async {
            let reply = client.call("upload_file", upload.clone()).await;
            assert!(!reply.is_error, "upload_file failed: {}", reply.text);
            finished.store(true, Ordering::SeqCst);
            started.elapsed()
        };
        let beside = async {
            // The calls beside the upload, one after another, each begun while it ran.
            let mut times = Vec::new();
            while !finished.load(Ordering::SeqCst) {
                times.push(timed_tool_call(&client, "get_page_snapshot", &cheap).await);
            }
            times
        };
        let (took, times) = tokio::join!(running, beside);
        let seen = browser
            .evaluate_in(
                "files.html",
                "Promise.resolve(seen.plain).then((f) => f[0].sha256)",
            )
            .await;
        assert_eq!(seen, json!(digest), "the page got other bytes");
        during.extend(times);
        uploads.push(took);
    }
    let (up50, _) = p50_p90(&mut uploads);
    let (quiet50, quiet90) = p50_p90(&mut quiet);
    let (during50, during90) = p50_p90(&mut during);
    println!("upload_file, one {mb} MB file as base64, {runs} runs:");
    println!(
        "  p50 {} → {:.1} MB/s",
        ms(up50),
        mb as f64 / up50.as_secs_f64()
    );
    println!(
        "get_page_snapshot on another tab: quiet p50 {} (p90 {}); during the upload p50 {} (p90 {}, {} calls)",
        ms(quiet50),
        ms(quiet90),
        ms(during50),
        ms(during90),
        during.len()
    );
    drop(browser);
    hosted_downloads(&fixtures, runs, download_mb).await;
}

/// The hosted half: `runs` downloads of `mb` MB (MiB, as the fixture counts), each fetched as
/// bytes through nginx once complete.
async fn hosted_downloads(fixtures: &Fixtures, runs: usize, mb: usize) {
    let hosted = Hosted::start();
    let page = fixtures.url("downloads.html");
    let _browser = hosted.launch_browser(&hosted.issue("bench", Role::Browser), "Bench", &page);
    let agent = hosted.session(&hosted.issue("bench", Role::Agent)).await;
    connected_browser(&agent, "Bench").await;
    let tab = loaded_tab(&agent, json!({}), &page).await;
    let kb = mb as u32 * 1024;
    let expected = big_body(kb);
    let mut fetches = Vec::with_capacity(runs);
    for run in 0..runs {
        let url = fixtures.url(&format!("attachment?name=statement-{run}.csv&kb={kb}"));
        let went = agent
            .call("navigate_to", json!({"tabId": tab, "url": url}))
            .await;
        let id = went.data()["download"]["id"]
            .as_u64()
            .unwrap_or_else(|| panic!("navigate_to started no download: {}", went.text));
        let done = agent
            .call(
                "get_downloads",
                json!({"id": id, "waitMs": 60_000, "bytes": false}),
            )
            .await;
        assert_eq!(
            done.data()["downloads"][0]["state"],
            "complete",
            "{}",
            done.text
        );
        let started = Instant::now();
        let raw = agent
            .call_raw("get_downloads", json!({"id": id, "bytes": true}))
            .await;
        let took = started.elapsed();
        assert!(
            raw.is_error != Some(true),
            "get_downloads with bytes failed: {:?}",
            raw.content
        );
        let (bytes, _) = embedded(&raw);
        assert!(bytes == expected.as_bytes(), "the download's bytes differ");
        fetches.push(took);
    }
    let (p50, p90) = p50_p90(&mut fetches);
    println!("get_downloads with bytes, hosted through nginx, one {mb} MiB file, {runs} runs:");
    println!(
        "  p50 {} (p90 {}) → {:.1} MiB/s",
        ms(p50),
        ms(p90),
        mb as f64 / p50.as_secs_f64()
    );
}
