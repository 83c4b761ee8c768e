//! The hub's edges, exercised against the real binaries without a browser: who may open
//! `/browser`, what an incompatible extension is told, and the shim with no hub to talk to.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tabwire_e2e::{Hub, artifacts::artifacts};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};

fn request(hub: &Hub, origin: Option<&str>) -> tungstenite::handshake::client::Request {
    let mut request = hub.browser_url().into_client_request().unwrap();
    if let Some(origin) = origin {
        request
            .headers_mut()
            .insert("Origin", origin.parse().unwrap());
    }
    request
}

fn status_of(result: Result<impl Sized, tungstenite::Error>) -> u16 {
    match result {
        Err(tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(other) => panic!("expected an HTTP refusal, got {other}"),
        Ok(_) => panic!("the WebSocket was accepted"),
    }
}

#[tokio::test]
async fn web_pages_cannot_open_the_browser_socket() {
    artifacts();
    let hub = Hub::spawn();
    for origin in [
        Some("https://evil.example"),
        Some("http://127.0.0.1:8000"),
        Some("null"),
        None,
    ] {
        let result = tokio_tungstenite::connect_async(request(&hub, origin)).await;
        assert_eq!(status_of(result), 403, "origin {origin:?} must be refused");
    }
}

#[tokio::test]
async fn an_incompatible_extension_is_refused_with_a_readable_reason() {
    artifacts();
    let hub = Hub::spawn();
    let origin = "chrome-extension://hjpjigandemmiglamagndeppmlncdhag";
    let (mut socket, _) = tokio_tungstenite::connect_async(request(&hub, Some(origin)))
        .await
        .expect("extension origins may connect");
    let hello = json!({
        "type": "hello", "browserId": "future-1", "browserName": "Future",
        "extensionVersion": "9.0.0", "protocolVersion": 99, "chromeVersion": "200",
        "someNewField": true
    });
    socket
        .send(Message::Text(hello.to_string().into()))
        .await
        .unwrap();
    let reply = tokio::time::timeout(Duration::from_secs(10), socket.next())
        .await
        .expect("the hub answers")
        .unwrap()
        .unwrap();
    let reply: Value = serde_json::from_str(reply.to_text().unwrap()).unwrap();
    assert_eq!(reply["type"], "refused");
    assert_eq!(reply["code"], "PROTOCOL_MISMATCH");
    let message = reply["message"].as_str().unwrap();
    assert!(message.contains("protocol 99"), "{message}");
    assert!(message.contains("update tabwire-hub"), "{message}");
    // And the connection is closed afterwards.
    let next = tokio::time::timeout(Duration::from_secs(10), socket.next())
        .await
        .expect("the hub closes the socket");
    assert!(matches!(
        next,
        None | Some(Ok(Message::Close(_))) | Some(Err(_))
    ));
}

#[tokio::test]
async fn shim_without_a_hub_exits_with_one_line() {
    let dir = tabwire_e2e::scratch::Scratch::new("nohub");
    let output = tokio::process::Command::new(&artifacts().shim)
        .arg("--socket")
        .arg(dir.path().join("missing.sock"))
        .args(["--wait", "1"])
        .stdin(std::process::Stdio::piped())
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    assert!(
        output.stdout.is_empty(),
        "stdout carries protocol bytes only"
    );
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("cannot reach tabwire-hub"), "{stderr}");
}
