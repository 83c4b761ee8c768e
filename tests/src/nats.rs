//! A `nats-server` for hub replicas (`tabwire-hub --cluster`): Debian's program, started on a
//! random loopback port (`-p -1`; `-p 0` would take the default 4222, PLATFORM.md), with an
//! optional config file (e.g. `max_payload`), killed by its PID when dropped. [`NatsServer::stop`]
//! and [`NatsServer::restart`] take it away and bring it back on the same port, for the "NATS is
//! gone" scenarios: the replicas' clients reconnect to the address they were given.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, bail};

use crate::scratch::Scratch;

/// Where Debian's `nats-server` package puts the program.
pub const NATS_SERVER: &str = "/usr/sbin/nats-server";

/// The program: `TABWIRE_NATS_SERVER` when set, else [`NATS_SERVER`], else `nats-server` on
/// `PATH`; an error saying how to get it when none exists.
pub fn program() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("TABWIRE_NATS_SERVER") {
        return Ok(PathBuf::from(path));
    }
    if Path::new(NATS_SERVER).exists() {
        return Ok(PathBuf::from(NATS_SERVER));
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("nats-server"))
            .find(|path| path.exists())
    });
    on_path.with_context(|| {
        format!(
            "nats-server is not installed ({NATS_SERVER} is missing and none is on PATH): \
             scripts/test installs it (`apt-get install nats-server`), or set \
             TABWIRE_NATS_SERVER to the program"
        )
    })
}

/// A running (or stopped, between [`NatsServer::stop`] and [`NatsServer::restart`])
/// nats-server on loopback.
pub struct NatsServer {
    program: PathBuf,
    config: Option<PathBuf>,
    child: Option<Child>,
    /// The port it listens on, the same after a restart.
    pub port: u16,
    _dir: Scratch,
}

impl NatsServer {
    /// Starts `nats-server -a 127.0.0.1 -p -1` and waits for its listening line.
    pub fn start() -> anyhow::Result<NatsServer> {
        NatsServer::start_with_config(None)
    }

    /// The same with `config` (nats-server's config syntax, e.g. `max_payload: 1MB`) written to
    /// a file and given as `-c FILE`.
    pub fn start_with_config(config: Option<&str>) -> anyhow::Result<NatsServer> {
        let program = program()?;
        let dir = Scratch::new("nats");
        let config = match config {
            Some(text) => {
                let path = dir.path().join("nats.conf");
                std::fs::write(&path, text).context("write the nats-server config")?;
                Some(path)
            }
            None => None,
        };
        let mut server = NatsServer {
            program,
            config,
            child: None,
            port: 0,
            _dir: dir,
        };
        server.spawn("-1")?;
        Ok(server)
    }

    /// `nats://127.0.0.1:PORT`, what the replicas get as `--cluster`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Its process ID while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills it (SIGKILL, by its PID) and waits for it: its clients see the connection drop at
    /// once, as when the NATS machine dies.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port (after [`NatsServer::stop`]); retries for a few
    /// seconds while the port is still held by the old socket.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.stop();
        let port = self.port.to_string();
        let mut last = None;
        for _ in 0..50 {
            match self.spawn(&port) {
                Ok(()) => return Ok(()),
                Err(error) => last = Some(error),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(last.expect("at least one attempt"))
    }

    fn spawn(&mut self, port: &str) -> anyhow::Result<()> {
        let mut command = Command::new(&self.program);
        command.args(["-a", "127.0.0.1", "-p", port]);
        if let Some(config) = &self.config {
            command.arg("-c").arg(config);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("start {}", self.program.display()))?;
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, listening) = mpsc::channel();
        std::thread::spawn(move || {
            const MARK: &str = "Listening for client connections on ";
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent && let Some(at) = line.find(MARK) {
                    let addr = line[at + MARK.len()..].trim().to_owned();
                    let _ = tx.send(Ok(addr));
                    sent = true;
                } else if line.contains("[FTL]") || line.contains("[ERR]") {
                    let _ = tx.send(Err(line.clone()));
                    crate::logs::forward_log("nats-server", &line);
                }
            }
        });
        let answer = listening.recv_timeout(Duration::from_secs(10));
        let addr = match answer {
            Ok(Ok(addr)) => addr,
            Ok(Err(line)) => {
                let _ = child.kill();
                let _ = child.wait();
                bail!("nats-server failed to start: {line}");
            }
            Err(_) => {
                let status = child.try_wait().ok().flatten();
                let _ = child.kill();
                let _ = child.wait();
                bail!("nats-server printed no listening line within 10 s (exit status {status:?})");
            }
        };
        let port = addr
            .rsplit_once(':')
            .and_then(|(_, port)| port.parse::<u16>().ok())
            .with_context(|| format!("nats-server's listening line names no port: {addr}"))?;
        self.port = port;
        self.child = Some(child);
        Ok(())
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_listens_stops_and_comes_back_on_the_same_port() {
        let mut nats = NatsServer::start_with_config(Some("max_payload: 1MB\n"))
            .unwrap_or_else(|error| panic!("{error:#}"));
        let port = nats.port;
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
        nats.stop();
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
        nats.restart().unwrap();
        assert_eq!(nats.port, port);
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
        assert!(nats.url().ends_with(&format!(":{port}")));
    }
}
