//! One device's connection to the hub: dial, prove, say hello, serve requests, and come back
//! after every failure until the device goes.
//!
//! With a local hub the connection starts with the pairing exchange, as the extension's does
//! (docs/pairing.md): the backend sends only a [`Challenge`] (a nonce and a tag of its secret),
//! and until the hub has proved it holds the same secret the backend says nothing about the
//! device and runs nothing. A hub that fails the proof gets the connection closed, a log line,
//! and a later retry. With a hosted hub the token (sent when the socket opens) vouches for the
//! backend and the hello goes first.
//!
//! After the welcome, each [`Request`] for a device operation runs in its own task; its
//! [`Response`] goes back on the connection it came from, or nowhere: when a connection ends
//! its tasks are aborted and nothing is replayed on the next one. Three heartbeat intervals
//! without a word from the hub end a connection as dead.
//!
//! The backend steers the connection through a [`watch`] channel of [`Control`]: a new
//! [`Served`] device when the phone moves to another adb serial (the connection stays up), or
//! [`Control::Stop`] with the reason the hub is told in a [`DeviceMessage::Gone`].

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tabwire_protocol::devices::{DeviceHello, DeviceMessage, DeviceOp, DeviceResult};
use tabwire_protocol::pairing::{self, NONCE_LEN, Secret};
use tabwire_protocol::policy::Policy;
use tabwire_protocol::{
    Challenge, ErrorCode, HubMessage, LeaseHolder, OpError, OpResult, Operation, PROTOCOL_VERSION,
    Refusal, Request, Response,
};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use crate::cancel::{Cancel, Canceller};
use crate::endpoint::{HubEndpoint, HubSocket, Mode};
use crate::keys::{CannotPair, Credentials, PairingTicket};

/// How long the exchange from the first message to the welcome may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one send may take before the connection is given up.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the closing handshake may take before the socket is simply dropped.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);
/// A silence of this many heartbeat intervals means the connection is dead.
const SILENT_INTERVALS: u32 = 3;
/// The shortest heartbeat interval believed, so a hub cannot make the backend spin.
const MIN_HEARTBEAT: Duration = Duration::from_millis(100);
/// Lost connections: retry after 1 s, doubling to 30 s.
const LOST_BACKOFF: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(30));
/// Refusals, hubs that cannot prove themselves, no way to pair: 5 s doubling to 60 s.
const REFUSED_BACKOFF: (Duration, Duration) = (Duration::from_secs(5), Duration::from_secs(60));
/// A local hub with no handshake place free: 2 s and up to 3 s more at random, every time. The
/// places are held by connections that say nothing for 2 s at most, so a program taking them
/// cannot keep the device out for long, and backends turned away together come back apart.
const BUSY_RETRY: (Duration, Duration) = (Duration::from_secs(2), Duration::from_secs(3));
/// The longest reason a [`DeviceMessage::Gone`] carries.
const MAX_REASON_CHARS: usize = 200;
/// How long past its deadline a request's task may run before it is given up.
const DEADLINE_GRACE: Duration = Duration::from_secs(30);

/// What a link serves: one device's operations, whatever platform drives it (Android's
/// `Device` over adb, iOS's over WebDriverAgent; a fake in tests).
pub trait Served: Send + Sync + 'static {
    /// Runs one operation for `holder` within `deadline`, for the MCP session `viewer`,
    /// stopping when `cancel` says so (see [`crate::cancel`]).
    fn execute_unless(
        &self,
        op: DeviceOp,
        holder: Option<LeaseHolder>,
        viewer: &str,
        deadline: Duration,
        cancel: &Cancel,
    ) -> impl Future<Output = Result<DeviceResult, OpError>> + Send;

    /// An MCP session of the hub ended: its lease lapses and what it was shown is forgotten.
    fn session_ended(&self, session: &str);

    /// The operator's policy arrived (in the welcome) or changed.
    fn set_operator_policy(&self, policy: Policy);

    /// What the device is reached through, for logs: an adb serial, a WebDriverAgent URL.
    fn reached_through(&self) -> &str;
}

/// What the tracker wants of a device's connection.
pub enum Control<D: Served> {
    /// Serve this device (the first one, or the same phone through another serial).
    Serve(Arc<D>),
    /// The device is gone: tell the hub why, close, and end.
    Stop(String),
}

impl<D: Served> Clone for Control<D> {
    fn clone(&self) -> Self {
        match self {
            Control::Serve(device) => Control::Serve(device.clone()),
            Control::Stop(reason) => Control::Stop(reason.clone()),
        }
    }
}

/// Everything one device's connection needs.
pub struct DeviceLink<D: Served> {
    /// The hub.
    pub endpoint: Arc<HubEndpoint>,
    /// Local mode's pairing, shared by all devices; `None` for a hosted hub.
    pub credentials: Option<Arc<Credentials>>,
    /// The device's hello, checked already (without a proof).
    pub hello: DeviceHello,
    /// The tracker's instructions.
    pub control: watch::Receiver<Control<D>>,
}

/// How one connection ended.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// The tracker stopped the device: the link ends.
    Stopped,
    /// Closed, failed, timed out or went silent: retry soon.
    Lost(String),
    /// Refused, an impostor, or no way to pair: retry later.
    Refused(String),
    /// A local hub had no handshake place free (`LIMIT_EXCEEDED` before its proof): retry
    /// within a few seconds.
    Busy(String),
    /// The device is now reached another way (another adb serial): the connection was closed and a
    /// fresh one (hello, leases, refs) is dialled at once.
    Moved,
}

/// A doubling delay between two bounds.
struct Backoff {
    bounds: (Duration, Duration),
    next: Duration,
}

impl Backoff {
    fn new(bounds: (Duration, Duration)) -> Self {
        Backoff {
            bounds,
            next: bounds.0,
        }
    }

    fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(self.bounds.1);
        delay
    }

    fn reset(&mut self) {
        self.next = self.bounds.0;
    }
}

impl<D: Served> DeviceLink<D> {
    /// Runs the connection until the tracker stops the device.
    pub async fn run(mut self) {
        let device_id = self.hello.device_id.clone();
        let mut lost = Backoff::new(LOST_BACKOFF);
        let mut refused = Backoff::new(REFUSED_BACKOFF);
        let mut last_refusal = String::new();
        loop {
            let ended = self.connection(&mut lost, &mut refused).await;
            let delay = match ended {
                Ended::Stopped => return,
                Ended::Moved => Duration::ZERO,
                Ended::Lost(reason) => {
                    let delay = lost.next_delay();
                    tracing::warn!(device = %device_id, %reason, retry_in_ms = delay.as_millis() as u64, "connection to the hub lost");
                    delay
                }
                Ended::Busy(reason) => {
                    let delay = busy_delay(random_fraction());
                    tracing::info!(device = %device_id, %reason, retry_in_ms = delay.as_millis() as u64, "the hub is busy");
                    delay
                }
                Ended::Refused(reason) => {
                    let delay = refused.next_delay();
                    // The same refusal again is not news: say it once, then quietly.
                    if reason != last_refusal {
                        tracing::warn!(device = %device_id, %reason, retry_in_ms = delay.as_millis() as u64, "the hub did not take the device");
                    } else {
                        tracing::debug!(device = %device_id, %reason, retry_in_ms = delay.as_millis() as u64, "still refused");
                    }
                    last_refusal = reason;
                    delay
                }
            };
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                stop = stopped(&mut self.control) => {
                    tracing::debug!(device = %device_id, reason = %stop, "stopped while waiting to reconnect");
                    return;
                }
            }
        }
    }

    /// One connection, from dialling to its end.
    async fn connection(&mut self, lost: &mut Backoff, refused: &mut Backoff) -> Ended {
        if let Control::Stop(_) = &*self.control.borrow() {
            return Ended::Stopped;
        }
        // Local mode: the key, or a pairing code (waiting while another device pairs).
        let offer = match (&self.credentials, self.endpoint.mode()) {
            (Some(credentials), Mode::Local) => {
                let credentials = credentials.clone();
                tokio::select! {
                    offer = credentials.secret() => match offer {
                        Ok(offer) => Some(offer),
                        Err(CannotPair(why)) => return Ended::Refused(why),
                    },
                    _ = stopped(&mut self.control) => return Ended::Stopped,
                }
            }
            _ => None,
        };
        // Not cut short by a stop: once the hub may have welcomed the device it is told that
        // the device goes (in `serve`); both steps are bounded.
        let mut socket = match self.endpoint.connect().await {
            Ok(socket) => socket,
            Err(reason) => return Ended::Lost(reason),
        };
        let welcome = tokio::time::timeout(
            HANDSHAKE_TIMEOUT,
            handshake(
                &mut socket,
                &self.endpoint,
                self.credentials.as_deref(),
                offer,
                self.hello.clone(),
            ),
        )
        .await
        .unwrap_or_else(|_| {
            Err(Ended::Lost(format!(
                "the hub did not finish the handshake within {} s",
                HANDSHAKE_TIMEOUT.as_secs()
            )))
        });
        let welcome = match welcome {
            Ok(welcome) => welcome,
            Err(ended) => {
                let _ = tokio::time::timeout(CLOSE_TIMEOUT, socket.close(None)).await;
                return ended;
            }
        };
        lost.reset();
        refused.reset();
        tracing::info!(
            device = %self.hello.device_id,
            name = %self.hello.device_name,
            hub = %self.endpoint.url(),
            hub_version = %welcome.hub_version,
            "device connected to the hub"
        );
        let interval = Duration::from_millis(welcome.heartbeat_interval_ms).max(MIN_HEARTBEAT);
        self.serve(socket, interval, welcome.policy).await
    }

    /// After the welcome: requests, heartbeats, session ends and policies until the end.
    async fn serve(&mut self, mut socket: HubSocket, interval: Duration, policy: Policy) -> Ended {
        let current = self.control.borrow_and_update().clone();
        let device = match current {
            Control::Serve(device) => device,
            Control::Stop(reason) => return goodbye(&mut socket, reason).await,
        };
        device.set_operator_policy(policy);
        let (responses, mut outgoing) = mpsc::unbounded_channel::<Response>();
        // Dropped when this function returns, which aborts every request still running: a
        // response never goes out on a later connection.
        let mut tasks = JoinSet::new();
        // The running requests the hub may cancel, by request ID.
        let cancellers = Cancellers::default();
        let silence_limit = interval * SILENT_INTERVALS;
        let mut last_heard = Instant::now();
        loop {
            tokio::select! {
                frame = socket.next() => {
                    let text = match frame {
                        None => return Ended::Lost("the hub closed the connection".to_owned()),
                        Some(Err(error)) => return Ended::Lost(format!("connection failed: {error}")),
                        Some(Ok(Message::Close(frame))) => {
                            let reason = frame.map(|f| f.reason.to_string()).unwrap_or_default();
                            return Ended::Lost(format!("the hub closed the connection {reason}").trim_end().to_owned());
                        }
                        Some(Ok(Message::Text(text))) => text,
                        Some(Ok(_)) => {
                            last_heard = Instant::now();
                            continue;
                        }
                    };
                    last_heard = Instant::now();
                    let message = match read_hub_message(&text) {
                        Ok(message) => message,
                        Err((error, answer)) => {
                            if let Some(response) = answer {
                                send_json(&mut socket, &DeviceMessage::Response(*response)).await.ok();
                            } else if is_policy(&text) {
                                // The operator's rules changed and cannot be read: going on
                                // under the old ones could leave a new `deny` unenforced.
                                let _ = tokio::time::timeout(CLOSE_TIMEOUT, socket.close(None)).await;
                                return Ended::Refused(format!("the hub's new policy could not be read ({error}); a hub and backends of one release read each other's"));
                            } else {
                                tracing::warn!(%error, "ignoring an unreadable message from the hub");
                            }
                            continue;
                        }
                    };
                    match message {
                        HubMessage::Request(request) => {
                            if let Some(response) = start(&mut tasks, &device, request, &responses, &cancellers)
                                && let Err(reason) = send_json(&mut socket, &DeviceMessage::Response(response)).await
                            {
                                return Ended::Lost(reason);
                            }
                        }
                        HubMessage::Heartbeat { seq } => {
                            if let Err(reason) = send_json(&mut socket, &DeviceMessage::Heartbeat { seq }).await {
                                return Ended::Lost(reason);
                            }
                        }
                        HubMessage::SessionEnded { session } => device.session_ended(&session),
                        HubMessage::Cancel { id } => {
                            // A request answered already has nothing left to stop.
                            if let Some(canceller) = cancellers.lock().unwrap().get(&id) {
                                tracing::debug!(id, "the hub cancelled a request");
                                canceller.cancel();
                            }
                        }
                        HubMessage::Policy(policy) => {
                            tracing::info!(device = %self.hello.device_id, "the operator's policy changed");
                            device.set_operator_policy(policy);
                        }
                        HubMessage::Refused(refusal) => {
                            return Ended::Refused(format!(
                                "the hub closed the connection ({}): {}",
                                refusal.code.as_str(),
                                refusal.message
                            ));
                        }
                        HubMessage::Proof(_) | HubMessage::Welcome(_) => {
                            tracing::debug!("ignoring a handshake message after the welcome");
                        }
                    }
                }
                Some(response) = outgoing.recv() => {
                    if let Err(reason) = send_json(&mut socket, &DeviceMessage::Response(response)).await {
                        return Ended::Lost(reason);
                    }
                }
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                changed = self.control.changed() => {
                    let control = match changed {
                        Ok(()) => self.control.borrow_and_update().clone(),
                        Err(_) => Control::Stop("backend stopped".to_owned()),
                    };
                    match control {
                        Control::Serve(next) => {
                            // Never swapped under the agent: requests in flight are dropped with
                            // this connection, and the next one starts with a hello, no leases
                            // and no refs.
                            tracing::info!(device = %self.hello.device_id, through = next.reached_through(), "the device is now reached another way; connecting again");
                            let _ = tokio::time::timeout(CLOSE_TIMEOUT, socket.close(None)).await;
                            return Ended::Moved;
                        }
                        Control::Stop(reason) => {
                            tracing::info!(device = %self.hello.device_id, %reason, "device gone; telling the hub");
                            return goodbye(&mut socket, reason).await;
                        }
                    }
                }
                () = tokio::time::sleep_until(last_heard + silence_limit) => {
                    // No closing handshake with a hub that does not answer: the socket is
                    // dropped, and the next dial starts after the backoff alone.
                    return Ended::Lost(format!(
                        "no word from the hub for {} heartbeat intervals ({} ms)",
                        SILENT_INTERVALS,
                        silence_limit.as_millis()
                    ));
                }
            }
        }
    }
}

/// Tells the hub the device is going, and closes.
async fn goodbye(socket: &mut HubSocket, reason: String) -> Ended {
    // adb's words (a `no permissions` sentence) can run long; the hub shows this in listings.
    let reason: String = reason.chars().take(MAX_REASON_CHARS).collect();
    let _ = send_json(socket, &DeviceMessage::Gone { reason }).await;
    let _ = tokio::time::timeout(CLOSE_TIMEOUT, socket.close(None)).await;
    Ended::Stopped
}

/// How long the links have to tell the hub their devices are going, at shutdown.
const GOODBYE_TIMEOUT: Duration = Duration::from_secs(5);

/// At shutdown: tells every link to stop (each says `backend stopped` to the hub) and waits,
/// a few seconds at most, for them to close.
pub async fn stop_all<D: Served>(
    controls: impl IntoIterator<Item = watch::Sender<Control<D>>>,
    links: &mut JoinSet<()>,
) {
    for control in controls {
        control.send_replace(Control::Stop("backend stopped".to_owned()));
    }
    let goodbyes = async { while links.join_next().await.is_some() {} };
    if tokio::time::timeout(GOODBYE_TIMEOUT, goodbyes)
        .await
        .is_err()
    {
        tracing::warn!("some connections did not close in time");
    }
}

/// Waits until the tracker says stop (or is gone); returns the reason.
async fn stopped<D: Served>(control: &mut watch::Receiver<Control<D>>) -> String {
    loop {
        if let Control::Stop(reason) = &*control.borrow_and_update() {
            return reason.clone();
        }
        if control.changed().await.is_err() {
            return "backend stopped".to_owned();
        }
    }
}

/// A pairing exchange that got as far as the hub's proof: the secret, both nonces, and the
/// ticket when the secret is a code being paired now.
type Proved = (
    Secret,
    [u8; NONCE_LEN],
    [u8; NONCE_LEN],
    Option<PairingTicket>,
);

/// The pairing exchange (local) or the token's hello (hosted), up to the welcome.
async fn handshake(
    socket: &mut HubSocket,
    endpoint: &HubEndpoint,
    credentials: Option<&Credentials>,
    offer: Option<crate::keys::Offer>,
    mut hello: DeviceHello,
) -> Result<tabwire_protocol::Welcome, Ended> {
    let mut pairing: Option<Proved> = None;
    if let Some(offer) = offer {
        let browser_nonce = random_nonce()
            .map_err(|error| Ended::Lost(format!("no random bytes for a nonce ({error})")))?;
        let challenge = Challenge {
            protocol_version: PROTOCOL_VERSION,
            nonce: pairing::encode_hex(&browser_nonce),
            tag: pairing::tag(&offer.secret, &browser_nonce),
            pairing: offer.ticket.is_some(),
        };
        send_json(socket, &DeviceMessage::Challenge(challenge))
            .await
            .map_err(Ended::Lost)?;
        let proof = match next_message(socket).await? {
            HubMessage::Proof(proof) => proof,
            HubMessage::Refused(refusal) => {
                // Anyone listening on the URL could say this; the key is kept (see keys.rs).
                match (&offer.secret, offer.ticket) {
                    (Secret::Key(key), _) if refusal.code == ErrorCode::NotPaired => {
                        if let Some(credentials) = credentials {
                            credentials.key_refused(key);
                        }
                    }
                    (Secret::Code(_), Some(ticket)) if refusal.code == ErrorCode::NotPaired => {
                        ticket.unknown_code();
                    }
                    _ => {}
                }
                if refusal.code == ErrorCode::LimitExceeded {
                    return Err(Ended::Busy(format!(
                        "the hub at {} turned the connection away before proving itself \
                         (LIMIT_EXCEEDED): other connections were starting there at once",
                        endpoint.url()
                    )));
                }
                return Err(Ended::Refused(format!(
                    "refused before the hub proved itself ({}): {}",
                    refusal.code.as_str(),
                    refusal.message
                )));
            }
            other => {
                return Err(Ended::Lost(format!(
                    "the hub answered the challenge with a {} message",
                    kind_of(&other)
                )));
            }
        };
        let hub_nonce = pairing::decode_nonce(&proof.nonce);
        let proved = hub_nonce.is_some_and(|hub_nonce| {
            pairing::hub_proof_matches(&offer.secret, &browser_nonce, &hub_nonce, &proof.proof)
        });
        let Some(hub_nonce) = hub_nonce.filter(|_| proved) else {
            return Err(Ended::Refused(format!(
                "the hub at {} could not prove it holds this backend's pairing: it is not the \
                 hub this backend paired with, and another program may be listening there; \
                 nothing was sent about the device",
                endpoint.url()
            )));
        };
        hello.proof = Some(pairing::browser_proof(
            &offer.secret,
            &browser_nonce,
            &hub_nonce,
        ));
        pairing = Some((offer.secret, browser_nonce, hub_nonce, offer.ticket));
    }
    send_json(socket, &DeviceMessage::Hello(hello))
        .await
        .map_err(Ended::Lost)?;
    loop {
        match next_message(socket).await? {
            HubMessage::Welcome(welcome) => {
                if let Some((Secret::Code(code), browser_nonce, hub_nonce, Some(ticket))) = pairing
                {
                    let key = pairing::derive_key(&code, &browser_nonce, &hub_nonce);
                    match ticket.paired(key) {
                        Ok(()) => {
                            tracing::info!(hub = %endpoint.url(), "paired with the hub; the key is kept for every device")
                        }
                        Err(error) => {
                            tracing::error!(%error, "paired with the hub, but the key could not be saved: the next start must pair again")
                        }
                    }
                }
                return Ok(welcome);
            }
            HubMessage::Refused(refusal) => {
                if let Some((_, _, _, Some(ticket))) = pairing
                    && refusal.code == ErrorCode::NotPaired
                {
                    ticket.unknown_code();
                }
                return Err(Ended::Refused(describe_refusal(&refusal)));
            }
            HubMessage::Heartbeat { seq } => {
                send_json(socket, &DeviceMessage::Heartbeat { seq })
                    .await
                    .map_err(Ended::Lost)?;
            }
            other => {
                tracing::debug!("ignoring a {} message before the welcome", kind_of(&other));
            }
        }
    }
}

/// A refusal from a hub that proved itself (or a hosted one), with what to do.
fn describe_refusal(refusal: &Refusal) -> String {
    let advice = match refusal.code {
        ErrorCode::NotPaired => {
            " — pair again: `tabwire-hub pair --device` on the hub's machine, then give the code \
             in TABWIRE_PAIRING_CODE"
        }
        ErrorCode::Unauthorized => " — check the token (TABWIRE_TOKEN or --token-file)",
        ErrorCode::ProtocolMismatch => " — run a tabwire-android and a tabwire-hub of one release",
        _ => "",
    };
    format!(
        "refused ({}): {}{advice}",
        refusal.code.as_str(),
        refusal.message
    )
}

/// The next message of the handshake; pings and pongs are skipped.
async fn next_message(socket: &mut HubSocket) -> Result<HubMessage, Ended> {
    loop {
        match socket.next().await {
            None | Some(Ok(Message::Close(_))) => {
                return Err(Ended::Lost(
                    "the hub closed the connection during the handshake".to_owned(),
                ));
            }
            Some(Err(error)) => return Err(Ended::Lost(format!("connection failed: {error}"))),
            Some(Ok(Message::Text(text))) => {
                return serde_json::from_str(&text).map_err(|error| {
                    Ended::Lost(format!("the hub sent an unreadable message: {error}"))
                });
            }
            Some(Ok(_)) => {}
        }
    }
}

/// The cancels of one connection's running requests, by request ID.
type Cancellers = Arc<std::sync::Mutex<std::collections::HashMap<u64, Canceller>>>;

/// Takes a request out of its connection's [`Cancellers`] when it ends, however it ends.
struct Running {
    cancellers: Cancellers,
    id: u64,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.cancellers.lock().unwrap().remove(&self.id);
    }
}

/// Starts a request: a device operation runs in its own task (its response comes back through
/// `responses`), cancellable through `cancellers` until it ends; anything else is answered at
/// once.
fn start<D: Served>(
    tasks: &mut JoinSet<()>,
    device: &Arc<D>,
    request: Request,
    responses: &mpsc::UnboundedSender<Response>,
    cancellers: &Cancellers,
) -> Option<Response> {
    let Request {
        id,
        deadline_ms,
        holder,
        viewer,
        op,
        tool,
        ..
    } = request;
    let Operation::Device(op) = op else {
        return Some(Response::new(
            id,
            Err(OpError::new(
                ErrorCode::InvalidArgument,
                "a device serves only device operations",
            )),
        ));
    };
    let device = device.clone();
    let responses = responses.clone();
    let deadline = Duration::from_millis(deadline_ms);
    let (canceller, cancel) = Cancel::new();
    cancellers.lock().unwrap().insert(id, canceller);
    let guard = Running {
        cancellers: cancellers.clone(),
        id,
    };
    tasks.spawn(async move {
        let _running = guard;
        let viewer = viewer.unwrap_or_default();
        let running = device.execute_unless(op, holder, &viewer, deadline, &cancel);
        match tokio::time::timeout(deadline + DEADLINE_GRACE, running).await {
            Ok(outcome) => {
                let _ = responses.send(Response::new(id, outcome.map(OpResult::Device)));
            }
            Err(_) => {
                tracing::warn!(id, %tool, "a device operation ran far past its deadline and was given up");
            }
        }
    });
    None
}

/// A message from the hub after the welcome; one that cannot be read comes with the answer to
/// send back when it was a request whose `id` can be found. Text in, no socket, so the fuzz
/// target `hub-message-device` (docs/fuzzing.md) calls what the connection calls.
pub fn read_hub_message(
    text: &str,
) -> Result<HubMessage, (serde_json::Error, Option<Box<Response>>)> {
    serde_json::from_str::<HubMessage>(text).map_err(|error| {
        let answer = unreadable_request(text, &error).map(Box::new);
        (error, answer)
    })
}

/// Whether an unreadable message from the hub is a `policy` message (its `type` can be found).
fn is_policy(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|value| value.get("type")?.as_str().map(|t| t == "policy"))
        .unwrap_or(false)
}

/// The answer to a request the backend cannot read, when its `id` can be found, so the hub
/// does not wait for its deadline.
fn unreadable_request(text: &str, error: &serde_json::Error) -> Option<Response> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    if value.get("type")?.as_str()? != "request" {
        return None;
    }
    let id = value.get("id")?.as_u64()?;
    Some(Response::new(
        id,
        Err(OpError::new(
            ErrorCode::InvalidArgument,
            format!("the device backend could not read this request: {error}"),
        )),
    ))
}

async fn send_json(socket: &mut HubSocket, message: &DeviceMessage) -> Result<(), String> {
    let text = serde_json::to_string(message).expect("protocol messages serialise");
    match tokio::time::timeout(SEND_TIMEOUT, socket.send(Message::text(text))).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(format!("sending to the hub failed: {error}")),
        Err(_) => Err(format!(
            "sending to the hub took more than {} s",
            SEND_TIMEOUT.as_secs()
        )),
    }
}

fn kind_of(message: &HubMessage) -> &'static str {
    match message {
        HubMessage::Proof(_) => "proof",
        HubMessage::Welcome(_) => "welcome",
        HubMessage::Refused(_) => "refused",
        HubMessage::Request(_) => "request",
        HubMessage::Heartbeat { .. } => "heartbeat",
        HubMessage::SessionEnded { .. } => "sessionEnded",
        HubMessage::Policy(_) => "policy",
        HubMessage::Cancel { .. } => "cancel",
    }
}

/// How long to wait after a busy hub, for `random` in `[0, 1)`.
fn busy_delay(random: f64) -> Duration {
    BUSY_RETRY.0 + BUSY_RETRY.1.mul_f64(random.clamp(0.0, 1.0))
}

/// A number in `[0, 1)` from the kernel's random source (0 when it has none to give).
fn random_fraction() -> f64 {
    let mut byte = [0u8; 2];
    match std::fs::File::open("/dev/urandom").and_then(|mut file| file.read_exact(&mut byte)) {
        Ok(()) => f64::from(u16::from_le_bytes(byte)) / 65_536.0,
        Err(_) => 0.0,
    }
}

/// A fresh nonce from the kernel's random source.
fn random_nonce() -> std::io::Result<[u8; NONCE_LEN]> {
    let mut nonce = [0u8; NONCE_LEN];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut nonce)?;
    Ok(nonce)
}

#[cfg(test)]
#[path = "link_tests.rs"]
mod tests;
