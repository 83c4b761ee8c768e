//! Only the user's own processes on either end of the Unix socket, tried with a real process of
//! another user (`peer-probe` run as uid 65534; these tests run as root):
//! the hub's private directory keeps that user away, a hub whose directory was opened up still
//! closes that user's connection unserved while serving its own, and the shim refuses a "hub"
//! run by another user even in a directory that passes its checks.

use std::io::{BufRead, BufReader, ErrorKind};
use std::os::unix::fs::{PermissionsExt, chown};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tabwire_e2e::scratch::Scratch;
use tabwire_e2e::{Hub, artifacts::artifacts};
use tabwire_protocol::{LocalControl, Selections};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader as AsyncBufReader};
use tokio::net::UnixStream;

/// `nobody`: the other user.
const OTHER: u32 = 65534;

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The probe, copied where the other user can run it: the target directory may not be
/// traversable by that user.
struct Probe {
    dir: Scratch,
    exe: PathBuf,
}

impl Probe {
    fn install() -> Probe {
        let dir = Scratch::new("peer-probe");
        chmod(dir.path(), 0o755);
        let exe = dir.path().join("peer-probe");
        std::fs::copy(env!("CARGO_BIN_EXE_peer-probe"), &exe).unwrap();
        chmod(&exe, 0o755);
        Probe { dir, exe }
    }

    /// Starts the probe as a process of the other user, with its stdout piped.
    fn start(&self, mode: &str, socket: &Path) -> Child {
        let mut command = Command::new(&self.exe);
        command
            .arg(mode)
            .arg(socket)
            .uid(OTHER)
            .gid(OTHER)
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        // A process forked by a concurrent test may still hold the copy's write descriptor
        // until it execs: the kernel refuses to run a file open for writing (ETXTBSY).
        let mut attempts = 0;
        loop {
            match command.spawn() {
                Err(error) if error.kind() == ErrorKind::ExecutableFileBusy && attempts < 50 => {
                    attempts += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                started => {
                    break started.expect("run the probe as uid 65534 (these tests run as root)");
                }
            }
        }
    }

    /// Runs `peer-probe connect` as the other user; its one line of outcome.
    fn connect(&self, socket: &Path) -> String {
        let output = self.start("connect", socket).wait_with_output().unwrap();
        assert!(output.status.success(), "probe failed: {output:?}");
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    }
}

/// What the shim sends first, then an MCP `initialize`; returns the first line answered.
async fn initialize_as_self(socket: &Path) -> Value {
    let stream = UnixStream::connect(socket).await.unwrap();
    let (read, mut write) = stream.into_split();
    let attach = LocalControl::attach("same-user".into(), Selections::default());
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "same-user", "version": "0"}}
    });
    write.write_all(attach.to_line().as_bytes()).await.unwrap();
    write
        .write_all(format!("{initialize}\n").as_bytes())
        .await
        .unwrap();
    let line = tokio::time::timeout(
        Duration::from_secs(10),
        AsyncBufReader::new(read).lines().next_line(),
    )
    .await
    .expect("the hub answers its own user")
    .unwrap()
    .expect("the connection stays open");
    serde_json::from_str(&line).unwrap()
}

#[tokio::test]
async fn the_hub_serves_only_its_own_user() {
    artifacts();
    let hub = Hub::spawn();
    let probe = Probe::install();

    // The test's own scratch directory is opened, so only what the hub made stands in the way:
    // its directory keeps the other user from the socket altogether.
    let run = hub.socket.parent().unwrap();
    chmod(run.parent().unwrap(), 0o755);
    assert_eq!(probe.connect(&hub.socket), "unreachable PermissionDenied");

    // Opened up too (as a careless chmod would), the directory and the socket itself: the file
    // system no longer protects anything, and the hub's peer check is all that is left.
    chmod(run, 0o755);
    chmod(&hub.socket, 0o666);
    assert_eq!(
        probe.connect(&hub.socket),
        "closed",
        "the other user's attach and initialize must go unanswered"
    );

    // Its own user is still served on the same socket.
    let answer = initialize_as_self(&hub.socket).await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
}

#[test]
fn the_shim_refuses_a_hub_run_by_another_user() {
    artifacts();
    let probe = Probe::install();
    // The other user listens in a directory of its own...
    let dir = probe.dir.path().join("impostor");
    std::fs::create_dir(&dir).unwrap();
    chmod(&dir, 0o700);
    chown(&dir, Some(OTHER), Some(OTHER)).unwrap();
    let socket = dir.join("hub.sock");
    let mut listener = probe.start("listen", &socket);
    let mut lines = BufReader::new(listener.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "listening");
    // ...which then passes for the shim's user's own: owned by it, mode 0700. Only the
    // listener's user is left to give the impostor away.
    let own = tabwire_protocol::local::current_uid();
    chown(&dir, Some(own), Some(own)).unwrap();

    let shim = Command::new(&artifacts().shim)
        .arg("--socket")
        .arg(&socket)
        .args(["--wait", "1"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8(shim.stderr).unwrap();
    assert_eq!(shim.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains(&format!(
            "refusing {}: the process listening there runs as user {OTHER}, not as you (user \
             {own})",
            socket.display()
        )),
        "{stderr}"
    );
    // The shim connected (that is how it learnt the listener's user) but sent nothing.
    assert_eq!(lines.next().unwrap().unwrap(), "received 0");
    listener.wait().unwrap();
}
