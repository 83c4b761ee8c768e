//! MCP session affinity through the real `/mcp` gate of a clustered hub: the session ID a
//! client sees names the replica, and a session of another replica is gone here.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::Cluster;
use super::nats_test_server::NatsServer;
use crate::accounts::{Accounts, Limits};
use crate::auth::{self, Authenticator, KeySource, Role};
use crate::hosted::PublicOrigin;
use crate::state::{FileUrls, HubState};

#[test]
fn session_ids_carry_their_replica() {
    use crate::cluster::{local_session, tag_session};
    let tagged = tag_session("n1", "6f1c-uuid");
    assert_eq!(tagged, "n1.6f1c-uuid");
    assert_eq!(local_session("n1", &tagged), Some("6f1c-uuid"));
    for other in ["n2.6f1c-uuid", "n1x.6f1c", "6f1c-uuid", "n1", ""] {
        assert_eq!(local_session("n1", other), None, "{other}");
    }
}

const HOST: &str = "hub.example:8443";

fn post(token: &str, session: Option<&str>, body: serde_json::Value) -> Request<Body> {
    let mut request = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("host", HOST)
        .header("authorization", format!("Bearer {token}"));
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-06-18");
    }
    request.body(Body::from(body.to_string())).unwrap()
}

#[tokio::test]
async fn session_ids_name_their_replica_and_another_replica_s_are_gone() {
    let nats = NatsServer::start();
    let cluster = Cluster::connect(&nats.url, "n1").await.unwrap();
    let dir = std::env::temp_dir().join(format!(
        "tabwire-affinity-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let token = auth::issue(
        &dir,
        "alice",
        Role::Agent,
        std::time::Duration::from_secs(600),
        "",
    )
    .unwrap()
    .0;
    let auth = Arc::new(Authenticator::load(&dir, &KeySource::Secret).unwrap());
    let public = PublicOrigin::parse(&format!("https://{HOST}")).unwrap();
    let state = Arc::new(HubState {
        pairings: None,
        accounts: Accounts::hosted(Limits::default()).with_cluster(cluster.clone()),
        browser_url: public.browser_url(),
        auth: Some(auth),
        file_urls: FileUrls::Refused,
        uploads: Default::default(),
        audit: None,
        lease_idle: crate::leases::DEFAULT_LEASE_IDLE,
        policies: Arc::new(crate::policy::Policies::allow_all()),
        layout: Default::default(),
        cluster: Some(cluster),
    });
    let router = crate::app(state, Some(public), CancellationToken::new());
    let send = |request| router.clone().oneshot(request);
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}},
    });
    let created = send(post(&token, None, initialize)).await.unwrap();
    assert_eq!(created.status(), StatusCode::OK);
    let tagged = created.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let rmcp_id = tagged
        .strip_prefix("n1.")
        .expect("the ID names replica n1")
        .to_owned();
    drop(created);
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = send(post(&token, Some(&tagged), initialized.clone()))
        .await
        .unwrap();
    assert!(answer.status().is_success(), "{:?}", answer.status());
    // Another replica's session, or rmcp's bare ID, is not a session of this replica.
    for other in [format!("n2.{rmcp_id}"), rmcp_id.clone()] {
        let answer = send(post(&token, Some(&other), initialized.clone()))
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::NOT_FOUND, "{other}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
