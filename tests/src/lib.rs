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
pub mod balancer;
pub mod bench;
pub mod bench_mobile;
pub mod browser;
pub mod cli;
pub mod client;
pub mod cluster;
pub mod device;
pub mod fake_adb;
pub mod fixtures;
pub mod hosted;
pub mod hub;
pub mod image;
pub mod ios;
pub mod launched;
pub mod load;
pub mod logs;
pub mod model;
pub mod nats;
pub mod proxy;
pub mod scenario;
pub mod scratch;
pub mod soak;
pub mod structure;
pub mod wait;

pub use browser::Browser;
pub use client::{Image, Listener, McpClient, Reply};
pub use fixtures::Fixtures;
pub use hub::Hub;
pub use logs::quiet_logs;
pub use wait::eventually;
