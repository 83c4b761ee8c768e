//! Hosted mode's HTTP side: the public origin, the Host/Origin checks, and the gate in front of
//! `/mcp` (docs/hosted.md).
//!
//! Order of checks on `/mcp`: Host (and Origin) → bearer token → role → session ownership →
//! the account's in-flight limit → rmcp. Everything the handler needs to know about the caller
//! travels as the verified [`Principal`] in the request's extensions, which rmcp hands to the
//! tool call with the request's `Parts`.
//!
//! A token is also checked after it was let in, every second, for as long as what it opened
//! lives: a response body (an SSE stream above all) ends, and an MCP session it created is
//! closed, once the token is revoked or expires — as `/browser` drops a browser's connection.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;

use crate::accounts::Limits;
use crate::auth::{Authenticator, Principal, Role};
use crate::state::HubState;

/// The header rmcp's sessions travel in.
const SESSION_HEADER: &str = "mcp-session-id";
/// How often a token is checked again while a stream or session it opened lives (the
/// revocation list itself is re-read at most this often).
const TOKEN_RECHECK: Duration = Duration::from_secs(1);

/// Where the hub is reached from outside: `https://host[:port][/prefix]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicOrigin {
    secure: bool,
    host: String,
    port: Option<u16>,
    prefix: String,
}

/// Why a `--public-origin` is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--public-origin {text:?}: {why}")]
pub struct InvalidOrigin {
    /// What was given.
    pub text: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl PublicOrigin {
    /// Parses `--public-origin`.
    pub fn parse(text: &str) -> Result<PublicOrigin, InvalidOrigin> {
        let bad = |why: &'static str| InvalidOrigin {
            text: text.to_owned(),
            why,
        };
        let (secure, rest) = if let Some(rest) = text.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = text.strip_prefix("http://") {
            (false, rest)
        } else {
            return Err(bad(
                "must start with https:// (or http:// behind a local proxy)",
            ));
        };
        let (host, port, path) = tabwire_protocol::local::split_authority(rest).map_err(bad)?;
        let default = if secure { 443 } else { 80 };
        let port = port.filter(|&p| p != default);
        let prefix = path.trim_end_matches('/').to_owned();
        if prefix.contains("//") || prefix.contains("/..") || prefix.contains("/./") {
            return Err(bad("the path prefix is not a plain path"));
        }
        Ok(PublicOrigin {
            secure,
            host: host.to_ascii_lowercase(),
            port,
            prefix,
        })
    }

    /// `https://host[:port]`, as a browser sends it in `Origin`.
    pub fn origin(&self) -> String {
        format!(
            "{}://{}",
            if self.secure { "https" } else { "http" },
            self.authority()
        )
    }

    /// `host[:port]` (the port only when it is not the scheme's default).
    fn authority(&self) -> String {
        match self.port {
            Some(port) => format!("{}:{port}", self.host),
            None => self.host.clone(),
        }
    }

    /// Whether what is sent to it is encrypted on the way: `https`, or a loopback host
    /// (`localhost`, `127.0.0.0/8`, `[::1]`) whose traffic never leaves the machine.
    pub fn private_in_transit(&self) -> bool {
        self.secure || tabwire_protocol::local::is_loopback_host(&self.host)
    }

    /// The path prefix, empty or `/something` without a trailing slash.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The URL an extension should be given.
    pub fn browser_url(&self) -> String {
        self.ws_url("browser")
    }

    /// The URL a device backend should be given.
    pub fn device_url(&self) -> String {
        self.ws_url("device")
    }

    fn ws_url(&self, endpoint: &str) -> String {
        format!(
            "{}://{}{}/{endpoint}",
            if self.secure { "wss" } else { "ws" },
            self.authority(),
            self.prefix
        )
    }

    /// Whether a `Host` header names this origin (the default port may be spelled out).
    pub fn host_matches(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        if host == self.authority() {
            return true;
        }
        let default = if self.secure { 443 } else { 80 };
        self.port.is_none() && host == format!("{}:{default}", self.host)
    }
}

impl std::fmt::Display for PublicOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.origin(), self.prefix)
    }
}

/// A JSON error answer.
pub fn refuse(status: StatusCode, error: &str, message: Option<&str>) -> Response {
    let mut body = json!({ "error": error });
    if let Some(message) = message {
        body["message"] = json!(message);
    }
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    if status == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    if status == StatusCode::TOO_MANY_REQUESTS {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

/// The one answer for every refused token: it says nothing about why.
pub fn unauthorized() -> Response {
    refuse(StatusCode::UNAUTHORIZED, "unauthorized", None)
}

/// Middleware on everything but `/healthz`: the `Host` must be the public origin's (DNS
/// rebinding protection), and on `/mcp` an `Origin`, when present, must be the public origin.
pub async fn check_host(
    State(public): State<Arc<PublicOrigin>>,
    request: Request,
    next: Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()))
        .unwrap_or("");
    if !public.host_matches(host) {
        tracing::warn!(host, path = %request.uri().path(), "refused a request for another host");
        return refuse(StatusCode::FORBIDDEN, "host_not_allowed", None);
    }
    if request.uri().path().ends_with("/mcp")
        && let Some(origin) = request.headers().get(header::ORIGIN)
        && origin.to_str().ok() != Some(public.origin().as_str())
    {
        tracing::warn!(?origin, "refused /mcp from another origin");
        return refuse(StatusCode::FORBIDDEN, "origin_not_allowed", None);
    }
    next.run(request).await
}

/// The bearer token of an `Authorization` header.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// What the `/mcp` gate keeps.
pub struct McpGate {
    hub: Arc<HubState>,
    auth: Arc<Authenticator>,
    limits: Limits,
    /// rmcp's sessions, to see which are still alive and to close one over the limit.
    pub sessions: Arc<LocalSessionManager>,
    /// Which account created each MCP session.
    owners: Mutex<HashMap<Arc<str>, String>>,
    /// Makes counting an account's sessions and recording a new one a single step.
    binding: tokio::sync::Mutex<()>,
}

impl McpGate {
    /// A gate for `hub`'s `/mcp`.
    pub fn new(hub: Arc<HubState>, auth: Arc<Authenticator>, limits: Limits) -> Self {
        McpGate {
            hub,
            auth,
            limits,
            sessions: Arc::new(LocalSessionManager::default()),
            owners: Mutex::new(HashMap::new()),
            binding: tokio::sync::Mutex::new(()),
        }
    }

    fn owner(&self, session: &str) -> Option<String> {
        self.owners.lock().unwrap().get(session).cloned()
    }

    /// Records a new session for `principal`'s account and closes it when that token stops
    /// being valid; false when the account is at its session limit (counting only sessions rmcp
    /// still holds).
    async fn bind(self: &Arc<Self>, session: Arc<str>, principal: &Principal) -> bool {
        let account = principal.account.as_str();
        let _one_at_a_time = self.binding.lock().await;
        let theirs: Vec<Arc<str>> = self
            .owners
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, owner)| owner.as_str() == account)
            .map(|(id, _)| id.clone())
            .collect();
        let mut alive = 0;
        for id in theirs {
            if self.sessions.has_session(&id).await.unwrap_or(false) {
                alive += 1;
            } else {
                self.owners.lock().unwrap().remove(&id);
            }
        }
        if alive >= self.limits.sessions {
            return false;
        }
        self.owners
            .lock()
            .unwrap()
            .insert(session.clone(), account.to_owned());
        tokio::spawn(close_with_token(
            Arc::downgrade(self),
            session,
            principal.clone(),
        ));
        true
    }
}

/// Resolves when `principal`'s token is no longer valid, with why; checked every second.
async fn token_ended(auth: Arc<Authenticator>, principal: Principal) -> &'static str {
    let mut tick = tokio::time::interval(TOKEN_RECHECK);
    loop {
        tick.tick().await;
        if let Err(why) = auth.still_valid(&principal) {
            return why;
        }
    }
}

/// Closes `session` once the token that created it is revoked or expires: other tokens of the
/// account may be using it, but it is the revoked token's. Ends when the session does. (Its
/// entry in the owners is dropped at the account's next new session, as for any ended one.)
async fn close_with_token(gate: Weak<McpGate>, session: Arc<str>, principal: Principal) {
    let mut tick = tokio::time::interval(TOKEN_RECHECK);
    loop {
        tick.tick().await;
        let Some(gate) = gate.upgrade() else { return };
        if !gate.sessions.has_session(&session).await.unwrap_or(false) {
            return;
        }
        if let Err(why) = gate.auth.still_valid(&principal) {
            let _ = gate.sessions.close_session(&session).await;
            tracing::info!(
                account = principal.account,
                jti = principal.jti,
                "closed an MCP session: {why}"
            );
            return;
        }
    }
}

/// `response` with a body that ends when `principal`'s token is revoked or expires (an SSE
/// stream can otherwise outlive its token by hours), holding `held` until the body ends.
fn until_token_ends(
    response: Response,
    auth: Arc<Authenticator>,
    principal: Principal,
    held: Option<tokio::sync::OwnedSemaphorePermit>,
) -> Response {
    let (parts, body) = response.into_parts();
    let ended = async move {
        let why = token_ended(auth, principal.clone()).await;
        tracing::info!(
            account = principal.account,
            jti = principal.jti,
            "ended an /mcp response: {why}"
        );
    };
    let body = Body::from_stream(body.into_data_stream().take_until(ended).map(move |chunk| {
        let _held = &held;
        chunk
    }));
    Response::from_parts(parts, body)
}

/// Middleware in front of rmcp on `/mcp`.
pub async fn mcp_gate(
    State(gate): State<Arc<McpGate>>,
    mut request: Request,
    next: Next,
) -> Response {
    let principal: Principal = match bearer(request.headers()).map(|t| gate.auth.verify(t)) {
        None => {
            tracing::info!("refused /mcp: no bearer token");
            return unauthorized();
        }
        Some(Err(reason)) => {
            tracing::info!(%reason, "refused /mcp: bad token");
            return unauthorized();
        }
        Some(Ok(principal)) => principal,
    };
    if principal.role != Role::Agent {
        tracing::info!(
            account = principal.account,
            jti = principal.jti,
            "refused /mcp: not an agent token"
        );
        return refuse(
            StatusCode::FORBIDDEN,
            "forbidden",
            Some("this is a browser or device token; /mcp needs an agent token"),
        );
    }
    // In a cluster, clients see `<node>.<rmcp id>` (docs/cluster.md, MCP affinity): rmcp
    // gets its own ID back, and a session of another replica is gone here.
    if let Some(cluster) = &gate.hub.cluster
        && let Some(tagged) = request.headers().get(SESSION_HEADER)
    {
        let local = tagged
            .to_str()
            .ok()
            .and_then(|id| crate::cluster::local_session(cluster.node(), id))
            .and_then(|id| axum::http::HeaderValue::from_str(id).ok());
        let Some(local) = local else {
            return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
        };
        request.headers_mut().insert(SESSION_HEADER, local);
    }
    let session: Option<Arc<str>> = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(Arc::from);
    if let Some(id) = &session
        && gate.owner(id).as_deref() != Some(principal.account.as_str())
    {
        // Exactly what rmcp answers for a session it does not know.
        return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
    }
    let account = gate.hub.accounts.get(&principal.account);
    // A GET is a session's SSE stream, long-lived by design; rmcp keeps a few at most per
    // session, so they are bounded by the session limit and do not take request permits (else
    // a client's idle streams would starve its own tool calls).
    if request.method() == axum::http::Method::GET {
        request.extensions_mut().insert(principal.clone());
        let mut response = next.run(request).await;
        tag_session(&gate, &mut response);
        return until_token_ends(response, gate.auth.clone(), principal, None);
    }
    let Ok(permit) = account.requests.clone().try_acquire_owned() else {
        tracing::warn!(
            account = account.name,
            "refused /mcp: requests in flight at the limit"
        );
        return refuse(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            Some(&format!(
                "this account has {} MCP requests open, the most the hub allows",
                gate.limits.requests
            )),
        );
    };
    request.extensions_mut().insert(principal.clone());
    let response = next.run(request).await;
    if session.is_none()
        && let Some(created) = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(Arc::<str>::from)
        && !gate.bind(created.clone(), &principal).await
    {
        let _ = gate.sessions.close_session(&created).await;
        tracing::warn!(
            account = principal.account,
            "refused a new MCP session: at the limit"
        );
        return refuse(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_sessions",
            Some(&format!(
                "this account has {} MCP sessions open, the most the hub allows; close one \
                 (HTTP DELETE) or wait for an idle one to expire",
                gate.limits.sessions
            )),
        );
    }
    let mut response = response;
    tag_session(&gate, &mut response);
    // The permit is held until the response body (an SSE stream, perhaps) is finished.
    until_token_ends(response, gate.auth.clone(), principal, Some(permit))
}

/// In a cluster, names this replica in the session ID rmcp gives out.
fn tag_session(gate: &McpGate, response: &mut Response) {
    let Some(cluster) = &gate.hub.cluster else {
        return;
    };
    let tagged = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|id| id.to_str().ok())
        .map(|id| crate::cluster::tag_session(cluster.node(), id))
        .and_then(|id| axum::http::HeaderValue::from_str(&id).ok());
    if let Some(tagged) = tagged {
        response.headers_mut().insert(SESSION_HEADER, tagged);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_origins_parse_with_their_defaults() {
        let origin = PublicOrigin::parse("https://Tabwire.Example.com/team/").unwrap();
        assert_eq!(origin.origin(), "https://tabwire.example.com");
        assert_eq!(origin.prefix(), "/team");
        assert_eq!(
            origin.browser_url(),
            "wss://tabwire.example.com/team/browser"
        );
        assert!(origin.host_matches("tabwire.example.com"));
        assert!(origin.host_matches("TABWIRE.example.com:443"));
        assert!(!origin.host_matches("tabwire.example.com:8443"));
        assert!(!origin.host_matches("evil.example"));
        assert!(!origin.host_matches(""));

        let local = PublicOrigin::parse("https://localhost:8443").unwrap();
        assert_eq!(local.origin(), "https://localhost:8443");
        assert_eq!(local.prefix(), "");
        assert!(local.host_matches("localhost:8443"));
        assert!(!local.host_matches("localhost"));
        assert!(!local.host_matches("127.0.0.1:8443"));

        let plain = PublicOrigin::parse("http://10.0.0.5:80").unwrap();
        assert_eq!(plain.browser_url(), "ws://10.0.0.5/browser");

        for bad in [
            "tabwire.example.com",
            "ftp://x",
            "https://",
            "https://x:port",
            "https://u:p@x",
            "https://x/?a",
            "https://x/a/../b",
            // Judged as one host, sent to another by WHATWG parsers.
            "http://192.0.2.2\\.localhost",
            "https://evil.example\\.hub.example.com",
        ] {
            assert!(PublicOrigin::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bearer_tokens_are_read_from_the_authorization_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers), None);
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer abc.def"),
        );
        assert_eq!(bearer(&headers), Some("abc.def"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&headers), None);
    }
}
