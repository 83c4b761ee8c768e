//! Accounts: the unit of isolation in hosted mode.
//!
//! Each account owns its own peer registries (a [`Registry`] per kind), so every lookup a tool
//! makes — listing, selecting, routing by `browserId`, picking the lone connected browser —
//! happens inside the caller's account and cannot name another account's peer: to a caller, a
//! browser of another account and a browser that never existed are the same thing. Local mode
//! has one account, [`LOCAL_ACCOUNT`], with no limits.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tabwire_protocol::{HubMessage, KINDS, Kind, KindSet, Listing, OpError};
use tokio::sync::Semaphore;

use crate::handshake_places::HandshakePlaces;
use crate::leases::ClientLabels;
use crate::peer::{PeerKind, Reach, each_kind};
use crate::registry::{Connection, Elsewhere, Refused, Registry};

/// The one account of local mode.
pub const LOCAL_ACCOUNT: &str = "local";

/// Per-account limits of hosted mode (docs/hosted.md).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Peers of each kind connected at once, by [`Kind::index`].
    pub peers: [usize; KINDS.len()],
    /// MCP sessions (with an `Mcp-Session-Id`) alive at once.
    pub sessions: usize,
    /// `/mcp` requests (POST, DELETE) open at once, until their answers are complete; also
    /// the tool calls running at once.
    pub requests: usize,
    /// The largest `/mcp` request body.
    pub body_bytes: usize,
}

impl Limits {
    /// How many peers of `kind` an account may have connected at once.
    pub fn peers(&self, kind: Kind) -> usize {
        self.peers[kind.index()]
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            peers: KINDS.map(|spec| spec.per_account),
            sessions: 32,
            requests: 32,
            body_bytes: 4 * 1024 * 1024,
        }
    }
}

/// One account's state.
pub struct Account {
    /// The account's name (a token's `sub`).
    pub name: String,
    /// The account's registry of each kind, by [`Kind::index`] ([`Account::peers`],
    /// [`Account::registry`]).
    registries: [Box<dyn Peers>; KINDS.len()],
    /// Permits for `/mcp` requests in flight.
    pub requests: Arc<Semaphore>,
    /// Permits for tool calls running. A call keeps running when its client goes away, so
    /// the request permits alone would not bound the work an account starts.
    pub calls: Arc<Semaphore>,
    /// Places for each kind's connections between upgrade and registration (the hello), by
    /// [`Kind::index`], so an account cannot hold many half-open connections on top of its
    /// registered peers.
    pub handshakes: [HandshakePlaces; KINDS.len()],
    /// Numbers the account's MCP sessions per client name, for the labels leases show.
    pub client_labels: ClientLabels,
    /// The replica cluster (`--cluster`), which hears of the account's ended sessions.
    pub cluster: Option<Arc<dyn Replicas>>,
}

impl Account {
    /// The account's registry of `kind`, for what every kind shares.
    pub fn peers(&self, kind: Kind) -> &dyn Peers {
        &*self.registries[kind.index()]
    }

    /// The account's registry of kind `K`, typed.
    pub fn registry<K: PeerKind>(&self) -> &Registry<K> {
        self.registries[K::SPEC.kind.index()]
            .as_any()
            .downcast_ref()
            .expect("each kind's registry sits at its kind's index")
    }

    /// Tells every connected peer of the account, of every kind, that an MCP session ended,
    /// so the leases it held lapse.
    pub fn session_ended(&self, session: &str) {
        self.session_ended_here(session);
        if let Some(cluster) = &self.cluster {
            cluster.session_ended(&self.name, session);
        }
    }

    /// [`Account::session_ended`] for the peers connected to this replica only (another
    /// replica said the session ended).
    pub fn session_ended_here(&self, session: &str) {
        let ended = HubMessage::SessionEnded {
            session: session.to_owned(),
        };
        for kind in Kind::ALL {
            self.peers(kind).broadcast(&ended);
        }
    }

    /// The kinds listed only while one is connected ([`Listing::WhileConnected`]) that have
    /// one connected now: whose tools a listing for this account shows besides the others.
    pub fn present(&self) -> KindSet {
        KINDS
            .iter()
            .filter(|spec| spec.listing == Listing::WhileConnected)
            .map(|spec| spec.kind)
            .filter(|kind| self.peers(*kind).any_connected())
            .collect()
    }
}

/// The replica cluster accounts belong to (`crate::cluster` implements it).
pub trait Replicas: Send + Sync {
    /// `account` was just created on this replica: its registries join the cluster.
    fn joined(&self, account: &Arc<Account>);
    /// An MCP session of `account` ended here: the other replicas tell their peers.
    fn session_ended(&self, account: &str, session: &str);
}

/// A peer as the code written once for every kind sees it ([`Peers::known`]).
#[derive(Debug, Clone)]
pub struct PeerView {
    /// Its ID.
    pub id: String,
    /// The name its user gave it (the peer's words where its kind says so).
    pub name: String,
    /// Whether it is connected now.
    pub connected: bool,
    /// Its software's versions in a few words ([`PeerKind::versions`]).
    pub versions: String,
    /// The protocol version its hello named.
    pub protocol_version: u32,
    /// How long ago it disconnected, while it is not connected.
    pub disconnected_for: Option<Duration>,
    /// Why it went away, in its own words.
    pub gone: Option<String>,
}

/// A registry of any kind, with what the code written once for every kind asks of it.
pub trait Peers: Send + Sync {
    /// Its kind.
    fn kind(&self) -> Kind;
    /// The registry itself, for [`Account::registry`].
    fn as_any(&self) -> &dyn Any;
    /// Every peer it knows, connected or not, in the registry's order.
    fn known(&self) -> Vec<PeerView>;
    /// The handshakes it turned away lately, oldest first.
    fn refusals(&self) -> Vec<Refused>;
    /// Makes it part of the replica cluster.
    fn join(&self, link: Arc<dyn Elsewhere>);
    /// Asks again whether any peer is connected (presence changed elsewhere).
    fn recheck_connected(&self);
    /// Sends `message` to every connected peer.
    fn broadcast(&self, message: &HubMessage);
    /// Whether any peer is connected.
    fn any_connected(&self) -> bool;
    /// Changes of [`Peers::any_connected`].
    fn watch_connected(&self) -> tokio::sync::watch::Receiver<bool>;
    /// The connection of the peer `id`, or the kind's not-found or disconnected error.
    fn connection(&self, id: &str) -> Result<Arc<Connection>, OpError>;
    /// The connected peers' IDs and names, in the registry's order.
    fn connected(&self) -> Vec<(String, String)>;
    /// What a person does to connect one.
    fn connect_hint(&self, reach: &Reach) -> String;
}

impl<K: PeerKind> Peers for Registry<K> {
    fn kind(&self) -> Kind {
        K::SPEC.kind
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn known(&self) -> Vec<PeerView> {
        self.list()
            .into_iter()
            .map(|peer| PeerView {
                id: peer.id().to_owned(),
                name: peer.name().to_owned(),
                connected: peer.connected,
                versions: K::versions(&peer.hello),
                protocol_version: K::protocol_version(&peer.hello),
                disconnected_for: peer.disconnected_for,
                gone: peer.gone,
            })
            .collect()
    }

    fn refusals(&self) -> Vec<Refused> {
        Registry::refusals(self)
    }

    fn join(&self, link: Arc<dyn Elsewhere>) {
        Registry::join(self, link);
    }

    fn recheck_connected(&self) {
        Registry::recheck_connected(self);
    }

    fn broadcast(&self, message: &HubMessage) {
        Registry::broadcast(self, message);
    }

    fn any_connected(&self) -> bool {
        Registry::any_connected(self)
    }

    fn watch_connected(&self) -> tokio::sync::watch::Receiver<bool> {
        Registry::watch_connected(self)
    }

    fn connection(&self, id: &str) -> Result<Arc<Connection>, OpError> {
        Registry::connection(self, id)
    }

    fn connected(&self) -> Vec<(String, String)> {
        self.list()
            .into_iter()
            .filter(|peer| peer.connected)
            .map(|peer| (peer.id().to_owned(), peer.name().to_owned()))
            .collect()
    }

    fn connect_hint(&self, reach: &Reach) -> String {
        K::connect_hint(reach)
    }
}

/// A kind of peer an account keeps a registry of: every kind, for code generic over kinds.
pub trait Registered: PeerKind {
    /// The account's registry of this kind.
    fn registry(account: &Account) -> &Registry<Self> {
        account.registry::<Self>()
    }
    /// The account's places for connections of this kind in their handshake.
    fn handshakes(account: &Account) -> &HandshakePlaces {
        &account.handshakes[Self::SPEC.kind.index()]
    }
}

impl<K: PeerKind> Registered for K {}

/// A registry of kind `K`, with hosted mode's limit of its kind (`peers`) or local mode's none.
fn registry<K: PeerKind>(peers: Option<[usize; KINDS.len()]>) -> Box<dyn Peers> {
    Box::new(match peers {
        Some(peers) => Registry::<K>::with_limit(peers[K::SPEC.kind.index()]),
        None => Registry::<K>::default(),
    })
}

/// Every account seen since the hub started.
pub struct Accounts {
    map: Mutex<HashMap<String, Arc<Account>>>,
    limits: Option<Limits>,
    /// The replica cluster every account joins (`--cluster`).
    cluster: Option<Arc<dyn Replicas>>,
}

/// Connections of local mode that may be in their handshake at once. Anyone on the machine can
/// open `/browser` before proving anything, and each may send up to a frame's size: this bounds
/// what unproven connections can hold.
pub const LOCAL_HANDSHAKES: usize = 8;

impl Accounts {
    /// Local mode: one account, no limits.
    pub fn local() -> Self {
        Accounts {
            map: Mutex::new(HashMap::new()),
            limits: None,
            cluster: None,
        }
    }

    /// Hosted mode: accounts appear with their first valid token.
    pub fn hosted(limits: Limits) -> Self {
        Accounts {
            map: Mutex::new(HashMap::new()),
            limits: Some(limits),
            cluster: None,
        }
    }

    /// The same accounts as replicas of `cluster`: each account's peers are owned here or
    /// reached through NATS.
    pub fn with_cluster(mut self, cluster: Arc<dyn Replicas>) -> Self {
        self.cluster = Some(cluster);
        self
    }

    /// The limits, in hosted mode.
    pub fn limits(&self) -> Option<Limits> {
        self.limits
    }

    /// The named account, created on first use. Only ever called with an account name taken
    /// from a verified token (or [`LOCAL_ACCOUNT`]).
    pub fn get(&self, name: &str) -> Arc<Account> {
        let mut map = self.map.lock().unwrap();
        map.entry(name.to_owned())
            .or_insert_with(|| {
                // Local mode has no limits, but bounds what unproven connections can hold.
                let (peers, handshakes, requests) = match self.limits {
                    Some(limits) => (Some(limits.peers), limits.peers, limits.requests),
                    None => (
                        None,
                        [LOCAL_HANDSHAKES; KINDS.len()],
                        Semaphore::MAX_PERMITS,
                    ),
                };
                let account = Arc::new(Account {
                    name: name.to_owned(),
                    registries: each_kind!(K => registry::<K>(peers)),
                    requests: Arc::new(Semaphore::new(requests)),
                    calls: Arc::new(Semaphore::new(requests)),
                    handshakes: handshakes.map(HandshakePlaces::new),
                    client_labels: ClientLabels::default(),
                    cluster: self.cluster.clone(),
                });
                if let Some(cluster) = &self.cluster {
                    cluster.joined(&account);
                }
                account
            })
            .clone()
    }

    /// The local account.
    pub fn local_account(&self) -> Arc<Account> {
        self.get(LOCAL_ACCOUNT)
    }
}
