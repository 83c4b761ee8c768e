//! The replica itself: its NATS connection and node ID, the subscriptions every replica has,
//! and what it does with what other replicas say. The owner's side is in `owner.rs`, the
//! caller's in `caller.rs` (both `impl Cluster`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::fence::{Epoch, Fences, PeerKey};
use super::held::Owned;
use super::presence::{self, PRESENCE_EVERY, Presence};
use super::subjects;
use super::wire::ClusterMessage;
use crate::accounts::{Account, Peers, Replicas};
use crate::peer::PeerKind;
use crate::registry::Elsewhere;

/// How replicas tell each other they are alive (for `doctor`), every [`PRESENCE_EVERY`].
const ALIVE: &str = "tw.alive";

/// Why `--node-id` was refused.
pub fn check_node_id(id: &str) -> Result<(), String> {
    let ok = (1..=32).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "--node-id must be 1 to 32 characters of a-z, 0-9 and '-', not {id:?}"
        ))
    }
}

/// A fresh node ID: 8 hex characters.
pub fn random_node_id() -> String {
    crate::random::hex::<4>()
}

/// Why `--cluster` was refused.
pub fn check_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("nats://")
        .or_else(|| url.strip_prefix("tls://"));
    match rest {
        Some(host) if !host.is_empty() && !host.contains('/') => Ok(()),
        _ => Err(format!(
            "--cluster takes a NATS server's URL, nats://HOST:PORT (or tls://…), not {url:?}"
        )),
    }
}

/// What a replica does with a revocation another one announced.
type RevokedHook = Box<dyn Fn(&str) + Send + Sync>;

/// This replica's place in the cluster.
pub struct Cluster {
    /// Itself, for the links it gives registries.
    me: Weak<Cluster>,
    pub(super) client: async_nats::Client,
    pub(super) node: String,
    pub(super) url: String,
    /// Whether the NATS connection is up now.
    pub(super) connected: watch::Receiver<bool>,
    pub(super) fences: Fences,
    pub(super) presence: Presence,
    /// The peers this replica owns.
    pub(super) owned: Mutex<HashMap<PeerKey, Owned>>,
    /// Calls this replica runs for other replicas, by call UID, for their cancels.
    pub(super) running: Mutex<HashMap<String, CancellationToken>>,
    /// The accounts this replica has state for, to tell their peers an ended session.
    pub(super) accounts: Mutex<HashMap<String, Weak<Account>>>,
    /// Other replicas, when last heard from.
    pub(super) heard: Mutex<HashMap<String, Instant>>,
    /// What to do with a revocation another replica announced.
    pub(super) on_revoked: Mutex<Option<RevokedHook>>,
    /// Stops every task of this replica's cluster side (hub shutdown; a test's dead replica).
    pub(super) stopped: CancellationToken,
    /// The replies to this replica's remote calls: one subscription (`<prefix>.*`) shared by
    /// every call, each call's messages handed to it by its inbox's last token.
    pub(super) inbox_prefix: String,
    pub(super) waiting:
        Mutex<HashMap<String, tokio::sync::mpsc::UnboundedSender<async_nats::Message>>>,
}

/// A registry's place in the cluster: the replica and the account it belongs to (its
/// `registry::Elsewhere` is in `caller.rs`).
#[derive(Clone)]
pub struct Link {
    pub cluster: Arc<Cluster>,
    pub account: String,
}

/// What `doctor` says about the cluster.
#[derive(Debug, Clone)]
pub struct Status {
    pub node: String,
    pub url: String,
    pub connected: bool,
    /// Other replicas heard from in the last 3 s.
    pub replicas: Vec<String>,
}

impl Cluster {
    /// Connects to the NATS server at `url` as `node` and starts listening.
    pub async fn connect(url: &str, node: &str) -> Result<Arc<Cluster>, async_nats::ConnectError> {
        let (state_tx, connected) = watch::channel(false);
        let state_tx = Arc::new(state_tx);
        let events = state_tx.clone();
        let client = async_nats::ConnectOptions::new()
            .name(format!("tabwire-hub {node}"))
            // Replicas must notice a lost server in about a second, not NATS's default minutes.
            .ping_interval(Duration::from_secs(1))
            .event_callback(move |event| {
                let events = events.clone();
                async move {
                    match event {
                        async_nats::Event::Connected => {
                            tracing::info!("cluster: connected to NATS");
                            events.send_replace(true);
                        }
                        async_nats::Event::Disconnected | async_nats::Event::Closed => {
                            tracing::warn!("cluster: lost the connection to NATS ({event})");
                            events.send_replace(false);
                        }
                        other => tracing::debug!("cluster: NATS event: {other}"),
                    }
                }
            })
            .connect(url)
            .await?;
        state_tx.send_replace(true);
        let client_inbox = client.new_inbox();
        let cluster = Arc::new_cyclic(|me| Cluster {
            me: me.clone(),
            client,
            node: node.to_owned(),
            url: url.to_owned(),
            connected,
            fences: Fences::default(),
            presence: Presence::default(),
            owned: Mutex::default(),
            running: Mutex::default(),
            accounts: Mutex::default(),
            heard: Mutex::default(),
            on_revoked: Mutex::default(),
            stopped: CancellationToken::new(),
            inbox_prefix: client_inbox,
            waiting: Mutex::default(),
        });
        let replies = cluster
            .client
            .subscribe(format!("{}.*", cluster.inbox_prefix))
            .await
            .map_err(|error| std::io::Error::other(error.to_string()))?;
        cluster.spawn(Cluster::hand_out(Arc::downgrade(&cluster), replies));
        for subject in [
            subjects::ALL_FENCES.to_owned(),
            subjects::ALL_PRESENCE.to_owned(),
            subjects::ALL_SESSIONS.to_owned(),
            subjects::REVOKED.to_owned(),
            subjects::cancel(node),
            ALIVE.to_owned(),
        ] {
            let subscriber = cluster
                .client
                .subscribe(subject)
                .await
                .map_err(|error| std::io::Error::other(error.to_string()))?;
            let weak = Arc::downgrade(&cluster);
            cluster.spawn(listen(weak, subscriber));
        }
        cluster.spawn(refresh(Arc::downgrade(&cluster)));
        // The subscriptions reach the server before anyone relies on them.
        let _ = cluster.client.flush().await;
        tracing::info!("cluster: node {node} joined {url}");
        Ok(cluster)
    }

    /// This replica's node ID.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Whether the NATS connection is up.
    pub fn is_connected(&self) -> bool {
        *self.connected.borrow()
    }

    /// For `doctor`.
    pub fn status(&self) -> Status {
        let mut replicas: Vec<String> = self
            .heard
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, at)| at.elapsed() < presence::PRESENCE_TTL)
            .map(|(node, _)| node.clone())
            .collect();
        replicas.sort();
        Status {
            node: self.node.clone(),
            url: self.url.clone(),
            connected: self.is_connected(),
            replicas,
        }
    }

    /// Runs `task` until it ends or this replica's cluster side stops.
    pub(super) fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let stopped = self.stopped.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = stopped.cancelled() => {}
                () = task => {}
            }
        });
    }

    /// Publishes `message` on `subject`, in the background (callers may be synchronous).
    pub(super) fn publish(&self, subject: String, message: &ClusterMessage) {
        if self.stopped.is_cancelled() {
            return;
        }
        let client = self.client.clone();
        let payload = message.to_bytes();
        self.spawn(async move {
            if let Err(error) = client.publish(subject, payload.into()).await {
                tracing::warn!(%error, "cluster: publish failed");
            }
        });
    }

    /// Stops listening and answering: the hub is shutting down (or, in tests, the replica
    /// "dies": its peers' calls go unanswered).
    pub async fn stop(&self) {
        self.stopped.cancel();
        self.owned.lock().unwrap().clear();
        // Bounded: with NATS unreachable, a drain would wait for a server that is not there.
        let _ = tokio::time::timeout(Duration::from_secs(2), self.client.drain()).await;
    }

    /// Makes `account`'s registries part of the cluster and remembers the account for the
    /// sessions other replicas see end.
    pub fn join(&self, account: &Arc<Account>) {
        let Some(cluster) = self.me.upgrade() else {
            return;
        };
        let link: Arc<dyn Elsewhere> = Arc::new(Link {
            cluster,
            account: account.name.clone(),
        });
        for registry in registries(account) {
            registry.join(link.clone());
        }
        self.accounts
            .lock()
            .unwrap()
            .insert(account.name.clone(), Arc::downgrade(account));
    }

    /// Tells the other replicas that an MCP session of `account` ended, so their peers of the
    /// account release its leases.
    pub fn session_ended(&self, account: &str, session: &str) {
        self.publish(
            subjects::session(account),
            &ClusterMessage::SessionEnded {
                account: account.to_owned(),
                session: session.to_owned(),
                node: self.node.clone(),
            },
        );
    }

    /// Tells the other replicas a token was revoked.
    pub fn revoked(&self, jti: &str) {
        self.publish(
            subjects::REVOKED.to_owned(),
            &ClusterMessage::Revoked {
                jti: jti.to_owned(),
                node: self.node.clone(),
            },
        );
    }

    /// Re-reads `auth`'s revocation list every second, so a revocation made on this replica's
    /// file is announced to the others within about a second.
    pub fn watch_revocations(&self, auth: Arc<crate::auth::Authenticator>) {
        self.spawn(async move {
            let mut every = tokio::time::interval(PRESENCE_EVERY);
            loop {
                every.tick().await;
                auth.recheck_revocations();
            }
        });
    }

    /// What to do when another replica announces a revocation.
    pub fn on_revoked(&self, hook: impl Fn(&str) + Send + Sync + 'static) {
        *self.on_revoked.lock().unwrap() = Some(Box::new(hook));
    }

    /// The peers of `account`'s kind `K` other replicas hold now.
    pub fn remote_peers<K: PeerKind>(&self, account: &str) -> Vec<presence::Remote> {
        self.presence.remote(account, K::NOUN)
    }

    /// Tells the registries of `account` (every account for `None`) to recompute whether any
    /// peer is connected, for whoever lists tools by it (device tools).
    fn recheck_connected(&self, account: Option<&str>) {
        let accounts: Vec<Arc<Account>> = self
            .accounts
            .lock()
            .unwrap()
            .iter()
            .filter(|(name, _)| account.is_none_or(|wanted| wanted == name.as_str()))
            .filter_map(|(_, weak)| weak.upgrade())
            .collect();
        for account in accounts {
            for registry in registries(&account) {
                registry.recheck_connected();
            }
        }
    }

    /// Handles one message from a subscription.
    fn received(&self, subject: &str, message: ClusterMessage) {
        match message {
            ClusterMessage::Takeover {
                account,
                kind,
                peer,
                epoch,
                node,
            } => {
                if subjects::fence(&account, &kind, &peer) != subject {
                    tracing::warn!(subject, "cluster: takeover on the wrong subject dropped");
                    return;
                }
                let key = (account, kind, peer);
                self.fences.seen(
                    &key,
                    Epoch {
                        epoch,
                        node: node.clone(),
                    },
                );
                if node != self.node {
                    self.fenced(&key, &Epoch { epoch, node });
                }
            }
            ClusterMessage::Presence {
                account,
                kind,
                node,
                peers,
            } => {
                if subjects::presence(&account, &kind) != subject {
                    tracing::warn!(subject, "cluster: presence on the wrong subject dropped");
                    return;
                }
                if node != self.node {
                    self.heard
                        .lock()
                        .unwrap()
                        .insert(node.clone(), Instant::now());
                    self.presence.heard(&account, &kind, &node, peers);
                    self.recheck_connected(Some(&account));
                }
            }
            ClusterMessage::SessionEnded {
                account,
                session,
                node,
            } => {
                if node == self.node || subjects::session(&account) != subject {
                    return;
                }
                let account = self.accounts.lock().unwrap().get(&account).cloned();
                if let Some(account) = account.and_then(|weak| weak.upgrade()) {
                    account.session_ended_here(&session);
                }
            }
            ClusterMessage::Revoked { jti, node } => {
                if node != self.node
                    && let Some(hook) = &*self.on_revoked.lock().unwrap()
                {
                    hook(&jti);
                }
            }
            ClusterMessage::Cancel { call_uid } => {
                if let Some(token) = self.running.lock().unwrap().get(&call_uid) {
                    token.cancel();
                }
            }
            ClusterMessage::Alive { node } => {
                if node != self.node {
                    self.heard.lock().unwrap().insert(node, Instant::now());
                }
            }
            other => tracing::debug!(subject, "cluster: unexpected {other:?}"),
        }
    }
}

/// A replica's accounts are the cluster's: each joins when it is created here.
impl Replicas for Cluster {
    fn joined(&self, account: &Arc<Account>) {
        Cluster::join(self, account);
    }

    fn session_ended(&self, account: &str, session: &str) {
        Cluster::session_ended(self, account, session);
    }
}

/// An account's registries, one per kind (`Account::peers`: what every kind shares, joining
/// the cluster among it).
fn registries(account: &Account) -> impl Iterator<Item = &dyn Peers> {
    tabwire_protocol::Kind::ALL
        .into_iter()
        .map(|kind| account.peers(kind))
}

/// Delivers a subscription's messages while the cluster lives.
async fn listen(cluster: Weak<Cluster>, mut subscriber: async_nats::Subscriber) {
    while let Some(message) = subscriber.next().await {
        let Some(cluster) = cluster.upgrade() else {
            return;
        };
        if let Some(parsed) = ClusterMessage::from_bytes(&message.payload) {
            cluster.received(message.subject.as_str(), parsed);
        }
    }
}

/// Repeats what this replica holds, and that it is alive, every [`PRESENCE_EVERY`], and at
/// once when the connection to NATS comes back, so that other replicas list its peers again
/// without waiting for the next tick.
async fn refresh(cluster: Weak<Cluster>) {
    let mut every = tokio::time::interval(PRESENCE_EVERY);
    let Some(mut connected) = cluster.upgrade().map(|cluster| cluster.connected.clone()) else {
        return;
    };
    loop {
        tokio::select! {
            _ = every.tick() => {}
            changed = connected.changed() => {
                if changed.is_err() {
                    return;
                }
                if !*connected.borrow_and_update() {
                    continue;
                }
            }
        }
        let Some(cluster) = cluster.upgrade() else {
            return;
        };
        cluster.publish(
            ALIVE.to_owned(),
            &ClusterMessage::Alive {
                node: cluster.node.clone(),
            },
        );
        cluster.publish_all_presence();
        // Another replica's word expires without a message: recompute.
        cluster.recheck_connected(None);
    }
}
