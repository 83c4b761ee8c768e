//! What the endpoint tests share (`device_link_tests.rs`, `handshake_tests.rs`): a hub serving
//! the real router on a loopback port, in local or hosted mode, and a peer's side of the
//! handshake over real WebSockets.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tabwire_protocol::pairing::{self, PairingCode, Secret};
use tabwire_protocol::{HubMessage, PROTOCOL_VERSION};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tokio_util::sync::CancellationToken;

use crate::auth::{self, Authenticator, KeySource, Role};
use crate::hosted::PublicOrigin;
use crate::pairing::{PairingKind, Pairings};
use crate::peer::Device;
use crate::state::{FileUrls, HubState};
use crate::{accounts, app};

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

pub const TTL: Duration = Duration::from_secs(600);
pub const EXTENSION: &str = "chrome-extension://hjpjigandemmiglamagndeppmlncdhag";

/// A hub serving the real router on a loopback port, and its state.
pub struct Served {
    pub state: Arc<HubState>,
    pub port: u16,
    pub dir: std::path::PathBuf,
    cancel: CancellationToken,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.cancel.cancel();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn scratch() -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "tabwire-device-link-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ))
}

/// The public origin hosted tests present as their Host.
pub const PUBLIC: &str = "http://hub.example:8080";

pub async fn serve(state: impl FnOnce(&std::path::Path, u16) -> HubState, hosted: bool) -> Served {
    let dir = scratch();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let state = Arc::new(state(&dir, port));
    let cancel = CancellationToken::new();
    let public = hosted.then(|| PublicOrigin::parse(PUBLIC).unwrap());
    let router = app(state.clone(), public, cancel.clone());
    let stop = cancel.clone();
    tokio::spawn(async move {
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await
    });
    Served {
        state,
        port,
        dir,
        cancel,
    }
}

/// A local hub with its pairing state in a scratch directory.
pub async fn local() -> Served {
    serve(
        |dir, port| {
            HubState::local(
                format!("ws://127.0.0.1:{port}/browser"),
                Arc::new(Pairings::open(&dir.join("state")).unwrap()),
            )
        },
        false,
    )
    .await
}

/// A hosted hub whose tokens are issued in a scratch directory.
pub async fn hosted() -> Served {
    serve(
        |dir, _| {
            auth::issue(dir, "setup", Role::Agent, TTL, "").unwrap();
            let auth = Arc::new(Authenticator::load(dir, &KeySource::Secret).unwrap());
            let public = PublicOrigin::parse(PUBLIC).unwrap();
            HubState {
                pairings: None,
                accounts: accounts::Accounts::hosted(accounts::Limits::default()),
                browser_url: public.browser_url(),
                auth: Some(auth),
                file_urls: FileUrls::Refused,
                uploads: Default::default(),
                audit: None,
                lease_idle: crate::leases::DEFAULT_LEASE_IDLE,
                policies: Arc::new(crate::policy::Policies::allow_all()),
                layout: Default::default(),
                cluster: None,
            }
        },
        true,
    )
    .await
}

impl Served {
    pub fn token(&self, account: &str, role: Role) -> String {
        auth::issue(&self.dir, account, role, TTL, "").unwrap().0
    }

    pub fn code(&self, kind: PairingKind) -> PairingCode {
        crate::pairing::new_code(&self.dir.join("state"), TTL, kind).unwrap()
    }

    /// Opens `path` with these headers (a hosted hub's Host added).
    pub async fn open(
        &self,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Result<Ws, tungstenite::Error> {
        let mut request = format!("ws://127.0.0.1:{}{path}", self.port)
            .into_client_request()
            .unwrap();
        if self.state.is_hosted() {
            request
                .headers_mut()
                .insert("host", "hub.example:8080".parse().unwrap());
        }
        for (name, value) in headers {
            let name = tungstenite::http::HeaderName::from_bytes(name.as_bytes()).unwrap();
            request.headers_mut().insert(name, value.parse().unwrap());
        }
        tokio_tungstenite::connect_async(request)
            .await
            .map(|(ws, _)| ws)
    }

    pub fn devices(&self, account: &str) -> Vec<(String, bool, Option<String>)> {
        self.state
            .accounts
            .get(account)
            .registry::<Device>()
            .list()
            .into_iter()
            .map(|d| (d.id().to_owned(), d.connected, d.gone.clone()))
            .collect()
    }
}

pub async fn say(ws: &mut Ws, message: Value) {
    ws.send(Message::Text(message.to_string().into()))
        .await
        .unwrap();
}

/// The next message from the hub (heartbeats are not expected this soon).
pub async fn hear(ws: &mut Ws) -> HubMessage {
    loop {
        let next = tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .expect("the hub answers")
            .expect("the socket is open")
            .expect("a message");
        if let Message::Text(text) = next {
            return serde_json::from_str(&text).unwrap();
        }
    }
}

pub fn refusal(message: HubMessage) -> tabwire_protocol::Refusal {
    match message {
        HubMessage::Refused(refusal) => refusal,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// Opens `path` and sends a challenge with `secret`; the socket and the nonce.
pub async fn challenge(
    served: &Served,
    path: &str,
    headers: &[(&str, &str)],
    secret: &Secret,
) -> (Ws, [u8; pairing::NONCE_LEN]) {
    let mut ws = served.open(path, headers).await.unwrap();
    let nonce: [u8; pairing::NONCE_LEN] = crate::random::bytes().unwrap();
    say(
        &mut ws,
        json!({"type": "challenge", "protocolVersion": PROTOCOL_VERSION,
               "nonce": pairing::encode_hex(&nonce), "tag": pairing::tag(secret, &nonce),
               "pairing": matches!(secret, Secret::Code(_))}),
    )
    .await;
    (ws, nonce)
}

/// The pairing exchange with `secret`; returns the socket after the hub's proof was checked
/// and the hello sent, and the key a code derives.
pub async fn exchange(
    served: &Served,
    path: &str,
    headers: &[(&str, &str)],
    secret: &Secret,
    hello: Value,
) -> (Ws, HubMessage, Option<[u8; pairing::KEY_LEN]>) {
    let (mut ws, nonce) = challenge(served, path, headers, secret).await;
    let HubMessage::Proof(proof) = hear(&mut ws).await else {
        panic!("the hub did not prove itself");
    };
    let hub_nonce = pairing::decode_nonce(&proof.nonce).unwrap();
    assert!(pairing::hub_proof_matches(
        secret,
        &nonce,
        &hub_nonce,
        &proof.proof
    ));
    let mut hello = hello;
    hello["proof"] = json!(pairing::browser_proof(secret, &nonce, &hub_nonce));
    say(&mut ws, hello).await;
    let answer = hear(&mut ws).await;
    let key = match secret {
        Secret::Code(code) => Some(pairing::derive_key(code, &nonce, &hub_nonce)),
        Secret::Key(_) => None,
    };
    (ws, answer, key)
}

/// A challenge with `secret`, answered by a refusal before any proof.
pub async fn refused_at_challenge(
    served: &Served,
    path: &str,
    headers: &[(&str, &str)],
    secret: &Secret,
) -> tabwire_protocol::Refusal {
    let (mut ws, _) = challenge(served, path, headers, secret).await;
    refusal(hear(&mut ws).await)
}
