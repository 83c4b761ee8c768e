//! `tabwire-android`: the reference device backend (issue 15, SPEC §10). It runs the `adb`
//! program, follows the devices attached to it, and serves each one to the hub over its own
//! WebSocket connection to `/device`.
//!
//! - [`adb`]: the one transport every adb call goes through ([`adb::Adb`]), and the real
//!   program behind it ([`adb::AdbProgram`]); tests put a scripted fake in its place.
//! - [`device`]: one attached device: its facts and the operations it serves.
//!
//! The device's operations (android-core):
//! - [`shell`]: every command line sent to the phone's shell: quoting, typing text without
//!   the shell reading it, and the foreground guard actions run behind.
//! - [`hierarchy`]: `uiautomator dump` output read with an XML parser, and the failures it
//!   prints while exiting 0.
//! - [`screen`]: the kept nodes of a dump, with roles, names, values, states and identities.
//! - [`refs`]: `@d` refs kept by identity across dumps.
//! - [`safety`]: the device's lease and both owners' app rules, at the point of effect.
//! - [`view`]: a screen as observations show it, through `tabwire-observation` (rendering,
//!   windows, budgets, queries, paging, `since` deltas).
//! - [`run`]: one operation's run: its deadline, adb calls, dumps and their retries, the
//!   settle loop, and input behind the foreground guard.
//! - [`logs`]: logcat's `threadtime` lines, filtered, bounded and read on from a cursor.
//! - [`cancel`]: stopping an operation the hub cancelled, and whether its input went out.
//!
//! Tracking and the hub connection (the binary's side):
//! - [`listing`]: `adb devices -l` read into serials and states.
//! - [`track`]: which phones are served through which serial (probes, the same phone listed
//!   twice, devices that go), as pure decisions.
//! - [`identity`]: a phone's device ID (from `ro.serialno`) and its hello.
//! - [`endpoint`]: the hub URL, local or hosted, tokens and TLS.
//! - [`keys`]: the pairing key per hub URL in the private state directory, and pairing codes.
//! - [`link`]: one device's connection: pairing exchange, hello, requests, heartbeats, backoff.
//! - [`backend`]: the loop that polls adb and runs the links.
#![deny(missing_docs)]

pub mod adb;
pub mod device;

// The device's operations.
pub mod hierarchy;
pub mod logs;
pub mod run;
pub mod screen;
pub mod shell;

// Tracking.
pub mod backend;
pub mod identity;
pub mod listing;
pub mod track;

#[cfg(test)]
mod device_tests;
#[cfg(test)]
mod view_tests;
