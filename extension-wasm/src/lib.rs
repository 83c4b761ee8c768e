//! The tabwire browser extension's logic, compiled to wasm and started by the MV3 service
//! worker (`extension/background.js`).
//!
//! The extension connects to a tabwire hub over a WebSocket, announces this Chrome profile, and
//! serves the hub's requests against the profile's tabs: listing and navigating tabs, observing
//! pages and their frames (snapshots with element refs, deltas, page content), and clicking and
//! typing. The wire contract is the `tabwire-protocol` crate, shared with the hub.
//!
//! # Layout
//! The modules stand in layers, each importing only its own layer or lower ones (the table and
//! its check: ARCHITECTURE.md, `tests/e2e/structure.rs`). From the bottom:
//! - Platform: [`chrome`] (bindings to `chrome.*`, the `log!` macro), [`timer`] (sleep,
//!   select), [`mailbox`] (callback → async queue), [`text`] (capping and slicing text).
//! - Model: [`config`] (configuration sources, precedence, Server URL rules; [`config::store`]
//!   reads and writes them and keeps the browser ID), [`calllog`] (the popup's list of recent
//!   calls). The vocabulary of observations (facts, rendering, query, paging and budgets,
//!   baselines and deltas) is the `tabwire-observation` crate, shared with the device backends.
//! - State: [`refs`] (the per-frame state behind `@e12` / `@f3e5` refs: bindings, rebinding,
//!   versions, the snapshot fence), [`checkpoint`] (whether a request may still act),
//!   [`uploads`] (uploads' bytes kept until their action).
//! - Browser: [`policy`] (both owners' per-origin rules, checked where operations take
//!   effect), [`approvals`] (a person's answers: approvals on `ask` origins, handoffs),
//!   [`chrome_tabs`], [`debugger`] (attachment; CDP events published to subscribers),
//!   [`activity`] (loads and requests in flight), [`queue`] (per-tab order), [`page`] (the
//!   in-page collector, `js/collector/`, through `js/page.js`), [`input`] (trusted input).
//! - [`ops`]: one module per operation group, as the protocol groups them.
//! - [`requests`]: one request under its deadline, answered exactly once; [`connection`]: the
//!   WebSocket loop — hello, welcome or refusal, heartbeats, backoff, never-replay.
//! - [`worker`]: the start-up sequence, the debugger's subscribers, tab teardown; [`popup`]
//!   answers the popup; this file holds what `background.js` calls — [`start`], [`on_alarm`],
//!   [`on_popup_message`].
//!
//! Pure logic (URL rules, precedence, ref tables and rebinding, the fence, backoff, call log) is unit-tested natively with `cargo test`; code that touches JS
//! runs only in the browser.

pub mod activity;
pub mod approvals;
pub mod calllog;
pub mod checkpoint;
pub mod chrome;
pub mod chrome_tabs;
pub mod config;
pub mod connection;
pub mod debugger;
pub mod downloads;
pub mod input;
pub mod leases;
pub mod mailbox;
pub mod ops;
pub mod page;
pub mod policy;
pub mod popup;
pub mod queue;
pub mod recording;
pub mod refs;
pub mod requests;
pub mod text;
pub mod timer;
pub mod uploads;
pub mod worker;

use wasm_bindgen::prelude::*;

/// Starts the extension; idempotent.
#[wasm_bindgen]
pub fn start() {
    worker::start();
}

/// Called for every `chrome.alarms.onAlarm` event.
#[wasm_bindgen(js_name = onAlarm)]
pub fn on_alarm(name: String) {
    worker::on_alarm(&name);
}

/// Called for every event the recorder in a page sends (js/collector/80-record.js): the tab and
/// frame it came from and the frame's URL, as Chrome gives them, and the recorder's JSON.
#[wasm_bindgen(js_name = onRecorded)]
pub fn on_recorded(tab: u32, frame: u32, url: String, json: String) {
    worker::start();
    recording::on_recorded(tab, frame, &url, &json);
}

/// Called for every message from the popup; resolves to the answer.
#[wasm_bindgen(js_name = onPopupMessage)]
pub async fn on_popup_message(message: JsValue) -> JsValue {
    worker::start();
    popup::handle(message).await
}
