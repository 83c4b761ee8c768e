//! `tabwire-hub --launch-browser` as a person runs it: the real hub binary starts its own
//! Chromium, and the test reads what the hub prints on stdout (the launched line, the ready
//! block) the way the person would.
//!
//! A [`Home`] is the scratch directory that plays the user's data and state directories
//! (`XDG_DATA_HOME`, so the profile is found where it is by default), kept across several hub
//! runs; a [`LaunchedHub`] is one run, stopped with SIGTERM as Ctrl-C would.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::artifacts::artifacts;
use crate::scratch::Scratch;

/// How long the hub may take to say its browser is ready (or why not: it says so after 60 s).
const READY_LIMIT: Duration = Duration::from_secs(90);

/// The user's directories for launched hubs, kept across runs.
pub struct Home {
    /// The hub's Unix socket.
    pub socket: PathBuf,
    /// The hub's state directory (pairings).
    pub state_dir: PathBuf,
    /// `XDG_DATA_HOME`.
    pub data_home: PathBuf,
    /// The `tabwire-hub` run: the build's, unless [`Home::with_hub`] names another.
    hub: PathBuf,
    dir: Scratch,
}

impl Home {
    /// A fresh one.
    pub fn new() -> Home {
        let dir = Scratch::new("launch");
        Home {
            socket: dir.path().join("run/hub.sock"),
            state_dir: dir.path().join("state"),
            data_home: dir.path().join("data"),
            hub: artifacts().hub.clone(),
            dir,
        }
    }

    /// This home, running the `tabwire-hub` at `hub` (an installed one, say).
    pub fn with_hub(mut self, hub: &Path) -> Home {
        self.hub = hub.to_path_buf();
        self
    }

    /// Where the launched profile is by default under this home.
    pub fn profile(&self) -> PathBuf {
        self.data_home.join("tabwire/chromium")
    }

    /// The scratch directory itself.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `tabwire-hub ARGS` with this home's environment (no display, so Chromium runs headless)
    /// and `env` on top.
    pub fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut command = Command::new(&self.hub);
        command
            .args(args)
            // The hub finds its extension by itself, as a user's does.
            .env_remove("TABWIRE_EXTENSION")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env("XDG_DATA_HOME", &self.data_home)
            .env("TABWIRE_LOG", "info,tabwire_hub=debug");
        for (name, value) in env {
            command.env(name, value);
        }
        command
    }

    /// Runs `tabwire-hub --launch-browser` on this home and waits for its listening line.
    pub fn launch(&self, env: &[(&str, &str)]) -> LaunchedHub {
        let mut command = self.command(&self.serve_args(), env);
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tabwire-hub --launch-browser");
        let (listening_tx, listening) = mpsc::channel();
        let stderr = child.stderr.take().expect("piped stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("tabwire-hub listening http=") {
                    let _ = listening_tx.send(rest.to_owned());
                }
                crate::logs::forward_log("hub", &line);
            }
        });
        let (stdout_tx, stdout) = mpsc::channel();
        let out = child.stdout.take().expect("piped stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                crate::logs::forward_log("hub stdout", &line);
                if stdout_tx.send(line).is_err() {
                    break;
                }
            }
        });
        let Ok(ready) = listening.recv_timeout(Duration::from_secs(20)) else {
            let _ = child.kill();
            let status = child.wait();
            panic!("tabwire-hub printed no listening line ({status:?}); its log is above");
        };
        let http = ready
            .split_whitespace()
            .next()
            .and_then(|addr| addr.parse().ok())
            .expect("the listening line has an address");
        LaunchedHub {
            child: Some(child),
            http,
            stdout,
            socket: self.socket.clone(),
        }
    }

    /// Runs `tabwire-hub --launch-browser` on this home to its end (for a hub that must not
    /// start).
    pub fn launch_to_the_end(&self, env: &[(&str, &str)]) -> Output {
        self.command(&self.serve_args(), env)
            .stdin(Stdio::null())
            .output()
            .expect("run tabwire-hub --launch-browser")
    }

    fn serve_args(&self) -> Vec<&str> {
        vec![
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--socket",
            self.socket.to_str().expect("a UTF-8 scratch path"),
            "--state-dir",
            self.state_dir.to_str().expect("a UTF-8 scratch path"),
            "--launch-browser",
        ]
    }

    /// `tabwire-hub doctor` on this home: its exit code and stdout.
    pub fn doctor(&self) -> (i32, String) {
        let output = self
            .command(
                &[
                    "doctor",
                    "--socket",
                    self.socket.to_str().unwrap(),
                    "--state-dir",
                    self.state_dir.to_str().unwrap(),
                ],
                &[],
            )
            .output()
            .expect("run tabwire-hub doctor");
        (
            output.status.code().expect("an exit code"),
            String::from_utf8(output.stdout).expect("utf-8"),
        )
    }

    /// The browser pairings of this home's hub (`tabwire-hub pair --list`, one line each).
    pub fn browser_pairings(&self) -> Vec<String> {
        let output = self
            .command(
                &[
                    "pair",
                    "--list",
                    "--state-dir",
                    self.state_dir.to_str().unwrap(),
                ],
                &[],
            )
            .output()
            .expect("run tabwire-hub pair --list");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout)
            .expect("utf-8")
            .lines()
            .filter(|line| line.starts_with("browser "))
            .map(str::to_owned)
            .collect()
    }
}

impl Default for Home {
    fn default() -> Self {
        Home::new()
    }
}

/// One run of `tabwire-hub --launch-browser`; killed (SIGKILL) if dropped while running.
pub struct LaunchedHub {
    child: Option<Child>,
    /// Where it listens.
    pub http: SocketAddr,
    /// Its stdout, a line at a time.
    stdout: mpsc::Receiver<String>,
    /// Its socket.
    pub socket: PathBuf,
}

/// What the hub printed about its browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    /// Chromium's process ID, from the launched line.
    pub pid: u32,
    /// The browser ID, from the ready line.
    pub browser_id: String,
    /// Every line printed up to the end of the ready block.
    pub text: String,
}

impl LaunchedHub {
    /// Waits for a stdout line starting with `prefix`; returns every line up to and including
    /// it. Panics when the hub ends or [`READY_LIMIT`] passes first.
    pub fn wait_for_line(&self, prefix: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            match self.stdout.recv_timeout(READY_LIMIT) {
                Ok(line) => {
                    let done = line.starts_with(prefix);
                    seen.push(line);
                    if done {
                        return seen;
                    }
                }
                Err(error) => panic!(
                    "tabwire-hub printed no line starting with {prefix:?} ({error}); it printed \
                     {seen:#?}"
                ),
            }
        }
    }

    /// Waits for the launched line and the ready block.
    pub fn ready(&self) -> Ready {
        let mut lines = self.wait_for_line("tabwire-hub: launched ");
        let pid = lines
            .last()
            .and_then(|line| line.split("(PID ").nth(1))
            .and_then(|rest| rest.split([',', ')']).next())
            .and_then(|pid| pid.parse().ok())
            .expect("the launched line names Chromium's PID");
        lines.extend(self.wait_for_line("tabwire is ready: "));
        let browser_id = lines
            .last()
            .and_then(|line| line.split("(browser ID ").nth(1))
            .and_then(|rest| rest.strip_suffix(")."))
            .expect("the ready line names the browser ID")
            .to_owned();
        // The block goes on to its "press Connect." line.
        lines.extend(self.wait_for_line("     that `"));
        Ready {
            pid,
            browser_id,
            text: lines.join("\n"),
        }
    }

    /// Stops the hub as Ctrl-C would (SIGTERM) and waits for it to exit.
    pub fn stop(mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        let pid = libc::pid_t::try_from(child.id()).expect("a PID");
        // SAFETY: signalling the hub this test started, by its PID.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        child.wait().expect("wait for tabwire-hub")
    }
}

impl Drop for LaunchedHub {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The processes of process group `group` that are still running (zombies left for their new
/// parent to reap do not count): Chromium's helpers are in its group.
pub fn running_in_group(group: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            // /proc/PID/stat: "PID (COMM) STATE PPID PGRP …"; COMM may hold spaces.
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let Some((_, after)) = stat.rsplit_once(") ") else {
                return false;
            };
            let fields: Vec<&str> = after.split_whitespace().collect();
            fields.first() != Some(&"Z") && fields.get(2) == Some(&group.to_string().as_str())
        })
        .collect()
}
