//! Simulated browsers: WebSocket clients of `/browser` that speak the extension's protocol (the
//! `protocol` crate's messages) with a hosted hub's handshake — a `browser` token in the
//! `tabwire.bearer.` subprotocol, the extension's Origin, a hello, the welcome — and then answer
//! every `ListTabs` request with a fixed tab list after a fixed delay, and echo heartbeats. The
//! soak's requests (snapshots, clicks, typing, waits: [`super::pages`]) are answered too, and a
//! `cancel` for a request still held is answered `CANCELLED` at once.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tabwire_protocol::{
    ExtensionMessage, Hello, HubMessage, OpResult, Operation, PROTOCOL_VERSION, TabInfo, TabList,
    TabsOp,
};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinHandle};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::pages::{self, Reply};
use crate::hosted::EXTENSION_ORIGIN;

/// How a simulated browser answers.
#[derive(Debug, Clone)]
pub struct Behaviour {
    /// How long it takes to answer a request.
    pub delay: Duration,
    /// The `result` of every answer, serialised once ([`answer_result`]).
    pub result: Arc<str>,
}

impl Behaviour {
    /// Answers after `delay` with a tab list of about `answer_bytes` bytes of JSON.
    pub fn new(delay: Duration, answer_bytes: usize) -> Behaviour {
        Behaviour {
            delay,
            result: answer_result(answer_bytes).into(),
        }
    }
}

/// The JSON of an [`OpResult`] answering `ListTabs` with at least `bytes` bytes: tabs of about
/// 200 bytes each (a title and a URL), as many as it takes, and at least one.
pub fn answer_result(bytes: usize) -> String {
    let tab = |n: u32| TabInfo {
        tab_id: n + 1,
        window_id: 1,
        active: n == 0,
        url: format!("https://load.example/page/{n}"),
        title: format!("Simulated tab {n} {}", "x".repeat(120)),
        status: "complete".to_owned(),
        blocked: false,
    };
    let serialised = |tabs: &[TabInfo]| {
        let result = OpResult::from(TabList {
            tabs: tabs.to_vec(),
        });
        serde_json::to_string(&result).expect("results serialise")
    };
    let mut tabs = vec![tab(0)];
    let mut text = serialised(&tabs);
    while text.len() < bytes {
        tabs.push(tab(tabs.len() as u32));
        text = serialised(&tabs);
    }
    text
}

/// The text of the extension's answer to request `id` with a serialised `result`: spliced
/// rather than serialised per answer, so the load generator spends its CPU on the hub, not on
/// itself. The test `the_spliced_answer_is_a_protocol_response` pins it to the protocol's shape.
fn answer(id: u64, result: &str) -> String {
    format!(r#"{{"type":"response","id":{id},"result":{result}}}"#)
}

/// What the simulated browsers saw, summed over all of them.
#[derive(Debug, Default)]
pub struct Counts {
    /// Requests answered.
    pub served: AtomicU64,
    /// Connections that ended while the run still wanted them.
    pub dropped: AtomicU64,
    /// Messages that were not what the extension expects (an unreadable message, a request for
    /// another operation, a `refused`).
    pub unexpected: AtomicU64,
    /// Cancels that found their request still held (and answered it `CANCELLED`).
    pub cancels: AtomicU64,
}

/// A browser welcomed by the hub, serving requests until [`Peer::stop`] (or drop).
pub struct Peer {
    task: JoinHandle<()>,
}

impl Peer {
    /// Ends the connection (the socket is dropped, as a killed browser's would be).
    pub fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Where and as whom a simulated browser connects.
pub struct Dial<'a> {
    /// The hub's HTTP address.
    pub addr: SocketAddr,
    /// The `Host` the hub's public origin names (`localhost:PORT`).
    pub host: &'a str,
    /// Its `browser` token.
    pub token: &'a str,
    /// Its browser ID.
    pub browser_id: &'a str,
}

/// Opens `/browser`, says hello and waits for the welcome; then serves in a task of its own.
pub async fn connect(
    dial: Dial<'_>,
    behaviour: Behaviour,
    counts: Arc<Counts>,
) -> Result<Peer, String> {
    let url = format!("ws://{}/browser", dial.addr);
    let mut request = url.into_client_request().map_err(|e| e.to_string())?;
    let headers = request.headers_mut();
    let header = |text: &str| text.parse().expect("a valid header value");
    headers.insert("Host", header(dial.host));
    headers.insert("Origin", header(EXTENSION_ORIGIN));
    headers.insert(
        "Sec-WebSocket-Protocol",
        header(&format!("tabwire, tabwire.bearer.{}", dial.token)),
    );
    let tcp = TcpStream::connect(dial.addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let _ = tcp.set_nodelay(true);
    // A browser's messages here are small: a small read buffer keeps a thousand of them cheap
    // in this process too.
    let config = WebSocketConfig::default().read_buffer_size(4096);
    let (mut socket, _) = tokio_tungstenite::client_async_with_config(request, tcp, Some(config))
        .await
        .map_err(|e| format!("WebSocket handshake: {e}"))?;
    let hello = ExtensionMessage::Hello(Hello {
        browser_id: dial.browser_id.to_owned(),
        browser_name: format!("Load {}", dial.browser_id),
        extension_version: "0.1.0".to_owned(),
        protocol_version: PROTOCOL_VERSION,
        chrome_version: "156".to_owned(),
        proof: None,
        managed_code: false,
    });
    let text = serde_json::to_string(&hello).expect("hello serialises");
    socket
        .send(Message::Text(text.into()))
        .await
        .map_err(|e| format!("send hello: {e}"))?;
    let welcomed = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match socket.next().await {
                Some(Ok(Message::Text(text))) => match serde_json::from_str::<HubMessage>(&text) {
                    Ok(HubMessage::Welcome(_)) => return Ok(()),
                    Ok(HubMessage::Refused(refusal)) => {
                        return Err(format!("refused: {} {}", refusal.code, refusal.message));
                    }
                    Ok(_) => continue,
                    Err(error) => return Err(format!("unreadable message: {error}")),
                },
                Some(Ok(_)) => continue,
                Some(Err(error)) => return Err(format!("socket: {error}")),
                None => return Err("closed before the welcome".to_owned()),
            }
        }
    })
    .await
    .map_err(|_| "no welcome within 30 s".to_owned())?;
    welcomed?;
    Ok(Peer {
        task: tokio::spawn(serve(socket, behaviour, counts)),
    })
}

type Socket = tokio_tungstenite::WebSocketStream<TcpStream>;

/// Answers requests and heartbeats until the socket ends.
async fn serve(socket: Socket, behaviour: Behaviour, counts: Arc<Counts>) {
    let (mut sink, mut stream) = socket.split();
    // Delayed answers come back here, with their request's ID, to go out on the one sink.
    let (delayed_tx, mut delayed) = mpsc::unbounded_channel::<(u64, String)>();
    // Requests held until their time is up, which a cancel answers early.
    let mut held: HashMap<u64, AbortHandle> = HashMap::new();
    loop {
        tokio::select! {
            next = stream.next() => {
                let text = match next {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                        counts.dropped.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    Some(Ok(_)) => continue,
                };
                let (id, reply) = match serde_json::from_str::<HubMessage>(&text) {
                    Ok(HubMessage::Request(request))
                        if matches!(request.op, Operation::Tabs(TabsOp::ListTabs(_))) =>
                    {
                        counts.served.fetch_add(1, Ordering::Relaxed);
                        (request.id, answer(request.id, &behaviour.result))
                    }
                    Ok(HubMessage::Request(request)) => match pages::reply(&request) {
                        Reply::Answer(text) => {
                            counts.served.fetch_add(1, Ordering::Relaxed);
                            (request.id, text)
                        }
                        Reply::Held { after, text } => {
                            counts.served.fetch_add(1, Ordering::Relaxed);
                            let delayed_tx = delayed_tx.clone();
                            let id = request.id;
                            let task = tokio::spawn(async move {
                                tokio::time::sleep(after).await;
                                let _ = delayed_tx.send((id, text));
                            });
                            held.insert(id, task.abort_handle());
                            continue;
                        }
                        Reply::Unknown(text) => {
                            counts.unexpected.fetch_add(1, Ordering::Relaxed);
                            (request.id, text)
                        }
                    },
                    Ok(HubMessage::Cancel { id }) => match held.remove(&id) {
                        Some(task) => {
                            task.abort();
                            counts.cancels.fetch_add(1, Ordering::Relaxed);
                            (id, pages::cancelled(id))
                        }
                        // A request already answered: the hub drops a late cancel's target.
                        None => continue,
                    },
                    Ok(HubMessage::Heartbeat { seq }) => {
                        let echo = ExtensionMessage::Heartbeat { seq };
                        let text = serde_json::to_string(&echo).expect("heartbeats serialise");
                        if sink.send(Message::Text(text.into())).await.is_err() {
                            counts.dropped.fetch_add(1, Ordering::Relaxed);
                            return;
                        }
                        continue;
                    }
                    // A cancelled request that is not held is answered anyway: the hub drops an
                    // answer it no longer waits for.
                    Ok(HubMessage::Policy(_) | HubMessage::SessionEnded { .. }) => continue,
                    Ok(_) | Err(_) => {
                        counts.unexpected.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                };
                if behaviour.delay.is_zero() {
                    if sink.send(Message::Text(reply.into())).await.is_err() {
                        counts.dropped.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                } else {
                    let delayed_tx = delayed_tx.clone();
                    let delay = behaviour.delay;
                    tokio::spawn(async move {
                        tokio::time::sleep(delay).await;
                        let _ = delayed_tx.send((id, reply));
                    });
                }
            }
            Some((id, reply)) = delayed.recv() => {
                held.remove(&id);
                if sink.send(Message::Text(reply.into())).await.is_err() {
                    counts.dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spliced_answer_is_a_protocol_response() {
        let result = answer_result(1000);
        assert!(result.len() >= 1000, "{}", result.len());
        let parsed: ExtensionMessage = serde_json::from_str(&answer(7, &result)).unwrap();
        let ExtensionMessage::Response(response) = parsed else {
            panic!("not a response: {parsed:?}");
        };
        assert_eq!(response.id, 7);
        let list = TabList::try_from(response.into_outcome().unwrap()).unwrap();
        assert!(list.tabs.len() > 1);
    }

    #[test]
    fn a_small_answer_is_one_tab() {
        let result: OpResult = serde_json::from_str(&answer_result(0)).unwrap();
        assert_eq!(TabList::try_from(result).unwrap().tabs.len(), 1);
    }
}
