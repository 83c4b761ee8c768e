//! A local hub's handshake places under a local process that holds them (issue 23 §3): eight
//! sockets with an extension's Origin that say nothing, each opened again as soon as the hub
//! closes it for its silence. A real browser is turned away (`LIMIT_EXCEEDED`, before the hub
//! could prove itself) while they are held, tries again within seconds rather than after the
//! minute a refusal waits, and is connected soon after the places come free.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use tabwire_e2e::scenario::{CONNECT_LIMIT, connected_browser};
use tabwire_e2e::{Browser, Fixtures, Hub, McpClient, eventually};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

/// The extension's Origin, which anyone can send.
const ORIGIN: &str = "chrome-extension://hjpjigandemmiglamagndeppmlncdhag";

/// Holds one handshake place: opens a silent socket, and opens another as soon as the hub
/// closes it, until `stop`.
async fn hold(url: String, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Relaxed) {
        let mut request = url.as_str().into_client_request().unwrap();
        request
            .headers_mut()
            .insert("Origin", HeaderValue::from_static(ORIGIN));
        let Ok((mut socket, _)) = tokio_tungstenite::connect_async(request).await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        // Until the hub closes it (2 s of silence, or at once when no place was free).
        loop {
            tokio::select! {
                next = socket.next() => if !matches!(next, Some(Ok(_))) { break },
                () = tokio::time::sleep(Duration::from_millis(50)) => {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_holding_the_handshake_places_keeps_a_browser_out_only_while_it_does() {
    let fixtures = Fixtures::serve().await;
    let hub = Hub::spawn();
    let client = McpClient::connect(&hub).await;
    let stop = Arc::new(AtomicBool::new(false));
    let holders: Vec<_> = (0..8)
        .map(|_| tokio::spawn(hold(hub.browser_url(), stop.clone())))
        .collect();
    // Give the holders their places before the browser comes.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let browser = Browser::launch(&hub, "Held", &fixtures.url("blank.html"));
    eventually(
        "the browser to be turned away while the places are held",
        CONNECT_LIMIT,
        || async {
            browser
                .log_lines()
                .iter()
                .any(|line| {
                    line.contains("before proving itself") && line.contains("LIMIT_EXCEEDED")
                })
                .then_some(())
        },
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    for holder in holders {
        holder.await.unwrap();
    }
    // Well within the 60 s a refusal would have it wait: it was only told the hub was busy.
    connected_browser(&client, "Held").await;
    assert!(
        browser
            .log_lines()
            .iter()
            .any(|line| line.contains("retrying in")),
        "{:#?}",
        browser.log_lines()
    );
}
