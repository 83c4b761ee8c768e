//! `/device` under attack, over real WebSockets against the real router: a web page's origin,
//! pairings of the wrong kind on either endpoint, malformed and oversized hellos, tokens of the
//! wrong role; and a backend's devices registered, said gone and cut off mid-request.

use std::time::Duration;
use tabwire_protocol::Kind;

use serde_json::{Value, json};
use tabwire_protocol::devices::DeviceTap;
use tabwire_protocol::pairing::Secret;
use tabwire_protocol::refs::DeviceRef;
use tabwire_protocol::{DeviceHello, ErrorCode, HubMessage, PROTOCOL_VERSION};
use tokio_tungstenite::tungstenite;

use crate::auth::Role;
use crate::link_test_kit::*;
use crate::pairing::PairingKind;
use crate::peer::{Browser, Device};

fn hello(id: &str) -> DeviceHello {
    crate::mcp::device_hello(id, "Pixel 7")
}

fn hello_json(id: &str) -> Value {
    let mut value = serde_json::to_value(hello(id)).unwrap();
    value["type"] = json!("hello");
    value
}

#[tokio::test]
async fn a_web_page_cannot_open_device_at_all() {
    let served = local().await;
    for origin in ["https://evil.example", EXTENSION, "null"] {
        match served.open("/device", &[("origin", origin)]).await {
            Err(tungstenite::Error::Http(response)) => {
                assert_eq!(response.status(), 403, "{origin}")
            }
            other => panic!("{origin}: {:?}", other.map(|_| ())),
        }
    }
    assert!(served.devices("local").is_empty());
}

#[tokio::test]
async fn a_backend_pairs_once_and_its_key_registers_its_devices_only_on_device() {
    let served = local().await;
    let code = served.code(PairingKind::Device);
    let (_first, welcome, key) = exchange(
        &served,
        "/device",
        &[],
        &Secret::Code(code.clone()),
        hello_json("phone-1"),
    )
    .await;
    let HubMessage::Welcome(welcome) = welcome else {
        panic!("{welcome:?}");
    };
    // The operator's default: everything, but file URLs (which a device never opens anyway).
    assert_eq!(
        welcome.policy,
        tabwire_protocol::policy::Policy::default().denying_files()
    );
    let key = Secret::Key(key.unwrap());
    // The same key registers a second phone of the backend.
    let (_second, welcome, _) =
        exchange(&served, "/device", &[], &key, hello_json("phone-2")).await;
    assert!(matches!(welcome, HubMessage::Welcome(_)), "{welcome:?}");
    let mut devices = served.devices("local");
    devices.sort();
    assert_eq!(
        devices,
        vec![
            ("phone-1".into(), true, None),
            ("phone-2".into(), true, None)
        ]
    );
    let paired = crate::pairing::list(&served.dir.join("state")).unwrap();
    assert_eq!(paired.len(), 1);
    assert_eq!(paired[0].kind, PairingKind::Device);
    // The device key proves nothing on /browser, before the hub proves anything there.
    let refused = refused_at_challenge(&served, "/browser", &[("origin", EXTENSION)], &key).await;
    assert_eq!(refused.code, ErrorCode::Forbidden);
    assert!(
        refused.message.contains("a device's"),
        "{}",
        refused.message
    );
    assert!(
        served
            .state
            .accounts
            .local_account()
            .registry::<Browser>()
            .list()
            .is_empty()
    );
    // Nor does a browser's key (or code) on /device.
    let browser_code = served.code(PairingKind::Browser);
    let refused =
        refused_at_challenge(&served, "/device", &[], &Secret::Code(browser_code.clone())).await;
    assert_eq!(refused.code, ErrorCode::Forbidden);
    assert!(
        refused.message.contains("a browser's"),
        "{}",
        refused.message
    );
    let (_browser, welcome, browser_key) = exchange(
        &served,
        "/browser",
        &[("origin", EXTENSION)],
        &Secret::Code(browser_code),
        json!({"type": "hello", "browserId": "b1", "browserName": "Work",
               "extensionVersion": "0.1.0", "protocolVersion": PROTOCOL_VERSION,
               "chromeVersion": "156"}),
    )
    .await;
    assert!(matches!(welcome, HubMessage::Welcome(_)), "{welcome:?}");
    let refused =
        refused_at_challenge(&served, "/device", &[], &Secret::Key(browser_key.unwrap())).await;
    assert_eq!(refused.code, ErrorCode::Forbidden);
    assert_eq!(served.devices("local").len(), 2);
}

#[tokio::test]
async fn a_device_key_cannot_register_a_browser_id_even_with_a_hello_of_one() {
    let served = local().await;
    let code = served.code(PairingKind::Device);
    // A browser's hello on /device is not a device hello: refused, nothing registered.
    let (_ws, answer, _) = exchange(
        &served,
        "/device",
        &[],
        &Secret::Code(code),
        json!({"type": "hello", "browserId": "b1", "browserName": "Work",
               "extensionVersion": "0.1.0", "protocolVersion": PROTOCOL_VERSION,
               "chromeVersion": "156"}),
    )
    .await;
    let refused = refusal(answer);
    assert_eq!(refused.code, ErrorCode::InvalidArgument);
    assert!(served.devices("local").is_empty());
    assert!(
        served
            .state
            .accounts
            .local_account()
            .registry::<Browser>()
            .list()
            .is_empty()
    );
}

#[tokio::test]
async fn malformed_and_oversized_hellos_are_refused_and_register_nothing() {
    let served = hosted().await;
    let token = served.token("alice", Role::Peer(Kind::Device));
    let bearer = format!("Bearer {token}");
    let mut bad_id = hello_json("phone:1");
    bad_id["deviceId"] = json!("192.168.1.5:5555");
    let mut control = hello_json("p");
    control["model"] = json!("Pixel\u{1b}[31m");
    let mut big = hello_json("p");
    big["model"] = json!("x".repeat(5000));
    let mut extra = hello_json("p");
    extra["admin"] = json!(true);
    let mut zero = hello_json("p");
    zero["screen"] = json!({"width": 0, "height": 10});
    for (what, hello, code) in [
        ("a bad ID", bad_id, ErrorCode::InvalidArgument),
        ("control characters", control, ErrorCode::InvalidArgument),
        ("an oversized hello", big, ErrorCode::InvalidArgument),
        ("an unknown field", extra, ErrorCode::InvalidArgument),
        ("a zero screen", zero, ErrorCode::InvalidArgument),
        (
            "a response first",
            json!({"type": "heartbeat", "seq": 1}),
            ErrorCode::InvalidArgument,
        ),
    ] {
        let mut ws = served
            .open("/device", &[("authorization", &bearer)])
            .await
            .unwrap();
        say(&mut ws, hello).await;
        assert_eq!(refusal(hear(&mut ws).await).code, code, "{what}");
    }
    // A newer backend is told to update, not that it is malformed.
    let mut ws = served
        .open("/device", &[("authorization", &bearer)])
        .await
        .unwrap();
    let mut newer = hello_json("p");
    newer["protocolVersion"] = json!(PROTOCOL_VERSION + 1);
    newer["newField"] = json!(1);
    say(&mut ws, newer).await;
    assert_eq!(
        refusal(hear(&mut ws).await).code,
        ErrorCode::ProtocolMismatch
    );
    assert!(served.devices("alice").is_empty());
}

#[tokio::test]
async fn only_device_tokens_open_device_and_they_open_nothing_else() {
    let served = hosted().await;
    // No token: refused.
    let mut ws = served.open("/device", &[]).await.unwrap();
    assert_eq!(refusal(hear(&mut ws).await).code, ErrorCode::Unauthorized);
    for role in [Role::Peer(Kind::Browser), Role::Agent] {
        let token = served.token("alice", role);
        let mut ws = served
            .open("/device", &[("authorization", &format!("Bearer {token}"))])
            .await
            .unwrap();
        let refused = refusal(hear(&mut ws).await);
        assert_eq!(refused.code, ErrorCode::Forbidden, "{role}");
        assert!(
            refused.message.contains("a device needs a device token"),
            "{refused:?}"
        );
    }
    // A device token on /browser.
    let device = served.token("alice", Role::Peer(Kind::Device));
    let mut ws = served
        .open(
            "/browser",
            &[
                ("origin", EXTENSION),
                (
                    "sec-websocket-protocol",
                    &format!("tabwire, tabwire.bearer.{device}"),
                ),
            ],
        )
        .await
        .unwrap();
    let refused = refusal(hear(&mut ws).await);
    assert_eq!(refused.code, ErrorCode::Forbidden);
    assert!(
        refused.message.contains("this is a device token"),
        "{refused:?}"
    );
    // Through the subprotocol, as through the header, a device token registers its devices in
    // its own account.
    let mut ws = served
        .open(
            "/device",
            &[(
                "sec-websocket-protocol",
                &format!("tabwire, tabwire.bearer.{device}"),
            )],
        )
        .await
        .unwrap();
    say(&mut ws, hello_json("phone-1")).await;
    assert!(matches!(hear(&mut ws).await, HubMessage::Welcome(_)));
    assert_eq!(
        served.devices("alice"),
        vec![("phone-1".into(), true, None)]
    );
    assert!(served.devices("bob").is_empty());
    // Another account's backend with the same phone ID gets a device of its own; alice's
    // stays hers.
    let bobs = served.token("bob", Role::Peer(Kind::Device));
    let mut ws = served
        .open("/device", &[("authorization", &format!("Bearer {bobs}"))])
        .await
        .unwrap();
    say(&mut ws, hello_json("phone-1")).await;
    assert!(matches!(hear(&mut ws).await, HubMessage::Welcome(_)));
    assert_eq!(served.devices("bob"), vec![("phone-1".into(), true, None)]);
    assert_eq!(
        served.devices("alice"),
        vec![("phone-1".into(), true, None)]
    );
}

#[tokio::test]
async fn a_device_that_goes_away_fails_its_request_at_once_and_says_why() {
    let served = hosted().await;
    let token = served.token("alice", Role::Peer(Kind::Device));
    let mut ws = served
        .open("/device", &[("authorization", &format!("Bearer {token}"))])
        .await
        .unwrap();
    say(&mut ws, hello_json("phone-1")).await;
    assert!(matches!(hear(&mut ws).await, HubMessage::Welcome(_)));
    let connection = served
        .state
        .accounts
        .get("alice")
        .registry::<Device>()
        .connection("phone-1")
        .unwrap();
    let waiting = tokio::spawn(async move {
        let tap = DeviceTap {
            target: DeviceRef(3),
            observe: None,
        };
        connection
            .request(
                "device_tap",
                None,
                None,
                tap.into(),
                Duration::from_secs(60),
            )
            .await
    });
    let HubMessage::Request(request) = hear(&mut ws).await else {
        panic!("no request");
    };
    assert_eq!(request.tool, "device_tap");
    say(
        &mut ws,
        json!({"type": "gone", "reason": "unauthorized: accept the USB debugging prompt"}),
    )
    .await;
    ws.close(None).await.unwrap();
    let error = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("failed at once, not at its deadline")
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::DeviceDisconnected);
    assert!(
        error.action_may_have_occurred,
        "a cut-off tap may have landed"
    );
    assert_eq!(
        served.devices("alice"),
        vec![(
            "phone-1".into(),
            false,
            Some("unauthorized: accept the USB debugging prompt".into())
        )]
    );
}
