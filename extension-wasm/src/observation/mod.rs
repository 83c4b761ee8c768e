//! Observations: turning the in-page collector's raw facts into what an agent reads.
//!
//! - [`facts`]: what the collector reports about a node (role, name, states, key, group,
//!   identity anchors).
//! - [`render`]: the wording of one line per node.
//! - [`window`]: the full list, the query filter (whole rows and list items), paging and the
//!   node/character budget.
//! - [`delta`]: baselines and the differences between two windows.
//! - [`engine`]: one walk → refs, window, delta, new baseline.
//!
//! All of it is pure Rust with native unit tests; only `ops::snapshot` touches the browser.

pub mod delta;
pub mod engine;
pub mod facts;
pub mod render;
pub mod window;

pub use facts::{PROSE_ROLE, PageNode};
pub use render::{Detail, cap, render_node};
