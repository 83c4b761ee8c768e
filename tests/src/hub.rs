//! Running the real `tabwire-hub` binary.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::artifacts::artifacts;
use crate::scratch::Scratch;

/// A running hub on a free loopback port with its own private socket directory.
pub struct Hub {
    child: Option<Child>,
    /// The HTTP address it listens on.
    pub http: SocketAddr,
    /// Its Unix socket.
    pub socket: PathBuf,
    _dir: Scratch,
}

impl Hub {
    /// Starts a hub on port 0 and waits for its "listening" line.
    pub fn spawn() -> Hub {
        let dir = Scratch::new("hub");
        let socket = dir.path().join("run").join("hub.sock");
        let (child, http) = start(0, &socket);
        Hub {
            child: Some(child),
            http,
            socket,
            _dir: dir,
        }
    }

    /// The URL the extension connects to.
    pub fn browser_url(&self) -> String {
        format!("ws://{}/browser", self.http)
    }

    /// Kills the hub abruptly (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the hub again on the same port and socket path.
    pub fn restart(&mut self) {
        self.kill();
        let (child, http) = start(self.http.port(), &self.socket);
        assert_eq!(http, self.http);
        self.child = Some(child);
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.kill();
    }
}

fn start(port: u16, socket: &Path) -> (Child, SocketAddr) {
    let mut child = Command::new(&artifacts().hub)
        .args([
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--socket",
        ])
        .arg(socket)
        .env("TABWIRE_LOG", "info,tabwire_hub=debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tabwire-hub");
    let stderr = child.stderr.take().expect("piped stderr");
    let (ready_tx, ready_rx) = mpsc::channel();
    // Forwards the hub's log to the test's output (shown when a test fails) and reports the
    // address from the one "listening" line.
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("tabwire-hub listening http=") {
                let addr = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                let _ = ready_tx.send(addr);
            }
            crate::forward_log("hub", &line);
        }
    });
    let addr = ready_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("tabwire-hub printed its listening line");
    (child, addr.parse().expect("listening line has an address"))
}
