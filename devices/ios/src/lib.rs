//! `tabwire-ios`: the iOS device backend (issue 27, SPEC §10), an adapter on the device kit
//! (`tabwire-device-kit`). It drives iPhones and simulators through WebDriverAgent's HTTP API
//! and serves each one to the hub over its own WebSocket connection to `/device`.
//!
//! - [`wda`]: WebDriverAgent's HTTP API, the one way a device is reached.
//! - [`source`]: XCUITest page sources read into the kit's nodes.
//! - [`device`]: one device: its facts, its hello, and the operations it serves.
//! - [`backend`]: one watcher per WDA URL: probe, serve, notice it gone.
//! - [`scripted`]: a scripted WebDriverAgent serving real page sources, for tests and the
//!   benchmark (no Mac or iPhone exists where they run); only with the `scripted` feature, so
//!   the backend itself holds no server.
#![deny(missing_docs)]

pub mod backend;
pub mod device;
#[cfg(any(test, feature = "scripted"))]
pub mod scripted;
pub mod source;
pub mod wda;

#[cfg(test)]
mod device_tests;
