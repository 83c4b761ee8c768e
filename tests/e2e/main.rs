//! Every end-to-end test of tabwire, one module per area, in one test binary.
//!
//! - [`skeleton`]: the walking skeleton — agent, shim, hub, extension, pages — and its edges
//!   with a real browser (reconnects, hub restarts, the popup).
//! - [`edges`]: the hub's edges without a browser.
//! - [`devices`]: Android devices end to end — hub, `tabwire-android`, the fake adb, an MCP
//!   client.
//! - [`fake_adb`]: the scripted fake adb the device tests run, pinned to real adb's behaviour.
//! - [`observation`]: the observation engine.
//! - [`shadow`]: open shadow roots in page content (text, aria, html) and snapshot queries.
//! - [`actions`], [`forms`], [`ordering`]: the action tools, typing and forms, waits, batches,
//!   queues and deadlines; [`drag`]: dragging in sortable lists, and element boxes.
//! - [`typing`]: typing that widgets notice — keys by default, autocompletes and comboboxes.
//! - [`tabs`], [`capture`]: tabs, screenshots, capture and storage.
//! - [`ios`]: iPhones end to end — hub, `tabwire-ios`, the scripted WebDriverAgent serving real
//!   XCUITest page sources, an MCP client.
//! - [`files`]: uploads into file inputs, hidden inputs behind buttons and drop zones, and what
//!   is refused.
//! - [`audit`]: the audit log of tool calls and `tabwire-hub audit`.
//! - [`cancel`]: cancelled calls — the browser's and the phone's queues freed at once, no input
//!   after the cancel, the audit's `cancelled`.
//! - [`cli`]: the `tabwire` CLI — output on a terminal and piped, exit codes, the manifest,
//!   choosing browsers and keeping a choice per shell session, hosted hubs, starting a hub.
//! - [`doctor`]: `tabwire-hub doctor` against a real hub — its problems, fixes and exit codes.
//! - [`launch`]: the launched profile (`--launch-browser`) — a tabwire-owned Chromium started,
//!   paired, connected and stopped by the hub; a missing browser; a profile held by another.
//! - [`injection`]: page content marked as untrusted — hidden text left out of observations,
//!   page text fenced in text results.
//! - [`model_view`]: what a model reads of each result under each client's rule — text alone
//!   and fenced for clients that do not ask for the envelope.
//! - [`file_urls`]: `file://` closed in local mode unless the operator opens it.
//! - [`leases`]: two agents' sessions on one browser — tab leases, `TAB_LEASED`, release,
//!   lapses, and the tab groups that show them.
//! - [`policy`]: per-origin policy of both owners at the point of effect, and approvals.
//! - [`covering`]: a denied frame in every output — screenshots painted over, reads, refs,
//!   observations and captures that leave it out; [`denied_dialogs`]: a denied frame's
//!   JavaScript dialogs, withheld and only dismissed; [`drawing_effects`]: effects that draw a
//!   denied frame outside its box (filters, reflections, SVG, backdrop filters);
//!   [`moving_frames`]: a page that moves a denied frame while it is captured.
//! - [`hosted`]: hosted mode behind a real TLS proxy.
//! - [`handshake`]: a local process holding the hub's handshake places while a real browser
//!   connects.
//! - [`pairing`]: mutual pairing under attack — a fake hub, fake browsers, malformed hellos,
//!   revocation, a pairing that survives a hub restart — and a person pairing in the popup.
//! - [`socket_peers`]: the Unix socket against a process of another user; [`socket_dir`]: the
//!   default socket directory taken first by another user (hub and shim move to the same
//!   private one under the user's home).
//! - [`extension_size`]: the built extension's wasm stays at most 600 KB (compiled on every
//!   service-worker start).
//! - [`structure`]: the source tree's own rules (declared files, no import loops, layers).
//! - [`widgets`]: third-party widget patterns driven from snapshots (date pickers, shadow-DOM
//!   to-dos, clickable words, accordions, modal dialogs).
//! - [`load`]: the load tool's short run — a hosted hub, simulated browsers over accounts, MCP
//!   sessions calling them; no errors (the figures are `bench-load`'s).
//! - [`soak`]: the soak's short run — 50 sessions' mixed workload against simulated browsers
//!   that reconnect; every call answered before its deadline + grace, no descriptor leak, no
//!   unexpected failure (memory over time is `bench-soak`'s).
//! - [`cluster`]: hub replicas on NATS — three replicas, a real browser behind a TCP balancer
//!   and simulated ones, agents on other replicas, leases and isolation across replicas, a
//!   replica killed; nginx's `deploy/nginx-replicas.conf` keeping MCP sessions on their replica.
//! - [`install`]: a release as a user gets it — `scripts/release`'s archive and checksums served
//!   on loopback, `install.sh` with no Rust on `PATH`, the installed hub launching its browser
//!   with the extension beside it; a tampered archive installs nothing.
//! - [`views`]: each session's view is its own — two sessions on one tab and on one phone,
//!   automatic deltas and `since` against what each was shown.

mod actions;
mod audit;
mod cancel;
mod capture;
mod cli;
mod cluster;
mod controls;
mod covering;
mod denied_dialogs;
mod devices;
mod doctor;
mod drag;
mod drawing_effects;
mod edges;
mod extension_size;
mod fake_adb;
mod file_urls;
mod files;
mod forms;
mod handshake;
mod hosted;
mod injection;
mod install;
mod ios;
mod launch;
mod leases;
mod load;
mod mocks;
mod model_view;
mod moving_frames;
mod observation;
mod ordering;
mod page_model;
mod pairing;
mod policy;
mod recording;
mod shadow;
mod skeleton;
mod soak;
mod socket_dir;
mod socket_peers;
mod structure;
mod tabs;
mod typing;
mod views;
mod widgets;
