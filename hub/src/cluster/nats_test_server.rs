//! A real nats-server on loopback for the cluster's tests, killed (by its PID) when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where Debian installs it (`scripts/test` installs the package).
const NATS_SERVER: &str = "/usr/sbin/nats-server";

/// A nats-server this test started.
pub struct NatsServer {
    child: Child,
    /// `nats://127.0.0.1:PORT`.
    pub url: String,
}

impl NatsServer {
    /// Starts one on a free loopback port (`-p -1`; `-p 0` takes 4222) and waits for its
    /// "Listening for client connections" line.
    pub fn start() -> NatsServer {
        NatsServer::start_on(None)
    }

    /// Starts one on `port` (the port of a server stopped before, to bring it back), or on a
    /// free one.
    pub fn start_on(port: Option<u16>) -> NatsServer {
        let port = port.map_or_else(|| "-1".to_owned(), |port| port.to_string());
        let program = std::env::var("TABWIRE_NATS_SERVER").unwrap_or_else(|_| {
            if std::path::Path::new(NATS_SERVER).exists() {
                NATS_SERVER.to_owned()
            } else {
                "nats-server".to_owned()
            }
        });
        let mut child = Command::new(&program)
            .args(["-a", "127.0.0.1", "-p", &port])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| {
                panic!(
                    "cannot start {program} ({error}): the cluster tests need nats-server; \
                     scripts/test installs it (apt-get install nats-server)"
                )
            });
        let stderr = child.stderr.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent && let Some(at) = line.find("Listening for client connections on ") {
                    let addr = line[at + "Listening for client connections on ".len()..].trim();
                    let _ = tx.send(addr.to_owned());
                    sent = true;
                }
            }
        });
        let started = Instant::now();
        let addr = loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(addr) => break addr,
                Err(_) if started.elapsed() > Duration::from_secs(20) => {
                    let _ = child.kill();
                    panic!("{program} did not say where it listens within 20 s");
                }
                Err(_) => {
                    if let Ok(Some(status)) = child.try_wait() {
                        panic!("{program} exited at once ({status})");
                    }
                }
            }
        };
        NatsServer {
            child,
            url: format!("nats://{addr}"),
        }
    }
}

impl NatsServer {
    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
