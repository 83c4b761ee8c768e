//! Hosted mode through a real TLS reverse proxy (issue 6): the hub with `--auth-dir` behind
//! nginx, which includes the repository's `deploy/nginx/tabwire-locations.conf`. Agents reach
//! `https://…/mcp` with a bearer token; the extension in headless Chromium dials
//! `wss://…/browser` with its token; accounts never see each other.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tabwire_e2e::client::Reply;
use tabwire_e2e::hosted::{
    Hosted, Role, claims_of, craft_token, handshake_status, initialize_body, refusal,
    stateless_call, token_command,
};
use tabwire_e2e::scenario::{
    CONNECT_LIMIT, POPUP, connected_browser, loaded_tab, popup_text, ref_of, tab_with,
};
use tabwire_e2e::{Browser, Fixtures, McpClient, eventually};

/// An ID no browser ever had.
const NEVER: &str = "never-connected-0000";

/// The one answer every unauthenticated `/mcp` request gets.
const UNAUTHORIZED: &str = r#"{"error":"unauthorized"}"#;

/// Waits until `list_browsers` shows the browser `browser_id` disconnected.
async fn disconnected(client: &McpClient, browser_id: &str, what: &str, limit: Duration) {
    eventually(what, limit, || async {
        let reply = client.call("list_browsers", json!({})).await;
        reply.data()["browsers"]
            .as_array()?
            .iter()
            .any(|b| b["browserId"] == browser_id && b["connected"] == false)
            .then_some(())
    })
    .await;
}

/// The names of the browsers `list_browsers` shows.
fn browser_names(reply: &Reply) -> Vec<String> {
    reply.data()["browsers"]
        .as_array()
        .expect("list_browsers lists browsers")
        .iter()
        .map(|b| b["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A `BROWSER_NOT_FOUND` reply with the browser ID it names replaced, to compare the shape of
/// the answer for another account's browser with the one for an ID that never existed.
fn not_found_shape(reply: &Reply, id: &str) -> (String, String) {
    assert_eq!(reply.error_code(), "BROWSER_NOT_FOUND", "{}", reply.text);
    (
        reply.structured.to_string().replace(id, "<ID>"),
        reply.text.replace(id, "<ID>"),
    )
}

/// Asserts that `client` (account A) gets the same `BROWSER_NOT_FOUND` for `foreign` (account
/// B's browser) as for an ID that never existed, on a browser tool and on `select_browser`.
async fn foreign_browser_is_not_found(client: &McpClient, foreign: &str) {
    for (tool, extra) in [
        ("list_tabs", json!({})),
        ("get_page_snapshot", json!({})),
        ("select_browser", json!({})),
    ] {
        let call = |id: &str| {
            let mut args = extra.clone();
            args["browserId"] = json!(id);
            args
        };
        let foreign_reply = client.call(tool, call(foreign)).await;
        let never_reply = client.call(tool, call(NEVER)).await;
        assert_eq!(
            not_found_shape(&foreign_reply, foreign),
            not_found_shape(&never_reply, NEVER),
            "{tool}: another account's browser must look exactly like one that never existed"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_accounts_through_nginx_each_drive_only_their_own_browser() {
    let fixtures = Fixtures::serve().await;
    let hosted = Hosted::start();
    let health = hosted.get("/healthz", &[]).await;
    assert_eq!(
        (health.status, health.body.trim()),
        (200, "ok"),
        "{health:?}"
    );

    let alice_agent = hosted.issue("alice", Role::Agent);
    let bob_agent = hosted.issue("bob", Role::Agent);
    let login = fixtures.url("login.html");
    let counter = fixtures.url("counter.html");
    let _alice_chrome =
        hosted.launch_browser(&hosted.issue("alice", Role::Browser), "Alice", &login);
    // Bob's extension and his stateless agent go through the proxy's path prefix (`/team`,
    // rewritten as deploy/nginx/tabwire.conf shows); Alice's use the root.
    let _bob_chrome =
        hosted.launch_browser_under_prefix(&hosted.issue("bob", Role::Browser), "Bob", &counter);

    // Both extensions connect through nginx (wss, token as subprotocol); each agent session
    // (https, Authorization: Bearer) sees its own browser and nothing else.
    let alice = hosted.session(&alice_agent).await;
    let bob = hosted.session(&bob_agent).await;
    let alice_id = connected_browser(&alice, "Alice").await;
    let bob_id = connected_browser(&bob, "Bob").await;
    assert_eq!(
        browser_names(&alice.call("list_browsers", json!({})).await),
        ["Alice"]
    );
    assert_eq!(
        browser_names(&bob.call("list_browsers", json!({})).await),
        ["Bob"]
    );

    // Alice signs in on the login fixture through the proxy: snapshot, type, click, navigate.
    let tab = loaded_tab(&alice, json!({}), &login).await;
    let snapshot = alice.call("get_page_snapshot", json!({"tabId": tab})).await;
    let username = ref_of(&snapshot, "textbox \"Username\"");
    let password = ref_of(&snapshot, "\"Password\"");
    let submit = ref_of(&snapshot, "button \"Sign in\"");
    for (field, text) in [(&username, "alice"), (&password, "s3cret!")] {
        alice
            .call(
                "type_text",
                json!({"selector": field, "text": text, "tabId": tab}),
            )
            .await
            .data();
    }
    alice
        .call("click_element", json!({"selector": submit, "tabId": tab}))
        .await
        .data();
    let after = alice.call("get_page_snapshot", json!({"tabId": tab})).await;
    assert!(
        after
            .text
            .contains("Signed in as alice; password ok: true; trusted: true; clicks: 1"),
        "{}",
        after.text
    );
    let navigated = alice
        .call(
            "navigate_to",
            json!({"url": fixtures.url("counter.html?who=alice"), "tabId": tab}),
        )
        .await;
    assert_eq!(navigated.data()["title"], "Counter");

    // Account A naming B's browser gets exactly what an ID that never existed gets.
    foreign_browser_is_not_found(&alice, &bob_id).await;
    foreign_browser_is_not_found(&bob, &alice_id).await;

    // A stateless client (protocol 2026-07-28: no initialize, no Mcp-Session-Id) with an
    // explicit browserId on every call does the same work as a session.
    let stateless = hosted.stateless_under_prefix(&bob_agent).await;
    assert_eq!(
        browser_names(&stateless.call("list_browsers", json!({})).await),
        ["Bob"]
    );
    let on_bob = json!({"browserId": bob_id});
    let bob_tab = loaded_tab(&stateless, on_bob.clone(), &counter).await;
    let page = stateless
        .call(
            "get_page_snapshot",
            json!({"browserId": bob_id, "tabId": bob_tab}),
        )
        .await;
    let increment = ref_of(&page, "button \"Increment\"");
    stateless
        .call(
            "click_element",
            json!({"browserId": bob_id, "tabId": bob_tab, "selector": increment}),
        )
        .await
        .data();
    let page = stateless
        .call(
            "get_page_snapshot",
            json!({"browserId": bob_id, "tabId": bob_tab}),
        )
        .await;
    assert!(page.text.contains("Count: 1"), "{}", page.text);
    foreign_browser_is_not_found(&stateless, &alice_id).await;
    // Alice's page was not touched by any of this.
    let alice_page = alice.call("get_page_snapshot", json!({"tabId": tab})).await;
    assert!(alice_page.text.contains("Count: 0"), "{}", alice_page.text);

    // The same stateless call on the wire: no session header either way, and Bob's tabs.
    let (headers, body) = stateless_call(7, "list_tabs", on_bob.clone());
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let wire = hosted
        .post_mcp(Some(&bob_agent), None, &headers, &body)
        .await;
    assert_eq!(wire.status, 200, "{wire:?}");
    assert_eq!(wire.header("mcp-session-id"), None, "{wire:?}");
    let result = &wire.jsonrpc()["result"];
    assert_ne!(result["isError"], json!(true), "{wire:?}");
    let tabs = Reply {
        is_error: false,
        structured: result["structuredContent"].clone(),
        text: String::new(),
        fenced: String::new(),
        images: Vec::new(),
    };
    assert_eq!(tab_with(&tabs, "counter.html"), bob_tab);
    // A stateless client that does not ask for the envelope gets the text alone.
    let mut plain = body.clone();
    plain["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let wire = hosted
        .post_mcp(Some(&bob_agent), None, &headers, &plain)
        .await;
    let result = &wire.jsonrpc()["result"];
    assert!(result.get("structuredContent").is_none(), "{wire:?}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("counter.html")),
        "{wire:?}"
    );
}

/// Five ways to present a token that must not work, and what each gets on `/mcp`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tokens_wrong_roles_and_wrong_hosts_are_refused_without_detail() {
    let hosted = Hosted::start();
    let agent = hosted.issue("alice", Role::Agent);
    let browser = hosted.issue("alice", Role::Browser);
    let ok = hosted
        .post_mcp(Some(&agent), None, &[], &initialize_body())
        .await;
    assert_eq!(ok.status, 200, "a valid agent token initializes: {ok:?}");

    // A revoked token: issued and working, revoked with the CLI, refused within ~1 s.
    let revoked = hosted.issue("alice", Role::Agent);
    let before = hosted
        .post_mcp(Some(&revoked), None, &[], &initialize_body())
        .await;
    assert_eq!(before.status, 200, "{before:?}");
    let revoked_at = Instant::now();
    hosted.revoke(&claims_of(&revoked).jti);
    eventually(
        "the hub to refuse the revoked token",
        Duration::from_secs(5),
        || async {
            let reply = hosted
                .post_mcp(Some(&revoked), None, &[], &initialize_body())
                .await;
            (reply.status == 401).then_some(())
        },
    )
    .await;
    eprintln!(
        "revoked token refused {:?} after `token revoke`",
        revoked_at.elapsed()
    );
    // `token list` shows the revoked token's status and never a token.
    let jti = claims_of(&revoked).jti;
    let listed = token_command(&hosted.hub.auth_dir, &["list", "--account", "alice"]);
    let line = listed
        .lines()
        .find(|line| line.starts_with(&jti))
        .unwrap_or_else(|| panic!("{jti} is not listed:\n{listed}"));
    assert!(line.contains("revoked") && line.contains("agent"), "{line}");
    assert!(
        !listed.contains(&revoked) && !listed.contains(&agent),
        "token list printed a token:\n{listed}"
    );

    let secret = hosted.secret();
    let cases: Vec<(&str, Option<String>)> = vec![
        ("missing", None),
        ("malformed", Some("not.a-jwt".to_owned())),
        (
            "expired",
            Some(craft_token(&secret, "alice", Role::Agent, -3600)),
        ),
        (
            "wrongly signed",
            Some(craft_token(
                b"another secret, not the hub's, 32b",
                "alice",
                Role::Agent,
                3600,
            )),
        ),
        ("revoked", Some(revoked.clone())),
    ];
    // The crafted tokens are right in every other way: the hub's own secret and a live expiry
    // make a token it accepts.
    let control = craft_token(&secret, "alice", Role::Agent, 3600);
    let accepted = hosted
        .post_mcp(Some(&control), None, &[], &initialize_body())
        .await;
    assert_eq!(
        accepted.status, 200,
        "a token crafted like the test's with the hub's secret is accepted: {accepted:?}"
    );

    let mut answers = Vec::new();
    for (what, token) in &cases {
        let reply = hosted
            .post_mcp(token.as_deref(), None, &[], &initialize_body())
            .await;
        assert_eq!(reply.status, 401, "{what} token: {reply:?}");
        assert_eq!(reply.body, UNAUTHORIZED, "{what} token");
        let challenge = reply.header("www-authenticate").unwrap_or_default();
        assert!(
            challenge.starts_with("Bearer"),
            "{what} token: WWW-Authenticate {challenge:?}"
        );
        answers.push((
            reply.status,
            reply.body.clone(),
            challenge.to_owned(),
            reply.header("content-type").map(str::to_owned),
        ));
    }
    assert!(
        answers.windows(2).all(|pair| pair[0] == pair[1]),
        "all five refusals are identical: {answers:#?}"
    );

    // The same five on the extension's socket: upgraded, then refused UNAUTHORIZED, closed.
    let mut messages = Vec::new();
    for (what, token) in &cases {
        let mut socket = hosted
            .browser_socket(token.as_deref(), None)
            .await
            .unwrap_or_else(|error| panic!("{what} token: the upgrade is accepted ({error})"));
        let refused = refusal(&mut socket).await;
        assert_eq!(refused["code"], "UNAUTHORIZED", "{what} token: {refused}");
        messages.push(refused["message"].clone());
    }
    assert!(
        messages.windows(2).all(|pair| pair[0] == pair[1]),
        "all five socket refusals say the same: {messages:?}"
    );

    // Wrong role: a browser token on /mcp is 403; an agent token on /browser is FORBIDDEN.
    let wrong_role = hosted
        .post_mcp(Some(&browser), None, &[], &initialize_body())
        .await;
    assert_eq!(wrong_role.status, 403, "{wrong_role:?}");
    let body: Value = serde_json::from_str(&wrong_role.body).unwrap();
    assert_eq!(body["error"], "forbidden", "{wrong_role:?}");
    let mut socket = hosted
        .browser_socket(Some(&agent), None)
        .await
        .expect("the upgrade is accepted to say why");
    let refused = refusal(&mut socket).await;
    assert_eq!(refused["code"], "FORBIDDEN", "{refused}");
    let plain = hosted
        .get("/browser", &[("Authorization", &format!("Bearer {agent}"))])
        .await;
    assert_eq!(
        plain.status, 403,
        "non-upgrade /browser, agent token: {plain:?}"
    );

    // A Host that is not the public origin's: 403 host_not_allowed on both endpoints, even with
    // valid tokens.
    let wrong_host = hosted
        .post_mcp(
            Some(&agent),
            None,
            &[("Host", "evil.example")],
            &initialize_body(),
        )
        .await;
    assert_eq!(
        (wrong_host.status, wrong_host.body.as_str()),
        (403, r#"{"error":"host_not_allowed"}"#),
        "{wrong_host:?}"
    );
    let wrong_port = format!("localhost:{}", hosted.hub.http.port());
    let wrong_host = hosted
        .post_mcp(
            Some(&agent),
            None,
            &[("Host", &wrong_port)],
            &initialize_body(),
        )
        .await;
    assert_eq!(wrong_host.status, 403, "Host {wrong_port}: {wrong_host:?}");
    let (status, body) = handshake_status(
        hosted
            .browser_socket(Some(&browser), Some("evil.example"))
            .await,
    );
    assert_eq!(
        (status, body.as_str()),
        (403, r#"{"error":"host_not_allowed"}"#),
        "/browser with Host evil.example"
    );

    // A session belongs to the account that created it: Bob presenting Alice's session ID gets
    // 404, as for a session that does not exist.
    let created = hosted
        .post_mcp(Some(&agent), None, &[], &initialize_body())
        .await;
    let session = created
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("initialize creates a session: {created:?}"))
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let acked = hosted
        .post_mcp(Some(&agent), Some(&session), &[], &initialized)
        .await;
    assert!(acked.status < 300, "{acked:?}");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let own = hosted
        .post_mcp(Some(&agent), Some(&session), &[], &list)
        .await;
    assert_eq!(own.status, 200, "the creator uses its session: {own:?}");
    assert!(own.jsonrpc()["result"]["tools"].is_array(), "{own:?}");
    let bob = hosted.issue("bob", Role::Agent);
    let stolen = hosted
        .post_mcp(Some(&bob), Some(&session), &[], &list)
        .await;
    let unknown = hosted
        .post_mcp(Some(&bob), Some("no-such-session"), &[], &list)
        .await;
    assert_eq!(stolen.status, 404, "another account's session: {stolen:?}");
    assert_eq!(
        (stolen.status, &stolen.body),
        (unknown.status, &unknown.body),
        "another account's session looks like an unknown one"
    );
}

/// Revoking a browser token takes that browser off the hub within seconds (its token is checked
/// every second), and its popup says why; the account's agent then sees it disconnected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_browser_token_disconnects_its_browser() {
    let fixtures = Fixtures::serve().await;
    let hosted = Hosted::start();
    let agent = hosted.session(&hosted.issue("carol", Role::Agent)).await;
    let token = hosted.issue("carol", Role::Browser);
    let browser = hosted.launch_browser(&token, "Carol", &fixtures.url("counter.html"));
    let browser_id = connected_browser(&agent, "Carol").await;
    hosted.revoke(&claims_of(&token).jti);
    let revoked_at = Instant::now();
    disconnected(
        &agent,
        &browser_id,
        "the revoked browser to be disconnected",
        Duration::from_secs(10),
    )
    .await;
    eprintln!(
        "revoked browser disconnected {:?} after `token revoke`",
        revoked_at.elapsed()
    );
    let popup = browser.open_tab(POPUP).await;
    // The form's labels are there at once; the refusal comes with the worker's state.
    let shown = popup_text(&popup, "the popup to show the refusal", |text| {
        text.contains("Refused") && text.contains("token")
    })
    .await;
    assert!(
        !shown.contains(&token),
        "the popup shows the token: {shown}"
    );
    let call = agent
        .call("list_tabs", json!({ "browserId": browser_id }))
        .await;
    assert_eq!(call.error_code(), "BROWSER_DISCONNECTED", "{}", call.text);
}

/// What a person does in the popup: a hosted hub without a token refuses and says a token is
/// needed; typing one and pressing Connect connects; the token is never shown back; "Forget
/// token" takes the browser off the hub again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_popup_takes_keeps_and_forgets_an_access_token() {
    let fixtures = Fixtures::serve().await;
    let hosted = Hosted::start();
    let agent = hosted.session(&hosted.issue("frank", Role::Agent)).await;
    let token = hosted.issue("frank", Role::Browser);
    let config = json!({"serverUrl": hosted.browser_url(), "browserName": "Frank"});
    let browser = Browser::launch_with_config(
        config,
        "Frank",
        &fixtures.url("counter.html"),
        &["--ignore-certificate-errors"],
    );
    let popup = browser.open_tab(POPUP).await;
    let needs_token = popup_text(&popup, "the popup to ask for a token", |text| {
        text.contains("needs an access token")
    })
    .await;
    assert!(needs_token.contains("Refused"), "{needs_token}");

    // Type the token and press Connect, as a person would.
    let typed = format!(
        "document.getElementById('accessToken').value = {};\
         document.getElementById('connect').click(); true",
        json!(token)
    );
    Browser::evaluate(&popup, &typed).await;
    let browser_id = connected_browser(&agent, "Frank").await;
    eventually(
        "the popup to say a token is saved",
        CONNECT_LIMIT,
        || async {
            let field = Browser::evaluate(&popup, "document.getElementById('accessToken').value")
                .await
                .as_str()?
                .to_owned();
            let saved = Browser::evaluate(
                &popup,
                "!document.getElementById('accessTokenSaved').hidden",
            )
            .await;
            (field.is_empty() && saved == json!(true)).then_some(())
        },
    )
    .await;
    let html = Browser::evaluate(&popup, "document.documentElement.outerHTML").await;
    assert!(
        !html.as_str().unwrap_or_default().contains(&token),
        "the popup shows the token"
    );

    // Forget it: the browser leaves the hub and the popup asks for a token again.
    Browser::evaluate(
        &popup,
        "document.getElementById('forgetToken').click(); true",
    )
    .await;
    disconnected(
        &agent,
        &browser_id,
        "the browser to leave the hub",
        CONNECT_LIMIT,
    )
    .await;
}
