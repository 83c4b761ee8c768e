//! The shim against a scripted fake hub on a real Unix socket: attach lines, handshake replay,
//! in-flight failures, held requests, never replaying a tool call, and refusing a socket
//! directory that is not privately the user's (at start and on a reconnect). A listener of
//! another user is refused in `tests/e2e/socket_peers.rs`, which can run one.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tabwire_mcp::{Options, ShimError, jsonrpc};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::net::UnixListener;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

const WAIT: Duration = Duration::from_secs(5);

/// A socket path in a fresh directory private to this user, as the hub makes it.
fn socket_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tabwire-shim-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
    dir.join("hub.sock")
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Starts the shim on `path` and returns its refusal, which must come at once: a refusal is
/// never retried, although the shim would wait for a hub much longer.
async fn refusal_of(path: &Path) -> String {
    let mut options = Options::new(path.to_owned());
    options.startup_wait = Duration::from_secs(60);
    let (_client, task) = start_shim(options);
    let error = tokio::time::timeout(WAIT, task)
        .await
        .expect("refused without retrying")
        .unwrap()
        .unwrap_err();
    assert!(matches!(error, ShimError::Refused(_)), "{error:?}");
    let message = error.to_string();
    assert!(!message.contains('\n'), "one line: {message}");
    assert!(message.contains(&path.display().to_string()), "{message}");
    message
}

/// Says whether anything connected to `listener` within a moment.
async fn connected(listener: &UnixListener) -> bool {
    tokio::time::timeout(Duration::from_millis(300), listener.accept())
        .await
        .is_ok()
}

/// The client side of the shim's stdio.
struct Client {
    stdin: DuplexStream,
    stdout: Lines<BufReader<DuplexStream>>,
}

impl Client {
    async fn send(&mut self, message: Value) {
        self.stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.stdout.next_line())
            .await
            .expect("shim answered in time")
            .unwrap()
            .expect("stdout open");
        serde_json::from_str(&line).unwrap()
    }
}

fn start_shim(options: Options) -> (Client, tokio::task::JoinHandle<Result<(), ShimError>>) {
    let (client_in, shim_in) = tokio::io::duplex(1 << 16);
    let (shim_out, client_out) = tokio::io::duplex(1 << 16);
    let task = tokio::spawn(tabwire_mcp::run(options, shim_in, shim_out));
    let client = Client {
        stdin: client_in,
        stdout: BufReader::new(client_out).lines(),
    };
    (client, task)
}

/// One accepted connection of the fake hub.
struct HubSide {
    lines: Lines<BufReader<OwnedReadHalf>>,
    write: OwnedWriteHalf,
}

impl HubSide {
    async fn accept(listener: &UnixListener) -> HubSide {
        let (stream, _) = tokio::time::timeout(WAIT, listener.accept())
            .await
            .expect("shim connected")
            .unwrap();
        let (read, write) = stream.into_split();
        HubSide {
            lines: BufReader::new(read).lines(),
            write,
        }
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("hub got a line in time")
            .unwrap()
            .expect("socket open");
        serde_json::from_str(&line).unwrap()
    }

    async fn send(&mut self, message: Value) {
        self.write
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }
}

fn request(id: u64, method: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}})
}

#[tokio::test]
async fn no_hub_means_a_prompt_error() {
    let path = socket_path("nohub");
    let mut options = Options::new(path.clone());
    options.startup_wait = Duration::from_millis(300);
    let (_client, task) = start_shim(options);
    let error = tokio::time::timeout(WAIT, task)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("cannot reach tabwire-hub"), "{message}");
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(!message.contains('\n'), "one line: {message}");
}

/// A hub that started while another user held `/tmp/tabwire-<uid>` listens in the home
/// fallback, and stays there when that directory goes away: a shim that then finds nothing in
/// `/tmp` (no directory at all, here) tries the fallback, and talks to the hub there. With no
/// hub at either place, the error names the first.
#[tokio::test]
async fn nothing_at_the_socket_sends_the_shim_to_the_fallback_beside_it() {
    let tmp = socket_path("either-tmp")
        .with_file_name("gone")
        .join("hub.sock");
    let home = socket_path("either-home");
    let listener = UnixListener::bind(&home).unwrap();
    let mut options = Options::new(tmp.clone());
    options.also = Some(home.clone());
    let (_client, _task) = start_shim(options);
    let mut hub = HubSide::accept(&listener).await;
    assert_eq!(hub.recv().await["tabwire"], "attach");
    drop(listener);
    std::fs::remove_file(&home).unwrap();

    let mut options = Options::new(tmp.clone());
    options.also = Some(home.clone());
    options.startup_wait = Duration::from_millis(300);
    let (_client, task) = start_shim(options);
    let error = tokio::time::timeout(WAIT, task)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    let message = error.to_string();
    assert!(message.contains(&tmp.display().to_string()), "{message}");

    // A fallback directory that is not fit (open to others, say) but holds no socket is no hub
    // either: nothing answers, rather than a refusal that would stop `tabwire` from starting a
    // hub in `/tmp`. With a socket file in it, it is refused as the socket's directory is.
    let home_dir = home.parent().unwrap();
    std::fs::set_permissions(home_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut options = Options::new(tmp.clone());
    options.also = Some(home.clone());
    options.startup_wait = Duration::from_millis(300);
    let (_client, task) = start_shim(options);
    let error = tokio::time::timeout(WAIT, task)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(matches!(error, ShimError::HubUnreachable { .. }), "{error}");
    let _listener = UnixListener::bind(&home).unwrap();
    let mut options = Options::new(tmp.clone());
    options.also = Some(home.clone());
    let (_client, task) = start_shim(options);
    let error = tokio::time::timeout(WAIT, task)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(matches!(error, ShimError::Refused(_)), "{error}");
}

#[tokio::test]
async fn survives_a_hub_restart_without_replaying_anything() {
    let path = socket_path("restart");
    let listener = UnixListener::bind(&path).unwrap();
    let (mut client, task) = start_shim(Options::new(path.clone()));

    // First connection: attach line with no selection, then the client's handshake.
    let mut hub = HubSide::accept(&listener).await;
    let attach = hub.recv().await;
    assert_eq!(attach["tabwire"], "attach");
    assert_eq!(attach["selected"]["browser"], Value::Null);
    let session = attach["session"].as_str().unwrap().to_owned();

    client.send(request(1, "initialize")).await;
    assert_eq!(hub.recv().await["method"], "initialize");
    hub.send(json!({"jsonrpc": "2.0", "id": 1, "result": {"hello": true}}))
        .await;
    assert_eq!(client.recv().await["result"]["hello"], true);
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    assert_eq!(hub.recv().await["method"], "notifications/initialized");

    // The hub reports a selection; the control line never reaches the client.
    hub.send(json!({"tabwire": "state", "selected": {"browser": "b-work"}}))
        .await;
    client.send(request(2, "tools/list")).await;
    assert_eq!(hub.recv().await["id"], 2);
    hub.send(json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}))
        .await;
    let answer = client.recv().await;
    assert_eq!(
        answer["id"], 2,
        "control line leaked to the client: {answer}"
    );

    // A tool call is in flight when the hub dies.
    client.send(request(3, "tools/call")).await;
    assert_eq!(hub.recv().await["id"], 3);
    drop(hub);
    let failed = client.recv().await;
    assert_eq!(failed["id"], 3);
    assert_eq!(failed["error"]["code"], jsonrpc::OUTCOME_UNKNOWN);
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("outcome is unknown")
    );

    // While the hub is away the client sends another request: it is held, not failed.
    drop(listener);
    std::fs::remove_file(&path).unwrap();
    client.send(request(4, "tools/call")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    // The hub comes back on the same path.
    let listener = UnixListener::bind(&path).unwrap();
    let mut hub = HubSide::accept(&listener).await;
    let attach = hub.recv().await;
    assert_eq!(attach["session"], session.as_str(), "same session identity");
    assert_eq!(
        attach["selected"]["browser"], "b-work",
        "selection restored"
    );
    let replay = hub.recv().await;
    assert_eq!(replay["method"], "initialize");
    assert_eq!(replay["id"], "tabwire-reinit-1");
    hub.send(json!({"jsonrpc": "2.0", "id": "tabwire-reinit-1", "result": {}}))
        .await;
    assert_eq!(hub.recv().await["method"], "notifications/initialized");
    // Next comes the held request 4, never request 3.
    let held = hub.recv().await;
    assert_eq!(held["id"], 4, "request 3 must not be replayed: {held}");
    hub.send(json!({"jsonrpc": "2.0", "id": 4, "result": {"ok": true}}))
        .await;
    let answer = client.recv().await;
    assert_eq!(
        answer["id"], 4,
        "the replayed handshake's answer is swallowed"
    );
    // And nothing else was sent to the new hub: no late replay of request 3.
    let extra = tokio::time::timeout(Duration::from_millis(300), hub.lines.next_line()).await;
    assert!(
        extra.is_err(),
        "unexpected line after the held request: {extra:?}"
    );

    drop(client);
    tokio::time::timeout(WAIT, task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn cancelled_and_unanswered_handshakes_are_not_reported_or_replayed() {
    let path = socket_path("cancel");
    let listener = UnixListener::bind(&path).unwrap();
    let (mut client, _task) = start_shim(Options::new(path.clone()));
    let mut hub = HubSide::accept(&listener).await;
    assert_eq!(hub.recv().await["tabwire"], "attach");

    // The client's initialize never gets an answer before the drop...
    client.send(request(1, "initialize")).await;
    assert_eq!(hub.recv().await["method"], "initialize");
    // ...and it cancels a tool call, which the hub therefore never answers.
    client.send(request(2, "tools/call")).await;
    assert_eq!(hub.recv().await["id"], 2);
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}))
        .await;
    assert_eq!(hub.recv().await["method"], "notifications/cancelled");
    drop(hub);

    // Only the initialize is reported as cut off; the cancelled call is not.
    let failed = client.recv().await;
    assert_eq!(failed["id"], 1);
    assert_eq!(failed["error"]["code"], jsonrpc::OUTCOME_UNKNOWN);
    let extra = tokio::time::timeout(Duration::from_millis(300), client.stdout.next_line()).await;
    assert!(extra.is_err(), "unexpected line to the client: {extra:?}");

    // The unanswered initialize is not replayed to the next hub: the client will redo it.
    let mut hub = HubSide::accept(&listener).await;
    assert_eq!(hub.recv().await["tabwire"], "attach");
    client.send(request(3, "initialize")).await;
    assert_eq!(
        hub.recv().await["id"],
        3,
        "no replayed handshake before the client's own"
    );
}

#[tokio::test]
async fn held_requests_expire_as_not_sent() {
    let path = socket_path("expire");
    let listener = UnixListener::bind(&path).unwrap();
    let mut options = Options::new(path.clone());
    options.hold = Duration::from_millis(300);
    let (mut client, _task) = start_shim(options);
    let hub = HubSide::accept(&listener).await;
    drop(hub);
    drop(listener);
    std::fs::remove_file(&path).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    client.send(request(9, "tools/call")).await;
    let answer = client.recv().await;
    assert_eq!(answer["id"], 9);
    assert_eq!(answer["error"]["code"], jsonrpc::NOT_SENT);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not sent")
    );
}

#[tokio::test]
async fn refuses_a_socket_directory_open_to_others() {
    let path = socket_path("open");
    let dir = path.parent().unwrap();
    // Something listens there, so the mode is the only thing wrong.
    let listener = UnixListener::bind(&path).unwrap();
    chmod(dir, 0o755);
    let message = refusal_of(&path).await;
    assert!(
        message.contains("open to other users (mode 755)"),
        "{message}"
    );
    assert!(
        message.contains(&format!("`chmod 700 {}`", dir.display())),
        "{message}"
    );
    assert!(!connected(&listener).await, "the shim connected anyway");
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn refuses_a_socket_directory_of_another_user() {
    let path = socket_path("owner");
    let dir = path.parent().unwrap();
    let listener = UnixListener::bind(&path).unwrap();
    // Tests run as root, which can hand the directory to `nobody`, as if that user had
    // created it first. Its mode stays 0700, so the owner is the only thing wrong.
    std::os::unix::fs::chown(dir, Some(65534), Some(65534))
        .expect("these tests run as root (chown to uid 65534)");
    let message = refusal_of(&path).await;
    let own = tabwire_protocol::local::current_uid();
    assert!(
        message.contains(&format!("belongs to user 65534, not to you (user {own})")),
        "{message}"
    );
    assert!(
        message.contains(&format!("another user created {}", dir.display())),
        "{message}"
    );
    assert!(!connected(&listener).await, "the shim connected anyway");
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_directory_opened_while_the_hub_is_away_stops_the_reconnect() {
    let path = socket_path("reopen");
    let dir = path.parent().unwrap();
    let listener = UnixListener::bind(&path).unwrap();
    let (mut client, task) = start_shim(Options::new(path.clone()));
    let hub = HubSide::accept(&listener).await;
    drop(listener);
    std::fs::remove_file(&path).unwrap();
    drop(hub);
    // The shim notices and retries; a request sent meanwhile is held.
    tokio::time::sleep(Duration::from_millis(300)).await;
    client.send(request(5, "tools/call")).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    // While the hub is away its directory is opened up and something else listens there.
    chmod(dir, 0o777);
    let impostor = UnixListener::bind(&path).unwrap();

    // The request is answered as never sent, with the reason, and the shim stops.
    let answer = client.recv().await;
    assert_eq!(answer["id"], 5);
    assert_eq!(answer["error"]["code"], jsonrpc::NOT_SENT);
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("not sent"), "{message}");
    assert!(message.contains("chmod 700"), "{message}");
    let error = tokio::time::timeout(WAIT, task)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(matches!(error, ShimError::Refused(_)), "{error:?}");
    assert!(
        !connected(&impostor).await,
        "the shim connected to the impostor"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
