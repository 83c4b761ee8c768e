//! Which peers other replicas hold, as they last said.
//!
//! Each replica publishes the peers it holds per account and kind on every connect and
//! disconnect, and all of them again every second; every replica keeps what others said in
//! memory for [`PRESENCE_TTL`] past its last refresh. So listing stays a synchronous read of
//! memory, and the peers of a replica that died vanish within the TTL. (A JetStream KV bucket
//! would need `-js` on the server and, for per-key expiry, nats-server 2.11; a scatter-gather
//! request on every listing would make `list_browsers` wait on the slowest replica.)

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::wire::PresentPeer;

/// How long a replica's word on its peers stands without a refresh.
pub const PRESENCE_TTL: Duration = Duration::from_secs(3);

/// How often a replica repeats what it holds.
pub const PRESENCE_EVERY: Duration = Duration::from_secs(1);

/// (account, kind) -> node -> what it said and when.
type Said = HashMap<(String, String), HashMap<String, (Vec<PresentPeer>, Instant)>>;

/// What other replicas said they hold.
#[derive(Default)]
pub struct Presence {
    said: Mutex<Said>,
}

/// A peer another replica holds.
#[derive(Debug, Clone)]
pub struct Remote {
    pub peer: PresentPeer,
    pub node: String,
    /// When that replica last said so.
    pub heard: Instant,
}

impl Presence {
    /// Records what `node` holds of `account`'s `kind` now.
    pub fn heard(&self, account: &str, kind: &str, node: &str, peers: Vec<PresentPeer>) {
        let mut said = self.said.lock().unwrap();
        let nodes = said
            .entry((account.to_owned(), kind.to_owned()))
            .or_default();
        if peers.is_empty() {
            nodes.remove(node);
        } else {
            nodes.insert(node.to_owned(), (peers, Instant::now()));
        }
        // Drop what expired everywhere, so the table stays as small as the live cluster.
        said.retain(|_, nodes| {
            nodes.retain(|_, (_, at)| at.elapsed() < PRESENCE_TTL);
            !nodes.is_empty()
        });
    }

    /// The peers of `account`'s `kind` other replicas hold, by what they said within the TTL.
    pub fn remote(&self, account: &str, kind: &str) -> Vec<Remote> {
        let said = self.said.lock().unwrap();
        let Some(nodes) = said.get(&(account.to_owned(), kind.to_owned())) else {
            return Vec::new();
        };
        let mut out: Vec<Remote> = nodes
            .iter()
            .filter(|(_, (_, at))| at.elapsed() < PRESENCE_TTL)
            .flat_map(|(node, (peers, at))| {
                peers.iter().map(|peer| Remote {
                    peer: peer.clone(),
                    node: node.clone(),
                    heard: *at,
                })
            })
            .collect();
        // The latest word first, so a peer two replicas claim (a takeover in progress) shows
        // once, as its newest owner said.
        out.sort_by_key(|remote| std::cmp::Reverse(remote.heard));
        out
    }

    /// Forgets everything `node` said (it left).
    pub fn forget(&self, node: &str) {
        let mut said = self.said.lock().unwrap();
        for nodes in said.values_mut() {
            nodes.remove(node);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn peer(id: &str) -> PresentPeer {
        PresentPeer {
            hello: json!({"browserId": id}),
            connected_ms: 1,
            credential: "token:t".into(),
        }
    }

    #[test]
    fn a_replica_that_says_nothing_more_is_forgotten_after_the_ttl() {
        let presence = Presence::default();
        presence.heard("a", "browser", "n2", vec![peer("b1")]);
        assert_eq!(presence.remote("a", "browser").len(), 1);
        assert!(
            presence.remote("other", "browser").is_empty(),
            "per account"
        );
        assert!(presence.remote("a", "device").is_empty(), "per kind");
        presence.heard("a", "browser", "n2", vec![]);
        assert!(
            presence.remote("a", "browser").is_empty(),
            "an empty list clears"
        );
        presence.heard("a", "browser", "n3", vec![peer("b1")]);
        presence.forget("n3");
        assert!(presence.remote("a", "browser").is_empty());
    }
}
