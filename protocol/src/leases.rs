//! Leases (issue 14 §3): which MCP session holds a unit of a peer — a browser tab today, a
//! device later — so that two agents never change the same one.
//!
//! The hub knows who calls ([`LeaseHolder`], sent with every request that can change
//! something); the peer knows which unit a request lands on only once it has resolved it (the
//! active tab, say), so the table is kept and checked by the peer, at the point of effect.
//! [`LeaseTable`] is that table's logic, pure and generic over the unit's key, with the clock
//! passed in: the extension wraps it for tabs, a device backend will wrap it for devices.
//!
//! A lease is held by one session. It is claimed or renewed by that session's changing calls,
//! and lapses after its holder's idle time without one, when the holder releases it, or when
//! the peer is told the session ended. Reads never lease and are never refused.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Who makes a request, as the hub tells the peer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeaseHolder {
    /// The MCP session, opaque and unique within one hub process.
    pub session: String,
    /// The label people see (the MCP client's name and a number: `Claude Code · 2`), at most
    /// [`MAX_CLIENT_LABEL`] characters.
    pub client: String,
    /// How long the session's leases last without a changing call, in milliseconds.
    pub idle_ms: u64,
}

/// The longest client label the hub sends.
pub const MAX_CLIENT_LABEL: usize = 64;

/// One held lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// Who holds it.
    pub holder: LeaseHolder,
    /// When its holder last claimed or renewed it (the table's clock, in milliseconds).
    pub last_used_ms: u64,
}

impl Lease {
    /// When it lapses unless renewed.
    pub fn lapses_at(&self) -> u64 {
        self.last_used_ms.saturating_add(self.holder.idle_ms)
    }

    fn live(&self, now_ms: u64) -> bool {
        now_ms < self.lapses_at()
    }
}

/// A refusal: the unit is leased to another session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The holder's client label.
    pub client: String,
    /// How long until the lease lapses if its holder stays idle, in milliseconds.
    pub lapses_in_ms: u64,
}

impl Held {
    /// Whole seconds until the lease lapses, rounded up (never "in 0 s" while it holds).
    pub fn lapses_in_secs(&self) -> u64 {
        self.lapses_in_ms.div_ceil(1000)
    }
}

impl fmt::Display for Held {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "leased to {} (another agent session) for {} s more unless it keeps using it",
            self.client,
            self.lapses_in_secs()
        )
    }
}

/// What a successful claim did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// The unit was free (never leased, released, or its lease had lapsed) and is now the
    /// caller's. `lapsed` is the holder of a lease that had lapsed by idle time, if any.
    New {
        /// The previous, lapsed holder.
        lapsed: Option<LeaseHolder>,
    },
    /// The caller already held it; its idle time starts again.
    Renewed,
}

/// What releasing one unit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Released {
    /// The caller's lease ended.
    Released,
    /// Nobody held it (or the lease had lapsed already): nothing changed.
    NotLeased,
}

/// The leases of one peer's units, keyed by `K` (a tab ID).
#[derive(Debug, Clone)]
pub struct LeaseTable<K> {
    leases: BTreeMap<K, Lease>,
}

impl<K> Default for LeaseTable<K> {
    fn default() -> Self {
        LeaseTable {
            leases: BTreeMap::new(),
        }
    }
}

impl<K: Ord + Copy> LeaseTable<K> {
    /// The live lease on `key`, if any.
    pub fn lease(&self, key: K, now_ms: u64) -> Option<&Lease> {
        self.leases.get(&key).filter(|lease| lease.live(now_ms))
    }

    /// Whether `session` (`None`: a caller the hub did not name) may change `key` now: yes
    /// unless another session holds a live lease on it.
    pub fn check(&self, key: K, session: Option<&str>, now_ms: u64) -> Result<(), Held> {
        match self.lease(key, now_ms) {
            Some(lease) if Some(lease.holder.session.as_str()) != session => Err(Held {
                client: lease.holder.client.clone(),
                lapses_in_ms: lease.lapses_at() - now_ms,
            }),
            _ => Ok(()),
        }
    }

    /// Leases `key` to `holder`, or renews its lease; refused while another session holds it.
    /// A renewal takes the holder's latest label and idle time.
    pub fn claim(&mut self, key: K, holder: &LeaseHolder, now_ms: u64) -> Result<Claimed, Held> {
        self.check(key, Some(&holder.session), now_ms)?;
        let lease = Lease {
            holder: holder.clone(),
            last_used_ms: now_ms,
        };
        Ok(match self.leases.insert(key, lease) {
            Some(old) if old.holder.session == holder.session && old.live(now_ms) => {
                Claimed::Renewed
            }
            Some(old) => Claimed::New {
                lapsed: Some(old.holder),
            },
            None => Claimed::New { lapsed: None },
        })
    }

    /// Ends `session`'s lease on `key`; refused when another session holds it.
    pub fn release(&mut self, key: K, session: &str, now_ms: u64) -> Result<Released, Held> {
        self.check(key, Some(session), now_ms)?;
        Ok(match self.leases.remove(&key) {
            Some(lease) if lease.live(now_ms) => Released::Released,
            _ => Released::NotLeased,
        })
    }

    /// Ends every lease `session` holds (its session ended); returns their keys.
    pub fn release_holder(&mut self, session: &str) -> Vec<K> {
        let keys: Vec<K> = self
            .leases
            .iter()
            .filter(|(_, lease)| lease.holder.session == session)
            .map(|(key, _)| *key)
            .collect();
        for key in &keys {
            self.leases.remove(key);
        }
        keys
    }

    /// Ends the leases whose idle time has run out; returns their keys.
    pub fn expire(&mut self, now_ms: u64) -> Vec<K> {
        let keys: Vec<K> = self
            .leases
            .iter()
            .filter(|(_, lease)| !lease.live(now_ms))
            .map(|(key, _)| *key)
            .collect();
        for key in &keys {
            self.leases.remove(key);
        }
        keys
    }

    /// Drops the lease on `key` whoever holds it (the unit is gone, or a person took it back);
    /// returns its holder.
    pub fn forget(&mut self, key: K) -> Option<LeaseHolder> {
        self.leases.remove(&key).map(|lease| lease.holder)
    }

    /// Ends every lease (the connection to the hub whose sessions held them ended); returns
    /// their keys.
    pub fn clear(&mut self) -> Vec<K> {
        std::mem::take(&mut self.leases).into_keys().collect()
    }

    /// When the next lease lapses unless renewed.
    pub fn next_lapse(&self) -> Option<u64> {
        self.leases.values().map(Lease::lapses_at).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(session: &str, idle_ms: u64) -> LeaseHolder {
        LeaseHolder {
            session: session.into(),
            client: format!("Client {session}"),
            idle_ms,
        }
    }

    #[test]
    fn the_first_changing_call_leases_and_another_session_is_refused_until_it_lapses() {
        let mut table = LeaseTable::default();
        let a = holder("a", 1000);
        let b = holder("b", 1000);
        assert_eq!(table.claim(7, &a, 100), Ok(Claimed::New { lapsed: None }));
        assert_eq!(table.claim(7, &a, 600), Ok(Claimed::Renewed));
        let refused = table.claim(7, &b, 700).unwrap_err();
        assert_eq!(refused.client, "Client a");
        assert_eq!(refused.lapses_in_ms, 900, "renewed at 600 for 1000 ms");
        assert_eq!(refused.lapses_in_secs(), 1);
        assert_eq!(table.check(7, None, 700), Err(refused.clone()));
        assert!(refused.to_string().contains("Client a"), "{refused}");
        // Other tabs are free.
        assert_eq!(table.check(8, Some("b"), 700), Ok(()));
        // Idle past the lease's time: b takes it over, learning who held it.
        assert_eq!(
            table.claim(7, &b, 1600),
            Ok(Claimed::New {
                lapsed: Some(a.clone())
            })
        );
        assert!(table.check(7, Some("a"), 1601).is_err());
    }

    #[test]
    fn a_lapsed_lease_of_ones_own_is_claimed_anew() {
        let mut table = LeaseTable::default();
        let a = holder("a", 10);
        table.claim(1, &a, 0).unwrap();
        assert_eq!(
            table.claim(1, &a, 10),
            Ok(Claimed::New {
                lapsed: Some(a.clone())
            })
        );
    }

    #[test]
    fn release_is_the_holders_alone_and_a_free_tab_is_a_no_op() {
        let mut table = LeaseTable::default();
        let a = holder("a", 1000);
        table.claim(3, &a, 0).unwrap();
        assert_eq!(
            table.release(3, "b", 1).unwrap_err().client,
            "Client a",
            "another session cannot release it"
        );
        assert_eq!(table.release(3, "a", 2), Ok(Released::Released));
        assert_eq!(table.release(3, "a", 3), Ok(Released::NotLeased));
        assert_eq!(table.release(4, "b", 3), Ok(Released::NotLeased));
        table.claim(3, &a, 10).unwrap();
        assert_eq!(
            table.release(3, "b", 2000),
            Ok(Released::NotLeased),
            "a lapsed lease holds nothing"
        );
    }

    #[test]
    fn a_sessions_end_releases_all_it_holds_and_nothing_else() {
        let mut table = LeaseTable::default();
        let (a, b) = (holder("a", 1000), holder("b", 1000));
        for tab in [1, 2, 5] {
            table.claim(tab, &a, 0).unwrap();
        }
        table.claim(3, &b, 0).unwrap();
        assert_eq!(table.release_holder("a"), vec![1, 2, 5]);
        assert!(table.release_holder("a").is_empty());
        assert!(table.lease(3, 1).is_some());
        assert_eq!(table.forget(3).map(|h| h.session), Some("b".into()));
        assert!(table.clear().is_empty());
    }

    #[test]
    fn idle_leases_expire_by_the_clock_given() {
        let mut table = LeaseTable::default();
        table.claim(1, &holder("a", 100), 0).unwrap();
        table.claim(2, &holder("b", 500), 0).unwrap();
        assert_eq!(table.next_lapse(), Some(100));
        assert!(table.expire(99).is_empty());
        assert_eq!(table.expire(100), vec![1]);
        assert_eq!(table.next_lapse(), Some(500));
        assert!(table.lease(2, 499).is_some());
        assert!(table.lease(2, 500).is_none());
        assert_eq!(table.clear(), vec![2]);
        assert_eq!(table.next_lapse(), None);
    }

    #[test]
    fn the_holder_is_camel_case_on_the_wire() {
        let json = serde_json::to_string(&holder("s1", 600_000)).unwrap();
        assert_eq!(
            json,
            r#"{"session":"s1","client":"Client s1","idleMs":600000}"#
        );
    }
}
