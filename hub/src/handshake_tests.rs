//! The peer endpoints before the welcome, under attack with hand-made frames: a first frame
//! that announces more than a handshake message, a message in small fragments, pings, silence,
//! and the handshake places held by silent sockets (a newcomer takes theirs); and a pairing code from a managed policy.
//! Each attack is refused by what the socket reads, not after the hub has read what the peer
//! announced (`peer_socket.rs`); after the welcome the normal limits apply.

use std::time::Duration;
use tabwire_protocol::Kind;

use futures_util::StreamExt;
use serde_json::json;
use tabwire_protocol::pairing::Secret;
use tabwire_protocol::{ErrorCode, HubMessage};
use tokio::io::AsyncWriteExt;
use tokio_tungstenite::tungstenite::Message;

use crate::auth::Role;
use crate::link_test_kit::*;
use crate::pairing::PairingKind;

/// A client frame's header (masked with a zero key, so the payload goes as written).
fn frame_header(fin: bool, opcode: u8, len: u64) -> Vec<u8> {
    let mut header = vec![if fin { 0x80 } else { 0 } | opcode];
    match len {
        0..=125 => header.push(0x80 | len as u8),
        126..=0xFFFF => {
            header.push(0x80 | 126);
            header.extend((len as u16).to_be_bytes());
        }
        _ => {
            header.push(0x80 | 127);
            header.extend(len.to_be_bytes());
        }
    }
    header.extend([0, 0, 0, 0]);
    header
}

/// Writes `bytes` under the WebSocket's framing, as a peer that frames by hand would.
async fn write_raw(ws: &mut Ws, bytes: &[u8]) {
    ws.get_mut().write_all(bytes).await.unwrap();
    ws.get_mut().flush().await.unwrap();
}

/// Every endpoint a stranger can reach before its welcome: the local hub's two (pairing
/// first) and a hosted hub's `/device` (token first).
async fn endpoints() -> Vec<(Served, &'static str, Vec<(&'static str, String)>)> {
    let hosted = hosted().await;
    let bearer = format!("Bearer {}", hosted.token("alice", Role::Peer(Kind::Device)));
    vec![
        (
            local().await,
            "/browser",
            vec![("origin", EXTENSION.to_owned())],
        ),
        (local().await, "/device", vec![]),
        (hosted, "/device", vec![("authorization", bearer)]),
    ]
}

async fn open(served: &Served, path: &str, headers: &[(&'static str, String)]) -> Ws {
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    served.open(path, &headers).await.unwrap()
}

/// The refusal a peer hears; the test fails if it is not one within `hear`'s 5 s, which is
/// shorter than the 10 s the whole handshake may take: the limit, not the clock, must end it.
async fn refused(ws: &mut Ws) -> tabwire_protocol::Refusal {
    refusal(hear(ws).await)
}

/// What a peer that sent too much hears: a refusal that says so, or, when the hub closed the
/// socket while bytes it did not read were still arriving, a reset before that refusal could
/// be read. Either way within `hear`'s 5 s; a hub that read on would instead wait for the rest
/// and refuse for the time (2 s to the first message, 10 s in all), saying so.
async fn assert_too_large(ws: &mut Ws, what: &str) {
    let next = loop {
        let next = tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .unwrap_or_else(|_| panic!("{what}: the hub is still reading"));
        match next {
            Some(Ok(Message::Text(text))) => break serde_json::from_str::<HubMessage>(&text).ok(),
            Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break None,
            Some(Ok(_)) => {}
        }
    };
    let Some(message) = next else {
        return;
    };
    let refusal = refusal(message);
    assert_eq!(refusal.code, ErrorCode::InvalidArgument, "{what}");
    assert!(
        refusal.message.contains("over 4096 bytes"),
        "{what}: {}",
        refusal.message
    );
}

#[tokio::test]
async fn a_first_frame_announcing_more_than_a_handshake_message_is_refused_unread() {
    for (served, path, headers) in endpoints().await {
        // 8 MiB announced (under tungstenite's own frame limit), 8 KiB sent, then nothing: a
        // hub that waited for the whole frame would still be waiting. Beyond that limit
        // (30 MiB) tungstenite refuses the header itself.
        for announced in [8 << 20, 30 << 20] {
            let mut ws = open(&served, path, &headers).await;
            let mut bytes = frame_header(true, 1, announced);
            bytes.extend(vec![b'x'; 8192]);
            write_raw(&mut ws, &bytes).await;
            assert_too_large(&mut ws, path).await;
        }
        // At the limit a message is read (and refused for what it says); one byte more is not.
        let mut ws = open(&served, path, &headers).await;
        let mut bytes = frame_header(true, 1, 4096);
        bytes.extend(vec![b' '; 4096]);
        write_raw(&mut ws, &bytes).await;
        let at_limit = refused(&mut ws).await;
        assert!(
            at_limit.message.contains("not JSON"),
            "{path}: {}",
            at_limit.message
        );
        let mut ws = open(&served, path, &headers).await;
        let mut bytes = frame_header(true, 1, 4097);
        bytes.extend(vec![b' '; 4097]);
        write_raw(&mut ws, &bytes).await;
        assert_too_large(&mut ws, path).await;
    }
}

#[tokio::test]
async fn a_message_in_small_fragments_is_refused_once_it_passes_the_limit() {
    for (served, path, headers) in endpoints().await {
        // Six 1 KiB fragments of a message that never ends (no final frame).
        let mut ws = open(&served, path, &headers).await;
        let mut bytes = Vec::new();
        for index in 0..6 {
            bytes.extend(frame_header(false, if index == 0 { 1 } else { 0 }, 1024));
            bytes.extend(vec![b'x'; 1024]);
        }
        write_raw(&mut ws, &bytes).await;
        assert_too_large(&mut ws, path).await;
    }
}

#[tokio::test]
async fn pings_count_towards_the_limit() {
    for (served, path, headers) in endpoints().await {
        let mut ws = open(&served, path, &headers).await;
        let mut bytes = Vec::new();
        for _ in 0..40 {
            bytes.extend(frame_header(true, 9, 125));
            bytes.extend(vec![b'p'; 125]);
        }
        write_raw(&mut ws, &bytes).await;
        assert_too_large(&mut ws, path).await;
    }
}

#[tokio::test]
async fn a_connection_that_says_nothing_is_closed_after_two_seconds() {
    for (served, path, headers) in endpoints().await {
        let mut ws = open(&served, path, &headers).await;
        let refusal = refused(&mut ws).await;
        assert_eq!(refusal.code, ErrorCode::InvalidArgument, "{path}");
        assert!(
            refusal.message.contains("within 2 seconds"),
            "{path}: {}",
            refusal.message
        );
    }
}

#[tokio::test]
async fn silent_sockets_give_their_handshake_places_to_newcomers_oldest_first() {
    let served = local().await;
    let mut holders = Vec::new();
    for _ in 0..8 {
        holders.push(served.open("/device", &[]).await.unwrap());
    }
    // Every place is held by a silent socket past its grace: a backend that comes now takes
    // the oldest one's place (that one is told the hub is busy), and is welcomed while the
    // others still wait.
    tokio::time::sleep(crate::handshake_places::GRACE + Duration::from_millis(100)).await;
    let code = served.code(PairingKind::Device);
    let mut hello = serde_json::to_value(crate::mcp::device_hello("phone-1", "Pixel 7")).unwrap();
    hello["type"] = json!("hello");
    let (_ws, welcome, _) = exchange(&served, "/device", &[], &Secret::Code(code), hello).await;
    assert!(matches!(welcome, HubMessage::Welcome(_)), "{welcome:?}");
    let evicted = refused(&mut holders[0]).await;
    assert_eq!(evicted.code, ErrorCode::LimitExceeded, "{evicted:?}");
    // The rest are closed for their silence after 2 s, not for the newcomer.
    for holder in &mut holders[1..] {
        let refusal = refused(holder).await;
        assert!(refusal.message.contains("within 2 seconds"), "{refusal:?}");
    }
}

#[tokio::test]
async fn connections_that_spoke_keep_their_places_and_a_newcomer_is_told_to_come_back() {
    let served = local().await;
    // Eight connections each sent a challenge with a real code and wait in the middle of the
    // exchange (a slow peer, not a silent one): none may be evicted.
    let mut speakers = Vec::new();
    for _ in 0..8 {
        let code = served.code(PairingKind::Device);
        let (mut ws, _) = challenge(&served, "/device", &[], &Secret::Code(code)).await;
        assert!(matches!(hear(&mut ws).await, HubMessage::Proof(_)));
        speakers.push(ws);
    }
    let code = served.code(PairingKind::Device);
    let busy = refused_at_challenge(&served, "/device", &[], &Secret::Code(code)).await;
    assert_eq!(busy.code, ErrorCode::LimitExceeded);
    // They are still in their exchange, each closed by its own 10 s deadline later.
    drop(speakers);
}

#[tokio::test]
async fn after_the_welcome_the_normal_limits_apply() {
    let served = local().await;
    let code = served.code(PairingKind::Device);
    let mut hello = serde_json::to_value(crate::mcp::device_hello("phone-1", "Pixel 7")).unwrap();
    hello["type"] = json!("hello");
    let (mut ws, welcome, _) = exchange(&served, "/device", &[], &Secret::Code(code), hello).await;
    assert!(matches!(welcome, HubMessage::Welcome(_)), "{welcome:?}");
    // A 100 KiB message is read whole: the hub keeps the first 200 characters of its reason.
    say(
        &mut ws,
        json!({"type": "gone", "reason": "r".repeat(100 * 1024)}),
    )
    .await;
    ws.close(None).await.unwrap();
    let mut waited = Duration::ZERO;
    let gone = loop {
        let devices = served.devices("local");
        if let [(_, false, gone)] = devices.as_slice() {
            break gone.clone();
        }
        assert!(waited < Duration::from_secs(5), "{devices:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += Duration::from_millis(50);
    };
    assert_eq!(gone.map(|reason| reason.len()), Some(200));
}

/// A browser hello, as JSON, saying whether its code came from a managed policy.
fn browser_hello(id: &str, managed_code: bool) -> serde_json::Value {
    let hello = tabwire_protocol::Hello {
        browser_id: id.to_owned(),
        browser_name: "Fleet".to_owned(),
        extension_version: "0.1.0".to_owned(),
        protocol_version: tabwire_protocol::PROTOCOL_VERSION,
        chrome_version: "156".to_owned(),
        proof: None,
        managed_code,
    };
    let mut value = serde_json::to_value(hello).unwrap();
    value["type"] = json!("hello");
    value
}

#[tokio::test]
async fn a_code_from_a_managed_policy_pairs_only_the_browser_it_was_made_for() {
    let served = local().await;
    let state = served.dir.join("state");
    let origin = [("origin", EXTENSION)];
    // Made for no one browser: refused after the hub's proof (so its words may be shown), and
    // closed, since other users may have read it in the policy's file.
    let unbound = served.code(PairingKind::Browser);
    let (_ws, answer, _) = exchange(
        &served,
        "/browser",
        &origin,
        &Secret::Code(unbound.clone()),
        browser_hello("fleet-1", true),
    )
    .await;
    let refused = refusal(answer);
    assert_eq!(refused.code, ErrorCode::Forbidden);
    assert!(
        refused
            .message
            .contains("tabwire-hub pair --browser-id fleet-1"),
        "{refused:?}"
    );
    let gone = refused_at_challenge(&served, "/browser", &origin, &Secret::Code(unbound)).await;
    assert_eq!(gone.code, ErrorCode::NotPaired, "the code was closed");
    // Made for fleet-1 and read by a thief, who tries it with an ID of its own to learn the
    // right one from the refusal, then comes back as fleet-1: the refusal names no ID, and the
    // code is closed at the first wrong ID (a real browser never presents one).
    let bound = crate::pairing::new_code_for(&state, TTL, "fleet-1").unwrap();
    let (_ws, answer, _) = exchange(
        &served,
        "/browser",
        &origin,
        &Secret::Code(bound.clone()),
        browser_hello("thief", true),
    )
    .await;
    let refused = refusal(answer);
    assert_eq!(refused.code, ErrorCode::Forbidden);
    assert!(!refused.message.contains("fleet-1"), "{refused:?}");
    let gone = refused_at_challenge(&served, "/browser", &origin, &Secret::Code(bound)).await;
    assert_eq!(
        gone.code,
        ErrorCode::NotPaired,
        "the leaked code was closed"
    );
    // A code made for fleet-1 and presented by fleet-1 pairs it.
    let bound = crate::pairing::new_code_for(&state, TTL, "fleet-1").unwrap();
    let (_ws, answer, _) = exchange(
        &served,
        "/browser",
        &origin,
        &Secret::Code(bound),
        browser_hello("fleet-1", true),
    )
    .await;
    assert!(matches!(answer, HubMessage::Welcome(_)), "{answer:?}");
}

#[tokio::test]
async fn a_used_code_tells_the_next_browser_which_pairing_took_it_and_not_its_id() {
    let served = local().await;
    let origin = [("origin", EXTENSION)];
    // A thief read an unbound code from the policy first, and said it was pasted.
    let code = served.code(PairingKind::Browser);
    let (_ws, answer, _) = exchange(
        &served,
        "/browser",
        &origin,
        &Secret::Code(code.clone()),
        browser_hello("thief-id", false),
    )
    .await;
    assert!(matches!(answer, HubMessage::Welcome(_)), "{answer:?}");
    let pairing_id = crate::pairing::list(&served.dir.join("state")).unwrap()[0]
        .pairing_id
        .clone();
    // The real browser comes with the same code: after the hub's proof (so its words are
    // shown), it is told the code was used and which pairing to revoke; the thief's ID is not
    // said.
    let (_ws, answer, _) = exchange(
        &served,
        "/browser",
        &origin,
        &Secret::Code(code),
        browser_hello("fleet-1", true),
    )
    .await;
    let refused = refusal(answer);
    assert_eq!(refused.code, ErrorCode::Forbidden);
    assert!(
        refused
            .message
            .contains(&format!("tabwire-hub pair --revoke {pairing_id}")),
        "{refused:?}"
    );
    assert!(!refused.message.contains("thief-id"), "{refused:?}");
}
