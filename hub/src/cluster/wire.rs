//! What replicas say to each other: one JSON message type on every subject.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tabwire_protocol::{LeaseHolder, OpError, OpResult, Operation, TabId};

/// The largest piece of an answer in one NATS message. nats-server's default `max_payload`
/// is 1 MiB; half of it leaves room for headers and a server configured lower.
pub const CHUNK_BYTES: usize = 512 * 1024;

/// The header that numbers the pieces of a chunked answer: `index/count`.
pub const CHUNK_HEADER: &str = "Tw-Chunk";

/// Every message replicas exchange (JSON, tagged by `type`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ClusterMessage {
    /// A call for a peer, sent to its subject with a reply inbox.
    #[serde(rename_all = "camelCase")]
    Call {
        account: String,
        kind: String,
        peer: String,
        tool: String,
        tab_id: Option<TabId>,
        /// The caller (its session is the request's viewer); the owner sends it on as the
        /// local path does, so leases held in the peer hold across replicas.
        holder: Option<LeaseHolder>,
        /// Boxed, as the outcome is: an operation is large beside the other messages.
        op: Box<Operation>,
        deadline_ms: u64,
        /// Names the call for a cancel.
        call_uid: String,
        from_node: String,
    },
    /// The owner took the call (on the inbox).
    Accepted { node: String },
    /// The owner still runs it (on the inbox, every 500 ms).
    Working { node: String },
    /// The call's outcome (on the inbox; chunked when large). Boxed: an outcome is large
    /// beside the other messages.
    Answer {
        outcome: Box<Result<OpResult, OpError>>,
        node: String,
    },
    /// Stop a call (on `tw.cancel.<owner node>`).
    #[serde(rename_all = "camelCase")]
    Cancel { call_uid: String },
    /// A replica became the owner of a peer (on `tw.fence.…`).
    Takeover {
        account: String,
        kind: String,
        peer: String,
        epoch: u64,
        node: String,
    },
    /// The peers of one account and kind a replica holds (on `tw.presence.…`).
    Presence {
        account: String,
        kind: String,
        node: String,
        peers: Vec<PresentPeer>,
    },
    /// An MCP session of an account ended (on `tw.session.<account>`).
    SessionEnded {
        account: String,
        session: String,
        node: String,
    },
    /// A replica is alive (on `tw.alive`, every second), for `doctor`.
    Alive { node: String },
    /// A token was revoked (on `tw.revoked`).
    Revoked { jti: String, node: String },
}

/// One peer in a [`ClusterMessage::Presence`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PresentPeer {
    /// Its hello, as the kind's JSON.
    pub hello: Value,
    /// How long its connection has been open.
    pub connected_ms: u64,
    /// The credential it connected with (`token:<jti>`, never a secret): another credential
    /// presenting its ID on another replica is refused, as on one hub.
    #[serde(default)]
    pub credential: String,
}

impl ClusterMessage {
    /// The message as bytes to publish.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("cluster messages serialise")
    }

    /// A message from bytes received, `None` (logged) for anything else.
    pub fn from_bytes(bytes: &[u8]) -> Option<ClusterMessage> {
        match serde_json::from_slice(bytes) {
            Ok(message) => Some(message),
            Err(error) => {
                tracing::warn!(%error, "cluster: unreadable message dropped");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_as_tagged_json() {
        let message = ClusterMessage::Cancel {
            call_uid: "u1".into(),
        };
        let bytes = message.to_bytes();
        assert_eq!(&bytes[..], br#"{"type":"cancel","callUid":"u1"}"#);
        assert!(matches!(
            ClusterMessage::from_bytes(&bytes),
            Some(ClusterMessage::Cancel { call_uid }) if call_uid == "u1"
        ));
        assert!(ClusterMessage::from_bytes(b"{\"type\":\"nope\"}").is_none());
    }
}
