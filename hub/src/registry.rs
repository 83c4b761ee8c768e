//! The registry of one kind of peer (browsers) known to one account, and request correlation
//! on each connection.
//!
//! A peer is known from its first hello until the hub stops; it is *connected* while it holds
//! its WebSocket. Requests go to the exact connection of the peer the caller chose: the
//! registry never substitutes another. When a connection ends, every request still waiting on
//! it fails at once (`BROWSER_DISCONNECTED` for a browser) instead of waiting for its deadline.
//! When the MCP call a request serves is cancelled, the peer is told (`HubMessage::Cancel`) and
//! its answer, which says whether input had gone out, is waited for a short while.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tabwire_protocol::{
    ErrorCode, HubMessage, LeaseHolder, OpError, OpResult, Operation, Refusal, Request, TabId,
};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::peer::PeerKind;

/// How many peers of one kind an account remembers. Beyond this, the disconnected ones seen
/// longest ago are forgotten, so a misbehaving local client cannot grow the registry without
/// bound.
pub const MAX_KNOWN_PEERS: usize = 64;

/// Extra time the hub waits beyond a request's deadline, so that the extension's own, more
/// precise timeout error (which names the page or the queue) arrives before the hub gives up on
/// the bridge.
const BRIDGE_GRACE: Duration = Duration::from_secs(2);

/// How long the hub waits for a peer to answer a request it cancelled. A peer stops a request
/// at once (a queued one never runs, a running one at its next await), so the answer comes in
/// milliseconds; a peer that says nothing by then is taken to have done whatever a request of
/// its kind may do (a changing one: the action may have happened).
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// What an agent is told about a peer.
#[derive(Debug, Clone)]
pub struct PeerInfo<K: PeerKind> {
    /// Its hello: ID, name, versions.
    pub hello: K::Hello,
    /// Whether a connection is open now.
    pub connected: bool,
    /// How long the current connection has been open.
    pub connected_for: Option<Duration>,
    /// Why it went away, when its last connection said so before closing (a device backend's
    /// `offline`, `unauthorized: …`).
    pub gone: Option<String>,
    /// How long ago its last connection ended, while it is not connected.
    pub disconnected_for: Option<Duration>,
}

/// A connection of this kind that the hub turned away during its handshake (an incompatible
/// protocol version, a missing pairing, a credential in use), kept so that `doctor` can tell a
/// person why their browser or device does not show up. Only the refusal's code and the hub's
/// own message are kept, but the message may name what the peer chose (the ID it presented, the
/// ID it tried to pair again): `doctor` marks the check as quoting a peer, and its tool fences
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The refusal's code.
    pub code: ErrorCode,
    /// The hub's message, as the peer was told.
    pub message: String,
    /// When it happened.
    pub at: Instant,
}

/// How long a refusal is worth reporting: a peer that keeps retrying is refused again and
/// again, one that gave up stops being news.
pub const REFUSALS_KEPT_FOR: Duration = Duration::from_secs(15 * 60);

/// How many refusals a registry keeps (the latest ones).
const MAX_REFUSALS: usize = 8;

impl<K: PeerKind> PeerInfo<K> {
    /// The stable ID from its hello.
    pub fn id(&self) -> &str {
        K::id(&self.hello)
    }

    /// The name its user gave it.
    pub fn name(&self) -> &str {
        K::name(&self.hello)
    }
}

/// How a registry reaches the peers other hub replicas hold: one account's place in a replica
/// cluster (`crate::cluster` implements it). It knows no kinds, so hellos cross as JSON.
pub trait Elsewhere: Send + Sync {
    /// This replica now holds `connection`, of a peer of kind `kind` with this hello, connected
    /// with `credential` (its name, never a secret).
    fn own(
        &self,
        kind: &'static str,
        hello: serde_json::Value,
        credential: &str,
        connection: &Arc<Connection>,
    );
    /// It no longer holds the peer of `connection`, if that is the connection it owns it by.
    fn disown(&self, kind: &'static str, connection: &Connection);
    /// The peers of `kind` other replicas say they hold.
    fn peers(&self, kind: &'static str) -> Vec<RemotePeer>;
    /// Whether the other replicas can be reached now (this replica is connected to NATS).
    fn reachable(&self) -> bool;
    /// [`Connection::request_unless`] for `connection`, a peer another replica holds.
    #[allow(clippy::too_many_arguments)]
    fn request<'a>(
        &'a self,
        connection: &'a Connection,
        tool: &'a str,
        tab_id: Option<TabId>,
        holder: Option<&'a LeaseHolder>,
        op: Operation,
        deadline: Duration,
        cancel: &'a CancellationToken,
    ) -> Answering<'a>;
}

/// The answer of a call to a peer on another replica, on its way.
pub type Answering<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<OpResult, OpError>> + Send + 'a>>;

/// A peer another replica holds, as it said.
#[derive(Debug, Clone)]
pub struct RemotePeer {
    /// Its hello, as the kind's JSON.
    pub hello: serde_json::Value,
    /// How long its connection has been open.
    pub connected_ms: u64,
    /// The credential it connected with.
    pub credential: String,
}

/// All peers of kind `K` an account has seen since the hub started.
pub struct Registry<K: PeerKind> {
    peers: Mutex<HashMap<String, Entry<K>>>,
    /// How many may be connected at once; `None` for no limit (local mode).
    limit: Option<usize>,
    /// Numbers connections so a late cleanup of an old connection cannot unregister the newer
    /// connection of the same peer.
    next_connection: AtomicU64,
    /// Whether any peer is connected, for whoever lists tools by it.
    any_connected: tokio::sync::watch::Sender<bool>,
    /// The latest handshakes refused since a peer of this kind last connected.
    refusals: Mutex<Vec<Refused>>,
    /// The replica cluster this registry is part of (`--cluster`), with its account.
    cluster: std::sync::OnceLock<Arc<dyn Elsewhere>>,
    kind: PhantomData<K>,
}

struct Entry<K: PeerKind> {
    hello: K::Hello,
    /// The credential that registered this peer ID: only it may connect under the ID while it
    /// stays valid.
    owner: Owner,
    connection: Option<Arc<Connection>>,
    /// When the peer last connected or disconnected; decides which peers are forgotten first.
    last_change: Instant,
    /// Why its last connection ended, when the peer said.
    gone: Option<String>,
}

/// The credential a connection proved (a pairing locally, a token in hosted mode), and how to
/// tell whether it still stands: the registry asks before letting another credential take its
/// peer ID, and the connection's loop asks every second (closing with the refusal once not).
#[derive(Clone)]
pub struct Owner {
    /// Names the credential (`pairing:<id>`, `token:<jti>`); never a secret.
    credential: String,
    /// `Ok` while the credential stands; the refusal to send once it was revoked or expired.
    check: Arc<dyn Fn() -> Result<(), Refusal> + Send + Sync>,
}

impl Owner {
    /// A credential whose standing `check` tells.
    pub fn new(
        credential: String,
        check: impl Fn() -> Result<(), Refusal> + Send + Sync + 'static,
    ) -> Owner {
        Owner {
            credential,
            check: Arc::new(check),
        }
    }

    /// A credential that never lapses (tests, and peers of kinds with no credentials).
    pub fn fixed(credential: &str) -> Owner {
        Owner::new(credential.to_owned(), || Ok(()))
    }

    /// Whether the credential still stands, or the refusal for its peer once not.
    pub fn check(&self) -> Result<(), Refusal> {
        (self.check)()
    }
}

impl<K: PeerKind> Default for Registry<K> {
    fn default() -> Self {
        Registry {
            peers: Mutex::new(HashMap::new()),
            limit: None,
            next_connection: AtomicU64::new(0),
            any_connected: tokio::sync::watch::Sender::new(false),
            refusals: Mutex::default(),
            cluster: std::sync::OnceLock::new(),
            kind: PhantomData,
        }
    }
}

impl<K: PeerKind> Registry<K> {
    /// A registry allowing at most `limit` connected peers.
    pub fn with_limit(limit: usize) -> Self {
        Registry {
            limit: Some(limit),
            ..Registry::default()
        }
    }

    /// Registers a connection after an accepted hello. Returns the connection handle and the
    /// queue of messages to write to its socket, or `LIMIT_EXCEEDED` when the registry already
    /// holds its limit of other connected peers.
    ///
    /// A peer ID belongs to the credential (`owner`) that first registered it: another
    /// credential presenting it is refused (`FORBIDDEN`) and the peer stays as it is, until
    /// the first credential is revoked or expires. A peer that connects again with its own
    /// credential while its old connection is still registered (a reconnect racing the old
    /// socket's close) replaces it; the old connection's waiting requests fail at once.
    pub fn connect(
        &self,
        hello: K::Hello,
        owner: Owner,
    ) -> Result<(Arc<Connection>, mpsc::UnboundedReceiver<HubMessage>), OpError> {
        let id = K::id(&hello).to_owned();
        let (connection, outbox_rx) = self.new_connection(&id, None);
        let clustered_hello = self.cluster.get().map(|_| hello.clone());
        let owner_credential = owner.credential.clone();
        let replaced = {
            let mut peers = self.peers.lock().unwrap();
            let elsewhere = self.cluster.get().and_then(|link| {
                link.peers(K::NOUN)
                    .into_iter()
                    .find(|remote| {
                        serde_json::from_value::<K::Hello>(remote.hello.clone())
                            .is_ok_and(|hello| K::id(&hello) == id)
                    })
                    .map(|remote| remote.credential)
            });
            let taken_elsewhere = elsewhere.is_some_and(|held| held != owner.credential);
            let taken_here = peers.get(&id).is_some_and(|existing| {
                existing.owner.credential != owner.credential && existing.owner.check().is_ok()
            });
            if taken_here || taken_elsewhere {
                return Err(OpError::new(
                    ErrorCode::Forbidden,
                    format!(
                        "{} ID {id} is registered to another credential; each {} needs its own \
                         pairing or token",
                        K::NOUN,
                        K::NOUN
                    ),
                ));
            }
            // A credential holds at most `K::PER_CREDENTIAL` IDs (one browser per pairing or
            // token; a device backend's phones): one more while that many are connected is
            // refused; otherwise the ones it left disconnected longest ago are released (a
            // reinstalled extension comes back under a new ID). So one credential cannot hold
            // many IDs, nor crowd the real peers' bindings out of the registry.
            let mut held: Vec<(String, bool, Instant)> = peers
                .iter()
                .filter(|(other, entry)| {
                    **other != id && entry.owner.credential == owner.credential
                })
                .map(|(other, entry)| {
                    (other.clone(), entry.connection.is_some(), entry.last_change)
                })
                .collect();
            let connected: Vec<&str> = held
                .iter()
                .filter(|(_, connected, _)| *connected)
                .map(|(other, _, _)| other.as_str())
                .collect();
            if connected.len() >= K::PER_CREDENTIAL {
                let noun = K::NOUN;
                let message = if K::PER_CREDENTIAL == 1 {
                    format!(
                        "this credential is in use by {noun} {}; each {noun} needs its own \
                         pairing or token",
                        connected[0]
                    )
                } else {
                    format!(
                        "this credential has {} {noun}s connected, as many as one credential \
                         may; disconnect one first",
                        connected.len()
                    )
                };
                return Err(OpError::new(ErrorCode::Forbidden, message));
            }
            held.sort_by_key(|(_, _, since)| *since);
            let excess = (held.len() + 1).saturating_sub(K::PER_CREDENTIAL);
            for (other, _, _) in held
                .iter()
                .filter(|(_, connected, _)| !connected)
                .take(excess)
            {
                peers.remove(other);
            }
            if let Some(limit) = self.limit {
                let others = peers
                    .iter()
                    .filter(|(other, entry)| entry.connection.is_some() && **other != id)
                    .count();
                if others >= limit {
                    return Err(OpError::new(
                        ErrorCode::LimitExceeded,
                        format!(
                            "this account already has {others} {}s connected (the hub allows \
                             {limit}); disconnect one first",
                            K::NOUN
                        ),
                    ));
                }
            }
            let entry = Entry {
                hello,
                owner,
                connection: Some(connection.clone()),
                last_change: Instant::now(),
                gone: None,
            };
            let replaced = peers.insert(id, entry).and_then(|old| old.connection);
            forget_oldest_disconnected(&mut peers);
            self.any_connected
                .send_if_modified(|any| !std::mem::replace(any, true));
            replaced
        };
        // A peer of this kind got through: what was refused before is no longer the news (a
        // peer still refused is refused again on its next try, and recorded again).
        self.refusals.lock().unwrap().clear();
        if let Some(old) = replaced {
            tracing::warn!(peer = %old.peer_id, kind = K::NOUN, "reconnected; closing the previous connection");
            old.fence(&format!("the {} opened a new connection", K::NOUN));
        }
        if let (Some(link), Some(hello)) = (self.cluster.get(), clustered_hello) {
            let hello = serde_json::to_value(&hello).unwrap_or_default();
            link.own(K::NOUN, hello, &owner_credential, &connection);
        }
        Ok((connection, outbox_rx))
    }

    /// Marks the peer disconnected if `connection` is still its current one, and fails every
    /// request waiting on that connection.
    pub fn disconnect(&self, connection: &Connection) {
        {
            let mut peers = self.peers.lock().unwrap();
            if let Some(entry) = current_entry(&mut peers, connection) {
                entry.connection = None;
                entry.last_change = Instant::now();
            }
            let any = peers.values().any(|entry| entry.connection.is_some()) || self.any_remote();
            self.any_connected
                .send_if_modified(|was| std::mem::replace(was, any) != any);
        }
        if let Some(link) = self.cluster.get() {
            link.disown(K::NOUN, connection);
        }
        connection.fail_all(&format!("the {} disconnected", K::NOUN));
    }

    /// Records why the peer of `connection` is going away (what `list_*` shows), if that is
    /// still its current connection.
    pub fn gone(&self, connection: &Connection, reason: &str) {
        if let Some(entry) = current_entry(&mut self.peers.lock().unwrap(), connection) {
            entry.gone = Some(reason.to_owned());
        }
    }

    /// Records a handshake refused on this kind's endpoint, for `doctor`.
    pub fn refused(&self, code: ErrorCode, message: &str) {
        let mut refusals = self.refusals.lock().unwrap();
        refusals.push(Refused {
            code,
            message: message.chars().take(300).collect(),
            at: Instant::now(),
        });
        let excess = refusals.len().saturating_sub(MAX_REFUSALS);
        refusals.drain(..excess);
    }

    /// The handshakes refused in the last [`REFUSALS_KEPT_FOR`] since a peer of this kind last
    /// connected, oldest first.
    pub fn refusals(&self) -> Vec<Refused> {
        self.refusals
            .lock()
            .unwrap()
            .iter()
            .filter(|refused| refused.at.elapsed() < REFUSALS_KEPT_FOR)
            .cloned()
            .collect()
    }

    /// Recomputes whether any peer is connected, here or (in a cluster) on another replica:
    /// the cluster calls it when what other replicas hold changes.
    pub fn recheck_connected(&self) {
        let peers = self.peers.lock().unwrap();
        let any = peers.values().any(|entry| entry.connection.is_some()) || self.any_remote();
        self.any_connected
            .send_if_modified(|was| std::mem::replace(was, any) != any);
    }

    /// Whether any peer is connected, now and as it changes.
    pub fn watch_connected(&self) -> tokio::sync::watch::Receiver<bool> {
        self.any_connected.subscribe()
    }

    /// Whether any peer is connected now.
    pub fn any_connected(&self) -> bool {
        *self.any_connected.borrow()
    }

    /// Queues `message` for every connected peer.
    pub fn broadcast(&self, message: &HubMessage) {
        let connections: Vec<Arc<Connection>> = self
            .peers
            .lock()
            .unwrap()
            .values()
            .filter_map(|entry| entry.connection.clone())
            .collect();
        for connection in connections {
            connection.send(message.clone());
        }
    }

    /// Makes this registry part of a replica cluster: peers other replicas hold are listed
    /// and reached through it, and peers connecting here are owned here.
    pub fn join(&self, link: Arc<dyn Elsewhere>) {
        let _ = self.cluster.set(link);
    }

    /// Every known peer, connected ones first, then by name; with a cluster, also the peers
    /// other replicas hold (a peer connected elsewhere shows as connected).
    pub fn list(&self) -> Vec<PeerInfo<K>> {
        let peers = self.peers.lock().unwrap();
        let mut list: Vec<PeerInfo<K>> = peers.values().map(Entry::info).collect();
        drop(peers);
        for remote in self.remote_peers() {
            match list.iter_mut().find(|info| info.id() == remote.id()) {
                Some(known) if known.connected => {}
                Some(known) => *known = remote,
                None => list.push(remote),
            }
        }
        list.sort_by(|a, b| {
            b.connected
                .cmp(&a.connected)
                .then_with(|| a.name().cmp(b.name()))
                .then_with(|| a.id().cmp(b.id()))
        });
        list
    }

    /// One peer by ID (with a cluster, also one another replica holds).
    pub fn get(&self, id: &str) -> Option<PeerInfo<K>> {
        let local = self.peers.lock().unwrap().get(id).map(Entry::info);
        if local.as_ref().is_some_and(|info| info.connected) {
            return local;
        }
        self.remote_peers()
            .into_iter()
            .find(|remote| remote.id() == id)
            .or(local)
    }

    /// Whether another replica says it holds a peer of this kind (without reading them).
    fn any_remote(&self) -> bool {
        self.cluster
            .get()
            .is_some_and(|link| !link.peers(K::NOUN).is_empty())
    }

    /// The peers of this kind other replicas say they hold (none without a cluster).
    fn remote_peers(&self) -> Vec<PeerInfo<K>> {
        let Some(link) = self.cluster.get() else {
            return Vec::new();
        };
        let mut seen = std::collections::HashSet::new();
        link.peers(K::NOUN)
            .into_iter()
            .filter_map(|remote| {
                let hello: K::Hello = serde_json::from_value(remote.hello).ok()?;
                seen.insert(K::id(&hello).to_owned()).then(|| PeerInfo {
                    hello,
                    connected: true,
                    connected_for: Some(Duration::from_millis(remote.connected_ms)),
                    gone: None,
                    disconnected_for: None,
                })
            })
            .collect()
    }

    /// A connection to a peer another replica may hold: its calls go over NATS.
    fn remote_connection(&self, link: &Arc<dyn Elsewhere>, id: &str) -> Arc<Connection> {
        self.new_connection(id, Some(link.clone())).0
    }

    /// A fresh connection of peer `id` (over NATS when `remote`), and the receiving end of its
    /// outbox, which a remote connection never reads.
    fn new_connection(
        &self,
        id: &str,
        remote: Option<Arc<dyn Elsewhere>>,
    ) -> (Arc<Connection>, mpsc::UnboundedReceiver<HubMessage>) {
        let (outbox, outbox_rx) = mpsc::unbounded_channel();
        let connection = Arc::new(Connection {
            number: self.next_connection.fetch_add(1, Ordering::Relaxed),
            peer_id: id.to_owned(),
            noun: K::NOUN,
            disconnected: K::DISCONNECTED,
            outbox,
            pending: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
            since: Instant::now(),
            replaced: tokio::sync::Notify::new(),
            remote,
            owner: std::sync::OnceLock::new(),
        });
        (connection, outbox_rx)
    }

    /// The open connection of a peer: [`PeerKind::NOT_FOUND`] for an unknown ID,
    /// [`PeerKind::DISCONNECTED`] for a known peer that is not connected.
    ///
    /// With a cluster, a peer not connected here goes over NATS when this replica knows it
    /// (it was connected here once) or another replica says it holds it; NATS then tells
    /// whether any replica does.
    pub fn connection(&self, id: &str) -> Result<Arc<Connection>, OpError> {
        let peers = self.peers.lock().unwrap();
        let noun = K::NOUN;
        if let Some(link) = self.cluster.get() {
            let here = peers.get(id);
            if let Some(connection) = here.and_then(|entry| entry.connection.clone()) {
                return Ok(connection);
            }
            let known = here.is_some();
            drop(peers);
            if known || self.remote_peers().iter().any(|info| info.id() == id) {
                return Ok(self.remote_connection(link, id));
            }
            if !link.reachable() {
                // What other replicas hold is unknown while NATS is: not "no such peer".
                return Err(OpError::new(
                    K::DISCONNECTED,
                    format!(
                        "{noun} {id} is not connected to this replica, and this replica has \
                         lost its connection to the other replicas (NATS), so it cannot reach \
                         or list theirs; try again shortly"
                    ),
                ));
            }
            return Err(OpError::new(
                K::NOT_FOUND,
                format!(
                    "no {noun} with ID {id} is known to this hub; call {}",
                    K::LIST_TOOL
                ),
            ));
        }
        match peers.get(id) {
            None => Err(OpError::new(
                K::NOT_FOUND,
                format!(
                    "no {noun} with ID {id} is known to this hub; call {}",
                    K::LIST_TOOL
                ),
            )),
            Some(entry) => entry.connection.clone().ok_or_else(|| {
                let why = entry
                    .gone
                    .as_deref()
                    .map(|reason| format!(" ({reason})"))
                    .unwrap_or_default();
                OpError::new(
                    K::DISCONNECTED,
                    format!(
                        "{noun} \"{}\" ({id}) is not connected{why}; tabwire never switches to \
                         another {noun} on its own. Wait for it to reconnect or select another \
                         {noun}",
                        K::name(&entry.hello)
                    ),
                )
            }),
        }
    }
}

/// The entry whose current connection is `connection`: a late cleanup of an older connection
/// of the same peer finds none.
fn current_entry<'a, K: PeerKind>(
    peers: &'a mut HashMap<String, Entry<K>>,
    connection: &Connection,
) -> Option<&'a mut Entry<K>> {
    peers.get_mut(&connection.peer_id).filter(|entry| {
        entry
            .connection
            .as_ref()
            .is_some_and(|current| current.number == connection.number)
    })
}

/// Keeps the registry within [`MAX_KNOWN_PEERS`] by forgetting the disconnected peers seen
/// longest ago. Connected peers are never forgotten.
fn forget_oldest_disconnected<K: PeerKind>(peers: &mut HashMap<String, Entry<K>>) {
    while peers.len() > MAX_KNOWN_PEERS {
        let oldest = peers
            .iter()
            .filter(|(_, entry)| entry.connection.is_none())
            .min_by_key(|(_, entry)| entry.last_change)
            .map(|(id, _)| id.clone());
        match oldest {
            Some(id) => {
                peers.remove(&id);
            }
            None => break,
        }
    }
}

impl<K: PeerKind> Entry<K> {
    fn info(&self) -> PeerInfo<K> {
        PeerInfo {
            hello: self.hello.clone(),
            connected: self.connection.is_some(),
            connected_for: self.connection.as_ref().map(|c| c.since.elapsed()),
            gone: self.gone.clone().filter(|_| self.connection.is_none()),
            disconnected_for: self
                .connection
                .is_none()
                .then(|| self.last_change.elapsed()),
        }
    }
}

/// One open peer WebSocket (`/browser`).
pub struct Connection {
    number: u64,
    peer_id: String,
    /// The peer's kind, for messages (`browser`).
    noun: &'static str,
    /// The code of a request cut off by a disconnect (`BROWSER_DISCONNECTED`).
    disconnected: ErrorCode,
    /// Messages for the socket writer; sending fails once the connection loop has ended.
    outbox: mpsc::UnboundedSender<HubMessage>,
    /// Requests sent and not yet answered, by request ID.
    pending: Mutex<HashMap<u64, oneshot::Sender<Result<OpResult, OpError>>>>,
    next_request: AtomicU64,
    since: Instant,
    /// Signalled when a newer connection of the same browser took over; the connection loop
    /// then closes this socket.
    replaced: tokio::sync::Notify,
    /// For a peer held by another replica: how to reach it (`None` for a socket here).
    remote: Option<Arc<dyn Elsewhere>>,
    /// The replica that answered the last call on a remote connection, for the audit log.
    owner: std::sync::OnceLock<String>,
}

impl Connection {
    /// Completes once a newer connection of the same browser has replaced this one.
    pub async fn replaced(&self) {
        self.replaced.notified().await;
    }

    /// The peer this connection belongs to.
    pub fn peer_id(&self) -> &str {
        &self.peer_id
    }

    /// The peer's kind, as its noun (`browser`).
    pub fn noun(&self) -> &'static str {
        self.noun
    }

    /// Numbers this connection among its registry's.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The code of a request this connection's end cut off (`BROWSER_DISCONNECTED`).
    pub fn disconnected_code(&self) -> ErrorCode {
        self.disconnected
    }

    /// Whether the peer is held by another replica (calls go over NATS).
    pub fn is_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// The replica that answered a call on this remote connection.
    pub fn owner_node(&self) -> Option<&str> {
        self.owner.get().map(String::as_str)
    }

    /// Records which replica answered (a remote connection's peer has one owner at a time).
    pub(crate) fn note_owner(&self, node: &str) {
        let _ = self.owner.set(node.to_owned());
    }

    /// Ends this connection because a newer one of the same peer took over (here or on
    /// another replica): its waiting requests fail at once, its loop closes the socket.
    pub(crate) fn fence(&self, why: &str) {
        self.fail_all(why);
        self.replaced.notify_one();
    }

    /// Sends an operation and waits for its response, at most `deadline` plus a short grace.
    /// `holder` names the caller; it is sent whole only with operations that carry it
    /// ([`Operation::carries_holder`]), and its session with every operation as the request's
    /// viewer (whose observations the peer compares with).
    pub async fn request(
        &self,
        tool: &str,
        tab_id: Option<TabId>,
        holder: Option<&LeaseHolder>,
        op: Operation,
        deadline: Duration,
    ) -> Result<OpResult, OpError> {
        let never = CancellationToken::new();
        self.request_unless(tool, tab_id, holder, op, deadline, &never)
            .await
    }

    /// [`Connection::request`] for a call that `cancel` may withdraw. Once cancelled, nothing
    /// more is sent for the call: a request not sent yet is not sent (`CANCELLED`, nothing
    /// done); one in flight is cancelled at the peer ([`HubMessage::Cancel`]), whose answer says
    /// whether input had gone out, and a peer silent for [`CANCEL_GRACE`] is taken to have
    /// acted if the operation changes anything.
    pub async fn request_unless(
        &self,
        tool: &str,
        tab_id: Option<TabId>,
        holder: Option<&LeaseHolder>,
        op: Operation,
        deadline: Duration,
        cancel: &CancellationToken,
    ) -> Result<OpResult, OpError> {
        if let Some(remote) = &self.remote {
            return remote
                .request(self, tool, tab_id, holder, op, deadline, cancel)
                .await;
        }
        if cancel.is_cancelled() {
            return Err(OpError::new(
                ErrorCode::Cancelled,
                format!(
                    "The MCP client cancelled the call; this request to the {} was not sent.",
                    self.noun
                ),
            ));
        }
        let viewer = holder.map(|holder| holder.session.clone());
        let holder = holder.filter(|_| op.carries_holder()).cloned();
        let mutation = op.is_mutation();
        let id = self.next_request.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, reply);
        // If the caller stops waiting (the MCP request was cancelled), forget the request so
        // its late response is dropped rather than leaking an entry.
        let _forget = PendingGuard {
            connection: self,
            id,
        };
        let request = HubMessage::Request(Request {
            id,
            tab_id,
            deadline_ms: deadline.as_millis().try_into().unwrap_or(u64::MAX),
            tool: tool.to_owned(),
            holder,
            viewer,
            op,
        });
        if self.outbox.send(request).is_err() {
            return Err(self.cut_off(&format!("the {} disconnected", self.noun)));
        }
        let mut answer = answer;
        let waited = tokio::select! {
            // An answer that is already there wins over a cancel that came with it.
            biased;
            waited = tokio::time::timeout(deadline + BRIDGE_GRACE, &mut answer) => Some(waited),
            () = cancel.cancelled() => None,
        };
        let outcome = match waited {
            Some(Ok(Ok(outcome))) => outcome,
            Some(Ok(Err(_))) => Err(self.cut_off(&format!("the {} disconnected", self.noun))),
            Some(Err(_)) => Err(OpError::new(
                ErrorCode::BridgeTimeout,
                format!(
                    "the {} did not answer within {} ms",
                    self.noun,
                    (deadline + BRIDGE_GRACE).as_millis()
                ),
            )),
            None => self.cancelled(id, answer, mutation).await,
        };
        outcome.map_err(|error| {
            let cut_off = error.code == ErrorCode::BridgeTimeout || error.code == self.disconnected;
            if mutation && cut_off {
                error.action_may_have_occurred()
            } else {
                error
            }
        })
    }

    /// Tells the peer to stop request `id`, whose call was cancelled, and waits at most
    /// [`CANCEL_GRACE`] for its answer: the peer's `CANCELLED` (or the outcome it reached
    /// first). Whatever the peer did not say is taken at its worst for a `mutation`.
    async fn cancelled(
        &self,
        id: u64,
        answer: oneshot::Receiver<Result<OpResult, OpError>>,
        mutation: bool,
    ) -> Result<OpResult, OpError> {
        tracing::debug!(peer = %self.peer_id, id, "the call was cancelled; telling the peer");
        if self.outbox.send(HubMessage::Cancel { id }).is_err() {
            return Err(self.unconfirmed_cancel(mutation, "its connection had closed"));
        }
        match tokio::time::timeout(CANCEL_GRACE, answer).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(self.unconfirmed_cancel(mutation, "it disconnected")),
            Err(_) => Err(self.unconfirmed_cancel(
                mutation,
                &format!("it did not answer within {} ms", CANCEL_GRACE.as_millis()),
            )),
        }
    }

    /// The error of a cancelled request whose peer did not say how far it got (`why`).
    fn unconfirmed_cancel(&self, mutation: bool, why: &str) -> OpError {
        let error = OpError::new(
            ErrorCode::Cancelled,
            format!(
                "The MCP client cancelled the call; the {} ({}) was told to stop, but {why}.",
                self.noun, self.peer_id
            ),
        );
        if mutation {
            error.action_may_have_occurred()
        } else {
            error
        }
    }

    /// Delivers a response from the extension to whoever waits for it. A response nobody
    /// waits for any more (deadline passed, caller gone) is dropped.
    pub fn complete(&self, id: u64, outcome: Result<OpResult, OpError>) {
        let waiter = self.pending.lock().unwrap().remove(&id);
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(outcome);
            }
            None => tracing::debug!(peer = %self.peer_id, id, "late response dropped"),
        }
    }

    /// Queues a message for the socket (used by the connection loop for heartbeats).
    pub fn send(&self, message: HubMessage) {
        let _ = self.outbox.send(message);
    }

    /// Fails every waiting request at once.
    fn fail_all(&self, why: &str) {
        let waiters: Vec<_> = self.pending.lock().unwrap().drain().collect();
        for (_, waiter) in waiters {
            let _ = waiter.send(Err(self.cut_off(why)));
        }
    }

    /// The error of a request the connection's end cut off.
    fn cut_off(&self, why: &str) -> OpError {
        OpError::new(
            self.disconnected,
            format!("{why} ({}) before answering", self.peer_id),
        )
    }
}

/// Removes a pending request when its caller stops waiting, however that happens.
struct PendingGuard<'a> {
    connection: &'a Connection,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.connection.pending.lock().unwrap().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::Browser;
    use tabwire_protocol::{Hello, ListTabs, PROTOCOL_VERSION, Response, TabList, Target};

    type Registry = super::Registry<Browser>;

    fn hello(id: &str, name: &str) -> Hello {
        Hello {
            browser_id: id.into(),
            browser_name: name.into(),
            extension_version: "0.1.0".into(),
            protocol_version: PROTOCOL_VERSION,
            chrome_version: "156".into(),
            proof: None,
            managed_code: false,
        }
    }

    /// Each test browser's own credential.
    fn own(id: &str) -> Owner {
        Owner::fixed(&format!("test:{id}"))
    }

    fn click() -> Operation {
        tabwire_protocol::ActRequest {
            action: tabwire_protocol::Action::Hover {
                target: Target::Css("#go".into()),
            },
            observe: None,
        }
        .into()
    }

    fn list_tabs() -> Operation {
        ListTabs {}.into()
    }

    fn no_tabs() -> OpResult {
        TabList { tabs: vec![] }.into()
    }

    #[tokio::test]
    async fn response_reaches_its_request() {
        let registry = Registry::default();
        let (conn, mut outbox) = registry.connect(hello("b1", "Work"), own("b1")).unwrap();
        let waiter = {
            let conn = conn.clone();
            tokio::spawn(async move {
                conn.request("list_tabs", None, None, list_tabs(), Duration::from_secs(5))
                    .await
            })
        };
        let Some(HubMessage::Request(request)) = outbox.recv().await else {
            panic!("expected a request");
        };
        assert_eq!(request.tool, "list_tabs");
        let response = Response::new(request.id, Ok(no_tabs()));
        conn.complete(response.id, response.into_outcome());
        assert_eq!(waiter.await.unwrap().unwrap(), no_tabs());
    }

    #[tokio::test]
    async fn disconnect_fails_pending_requests_at_once() {
        let registry = Registry::default();
        let (conn, mut outbox) = registry.connect(hello("b1", "Work"), own("b1")).unwrap();
        let waiter = {
            let conn = conn.clone();
            tokio::spawn(async move {
                conn.request(
                    "click_element",
                    Some(3),
                    None,
                    click(),
                    Duration::from_secs(60),
                )
                .await
            })
        };
        outbox.recv().await.expect("request sent");
        let started = Instant::now();
        registry.disconnect(&conn);
        let error = waiter.await.unwrap().unwrap_err();
        assert_eq!(error.code, ErrorCode::BrowserDisconnected);
        assert!(
            error.action_may_have_occurred,
            "a cut-off click may have happened"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(!registry.get("b1").unwrap().connected);
        assert_eq!(
            registry.connection("b1").err().unwrap().code,
            ErrorCode::BrowserDisconnected
        );
        assert_eq!(
            registry.connection("nope").err().unwrap().code,
            ErrorCode::BrowserNotFound
        );
    }

    #[tokio::test]
    async fn reconnect_replaces_the_old_connection_only_once() {
        let registry = Registry::default();
        let (old, mut old_outbox) = registry.connect(hello("b1", "Work"), own("b1")).unwrap();
        let waiter = {
            let old = old.clone();
            tokio::spawn(async move {
                old.request(
                    "list_tabs",
                    None,
                    None,
                    list_tabs(),
                    Duration::from_secs(60),
                )
                .await
            })
        };
        old_outbox
            .recv()
            .await
            .expect("request sent on the old connection");
        let (new, _new_outbox) = registry
            .connect(hello("b1", "Work renamed"), own("b1"))
            .unwrap();
        // The old connection's waiting request fails, and its loop is told to close.
        assert_eq!(
            waiter.await.unwrap().unwrap_err().code,
            ErrorCode::BrowserDisconnected
        );
        tokio::time::timeout(Duration::from_secs(1), old.replaced())
            .await
            .expect("the old connection is told it was replaced");
        // The old connection's late cleanup must not unregister the new one.
        registry.disconnect(&old);
        let info = registry.get("b1").unwrap();
        assert!(info.connected);
        assert_eq!(info.name(), "Work renamed");
        assert_eq!(registry.connection("b1").unwrap().number, new.number);
    }

    #[tokio::test(start_paused = true)]
    async fn silent_browser_gives_bridge_timeout() {
        let registry = Registry::default();
        let (conn, _outbox) = registry.connect(hello("b1", "Work"), own("b1")).unwrap();
        let error = conn
            .request("list_tabs", None, None, list_tabs(), Duration::from_secs(1))
            .await
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::BridgeTimeout);
        assert!(
            !error.action_may_have_occurred,
            "listing tabs changes nothing"
        );
        assert!(conn.pending.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_cancelled_call_withdraws_its_request_at_the_peer() {
        let registry = Registry::default();
        let (conn, mut outbox) = registry.connect(hello("b1", "Work"), own("b1")).unwrap();
        let cancel = CancellationToken::new();
        let waiter = {
            let (conn, cancel) = (conn.clone(), cancel.clone());
            tokio::spawn(async move {
                conn.request_unless(
                    "click_element",
                    Some(3),
                    None,
                    click(),
                    Duration::from_secs(60),
                    &cancel,
                )
                .await
            })
        };
        let Some(HubMessage::Request(request)) = outbox.recv().await else {
            panic!("expected a request");
        };
        cancel.cancel();
        assert_eq!(
            outbox.recv().await,
            Some(HubMessage::Cancel { id: request.id }),
            "the peer is told which request to stop"
        );
        // The peer stopped it before its input: the hub reports what the peer said.
        conn.complete(request.id, Err(OpError::cancelled(false)));
        let error = waiter.await.unwrap().unwrap_err();
        assert_eq!(error.code, ErrorCode::Cancelled);
        assert!(!error.action_may_have_occurred, "{error:?}");
        assert!(conn.pending.lock().unwrap().is_empty());

        // Once the call is cancelled, nothing more is sent for it.
        let refused = conn
            .request_unless(
                "click_element",
                Some(3),
                None,
                click(),
                Duration::from_secs(60),
                &cancel,
            )
            .await
            .unwrap_err();
        assert_eq!(refused.code, ErrorCode::Cancelled);
        assert!(!refused.action_may_have_occurred);
        assert!(outbox.try_recv().is_err(), "nothing was sent");
    }

    #[tokio::test(start_paused = true)]
    async fn a_peer_silent_after_a_cancel_is_taken_to_have_acted_if_it_could() {
        let registry = Registry::default();
        let (conn, mut outbox) = registry.connect(hello("b1", "Work"), own("b1")).unwrap();
        for (op, could_act) in [(click(), true), (list_tabs(), false)] {
            let cancel = CancellationToken::new();
            let waiter = {
                let (conn, cancel) = (conn.clone(), cancel.clone());
                tokio::spawn(async move {
                    conn.request_unless("t", None, None, op, Duration::from_secs(60), &cancel)
                        .await
                })
            };
            let Some(HubMessage::Request(request)) = outbox.recv().await else {
                panic!("expected a request");
            };
            let started = tokio::time::Instant::now();
            cancel.cancel();
            assert_eq!(
                outbox.recv().await,
                Some(HubMessage::Cancel { id: request.id })
            );
            let error = waiter.await.unwrap().unwrap_err();
            assert_eq!(error.code, ErrorCode::Cancelled);
            assert_eq!(error.action_may_have_occurred, could_act, "{error:?}");
            assert!(error.message.contains("did not answer"), "{error:?}");
            // Bounded by the cancel's grace, not the request's 60 s deadline.
            let waited = started.elapsed();
            assert!(
                waited >= CANCEL_GRACE && waited < Duration::from_secs(10),
                "{waited:?}"
            );
            assert!(conn.pending.lock().unwrap().is_empty());
            // A late answer finds nobody waiting and is dropped.
            conn.complete(request.id, Ok(no_tabs()));
        }
    }

    #[tokio::test]
    async fn an_answer_that_came_before_the_cancel_stands() {
        let registry = Registry::default();
        let (conn, mut outbox) = registry.connect(hello("b1", "Work"), own("b1")).unwrap();
        let cancel = CancellationToken::new();
        let waiter = {
            let (conn, cancel) = (conn.clone(), cancel.clone());
            tokio::spawn(async move {
                conn.request_unless(
                    "list_tabs",
                    None,
                    None,
                    list_tabs(),
                    Duration::from_secs(60),
                    &cancel,
                )
                .await
            })
        };
        let Some(HubMessage::Request(request)) = outbox.recv().await else {
            panic!("expected a request");
        };
        conn.complete(request.id, Ok(no_tabs()));
        cancel.cancel();
        assert_eq!(waiter.await.unwrap().unwrap(), no_tabs());
    }

    #[test]
    fn the_registry_forgets_old_disconnected_browsers_beyond_its_cap() {
        let registry = Registry::default();
        let (kept, _outbox) = registry
            .connect(hello("live", "Live"), own("live"))
            .unwrap();
        for n in 0..MAX_KNOWN_PEERS + 10 {
            let (conn, _outbox) = registry
                .connect(
                    hello(&format!("gone-{n}"), "Gone"),
                    own(&format!("gone-{n}")),
                )
                .unwrap();
            registry.disconnect(&conn);
        }
        let list = registry.list();
        assert_eq!(list.len(), MAX_KNOWN_PEERS);
        assert!(list.iter().any(|b| b.id() == "live" && b.connected));
        assert!(
            registry.get("gone-0").is_none(),
            "the oldest is forgotten first"
        );
        assert!(
            registry
                .get(&format!("gone-{}", MAX_KNOWN_PEERS + 9))
                .is_some()
        );
        drop(kept);
    }

    #[test]
    fn list_puts_connected_browsers_first() {
        let registry = Registry::default();
        let (gone, _a) = registry.connect(hello("b1", "Alpha"), own("b1")).unwrap();
        let (_kept, _b) = registry.connect(hello("b2", "Zulu"), own("b2")).unwrap();
        registry.disconnect(&gone);
        let names: Vec<_> = registry
            .list()
            .iter()
            .map(|b| b.name().to_owned())
            .collect();
        assert_eq!(names, ["Zulu", "Alpha"]);
    }

    #[test]
    fn a_limited_registry_refuses_one_browser_too_many_but_not_a_reconnect() {
        let registry = Registry::with_limit(2);
        let (_a, _ao) = registry.connect(hello("a", "A"), own("a")).unwrap();
        let (b, _bo) = registry.connect(hello("b", "B"), own("b")).unwrap();
        let refused = registry.connect(hello("c", "C"), own("c")).err().unwrap();
        assert_eq!(refused.code, ErrorCode::LimitExceeded);
        assert!(
            registry.get("c").is_none(),
            "a refused browser is not registered"
        );
        // The same browser reconnecting replaces itself and is not counted twice.
        let (_b2, _b2o) = registry.connect(hello("b", "B"), own("b")).unwrap();
        registry.disconnect(&b);
        assert_eq!(registry.list().iter().filter(|x| x.connected).count(), 2);
    }

    #[tokio::test]
    async fn a_peer_id_belongs_to_the_credential_that_registered_it() {
        let registry = Registry::default();
        let (real, _real_outbox) = registry
            .connect(hello("b1", "Work"), Owner::fixed("token:real"))
            .unwrap();
        // Another credential presenting the same ID is refused; the real browser stays.
        let refused = registry
            .connect(hello("b1", "Chrome"), Owner::fixed("token:other"))
            .err()
            .unwrap();
        assert_eq!(refused.code, ErrorCode::Forbidden);
        assert!(
            refused.message.contains("another credential"),
            "{refused:?}"
        );
        assert_eq!(registry.get("b1").unwrap().name(), "Work");
        assert_eq!(registry.connection("b1").unwrap().number, real.number);
        // Also while the real browser is away.
        registry.disconnect(&real);
        assert!(
            registry
                .connect(hello("b1", "Chrome"), Owner::fixed("token:other"))
                .is_err()
        );
        // Its own credential reconnects.
        let (again, _outbox) = registry
            .connect(hello("b1", "Work"), Owner::fixed("token:real"))
            .unwrap();
        // Once the first credential lapses (revoked, expired), the ID is free for another.
        let lapsed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let registry = Registry::default();
        let valid = lapsed.clone();
        let (_old, _o) = registry
            .connect(
                hello("b2", "Old"),
                Owner::new("token:old".into(), move || {
                    if valid.load(Ordering::Relaxed) {
                        Ok(())
                    } else {
                        Err(Refusal {
                            code: ErrorCode::Unauthorized,
                            message: "revoked".into(),
                        })
                    }
                }),
            )
            .unwrap();
        assert!(
            registry
                .connect(hello("b2", "New"), Owner::fixed("token:new"))
                .is_err()
        );
        lapsed.store(false, Ordering::Relaxed);
        assert!(
            registry
                .connect(hello("b2", "New"), Owner::fixed("token:new"))
                .is_ok()
        );
        drop(again);
    }

    #[test]
    fn a_credential_holds_one_peer_id_at_a_time() {
        let registry = Registry::default();
        let (first, _o) = registry
            .connect(hello("b1", "Work"), Owner::fixed("token:t"))
            .unwrap();
        // A second browser under the same token while the first is connected: refused.
        let refused = registry
            .connect(hello("b2", "Other"), Owner::fixed("token:t"))
            .err()
            .unwrap();
        assert_eq!(refused.code, ErrorCode::Forbidden);
        assert!(
            refused.message.contains("in use by browser b1"),
            "{refused:?}"
        );
        // Once it is gone, a new ID (a reinstalled extension) takes its place.
        registry.disconnect(&first);
        registry
            .connect(hello("b2", "Work"), Owner::fixed("token:t"))
            .unwrap();
        assert!(registry.get("b1").is_none(), "the old ID is released");
        // So churning IDs under one token never fills the registry with its bindings.
        for n in 0..100 {
            let (conn, _o) = registry
                .connect(
                    hello(&format!("churn-{n}"), "C"),
                    Owner::fixed("token:churn"),
                )
                .unwrap();
            registry.disconnect(&conn);
        }
        assert_eq!(registry.list().len(), 2);
    }

    #[test]
    fn refusals_are_kept_bounded_until_a_peer_gets_through() {
        let registry = Registry::default();
        for n in 0..20 {
            registry.refused(ErrorCode::ProtocolMismatch, &format!("refusal {n}"));
        }
        let kept = registry.refusals();
        assert_eq!(kept.len(), MAX_REFUSALS);
        assert_eq!(
            kept.last().unwrap().message,
            "refusal 19",
            "the latest are kept"
        );
        registry.refused(ErrorCode::NotPaired, &"x".repeat(1000));
        assert_eq!(registry.refusals().last().unwrap().message.len(), 300);
        let (conn, _outbox) = registry.connect(hello("b1", "Work"), own("b1")).unwrap();
        assert!(registry.refusals().is_empty());
        assert_eq!(registry.get("b1").unwrap().disconnected_for, None);
        registry.disconnect(&conn);
        assert!(registry.get("b1").unwrap().disconnected_for.is_some());
    }
}
