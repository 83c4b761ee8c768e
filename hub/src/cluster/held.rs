//! The peers a replica owns: each with its connection, its takeover epoch and what presence
//! says of it.

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::fence::Epoch;
use crate::registry::Connection;

/// A peer this replica owns.
pub struct Owned {
    pub number: u64,
    pub epoch: Epoch,
    pub hello: serde_json::Value,
    pub credential: String,
    pub since: Instant,
    pub connection: Arc<Connection>,
    /// Ends the subscription to the peer's subject.
    pub listening: CancellationToken,
}
