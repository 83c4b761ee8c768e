//! Hosted mode's gate, driven in-process through the real router (no sockets): session
//! ownership, the account limits, Host/Origin checks and the prefix, and what a revoked token
//! had opened. The end-to-end proof
//! through nginx with a real extension is tests/e2e/hosted.rs.

use std::sync::Arc;
use std::time::Duration;
use tabwire_protocol::Kind;

use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::accounts::Limits;
use crate::auth::{self, Authenticator, KeySource, Role};
use crate::hosted::PublicOrigin;
use crate::peer::Browser;
use crate::state::{FileUrls, HubState};
use crate::{accounts, app};

struct Setup {
    router: axum::Router,
    state: Arc<HubState>,
    dir: std::path::PathBuf,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Setup {
    fn new(origin: &str, limits: Limits) -> Setup {
        Setup::with_audit(origin, limits, false)
    }

    /// A setup whose hub keeps an audit log, in `audit/` of its directory when `audit`.
    fn with_audit(origin: &str, limits: Limits, audit: bool) -> Setup {
        let dir = std::env::temp_dir().join(format!(
            "tabwire-hosted-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        auth::issue(
            &dir,
            "setup",
            Role::Agent,
            std::time::Duration::from_secs(60),
            "",
        )
        .unwrap();
        let auth = Arc::new(Authenticator::load(&dir, &KeySource::Secret).unwrap());
        let public = PublicOrigin::parse(origin).unwrap();
        let state = Arc::new(HubState {
            pairings: None,
            accounts: accounts::Accounts::hosted(limits),
            browser_url: public.browser_url(),
            auth: Some(auth),
            file_urls: FileUrls::Refused,
            uploads: crate::uploads::Uploads::hosted(25, 25),
            audit: audit.then(|| crate::audit::AuditLog::open(&dir.join("audit")).unwrap()),
            lease_idle: crate::leases::DEFAULT_LEASE_IDLE,
            policies: Arc::new(crate::policy::Policies::allow_all()),
            layout: Default::default(),
            cluster: None,
        });
        Setup {
            router: app(state.clone(), Some(public), CancellationToken::new()),
            state,
            dir,
        }
    }

    fn token(&self, account: &str, role: Role) -> String {
        self.token_and_id(account, role).0
    }

    /// A token and its jti (to revoke it by).
    fn token_and_id(&self, account: &str, role: Role) -> (String, String) {
        let (token, record, _) = auth::issue(
            &self.dir,
            account,
            role,
            std::time::Duration::from_secs(600),
            "",
        )
        .unwrap();
        (token, record.jti)
    }

    async fn send(&self, request: Request<Body>) -> Response<Body> {
        self.router.clone().oneshot(request).await.unwrap()
    }

    /// A browser `b1` of `account`, registered straight in its registry, that never answers:
    /// what the hub sends it waits in the returned inbox.
    fn silent_browser(
        &self,
        account: &str,
    ) -> (
        Arc<crate::registry::Connection>,
        tokio::sync::mpsc::UnboundedReceiver<tabwire_protocol::HubMessage>,
    ) {
        self.state
            .accounts
            .get(account)
            .registry::<Browser>()
            .connect(
                tabwire_protocol::Hello {
                    browser_id: "b1".into(),
                    browser_name: "Work".into(),
                    extension_version: "0.1.0".into(),
                    protocol_version: tabwire_protocol::PROTOCOL_VERSION,
                    chrome_version: "156".into(),
                    proof: None,
                    managed_code: false,
                },
                crate::registry::Owner::fixed("test"),
            )
            .unwrap()
    }

    /// A session that has finished its handshake (initialize, then `initialized`).
    async fn ready_session(&self, token: &str) -> String {
        let created = self.send(initialize(HOST, "/mcp", token)).await;
        let session = session_of(&created);
        drop(body_text(created).await);
        let initialized =
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let answer = self.send(session_post(token, &session, initialized)).await;
        assert!(answer.status().is_success(), "{:?}", answer.status());
        session
    }
}

/// An `/mcp` request as an MCP client sends it: POST with a JSON body, or GET (the session's
/// SSE stream) without one; `session` adds the session headers.
fn mcp(
    host: &str,
    path: &str,
    token: &str,
    session: Option<&str>,
    body: Option<serde_json::Value>,
) -> Request<Body> {
    let mut request = match body {
        Some(_) => Request::post(path)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream"),
        None => Request::get(path).header("accept", "text/event-stream"),
    }
    .header("host", host)
    .header("authorization", format!("Bearer {token}"));
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-06-18");
    }
    let body = body.map_or_else(Body::empty, |body| Body::from(body.to_string()));
    request.body(body).unwrap()
}

fn initialize_body(client_name: &str) -> serde_json::Value {
    serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": client_name, "version": "1"}},
    })
}

fn initialize(host: &str, path: &str, token: &str) -> Request<Body> {
    mcp(host, path, token, None, Some(initialize_body("test")))
}

fn list_tools(host: &str, token: &str, session: &str) -> Request<Body> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    mcp(host, "/mcp", token, Some(session), Some(body))
}

fn session_post(token: &str, session: &str, body: serde_json::Value) -> Request<Body> {
    mcp(HOST, "/mcp", token, Some(session), Some(body))
}

fn session_of(response: &Response<Body>) -> String {
    response
        .headers()
        .get("mcp-session-id")
        .expect("a session was created")
        .to_str()
        .unwrap()
        .to_owned()
}

async fn body_text(response: Response<Body>) -> String {
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    String::from_utf8_lossy(&bytes).into_owned()
}

const HOST: &str = "hub.example:8443";

#[tokio::test]
async fn a_session_is_honoured_only_for_the_account_that_created_it() {
    let setup = Setup::new("https://hub.example:8443", Limits::default());
    let alice = setup.token("alice", Role::Agent);
    let bob = setup.token("bob", Role::Agent);
    let created = setup.send(initialize(HOST, "/mcp", &alice)).await;
    assert_eq!(created.status(), StatusCode::OK);
    let session = session_of(&created);
    drop(created);

    let theirs = setup.send(list_tools(HOST, &bob, &session)).await;
    assert_eq!(theirs.status(), StatusCode::NOT_FOUND);
    let unknown = setup.send(list_tools(HOST, &bob, "no-such-session")).await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        body_text(theirs).await,
        body_text(unknown).await,
        "another account's session looks exactly like an unknown one"
    );

    let mine = setup.send(list_tools(HOST, &alice, &session)).await;
    assert_eq!(mine.status(), StatusCode::OK);
    assert!(body_text(mine).await.contains("list_browsers"));
}

#[tokio::test]
async fn requests_in_flight_are_limited_per_account() {
    let limits = Limits {
        requests: 1,
        ..Limits::default()
    };
    let setup = Setup::new("https://hub.example:8443", limits);
    let alice = setup.token("alice", Role::Agent);
    let bob = setup.token("bob", Role::Agent);
    // An SSE response not yet read holds the account's only permit.
    let open = setup.send(initialize(HOST, "/mcp", &alice)).await;
    assert_eq!(open.status(), StatusCode::OK);
    let refused = setup.send(initialize(HOST, "/mcp", &alice)).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.headers()["retry-after"], "1");
    assert!(body_text(refused).await.contains("too_many_requests"));
    // Another account has its own permits.
    let other = setup.send(initialize(HOST, "/mcp", &bob)).await;
    assert_eq!(other.status(), StatusCode::OK);
    // Finishing the stream gives the permit back.
    drop(body_text(open).await);
    let again = setup.send(initialize(HOST, "/mcp", &alice)).await;
    assert_eq!(again.status(), StatusCode::OK);
}

#[tokio::test]
async fn sessions_are_limited_per_account() {
    let limits = Limits {
        sessions: 1,
        ..Limits::default()
    };
    let setup = Setup::new("https://hub.example:8443", limits);
    let alice = setup.token("alice", Role::Agent);
    let first = setup.send(initialize(HOST, "/mcp", &alice)).await;
    assert_eq!(first.status(), StatusCode::OK);
    let session = session_of(&first);
    drop(body_text(first).await);
    let second = setup.send(initialize(HOST, "/mcp", &alice)).await;
    assert_eq!(second.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(body_text(second).await.contains("too_many_sessions"));
    // The first session still works.
    let listed = setup.send(list_tools(HOST, &alice, &session)).await;
    assert_eq!(listed.status(), StatusCode::OK);
}

#[tokio::test]
async fn host_origin_and_prefix_are_checked() {
    let setup = Setup::new("https://hub.example:8443/team", Limits::default());
    let alice = setup.token("alice", Role::Agent);
    // Both the prefixed path (a proxy that keeps the prefix) and the bare one (a proxy that
    // strips it) reach /mcp.
    for path in ["/team/mcp", "/mcp"] {
        let response = setup.send(initialize(HOST, path, &alice)).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
    }
    let wrong_host = setup.send(initialize("evil.example", "/mcp", &alice)).await;
    assert_eq!(wrong_host.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        body_text(wrong_host).await,
        r#"{"error":"host_not_allowed"}"#
    );
    let mut cross_origin = initialize(HOST, "/mcp", &alice);
    cross_origin
        .headers_mut()
        .insert("origin", "https://evil.example".parse().unwrap());
    let refused = setup.send(cross_origin).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        body_text(refused).await,
        r#"{"error":"origin_not_allowed"}"#
    );
    let mut same_origin = initialize(HOST, "/mcp", &alice);
    same_origin
        .headers_mut()
        .insert("origin", "https://hub.example:8443".parse().unwrap());
    assert_eq!(setup.send(same_origin).await.status(), StatusCode::OK);
    // /healthz answers whatever the Host.
    let health = Request::get("/healthz")
        .header("host", "10.0.0.1:17841")
        .body(Body::empty())
        .unwrap();
    assert_eq!(setup.send(health).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_device_token_is_refused_on_mcp() {
    let setup = Setup::new("https://hub.example:8443", Limits::default());
    let device = setup.token("alice", Role::Peer(Kind::Device));
    let refused = setup.send(initialize(HOST, "/mcp", &device)).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert!(body_text(refused).await.contains("agent token"));
}

#[tokio::test]
async fn browser_requests_without_an_upgrade_get_plain_statuses() {
    let setup = Setup::new("https://hub.example:8443", Limits::default());
    let agent = setup.token("alice", Role::Agent);
    let get = |token: Option<&str>| {
        let mut request = Request::get("/browser")
            .header("host", HOST)
            .header("origin", "chrome-extension://abc");
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        request.body(Body::empty()).unwrap()
    };
    let missing = setup.send(get(None)).await;
    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(body_text(missing).await, r#"{"error":"unauthorized"}"#);
    assert_eq!(
        setup.send(get(Some(&agent))).await.status(),
        StatusCode::FORBIDDEN
    );
    // A web page's origin is refused before any token is looked at.
    let page = Request::get("/browser")
        .header("host", HOST)
        .header("origin", "https://evil.example")
        .body(Body::empty())
        .unwrap();
    assert_eq!(setup.send(page).await.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn an_oversized_body_is_refused_with_413() {
    let limits = Limits {
        body_bytes: 2048,
        ..Limits::default()
    };
    let setup = Setup::new("https://hub.example:8443", limits);
    let alice = setup.token("alice", Role::Agent);
    let request = mcp(
        HOST,
        "/mcp",
        &alice,
        None,
        Some(initialize_body(&"x".repeat(4096))),
    );
    assert_eq!(
        setup.send(request).await.status(),
        StatusCode::PAYLOAD_TOO_LARGE
    );
    // A body under the limit still works.
    assert_eq!(
        setup.send(initialize(HOST, "/mcp", &alice)).await.status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn an_open_sse_stream_does_not_take_a_request_permit() {
    let limits = Limits {
        requests: 1,
        ..Limits::default()
    };
    let setup = Setup::new("https://hub.example:8443", limits);
    let alice = setup.token("alice", Role::Agent);
    let session = setup.ready_session(&alice).await;
    let stream = mcp(HOST, "/mcp", &alice, Some(&session), None);
    let open = setup.send(stream).await;
    assert_eq!(open.status(), StatusCode::OK);
    // While that stream stays open, the account's one request permit is free.
    let listed = setup.send(list_tools(HOST, &alice, &session)).await;
    assert_eq!(listed.status(), StatusCode::OK);
    drop(open);
}

#[tokio::test]
async fn a_tool_call_keeps_its_permit_when_its_client_goes_away() {
    let limits = Limits {
        requests: 1,
        ..Limits::default()
    };
    let setup = Setup::new("https://hub.example:8443", limits);
    let alice = setup.token("alice", Role::Agent);
    let session = setup.ready_session(&alice).await;
    // A browser of alice's that never answers.
    let (_connection, mut inbox) = setup.silent_browser("alice");
    let call = |id: u64| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": {"name": "list_tabs", "arguments": {}}})
    };
    let first = setup.send(session_post(&alice, &session, call(10))).await;
    assert_eq!(first.status(), StatusCode::OK);
    // The call reached the browser: it is running. Its client now goes away.
    loop {
        match inbox.recv().await.expect("the hub sends the call on") {
            tabwire_protocol::HubMessage::Request(_) => break,
            _ => continue,
        }
    }
    drop(first);
    // The HTTP permit is free again, but the running call still holds the account's only
    // tool-call permit.
    let second = setup.send(session_post(&alice, &session, call(11))).await;
    assert_eq!(second.status(), StatusCode::OK);
    let text = body_text(second).await;
    assert!(text.contains("LIMIT_EXCEEDED"), "{text}");
}

/// The next request the silent browser is sent, and its ID.
async fn next_request_id(
    inbox: &mut tokio::sync::mpsc::UnboundedReceiver<tabwire_protocol::HubMessage>,
) -> u64 {
    loop {
        match inbox.recv().await.expect("the hub sends the call on") {
            tabwire_protocol::HubMessage::Request(request) => return request.id,
            _ => continue,
        }
    }
}

/// The next message the silent browser is sent, other than a policy or a heartbeat.
async fn next_word(
    inbox: &mut tokio::sync::mpsc::UnboundedReceiver<tabwire_protocol::HubMessage>,
) -> tabwire_protocol::HubMessage {
    let wait = async {
        loop {
            match inbox.recv().await.expect("the browser's inbox is open") {
                tabwire_protocol::HubMessage::Policy(_)
                | tabwire_protocol::HubMessage::Heartbeat { .. } => continue,
                other => return other,
            }
        }
    };
    // Bounds a broken test, not a timing assertion: the cancel follows at once.
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("the hub told the browser")
}

/// Over HTTP, a session's `notifications/cancelled` and a stateless client that hangs up both
/// cancel the call at the browser (issue 23 §4).
#[tokio::test]
async fn a_cancelled_or_abandoned_http_call_is_cancelled_at_the_browser() {
    use tabwire_protocol::HubMessage;
    let setup = Setup::new("https://hub.example:8443", Limits::default());
    let alice = setup.token("alice", Role::Agent);
    let session = setup.ready_session(&alice).await;
    let (_connection, mut inbox) = setup.silent_browser("alice");
    let wait = serde_json::json!({"text": "never", "timeoutMs": 60_000});

    let call = serde_json::json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
                                  "params": {"name": "wait_for", "arguments": wait}});
    let running = setup.send(session_post(&alice, &session, call)).await;
    assert_eq!(running.status(), StatusCode::OK);
    let id = next_request_id(&mut inbox).await;
    let cancelled = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                       "params": {"requestId": 10, "reason": "test"}});
    let told = setup.send(session_post(&alice, &session, cancelled)).await;
    assert!(told.status().is_success(), "{:?}", told.status());
    assert_eq!(next_word(&mut inbox).await, HubMessage::Cancel { id });
    drop(running);

    // A stateless (2026-07-28) call whose client hangs up before any answer.
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call",
        "params": {"name": "wait_for", "arguments": wait, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}}});
    let request = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("host", HOST)
        .header("authorization", format!("Bearer {alice}"))
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "wait_for")
        .body(Body::from(body.to_string()))
        .unwrap();
    let router = setup.router.clone();
    let client = tokio::spawn(async move { router.oneshot(request).await });
    let id = next_request_id(&mut inbox).await;
    client.abort();
    assert_eq!(next_word(&mut inbox).await, HubMessage::Cancel { id });
}

/// Whether `response`'s body ends within `limit` (reading whatever comes before).
async fn ends_within(response: Response<Body>, limit: Duration) -> bool {
    let mut body = response.into_body().into_data_stream();
    tokio::time::timeout(limit, async {
        while let Some(chunk) = body.next().await {
            chunk.expect("the body ends cleanly");
        }
    })
    .await
    .is_ok()
}

#[tokio::test]
async fn a_revoked_token_loses_its_streams_and_sessions_within_two_seconds() {
    let setup = Setup::new("https://hub.example:8443", Limits::default());
    let (revoked, jti) = setup.token_and_id("alice", Role::Agent);
    let kept = setup.token("alice", Role::Agent);
    let doomed_session = setup.ready_session(&revoked).await;
    let kept_session = setup.ready_session(&kept).await;
    // A browser of alice's that never answers, so a tool call's answer stays open.
    let (_connection, _inbox) = setup.silent_browser("alice");
    // The token to be revoked has its own session's SSE stream open, and a tool call's answer
    // (a POST's SSE stream, 10 s of deadline) in the other token's session, which outlives
    // it; the other token has its session's stream open.
    let doomed_stream = setup
        .send(mcp(HOST, "/mcp", &revoked, Some(&doomed_session), None))
        .await;
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                  "params": {"name": "list_tabs", "arguments": {}}});
    let doomed_call = setup
        .send(session_post(&revoked, &kept_session, call))
        .await;
    let kept_stream = setup
        .send(mcp(HOST, "/mcp", &kept, Some(&kept_session), None))
        .await;
    for response in [&doomed_stream, &doomed_call, &kept_stream] {
        assert_eq!(response.status(), StatusCode::OK);
    }

    auth::revoke(&setup.dir, std::slice::from_ref(&jti)).unwrap();
    let revoked_at = tokio::time::Instant::now();
    let limit = Duration::from_millis(2500);
    assert!(
        ends_within(doomed_stream, limit).await,
        "the revoked token's SSE stream is still open"
    );
    assert!(
        ends_within(doomed_call, limit).await,
        "the revoked token's tool call answer is still open"
    );
    // The session it created is gone from rmcp itself: the same account's other token, which
    // the gate lets through to it, gets rmcp's answer for an unknown session.
    loop {
        let answer = setup.send(list_tools(HOST, &kept, &doomed_session)).await;
        if answer.status() == StatusCode::NOT_FOUND {
            assert_eq!(body_text(answer).await, "Not Found: Session not found");
            break;
        }
        assert!(
            revoked_at.elapsed() < limit,
            "the revoked token's session still answers"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The other token's stream and session live on.
    assert!(
        !ends_within(kept_stream, Duration::from_millis(1500)).await,
        "a valid token's stream ended"
    );
    let listed = setup.send(list_tools(HOST, &kept, &kept_session)).await;
    assert_eq!(listed.status(), StatusCode::OK);
}

/// Hosted mode's records name the account, the token's jti, the MCP session and the client.
#[tokio::test]
async fn a_hosted_call_is_audited_with_its_token_and_session() {
    let setup = Setup::with_audit("https://hub.example:8443", Limits::default(), true);
    let (alice, jti) = setup.token_and_id("alice", Role::Agent);
    let session = setup.ready_session(&alice).await;
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                  "params": {"name": "list_browsers", "arguments": {}}});
    let answer = setup.send(session_post(&alice, &session, call)).await;
    assert_eq!(answer.status(), StatusCode::OK);
    drop(body_text(answer).await);
    let file = crate::audit::file_of(&setup.dir.join("audit"), "alice");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let line = loop {
        if let Ok(text) = std::fs::read_to_string(&file)
            && let Some(line) = text.lines().next()
        {
            break line.to_owned();
        }
        assert!(std::time::Instant::now() < deadline, "no record");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let record: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(record["account"], "alice");
    assert_eq!(record["tokenId"], jti.as_str());
    assert_eq!(record["session"], session.as_str());
    assert_eq!(record["client"], "test");
    assert_eq!(record["tool"], "list_browsers");
    assert_eq!(record["outcome"], "ok");
}
