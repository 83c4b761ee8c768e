//! Observations: turning the in-page collector's raw facts into what an agent reads.
//!
//! - [`facts`]: what the collector reports about a node (role, name, states, key, group,
//!   identity anchors).
//! - [`render`]: the wording of one line per node.
//! - [`inline`]: refs written inside another node's line (`[@e43 laoreet]`).
//! - [`window`]: the full list, the query filter (whole rows and list items), paging and the
//!   node/character budget.
//! - [`delta`]: baselines and the differences between two windows.
//!
//! All of it is pure Rust with native unit tests. The engine that puts a walk, the refs and a
//! window together is `ops::observe::engine`, above both this module and `refs`.

pub mod delta;
pub mod facts;
pub mod inline;
pub mod render;
pub mod window;

pub use facts::{PROSE_ROLE, PageNode};
pub use render::{Detail, render_node};
