//! Hub replicas on NATS (issue 24): a nats-server started by the test, three hosted
//! `tabwire-hub --cluster` replicas sharing one auth directory, a real extension in headless
//! Chromium reaching them through a small TCP balancer (`tabwire_e2e::balancer`: one server URL
//! for the extension, forwarded to the first replica that accepts), simulated browsers
//! connected to chosen replicas, and agents on other replicas than their browsers. One replica
//! is killed; the browser comes back through another. Then nginx with the repository's
//! `deploy/nginx-replicas.conf` in front of three replicas keeps each MCP session on the replica
//! that made it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tabwire_e2e::balancer::Balancer;
use tabwire_e2e::client::{McpClient, Reply};
use tabwire_e2e::cluster::{Replicas, Setup, agent, node_id};
use tabwire_e2e::hosted::{initialize_body, install_crypto};
use tabwire_e2e::load::peers::{self, Behaviour, Counts, Dial, Journal, Peer};
use tabwire_e2e::proxy::{Nginx, free_port};
use tabwire_e2e::scenario::{CONNECT_LIMIT, connected_browser, loaded_tab, ref_of};
use tabwire_e2e::{Browser, Fixtures, artifacts::artifacts, eventually};

/// Three replicas with logs forwarded, sharing `origin`.
fn replicas(origin: &str) -> Replicas {
    Replicas::start(Setup {
        hub: artifacts().hub.clone(),
        replicas: 3,
        origin: origin.to_owned(),
        flags: Vec::new(),
        log: "info".to_owned(),
        forward_logs: true,
    })
    .unwrap_or_else(|error| panic!("start nats-server and 3 replicas: {error:#}"))
}

/// A simulated browser of `account` named `Load ID`, connected straight to replica `index`,
/// answering after `delay` and writing what it runs in `journal`.
async fn simulated(
    replicas: &Replicas,
    index: usize,
    account: &str,
    id: &str,
    delay: Duration,
    journal: &Arc<Journal>,
) -> Peer {
    let token = replicas.issue(account, "browser").unwrap();
    let hub = &replicas.hubs[index];
    let behaviour = Behaviour {
        journal: journal.clone(),
        ..Behaviour::new(delay, 200)
    };
    let dial = Dial {
        addr: hub.addr,
        host: &hub.host,
        token: &token,
        browser_id: id,
    };
    peers::connect(dial, behaviour, Arc::new(Counts::default()))
        .await
        .unwrap_or_else(|error| panic!("simulated browser {id} on {}: {error}", node_id(index)))
}

/// An agent of `account` on replica `index`, calling itself `name`.
async fn agent_on(replicas: &Replicas, index: usize, account: &str, name: &str) -> McpClient {
    let token = replicas.issue(account, "agent").unwrap();
    let hub = &replicas.hubs[index];
    agent(hub.addr, &hub.host, &token, name).await
}

/// The names `list_browsers` shows, sorted.
async fn browser_names(client: &McpClient) -> Vec<String> {
    let reply = client.call("list_browsers", json!({})).await;
    let mut names: Vec<String> = reply.data()["browsers"]
        .as_array()
        .expect("list_browsers lists browsers")
        .iter()
        .filter(|b| b["connected"] == true)
        .map(|b| b["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// Clicks the board's "Add note" button in `tab` of `browser`.
async fn add_note(client: &McpClient, browser: &str, tab: u64) -> Reply {
    let snapshot = client
        .call(
            "get_page_snapshot",
            json!({"browserId": browser, "tabId": tab}),
        )
        .await;
    let add = ref_of(&snapshot, "button \"Add note\"");
    client
        .call(
            "click_element",
            json!({"browserId": browser, "selector": add, "tabId": tab, "observe": false}),
        )
        .await
}

/// The board's note count, as `client` reads it.
async fn notes(client: &McpClient, browser: &str, tab: u64) -> String {
    let snapshot = client
        .call(
            "get_page_snapshot",
            json!({"browserId": browser, "tabId": tab}),
        )
        .await;
    let line = snapshot
        .text
        .lines()
        .find(|line| line.contains("Notes: "))
        .unwrap_or_else(|| panic!("no note count in:\n{}", snapshot.text));
    let at = line.find("Notes: ").unwrap();
    line[at..]
        .split(['"', ']'])
        .next()
        .unwrap()
        .trim()
        .to_owned()
}

/// `create_tab` on `browser` at `url`.
async fn create(client: &McpClient, browser: &str, url: &str) -> Reply {
    client
        .call("create_tab", json!({"browserId": browser, "url": url}))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_share_browsers_and_leases_keep_accounts_apart_and_survive_a_kill() {
    let fixtures = Fixtures::serve().await;
    // The balancer first: its address is the replicas' public origin. It terminates TLS: the
    // extension sends its token over wss:// only.
    let balancer = Balancer::start_tls(Vec::new()).await;
    let port = balancer.addr.port();
    let mut replicas = replicas(&format!("https://localhost:{port}"));
    let addrs: Vec<SocketAddr> = replicas.hubs.iter().map(|hub| hub.addr).collect();
    balancer.set_backends(addrs.clone());

    // Alice's real browser lands on n1, the first replica that accepts.
    let board = fixtures.url("board.html");
    let alice_token = replicas.issue("alice", "browser").unwrap();
    let server = format!("wss://localhost:{port}/browser");
    let _chrome = Browser::launch_hosted(&server, &alice_token, "Alice", &board);
    // Simulated browsers: one of Alice's on n3, a slow one of hers on n1, Bob's on n2.
    let journal = Arc::new(Journal::default());
    let _quick = simulated(
        &replicas,
        2,
        "alice",
        "alice-quick",
        Duration::ZERO,
        &journal,
    )
    .await;
    let slow = Duration::from_secs(60);
    let _slow = simulated(&replicas, 0, "alice", "alice-slow", slow, &journal).await;
    let _bob_peer = simulated(&replicas, 1, "bob", "bob-sim", Duration::ZERO, &journal).await;

    // Agents on other replicas than the browsers they drive: Alpha on n2, Beta on n3.
    let alpha = agent_on(&replicas, 1, "alice", "Agent Alpha").await;
    let beta = agent_on(&replicas, 2, "alice", "Agent Beta").await;
    let bob = agent_on(&replicas, 2, "bob", "Bob's agent").await;
    let alice = connected_browser(&alpha, "Alice").await;
    assert_eq!(
        balancer.routed().first(),
        Some(&addrs[0]),
        "the extension's first connection went to n1"
    );
    // Presence: every replica lists the whole account, wherever each browser is.
    for client in [&alpha, &beta] {
        eventually("all of Alice's browsers listed", CONNECT_LIMIT, || async {
            let names = browser_names(client).await;
            (names == ["Alice", "Load alice-quick", "Load alice-slow"]).then_some(())
        })
        .await;
    }

    // Alpha (n2) drives the real browser (n1): three clicks, three notes, none run twice.
    let tab = loaded_tab(&alpha, json!({"browserId": alice}), &board).await;
    for _ in 0..3 {
        add_note(&alpha, &alice, tab).await.data();
    }
    assert_eq!(notes(&beta, &alice, tab).await, "Notes: 3");

    // The lease Alpha took through n2 holds for Beta's call through n3, until Alpha lets go.
    let refused = add_note(&beta, &alice, tab).await;
    assert_eq!(refused.error_code(), "TAB_LEASED", "{}", refused.text);
    let message = refused.error()["message"].as_str().unwrap();
    assert!(message.contains("Agent Alpha"), "{message}");
    assert!(!refused.may_have_acted());
    assert_eq!(
        notes(&alpha, &alice, tab).await,
        "Notes: 3",
        "Beta's click did not happen"
    );
    let released = alpha
        .call("release_tab", json!({"browserId": alice, "tabId": tab}))
        .await;
    assert_eq!(released.data()["released"], true, "{}", released.text);
    add_note(&beta, &alice, tab).await.data();
    assert_eq!(notes(&alpha, &alice, tab).await, "Notes: 4");

    // Isolation across replicas: Bob's agent on n3 neither lists nor reaches Alice's browsers
    // (on n1 and n3); another account's browser looks exactly like one that never existed.
    assert_eq!(browser_names(&bob).await, ["Load bob-sim"]);
    for foreign in [alice.as_str(), "alice-quick"] {
        let reply = bob.call("list_tabs", json!({"browserId": foreign})).await;
        let never = bob
            .call("list_tabs", json!({"browserId": "never-0000"}))
            .await;
        assert_eq!(reply.error_code(), "BROWSER_NOT_FOUND", "{}", reply.text);
        assert_eq!(
            reply.text.replace(foreign, "<ID>"),
            never.text.replace("never-0000", "<ID>"),
        );
        let created = create(&bob, foreign, "https://example.com/bob-was-here").await;
        assert_eq!(
            created.error_code(),
            "BROWSER_NOT_FOUND",
            "{}",
            created.text
        );
    }
    assert_eq!(journal.times("https://example.com/bob-was-here"), 0);

    // Calls across (Alpha on n2) and within (Beta on n3) replicas to the browser on n3: each
    // runs exactly once.
    let mut urls = Vec::new();
    for n in 0..20 {
        let (client, who) = if n % 4 == 0 {
            (&beta, "beta")
        } else {
            (&alpha, "alpha")
        };
        let url = format!("https://example.com/{who}/{n}");
        create(client, "alice-quick", &url).await.data();
        urls.push(url);
    }
    for url in &urls {
        assert_eq!(journal.times(url), 1, "{url}");
    }

    // A call in flight from n2 to the slow browser on n1 when n1 is killed fails at once as
    // disconnected, saying the tab may have been opened — not after its 10 s deadline as a
    // timeout, and never re-sent.
    let slow_url = "https://example.com/in-flight-at-the-kill";
    let in_flight = {
        let alpha = Arc::new(alpha);
        let caller = alpha.clone();
        let call = tokio::spawn(async move { create(&caller, "alice-slow", slow_url).await });
        eventually(
            "the slow browser to receive the call",
            CONNECT_LIMIT,
            || async { (journal.times(slow_url) == 1).then_some(()) },
        )
        .await;
        replicas.kill(0);
        let reply = tokio::time::timeout(Duration::from_secs(30), call)
            .await
            .expect("the call in flight ends")
            .unwrap();
        (alpha, reply)
    };
    let (alpha, reply) = in_flight;
    assert_eq!(reply.error_code(), "BROWSER_DISCONNECTED", "{}", reply.text);
    assert!(reply.may_have_acted(), "{}", reply.structured);
    assert_eq!(journal.times(slow_url), 1);

    // The extension reconnects through the balancer, now to n2; Beta (n3) reaches it there, and
    // the page still shows exactly the notes it was given.
    eventually("Alice's browser reachable again", CONNECT_LIMIT, || async {
        let reply = beta.call("list_tabs", json!({"browserId": alice})).await;
        (!reply.is_error).then_some(())
    })
    .await;
    assert_eq!(balancer.routed().last(), Some(&addrs[1]));
    assert_eq!(notes(&beta, &alice, tab).await, "Notes: 4");
    add_note(&beta, &alice, tab).await.data();
    assert_eq!(notes(&alpha, &alice, tab).await, "Notes: 5");
    // The slow browser's replica is gone: it is listed by nobody any more.
    eventually(
        "the killed replica's browser unlisted",
        CONNECT_LIMIT,
        || async {
            (!browser_names(&beta)
                .await
                .contains(&"Load alice-slow".to_owned()))
            .then_some(())
        },
    )
    .await;
    assert!(
        journal.duplicates().is_empty(),
        "calls ran twice: {:?}",
        journal.duplicates()
    );
}

/// Posts `body` to nginx's `/mcp` with `token` and an optional session ID.
async fn post(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    session: Option<&str>,
    body: &Value,
) -> (u16, Option<String>, String) {
    let mut request = client
        .post(url)
        .bearer_auth(token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(session) = session {
        request = request
            .header("Mcp-Session-Id", session)
            .header("MCP-Protocol-Version", "2025-11-25");
    }
    let response = request.send().await.expect("an answer from nginx");
    let status = response.status().as_u16();
    let id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, id, response.text().await.unwrap_or_default())
}

/// Opens an MCP session through nginx: its ID.
async fn open_session(client: &reqwest::Client, url: &str, token: &str) -> String {
    let (status, id, body) = post(client, url, token, None, &initialize_body()).await;
    assert_eq!(status, 200, "{body}");
    let id = id.expect("initialize hands out a session ID");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, body) = post(client, url, token, Some(&id), &initialized).await;
    assert!((200..300).contains(&status), "{status} {body}");
    id
}

/// `tools/call list_browsers` in session `id`: the HTTP status.
async fn list_in(client: &reqwest::Client, url: &str, token: &str, id: &str, n: u64) -> u16 {
    let body = json!({
        "jsonrpc": "2.0", "id": n, "method": "tools/call",
        "params": {"name": "list_browsers", "arguments": {}}
    });
    let (status, _, text) = post(client, url, token, Some(id), &body).await;
    if status == 200 {
        assert!(text.contains("\"result\""), "{text}");
    }
    status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_with_the_replicas_config_keeps_each_mcp_session_on_its_replica() {
    install_crypto();
    let port = free_port();
    let mut replicas = replicas(&format!("https://localhost:{port}"));
    let addrs: Vec<SocketAddr> = replicas.hubs.iter().map(|hub| hub.addr).collect();
    let nginx = Nginx::start_replicas(port, &addrs);
    let ca = reqwest::Certificate::from_pem(&nginx.certs.ca_pem).unwrap();
    let client = reqwest::Client::builder()
        .tls_certs_only([ca])
        .no_proxy()
        .build()
        .unwrap();
    let url = format!("{}/mcp", nginx.origin());
    let token = replicas.issue("carol", "agent").unwrap();

    // Sessions opened through nginx land on several replicas (least connections), each ID
    // naming its replica; every request of a session then reaches that replica — another
    // would answer 404.
    let mut sessions = Vec::new();
    for _ in 0..6 {
        sessions.push(open_session(&client, &url, &token).await);
    }
    let mut nodes: Vec<&str> = sessions
        .iter()
        .map(|id| id.split('.').next().unwrap())
        .collect();
    nodes.sort();
    nodes.dedup();
    assert!(
        nodes.len() >= 2,
        "all sessions on one replica: {sessions:?}"
    );
    assert!(
        nodes.iter().all(|node| ["n1", "n2", "n3"].contains(node)),
        "{sessions:?}"
    );
    for round in 0..5u64 {
        for (n, id) in sessions.iter().enumerate() {
            let status = list_in(&client, &url, &token, id, 10 + round * 10 + n as u64).await;
            assert_eq!(status, 200, "session {id}, round {round}");
        }
    }
    let health = client
        .get(format!("{}/healthz", nginx.origin()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);

    // The replica of the first session dies: nginx hands its next request to another replica,
    // which does not know the session (404: start a new one), and a new session works.
    let victim = sessions[0].clone();
    let index: usize = victim[1..victim.find('.').unwrap()]
        .parse::<usize>()
        .unwrap()
        - 1;
    replicas.kill(index);
    assert_eq!(list_in(&client, &url, &token, &victim, 100).await, 404);
    let fresh = open_session(&client, &url, &token).await;
    assert!(
        !fresh.starts_with(&format!("{}.", node_id(index))),
        "{fresh}"
    );
    assert_eq!(list_in(&client, &url, &token, &fresh, 101).await, 200);
    // The other sessions are untouched.
    for id in sessions.iter().filter(|id| !id.starts_with(&victim[..3])) {
        assert_eq!(list_in(&client, &url, &token, id, 102).await, 200, "{id}");
    }
}
