//! The connection against an in-test WebSocket server playing the hub: an impostor that
//! cannot prove itself, a real pairing and a paired reconnect, a hosted hub's token, the
//! requests and heartbeats of a live connection, a silent hub, and a device that goes.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use tabwire_protocol::devices::{DeviceOp, ReleaseDevice};
use tabwire_protocol::pairing::{KEY_LEN, PairingCode};
use tabwire_protocol::{HubProof, Welcome};
use tokio::net::TcpListener;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::server::{
    Request as HttpRequest, Response as HttpResponse,
};

use super::*;
use crate::keys::{CodeSource, KeyStore};
use crate::queue::{Forgets, Queue, unless_cancelled};
use crate::safety::Safety;
use tabwire_protocol::devices::{DeviceReleased, Platform, ScreenSize};

/// A device served by the link, with nothing behind it but its queue and its leases: the
/// link never needs more.
struct Still {
    safety: Safety,
    queue: Queue<Nothing>,
    through: String,
}

#[derive(Default)]
struct Nothing;

impl Forgets for Nothing {
    fn forget(&mut self, _session: &str) {}
}

impl Served for Still {
    async fn execute_unless(
        &self,
        op: DeviceOp,
        holder: Option<LeaseHolder>,
        _viewer: &str,
        deadline: Duration,
        cancel: &Cancel,
    ) -> Result<DeviceResult, OpError> {
        let _turn = self.queue.turn(Instant::now() + deadline, cancel).await?;
        unless_cancelled(
            async {
                match op {
                    DeviceOp::Release(_) => Ok(DeviceResult::Released(DeviceReleased {
                        released: self.safety.release(holder.as_ref())?,
                    })),
                    _ => Err(OpError::new(ErrorCode::DeviceError, "not in this test")),
                }
            },
            cancel,
        )
        .await
    }

    fn session_ended(&self, session: &str) {
        self.safety.session_ended(session);
        self.queue.session_ended(session);
    }

    fn set_operator_policy(&self, policy: Policy) {
        self.safety.set_operator_policy(policy);
    }

    fn reached_through(&self) -> &str {
        &self.through
    }
}

fn still(through: &str) -> Arc<Still> {
    Arc::new(Still {
        safety: Safety::new(None),
        queue: Queue::new(Nothing),
        through: through.into(),
    })
}

fn device() -> Arc<Still> {
    still("emulator-5554")
}

fn hello() -> DeviceHello {
    DeviceHello {
        device_id: "android-R58M12ABCDE".into(),
        device_name: "Pixel 7".into(),
        platform: Platform::Android,
        model: "Google Pixel 7".into(),
        os_version: "14 (API 34)".into(),
        screen: ScreenSize {
            width: 1080,
            height: 2400,
        },
        backend_version: "test".into(),
        protocol_version: PROTOCOL_VERSION,
        proof: None,
    }
}

fn temp_dir() -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "tabwire-device-link-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A hub played by the test: a listener, and the connections it accepts.
struct FakeHub {
    listener: TcpListener,
    url: String,
}

type ServerSocket = WebSocketStream<tokio::net::TcpStream>;

impl FakeHub {
    async fn start() -> FakeHub {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}/device", listener.local_addr().unwrap());
        FakeHub { listener, url }
    }

    /// The next connection, with the `Authorization` header it carried.
    // The callback's error type is tungstenite's; its size is not ours to choose.
    #[allow(clippy::result_large_err)]
    async fn accept(&self) -> (ServerSocket, Option<String>) {
        let (stream, _) = within(self.listener.accept()).await.unwrap();
        let mut authorization = None;
        let socket = tokio_tungstenite::accept_hdr_async(
            stream,
            |request: &HttpRequest, response: HttpResponse| {
                authorization = request
                    .headers()
                    .get("authorization")
                    .map(|value| value.to_str().unwrap().to_owned());
                Ok(response)
            },
        )
        .await
        .unwrap();
        (socket, authorization)
    }
}

/// Bounds a wait so a broken test fails instead of hanging (not a timing assertion).
async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("the test waited 20 s for something that should have happened")
}

/// The next message from the backend; `None` when it closed without sending one.
async fn receive(socket: &mut ServerSocket) -> Option<DeviceMessage> {
    loop {
        match within(socket.next()).await {
            None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return None,
            Some(Ok(Message::Text(text))) => return Some(serde_json::from_str(&text).unwrap()),
            Some(Ok(_)) => {}
        }
    }
}

async fn send(socket: &mut ServerSocket, message: &HubMessage) {
    socket
        .send(Message::text(serde_json::to_string(message).unwrap()))
        .await
        .unwrap();
}

fn welcome(heartbeat_interval_ms: u64) -> HubMessage {
    HubMessage::Welcome(Welcome {
        protocol_version: PROTOCOL_VERSION,
        hub_version: "test".into(),
        heartbeat_interval_ms,
        policy: Policy::default(),
    })
}

/// A link to `hub` with `credentials`, and its control.
fn link(
    url: &str,
    token: Option<&str>,
    credentials: Option<Arc<Credentials>>,
) -> (DeviceLink<Still>, watch::Sender<Control<Still>>) {
    let (control, receiver) = watch::channel(Control::Serve(device()));
    let hello = hello();
    let link = DeviceLink {
        // The fake hosted hub listens on plain ws:// on loopback: a token goes there by choice.
        endpoint: Arc::new(HubEndpoint::new(url, token.map(str::to_owned), None, true).unwrap()),
        credentials,
        hello,
        control: receiver,
    };
    (link, control)
}

/// The pairing exchange as a hub that holds `secret` plays it; returns the nonces and the
/// hello.
async fn prove(
    socket: &mut ServerSocket,
    secret: &Secret,
) -> ([u8; NONCE_LEN], [u8; NONCE_LEN], DeviceHello) {
    let Some(DeviceMessage::Challenge(challenge)) = receive(socket).await else {
        panic!("a local hub is first sent a challenge");
    };
    let browser_nonce = pairing::decode_nonce(&challenge.nonce).unwrap();
    assert!(pairing::tag_matches(secret, &browser_nonce, &challenge.tag));
    assert_eq!(challenge.pairing, matches!(secret, Secret::Code(_)));
    let hub_nonce = [0x42; NONCE_LEN];
    send(
        socket,
        &HubMessage::Proof(HubProof {
            nonce: pairing::encode_hex(&hub_nonce),
            proof: pairing::hub_proof(secret, &browser_nonce, &hub_nonce),
        }),
    )
    .await;
    let Some(DeviceMessage::Hello(hello)) = receive(socket).await else {
        panic!("a hub that proved itself is sent a hello");
    };
    let proof = hello.proof.as_deref().expect("the hello carries a proof");
    assert!(pairing::browser_proof_matches(
        secret,
        &browser_nonce,
        &hub_nonce,
        proof
    ));
    (browser_nonce, hub_nonce, hello)
}

fn keyed(dir: &std::path::Path, url: &str, key: [u8; KEY_LEN]) -> Arc<Credentials> {
    let store = KeyStore::open(dir).unwrap();
    store.save(url, &key).unwrap();
    Credentials::new(
        store,
        url,
        CodeSource::Nothing("no code in this test".into()),
    )
    .unwrap()
}

#[tokio::test]
async fn a_hub_that_cannot_prove_itself_gets_no_hello() {
    let hub = FakeHub::start().await;
    let dir = temp_dir();
    let key = [7; KEY_LEN];
    let (link, control) = link(&hub.url, None, Some(keyed(&dir, &hub.url, key)));
    let running = tokio::spawn(link.run());

    let (mut socket, authorization) = hub.accept().await;
    assert_eq!(authorization, None, "a local hub is never sent a token");
    let Some(DeviceMessage::Challenge(challenge)) = receive(&mut socket).await else {
        panic!("expected a challenge");
    };
    // The impostor does not hold the key: it answers with a proof under another secret.
    let browser_nonce = pairing::decode_nonce(&challenge.nonce).unwrap();
    let hub_nonce = [1; NONCE_LEN];
    let guess = Secret::Key([8; KEY_LEN]);
    send(
        &mut socket,
        &HubMessage::Proof(HubProof {
            nonce: pairing::encode_hex(&hub_nonce),
            proof: pairing::hub_proof(&guess, &browser_nonce, &hub_nonce),
        }),
    )
    .await;
    // Nothing more: no hello, no device name; the connection closes.
    assert_eq!(receive(&mut socket).await, None);

    control.send_replace(Control::Stop("backend stopped".into()));
    within(running).await.unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_paired_hub_gets_a_proved_hello_and_the_device_is_served() {
    let hub = FakeHub::start().await;
    let dir = temp_dir();
    let key = [7; KEY_LEN];
    let (link, control) = link(&hub.url, None, Some(keyed(&dir, &hub.url, key)));
    let running = tokio::spawn(link.run());

    let (mut socket, _) = hub.accept().await;
    let (_, _, hello) = prove(&mut socket, &Secret::Key(key)).await;
    assert_eq!(hello.device_id, "android-R58M12ABCDE");
    assert_eq!(hello.device_name, "Pixel 7");
    send(&mut socket, &welcome(15_000)).await;

    // A heartbeat is echoed.
    send(&mut socket, &HubMessage::Heartbeat { seq: 4 }).await;
    assert_eq!(
        receive(&mut socket).await,
        Some(DeviceMessage::Heartbeat { seq: 4 })
    );
    // A browser operation is refused, by id.
    send(
        &mut socket,
        &HubMessage::Request(Request {
            id: 9,
            tab_id: None,
            deadline_ms: 5_000,
            tool: "list_tabs".into(),
            holder: None,
            viewer: None,
            op: Operation::Tabs(tabwire_protocol::tabs::TabsOp::ListTabs(
                tabwire_protocol::tabs::ListTabs {},
            )),
        }),
    )
    .await;
    let Some(DeviceMessage::Response(response)) = receive(&mut socket).await else {
        panic!("expected a response");
    };
    assert_eq!(response.id, 9);
    let error = response.into_outcome().unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidArgument);
    assert!(error.message.contains("only device operations"));
    // A device operation is run by the device and answered with the same id.
    send(
        &mut socket,
        &HubMessage::Request(Request {
            id: 10,
            tab_id: None,
            deadline_ms: 5_000,
            tool: "release_device".into(),
            holder: None,
            viewer: None,
            op: Operation::Device(DeviceOp::Release(ReleaseDevice {})),
        }),
    )
    .await;
    let Some(DeviceMessage::Response(response)) = receive(&mut socket).await else {
        panic!("expected a response");
    };
    assert_eq!(response.id, 10);
    // A request the backend cannot read is still answered, by its id.
    socket
        .send(Message::text(
            r#"{"type":"request","id":11,"deadlineMs":1000,"tool":"x","op":{"group":"nope"}}"#,
        ))
        .await
        .unwrap();
    let Some(DeviceMessage::Response(response)) = receive(&mut socket).await else {
        panic!("expected a response");
    };
    assert_eq!(response.id, 11);
    assert_eq!(
        response.into_outcome().unwrap_err().code,
        ErrorCode::InvalidArgument
    );

    // The device goes: the hub is told why, and the connection closes.
    control.send_replace(Control::Stop(
        "unauthorized: accept the USB debugging prompt on the phone".into(),
    ));
    assert_eq!(
        receive(&mut socket).await,
        Some(DeviceMessage::Gone {
            reason: "unauthorized: accept the USB debugging prompt on the phone".into()
        })
    );
    assert_eq!(receive(&mut socket).await, None);
    within(running).await.unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn pairing_with_a_code_keeps_the_derived_key_for_the_next_connection() {
    let hub = FakeHub::start().await;
    let dir = temp_dir();
    let store = KeyStore::open(&dir).unwrap();
    let code = PairingCode::from_random([9; pairing::CODE_RANDOM_BYTES]);
    let credentials =
        Credentials::new(store.clone(), &hub.url, CodeSource::Given(code.clone())).unwrap();
    let (link, control) = link(&hub.url, None, Some(credentials));
    let running = tokio::spawn(link.run());

    let (mut socket, _) = hub.accept().await;
    let (browser_nonce, hub_nonce, _) = prove(&mut socket, &Secret::Code(code.clone())).await;
    send(&mut socket, &welcome(15_000)).await;
    let key = pairing::derive_key(&code, &browser_nonce, &hub_nonce);
    // The key is saved once the welcome is in; the hub then drops the connection.
    send(&mut socket, &HubMessage::Heartbeat { seq: 1 }).await;
    assert_eq!(
        receive(&mut socket).await,
        Some(DeviceMessage::Heartbeat { seq: 1 })
    );
    assert_eq!(store.load(&hub.url).unwrap(), Some(key));
    drop(socket);

    // The next connection proves itself with the key, not the code.
    let (mut socket, _) = hub.accept().await;
    prove(&mut socket, &Secret::Key(key)).await;
    send(&mut socket, &welcome(15_000)).await;

    control.send_replace(Control::Stop("backend stopped".into()));
    assert_eq!(
        receive(&mut socket).await,
        Some(DeviceMessage::Gone {
            reason: "backend stopped".into()
        })
    );
    within(running).await.unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_hosted_hub_is_sent_the_token_and_a_hello_first() {
    let hub = FakeHub::start().await;
    let (link, control) = link(&hub.url, Some("tok-123"), None);
    let running = tokio::spawn(link.run());
    let (mut socket, authorization) = hub.accept().await;
    assert_eq!(authorization.as_deref(), Some("Bearer tok-123"));
    let Some(DeviceMessage::Hello(hello)) = receive(&mut socket).await else {
        panic!("a hosted hub is first sent the hello");
    };
    assert_eq!(hello.proof, None);
    // Refused: logged and retried later, not in a tight loop (the test stops it first).
    send(
        &mut socket,
        &HubMessage::Refused(Refusal {
            code: ErrorCode::Unauthorized,
            message: "no".into(),
        }),
    )
    .await;
    assert_eq!(receive(&mut socket).await, None);
    control.send_replace(Control::Stop("backend stopped".into()));
    within(running).await.unwrap();
}

/// Review finding 5: a phone that moves to another adb transport is announced again on a fresh
/// connection, never swapped under the agent on the open one.
#[tokio::test]
async fn a_move_to_another_transport_is_a_fresh_connection() {
    let hub = FakeHub::start().await;
    let (link, control) = link(&hub.url, Some("tok-123"), None);
    let running = tokio::spawn(link.run());
    let (mut socket, _) = hub.accept().await;
    let Some(DeviceMessage::Hello(first)) = receive(&mut socket).await else {
        panic!("a hosted hub is first sent the hello");
    };
    send(&mut socket, &welcome(15_000)).await;
    // A heartbeat answered: the connection is past its welcome and serving.
    send(&mut socket, &HubMessage::Heartbeat { seq: 1 }).await;
    assert_eq!(
        receive(&mut socket).await,
        Some(DeviceMessage::Heartbeat { seq: 1 })
    );
    let moved = still("192.168.1.5:5555");
    control.send_replace(Control::Serve(moved));
    // The open connection closes without a word about the device going...
    assert_eq!(receive(&mut socket).await, None);
    // ...and a new one says hello again.
    let (mut again, _) = hub.accept().await;
    let Some(DeviceMessage::Hello(hello)) = receive(&mut again).await else {
        panic!("the moved device is announced again");
    };
    assert_eq!(hello.device_id, first.device_id);
    send(&mut again, &welcome(15_000)).await;
    control.send_replace(Control::Stop("backend stopped".into()));
    assert!(matches!(
        receive(&mut again).await,
        Some(DeviceMessage::Gone { .. })
    ));
    within(running).await.unwrap();
}

#[tokio::test]
async fn a_silent_hub_is_given_up_and_dialled_again() {
    let hub = FakeHub::start().await;
    let dir = temp_dir();
    let key = [3; KEY_LEN];
    let (link, control) = link(&hub.url, None, Some(keyed(&dir, &hub.url, key)));
    let running = tokio::spawn(link.run());
    let (mut socket, _) = hub.accept().await;
    prove(&mut socket, &Secret::Key(key)).await;
    // Heartbeats every 100 ms promised, then silence: the backend closes and comes back.
    send(&mut socket, &welcome(100)).await;
    assert_eq!(receive(&mut socket).await, None);
    let (mut again, _) = hub.accept().await;
    prove(&mut again, &Secret::Key(key)).await;
    send(&mut again, &welcome(15_000)).await;
    control.send_replace(Control::Stop("backend stopped".into()));
    assert_eq!(
        receive(&mut again).await,
        Some(DeviceMessage::Gone {
            reason: "backend stopped".into()
        })
    );
    within(running).await.unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_not_paired_answer_to_the_key_is_logged_and_the_key_kept() {
    let hub = FakeHub::start().await;
    let dir = temp_dir();
    let key = [5; KEY_LEN];
    let credentials = keyed(&dir, &hub.url, key);
    let (link, control) = link(&hub.url, None, Some(credentials.clone()));
    let running = tokio::spawn(link.run());
    let (mut socket, _) = hub.accept().await;
    let Some(DeviceMessage::Challenge(_)) = receive(&mut socket).await else {
        panic!("expected a challenge");
    };
    send(
        &mut socket,
        &HubMessage::Refused(Refusal {
            code: ErrorCode::NotPaired,
            message: "who are you".into(),
        }),
    )
    .await;
    assert_eq!(receive(&mut socket).await, None);
    assert!(credentials.has_key());
    assert_eq!(
        KeyStore::open(&dir).unwrap().load(&hub.url).unwrap(),
        Some(key)
    );
    control.send_replace(Control::Stop("backend stopped".into()));
    within(running).await.unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_busy_local_hub_is_tried_again_within_seconds_and_a_hosted_one_later() {
    // LIMIT_EXCEEDED before the hub's proof: its handshake places were taken.
    let hub = FakeHub::start().await;
    let dir = temp_dir();
    let credentials = keyed(&dir, &hub.url, [5; KEY_LEN]);
    let (mut local, _control) = link(&hub.url, None, Some(credentials));
    let busy = Refusal {
        code: ErrorCode::LimitExceeded,
        message: "too many connections starting at once".into(),
    };
    let serve = async {
        let (mut socket, _) = hub.accept().await;
        let Some(DeviceMessage::Challenge(_)) = receive(&mut socket).await else {
            panic!("expected a challenge");
        };
        send(&mut socket, &HubMessage::Refused(busy.clone())).await;
    };
    let mut lost = Backoff::new(LOST_BACKOFF);
    let mut refused = Backoff::new(REFUSED_BACKOFF);
    let (ended, ()) = tokio::join!(local.connection(&mut lost, &mut refused), serve);
    let Ended::Busy(reason) = ended else {
        panic!("{ended:?}");
    };
    assert!(reason.contains("LIMIT_EXCEEDED"), "{reason}");
    // The hub's own words are not repeated: it had not proved itself.
    assert!(!reason.contains("too many connections"), "{reason}");
    // A hosted hub's LIMIT_EXCEEDED comes from a hub its TLS vouches for, after the hello, and
    // says the account has as many devices as it may: the long wait stays.
    let hosted = FakeHub::start().await;
    let (mut remote, _control) = link(&hosted.url, Some("t0k"), None);
    let serve = async {
        let (mut socket, _) = hosted.accept().await;
        let Some(DeviceMessage::Hello(_)) = receive(&mut socket).await else {
            panic!("expected a hello");
        };
        send(&mut socket, &HubMessage::Refused(busy.clone())).await;
    };
    let (ended, ()) = tokio::join!(remote.connection(&mut lost, &mut refused), serve);
    assert!(matches!(ended, Ended::Refused(_)), "{ended:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_busy_hub_is_waited_for_two_to_five_seconds_every_time() {
    assert_eq!(busy_delay(0.0), Duration::from_secs(2));
    assert_eq!(busy_delay(0.5), Duration::from_millis(3500));
    assert!(busy_delay(0.999_99) < Duration::from_secs(5));
    assert_eq!(busy_delay(3.0), Duration::from_secs(5));
    for _ in 0..100 {
        let delay = busy_delay(random_fraction());
        assert!(delay >= Duration::from_secs(2) && delay < Duration::from_secs(5));
    }
}

#[test]
fn backoff_doubles_to_its_bound() {
    let mut backoff = Backoff::new(LOST_BACKOFF);
    let delays: Vec<u64> = (0..7).map(|_| backoff.next_delay().as_secs()).collect();
    assert_eq!(delays, [1, 2, 4, 8, 16, 30, 30]);
    backoff.reset();
    assert_eq!(backoff.next_delay().as_secs(), 1);
    let mut refused = Backoff::new(REFUSED_BACKOFF);
    let delays: Vec<u64> = (0..6).map(|_| refused.next_delay().as_secs()).collect();
    assert_eq!(delays, [5, 10, 20, 40, 60, 60]);
}

/// Issue 23: the loop reads a request, starts its task, and may read the hub's cancel for it
/// before that task first runs. `start` registers the request before spawning its task, so
/// the cancel finds it and the request never runs.
#[tokio::test]
async fn a_cancel_read_before_the_task_first_runs_still_cancels_it() {
    let device = device();
    let mut tasks = JoinSet::new();
    let (responses, mut outgoing) = mpsc::unbounded_channel();
    let cancellers = Cancellers::default();
    let request = Request {
        id: 12,
        tab_id: None,
        deadline_ms: 5_000,
        tool: "release_device".into(),
        holder: None,
        viewer: None,
        op: Operation::Device(DeviceOp::Release(ReleaseDevice {})),
    };
    assert!(start(&mut tasks, &device, request, &responses, &cancellers).is_none());
    // What the loop does on `cancel {id: 12}`, with the task not yet polled (nothing here
    // has awaited since it was spawned).
    cancellers
        .lock()
        .unwrap()
        .get(&12)
        .expect("registered before its task runs")
        .cancel();
    let response = within(outgoing.recv()).await.unwrap();
    assert_eq!(response.id, 12);
    let error = response.error.expect("cancelled, not released");
    assert_eq!(error.code, ErrorCode::Cancelled);
    assert!(!error.action_may_have_occurred);
    within(tasks.join_next()).await;
    assert!(cancellers.lock().unwrap().is_empty(), "answered, it leaves");
}

/// Review finding (issue 27): a policy update the backend cannot read (a newer hub's rules) must
/// not leave the old rules in force: the connection is closed, not the update ignored.
#[tokio::test]
async fn an_unreadable_policy_update_closes_the_connection() {
    let hub = FakeHub::start().await;
    let (link, control) = link(&hub.url, Some("tok-123"), None);
    let running = tokio::spawn(link.run());
    let (mut socket, _) = hub.accept().await;
    let Some(DeviceMessage::Hello(_)) = receive(&mut socket).await else {
        panic!("a hosted hub is first sent the hello");
    };
    send(&mut socket, &welcome(15_000)).await;
    send(&mut socket, &HubMessage::Heartbeat { seq: 1 }).await;
    assert_eq!(
        receive(&mut socket).await,
        Some(DeviceMessage::Heartbeat { seq: 1 })
    );
    // Another message the backend cannot read is ignored: the connection stays.
    socket
        .send(Message::text(r#"{"type":"somethingNew","x":1}"#))
        .await
        .unwrap();
    send(&mut socket, &HubMessage::Heartbeat { seq: 2 }).await;
    assert_eq!(
        receive(&mut socket).await,
        Some(DeviceMessage::Heartbeat { seq: 2 })
    );
    // A policy with a rule this build cannot read: closed.
    let policy: Policy = serde_json::from_str(
        r#"{"default":"act","apps":[{"package":"com.bank.*","access":"deny"}]}"#,
    )
    .unwrap();
    let text = serde_json::to_string(&HubMessage::Policy(policy))
        .unwrap()
        .replace("com.bank.*", "com.bank.*/v2");
    socket.send(Message::text(text)).await.unwrap();
    assert_eq!(receive(&mut socket).await, None, "the connection closes");
    control.send_replace(Control::Stop("backend stopped".into()));
    within(running).await.unwrap();
}

/// Review finding (issue 27): an app to install travels in one message of up to ~54 MiB;
/// tungstenite's default 16 MiB frame limit dropped the connection (and every call on it).
#[tokio::test]
async fn a_request_as_large_as_an_app_to_install_is_read_and_answered() {
    let hub = FakeHub::start().await;
    let (link, control) = link(&hub.url, Some("tok-123"), None);
    let running = tokio::spawn(link.run());
    let (mut socket, _) = hub.accept().await;
    let Some(DeviceMessage::Hello(_)) = receive(&mut socket).await else {
        panic!("a hosted hub is first sent the hello");
    };
    send(&mut socket, &welcome(15_000)).await;
    let bytes = tabwire_protocol::devices::MAX_INSTALL_BYTES as usize;
    let request = Request {
        id: 31,
        tab_id: None,
        deadline_ms: 5_000,
        tool: "install_app".into(),
        holder: None,
        viewer: None,
        op: Operation::Device(DeviceOp::InstallApp(
            tabwire_protocol::devices::InstallApp {
                name: "big.apk".into(),
                data_base64: "A".repeat(bytes.div_ceil(3) * 4),
                replace: false,
            },
        )),
    };
    send(&mut socket, &HubMessage::Request(request)).await;
    let Some(DeviceMessage::Response(response)) = receive(&mut socket).await else {
        panic!("the connection survives and the request is answered");
    };
    assert_eq!(response.id, 31);
    control.send_replace(Control::Stop("backend stopped".into()));
    within(running).await.unwrap();
}
