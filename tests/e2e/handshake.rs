//! A local hub's handshake places under another user's process that crowds them (issue 23 §3):
//! a dozen loops, run as another user of the machine (`nobody`), each opening `/browser` with an
//! extension's Origin, saying nothing, and opening again the moment the hub closes it (for its
//! silence, because no place was free, or because a newcomer took its place). More sockets than
//! places, reopened at once, take every place that comes free before a browser's one connection
//! could; the hub tells its own user's connections from another user's (`/proc/net/tcp`) and
//! gives the places to its own (`hub/src/handshake_places.rs`), so the browser connects while
//! they keep at it.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tabwire_e2e::scenario::{CONNECT_LIMIT, connected_browser};
use tabwire_e2e::{Browser, Fixtures, Hub, McpClient, eventually};

/// The extension's Origin, which anyone can send.
const ORIGIN: &str = "chrome-extension://hjpjigandemmiglamagndeppmlncdhag";

/// The user the crowd runs as.
const NOBODY: u32 = 65534;

/// Twelve loops in bash (its `/dev/tcp`), each holding one silent upgraded socket at a time and
/// printing `LIMIT_EXCEEDED` when the hub turned it away for lack of a place.
const CROWD: &str = r#"
hold() {
  while :; do
    exec 3<>"/dev/tcp/127.0.0.1/$PORT" || { sleep 0.01; continue; }
    printf 'GET /browser HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: %s\r\n\r\n' "$PORT" "$ORIGIN" >&3
    grep -ao LIMIT_EXCEEDED <&3
    exec 3<&-
  done
}
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do hold & done
wait
"#;

/// Starts the crowd as `nobody`: directly when the tests run as root (as CI does), else through
/// `sudo -n` (a password-less sudo). Without either the test cannot play another user, and
/// fails saying so rather than passing untested.
fn crowd(port: u16) -> Child {
    let mut command = if tabwire_protocol::local::current_uid() == 0 {
        let mut bash = Command::new("bash");
        bash.uid(NOBODY).gid(NOBODY);
        bash
    } else {
        let mut sudo = Command::new("sudo");
        sudo.args(["-n", "-u", "#65534", "--", "bash"]);
        sudo
    };
    command
        .args(["-c", CROWD])
        .env("PORT", port.to_string())
        .env("ORIGIN", ORIGIN)
        .current_dir("/")
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect(
            "this test runs a process as another user (nobody): run the tests as root, or with a \
             password-less sudo",
        )
}

/// Ends the crowd's process group (all its loops).
struct Crowd(Child);

impl Drop for Crowd {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group this test started.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_crowd_on_the_handshake_places_cannot_keep_a_browser_out() {
    let fixtures = Fixtures::serve().await;
    let hub = Hub::spawn();
    let client = McpClient::connect(&hub).await;
    let port: u16 = hub
        .browser_url()
        .trim_start_matches("ws://127.0.0.1:")
        .trim_end_matches("/browser")
        .parse()
        .unwrap();
    let mut child = crowd(port);
    let turned_away = Arc::new(AtomicUsize::new(0));
    let stdout = child.stdout.take().unwrap();
    let counter = turned_away.clone();
    std::thread::spawn(move || {
        for _ in BufReader::new(stdout).lines().map_while(Result::ok) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    });
    let _crowd = Crowd(child);
    // The crowd holds every place: some of its own sockets find none.
    eventually(
        "the crowd to fill the handshake places",
        CONNECT_LIMIT,
        || async { (turned_away.load(Ordering::Relaxed) >= 10).then_some(()) },
    )
    .await;
    let _browser = Browser::launch(&hub, "Held", &fixtures.url("blank.html"));
    connected_browser(&client, "Held").await;
    // The crowd was still at it when the browser got in.
    let before = turned_away.load(Ordering::Relaxed);
    eventually("the crowd to go on", CONNECT_LIMIT, || async {
        (turned_away.load(Ordering::Relaxed) > before).then_some(())
    })
    .await;
}
