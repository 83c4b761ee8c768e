//! The connection to the hub: dial, introduce ourselves, serve requests, and come back after
//! every failure.
//!
//! One async loop ([`run`]) owns the socket for the worker's life. Its states are the popup's
//! status line: not configured (no URL: no attempts at all), not paired (a local hub's URL but
//! no pairing key or code: no attempts either), connecting, connected,
//! disconnected (waiting out a backoff: 0.5 s doubling to 10 s, or 2 to 5 s when a local hub's
//! handshake places were all taken) and refused (the hub turned the extension away: wait 60 s or
//! for the user to press Connect). The loop also watches the hub's
//! heartbeats and gives up on a connection after three silent intervals.
//!
//! Never replay: requests are served by tasks holding a [`Link`] to the connection they came
//! from; once that connection ends its [`Liveness`] is closed, which stops their work at its next
//! checkpoint and drops their results: nothing is ever sent on a later connection.
//!
//! The connection's state (what it dials, how it is going) lives here, in one thread-local
//! [`LinkState`]: the popup reads it, the worker fills in the configuration at start.
//!
//! A hub on plain `ws://` is a local one, and the connection starts with the pairing exchange
//! ([`tabwire_protocol::pairing`]): the extension sends only a challenge (the protocol
//! version, a nonce, a tag), and until the hub has proved it holds this browser's pairing key
//! (or the pairing code being used) the extension says nothing about itself, runs nothing and
//! shows none of its words. A hub that fails the proof is named as not the one this browser
//! paired with. A pairing that succeeds leaves the derived key in `chrome.storage.local`.
//!
//! A hub on `wss://` (hosted mode) is vouched for by its TLS certificate: the extension says
//! hello at once, and offers its access token as a subprotocol (see [`socket::Socket::open`]).
//! A token is never sent over plain `ws://` (see [`crate::config::Layers::target`]). The token
//! never reaches a log line or the popup: every sentence that ends a connection passes through
//! [`crate::config::token::redact`] first.

pub mod backoff;
pub mod socket;

use std::cell::RefCell;
use std::pin::Pin;

use tabwire_protocol::pairing::{self, KEY_LEN, NONCE_LEN, Secret};
use tabwire_protocol::{
    Challenge, ErrorCode, ExtensionMessage, Hello, HubMessage, HubProof, PROTOCOL_VERSION, Refusal,
    check_hello,
};
use wasm_bindgen_futures::spawn_local;
use web_sys::WebSocket;

use crate::checkpoint::{Cancels, Liveness};
use crate::chrome;
use crate::config::token::redact;
use crate::config::{AccessToken, ConnectTarget, Layers};
use crate::mailbox::Mailbox;
use crate::timer::{Either, now_ms, select, sleep};
use crate::{leases, requests};
use backoff::Backoff;
use socket::{Socket, SocketEvent, close_reason};

/// How long opening the socket, and then the hello/welcome exchange, may take.
const HANDSHAKE_MS: f64 = 10_000.0;
/// How long to wait after a refusal before asking again.
const REFUSED_RETRY_MS: f64 = 60_000.0;
/// A silence of this many heartbeat intervals means the connection is dead.
const SILENT_INTERVALS: f64 = 3.0;

/// The connection's state as the popup shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// No Server URL (or an unusable one): no connection attempts.
    NotConfigured,
    /// A local hub, but neither a pairing key nor a pairing code: no connection attempts.
    NotPaired,
    /// Dialling, or waiting for the hub's welcome.
    Connecting,
    /// Welcomed by the hub.
    Connected,
    /// Lost or failed; waiting to retry.
    Disconnected,
    /// The hub refused the extension; its message says why.
    Refused(String),
}

impl Status {
    /// The popup's name for the state.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::NotConfigured => "notConfigured",
            Status::NotPaired => "notPaired",
            Status::Connecting => "connecting",
            Status::Connected => "connected",
            Status::Disconnected => "disconnected",
            Status::Refused(_) => "refused",
        }
    }
}

/// Nudges for the connection loop from outside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// The user pressed Connect: retry now, even after a refusal.
    Connect,
    /// A configuration source changed: reconnect if the target changed.
    ConfigChanged,
    /// The keep-alive alarm fired: retry now if merely waiting out a backoff.
    Alarm,
}

/// What the connection dials and how it is going: everything the popup shows about it.
pub struct LinkState {
    /// The configuration sources as last read.
    pub layers: Layers,
    /// Set once local storage and the bundled file have been read; before that the popup
    /// shows "connecting" rather than a misleading "not configured".
    pub config_loaded: bool,
    /// This profile's stable browser ID, once read from storage.
    pub browser_id: Option<String>,
    /// The key of this browser's pairing with a local hub, once paired. Never logged or shown.
    pub pairing_key: Option<[u8; KEY_LEN]>,
    /// The connection's state.
    pub status: Status,
    /// The last connection problem, for the popup.
    pub last_error: Option<String>,
    /// The WebSocket URL being dialled or connected to.
    pub endpoint: Option<String>,
    /// The hub's version, from its welcome.
    pub hub_version: Option<String>,
    /// Nudges for the connection loop.
    control: Mailbox<Control>,
}

thread_local! {
    static STATE: RefCell<LinkState> = RefCell::new(LinkState {
        layers: Layers::default(),
        config_loaded: false,
        browser_id: None,
        pairing_key: None,
        status: Status::Connecting,
        last_error: None,
        endpoint: None,
        hub_version: None,
        control: Mailbox::new(),
    });
}

/// Runs `f` with the connection's state borrowed; never across an `await`.
pub fn with<R>(f: impl FnOnce(&mut LinkState) -> R) -> R {
    STATE.with(|state| f(&mut state.borrow_mut()))
}

/// Nudges the connection loop.
pub fn nudge(control: Control) {
    with(|state| state.control.post(control));
}

/// Replaces configuration layers, nudging the connection if its target changed. Returns whether
/// it did.
pub fn reconfigure(update: impl FnOnce(&mut Layers)) -> bool {
    let changed = with(|state| {
        let before = state.layers.target();
        update(&mut state.layers);
        state.layers.target() != before
    });
    if changed {
        nudge(Control::ConfigChanged);
    }
    changed
}

/// A request task's way back to the connection its request came on.
#[derive(Clone)]
pub struct Link {
    ws: WebSocket,
    liveness: Liveness,
}

impl Link {
    /// Sends a message if, and only if, the originating connection is still open.
    pub fn send(&self, text: &str) -> Result<(), &'static str> {
        if !self.liveness.is_open() || self.ws.ready_state() != WebSocket::OPEN {
            return Err("not sent: the connection it came on has closed");
        }
        self.ws
            .send_with_str(text)
            .map_err(|_| "not sent: the socket refused it")
    }
}

/// How one connection attempt ended.
enum Ended {
    /// Closed, failed or timed out; retry after a backoff.
    Lost(String),
    /// The hub refused us.
    Refused(String),
    /// A local hub had no handshake place free (`LIMIT_EXCEEDED` before its proof); retry within
    /// a few seconds.
    Busy(String),
    /// The user or a configuration change asked for a fresh start.
    Restart,
}

/// The connection loop. Runs for the worker's life.
pub async fn run() {
    let control = with(|state| state.control.clone());
    let mut backoff = Backoff::default();
    loop {
        let target = with(|state| state.layers.target());
        // The URL and the token must both be usable; a bad one is shown, a missing URL waits.
        let configured = match (&target.url, &target.token) {
            (Err(error), _) => Err(Some(error.to_string())),
            (_, Err(error)) => Err(Some(error.to_string())),
            (Ok(None), Ok(_)) => Err(None),
            (Ok(Some(url)), Ok(token)) => Ok((url.clone(), token.clone())),
        };
        let (url, token) = match configured {
            Ok(configured) => configured,
            Err(error) => {
                if let Some(error) = &error {
                    crate::chrome::log!("not connecting: {error}");
                }
                set_status(Status::NotConfigured, error, None);
                control.recv().await;
                backoff.reset();
                continue;
            }
        };
        // A hub behind TLS (hosted mode) is vouched for by its certificate, and a token is only
        // ever sent there; a hub on plain ws:// (local mode) must prove itself by pairing.
        let tls = url.starts_with("wss://");
        let secret = match (tls, pairing_secret(&target)) {
            (true, _) => None,
            (false, Ok(Some(secret))) => Some(secret),
            (false, Ok(None)) => {
                set_status(Status::NotPaired, Some(NOT_PAIRED.to_owned()), Some(url));
                control.recv().await;
                backoff.reset();
                continue;
            }
            (false, Err(error)) => {
                set_status(Status::NotConfigured, Some(error), None);
                control.recv().await;
                backoff.reset();
                continue;
            }
        };
        set_status(Status::Connecting, None, Some(url.clone()));
        let ended = session(
            &url,
            token.as_ref(),
            secret,
            &target,
            &control,
            &mut backoff,
        )
        .await;
        match ended {
            Ended::Restart => backoff.reset(),
            Ended::Refused(message) => {
                let message = redact(&message, token.as_ref());
                crate::chrome::log!("refused by the hub: {message}");
                set_status(Status::Refused(message.clone()), Some(message), Some(url));
                let deadline = now_ms() + REFUSED_RETRY_MS;
                // The alarm does not cut this wait short: only time or the user does.
                while let Either::Left(Control::Alarm) =
                    select(control.recv(), sleep(deadline - now_ms())).await
                {}
                backoff.reset();
            }
            Ended::Busy(reason) => {
                let delay = backoff::busy_retry_ms(js_sys::Math::random());
                crate::chrome::log!("{reason}; retrying in {delay} ms");
                let reason = format!("{reason}; trying again in {:.0} s", delay / 1000.0);
                set_status(Status::Disconnected, Some(reason), Some(url));
                if let Either::Left(Control::Connect | Control::ConfigChanged) =
                    select(control.recv(), sleep(delay)).await
                {
                    backoff.reset();
                }
            }
            Ended::Lost(reason) => {
                let reason = redact(&reason, token.as_ref());
                let delay = backoff.next_delay_ms(js_sys::Math::random());
                crate::chrome::log!("disconnected: {reason}; retrying in {delay} ms");
                set_status(Status::Disconnected, Some(reason), Some(url));
                if let Either::Left(Control::Connect | Control::ConfigChanged) =
                    select(control.recv(), sleep(delay)).await
                {
                    backoff.reset();
                }
            }
        }
    }
}

/// What the popup says when there is nothing to pair with.
const NOT_PAIRED: &str = "this browser is not paired with a hub yet: run `tabwire-hub pair` on \
     the hub's machine, paste the code under Pairing code and press Connect";

/// The secret to prove to a local hub: the key of an earlier pairing, else the configured
/// pairing code; `Ok(None)` when there is neither, `Err` for a code that cannot be one.
fn pairing_secret(target: &ConnectTarget) -> Result<Option<Secret>, String> {
    if let Some(key) = with(|state| state.pairing_key) {
        return Ok(Some(Secret::Key(key)));
    }
    match &target.pairing_code {
        Ok(code) => Ok(code.clone().map(Secret::Code)),
        Err(error) => Err(error.to_string()),
    }
}

fn set_status(status: Status, error: Option<String>, endpoint: Option<String>) {
    with(|state| {
        if error.is_some() || status == Status::Connected || status == Status::NotConfigured {
            state.last_error = error;
        }
        state.status = status;
        if endpoint.is_some() {
            state.endpoint = endpoint;
        }
    });
}

/// Where one connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Opening,
    /// The challenge went out; waiting for the hub's proof.
    Proving,
    Greeting,
    Live {
        silence_limit_ms: f64,
    },
}

/// A pairing exchange in progress.
struct Exchange {
    secret: Secret,
    browser_nonce: [u8; NONCE_LEN],
    /// Set once the hub's proof checked out.
    hub_nonce: Option<[u8; NONCE_LEN]>,
}

/// One connection: open, hello, welcome, then serve until it ends.
async fn session(
    url: &str,
    token: Option<&AccessToken>,
    secret: Option<Secret>,
    target: &ConnectTarget,
    control: &Mailbox<Control>,
    backoff: &mut Backoff,
) -> Ended {
    let socket = match Socket::open(url, token) {
        Ok(socket) => socket,
        Err(e) => return Ended::Lost(format!("could not open {url}: {e}")),
    };
    let liveness = Liveness::new();
    let ended = serve(&socket, &liveness, secret, target, control, backoff).await;
    // From here on no task may act or answer for this connection (see `Link::send`).
    liveness.close();
    drop(socket);
    // The hub's sessions do not outlive the connection: their leases lapse with it.
    leases::connection_ended();
    crate::ops::capture::connection_ended();
    crate::recording::connection_ended();
    crate::approvals::forget_sessions();
    ended
}

async fn serve(
    socket: &Socket,
    liveness: &Liveness,
    secret: Option<Secret>,
    target: &ConnectTarget,
    control: &Mailbox<Control>,
    backoff: &mut Backoff,
) -> Ended {
    let mut phase = Phase::Opening;
    // The requests of this connection the hub may still cancel.
    let cancels = Cancels::new();
    let mut exchange = secret.map(|secret| Exchange {
        secret,
        browser_nonce: random_nonce(),
        hub_nonce: None,
    });
    let mut last_heard = now_ms();
    // One timer at a time: re-armed when it fires, not per message, so a busy connection does
    // not pile up pending timeouts.
    let mut timer: Pin<Box<dyn Future<Output = ()>>> = Box::pin(sleep(HANDSHAKE_MS));
    loop {
        let event = select(select(socket.next(), control.recv()), timer.as_mut()).await;
        match event {
            Either::Right(()) => match phase {
                Phase::Live { silence_limit_ms } => {
                    let silent_for = now_ms() - last_heard;
                    if silent_for >= silence_limit_ms {
                        return Ended::Lost(format!(
                            "no heartbeat from the hub for {:.0} s",
                            silent_for / 1000.0
                        ));
                    }
                    timer = Box::pin(sleep(silence_limit_ms - silent_for));
                }
                _ => return Ended::Lost("the hub did not answer within 10 s".to_owned()),
            },
            Either::Left(Either::Right(nudge)) => {
                let changed = with(|state| state.layers.target()) != *target;
                let restart = match nudge {
                    Control::Alarm => false,
                    Control::ConfigChanged => changed,
                    // Pressing Connect while connected to the same hub changes nothing.
                    Control::Connect => changed || !matches!(phase, Phase::Live { .. }),
                };
                if restart {
                    crate::chrome::log!(
                        "reconnecting: the configuration changed or Connect was pressed"
                    );
                    return Ended::Restart;
                }
            }
            Either::Left(Either::Left(SocketEvent::Open)) => {
                match &exchange {
                    Some(exchange) => {
                        send_message(socket, &ExtensionMessage::Challenge(challenge(exchange)));
                        phase = Phase::Proving;
                    }
                    None => {
                        if let Err(refusal) = send_hello(socket, target, None, false) {
                            return refusal;
                        }
                        phase = Phase::Greeting;
                    }
                }
                timer = Box::pin(sleep(HANDSHAKE_MS));
            }
            Either::Left(Either::Left(SocketEvent::Closed { code, reason })) => {
                let mut why = close_reason(code, &reason);
                if phase == Phase::Opening && matches!(target.token, Ok(Some(_))) {
                    why.push_str(TOKEN_HANDSHAKE_HINT);
                }
                return Ended::Lost(why);
            }
            Either::Left(Either::Left(SocketEvent::Binary)) => {
                crate::chrome::log!("ignoring a binary message from the hub");
            }
            Either::Left(Either::Left(SocketEvent::Message(text))) => {
                last_heard = now_ms();
                let message = match serde_json::from_str::<HubMessage>(&text) {
                    Ok(message) => message,
                    // Only a hub that proved itself (or, hosted, was welcomed) gets an answer.
                    Err(e) if matches!(phase, Phase::Live { .. }) => {
                        answer_unreadable(socket, &text, &e);
                        continue;
                    }
                    Err(e) => {
                        crate::chrome::log!("ignoring an unreadable message from the hub: {e}");
                        continue;
                    }
                };
                match (message, phase) {
                    (HubMessage::Proof(proof), Phase::Proving) => {
                        let Some(exchange) = exchange.as_mut() else {
                            continue;
                        };
                        let Some(hub_nonce) = check_proof(exchange, &proof) else {
                            return Ended::Refused(impostor(target, exchange));
                        };
                        exchange.hub_nonce = Some(hub_nonce);
                        let proof = pairing::browser_proof(
                            &exchange.secret,
                            &exchange.browser_nonce,
                            &hub_nonce,
                        );
                        // Only a code (not a key) can have come from the policy.
                        let managed = matches!(exchange.secret, Secret::Code(_))
                            && target.pairing_code_managed;
                        if let Err(refusal) = send_hello(socket, target, Some(proof), managed) {
                            return refusal;
                        }
                        phase = Phase::Greeting;
                    }
                    (HubMessage::Welcome(welcome), Phase::Greeting) => {
                        if let Some(exchange) = &exchange {
                            keep_pairing(exchange, target);
                        }
                        backoff.reset();
                        let interval = (welcome.heartbeat_interval_ms as f64).max(1000.0);
                        let silence_limit_ms = interval * SILENT_INTERVALS;
                        phase = Phase::Live { silence_limit_ms };
                        timer = Box::pin(sleep(silence_limit_ms));
                        with(|state| state.hub_version = Some(welcome.hub_version.clone()));
                        crate::policy::set_operator(welcome.policy);
                        set_status(Status::Connected, None, None);
                        crate::chrome::log!(
                            "connected to {} (hub {})",
                            url_of(target),
                            welcome.hub_version
                        );
                    }
                    (HubMessage::Refused(refusal), Phase::Opening | Phase::Proving)
                        if let Some(exchange) = &exchange =>
                    {
                        // Anyone listening on the URL can send this: none of its words are
                        // shown, only what its code means.
                        crate::chrome::log!(
                            "refused before the hub proved itself ({}): {}",
                            refusal.code.as_str(),
                            refusal.message
                        );
                        if refusal.code == ErrorCode::LimitExceeded {
                            return Ended::Busy(busy(target));
                        }
                        return Ended::Refused(unproven_refusal(&refusal, exchange, target));
                    }
                    (HubMessage::Refused(refusal), _) => {
                        let has_token = matches!(target.token, Ok(Some(_)));
                        return Ended::Refused(describe_refusal(&refusal, has_token));
                    }
                    (HubMessage::Heartbeat { seq }, Phase::Greeting | Phase::Live { .. }) => {
                        send_message(socket, &ExtensionMessage::Heartbeat { seq });
                    }
                    (HubMessage::Policy(policy), Phase::Live { .. }) => {
                        crate::chrome::log!("the hub's policy changed");
                        crate::policy::set_operator(policy);
                    }
                    (HubMessage::Request(request), Phase::Live { .. }) => {
                        let link = Link {
                            ws: socket.handle(),
                            liveness: liveness.clone(),
                        };
                        // Cancellable from here, before its task exists: a cancel read
                        // before the task first runs still finds it.
                        let accepted = requests::accept(request, &cancels);
                        let liveness = liveness.clone();
                        spawn_local(accepted.serve(liveness, move |text| link.send(text)));
                    }
                    (HubMessage::Cancel { id }, Phase::Live { .. }) => {
                        // A request answered already has nothing left to stop.
                        if cancels.cancel(id) {
                            crate::chrome::log!("request {id}: cancelled by the hub");
                        }
                    }
                    (HubMessage::SessionEnded { session }, Phase::Live { .. }) => {
                        leases::session_ended(&session);
                        crate::ops::capture::session_ended(&session);
                        crate::recording::session_ended(&session);
                        crate::approvals::forget_session(&session);
                        // Its baselines can serve no one: the next session has a new name.
                        crate::refs::with_tables(|tables| tables.forget_viewer(&session));
                    }
                    (other, _) => {
                        crate::chrome::log!(
                            "ignoring an unexpected {} from the hub",
                            kind_of(&other)
                        );
                    }
                }
            }
        }
    }
}

/// Added to a close before the socket opened, when a token was offered: a hub that does not
/// take tokens fails that handshake in a way the browser reports only as code 1006.
const TOKEN_HANDSHAKE_HINT: &str = "; if the hub is running, check that it is in hosted mode: \
     a hub in local mode takes no access token";

/// The popup's sentence for a refusal: the hub's own message, and for the hosted-mode codes
/// what to do about it.
pub fn describe_refusal(refusal: &Refusal, has_token: bool) -> String {
    let hint = match refusal.code {
        ErrorCode::Unauthorized if has_token => {
            "check the token: it may be mistyped, expired or revoked"
        }
        ErrorCode::Unauthorized => "this hub needs an access token: enter one under Access token",
        ErrorCode::LimitExceeded => {
            "this account already has as many browsers connected as the hub allows; disconnect \
             one or ask the hub's operator to raise the limit"
        }
        _ => return refusal.message.clone(),
    };
    let message = refusal.message.trim().trim_end_matches('.');
    if message.is_empty() {
        format!(
            "the hub refused the connection ({}) — {hint}",
            refusal.code.as_str()
        )
    } else {
        format!("{message} — {hint}")
    }
}

fn url_of(target: &ConnectTarget) -> String {
    target.url.clone().ok().flatten().unwrap_or_default()
}

fn kind_of(message: &HubMessage) -> &'static str {
    match message {
        HubMessage::Proof(_) => "proof",
        HubMessage::Welcome(_) => "welcome",
        HubMessage::Refused(_) => "refusal",
        HubMessage::Request(_) => "request (before the welcome)",
        HubMessage::Heartbeat { .. } => "heartbeat",
        HubMessage::SessionEnded { .. } => "session's end (before the welcome)",
        HubMessage::Policy(_) => "policy (before the welcome)",
        HubMessage::Cancel { .. } => "cancel (before the welcome)",
    }
}

/// A fresh nonce from the platform's cryptographic random source.
fn random_nonce() -> [u8; NONCE_LEN] {
    let mut nonce = [0u8; NONCE_LEN];
    chrome::get_random_values(&mut nonce);
    nonce
}

/// The first message to a local hub: nothing but the protocol version, a nonce and a tag.
fn challenge(exchange: &Exchange) -> Challenge {
    Challenge {
        protocol_version: PROTOCOL_VERSION,
        nonce: pairing::encode_hex(&exchange.browser_nonce),
        tag: pairing::tag(&exchange.secret, &exchange.browser_nonce),
        pairing: matches!(exchange.secret, Secret::Code(_)),
    }
}

/// The hub's nonce, when its proof shows it holds the same secret.
fn check_proof(exchange: &Exchange, proof: &HubProof) -> Option<[u8; NONCE_LEN]> {
    let hub_nonce = pairing::decode_nonce(&proof.nonce)?;
    pairing::hub_proof_matches(
        &exchange.secret,
        &exchange.browser_nonce,
        &hub_nonce,
        &proof.proof,
    )
    .then_some(hub_nonce)
}

/// The popup's sentence for a refusal from a hub that has not proved itself: tabwire's own words
/// for what the code means, never the sender's, which could be anyone's.
fn unproven_refusal(refusal: &Refusal, exchange: &Exchange, target: &ConnectTarget) -> String {
    let url = url_of(target);
    match (refusal.code, &exchange.secret) {
        (ErrorCode::NotPaired, Secret::Code(_)) => format!(
            "the hub at {url} does not know this pairing code: it may be mistyped, used already \
             or expired; run `tabwire-hub pair` for a new one"
        ),
        (ErrorCode::NotPaired, Secret::Key(_)) => format!(
            "the hub at {url} does not know this browser: it was never paired there, or its \
             pairing was revoked. Run `tabwire-hub pair` on the hub's machine, paste the code \
             under Pairing code and press Connect"
        ),
        (ErrorCode::ProtocolMismatch, _) => format!(
            "the hub at {url} speaks another protocol version than this extension (protocol \
             {PROTOCOL_VERSION}): update tabwire-hub or the extension, whichever is older"
        ),
        (code, _) => format!(
            "the hub at {url} refused the connection ({}) before proving itself, so its reason \
             is not shown; check that tabwire-hub is running there",
            code.as_str()
        ),
    }
}

/// The popup's sentence for a local hub whose handshake places were all taken. Anyone can
/// send this code, so it only delays the next attempt by a few seconds.
fn busy(target: &ConnectTarget) -> String {
    format!(
        "the hub at {} turned this connection away (LIMIT_EXCEEDED) before proving itself: other \
         connections were starting there at once",
        url_of(target)
    )
}

/// The popup's sentence for a hub that failed its proof.
fn impostor(target: &ConnectTarget, exchange: &Exchange) -> String {
    let url = url_of(target);
    match exchange.secret {
        Secret::Key(_) => format!(
            "the hub at {url} is not the hub this browser paired with: it could not prove it \
             holds the pairing key, so another program may be listening there. Nothing about \
             this browser was sent and no request was run"
        ),
        Secret::Code(_) => format!(
            "the hub at {url} could not prove it issued this pairing code, so another program \
             may be listening there. The code was not sent; check the Server URL and that \
             tabwire-hub is running"
        ),
    }
}

/// After a welcome that ended a pairing with a code: keeps the derived key, in memory at once
/// and in `chrome.storage.local` in the background.
fn keep_pairing(exchange: &Exchange, target: &ConnectTarget) {
    let (Secret::Code(code), Some(hub_nonce)) = (&exchange.secret, exchange.hub_nonce) else {
        return;
    };
    let key = pairing::derive_key(code, &exchange.browser_nonce, &hub_nonce);
    with(|state| state.pairing_key = Some(key));
    crate::chrome::log!("paired with the hub at {}", url_of(target));
    spawn_local(async move {
        if let Err(e) = crate::config::store::save_pairing_key(Some(&key)).await {
            crate::chrome::log!("could not save the pairing key: {e}; the next start pairs again");
        }
    });
}

/// Sends `Hello` (with the pairing proof for a local hub, and whether its code came from the
/// managed policy), or refuses locally when the hub certainly would (same check as the hub's).
fn send_hello(
    socket: &Socket,
    target: &ConnectTarget,
    proof: Option<String>,
    managed_code: bool,
) -> Result<(), Ended> {
    let hello = with(|state| Hello {
        browser_id: state.browser_id.clone().unwrap_or_default(),
        browser_name: target.browser_name.clone(),
        extension_version: chrome::extension_version(),
        protocol_version: PROTOCOL_VERSION,
        chrome_version: chrome::chrome_version_from_user_agent(&chrome::user_agent()),
        proof,
        managed_code,
    });
    check_hello(&hello).map_err(|refusal| Ended::Refused(refusal.message))?;
    // Questions to a person name the browser as the hub knows it.
    crate::approvals::set_browser_name(&hello.browser_name);
    send_message(socket, &ExtensionMessage::Hello(hello));
    Ok(())
}

fn send_message(socket: &Socket, message: &ExtensionMessage) {
    let result = serde_json::to_string(message)
        .map_err(|e| e.to_string())
        .and_then(|text| socket.send(&text).map_err(|e| e.to_string()));
    if let Err(e) = result {
        crate::chrome::log!("could not send to the hub: {e}");
    }
}

/// Answers a message that could not be parsed, when it is recognisably a request, so the hub
/// does not wait for its deadline on a message the extension will never run.
fn answer_unreadable(socket: &Socket, text: &str, error: &serde_json::Error) {
    crate::chrome::log!("could not read a message from the hub: {error}");
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    if value.get("type").and_then(|t| t.as_str()) != Some("request") {
        return;
    }
    let Some(id) = value.get("id").and_then(|id| id.as_u64()) else {
        return;
    };
    let error = tabwire_protocol::OpError::new(
        tabwire_protocol::ErrorCode::InvalidArgument,
        format!(
            "The extension could not read this request ({error}); the hub and extension may be \
             different builds."
        ),
    );
    let response = tabwire_protocol::Response::new(id, Err(error));
    send_message(socket, &ExtensionMessage::Response(response));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(code: ErrorCode, message: &str) -> Refusal {
        Refusal {
            code,
            message: message.to_owned(),
        }
    }

    #[test]
    fn token_refusals_say_what_to_do() {
        let unauthorized = refusal(ErrorCode::Unauthorized, "the hub refused the access token");
        assert_eq!(
            describe_refusal(&unauthorized, true),
            "the hub refused the access token — check the token: it may be mistyped, expired \
             or revoked"
        );
        assert!(describe_refusal(&unauthorized, false).contains("needs an access token"));
        // The hub's FORBIDDEN sentences (an agent token, an ID bound to another credential)
        // say what to do themselves.
        let forbidden = refusal(
            ErrorCode::Forbidden,
            "this is an agent token; a browser needs a browser token",
        );
        assert_eq!(describe_refusal(&forbidden, true), forbidden.message);
        let limit = refusal(ErrorCode::LimitExceeded, "");
        assert!(
            describe_refusal(&limit, true)
                .starts_with("the hub refused the connection (LIMIT_EXCEEDED) — this account")
        );
    }

    #[test]
    fn other_refusals_are_shown_as_sent() {
        let mismatch = Refusal::protocol_mismatch(PROTOCOL_VERSION - 1);
        assert_eq!(describe_refusal(&mismatch, true), mismatch.message);
    }
}
