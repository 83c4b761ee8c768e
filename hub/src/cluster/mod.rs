//! Hub replicas on NATS (docs/cluster.md).
//!
//! With `--cluster nats://…`, several hubs of one hosted deployment share one NATS server. A
//! peer's WebSocket lands on any replica, which becomes its *owner* ([`owner`], [`held`]): it subscribes
//! to the peer's subject ([`subjects`]) in a queue group, fences any older owner ([`fence`]) and
//! tells the others it holds the peer ([`presence`]). A call through any other replica goes to
//! that subject and waits on its own inbox ([`caller`]); a call for a peer the replica holds
//! itself never touches NATS. Everything on the wire is one JSON type ([`wire`]).
//!
//! The code is written once over `PeerKind`: a kind's subjects use `K::NOUN`. `mod.rs` only
//! declares and re-exports: the replica itself is [`node`].

pub mod caller;
pub mod doctor;
pub mod fence;
pub mod held;
pub mod node;
pub mod owner;
pub mod presence;
pub mod subjects;
pub mod wire;

#[cfg(test)]
mod affinity_tests;
#[cfg(test)]
mod nats_test_server;
#[cfg(test)]
mod tests;

pub use node::{Cluster, Link, Status, check_node_id, check_url, random_node_id};
pub use subjects::{local_session, tag_session};
