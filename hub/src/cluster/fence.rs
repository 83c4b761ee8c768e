//! Takeover epochs: which replica's connection of a peer is the current one.
//!
//! A replica that becomes a peer's owner takes an epoch `max(now in ms, highest seen + 1)`
//! (Lamport-style: it grows even when clocks disagree) and announces it on the peer's fence
//! subject. Every replica remembers the highest epoch it saw per peer; one that holds the peer
//! with a lower epoch drops its connection as replaced. Two takeovers in the same millisecond
//! are ordered by node ID, so exactly one of them wins everywhere.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// A peer across the cluster: account, kind, ID.
pub type PeerKey = (String, String, String);

/// An epoch and the node that took it: ordered by epoch, then node ID.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Epoch {
    pub epoch: u64,
    pub node: String,
}

/// The highest epoch seen per peer.
#[derive(Default)]
pub struct Fences {
    highest: Mutex<HashMap<PeerKey, Epoch>>,
}

/// How many peers' epochs are remembered; past this the table is cleared (a forgotten epoch
/// only means the next takeover starts from the clock, which is still above it).
const MAX_REMEMBERED: usize = 100_000;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|since| since.as_millis() as u64)
        .unwrap_or(0)
}

impl Fences {
    /// The epoch `node` takes for `peer` now, remembered as the highest.
    pub fn take(&self, peer: &PeerKey, node: &str) -> Epoch {
        let mut highest = self.highest.lock().unwrap();
        let floor = highest.get(peer).map_or(0, |seen| seen.epoch + 1);
        let epoch = Epoch {
            epoch: now_ms().max(floor),
            node: node.to_owned(),
        };
        if highest.len() >= MAX_REMEMBERED {
            highest.clear();
        }
        highest.insert(peer.clone(), epoch.clone());
        epoch
    }

    /// Records an epoch announced for `peer`; whether it is the highest seen.
    pub fn seen(&self, peer: &PeerKey, epoch: Epoch) -> bool {
        let mut highest = self.highest.lock().unwrap();
        match highest.get(peer) {
            Some(known) if *known >= epoch => false,
            _ => {
                highest.insert(peer.clone(), epoch);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> PeerKey {
        ("acct".into(), "browser".into(), "b1".into())
    }

    #[test]
    fn epochs_grow_past_anything_seen_even_from_a_clock_ahead() {
        let fences = Fences::default();
        let ahead = Epoch {
            epoch: now_ms() + 60_000,
            node: "n2".into(),
        };
        assert!(fences.seen(&key(), ahead.clone()));
        let mine = fences.take(&key(), "n1");
        assert!(mine > ahead, "{mine:?} {ahead:?}");
        assert!(
            !fences.seen(&key(), ahead),
            "an older takeover changes nothing"
        );
        let next = fences.take(&key(), "n1");
        assert!(next > mine);
    }

    #[test]
    fn the_same_millisecond_is_ordered_by_node() {
        let a = Epoch {
            epoch: 5,
            node: "n1".into(),
        };
        let b = Epoch {
            epoch: 5,
            node: "n2".into(),
        };
        assert!(b > a);
        let fences = Fences::default();
        assert!(fences.seen(&key(), a.clone()));
        assert!(fences.seen(&key(), b.clone()));
        assert!(!fences.seen(&key(), a));
    }
}
