//! Accounts: the unit of isolation in hosted mode.
//!
//! Each account owns its own peer registries ([`Registry`] of browsers and of devices), so every lookup a tool
//! makes — listing, selecting, routing by `browserId`, picking the lone connected browser —
//! happens inside the caller's account and cannot name another account's peer: to a caller, a
//! browser of another account and a browser that never existed are the same thing. Local mode
//! has one account, [`LOCAL_ACCOUNT`], with no limits.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tabwire_protocol::HubMessage;
use tokio::sync::Semaphore;

use crate::handshake_places::HandshakePlaces;
use crate::leases::ClientLabels;
use crate::peer::{Browser, Device, PeerKind};
use crate::registry::Registry;

/// The one account of local mode.
pub const LOCAL_ACCOUNT: &str = "local";

/// Per-account limits of hosted mode (docs/hosted.md).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Browsers connected at once.
    pub browsers: usize,
    /// Devices connected at once.
    pub devices: usize,
    /// MCP sessions (with an `Mcp-Session-Id`) alive at once.
    pub sessions: usize,
    /// `/mcp` requests (POST, DELETE) open at once, until their answers are complete; also
    /// the tool calls running at once.
    pub requests: usize,
    /// The largest `/mcp` request body.
    pub body_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            browsers: 8,
            devices: 8,
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
    /// The account's browsers.
    pub browsers: Registry<Browser>,
    /// The account's devices.
    pub devices: Registry<Device>,
    /// Permits for `/mcp` requests in flight.
    pub requests: Arc<Semaphore>,
    /// Permits for tool calls running. A call keeps running when its client goes away, so
    /// the request permits alone would not bound the work an account starts.
    pub calls: Arc<Semaphore>,
    /// Places for `/browser` connections between upgrade and registration (the hello), so an
    /// account cannot hold many half-open connections on top of its registered browsers.
    pub handshakes: HandshakePlaces,
    /// The same for `/device` connections.
    pub device_handshakes: HandshakePlaces,
    /// Numbers the account's MCP sessions per client name, for the labels leases show.
    pub client_labels: ClientLabels,
    /// The replica cluster (`--cluster`), which hears of the account's ended sessions.
    pub cluster: Option<Arc<dyn Replicas>>,
}

impl Account {
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
        self.browsers.broadcast(&ended);
        self.devices.broadcast(&ended);
    }
}

/// The replica cluster accounts belong to (`crate::cluster` implements it).
pub trait Replicas: Send + Sync {
    /// `account` was just created on this replica: its registries join the cluster.
    fn joined(&self, account: &Arc<Account>);
    /// An MCP session of `account` ended here: the other replicas tell their peers.
    fn session_ended(&self, account: &str, session: &str);
}

/// A kind of peer an account keeps a registry of.
pub trait Registered: PeerKind {
    /// The account's registry of this kind.
    fn registry(account: &Account) -> &Registry<Self>;
    /// The account's places for connections of this kind in their handshake.
    fn handshakes(account: &Account) -> &HandshakePlaces;
}

impl Registered for Browser {
    fn registry(account: &Account) -> &Registry<Browser> {
        &account.browsers
    }

    fn handshakes(account: &Account) -> &HandshakePlaces {
        &account.handshakes
    }
}

impl Registered for Device {
    fn registry(account: &Account) -> &Registry<Device> {
        &account.devices
    }

    fn handshakes(account: &Account) -> &HandshakePlaces {
        &account.device_handshakes
    }
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
                let (browsers, devices, requests, handshakes, device_handshakes) = match self.limits
                {
                    Some(limits) => (
                        Registry::with_limit(limits.browsers),
                        Registry::with_limit(limits.devices),
                        limits.requests,
                        limits.browsers,
                        limits.devices,
                    ),
                    None => (
                        Registry::default(),
                        Registry::default(),
                        Semaphore::MAX_PERMITS,
                        LOCAL_HANDSHAKES,
                        LOCAL_HANDSHAKES,
                    ),
                };
                let account = Arc::new(Account {
                    name: name.to_owned(),
                    browsers,
                    devices,
                    requests: Arc::new(Semaphore::new(requests)),
                    calls: Arc::new(Semaphore::new(requests)),
                    handshakes: HandshakePlaces::new(handshakes),
                    device_handshakes: HandshakePlaces::new(device_handshakes),
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
