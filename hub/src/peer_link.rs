//! What the peer endpoints share (`/browser` for extensions, `/device` for device backends),
//! written once over [`Linked`]: who may open one, the handshake, and the connection's life.
//!
//! A kind's endpoint says which `Origin` it accepts (extension origins on `/browser`, none at
//! all on `/device`, so that no web page reaches either). An Origin header proves nothing to a
//! program that is not a browser, though: in local mode a peer must also be paired, and every
//! connection starts with the pairing exchange in which the hub proves itself first and the
//! peer second ([`tabwire_protocol::pairing`]), with a pairing of the endpoint's own kind; in
//! hosted mode a connection needs a token of the kind's role, and the peer joins the token's
//! account. A peer ID is bound to the credential (pairing or token) that first registered it.
//! The hub refuses an incompatible protocol version with a message the peer can show, and
//! otherwise registers the peer, sends it the operator's policy, forwards requests, correlates
//! responses, checks the credential every second and sends a heartbeat every
//! [`HEARTBEAT_INTERVAL`]. The heartbeat is what keeps Chrome from stopping an idle MV3
//! service worker; a peer silent for three intervals is considered gone. Nothing is replayed:
//! a connection's end fails its waiting requests at once.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use tabwire_protocol::pairing;
use tabwire_protocol::policy::Policy;
use tabwire_protocol::{
    Challenge, ErrorCode, HubMessage, HubProof, PROTOCOL_VERSION, Refusal, Welcome,
};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};

use crate::accounts::{Account, Registered};
use crate::auth::{Principal, Role};
use crate::handshake_places::{Place, Standing};
use crate::pairing::{Claim, PairRefused, PairingKind, Pairings};
use crate::peer_read::{Incoming, Reads, invalid};
use crate::peer_socket::{PeerSocket, Upgrade, handshake_allowance};
use crate::registry::{Connection, Owner};
use crate::state::HubState;

/// How often the hub sends a heartbeat. Must stay under Chrome's ~30 s idle limit for service
/// workers (PLATFORM.md measured that application messages every ~20 s keep it alive).
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(15);

/// How long one message to a peer may take to go out. A peer that reads nothing for this long
/// is disconnected, so a stalled socket cannot hold requests or a revoked token's connection
/// open.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a connection's credential is checked again: a hosted-mode token (expiry,
/// revocation) or a local pairing (revocation). The files behind them are re-read only when
/// they change, so this costs a lock and a lookup.
const CREDENTIAL_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// The largest handshake message (challenge, hello) accepted; real ones are a few hundred bytes.
/// The socket itself reads little more than this for each handshake message
/// ([`crate::peer_socket`]), so a larger one costs the hub nothing before it is refused.
const MAX_HANDSHAKE_BYTES: usize = 4096;

/// How long a new connection may take from its upgrade to its first message (a challenge or a
/// hello, which a peer has ready when the socket opens). A silent connection holds one of the
/// few handshake places of its kind ([`handshake_permit`]) this long at most, and less when a
/// newcomer needs the place.
const FIRST_MESSAGE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long the whole exchange, from the upgrade to the hello, may take.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest message accepted from a peer. Observations of big pages run to a few MB.
const MAX_MESSAGE_BYTES: usize = 32 * 1024 * 1024;

/// How much a connection's socket reads at once, and so the read buffer every connection keeps
/// touched for its whole life: tungstenite zero-fills its buffer up to this much before each
/// read, so its default (128 KiB) made an idle browser cost the hub over 150 KiB of memory
/// (`bench-load`). Peers' messages are mostly a few hundred bytes; a large one (an observation,
/// a screenshot) is still read whole, in reads of this size.
const READ_BUFFER_BYTES: usize = 16 * 1024;

/// The subprotocol peers offer and the hub selects. In hosted mode the extension offers a
/// second one, `tabwire.bearer.<token>`, because a browser's WebSocket cannot send an
/// `Authorization` header; a device backend may send either.
pub const SUBPROTOCOL: &str = "tabwire";
const BEARER_SUBPROTOCOL: &str = "tabwire.bearer.";

/// A kind of peer with an endpoint of its own.
pub trait Linked: Registered + Reads {
    /// The endpoint's path (`/browser`).
    const PATH: &'static str = Self::SPEC.path;
    /// The token role its connections need in hosted mode.
    const ROLE: Role = Role::Peer(Self::SPEC.kind);
    /// The pairing kind its connections need in local mode.
    const PAIRING: PairingKind = Self::SPEC.kind;

    /// `Ok` for an `Origin` header (or its absence) the endpoint accepts; else the reason.
    fn check_origin(origin: Option<&str>) -> Result<(), &'static str>;
    /// The proof a hello carries after a pairing exchange.
    fn proof(hello: &Self::Hello) -> Option<&str>;
    /// Whether the hello says the exchange's pairing code came from a managed policy.
    fn managed_code(hello: &Self::Hello) -> bool;
}

/// `GET` on a kind's endpoint: checks the Origin and, in hosted mode, the token; then upgrades
/// to a WebSocket ([`crate::peer_socket`], which limits what a peer may send before its
/// welcome).
pub async fn endpoint<K: Linked>(
    State(hub): State<Arc<HubState>>,
    mut request: Request<Body>,
) -> Response {
    let headers = request.headers();
    let origin = headers
        .get(header::ORIGIN)
        .map(|value| value.to_str().unwrap_or("?").to_owned());
    if let Err(reason) = K::check_origin(origin.as_deref()) {
        tracing::warn!(
            origin,
            path = K::PATH,
            "refused a connection from this origin"
        );
        return (StatusCode::FORBIDDEN, format!("{reason}\n")).into_response();
    }
    // Who opened it, where the hub can tell and it matters: a local hub's places go to its own
    // user first (`handshake_places`).
    let standing = match (
        &hub.auth,
        request.extensions().get::<ConnectInfo<SocketAddr>>(),
    ) {
        (None, Some(ConnectInfo(peer))) => match crate::loopback_user::is_own(*peer) {
            Some(true) => Standing::Own,
            Some(false) => Standing::Stranger,
            None => Standing::Unknown,
        },
        _ => Standing::Unknown,
    };
    let headers = request.headers();
    let admitted = admit::<K>(&hub, headers, standing);
    let protocol = subprotocols(headers)
        .any(|protocol| protocol == SUBPROTOCOL)
        .then_some(SUBPROTOCOL);
    let upgrade = match Upgrade::from_request(&mut request) {
        Ok(upgrade) => upgrade,
        Err(not_upgradable) => {
            return match admitted {
                Err(refusal) => refusal_status(&refusal),
                Ok(_) => not_upgradable.into_response(),
            };
        }
    };
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .read_buffer_size(READ_BUFFER_BYTES);
    let (response, socket) =
        upgrade.accept(protocol, config, handshake_allowance(MAX_HANDSHAKE_BYTES));
    let origin = origin.unwrap_or_default();
    tokio::spawn(async move {
        let mut socket = match socket.await {
            Ok(socket) => socket,
            Err(error) => {
                tracing::debug!(path = K::PATH, %error, "the upgrade did not complete");
                return;
            }
        };
        match admitted {
            Ok(admitted) => serve::<K>(hub, admitted, socket, origin).await,
            // A browser cannot read the status of a failed handshake, so the refusal is said
            // over the socket, which then closes; nothing was registered.
            Err(refusal) => refuse(&mut socket, refusal).await,
        }
    });
    response
}

/// The subprotocols a WebSocket request offers, in order.
fn subprotocols(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
}

/// Who a connection is for.
pub struct Admitted {
    account: Arc<Account>,
    /// The token's principal, in hosted mode.
    principal: Option<Principal>,
    /// Held from the upgrade until the peer is registered (or refused).
    handshake: Option<Place>,
}

/// Checks the token in hosted mode; local mode admits every connection to its one account, to
/// prove itself in the handshake. Either way only a few connections of a kind of an account may
/// be in their handshake at once.
fn admit<K: Linked>(
    hub: &HubState,
    headers: &HeaderMap,
    standing: Standing,
) -> Result<Admitted, Refusal> {
    let Some(auth) = &hub.auth else {
        let account = hub.accounts.local_account();
        let handshake = handshake_permit::<K>(&account, standing)?;
        return Ok(Admitted {
            account,
            principal: None,
            handshake: Some(handshake),
        });
    };
    let unauthorized = || Refusal {
        code: ErrorCode::Unauthorized,
        message: "the hub refused the access token".to_owned(),
    };
    let token = crate::hosted::bearer(headers).or_else(|| {
        subprotocols(headers).find_map(|protocol| protocol.strip_prefix(BEARER_SUBPROTOCOL))
    });
    let Some(token) = token else {
        tracing::info!(path = K::PATH, "refused: no token");
        return Err(unauthorized());
    };
    let principal = auth.verify(token).map_err(|reason| {
        tracing::info!(path = K::PATH, %reason, "refused: bad token");
        unauthorized()
    })?;
    if principal.role != K::ROLE {
        tracing::info!(
            path = K::PATH,
            account = principal.account,
            jti = principal.jti,
            role = %principal.role,
            "refused: a token of another role"
        );
        let article = if principal.role == Role::Agent {
            "an"
        } else {
            "a"
        };
        return Err(Refusal {
            code: ErrorCode::Forbidden,
            message: format!(
                "this is {article} {} token; a {} needs a {} token",
                principal.role,
                K::NOUN,
                K::ROLE
            ),
        });
    }
    let account = hub.accounts.get(&principal.account);
    let handshake = handshake_permit::<K>(&account, standing)?;
    Ok(Admitted {
        account,
        principal: Some(principal),
        handshake: Some(handshake),
    })
}

/// A place among the account's connections of kind `K` in their handshake, taken from the
/// oldest that has not spoken yet when all are held ([`crate::handshake_places`]).
fn handshake_permit<K: Linked>(account: &Account, standing: Standing) -> Result<Place, Refusal> {
    K::handshakes(account).take(standing).ok_or_else(|| {
        tracing::warn!(
            account = account.name,
            path = K::PATH,
            ?standing,
            "refused: too many connections saying hello"
        );
        busy::<K>()
    })
}

/// The refusal of a connection that found no handshake place, or lost its place to a newcomer
/// while it was silent.
fn busy<K: Linked>() -> Refusal {
    Refusal {
        code: ErrorCode::LimitExceeded,
        message: format!(
            "too many {} connections of this account are starting at once; try again in a few \
             seconds",
            K::NOUN
        ),
    }
}

/// The plain HTTP answer for a refused request that was not a WebSocket upgrade.
fn refusal_status(refusal: &Refusal) -> Response {
    match refusal.code {
        ErrorCode::Forbidden => {
            crate::hosted::refuse(StatusCode::FORBIDDEN, "forbidden", Some(&refusal.message))
        }
        ErrorCode::LimitExceeded => crate::hosted::refuse(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            Some(&refusal.message),
        ),
        _ => crate::hosted::unauthorized(),
    }
}

async fn serve<K: Linked>(
    hub: Arc<HubState>,
    admitted: Admitted,
    mut socket: PeerSocket,
    origin: String,
) {
    let Admitted {
        account,
        principal,
        handshake,
    } = admitted;
    let noun = K::NOUN;
    // Until its hello is checked a connection may lose its place to a newcomer
    // (`handshake_places`): it is then turned away as a busy hub's would be.
    let mut handshake = handshake;
    let eviction = handshake.as_mut().and_then(Place::eviction);
    let proving = prove::<K>(&hub, principal, &mut socket, handshake.as_ref());
    let proved = match eviction {
        Some(eviction) => tokio::select! {
            proved = proving => proved,
            () = eviction.wait() => Err(busy::<K>()),
        },
        None => proving.await,
    };
    let proven = match proved {
        Ok(proven) => proven,
        Err(refusal) => {
            tracing::warn!(origin, kind = noun, code = %refusal.code, reason = %refusal.message, "refused");
            note_refusal::<K>(&account, &refusal);
            // The handshake place is free before the refusal goes out (which may take a moment
            // for a peer that sent too much: see `refuse`).
            drop(handshake);
            return refuse(&mut socket, refusal).await;
        }
    };
    let Proven { hello, owner } = proven;
    let credential = owner.clone();
    let id = K::id(&hello).to_owned();
    let name = K::name(&hello).to_owned();
    let facts = serde_json::Value::Object(K::facts(&hello));
    let registry = K::registry(&account);
    let registered = registry.connect(hello, owner);
    drop(handshake);
    let (connection, outbox) = match registered {
        Ok(connected) => connected,
        Err(error) => {
            tracing::warn!(account = account.name, kind = noun, peer = %id, reason = %error.message, "refused");
            let refusal = Refusal {
                code: error.code,
                message: error.message,
            };
            note_refusal::<K>(&account, &refusal);
            return refuse(&mut socket, refusal).await;
        }
    };
    tracing::info!(
        account = account.name,
        kind = noun,
        peer = %id,
        name = %name,
        %facts,
        origin,
        "connected"
    );
    // Welcomed: from here on the peer's messages are its answers, up to the normal limits.
    socket.get_mut().lift();
    // The operator's policy goes with the welcome, before any request can; later changes follow
    // on the credential check's tick.
    let policy = hub.policies.for_account(&account.name);
    let welcome = HubMessage::Welcome(Welcome {
        protocol_version: PROTOCOL_VERSION,
        hub_version: env!("CARGO_PKG_VERSION").to_owned(),
        heartbeat_interval_ms: HEARTBEAT_INTERVAL.as_millis() as u64,
        policy: (*policy).clone(),
    });
    let reason = if send(&mut socket, &welcome).await.is_err() {
        "send failed"
    } else {
        let policies = Updates {
            current: || hub.policies.for_account(&account.name),
            sent: policy,
        };
        let gone = |reason: &str| registry.gone(&connection, reason);
        pump::<K>(&connection, socket, outbox, &credential, policies, gone).await
    };
    registry.disconnect(&connection);
    tracing::info!(account = account.name, kind = noun, peer = %connection.peer_id(), reason, "disconnected");
}

/// Keeps a refusal for `doctor` when a person can act on it: an incompatible version, a
/// missing or revoked pairing, a credential or ID in use, a full account. Malformed messages
/// and silent connections are left out: they are no peer a person set up, and their messages
/// quote what the peer sent.
fn note_refusal<K: Linked>(account: &Account, refusal: &Refusal) {
    if matches!(
        refusal.code,
        ErrorCode::ProtocolMismatch
            | ErrorCode::NotPaired
            | ErrorCode::Forbidden
            | ErrorCode::LimitExceeded
            | ErrorCode::Unauthorized
    ) {
        K::registry(account).refused(refusal.code, &refusal.message);
    }
}

/// A peer that proved who it is: its hello, and the credential its ID is bound to (checked
/// again every second while it is connected).
struct Proven<H> {
    hello: H,
    owner: Owner,
}

/// The handshake. In hosted mode the token (checked at the upgrade) vouches for the peer and
/// the first message is its hello. In local mode the first message is a challenge: the hub
/// proves it holds the peer's pairing secret, then the peer's hello proves the same (see
/// [`tabwire_protocol::pairing`]); a peer that pairs now is recorded here.
async fn prove<K: Linked>(
    hub: &HubState,
    principal: Option<Principal>,
    socket: &mut PeerSocket,
    place: Option<&Place>,
) -> Result<Proven<K::Hello>, Refusal> {
    // One deadline for the whole exchange, so pings cannot keep a silent client around, and a
    // shorter one for its first message (once said, only the hub's own user's newcomer may take
    // the place, and only from another user's connection).
    let start = Instant::now();
    let deadline = start + HELLO_TIMEOUT;
    let first = receive::<K>(
        socket,
        start + FIRST_MESSAGE_TIMEOUT,
        "no first message within 2 seconds of opening the connection",
    )
    .await?;
    if let Some(place) = place {
        place.spoke();
    }
    match (&hub.pairings, principal, first) {
        (Some(pairings), _, Incoming::Challenge(challenge)) => {
            prove_paired::<K>(pairings, &challenge, socket, deadline).await
        }
        (Some(_), _, _) => Err(not_paired(&format!(
            "this hub takes only paired {}s: {} (a local hub takes no access token)",
            K::NOUN,
            K::HOW_TO_PAIR
        ))),
        (None, Some(principal), Incoming::Hello(hello)) => {
            let auth = hub.auth.clone().expect("a hub without pairings is hosted");
            let credential = format!("token:{}", principal.jti);
            Ok(Proven {
                hello,
                owner: Owner::new(credential, move || {
                    auth.still_valid(&principal).map_err(|reason| Refusal {
                        code: ErrorCode::Unauthorized,
                        message: format!("the hub closed this connection: {reason}"),
                    })
                }),
            })
        }
        (None, _, _) => Err(Refusal {
            code: ErrorCode::Unauthorized,
            message: "this hub is hosted: connect with an access token, not a pairing code"
                .to_owned(),
        }),
    }
}

/// Local mode's exchange after the peer's challenge.
async fn prove_paired<K: Linked>(
    pairings: &Arc<Pairings>,
    challenge: &Challenge,
    socket: &mut PeerSocket,
    deadline: Instant,
) -> Result<Proven<K::Hello>, Refusal> {
    let noun = K::NOUN;
    let peer_nonce = pairing::decode_nonce(&challenge.nonce)
        .ok_or_else(|| invalid("malformed challenge: the nonce must be 32 bytes of hex"))?;
    let claim = pairings.find(&peer_nonce, &challenge.tag).ok_or_else(|| {
        not_paired(&if challenge.pairing {
            "this hub does not know that pairing code: it may be mistyped, used already or \
                 expired (codes last 10 minutes); run `tabwire-hub pair` for a new one"
                .to_owned()
        } else {
            format!(
                "this {noun} is not paired with this hub, or its pairing was revoked: {}",
                K::HOW_TO_PAIR
            )
        })
    })?;
    // A pairing of the other kind proves nothing here: the hub does not even prove itself.
    if claim.kind() != K::PAIRING {
        return Err(Refusal {
            code: ErrorCode::Forbidden,
            message: format!(
                "this pairing is a {}'s; a {noun} needs a pairing of its own: {}",
                claim.kind(),
                K::HOW_TO_PAIR
            ),
        });
    }
    let hub_nonce = pairing_random::<{ pairing::NONCE_LEN }>()?;
    let secret = claim.secret();
    let proof = HubMessage::Proof(HubProof {
        nonce: pairing::encode_hex(&hub_nonce),
        proof: pairing::hub_proof(&secret, &peer_nonce, &hub_nonce),
    });
    send(socket, &proof)
        .await
        .map_err(|()| invalid("connection closed during the handshake"))?;
    let Incoming::Hello(hello) =
        receive::<K>(socket, deadline, "no hello within 10 seconds").await?
    else {
        return Err(invalid("expected a hello after the hub's proof"));
    };
    let proved = K::proof(&hello).is_some_and(|proof| {
        pairing::browser_proof_matches(&secret, &peer_nonce, &hub_nonce, proof)
    });
    if !proved {
        return Err(not_paired(&format!(
            "the {noun}'s proof does not match its pairing: {}",
            K::HOW_TO_PAIR
        )));
    }
    let id = K::id(&hello);
    let paired = match claim {
        // A browser's pairing registers its one browser ID; a device backend's, its devices.
        Claim::Paired(paired) if paired.kind.spec().binds_one_id() && paired.peer_id != id => {
            return Err(Refusal {
                code: ErrorCode::Forbidden,
                message: format!("this pairing belongs to another {noun} ID"),
            });
        }
        Claim::Paired(paired) => paired,
        // A code used already: the peer holds it (it proved so), so it may learn which pairing
        // took it, and the person at a real browser what to revoke.
        Claim::Used(_, used) => {
            tracing::warn!(kind = noun, peer = %id, pairing = used.pairing_id, "refused: a used pairing code");
            return Err(Refusal {
                code: ErrorCode::Forbidden,
                message: used.refusal(),
            });
        }
        Claim::Code(code, _) => {
            let key = pairing::derive_key(&code, &peer_nonce, &hub_nonce);
            let paired = pairings
                .complete(&code, id, K::name(&hello), &key, K::managed_code(&hello))
                .map_err(|refused| match refused {
                    PairRefused::CodeGone => not_paired(&refused.to_string()),
                    PairRefused::IdTaken(_)
                    | PairRefused::ForAnother
                    | PairRefused::ManagedUnbound(_) => Refusal {
                        code: ErrorCode::Forbidden,
                        message: refused.to_string(),
                    },
                    PairRefused::State(error) => {
                        tracing::error!(%error, "cannot record a pairing");
                        Refusal {
                            code: ErrorCode::Internal,
                            message: "the hub cannot record the pairing; see its log".to_owned(),
                        }
                    }
                })?;
            tracing::info!(kind = noun, peer = %paired.peer_id, name = %paired.name, "paired");
            paired
        }
    };
    let pairing_id = paired.pairing_id;
    let pairings = pairings.clone();
    Ok(Proven {
        hello,
        owner: Owner::new(format!("pairing:{pairing_id}"), move || {
            if pairings.is_current(&pairing_id) {
                Ok(())
            } else {
                Err(not_paired(&format!(
                    "the hub closed this connection: this {noun}'s pairing was revoked"
                )))
            }
        }),
    })
}

/// Random bytes for a nonce; the refusal when the system has none to give.
fn pairing_random<const N: usize>() -> Result<[u8; N], Refusal> {
    crate::random::bytes::<N>().map_err(|error| {
        tracing::error!(%error, "no randomness for the pairing handshake");
        Refusal {
            code: ErrorCode::Internal,
            message: "the hub cannot make a nonce; see its log".to_owned(),
        }
    })
}

fn not_paired(message: &str) -> Refusal {
    Refusal {
        code: ErrorCode::NotPaired,
        message: message.to_owned(),
    }
}

/// Waits for the next handshake message (a challenge or a hello) and checks it; then allows
/// the socket one more handshake message's worth of bytes.
async fn receive<K: Linked>(
    socket: &mut PeerSocket,
    deadline: Instant,
    late: &str,
) -> Result<Incoming<K::Hello>, Refusal> {
    let too_large = || {
        invalid(&format!(
            "the handshake message is over {MAX_HANDSHAKE_BYTES} bytes, the most accepted"
        ))
    };
    let text = loop {
        match tokio::time::timeout_at(deadline, socket.next()).await {
            Err(_) => return Err(invalid(late)),
            // Beyond what the socket lets through before a welcome, or (a frame's header
            // announcing more than 16 MiB) beyond tungstenite's own frame limit.
            Ok(Some(Err(tungstenite::Error::Capacity(_)))) => return Err(too_large()),
            Ok(Some(Err(_))) if socket.get_ref().exceeded() => return Err(too_large()),
            Ok(None | Some(Err(_))) => return Err(invalid("connection closed before hello")),
            Ok(Some(Ok(Message::Text(text)))) => break text,
            Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => continue,
            Ok(Some(Ok(_))) => return Err(invalid("expected a text hello message")),
        }
    };
    if text.len() > MAX_HANDSHAKE_BYTES {
        return Err(too_large());
    }
    socket
        .get_mut()
        .allow(handshake_allowance(MAX_HANDSHAKE_BYTES));
    crate::peer_read::handshake::<K>(&text)
}

/// The operator's policy as a connection last sent it, and where the current one comes from.
struct Updates<F> {
    current: F,
    sent: Arc<Policy>,
}

impl<F: Fn() -> Arc<Policy>> Updates<F> {
    /// The policy to send, when it changed since the last one sent.
    fn changed(&mut self) -> Option<Policy> {
        let current = (self.current)();
        if Arc::ptr_eq(&current, &self.sent) || *current == *self.sent {
            return None;
        }
        self.sent = current;
        Some((*self.sent).clone())
    }
}

/// Moves messages between the socket and the registry until the connection ends; returns why
/// it ended, for the log.
async fn pump<K: Linked>(
    connection: &Arc<Connection>,
    socket: PeerSocket,
    mut outbox: tokio::sync::mpsc::UnboundedReceiver<HubMessage>,
    credential: &Owner,
    mut policies: Updates<impl Fn() -> Arc<Policy>>,
    gone: impl Fn(&str),
) -> &'static str {
    let (mut sink, mut stream) = socket.split();
    let mut heartbeat = tokio::time::interval(HEARTBEAT_INTERVAL);
    heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
    heartbeat.tick().await; // the first tick is immediate; the welcome just went out
    let mut credential_check = tokio::time::interval(CREDENTIAL_CHECK_INTERVAL);
    credential_check.set_missed_tick_behavior(MissedTickBehavior::Delay);
    credential_check.tick().await; // the credential was checked in the handshake
    let mut seq = 0u64;
    let mut last_heard = Instant::now();
    let peer = connection.peer_id();
    loop {
        tokio::select! {
            incoming = stream.next() => {
                let text = match incoming {
                    None | Some(Err(_)) => return "socket closed",
                    Some(Ok(Message::Close(_))) => return "the peer closed the connection",
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(_)) => { last_heard = Instant::now(); continue; }
                };
                last_heard = Instant::now();
                match crate::peer_read::message::<K>(&text) {
                    Ok(Incoming::Response(response)) => {
                        connection.complete(response.id, response.into_outcome());
                    }
                    Ok(Incoming::Heartbeat) => {}
                    Ok(Incoming::Gone(reason)) => {
                        let reason = crate::peer_read::gone_reason(&reason);
                        tracing::info!(kind = K::NOUN, %peer, %reason, "going away");
                        gone(&reason);
                    }
                    Ok(Incoming::Hello(_) | Incoming::Challenge(_)) => {
                        tracing::warn!(kind = K::NOUN, %peer, "ignored a handshake message after the handshake");
                    }
                    Err(error) => {
                        tracing::warn!(kind = K::NOUN, %peer, %error, "ignored an unreadable message");
                    }
                }
            }
            Some(message) = outbox.recv() => {
                let Ok(text) = serde_json::to_string(&message) else {
                    continue;
                };
                // A peer that stops reading must not stall this loop (and with it the heartbeat
                // and the token checks): a send that cannot finish in time ends the connection,
                // and the requests queued behind it fail at once.
                match tokio::time::timeout(SEND_TIMEOUT, sink.send(Message::Text(text.into()))).await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => return "send failed",
                    Err(_) => return "the peer stopped reading (send timed out)",
                }
            }
            () = connection.replaced() => {
                let _ = tokio::time::timeout(SEND_TIMEOUT, sink.close()).await;
                return "replaced by a newer connection of the same peer";
            }
            _ = credential_check.tick() => {
                if let Err(refusal) = credential.check() {
                    tracing::info!(kind = K::NOUN, %peer, reason = %refusal.message, "credential lapsed");
                    if let Ok(text) = serde_json::to_string(&HubMessage::Refused(refusal)) {
                        let _ = tokio::time::timeout(SEND_TIMEOUT, sink.send(Message::Text(text.into()))).await;
                    }
                    let _ = tokio::time::timeout(SEND_TIMEOUT, sink.close()).await;
                    return "its credential lapsed (revoked or expired)";
                }
                if let Some(policy) = policies.changed() {
                    tracing::info!(kind = K::NOUN, %peer, "sending the changed policy");
                    connection.send(HubMessage::Policy(policy));
                }
            }
            _ = heartbeat.tick() => {
                if last_heard.elapsed() > 3 * HEARTBEAT_INTERVAL {
                    let _ = tokio::time::timeout(SEND_TIMEOUT, sink.close()).await;
                    return "silent for three heartbeat intervals";
                }
                seq += 1;
                connection.send(HubMessage::Heartbeat { seq });
            }
        }
    }
}

/// Tells the peer why it is refused (the popup shows it), then closes the socket. A peer that
/// sent more than a handshake message is still sending: what it sends is read and thrown away
/// for a moment ([`crate::peer_socket::Guarded::discard`]), so that closing a socket with
/// unread bytes does not reset the connection before the refusal can be read.
async fn refuse(socket: &mut PeerSocket, refusal: Refusal) {
    let _ = send(socket, &HubMessage::Refused(refusal)).await;
    let _ = tokio::time::timeout(SEND_TIMEOUT, socket.close(None)).await;
    // Draining costs a read buffer per socket for up to a second: a few at a time, across the
    // hub, so a crowd of oversized senders cannot pile them up (the rest are closed at once,
    // and may lose the refusal to a reset).
    static DRAINING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(DRAINING_AT_ONCE);
    if socket.get_ref().exceeded()
        && let Ok(_draining) = DRAINING.try_acquire()
    {
        socket.get_mut().discard().await;
    }
}

/// How many refused sockets the hub drains at once ([`refuse`]).
const DRAINING_AT_ONCE: usize = 16;

/// Sends one message outside the pump (hello replies and refusals), within [`SEND_TIMEOUT`].
async fn send(socket: &mut PeerSocket, message: &HubMessage) -> Result<(), ()> {
    let text = serde_json::to_string(message).expect("hub messages always serialise");
    match tokio::time::timeout(SEND_TIMEOUT, socket.send(Message::Text(text.into()))).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link_test_kit::{EXTENSION, hear, hosted, say};
    use crate::peer::Browser;
    use tabwire_protocol::{ExtensionMessage, Kind, ListTabs, TabInfo, TabList};

    /// The socket reads [`READ_BUFFER_BYTES`] at a time; an answer forty times that (a big
    /// observation, a screenshot) still reaches the request whole.
    #[tokio::test]
    async fn an_answer_far_larger_than_the_read_buffer_arrives_whole() {
        let served = hosted().await;
        let token = served.token("alice", Role::Peer(Kind::Browser));
        let protocols = format!("tabwire, tabwire.bearer.{token}");
        let mut ws = served
            .open(
                "/browser",
                &[
                    ("origin", EXTENSION),
                    ("sec-websocket-protocol", &protocols),
                ],
            )
            .await
            .unwrap();
        say(
            &mut ws,
            serde_json::json!({
                "type": "hello", "browserId": "big-1", "browserName": "Big",
                "extensionVersion": "0.1.0", "protocolVersion": PROTOCOL_VERSION,
                "chromeVersion": "156"
            }),
        )
        .await;
        assert!(matches!(hear(&mut ws).await, HubMessage::Welcome(_)));
        let connection = served
            .state
            .accounts
            .get("alice")
            .registry::<Browser>()
            .connection("big-1")
            .unwrap();
        let asked = tokio::spawn(async move {
            let op = ListTabs {}.into();
            connection
                .request("list_tabs", None, None, op, Duration::from_secs(10))
                .await
        });
        let request = loop {
            if let HubMessage::Request(request) = hear(&mut ws).await {
                break request;
            }
        };
        let title = "x".repeat(40 * READ_BUFFER_BYTES);
        let tabs = TabList {
            tabs: vec![TabInfo {
                tab_id: 1,
                window_id: 1,
                active: true,
                url: "https://big.example/".to_owned(),
                title: title.clone(),
                status: "complete".to_owned(),
                blocked: false,
            }],
        };
        let answer = ExtensionMessage::Response(tabwire_protocol::Response::new(
            request.id,
            Ok(tabs.into()),
        ));
        say(&mut ws, serde_json::to_value(answer).unwrap()).await;
        let outcome = asked.await.unwrap().expect("the large answer arrives");
        let list = TabList::try_from(outcome).unwrap();
        assert_eq!(list.tabs[0].title, title);
    }
}
