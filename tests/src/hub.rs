//! Running the real `tabwire-hub` binary.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::artifacts::artifacts;
use crate::scratch::Scratch;

/// A running hub on a free loopback port with its own private socket and state directories.
pub struct Hub {
    child: Option<Child>,
    /// The HTTP address it listens on.
    pub http: SocketAddr,
    /// Its Unix socket.
    pub socket: PathBuf,
    /// Its state directory (paired browsers), kept across [`Hub::restart`].
    pub state_dir: PathBuf,
    _dir: Scratch,
}

impl Hub {
    /// Starts a hub on port 0 and waits for its "listening" line.
    pub fn spawn() -> Hub {
        Hub::spawn_with_args(&[])
    }

    /// [`Hub::spawn`] with more flags, e.g. `["--policy", path]`.
    pub fn spawn_with_args(args: &[&str]) -> Hub {
        let dir = Scratch::new("hub");
        let socket = dir.path().join("run").join("hub.sock");
        let state_dir = dir.path().join("state");
        let (child, http) = start(0, &socket, &state_dir, args);
        Hub {
            child: Some(child),
            http,
            socket,
            state_dir,
            _dir: dir,
        }
    }

    /// A fresh one-time pairing code, from `tabwire-hub pair` as a script would get it.
    pub fn pair(&self) -> String {
        self.pair_command(&[])
    }

    /// Runs `tabwire-hub pair ARGS` on this hub's state; returns its stdout, trimmed. Panics
    /// with its stderr when it fails.
    pub fn pair_command(&self, args: &[&str]) -> String {
        self.subcommand("pair", args).trim().to_owned()
    }

    /// Runs `tabwire-hub audit ARGS` on this hub's state directory; returns its stdout. Panics
    /// with its stderr when it fails.
    pub fn audit_command(&self, args: &[&str]) -> String {
        self.subcommand("audit", args)
    }

    /// Runs `tabwire-hub NAME --state-dir STATE ARGS`; returns its stdout. Panics with its
    /// stderr when it fails.
    fn subcommand(&self, name: &str, args: &[&str]) -> String {
        let output = Command::new(&artifacts().hub)
            .arg(name)
            .arg("--state-dir")
            .arg(&self.state_dir)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("run tabwire-hub {name}: {e}"));
        assert!(
            output.status.success(),
            "tabwire-hub {name} {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("utf-8")
    }

    /// Starts `tabwire-hub audit --follow ARGS` on this hub's state directory; its records
    /// arrive a line each on [`Follower::lines`], and the process is killed when the
    /// [`Follower`] is dropped.
    pub fn audit_follow(&self, args: &[&str]) -> Follower {
        let mut child = Command::new(&artifacts().hub)
            .arg("audit")
            .arg("--follow")
            .arg("--state-dir")
            .arg(&self.state_dir)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("run tabwire-hub audit --follow");
        let stdout = child.stdout.take().expect("piped stdout");
        let (lines_tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines_tx.send(line).is_err() {
                    break;
                }
            }
        });
        Follower { child, lines }
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
        let (child, http) = start(self.http.port(), &self.socket, &self.state_dir, &[]);
        assert_eq!(http, self.http);
        self.child = Some(child);
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A running `tabwire-hub audit --follow`, killed when dropped.
pub struct Follower {
    child: Child,
    /// Its output, a line at a time.
    pub lines: mpsc::Receiver<String>,
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(port: u16, socket: &Path, state_dir: &Path, args: &[&str]) -> (Child, SocketAddr) {
    let mut command = Command::new(&artifacts().hub);
    command
        .args([
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--socket",
        ])
        .arg(socket)
        .arg("--state-dir")
        .arg(state_dir)
        .args(args);
    let (child, ready) = spawn_until_listening(command);
    let addr = ready.split_whitespace().next().unwrap_or_default();
    (child, addr.parse().expect("listening line has an address"))
}

/// Starts a configured `tabwire-hub` command, forwards its log to the test's output (shown when
/// a test fails) and waits for its one "listening" line; returns the child and what follows
/// `listening http=` on that line. Panics, killing the hub, when the line does not come.
pub(crate) fn spawn_until_listening(mut command: Command) -> (Child, String) {
    let mut child = command
        .env("TABWIRE_LOG", "info,tabwire_hub=debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tabwire-hub");
    let stderr = child.stderr.take().expect("piped stderr");
    let (ready_tx, ready_rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("tabwire-hub listening http=") {
                let _ = ready_tx.send(rest.to_owned());
            }
            crate::logs::forward_log("hub", &line);
        }
    });
    match ready_rx.recv_timeout(Duration::from_secs(20)) {
        Ok(ready) => (child, ready),
        Err(_) => {
            let status = child.try_wait().ok().flatten();
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "tabwire-hub printed no `listening http=…` line (exit status: {status:?}); its \
                 log is above"
            );
        }
    }
}
