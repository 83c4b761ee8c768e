//! The `/browser` WebSocket endpoint: where extensions connect.
//!
//! Only extension origins (`chrome-extension://…`) may open it, so an ordinary web page the
//! user visits cannot reach the local hub. An Origin header proves nothing to a program that is
//! not a browser, though: in local mode a browser must also be paired, and every connection
//! starts with the pairing exchange in which the hub proves itself first and the browser second
//! ([`tabwire_protocol::pairing`]); in hosted mode a connection needs a browser token, and the
//! browser joins the token's account. A browser ID is bound to the credential (pairing or
//! token) that first registered it. The hub refuses an incompatible protocol version with a
//! message the popup shows, and otherwise registers the browser, forwards requests, correlates
//! responses, and sends a heartbeat every [`HEARTBEAT_INTERVAL`]. The heartbeat is what keeps
//! Chrome from stopping an idle MV3 service worker; a browser silent for three intervals is
//! considered gone.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use tabwire_protocol::pairing;
use tabwire_protocol::policy::Policy;
use tabwire_protocol::{
    Challenge, ErrorCode, ExtensionMessage, Hello, HubMessage, HubProof, PROTOCOL_VERSION, Refusal,
    Welcome, check_challenge, check_hello,
};
use tokio::time::{Instant, MissedTickBehavior};

use tokio::sync::OwnedSemaphorePermit;

use crate::accounts::Account;
use crate::auth::{Principal, Role};
use crate::pairing::{Claim, PairRefused, Pairings};
use crate::registry::{Connection, Owner};
use crate::state::HubState;

/// How often the hub sends a heartbeat. Must stay under Chrome's ~30 s idle limit for service
/// workers (PLATFORM.md measured that application messages every ~20 s keep it alive).
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(15);

/// How long one message to the browser may take to go out. A browser that reads nothing for
/// this long is disconnected, so a stalled socket cannot hold requests or a revoked token's
/// connection open.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a connection's credential is checked again: a hosted-mode token (expiry,
/// revocation) or a local pairing (revocation). The files behind them are re-read only when
/// they change, so this costs a lock and a lookup.
const CREDENTIAL_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// The largest handshake message (challenge, hello) accepted; real ones are a few hundred bytes.
const MAX_HANDSHAKE_BYTES: usize = 4096;

/// How long a new connection may take to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest message accepted from an extension. Observations of big pages run to a few MB.
const MAX_MESSAGE_BYTES: usize = 32 * 1024 * 1024;

/// The subprotocol the extension offers and the hub selects. In hosted mode the extension
/// offers a second one, `tabwire.bearer.<token>`, because a browser's WebSocket cannot send an
/// `Authorization` header.
pub const SUBPROTOCOL: &str = "tabwire";
const BEARER_SUBPROTOCOL: &str = "tabwire.bearer.";

/// `GET /browser`: checks the Origin and, in hosted mode, the browser token; then upgrades to a
/// WebSocket.
pub async fn endpoint(
    State(hub): State<Arc<HubState>>,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    if !origin.starts_with("chrome-extension://") {
        tracing::warn!(
            origin,
            "refused /browser connection from a non-extension origin"
        );
        return (
            StatusCode::FORBIDDEN,
            "only the tabwire browser extension may connect here\n",
        )
            .into_response();
    }
    let admitted = admit(&hub, &headers);
    let upgrade = match upgrade {
        Ok(upgrade) => upgrade,
        Err(rejection) => {
            return match admitted {
                Err(refusal) => refusal_status(&refusal),
                Ok(_) => rejection.into_response(),
            };
        }
    };
    let upgrade = if subprotocols(&headers).any(|protocol| protocol == SUBPROTOCOL) {
        upgrade.protocols([SUBPROTOCOL])
    } else {
        upgrade
    };
    let origin = origin.to_owned();
    upgrade
        .max_message_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |mut socket| async move {
            match admitted {
                Ok(admitted) => serve(hub, admitted, socket, origin).await,
                // A browser cannot read the status of a failed handshake, so the refusal is said
                // over the socket, which then closes; nothing was registered.
                Err(refusal) => refuse(&mut socket, refusal).await,
            }
        })
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

/// Who a `/browser` connection is for.
pub struct Admitted {
    account: Arc<Account>,
    /// The token's principal, in hosted mode.
    principal: Option<Principal>,
    /// Held from the upgrade until the browser is registered (or refused).
    handshake: Option<OwnedSemaphorePermit>,
}

/// Checks the browser token in hosted mode; local mode admits every extension to its one account,
/// to prove itself in the handshake. Either way only a few connections of an account may be in
/// their handshake at once.
fn admit(hub: &HubState, headers: &HeaderMap) -> Result<Admitted, Refusal> {
    let Some(auth) = &hub.auth else {
        let account = hub.accounts.local_account();
        let handshake = handshake_permit(&account)?;
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
        tracing::info!("refused /browser: no token");
        return Err(unauthorized());
    };
    let principal = auth.verify(token).map_err(|reason| {
        tracing::info!(%reason, "refused /browser: bad token");
        unauthorized()
    })?;
    if principal.role != Role::Browser {
        tracing::info!(
            account = principal.account,
            jti = principal.jti,
            "refused /browser: not a browser token"
        );
        return Err(Refusal {
            code: ErrorCode::Forbidden,
            message: "this is an agent token; a browser needs a browser token".to_owned(),
        });
    }
    let account = hub.accounts.get(&principal.account);
    let handshake = handshake_permit(&account)?;
    Ok(Admitted {
        account,
        principal: Some(principal),
        handshake: Some(handshake),
    })
}

/// A place among the account's connections in their handshake.
fn handshake_permit(account: &Account) -> Result<OwnedSemaphorePermit, Refusal> {
    account.handshakes.clone().try_acquire_owned().map_err(|_| {
        tracing::warn!(
            account = account.name,
            "refused /browser: too many connections saying hello"
        );
        Refusal {
            code: ErrorCode::LimitExceeded,
            message: "too many browser connections of this account are starting at once; \
                      try again in a few seconds"
                .to_owned(),
        }
    })
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

async fn serve(hub: Arc<HubState>, admitted: Admitted, mut socket: WebSocket, origin: String) {
    let Admitted {
        account,
        principal,
        handshake,
    } = admitted;
    let proven = match prove(&hub, principal, &mut socket).await {
        Ok(proven) => proven,
        Err(refusal) => {
            tracing::warn!(origin, code = %refusal.code, reason = %refusal.message, "refused browser");
            return refuse(&mut socket, refusal).await;
        }
    };
    let Proven { hello, owner } = proven;
    let credential = owner.clone();
    let browser_id = hello.browser_id.clone();
    let name = hello.browser_name.clone();
    let extension = hello.extension_version.clone();
    let chrome = hello.chrome_version.clone();
    let registered = account.browsers.connect(hello, owner);
    drop(handshake);
    let (connection, outbox) = match registered {
        Ok(connected) => connected,
        Err(error) => {
            tracing::warn!(account = account.name, browser = %browser_id, reason = %error.message, "refused browser");
            let refusal = Refusal {
                code: error.code,
                message: error.message,
            };
            return refuse(&mut socket, refusal).await;
        }
    };
    tracing::info!(
        account = account.name,
        browser = %browser_id,
        name = %name,
        extension = %extension,
        chrome = %chrome,
        origin,
        "browser connected"
    );
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
        pump(&connection, socket, outbox, &credential, policies).await
    };
    account.browsers.disconnect(&connection);
    tracing::info!(account = account.name, browser = %connection.peer_id(), reason, "browser disconnected");
}

/// A browser that proved who it is: its hello, and the credential its ID is bound to (checked
/// again every second while it is connected).
struct Proven {
    hello: Hello,
    owner: Owner,
}

/// The handshake. In hosted mode the token (checked at the upgrade) vouches for the browser
/// and the first message is its hello. In local mode the first message is a challenge: the
/// hub proves it holds the browser's pairing secret, then the browser's hello proves the same
/// (see [`tabwire_protocol::pairing`]); a browser that pairs now is recorded here.
async fn prove(
    hub: &HubState,
    principal: Option<Principal>,
    socket: &mut WebSocket,
) -> Result<Proven, Refusal> {
    // One deadline for the whole exchange, so pings cannot keep a silent client around.
    let deadline = Instant::now() + HELLO_TIMEOUT;
    let first = receive(socket, deadline).await?;
    match (&hub.pairings, principal, first) {
        (Some(pairings), _, ExtensionMessage::Challenge(challenge)) => {
            prove_paired(pairings, &challenge, socket, deadline).await
        }
        (Some(_), _, _) => Err(not_paired(
            "this hub takes only paired browsers: run `tabwire-hub pair` on its machine and paste \
             the code into the extension's popup (a local hub takes no access token)",
        )),
        (None, Some(principal), ExtensionMessage::Hello(hello)) => {
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

/// Local mode's exchange after the browser's challenge.
async fn prove_paired(
    pairings: &Arc<Pairings>,
    challenge: &Challenge,
    socket: &mut WebSocket,
    deadline: Instant,
) -> Result<Proven, Refusal> {
    let browser_nonce = pairing::decode_nonce(&challenge.nonce)
        .ok_or_else(|| invalid("malformed challenge: the nonce must be 32 bytes of hex"))?;
    let claim = pairings
        .find(&browser_nonce, &challenge.tag)
        .ok_or_else(|| {
            not_paired(if challenge.pairing {
                "this hub does not know that pairing code: it may be mistyped, used already or \
                 expired (codes last 10 minutes); run `tabwire-hub pair` for a new one"
            } else {
                "this browser is not paired with this hub, or its pairing was revoked: run \
                 `tabwire-hub pair` on the hub's machine and paste the code into the popup"
            })
        })?;
    let hub_nonce = pairing_random::<{ pairing::NONCE_LEN }>()?;
    let secret = claim.secret();
    let proof = HubMessage::Proof(HubProof {
        nonce: pairing::encode_hex(&hub_nonce),
        proof: pairing::hub_proof(&secret, &browser_nonce, &hub_nonce),
    });
    send(socket, &proof)
        .await
        .map_err(|()| invalid("connection closed during the handshake"))?;
    let ExtensionMessage::Hello(hello) = receive(socket, deadline).await? else {
        return Err(invalid("expected a hello after the hub's proof"));
    };
    let proved = hello.proof.as_deref().is_some_and(|proof| {
        pairing::browser_proof_matches(&secret, &browser_nonce, &hub_nonce, proof)
    });
    if !proved {
        return Err(not_paired(
            "the browser's proof does not match its pairing: pair it again with `tabwire-hub pair`",
        ));
    }
    let paired = match claim {
        Claim::Paired(paired) if paired.browser_id == hello.browser_id => paired,
        Claim::Paired(_) => {
            return Err(Refusal {
                code: ErrorCode::Forbidden,
                message: "this pairing belongs to another browser ID".to_owned(),
            });
        }
        Claim::Code(code) => {
            let key = pairing::derive_key(&code, &browser_nonce, &hub_nonce);
            let paired = pairings
                .complete(&code, &hello.browser_id, &hello.browser_name, &key)
                .map_err(|refused| match refused {
                    PairRefused::CodeGone => not_paired(&refused.to_string()),
                    PairRefused::IdTaken(_) => Refusal {
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
            tracing::info!(browser = %paired.browser_id, name = %paired.name, "paired a browser");
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
                Err(not_paired(
                    "the hub closed this connection: this browser's pairing was revoked",
                ))
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

fn invalid(message: &str) -> Refusal {
    Refusal {
        code: ErrorCode::InvalidArgument,
        message: message.to_owned(),
    }
}

/// Waits for the next handshake message (a challenge or a hello) and checks it.
async fn receive(socket: &mut WebSocket, deadline: Instant) -> Result<ExtensionMessage, Refusal> {
    let text = loop {
        match tokio::time::timeout_at(deadline, socket.recv()).await {
            Err(_) => return Err(invalid("no hello within 10 seconds")),
            Ok(None | Some(Err(_))) => return Err(invalid("connection closed before hello")),
            Ok(Some(Ok(Message::Text(text)))) => break text,
            Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => continue,
            Ok(Some(Ok(_))) => return Err(invalid("expected a text hello message")),
        }
    };
    if text.len() > MAX_HANDSHAKE_BYTES {
        return Err(invalid(&format!(
            "the handshake message is {} bytes; at most {MAX_HANDSHAKE_BYTES} are accepted",
            text.len()
        )));
    }
    // Read the protocol version before the strict parse: a message from a newer extension may
    // carry fields this hub does not know, and it deserves "update the hub", not "malformed".
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|_| invalid("hello is not JSON"))?;
    if let Some(theirs) = value.get("protocolVersion").and_then(|v| v.as_u64())
        && theirs != u64::from(PROTOCOL_VERSION)
    {
        return Err(Refusal::protocol_mismatch(
            u32::try_from(theirs).unwrap_or(u32::MAX),
        ));
    }
    match serde_json::from_value::<ExtensionMessage>(value) {
        Ok(ExtensionMessage::Hello(hello)) => {
            check_hello(&hello).map(|()| ExtensionMessage::Hello(hello))
        }
        Ok(ExtensionMessage::Challenge(challenge)) => {
            check_challenge(&challenge).map(|()| ExtensionMessage::Challenge(challenge))
        }
        Ok(_) => Err(invalid("the first message must be a hello")),
        Err(error) => Err(invalid(&format!("malformed hello: {error}"))),
    }
}

/// Moves messages between the socket and the registry until the connection ends; returns why
/// it ended, for the log.
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

async fn pump(
    connection: &Arc<Connection>,
    socket: WebSocket,
    mut outbox: tokio::sync::mpsc::UnboundedReceiver<HubMessage>,
    credential: &Owner,
    mut policies: Updates<impl Fn() -> Arc<Policy>>,
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
    loop {
        tokio::select! {
            incoming = stream.next() => {
                let text = match incoming {
                    None | Some(Err(_)) => return "socket closed",
                    Some(Ok(Message::Close(_))) => return "browser closed the connection",
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(_)) => { last_heard = Instant::now(); continue; }
                };
                last_heard = Instant::now();
                match serde_json::from_str::<ExtensionMessage>(&text) {
                    Ok(ExtensionMessage::Response(response)) => {
                        connection.complete(response.id, response.into_outcome());
                    }
                    Ok(ExtensionMessage::Heartbeat { .. }) => {}
                    Ok(ExtensionMessage::Hello(_) | ExtensionMessage::Challenge(_)) => {
                        tracing::warn!(browser = %connection.peer_id(), "ignored a handshake message after the handshake");
                    }
                    Err(error) => {
                        tracing::warn!(browser = %connection.peer_id(), %error, "ignored an unreadable message");
                    }
                }
            }
            Some(message) = outbox.recv() => {
                let Ok(text) = serde_json::to_string(&message) else {
                    continue;
                };
                // A browser that stops reading must not stall this loop (and with it the
                // heartbeat and the token checks): a send that cannot finish in time ends the
                // connection, and the requests queued behind it fail at once.
                match tokio::time::timeout(SEND_TIMEOUT, sink.send(Message::Text(text.into()))).await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => return "send failed",
                    Err(_) => return "the browser stopped reading (send timed out)",
                }
            }
            () = connection.replaced() => {
                let _ = tokio::time::timeout(SEND_TIMEOUT, sink.close()).await;
                return "replaced by a newer connection of the same browser";
            }
            _ = credential_check.tick() => {
                if let Err(refusal) = credential.check() {
                    tracing::info!(browser = %connection.peer_id(), reason = %refusal.message, "credential lapsed");
                    if let Ok(text) = serde_json::to_string(&HubMessage::Refused(refusal)) {
                        let _ = tokio::time::timeout(SEND_TIMEOUT, sink.send(Message::Text(text.into()))).await;
                    }
                    let _ = tokio::time::timeout(SEND_TIMEOUT, sink.close()).await;
                    return "its credential lapsed (revoked or expired)";
                }
                if let Some(policy) = policies.changed() {
                    tracing::info!(browser = %connection.peer_id(), "sending the changed policy");
                    connection.send(HubMessage::Policy(policy));
                }
            }
            _ = heartbeat.tick() => {
                if last_heard.elapsed() > 3 * HEARTBEAT_INTERVAL {
                    let _ = tokio::time::timeout(SEND_TIMEOUT, sink.close()).await;
                    return "browser silent for three heartbeat intervals";
                }
                seq += 1;
                connection.send(HubMessage::Heartbeat { seq });
            }
        }
    }
}

/// Tells the extension why it is refused (its popup shows it), then closes the socket.
async fn refuse(socket: &mut WebSocket, refusal: Refusal) {
    let _ = send(socket, &HubMessage::Refused(refusal)).await;
    let _ = tokio::time::timeout(SEND_TIMEOUT, socket.close()).await;
}

/// Sends one message outside the pump (hello replies and refusals), within [`SEND_TIMEOUT`].
async fn send(socket: &mut WebSocket, message: &HubMessage) -> Result<(), ()> {
    let text = serde_json::to_string(message).expect("hub messages always serialise");
    match tokio::time::timeout(SEND_TIMEOUT, socket.send(Message::Text(text.into()))).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(()),
    }
}
