//! Pairing under attack (issue 12), with the real hub, the real extension in headless Chromium
//! and attackers made of plain WebSockets:
//!
//! - a fake hub on the URL the extension dials (with a code no hub issued, and in place of the
//!   real hub the browser paired with) hears challenges and nothing else: no browser ID, no
//!   name, no hello, no answer to the requests it slips in, and the popup says why;
//! - a fake browser with an extension `Origin` but no key is refused, and one presenting a
//!   paired browser's ID (with a random key, or with a pairing code of its own) is refused while
//!   the real browser keeps working;
//! - oversized and malformed hellos get a clear `INVALID_ARGUMENT` and register nothing;
//! - `tabwire-hub pair --revoke` drops a connected browser and keeps it out;
//! - a pairing survives a hub restart: the browser comes back with its key, no new code;
//! - a person pairs in one step: a code pasted into the popup, Connect, and the popup says so;
//! - the extension's own scripts in pages (where a taken-over renderer would run) can read
//!   neither the pairing key from its storage nor the worker's state, nor change its settings.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tabwire_e2e::browser::UNISSUED_PAIRING_CODE;
use tabwire_e2e::scenario::{CONNECT_LIMIT, POPUP, connected_browser, loaded_tab, popup_text};
use tabwire_e2e::{Browser, Fixtures, Hub, McpClient, eventually};
use tabwire_protocol::pairing::{self, KEY_LEN, MAC_LEN, NONCE_LEN, PairingCode, Secret};
use tabwire_protocol::{
    Challenge, ErrorCode, ExtensionMessage, Hello, HubMessage, HubProof, ListTabs,
    PROTOCOL_VERSION, Refusal, Request, Welcome,
};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// What the popup says when a hub at the URL fails to prove it holds the pairing key.
const NOT_THE_PAIRED_HUB: &str = "is not the hub this browser paired with";
/// What the popup says when a hub fails to prove it issued the pairing code.
const NOT_THE_ISSUING_HUB: &str = "could not prove it issued this pairing code";
/// What the popup says once the hub dropped a revoked browser.
const REVOKED: &str = "this browser's pairing was revoked";

/// A name no message to an unproven hub may carry.
const BAIT_NAME: &str = "Bait-Profile-Name";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fake_hub_holding_no_code_learns_nothing_and_runs_nothing() {
    let fake = FakeHub::listen("127.0.0.1:0".parse().unwrap(), Baits::Valid).await;
    let fixtures = Fixtures::serve().await;
    let url = format!("ws://{}/browser", fake.addr);
    let browser = Browser::launch_with_server(&url, BAIT_NAME, &fixtures.url("blank.html"));

    let popup = browser.open_tab(POPUP).await;
    let shown = popup_text(&popup, "the popup to name the impostor", |text| {
        text.contains(NOT_THE_ISSUING_HUB)
    })
    .await;
    assert!(shown.contains(&format!("the hub at {url}")), "{shown}");
    let browser_id = popup_browser_id(&popup).await;

    // Time for anything the extension might still send: nothing may come.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let code = PairingCode::parse(UNISSUED_PAIRING_CODE).unwrap();
    fake.assert_heard_only_challenges(
        true,
        &[
            &browser_id,
            BAIT_NAME,
            code.as_str(),
            &code.to_string(),
            "Chrome/",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fake_hub_in_place_of_the_paired_hub_learns_nothing_and_runs_nothing() {
    let fixtures = Fixtures::serve().await;
    let mut hub = Hub::spawn();
    let browser = Browser::launch(&hub, BAIT_NAME, &fixtures.url("blank.html"));
    let client = McpClient::connect(&hub).await;
    let browser_id = connected_browser(&client, BAIT_NAME).await;
    let popup = browser.open_tab(POPUP).await;
    popup_text(&popup, "the popup to show the connection", |text| {
        text.contains("Connected")
    })
    .await;

    // The hub goes away and another program takes its port; the extension redials it.
    hub.kill();
    let fake = FakeHub::listen(hub.http, Baits::Valid).await;
    let shown = popup_text(&popup, "the popup to name the impostor", |text| {
        text.contains(NOT_THE_PAIRED_HUB)
    })
    .await;
    assert!(
        shown.contains(&format!("the hub at {}", hub.browser_url())),
        "{shown}"
    );
    assert!(
        shown.contains("Nothing about this browser was sent"),
        "{shown}"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    // A paired browser challenges with its key (`pairing: false`), not with the used code.
    let heard =
        fake.assert_heard_only_challenges(false, &[&browser_id, BAIT_NAME, "Chrome/", "0.1."]);

    // The impostor replays the challenge it captured to the real hub, which answers it (it
    // cannot tell a replay from the browser), but a replay cannot answer the hub's fresh nonce.
    drop(fake);
    hub.restart();
    let mut replayer = FakeBrowser::connect(&hub).await;
    replayer.send_text(heard[0].clone()).await;
    assert!(
        matches!(replayer.next().await, Some(HubMessage::Proof(_))),
        "the real hub answers the browser's challenge"
    );
    let mut hello = replayer.hello(&browser_id, BAIT_NAME);
    hello.proof = Some(random_hex::<MAC_LEN>());
    replayer.send(&ExtensionMessage::Hello(hello)).await;
    let refusal = replayer.refusal().await;
    assert_eq!(refusal.code, ErrorCode::NotPaired, "{refusal:?}");
    assert!(
        refusal.message.contains("proof does not match"),
        "{refusal:?}"
    );
    let listed = client.call("list_browsers", json!({})).await;
    assert!(
        !is_connected(&listed, &browser_id),
        "the replayer got in: {}",
        listed.text
    );
}

/// A request the extension cannot read is answered (so the hub need not wait for its deadline)
/// only on a proven connection: a hub that has not proved itself gets no response at all, not
/// even an error naming the operations the extension knows. (Found by this test: the extension
/// used to answer it in every phase.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fake_hub_gets_no_answer_even_to_a_request_the_extension_cannot_read() {
    let fake = FakeHub::listen("127.0.0.1:0".parse().unwrap(), Baits::AlsoUnreadable).await;
    let fixtures = Fixtures::serve().await;
    let url = format!("ws://{}/browser", fake.addr);
    let browser = Browser::launch_with_server(&url, BAIT_NAME, &fixtures.url("blank.html"));
    let popup = browser.open_tab(POPUP).await;
    popup_text(&popup, "the popup to name the impostor", |text| {
        text.contains(NOT_THE_ISSUING_HUB)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    fake.assert_heard_only_challenges(true, &[BAIT_NAME]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fake_browser_without_a_key_is_refused() {
    let hub = Hub::spawn();
    let client = McpClient::connect(&hub).await;

    // No extension Origin: not even a WebSocket.
    let refused = tokio_tungstenite::connect_async(hub.browser_url()).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 403);
        }
        other => panic!("expected 403 without an extension Origin, got {other:?}"),
    }

    // An extension Origin, and a hello straight away (with a made-up proof, too).
    for proof in [None, Some(random_hex::<MAC_LEN>())] {
        let mut fake = FakeBrowser::connect(&hub).await;
        let mut hello = fake.hello("fake-browser", "Chrome");
        hello.proof = proof;
        fake.send(&ExtensionMessage::Hello(hello)).await;
        let refusal = fake.refusal().await;
        assert_eq!(refusal.code, ErrorCode::NotPaired, "{refusal:?}");
        assert!(
            refusal.message.contains("only paired browsers"),
            "{refusal:?}"
        );
    }

    // A challenge with a random tag, as a paired browser and as one pairing with a code.
    for (pairing, says) in [
        (false, "not paired with this hub"),
        (true, "does not know that pairing code"),
    ] {
        let mut fake = FakeBrowser::connect(&hub).await;
        let refusal = fake
            .send_challenge(random(), &random_hex::<MAC_LEN>(), pairing)
            .await
            .expect_err("a random tag names no secret of the hub");
        assert_eq!(refusal.code, ErrorCode::NotPaired, "{refusal:?}");
        assert!(refusal.message.contains(says), "{refusal:?}");
    }

    let listed = client.call("list_browsers", json!({})).await;
    assert_eq!(listed.data()["browsers"], json!([]), "{}", listed.text);
    assert_eq!(paired_lines(&hub), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fake_browser_cannot_take_over_a_paired_browser_id() {
    let fixtures = Fixtures::serve().await;
    let hub = Hub::spawn();
    let _browser = Browser::launch(&hub, "Work", &fixtures.url("blank.html"));
    let client = McpClient::connect(&hub).await;
    let real_id = connected_browser(&client, "Work").await;
    // Long enough on one connection that a replacement would show (its age starts again).
    let age_before = eventually("the connection to age", CONNECT_LIMIT, || async {
        connected_for(&client, &real_id)
            .await
            .filter(|secs| *secs >= 2)
    })
    .await;

    // A key nobody paired: refused at the challenge, before any hello.
    let mut fake = FakeBrowser::connect(&hub).await;
    let refusal = fake
        .challenge(Secret::Key(random::<KEY_LEN>()))
        .await
        .expect_err("an unknown key is refused");
    assert_eq!(refusal.code, ErrorCode::NotPaired, "{refusal:?}");
    // The real ID in a hello without a challenge.
    let mut fake = FakeBrowser::connect(&hub).await;
    let hello = fake.hello(&real_id, "Work");
    fake.send(&ExtensionMessage::Hello(hello)).await;
    assert_eq!(fake.refusal().await.code, ErrorCode::NotPaired);

    // A fake that legitimately holds a fresh code of this hub pairs, but not under the real
    // browser's ID.
    let code = PairingCode::parse(&hub.pair()).unwrap();
    let mut fake = FakeBrowser::connect(&hub).await;
    fake.challenge(Secret::Code(code.clone()))
        .await
        .expect("the hub knows the code it issued");
    let hello = fake.hello(&real_id, "Work");
    fake.send(&ExtensionMessage::Hello(hello)).await;
    let refusal = fake.refusal().await;
    assert_eq!(refusal.code, ErrorCode::Forbidden, "{refusal:?}");
    assert!(refusal.message.contains("paired already"), "{refusal:?}");
    assert!(
        refusal
            .message
            .contains(&format!("pair --revoke {real_id}")),
        "{refusal:?}"
    );
    // That attempt spent the code.
    let mut fake = FakeBrowser::connect(&hub).await;
    let refusal = fake
        .challenge(Secret::Code(code))
        .await
        .expect_err("a code works once");
    assert_eq!(refusal.code, ErrorCode::NotPaired, "{refusal:?}");

    // The real browser kept its connection and still works.
    let age_after = connected_for(&client, &real_id)
        .await
        .expect("the real browser is still connected");
    assert!(
        age_after >= age_before,
        "the real browser's connection was replaced ({age_before} s old before, {age_after} s after)"
    );
    let tabs = client
        .call("list_tabs", json!({"browserId": real_id}))
        .await;
    assert!(tabs.text.contains("blank.html"), "{}", tabs.text);
    let paired = paired_lines(&hub);
    assert_eq!(paired.len(), 1, "{paired:?}");
    assert!(paired[0].contains(&real_id), "{paired:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_and_malformed_hellos_are_refused_and_register_nothing() {
    let hub = Hub::spawn();
    let client = McpClient::connect(&hub).await;
    let before = client.call("list_browsers", json!({})).await.data().clone();

    let long = "9".repeat(10_000);
    let just_over = "9".repeat(65);
    let as_json = |hello: &Hello| serde_json::to_string(&ExtensionMessage::Hello(hello.clone()));
    type Spoil<'a> = Box<dyn Fn(Hello) -> String + 'a>;
    let cases: Vec<(&str, Spoil, &str)> = vec![
        (
            "an extensionVersion of 10,000 characters",
            Box::new(|mut hello| {
                hello.extension_version = long.clone();
                as_json(&hello).unwrap()
            }),
            "over 4096 bytes",
        ),
        (
            "a chromeVersion of 10,000 characters",
            Box::new(|mut hello| {
                hello.chrome_version = long.clone();
                as_json(&hello).unwrap()
            }),
            "over 4096 bytes",
        ),
        (
            "an extensionVersion of 65 characters",
            Box::new(|mut hello| {
                hello.extension_version = just_over.clone();
                as_json(&hello).unwrap()
            }),
            "extension version must be at most 64 characters",
        ),
        (
            "a chromeVersion of 65 characters",
            Box::new(|mut hello| {
                hello.chrome_version = just_over.clone();
                as_json(&hello).unwrap()
            }),
            "Chrome version must be at most 64 characters",
        ),
        (
            "a control character in the name",
            Box::new(|mut hello| {
                hello.browser_name = "Work\nhub: browser connected name=Bank".to_owned();
                as_json(&hello).unwrap()
            }),
            "browser name must be at most 64 characters without control characters",
        ),
        (
            "100 KB of JSON",
            Box::new(|hello| {
                // A valid hello, padded with whitespace: only its size is wrong.
                let mut text = as_json(&hello).unwrap();
                text.push_str(&" ".repeat(100 * 1024 - text.len()));
                text
            }),
            "the handshake message is over 4096 bytes, the most accepted",
        ),
        (
            "not JSON",
            Box::new(|_| "hello, hub: let me in".to_owned()),
            "hello is not JSON",
        ),
    ];
    for (what, spoil, says) in cases {
        // Each fake holds a fresh code of this hub and proves it, so only its hello is at fault.
        let code = PairingCode::parse(&hub.pair()).unwrap();
        let mut fake = FakeBrowser::connect(&hub).await;
        fake.challenge(Secret::Code(code))
            .await
            .expect("the hub knows the code it issued");
        let hello = fake.hello(&format!("fake-{}", random_hex::<4>()), "Fake");
        fake.send_text(spoil(hello)).await;
        let refusal = fake.refusal().await;
        assert_eq!(
            refusal.code,
            ErrorCode::InvalidArgument,
            "{what}: {refusal:?}"
        );
        assert!(refusal.message.contains(says), "{what}: {refusal:?}");
    }

    let after = client.call("list_browsers", json!({})).await;
    assert_eq!(after.data(), &before, "{}", after.text);
    assert_eq!(paired_lines(&hub), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_browser_is_dropped_at_once_and_stays_out() {
    let fixtures = Fixtures::serve().await;
    let hub = Hub::spawn();
    let browser = Browser::launch(&hub, "Work", &fixtures.url("blank.html"));
    let client = McpClient::connect(&hub).await;
    let browser_id = connected_browser(&client, "Work").await;
    loaded_tab(
        &client,
        json!({"browserId": browser_id}),
        &fixtures.url("blank.html"),
    )
    .await;
    let paired = paired_lines(&hub);
    assert_eq!(paired.len(), 1, "{paired:?}");
    assert!(
        paired[0].contains(&browser_id) && paired[0].contains("Work"),
        "{paired:?}"
    );

    let revoking = Instant::now();
    hub.pair_command(&["--revoke", &browser_id]);
    let revoked = Instant::now();
    eventually(
        "the revoked browser to be dropped",
        Duration::from_secs(5),
        || async {
            let listed = client.call("list_browsers", json!({})).await;
            (!is_connected(&listed, &browser_id)).then_some(())
        },
    )
    .await;
    let dropped = Instant::now();
    eprintln!(
        "revocation: `pair --revoke` ran in {:?}; list_browsers showed the browser disconnected \
         {:?} after it returned ({:?} from its start)",
        revoked - revoking,
        dropped - revoked,
        dropped - revoking
    );
    assert!(paired_lines(&hub).is_empty());

    let popup = browser.open_tab(POPUP).await;
    popup_text(&popup, "the popup to say the pairing was revoked", |text| {
        text.contains(REVOKED)
    })
    .await;
    let call = client
        .call("list_tabs", json!({"browserId": browser_id}))
        .await;
    assert_eq!(call.error_code(), "BROWSER_DISCONNECTED", "{}", call.text);

    // Pressing Connect makes the extension try again at once, with its revoked key: refused.
    let refusals = || {
        browser
            .log_lines()
            .iter()
            .filter(|line| line.contains("refused by the hub"))
            .count()
    };
    let refused_before = refusals();
    Browser::evaluate(&popup, "document.getElementById('connect').click()").await;
    eventually(
        "the extension to try its revoked key again and be refused",
        CONNECT_LIMIT,
        || async { (refusals() > refused_before).then_some(()) },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let listed = client.call("list_browsers", json!({})).await;
    assert!(
        !is_connected(&listed, &browser_id),
        "the revoked browser came back: {}",
        listed.text
    );
    let call = client
        .call("list_tabs", json!({"browserId": browser_id}))
        .await;
    assert_eq!(call.error_code(), "BROWSER_DISCONNECTED", "{}", call.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pairing_survives_a_hub_restart() {
    let fixtures = Fixtures::serve().await;
    let mut hub = Hub::spawn();
    let browser = Browser::launch(&hub, "Work", &fixtures.url("blank.html"));
    let client = McpClient::connect(&hub).await;
    let browser_id = connected_browser(&client, "Work").await;
    let before = pairings_file(&hub);
    assert_eq!(before["browsers"].as_array().unwrap().len(), 1, "{before}");
    assert_eq!(before["codes"], json!([]), "the code was used up: {before}");

    hub.restart();
    eventually("the browser to come back", CONNECT_LIMIT, || async {
        let listed = client.call("list_browsers", json!({})).await;
        is_connected(&listed, &browser_id).then_some(())
    })
    .await;
    let tabs = client
        .call("list_tabs", json!({"browserId": browser_id}))
        .await;
    assert!(tabs.text.contains("blank.html"), "{}", tabs.text);

    // The same pairing, not a new one; the extension paired once and came back with its key.
    assert_eq!(pairings_file(&hub), before);
    let paired = paired_lines(&hub);
    assert_eq!(paired.len(), 1, "{paired:?}");
    assert!(paired[0].contains(&browser_id), "{paired:?}");
    let pairings = browser
        .log_lines()
        .iter()
        .filter(|line| line.contains("paired with the hub at"))
        .count();
    assert_eq!(pairings, 1, "{:#?}", browser.log_lines());
}

/// The one human step: a browser configured with the hub's URL and no code says it is not
/// paired and dials nothing; a code from `tabwire-hub pair` typed into the popup, then Connect,
/// pairs it; the popup empties the field, never shows the code back and says it is paired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_pairs_by_pasting_a_code_into_the_popup() {
    let fixtures = Fixtures::serve().await;
    let hub = Hub::spawn();
    let config = json!({"serverUrl": hub.browser_url(), "browserName": "Pasted"});
    let browser = Browser::launch_with_config(config, "Pasted", &fixtures.url("blank.html"), &[]);
    let popup = browser.open_tab(POPUP).await;
    let waiting = popup_text(&popup, "the popup to say it is not paired", |text| {
        text.contains("Not paired")
    })
    .await;
    assert!(waiting.contains("tabwire-hub pair"), "{waiting}");
    let client = McpClient::connect(&hub).await;
    let listed = client.call("list_browsers", json!({})).await;
    assert!(
        listed.data()["browsers"].as_array().unwrap().is_empty(),
        "nothing dialled the hub: {}",
        listed.text
    );

    // Paste the code as a person would: with spaces around it, in lower case.
    let code = hub.pair();
    let typed = format!(
        "document.getElementById('pairingCode').value = {};\
         document.getElementById('connect').click(); true",
        json!(format!("  {}\n", code.to_lowercase()))
    );
    Browser::evaluate(&popup, &typed).await;
    connected_browser(&client, "Pasted").await;
    let paired = popup_text(&popup, "the popup to say it is paired", |text| {
        text.contains("Paired with the hub") && text.contains("Connected")
    })
    .await;
    assert!(!paired.contains(&code), "{paired}");
    let field = Browser::evaluate(&popup, "document.getElementById('pairingCode').value").await;
    assert_eq!(field, json!(""));
    let html = Browser::evaluate(&popup, "document.documentElement.outerHTML").await;
    assert!(
        !html.as_str().unwrap_or_default().contains(&code),
        "the popup shows the code"
    );
    assert_eq!(paired_lines(&hub).len(), 1);
}

/// The collector runs in pages as a content script of the extension. A page whose renderer was
/// taken over would run code there, so that context must reach neither `chrome.storage.local`
/// (the pairing key, an access token) nor the worker's popup requests (its state, or a new
/// Server URL). The attack runs exactly there: `chrome.scripting.executeScript` into the page's
/// isolated world, launched from the popup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_script_of_the_extension_cannot_read_the_key_or_drive_the_worker() {
    let fixtures = Fixtures::serve().await;
    let hub = Hub::spawn();
    let browser = Browser::launch(&hub, "Work", &fixtures.url("blank.html"));
    let client = McpClient::connect(&hub).await;
    connected_browser(&client, "Work").await;
    let popup = browser.open_tab(POPUP).await;
    // The extension page itself sees its key (saved just after the welcome): the attack below
    // is not failing for lack of one.
    eventually("the key to be saved", CONNECT_LIMIT, || async {
        let own = Browser::evaluate(
            &popup,
            "chrome.storage.local.get('pairingKey').then((items) => (items.pairingKey || '').length)",
        )
        .await;
        (own == json!(2 * KEY_LEN)).then_some(())
    })
    .await;

    let attack = r#"(async () => {
        const [tab] = await chrome.tabs.query({ url: '*://*/blank.html' });
        const [injected] = await chrome.scripting.executeScript({
            target: { tabId: tab.id },
            func: async () => {
                const out = {};
                try {
                    out.storage = JSON.stringify(await chrome.storage.local.get(null));
                } catch (error) {
                    out.storage = 'denied: ' + error.message;
                }
                try {
                    out.state = JSON.stringify(await chrome.runtime.sendMessage({ type: 'getState' }));
                } catch (error) {
                    out.state = 'refused: ' + error.message;
                }
                try {
                    out.connect = JSON.stringify(await chrome.runtime.sendMessage({
                        type: 'connect', serverUrl: 'ws://127.0.0.1:9/browser', browserName: 'Evil',
                    }));
                } catch (error) {
                    out.connect = 'refused: ' + error.message;
                }
                return out;
            },
        });
        return injected.result;
    })()"#;
    let result = Browser::evaluate(&popup, attack).await;
    let storage = result["storage"].as_str().unwrap_or_default();
    assert!(
        storage.starts_with("denied") && !storage.contains("pairingKey"),
        "a page script read the extension's storage: {result}"
    );
    for request in ["state", "connect"] {
        let answer = result[request].as_str().unwrap_or_default();
        assert!(
            !answer.contains("browserId") && !answer.contains("\"ok\":true"),
            "a page script got an answer to {request}: {result}"
        );
    }
    // Still connected to the same hub, under its own name.
    let listed = client.call("list_browsers", json!({})).await;
    assert_eq!(
        listed.data()["browsers"][0]["name"],
        "Work",
        "{}",
        listed.text
    );
    assert_eq!(
        listed.data()["browsers"][0]["connected"],
        true,
        "{}",
        listed.text
    );
}

// ---------------------------------------------------------------------------------------------
// Helpers

/// A stand-in for the hub on an address the extension dials. It records every message it is
/// sent; it answers each challenge with a proof of random bytes, and slips in what a real hub
/// sends only after the handshake: requests (before the challenge, before and after its proof)
/// and a welcome it never earned.
struct FakeHub {
    addr: SocketAddr,
    heard: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeHub {
    /// Listens on `addr`, waiting a few seconds for the port if a killed hub still holds it.
    async fn listen(addr: SocketAddr, baits: Baits) -> FakeHub {
        let listener = eventually("the port to be free", Duration::from_secs(10), || async {
            TcpListener::bind(addr).await.ok()
        })
        .await;
        let addr = listener.local_addr().unwrap();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let recorder = heard.clone();
        let task = tokio::spawn(async move {
            // Owned here, so the connections end with the server.
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                connections.spawn(fake_hub_connection(stream, recorder.clone(), baits));
            }
        });
        FakeHub { addr, heard, task }
    }

    /// Asserts that the fake heard only challenges (with `pairing` as given) and at least one:
    /// no hello, no response, no heartbeat echo, and none of `secrets` anywhere. Returns what it
    /// heard.
    fn assert_heard_only_challenges(&self, pairing: bool, secrets: &[&str]) -> Vec<String> {
        let heard = self.heard.lock().unwrap().clone();
        assert!(
            !heard.is_empty(),
            "the extension never dialled the fake hub"
        );
        for text in &heard {
            for secret in secrets {
                assert!(!text.contains(secret), "{secret:?} was sent: {text}");
            }
            for word in ["browserId", "hello", "response", "result", "error"] {
                assert!(!text.contains(word), "{word:?} was sent: {text}");
            }
            let value: Value = serde_json::from_str(text).expect("the extension sends JSON");
            let mut keys: Vec<&str> = value
                .as_object()
                .expect("a message is an object")
                .keys()
                .map(String::as_str)
                .collect();
            keys.sort();
            assert_eq!(
                keys,
                ["nonce", "pairing", "protocolVersion", "tag", "type"],
                "{text}"
            );
            let Ok(ExtensionMessage::Challenge(challenge)) = serde_json::from_value(value) else {
                panic!("not a challenge: {text}");
            };
            assert_eq!(challenge.protocol_version, PROTOCOL_VERSION);
            assert_eq!(challenge.pairing, pairing, "{text}");
        }
        eprintln!("the fake hub heard {} challenge(s): {heard:?}", heard.len());
        heard
    }
}

impl Drop for FakeHub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Which requests the fake hub slips in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Baits {
    /// Valid requests only (`list_tabs`).
    Valid,
    /// Also one the extension cannot read (an operation it does not know).
    AlsoUnreadable,
}

/// A request of an operation no extension knows.
const UNREADABLE_REQUEST: &str = r#"{"type":"request","id":99,"deadlineMs":1000,"tool":"list_tabs","op":{"group":"tabs","kind":"exfiltrate"}}"#;

/// One connection to the fake hub.
async fn fake_hub_connection(stream: TcpStream, heard: Arc<Mutex<Vec<String>>>, baits: Baits) {
    let Ok(mut socket) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    let _ = send_hub_message(&mut socket, &bait(1)).await;
    while let Some(Ok(message)) = socket.next().await {
        let text = match message {
            Message::Text(text) => text.to_string(),
            Message::Binary(bytes) => format!("<{} binary bytes>", bytes.len()),
            Message::Close(_) => break,
            _ => continue,
        };
        let is_challenge = text.contains(r#""type":"challenge""#);
        heard.lock().unwrap().push(text);
        if is_challenge {
            let welcome = HubMessage::Welcome(Welcome {
                protocol_version: PROTOCOL_VERSION,
                hub_version: "0.0.0-impostor".to_owned(),
                heartbeat_interval_ms: 15_000,
                policy: Default::default(),
            });
            let forged = HubMessage::Proof(HubProof {
                nonce: random_hex::<NONCE_LEN>(),
                proof: random_hex::<MAC_LEN>(),
            });
            if baits == Baits::AlsoUnreadable {
                let _ = socket.send(Message::Text(UNREADABLE_REQUEST.into())).await;
                // Time to answer it, before the forged proof ends the connection.
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            for message in [bait(2), welcome, bait(3), forged, bait(4)] {
                let _ = send_hub_message(&mut socket, &message).await;
            }
        }
    }
}

/// A valid request, as the real hub sends once a browser is welcomed: list the tabs.
fn bait(id: u64) -> HubMessage {
    HubMessage::Request(Request {
        id,
        tab_id: None,
        deadline_ms: 10_000,
        tool: "list_tabs".to_owned(),
        holder: None,
        viewer: None,
        op: ListTabs {}.into(),
    })
}

async fn send_hub_message(
    socket: &mut WebSocketStream<TcpStream>,
    message: &HubMessage,
) -> Result<(), tokio_tungstenite::tungstenite::Error> {
    let text = serde_json::to_string(message).unwrap();
    socket.send(Message::Text(text.into())).await
}

/// A program posing as a browser: a WebSocket client that sets an extension's `Origin`, as any
/// program can, and speaks the handshake with whatever secret it has.
struct FakeBrowser {
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    /// The secret and both nonces, once the hub proved it holds the secret.
    exchange: Option<(Secret, [u8; NONCE_LEN], [u8; NONCE_LEN])>,
}

/// An extension origin no tabwire build has.
const FAKE_ORIGIN: &str = "chrome-extension://abcdefghijklmnopabcdefghijklmnop";

/// How long the hub may take to answer a fake browser.
const ANSWER_LIMIT: Duration = Duration::from_secs(10);

impl FakeBrowser {
    async fn connect(hub: &Hub) -> FakeBrowser {
        let mut request = hub.browser_url().into_client_request().unwrap();
        request
            .headers_mut()
            .insert("Origin", HeaderValue::from_static(FAKE_ORIGIN));
        let (socket, _) = tokio_tungstenite::connect_async(request)
            .await
            .expect("the hub upgrades a connection with an extension Origin");
        FakeBrowser {
            socket,
            exchange: None,
        }
    }

    async fn send_text(&mut self, text: String) {
        self.socket.send(Message::Text(text.into())).await.unwrap();
    }

    async fn send(&mut self, message: &ExtensionMessage) {
        self.send_text(serde_json::to_string(message).unwrap())
            .await;
    }

    /// The hub's next message; `None` once it closed the connection.
    async fn next(&mut self) -> Option<HubMessage> {
        let read = async {
            loop {
                match self.socket.next().await {
                    Some(Ok(Message::Text(text))) => {
                        return Some(
                            serde_json::from_str(&text)
                                .unwrap_or_else(|e| panic!("unreadable {text}: {e}")),
                        );
                    }
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return None,
                    Some(Ok(_)) => continue,
                }
            }
        };
        tokio::time::timeout(ANSWER_LIMIT, read)
            .await
            .expect("the hub answers within 10 s")
    }

    /// The hub's refusal; asserts the hub then closed the connection.
    async fn refusal(&mut self) -> Refusal {
        match self.next().await {
            Some(HubMessage::Refused(refusal)) => {
                assert_eq!(
                    self.next().await,
                    None,
                    "the hub closes the connection after a refusal"
                );
                refusal
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    /// Sends a challenge as the extension does for `secret`; `Ok` once the hub proved it holds
    /// the same secret, else the hub's refusal.
    async fn challenge(&mut self, secret: Secret) -> Result<(), Refusal> {
        let nonce = random::<NONCE_LEN>();
        let tag = pairing::tag(&secret, &nonce);
        let is_code = matches!(secret, Secret::Code(_));
        let proof = self.send_challenge(nonce, &tag, is_code).await?;
        let hub_nonce = pairing::decode_nonce(&proof.nonce).expect("the hub's nonce is 32 bytes");
        assert!(
            pairing::hub_proof_matches(&secret, &nonce, &hub_nonce, &proof.proof),
            "the real hub proves it holds the secret"
        );
        self.exchange = Some((secret, nonce, hub_nonce));
        Ok(())
    }

    /// Sends a challenge with this nonce and tag; the hub's proof (its nonce and proof, hex)
    /// or its refusal.
    async fn send_challenge(
        &mut self,
        nonce: [u8; NONCE_LEN],
        tag: &str,
        pairing: bool,
    ) -> Result<HubProof, Refusal> {
        let challenge = Challenge {
            protocol_version: PROTOCOL_VERSION,
            nonce: pairing::encode_hex(&nonce),
            tag: tag.to_owned(),
            pairing,
        };
        self.send(&ExtensionMessage::Challenge(challenge)).await;
        match self.next().await {
            Some(HubMessage::Proof(proof)) => Ok(proof),
            Some(HubMessage::Refused(refusal)) => {
                assert_eq!(
                    self.next().await,
                    None,
                    "the hub closes the connection after a refusal"
                );
                Err(refusal)
            }
            other => panic!("expected a proof or a refusal, got {other:?}"),
        }
    }

    /// A well-formed hello, with the browser's proof once the exchange got that far.
    fn hello(&self, browser_id: &str, name: &str) -> Hello {
        Hello {
            browser_id: browser_id.to_owned(),
            browser_name: name.to_owned(),
            extension_version: "0.1.0".to_owned(),
            protocol_version: PROTOCOL_VERSION,
            chrome_version: "140.0.0.0".to_owned(),
            proof: self
                .exchange
                .as_ref()
                .map(|(secret, nb, nh)| pairing::browser_proof(secret, nb, nh)),
            managed_code: false,
        }
    }
}

/// Random bytes from the system.
fn random<const N: usize>() -> [u8; N] {
    use std::io::Read;
    let mut bytes = [0u8; N];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut file| file.read_exact(&mut bytes))
        .expect("read /dev/urandom");
    bytes
}

fn random_hex<const N: usize>() -> String {
    pairing::encode_hex(&random::<N>())
}

/// The browser ID the popup shows.
async fn popup_browser_id(popup: &str) -> String {
    eventually(
        "the popup to show the browser ID",
        CONNECT_LIMIT,
        || async {
            let id =
                Browser::evaluate(popup, "document.getElementById('browserId').textContent").await;
            id.as_str()
                .filter(|id| id.len() > 8 && !id.contains('…'))
                .map(str::to_owned)
        },
    )
    .await
}

/// Whether `list_browsers` shows `browser_id` connected.
fn is_connected(listed: &tabwire_e2e::Reply, browser_id: &str) -> bool {
    listed.data()["browsers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|b| b["browserId"] == browser_id && b["connected"] == true)
}

/// How long `browser_id`'s current connection has lasted, in seconds; `None` if it is not
/// connected.
async fn connected_for(client: &McpClient, browser_id: &str) -> Option<u64> {
    let listed = client.call("list_browsers", json!({})).await;
    listed.data()["browsers"]
        .as_array()?
        .iter()
        .find(|b| b["browserId"] == browser_id && b["connected"] == true)?["connectedForSecs"]
        .as_u64()
}

/// The pairing lines of `tabwire-hub pair --list` (its header left out).
fn paired_lines(hub: &Hub) -> Vec<String> {
    let listing = hub.pair_command(&["--list"]);
    let mut lines = listing.lines();
    let header = lines.next().unwrap_or_default();
    assert!(header.starts_with("KIND     ID"), "{listing}");
    lines.map(str::to_owned).collect()
}

/// The hub's `pairings.json`.
fn pairings_file(hub: &Hub) -> Value {
    let text = std::fs::read_to_string(hub.state_dir.join("pairings.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}
