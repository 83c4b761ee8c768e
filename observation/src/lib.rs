//! Observations: turning the raw facts a peer reports about what it shows (the browser's
//! in-page collector, a device's UI hierarchy) into what an agent reads. Browsers and devices
//! share this model, so a line, a window, a budget and a delta mean the same on both.
//!
//! - [`facts`]: what a peer reports about a node (role, name, value, states, key, group,
//!   identity anchors).
//! - [`render`]: the wording of one line per node.
//! - [`inline`]: refs written inside another node's line (`[@e43 laoreet]`).
//! - [`window`]: the full list, the query filter (whole rows and list items), paging and the
//!   node/character budget.
//! - [`delta`]: baselines and the differences between two windows.
//! - [`text`]: capping a line to a number of characters.
//!
//! All of it is pure Rust with native unit tests, built for wasm (the extension) and natively
//! (the device backends). What puts a peer's walk, its refs and a window together stays with
//! the peer: the extension's `ops::observe::engine`, a device backend's observation.

pub mod delta;
pub mod facts;
pub mod inline;
pub mod render;
pub mod text;
pub mod window;

pub use facts::{PROSE_ROLE, PageNode};
pub use render::{Detail, render_node};
