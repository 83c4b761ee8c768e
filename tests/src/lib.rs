//! Helpers for tabwire's end-to-end tests and benchmarks, so each test reads like the scenario
//! it checks: `Hub::spawn()`, `Browser::launch(..)`, `Fixtures::serve()`, `McpClient::connect(..)`.
//!
//! Everything is real: the `tabwire-hub` and `tabwire-mcp` binaries, the extension built by
//! `extension/build.sh` and loaded into headless Chromium, fixture pages served on loopback, and
//! rmcp as the MCP client. [`artifacts`] builds the binaries and the extension once per test
//! process, so `cargo test` never runs against stale builds. Hosted mode runs the hub with
//! `--auth-dir` behind a real nginx terminating TLS: `hosted::Hosted::start()`.
//!
//! Processes started here are killed (by PID, or by process group for Chromium and nginx) when
//! their handle drops, and scratch directories are removed.

pub mod artifacts;
pub mod bench;
pub mod browser;
pub mod client;
pub mod fixtures;
pub mod hosted;
pub mod hub;
pub mod image;
pub mod proxy;
pub mod scenario;
pub mod scratch;

pub use browser::Browser;
pub use client::{Image, McpClient, Reply};
pub use fixtures::Fixtures;
pub use hub::Hub;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static QUIET: AtomicBool = AtomicBool::new(false);

/// Stops forwarding the hub's, shim's and Chromium's logs to stderr (tests keep them: the test
/// harness shows them only for a failing test; the benchmark does not want them).
pub fn quiet_logs() {
    QUIET.store(true, Ordering::Relaxed);
}

/// Forwards one line of a child process's log, unless [`quiet_logs`] was called.
pub fn forward_log(source: &str, line: &str) {
    if !QUIET.load(Ordering::Relaxed) {
        eprintln!("[{source}] {line}");
    }
}

/// Polls `check` every 200 ms until it returns `Some`, or panics with `what` after `limit`.
pub async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let give_up = tokio::time::Instant::now() + limit;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if tokio::time::Instant::now() > give_up {
            panic!("timed out after {limit:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
