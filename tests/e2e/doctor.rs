//! `tabwire-hub doctor` against a real hub: the problems it names and its exit codes — a hub
//! with no browser and an extension of another protocol version turned away (1), no hub at all
//! (2), and a paired browser connected (0).

use std::process::Output;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tabwire_e2e::scenario::OneBrowser;
use tabwire_e2e::{Hub, artifacts::artifacts};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// Runs `tabwire-hub doctor` on `hub`'s socket and state directory.
async fn doctor(hub: &Hub) -> (i32, String) {
    let Output { status, stdout, .. } = tokio::process::Command::new(&artifacts().hub)
        .arg("doctor")
        .arg("--socket")
        .arg(&hub.socket)
        .arg("--state-dir")
        .arg(&hub.state_dir)
        .output()
        .await
        .expect("run tabwire-hub doctor");
    let stdout = String::from_utf8(stdout).expect("utf-8");
    (status.code().expect("an exit code"), stdout)
}

/// An extension built for another protocol version says hello and is refused.
async fn incompatible_extension(hub: &Hub) {
    let mut request = hub.browser_url().into_client_request().unwrap();
    request.headers_mut().insert(
        "Origin",
        "chrome-extension://hjpjigandemmiglamagndeppmlncdhag"
            .parse()
            .unwrap(),
    );
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let hello = json!({
        "type": "hello", "browserId": "old-1", "browserName": "Old",
        "extensionVersion": "0.0.1", "protocolVersion": 1, "chromeVersion": "120",
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
    assert!(
        reply.to_text().unwrap().contains("PROTOCOL_MISMATCH"),
        "{reply}"
    );
}

#[tokio::test]
async fn doctor_names_what_is_missing_and_exits_by_it() {
    artifacts();
    let mut hub = Hub::spawn();
    let (code, out) = doctor(&hub).await;
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL browsers: no browser is connected"),
        "{out}"
    );
    assert!(
        out.contains("fix: pair one first: run `tabwire-hub pair`"),
        "{out}"
    );
    assert!(out.contains("ok   socket: "), "{out}");
    assert!(out.contains("ok   refused browsers"), "{out}");

    incompatible_extension(&hub).await;
    let (code, out) = doctor(&hub).await;
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL refused browsers: a browser was turned away")
            && out.contains("the extension speaks protocol 1, the hub speaks protocol"),
        "{out}"
    );
    assert!(
        out.contains("fix: run the browser's software and tabwire-hub from the same"),
        "{out}"
    );

    hub.kill();
    let (code, out) = doctor(&hub).await;
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("FAIL hub: the hub is not running"), "{out}");
    assert!(out.contains("fix: start it: tabwire-hub --socket"), "{out}");
    // What needs no hub is still checked.
    assert!(out.contains("ok   state directory: "), "{out}");
}

#[tokio::test]
async fn doctor_passes_with_a_paired_browser_connected() {
    let cast = OneBrowser::on("Doctor", "blank.html").await;
    let (code, out) = doctor(&cast.hub).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("No problem found."), "{out}");
    assert!(
        out.contains("ok   browsers: 1 connected: \"Doctor\" (extension "),
        "{out}"
    );
    assert!(
        out.contains("ok   pairing: 1 browser and 0 device backends paired"),
        "{out}"
    );
    assert!(
        out.contains("browser \"Doctor\" (") && out.contains("): connected; extension "),
        "{out}"
    );
    // The tool says the same to an agent, as structured data.
    let reply = cast.client.call("doctor", json!({})).await;
    let checks = reply.data()["checks"].as_array().unwrap();
    assert!(checks.iter().all(|check| check["ok"] == true), "{checks:?}");
}
