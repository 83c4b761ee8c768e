//! `tabwire-android`: the reference device backend (issue 15, SPEC §10). It runs the `adb`
//! program, follows the devices attached to it, and serves each one to the hub over its own
//! WebSocket connection to `/device`.
//!
//! - [`adb`]: the one transport every adb call goes through ([`adb::Adb`]), and the real
//!   program behind it ([`adb::AdbProgram`]); tests put a scripted fake in its place.
//! - [`device`]: one attached device: its facts and the operations it serves.
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

// Tracking and the hub connection.
pub mod backend;
pub mod endpoint;
pub mod identity;
pub mod keys;
pub mod link;
pub mod listing;
pub mod track;
