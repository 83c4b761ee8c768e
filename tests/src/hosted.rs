//! Hosted mode end to end: the real `tabwire-hub` with `--auth-dir` and `--public-origin`, behind
//! a real nginx terminating TLS ([`crate::proxy`]), tokens from the hub's own `token` command,
//! and MCP over HTTPS with rmcp's streamable HTTP client (a session client, or a stateless one
//! speaking protocol 2026-07-28), plus raw HTTP and WebSocket probes for the refusals.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Once};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use rmcp::model::ProtocolVersion;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt, ServiceExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::{self, Message, client::IntoClientRequest};

use crate::artifacts::artifacts;
use crate::browser::Browser;
use crate::client::McpClient;
use crate::proxy::{Nginx, PREFIX, free_port};
use crate::scratch::Scratch;

/// The extension's origin (its ID is fixed by the manifest's key).
pub const EXTENSION_ORIGIN: &str = "chrome-extension://hjpjigandemmiglamagndeppmlncdhag";

/// The audience of the hub's tokens.
pub const AUDIENCE: &str = "tabwire";

/// A token's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// For MCP clients on `/mcp`.
    Agent,
    /// For the extension on `/browser`.
    Browser,
    /// For device backends on `/device`.
    Device,
}

impl Role {
    /// The `role` claim.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Agent => "agent",
            Role::Browser => "browser",
            Role::Device => "device",
        }
    }
}

/// Installs ring as rustls's process-wide crypto provider (reqwest is built without one, so
/// that no aws-lc is compiled).
pub fn install_crypto() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A hub running in hosted mode with its own auth directory.
pub struct HostedHub {
    child: Option<Child>,
    /// The HTTP address it listens on (behind the proxy).
    pub http: SocketAddr,
    /// Its `--auth-dir`.
    pub auth_dir: PathBuf,
    _dir: Scratch,
}

impl HostedHub {
    /// Starts `tabwire-hub --host 127.0.0.1 --port 0 --auth-dir DIR --public-origin ORIGIN`
    /// and waits for its `listening http=ADDR public=ORIGIN` line.
    pub fn spawn(public_origin: &str) -> HostedHub {
        let dir = Scratch::new("hosted-hub");
        let auth_dir = dir.path().join("auth");
        // The hub's HS256 secret is created by the first `token issue`; make it now so the
        // hub finds it whatever it does with a missing one.
        token_command(
            &auth_dir,
            &[
                "issue",
                "--account",
                "setup",
                "--role",
                "agent",
                "--ttl",
                "1m",
                "--note",
                "e2e setup",
            ],
        );
        let mut command = Command::new(&artifacts().hub);
        command
            .args(["--host", "127.0.0.1", "--port", "0", "--auth-dir"])
            .arg(&auth_dir)
            .args(["--public-origin", public_origin]);
        let (child, ready) = crate::hub::spawn_until_listening(command);
        let mut words = ready.split_whitespace();
        let addr = words.next().unwrap_or_default().to_owned();
        let public = words
            .next()
            .and_then(|word| word.strip_prefix("public="))
            .unwrap_or_default()
            .to_owned();
        assert_eq!(
            public, public_origin,
            "the ready line names the public origin"
        );
        HostedHub {
            child: Some(child),
            http: addr.parse().expect("listening line has an address"),
            auth_dir,
            _dir: dir,
        }
    }
}

impl Drop for HostedHub {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs `tabwire-hub token ARGS… --auth-dir DIR` and returns its stdout (trimmed).
pub fn token_command(auth_dir: &Path, args: &[&str]) -> String {
    let output = Command::new(&artifacts().hub)
        .arg("token")
        .arg(args[0])
        .arg("--auth-dir")
        .arg(auth_dir)
        .args(&args[1..])
        .stdin(Stdio::null())
        .output()
        .expect("run tabwire-hub token");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "tabwire-hub token {args:?} failed ({}): {stderr}",
        output.status
    );
    String::from_utf8(output.stdout)
        .expect("token output is UTF-8")
        .trim()
        .to_owned()
}

/// The claims of a hub token, for crafting tokens the hub must refuse.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Claims {
    /// The account.
    pub sub: String,
    /// `agent` or `browser`.
    pub role: String,
    /// Expiry (seconds since the epoch).
    pub exp: i64,
    /// Issued at.
    pub iat: i64,
    /// The token's ID (what revocation names).
    pub jti: String,
    /// Always [`AUDIENCE`] for the hub's tokens.
    pub aud: String,
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// An HS256 token for `account`/`role` signed with `secret`, expiring `expires_in` seconds
/// from now (negative: already expired).
pub fn craft_token(secret: &[u8], account: &str, role: Role, expires_in: i64) -> String {
    let now = now();
    let claims = Claims {
        sub: account.to_owned(),
        role: role.as_str().to_owned(),
        exp: now + expires_in,
        iat: now.min(now + expires_in) - 60,
        jti: format!("e2e-{}-{}", std::process::id(), now),
        aud: AUDIENCE.to_owned(),
    };
    tabwire_hub::jwt_crypto::install();
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret),
    )
    .expect("sign a test token")
}

/// The claims of `token`, read without checking its signature.
pub fn claims_of(token: &str) -> Claims {
    jsonwebtoken::dangerous::insecure_decode::<Claims>(token)
        .expect("the hub's token is a JWT with the documented claims")
        .claims
}

/// A raw HTTP answer.
#[derive(Debug)]
pub struct RawReply {
    /// The status code.
    pub status: u16,
    /// The headers.
    pub headers: reqwest::header::HeaderMap,
    /// The body as text.
    pub body: String,
}

impl RawReply {
    /// A header's value, if present and text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }

    /// The JSON-RPC message in the body: the body itself (JSON), or the last SSE `data:` line
    /// that holds a JSON-RPC response (an event stream).
    pub fn jsonrpc(&self) -> Value {
        if let Ok(value) = serde_json::from_str::<Value>(&self.body) {
            return value;
        }
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .rfind(|message| message.get("id").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC response in: {}", self.body))
    }
}

/// The hosted setup: a hub in hosted mode behind nginx (TLS), with HTTPS clients that trust the
/// proxy's test CA.
pub struct Hosted {
    /// nginx (dropped first: it is declared first).
    pub proxy: Nginx,
    /// The hub.
    pub hub: HostedHub,
    https: reqwest::Client,
    direct: reqwest::Client,
    tls: Arc<rustls::ClientConfig>,
}

impl Hosted {
    /// Starts the hub with `--public-origin https://localhost:PORT` and nginx on that port.
    pub fn start() -> Hosted {
        install_crypto();
        let port = free_port();
        let origin = format!("https://localhost:{port}");
        let hub = HostedHub::spawn(&origin);
        let proxy = Nginx::start(port, hub.http);
        let ca = reqwest::Certificate::from_pem(&proxy.certs.ca_pem).unwrap();
        let https = reqwest::Client::builder()
            .tls_certs_only([ca])
            .no_proxy()
            .build()
            .expect("HTTPS client trusting the test CA");
        // Straight to the hub's port, with the Host a request through the proxy carries.
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::HOST,
            format!("localhost:{port}").parse().unwrap(),
        );
        let direct = reqwest::Client::builder()
            .default_headers(headers)
            .no_proxy()
            .build()
            .expect("plain HTTP client");
        let mut roots = rustls::RootCertStore::empty();
        use rustls::pki_types::{CertificateDer, pem::PemObject};
        for cert in CertificateDer::pem_slice_iter(&proxy.certs.ca_pem) {
            roots.add(cert.unwrap()).unwrap();
        }
        let tls = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        Hosted {
            proxy,
            hub,
            https,
            direct,
            tls: Arc::new(tls),
        }
    }

    /// The public origin, `https://localhost:PORT`.
    pub fn origin(&self) -> String {
        self.proxy.origin()
    }

    /// `wss://localhost:PORT/device` (through nginx).
    pub fn device_url(&self) -> String {
        format!("wss://localhost:{}/device", self.proxy.addr.port())
    }

    /// `https://localhost:PORT/mcp` (through nginx).
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.origin())
    }

    /// `http://HUB/mcp` (straight to the hub; [`Hosted::direct_session`] sends the public Host).
    pub fn direct_mcp_url(&self) -> String {
        format!("http://{}/mcp", self.hub.http)
    }

    /// `wss://localhost:PORT/browser` (through nginx).
    pub fn browser_url(&self) -> String {
        format!("wss://localhost:{}/browser", self.proxy.addr.port())
    }

    /// `tabwire-hub token issue --account ACCOUNT --role ROLE --ttl 1h`: the token.
    pub fn issue(&self, account: &str, role: Role) -> String {
        let token = token_command(
            &self.hub.auth_dir,
            &[
                "issue",
                "--account",
                account,
                "--role",
                role.as_str(),
                "--ttl",
                "1h",
            ],
        );
        assert!(
            !token.is_empty() && !token.contains(char::is_whitespace),
            "token issue prints the token alone on stdout, got {token:?}"
        );
        token
    }

    /// `tabwire-hub token revoke JTI`.
    pub fn revoke(&self, jti: &str) {
        token_command(&self.hub.auth_dir, &["revoke", jti]);
    }

    /// The hub's HS256 key from `DIR/hs256.secret`: `token issue` writes its 32 random bytes
    /// as 64 hex digits; other text is the key as it is.
    pub fn secret(&self) -> Vec<u8> {
        let text = std::fs::read_to_string(self.hub.auth_dir.join("hs256.secret"))
            .expect("hs256.secret exists");
        let text = text.trim();
        let hex = text.len().is_multiple_of(2) && text.bytes().all(|b| b.is_ascii_hexdigit());
        if hex {
            (0..text.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
                .collect()
        } else {
            text.as_bytes().to_vec()
        }
    }

    /// Chromium with the extension dialing `wss://localhost:PORT/browser` with `token`.
    pub fn launch_browser(&self, token: &str, name: &str, url: &str) -> Browser {
        Browser::launch_hosted(&self.browser_url(), token, name, url)
    }

    /// The same, dialing through nginx's path prefix: `wss://localhost:PORT/team/browser`.
    pub fn launch_browser_under_prefix(&self, token: &str, name: &str, url: &str) -> Browser {
        let server = format!(
            "{}{}/browser",
            self.origin().replacen("https", "wss", 1),
            PREFIX
        );
        Browser::launch_hosted(&server, token, name, url)
    }

    /// An MCP session (initialize, `Mcp-Session-Id`) through nginx with `token`.
    pub async fn session(&self, token: &str) -> McpClient {
        http_session(self.https.clone(), &self.mcp_url(), token).await
    }

    /// An MCP session straight to the hub's port (the public Host), for comparisons.
    pub async fn direct_session(&self, token: &str) -> McpClient {
        http_session(self.direct.clone(), &self.direct_mcp_url(), token).await
    }

    /// A stateless MCP client through nginx's path prefix (`https://localhost:PORT/team/mcp`):
    /// protocol 2026-07-28, `server/discover` instead of `initialize`, no `Mcp-Session-Id`.
    pub async fn stateless_under_prefix(&self, token: &str) -> McpClient {
        let url = format!("{}{}/mcp", self.origin(), PREFIX);
        let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
        let transport = StreamableHttpClientTransport::with_client(self.https.clone(), config);
        let service = crate::client::Listener::default()
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("stateless MCP client (server/discover) through nginx");
        McpClient::from_service(service)
    }

    /// POSTs `body` to `/mcp` through nginx with an optional bearer token, session ID and
    /// extra headers.
    pub async fn post_mcp(
        &self,
        token: Option<&str>,
        session: Option<&str>,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> RawReply {
        let mut request = self
            .https
            .post(self.mcp_url())
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(token) = token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        if let Some(session) = session {
            request = request.header("Mcp-Session-Id", session);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        raw(request).await
    }

    /// A plain (non-upgrade) GET of `path` through nginx with optional headers.
    pub async fn get(&self, path: &str, headers: &[(&str, &str)]) -> RawReply {
        let mut request = self.https.get(format!("{}{path}", self.origin()));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        raw(request).await
    }

    /// Opens `wss://localhost:PORT/browser` through nginx the way the extension does: Origin
    /// `chrome-extension://…`, subprotocols `tabwire` and `tabwire.bearer.TOKEN` when a token
    /// is given (none otherwise), and optionally another `Host`.
    pub async fn browser_socket(
        &self,
        token: Option<&str>,
        host: Option<&str>,
    ) -> Result<WebSocketStream<TlsStream<TcpStream>>, tungstenite::Error> {
        let mut request = self.browser_url().into_client_request().unwrap();
        let headers = request.headers_mut();
        headers.insert("Origin", EXTENSION_ORIGIN.parse().unwrap());
        // Without a token the extension dials exactly as in local mode: no subprotocol.
        if let Some(token) = token {
            let protocols = format!("tabwire, tabwire.bearer.{token}");
            headers.insert("Sec-WebSocket-Protocol", protocols.parse().unwrap());
        }
        if let Some(host) = host {
            headers.insert("Host", host.parse().unwrap());
        }
        let tcp = TcpStream::connect(self.proxy.addr).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone())
            .connect(name, tcp)
            .await
            .expect("TLS to nginx");
        tokio_tungstenite::client_async(request, tls)
            .await
            .map(|(socket, _)| socket)
    }
}

async fn raw(request: reqwest::RequestBuilder) -> RawReply {
    let response = tokio::time::timeout(Duration::from_secs(30), request.send())
        .await
        .expect("an HTTP answer within 30 s")
        .expect("HTTP request");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    // An SSE stream ends when the answer is complete; a stream that stays open (a GET) must
    // not be read here.
    let body = tokio::time::timeout(Duration::from_secs(30), response.text())
        .await
        .expect("the body ends within 30 s")
        .unwrap_or_default();
    RawReply {
        status,
        headers,
        body,
    }
}

/// An MCP session over streamable HTTP with `client` (which carries TLS or Host settings).
pub async fn http_session(client: reqwest::Client, url: &str, token: &str) -> McpClient {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let service = crate::client::Listener::default()
        .serve(transport)
        .await
        .unwrap_or_else(|error| panic!("MCP initialize over HTTP at {url}: {error}"));
    McpClient::from_service(service)
}

/// A `hello` like the extension's first message.
pub fn hello(browser_id: &str) -> Value {
    json!({
        "type": "hello", "browserId": browser_id, "browserName": "Probe",
        "extensionVersion": "0.1.0",
        "protocolVersion": tabwire_protocol::messages::PROTOCOL_VERSION,
        "chromeVersion": "156"
    })
}

/// Says hello on an open `/browser` socket and returns the hub's `refused` message (panics if
/// the hub welcomes the connection or says nothing), after checking that the socket closes.
pub async fn refusal(socket: &mut WebSocketStream<TlsStream<TcpStream>>) -> Value {
    // The hub may refuse before or after the hello; a failed send is not the point.
    let _ = socket
        .send(Message::Text(hello("probe-1").to_string().into()))
        .await;
    let refused = loop {
        let next = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("the hub answers a refused connection within 10 s");
        match next {
            Some(Ok(Message::Text(text))) => {
                let message: Value = serde_json::from_str(&text).unwrap();
                assert_ne!(message["type"], "welcome", "the hub accepted: {message}");
                if message["type"] == "refused" {
                    break message;
                }
            }
            Some(Ok(Message::Close(frame))) => {
                panic!("the socket closed without a `refused` message ({frame:?})")
            }
            Some(Ok(_)) => {}
            Some(Err(error)) => panic!("the socket failed before a `refused` message: {error}"),
            None => panic!("the socket ended without a `refused` message"),
        }
    };
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match socket.next().await {
                None | Some(Ok(Message::Close(_))) | Some(Err(_)) => break,
                Some(Ok(Message::Text(text))) => {
                    panic!("the hub sent more after refusing: {text}")
                }
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the hub closes the socket after refusing");
    refused
}

/// The HTTP status of a refused WebSocket handshake (panics if it was accepted).
pub fn handshake_status(result: Result<impl Sized, tungstenite::Error>) -> (u16, String) {
    match result {
        Err(tungstenite::Error::Http(response)) => {
            let status = response.status().as_u16();
            let body = response
                .body()
                .as_ref()
                .map(|body| String::from_utf8_lossy(body).into_owned())
                .unwrap_or_default();
            (status, body)
        }
        Err(other) => panic!("expected an HTTP refusal, got {other}"),
        Ok(_) => panic!("the WebSocket was accepted"),
    }
}

/// A JSON-RPC `initialize` request body (protocol 2025-11-25).
pub fn initialize_body() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "tabwire-e2e-raw", "version": "0.1.0"}
        }
    })
}

/// Headers and body of a stateless (protocol 2026-07-28) `tools/call`: no session, the protocol
/// version in the `MCP-Protocol-Version` header and in `_meta`, the client's capabilities there
/// too (asking for the result's envelope), and the standard `Mcp-Method` / `Mcp-Name` headers.
pub fn stateless_call(
    id: u64,
    tool: &str,
    arguments: Value,
) -> (Vec<(&'static str, String)>, Value) {
    let headers = vec![
        ("MCP-Protocol-Version", "2026-07-28".to_owned()),
        ("Mcp-Method", "tools/call".to_owned()),
        ("Mcp-Name", tool.to_owned()),
    ];
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {
                    "experimental": {"tabwire/envelope": {}}
                },
                "io.modelcontextprotocol/clientInfo": {"name": "tabwire-e2e-raw", "version": "0.1.0"}
            }
        }
    });
    (headers, body)
}
