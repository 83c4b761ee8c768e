//! Replicas on a real nats-server (started here on loopback), with fake peers: each replica is
//! its own [`Accounts`] joined to its own [`Cluster`], as two hub processes would be.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tabwire_protocol::{
    ErrorCode, Hello, HubMessage, LeaseHolder, ListTabs, OpError, OpResult, Operation,
    PROTOCOL_VERSION, Request, TabInfo, TabList, Target,
};
use tokio_util::sync::CancellationToken;

use super::nats_test_server::NatsServer;
use super::wire::ClusterMessage;
use super::{Cluster, subjects};
use crate::accounts::{Account, Accounts, Limits};
use crate::peer::{Browser, Device};
use crate::registry::{Connection, Owner};

const ACCOUNT: &str = "acme";

struct Replica {
    cluster: Arc<Cluster>,
    accounts: Accounts,
}

impl Replica {
    async fn start(nats: &NatsServer, node: &str) -> Replica {
        let cluster = Cluster::connect(&nats.url, node).await.unwrap();
        Replica {
            accounts: Accounts::hosted(Limits::default()).with_cluster(cluster.clone()),
            cluster,
        }
    }

    fn account(&self) -> Arc<Account> {
        self.accounts.get(ACCOUNT)
    }
}

fn hello(id: &str) -> Hello {
    Hello {
        browser_id: id.into(),
        browser_name: format!("Browser {id}"),
        extension_version: "0.1.0".into(),
        protocol_version: PROTOCOL_VERSION,
        chrome_version: "156".into(),
        proof: None,
        managed_code: false,
    }
}

fn holder(session: &str) -> LeaseHolder {
    LeaseHolder {
        session: session.into(),
        client: format!("agent {session}"),
        idle_ms: 60_000,
    }
}

fn hover() -> Operation {
    tabwire_protocol::ActRequest {
        action: tabwire_protocol::Action::Hover {
            target: Target::Css("#go".into()),
        },
        observe: None,
    }
    .into()
}

fn tabs(title: &str) -> OpResult {
    TabList {
        tabs: vec![TabInfo {
            tab_id: 1,
            window_id: 1,
            active: true,
            url: "https://example.com/".into(),
            title: title.into(),
            status: "complete".into(),
            blocked: false,
        }],
    }
    .into()
}

/// What a fake peer saw.
#[derive(Default)]
struct Seen {
    requests: Vec<Request>,
    other: Vec<HubMessage>,
}

/// How a fake peer answers a request; `None` never answers.
type Answer = Arc<dyn Fn(&Request) -> Option<Result<OpResult, OpError>> + Send + Sync>;

/// A peer connected to `replica`, answering as `answer` says and logging every request.
fn peer(replica: &Replica, id: &str, answer: Answer) -> (Arc<Connection>, Arc<Mutex<Seen>>) {
    let (connection, mut outbox) = replica
        .account()
        .registry::<Browser>()
        .connect(hello(id), Owner::fixed(&format!("token:{id}")))
        .unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (log, conn) = (seen.clone(), connection.clone());
    tokio::spawn(async move {
        while let Some(message) = outbox.recv().await {
            match message {
                HubMessage::Request(request) => {
                    log.lock().unwrap().requests.push(request.clone());
                    if let Some(outcome) = answer(&request) {
                        conn.complete(request.id, outcome);
                    }
                }
                HubMessage::Cancel { id } => {
                    log.lock().unwrap().other.push(HubMessage::Cancel { id });
                    conn.complete(id, Err(OpError::cancelled(false)));
                }
                other => log.lock().unwrap().other.push(other),
            }
        }
    });
    (connection, seen)
}

fn answering(result: OpResult) -> Answer {
    Arc::new(move |_| Some(Ok(result.clone())))
}

/// Polls `ready` until it holds (the cluster's messages are asynchronous); gives up after 20 s.
async fn until(what: &str, ready: impl Fn() -> bool) {
    for _ in 0..400 {
        if ready() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never happened: {what}");
}

/// Waits until `replica` sees browser `id` held by another replica.
async fn sees_remote(replica: &Replica, id: &str) {
    let account = replica.account();
    until(&format!("{} sees {id}", replica.cluster.node()), || {
        account
            .registry::<Browser>()
            .get(id)
            .is_some_and(|info| info.connected)
    })
    .await;
}

async fn list_tabs(
    connection: &Connection,
    holder: Option<&LeaseHolder>,
) -> Result<OpResult, OpError> {
    connection
        .request(
            "list_tabs",
            None,
            holder,
            ListTabs {}.into(),
            Duration::from_secs(10),
        )
        .await
}

#[tokio::test]
async fn a_call_through_one_replica_reaches_the_peer_another_holds() {
    let nats = NatsServer::start();
    let (a, b) = (
        Replica::start(&nats, "n1").await,
        Replica::start(&nats, "n2").await,
    );
    let (_conn, seen) = peer(&a, "b1", answering(tabs("Home")));
    sees_remote(&b, "b1").await;
    let remote = b.account().registry::<Browser>().connection("b1").unwrap();
    assert!(remote.is_remote());
    assert_eq!(
        list_tabs(&remote, Some(&holder("s1"))).await.unwrap(),
        tabs("Home")
    );
    assert_eq!(remote.owner_node(), Some("n1"));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.requests.len(), 1);
    assert_eq!(
        seen.requests[0].viewer.as_deref(),
        Some("s1"),
        "the caller's session travels"
    );
    // The owner's own calls skip NATS.
    assert!(
        !a.account()
            .registry::<Browser>()
            .connection("b1")
            .unwrap()
            .is_remote()
    );
    // Another account sees nothing of it.
    assert_eq!(
        b.accounts
            .get("other")
            .registry::<Browser>()
            .connection("b1")
            .err()
            .unwrap()
            .code,
        ErrorCode::BrowserNotFound
    );
}

#[tokio::test]
async fn a_peer_connected_nowhere_is_disconnected_at_once() {
    let nats = NatsServer::start();
    let b = Replica::start(&nats, "n2").await;
    // Known to this replica (it was connected here), now gone everywhere.
    let (conn, _seen) = peer(&b, "b1", answering(tabs("x")));
    b.account().registry::<Browser>().disconnect(&conn);
    let remote = b.account().registry::<Browser>().connection("b1").unwrap();
    assert!(remote.is_remote());
    let error = remote
        .request(
            "click_element",
            None,
            None,
            hover(),
            Duration::from_secs(60),
        )
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::BrowserDisconnected);
    // NATS's "no responders", not the owner's silence: nothing was sent anywhere.
    assert!(
        error.message.contains("not connected to any replica"),
        "{error:?}"
    );
    assert!(!error.action_may_have_occurred, "{error:?}");
}

#[tokio::test]
async fn an_owner_that_dies_fails_its_calls_in_flight_as_outcome_unknown() {
    let nats = NatsServer::start();
    let (a, b) = (
        Replica::start(&nats, "n1").await,
        Replica::start(&nats, "n2").await,
    );
    let (_conn, seen) = peer(&a, "b1", Arc::new(|_| None));
    sees_remote(&b, "b1").await;
    let remote = b.account().registry::<Browser>().connection("b1").unwrap();
    let call = tokio::spawn(async move {
        remote
            .request(
                "click_element",
                None,
                None,
                hover(),
                Duration::from_secs(60),
            )
            .await
    });
    until("the peer got the click", || {
        seen.lock().unwrap().requests.len() == 1
    })
    .await;
    a.cluster.stop().await;
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::BrowserDisconnected);
    assert!(error.message.contains("stopped answering"), "{error:?}");
    assert!(
        error.action_may_have_occurred,
        "a click cut off may have happened"
    );
    assert_eq!(seen.lock().unwrap().requests.len(), 1, "never re-sent");
}

#[tokio::test]
async fn a_takeover_fences_the_older_owner_and_a_call_runs_once() {
    let nats = NatsServer::start();
    let (a, b, c) = (
        Replica::start(&nats, "n1").await,
        Replica::start(&nats, "n2").await,
        Replica::start(&nats, "n3").await,
    );
    let (old, old_seen) = peer(&a, "b1", answering(tabs("old")));
    sees_remote(&b, "b1").await;
    // The browser reconnects through another replica while its old socket lingers on A.
    let (_new, new_seen) = peer(&c, "b1", answering(tabs("new")));
    tokio::time::timeout(Duration::from_secs(20), old.replaced())
        .await
        .expect("the old owner drops its stale connection");
    a.account().registry::<Browser>().disconnect(&old);
    let b_account = b.account();
    until("B hears that only C holds b1", || {
        let remote = b.cluster.remote_peers::<crate::peer::Browser>(ACCOUNT);
        remote.len() == 1 && remote[0].node == "n3"
    })
    .await;
    let remote = b_account.registry::<Browser>().connection("b1").unwrap();
    assert_eq!(list_tabs(&remote, None).await.unwrap(), tabs("new"));
    assert_eq!(new_seen.lock().unwrap().requests.len(), 1);
    assert!(
        old_seen.lock().unwrap().requests.is_empty(),
        "the stale socket never answers"
    );
    // A now reaches it over NATS too.
    let from_a = a.account().registry::<Browser>().connection("b1").unwrap();
    assert!(from_a.is_remote());
    assert_eq!(list_tabs(&from_a, None).await.unwrap(), tabs("new"));
    assert_eq!(new_seen.lock().unwrap().requests.len(), 2);
}

#[tokio::test]
async fn the_owner_refuses_a_call_forged_for_another_account() {
    let nats = NatsServer::start();
    let a = Replica::start(&nats, "n1").await;
    let (_conn, seen) = peer(&a, "b1", answering(tabs("secret")));
    // Wait until A listens on the peer's subject (its presence goes out after).
    let raw = async_nats::connect(&nats.url).await.unwrap();
    let subject = subjects::peer(ACCOUNT, "browser", "b1");
    for (claimed_account, claimed_peer) in [("evil", "b1"), (ACCOUNT, "b2")] {
        let forged = ClusterMessage::Call {
            account: claimed_account.into(),
            kind: "browser".into(),
            peer: claimed_peer.into(),
            tool: "list_tabs".into(),
            tab_id: None,
            holder: None,
            op: Box::new(ListTabs {}.into()),
            deadline_ms: 5_000,
            call_uid: "forged".into(),
            from_node: "mallory".into(),
        };
        let reply = loop {
            match raw.request(subject.clone(), forged.to_bytes().into()).await {
                Ok(reply) => break reply,
                // Not subscribed yet.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        match ClusterMessage::from_bytes(&reply.payload) {
            Some(ClusterMessage::Answer { outcome, .. }) if outcome.is_err() => {
                let error = outcome.unwrap_err();
                assert_eq!(error.code, ErrorCode::Forbidden, "{error:?}")
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    assert!(
        seen.lock().unwrap().requests.is_empty(),
        "nothing reached the peer"
    );
}

#[tokio::test]
async fn a_three_megabyte_answer_arrives_whole() {
    let nats = NatsServer::start();
    let (a, b) = (
        Replica::start(&nats, "n1").await,
        Replica::start(&nats, "n2").await,
    );
    // Varied text, so a lost or reordered chunk would show.
    let title: String = (0..3 * 1024 * 1024 / 8)
        .map(|n| format!("{n:07x} "))
        .collect();
    assert!(title.len() >= 3 * 1024 * 1024);
    let (_conn, _seen) = peer(&a, "b1", answering(tabs(&title)));
    sees_remote(&b, "b1").await;
    let remote = b.account().registry::<Browser>().connection("b1").unwrap();
    assert_eq!(list_tabs(&remote, None).await.unwrap(), tabs(&title));
}

#[tokio::test]
async fn presence_lists_a_remote_peer_and_forgets_it_once_its_owner_is_gone() {
    let nats = NatsServer::start();
    let (a, b) = (
        Replica::start(&nats, "n1").await,
        Replica::start(&nats, "n2").await,
    );
    let (_conn, _seen) = peer(&a, "b1", answering(tabs("x")));
    let (_local, _local_seen) = peer(&b, "b2", answering(tabs("y")));
    sees_remote(&b, "b1").await;
    let listed: Vec<(String, bool)> = b
        .account()
        .registry::<Browser>()
        .list()
        .iter()
        .map(|info| (info.id().to_owned(), info.connected))
        .collect();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(listed.iter().all(|(_, connected)| *connected), "{listed:?}");
    // The owner dies without a word: its peers vanish once its presence expires.
    a.cluster.stop().await;
    let account = b.account();
    until("B forgets b1", || {
        account.registry::<Browser>().get("b1").is_none()
    })
    .await;
    assert_eq!(account.registry::<Browser>().list().len(), 1);
    assert_eq!(
        account
            .registry::<Browser>()
            .connection("b1")
            .err()
            .unwrap()
            .code,
        ErrorCode::BrowserNotFound
    );
}

/// A fake browser that keeps leases as the extension does: the first session to change the
/// tab holds it; another session's change is refused.
fn leasing() -> Answer {
    let holder_of = Arc::new(Mutex::new(None::<String>));
    Arc::new(move |request: &Request| {
        if request.op.is_mutation() {
            let session = request.holder.as_ref().map(|h| h.session.clone());
            let mut held = holder_of.lock().unwrap();
            match (&*held, session) {
                (Some(owner), Some(session)) if *owner != session => {
                    return Some(Err(OpError::new(
                        ErrorCode::TabLeased,
                        format!("leased by {owner}"),
                    )));
                }
                (_, session) => *held = session,
            }
        }
        Some(Ok(tabs("ok")))
    })
}

#[tokio::test]
async fn a_lease_taken_through_one_replica_holds_for_a_call_through_another() {
    let nats = NatsServer::start();
    let (a, b, c) = (
        Replica::start(&nats, "n1").await,
        Replica::start(&nats, "n2").await,
        Replica::start(&nats, "n3").await,
    );
    let (_conn, seen) = peer(&a, "b1", leasing());
    sees_remote(&b, "b1").await;
    sees_remote(&c, "b1").await;
    let via_b = b.account().registry::<Browser>().connection("b1").unwrap();
    let via_c = c.account().registry::<Browser>().connection("b1").unwrap();
    let click = |connection: Arc<Connection>, session: &'static str| async move {
        connection
            .request(
                "hover",
                None,
                Some(&holder(session)),
                hover(),
                Duration::from_secs(10),
            )
            .await
    };
    click(via_b.clone(), "s1").await.unwrap();
    let refused = click(via_c.clone(), "s2").await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::TabLeased, "{refused:?}");
    click(via_c, "s1").await.unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.requests[0].holder,
        Some(holder("s1")),
        "the holder travels whole"
    );
}

#[tokio::test]
async fn an_ended_session_reaches_peers_on_other_replicas() {
    let nats = NatsServer::start();
    let (a, b) = (
        Replica::start(&nats, "n1").await,
        Replica::start(&nats, "n2").await,
    );
    let (_conn, seen) = peer(&a, "b1", answering(tabs("x")));
    sees_remote(&b, "b1").await;
    b.account().session_ended("s9");
    until("the peer hears the session ended", || {
        seen.lock().unwrap().other.iter().any(
            |message| matches!(message, HubMessage::SessionEnded { session } if session == "s9"),
        )
    })
    .await;
}

#[tokio::test]
async fn a_cancel_reaches_the_owner_and_its_answer_comes_back() {
    let nats = NatsServer::start();
    let (a, b) = (
        Replica::start(&nats, "n1").await,
        Replica::start(&nats, "n2").await,
    );
    let (_conn, seen) = peer(&a, "b1", Arc::new(|_| None));
    sees_remote(&b, "b1").await;
    let remote = b.account().registry::<Browser>().connection("b1").unwrap();
    let cancel = CancellationToken::new();
    let call = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            remote
                .request_unless(
                    "hover",
                    None,
                    None,
                    hover(),
                    Duration::from_secs(60),
                    &cancel,
                )
                .await
        })
    };
    until("the peer got the click", || {
        seen.lock().unwrap().requests.len() == 1
    })
    .await;
    cancel.cancel();
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Cancelled, "{error:?}");
    assert!(
        !error.action_may_have_occurred,
        "the peer said it stopped first"
    );
    assert!(
        seen.lock()
            .unwrap()
            .other
            .iter()
            .any(|message| matches!(message, HubMessage::Cancel { .. }))
    );
}

#[tokio::test]
async fn another_credential_cannot_take_a_peer_id_held_on_another_replica() {
    let nats = NatsServer::start();
    let (a, b) = (
        Replica::start(&nats, "n1").await,
        Replica::start(&nats, "n2").await,
    );
    let (_conn, seen) = peer(&a, "b1", answering(tabs("real")));
    sees_remote(&b, "b1").await;
    let refused = b
        .account()
        .registry::<Browser>()
        .connect(hello("b1"), Owner::fixed("token:mallory"))
        .err()
        .expect("refused");
    assert_eq!(refused.code, ErrorCode::Forbidden, "{refused:?}");
    // The real browser stays reachable, through B too.
    let remote = b.account().registry::<Browser>().connection("b1").unwrap();
    assert_eq!(list_tabs(&remote, None).await.unwrap(), tabs("real"));
    assert_eq!(seen.lock().unwrap().requests.len(), 1);
}

#[tokio::test]
async fn a_device_on_another_replica_counts_for_the_device_tools() {
    let nats = NatsServer::start();
    let (a, b) = (
        Replica::start(&nats, "n1").await,
        Replica::start(&nats, "n2").await,
    );
    let b_account = b.account();
    let mut present = b_account.registry::<Device>().watch_connected();
    assert!(!*present.borrow());
    let (_device, _outbox) = a
        .account()
        .registry::<Device>()
        .connect(
            crate::mcp::device_hello("d1", "Pixel"),
            Owner::fixed("token:backend"),
        )
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), present.wait_for(|any| *any))
        .await
        .expect("B lists device tools")
        .unwrap();
    assert!(
        b_account
            .registry::<Device>()
            .connection("d1")
            .unwrap()
            .is_remote()
    );
    a.cluster.stop().await;
    tokio::time::timeout(Duration::from_secs(20), present.wait_for(|any| !*any))
        .await
        .expect("B stops listing them once the device's replica is gone")
        .unwrap();
}

#[tokio::test]
async fn without_nats_remote_calls_fail_at_once_local_ones_go_on_and_all_recovers() {
    let nats = NatsServer::start();
    let port = nats.port();
    let (a, b) = (
        Replica::start(&nats, "n1").await,
        Replica::start(&nats, "n2").await,
    );
    let (_far, far_seen) = peer(&a, "b1", Arc::new(|_| None));
    let (near, _near_seen) = peer(&b, "b2", answering(tabs("near")));
    sees_remote(&b, "b1").await;
    let remote = b.account().registry::<Browser>().connection("b1").unwrap();
    let in_flight = {
        let remote = remote.clone();
        tokio::spawn(async move {
            remote
                .request("hover", None, None, hover(), Duration::from_secs(60))
                .await
        })
    };
    until("the far peer got the click", || {
        far_seen.lock().unwrap().requests.len() == 1
    })
    .await;
    drop(nats);
    let error = in_flight.await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::BrowserDisconnected, "{error:?}");
    assert!(error.action_may_have_occurred, "{error:?}");
    assert!(
        error.message.contains("lost its connection to NATS"),
        "{error:?}"
    );
    until("B knows NATS is gone", || !b.cluster.is_connected()).await;
    let refused = list_tabs(&remote, None).await.unwrap_err();
    assert!(
        refused.message.contains("lost its connection to NATS"),
        "{refused:?}"
    );
    // A peer on this replica does not need NATS.
    let local = b.account().registry::<Browser>().connection("b2").unwrap();
    assert!(!local.is_remote());
    let answering_near = tokio::spawn(async move { list_tabs(&local, None).await });
    assert_eq!(answering_near.await.unwrap().unwrap(), tabs("near"));
    drop(near);
    // Once what A said has expired, B still does not call its peer unknown: it says why.
    tokio::time::sleep(super::presence::PRESENCE_TTL + Duration::from_millis(500)).await;
    let unknown = b
        .account()
        .registry::<Browser>()
        .connection("b1")
        .err()
        .expect("no way to b1 while NATS is down");
    assert_eq!(unknown.code, ErrorCode::BrowserDisconnected, "{unknown:?}");
    assert!(
        unknown
            .message
            .contains("lost its connection to the other replicas"),
        "{unknown:?}"
    );
    // The server comes back on its port: the replicas reconnect and resubscribe by themselves.
    let _back = NatsServer::start_on(Some(port));
    until("B reconnects", || b.cluster.is_connected()).await;
    until("A reconnects", || a.cluster.is_connected()).await;
    let mut recovered = false;
    for _ in 0..100 {
        // Until A says again that it holds b1, B does not know where it is.
        let Ok(remote) = b.account().registry::<Browser>().connection("b1") else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let outcome = remote
            .request(
                "list_tabs",
                None,
                None,
                ListTabs {}.into(),
                Duration::from_millis(200),
            )
            .await;
        // The far peer never answers: a bridge timeout means the call reached it.
        if outcome.is_err_and(|error| error.code == ErrorCode::BridgeTimeout) {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(recovered, "calls cross replicas again");
}

#[tokio::test]
async fn a_revocation_found_on_one_replica_reaches_a_replica_without_the_file() {
    use crate::auth::{self, Authenticator, KeySource, Role};
    let nats = NatsServer::start();
    let (a, b) = (
        Replica::start(&nats, "n1").await,
        Replica::start(&nats, "n2").await,
    );
    let scratch = std::env::temp_dir().join(format!(
        "tabwire-cluster-revoked-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let (dir_a, dir_b) = (scratch.join("a"), scratch.join("b"));
    let (token, record, _) =
        auth::issue(&dir_a, ACCOUNT, Role::Agent, Duration::from_secs(600), "").unwrap();
    // B has the same key but its own (empty) revocation list.
    auth::issue(&dir_b, "setup", Role::Agent, Duration::from_secs(600), "").unwrap();
    std::fs::copy(dir_a.join(auth::SECRET_FILE), dir_b.join(auth::SECRET_FILE)).unwrap();
    let auth_a = Arc::new(Authenticator::load(&dir_a, &KeySource::Secret).unwrap());
    let auth_b = Arc::new(Authenticator::load(&dir_b, &KeySource::Secret).unwrap());
    let announcer = a.cluster.clone();
    auth_a.announce_revocations(move |jti| announcer.revoked(jti));
    a.cluster.watch_revocations(auth_a.clone());
    let hearer = auth_b.clone();
    b.cluster
        .on_revoked(move |jti| hearer.revoked_elsewhere(jti));
    assert!(auth_b.verify(&token).is_ok());
    auth::revoke(&dir_a, std::slice::from_ref(&record.jti)).unwrap();
    until("B refuses the revoked token", || {
        auth_b.verify(&token).is_err()
    })
    .await;
    assert!(auth_a.verify(&token).is_err());
    let _ = std::fs::remove_dir_all(&scratch);
}

#[tokio::test]
async fn tools_on_one_replica_list_and_choose_the_lone_browser_another_holds() {
    let nats = NatsServer::start();
    let (a, b) = (
        Replica::start(&nats, "n1").await,
        Replica::start(&nats, "n2").await,
    );
    let (_conn, seen) = peer(&a, "b1", answering(tabs("Home")));
    sees_remote(&b, "b1").await;
    let Replica { cluster, accounts } = b;
    let hub = Arc::new(crate::state::HubState {
        accounts,
        cluster: Some(cluster),
        ..crate::state::HubState::local(
            "ws://127.0.0.1:1/browser".into(),
            crate::pairing::Pairings::for_tests(),
        )
    });
    let caller = crate::mcp::Caller {
        account: hub.accounts.get(ACCOUNT),
        hub,
        session: Arc::new(crate::session::Session::new(
            "s1".into(),
            Default::default(),
            None,
        )),
        holder: holder("s1"),
        trace: Default::default(),
        progress: None,
        cancel: Default::default(),
    };
    let listed = crate::mcp::catalogue::dispatch(&caller, "list_browsers", Default::default())
        .await
        .unwrap()
        .unwrap();
    assert!(format!("{listed:?}").contains("b1"), "{listed:?}");
    // No browserId and none selected: the lone connected browser is chosen, across replicas.
    crate::mcp::catalogue::dispatch(&caller, "list_tabs", Default::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seen.lock().unwrap().requests.len(), 1);
    let trace = caller.trace.lock().unwrap().clone();
    assert_eq!(trace.peer, Some(("browser", "b1".to_owned())));
    assert_eq!(
        trace.owner.as_deref(),
        Some("n1"),
        "the audit log names the owner"
    );
}

/// A hosted hub serving the real `/device` endpoint as replica `node`, with its keys in `auth`.
async fn served_replica(
    nats: &NatsServer,
    node: &str,
    auth: &std::path::Path,
) -> crate::link_test_kit::Served {
    use crate::auth::{Authenticator, KeySource};
    let cluster = Cluster::connect(&nats.url, node).await.unwrap();
    let auth = Arc::new(Authenticator::load(auth, &KeySource::Secret).unwrap());
    crate::link_test_kit::serve(
        move |_, _| {
            let public = crate::hosted::PublicOrigin::parse(crate::link_test_kit::PUBLIC).unwrap();
            crate::state::HubState {
                pairings: None,
                accounts: Accounts::hosted(Limits::default()).with_cluster(cluster.clone()),
                browser_url: public.browser_url(),
                auth: Some(auth),
                file_urls: crate::state::FileUrls::Refused,
                uploads: Default::default(),
                audit: None,
                lease_idle: crate::leases::DEFAULT_LEASE_IDLE,
                policies: Arc::new(crate::policy::Policies::allow_all()),
                layout: Default::default(),
                cluster: Some(cluster),
            }
        },
        true,
    )
    .await
}

#[tokio::test]
async fn a_device_reconnecting_through_another_replica_closes_its_stale_socket() {
    use crate::auth::{self, Role};
    use crate::link_test_kit::{hear, say};
    use futures_util::StreamExt;
    let nats = NatsServer::start();
    let keys = crate::link_test_kit::scratch();
    let (token, _, _) = auth::issue(
        &keys,
        ACCOUNT,
        Role::Peer(tabwire_protocol::Kind::Device),
        Duration::from_secs(600),
        "",
    )
    .unwrap();
    let bearer = format!("Bearer {token}");
    let (a, c) = (
        served_replica(&nats, "n1", &keys).await,
        served_replica(&nats, "n3", &keys).await,
    );
    let mut hello = serde_json::to_value(crate::mcp::device_hello("p1", "Pixel")).unwrap();
    hello["type"] = serde_json::json!("hello");
    let mut stale = a
        .open("/device", &[("authorization", &bearer)])
        .await
        .unwrap();
    say(&mut stale, hello.clone()).await;
    assert!(matches!(hear(&mut stale).await, HubMessage::Welcome(_)));
    let a_account = a.state.accounts.get(ACCOUNT);
    until("C sees p1 on A", || {
        c.state
            .accounts
            .get(ACCOUNT)
            .registry::<Device>()
            .get("p1")
            .is_some_and(|p| p.connected)
    })
    .await;
    let mut fresh = c
        .open("/device", &[("authorization", &bearer)])
        .await
        .unwrap();
    say(&mut fresh, hello).await;
    assert!(matches!(hear(&mut fresh).await, HubMessage::Welcome(_)));
    // A hears the takeover and closes the stale socket.
    let closed = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(Ok(message)) = stale.next().await {
            if matches!(message, tokio_tungstenite::tungstenite::Message::Close(_)) {
                break;
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the stale socket was closed");
    until("A reaches p1 through C", || {
        a_account
            .registry::<Device>()
            .connection("p1")
            .is_ok_and(|c| c.is_remote())
    })
    .await;
    let _ = std::fs::remove_dir_all(&keys);
}
