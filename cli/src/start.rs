//! Starting a local hub when none answers: the `tabwire-hub` beside this executable, with
//! `--launch-browser` (unless `--no-browser`), detached in a session of its own so it outlives
//! this call and the terminal, its output appended to `hub.log` in the hub's state directory
//! (`TABWIRE_STATE_DIR`, else `$XDG_STATE_HOME/tabwire` or `~/.local/state/tabwire`). It stops
//! by itself, with its browser, after [`IDLE_EXIT`] with no MCP session (`--idle-exit`; the
//! hub's own `TABWIRE_IDLE_EXIT`, when set, decides instead, 0 meaning never).
//!
//! Then it waits, printing progress on stderr: for the socket (at most 30 s) and, when the hub
//! launched a browser, for a browser to be listed as connected (at most 60 s). Two calls that
//! start hubs at once are fine: the second hub finds the first's socket or port taken and
//! exits, and both calls use the first.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The environment variables only the CLI reads, kept from a hub it starts.
const CLI_ONLY_VARIABLES: [&str; 9] = [
    "TABWIRE_URL",
    "TABWIRE_TOKEN",
    "TABWIRE_TOKEN_FILE",
    "TABWIRE_INSECURE_HTTP",
    "TABWIRE_CA_CERT",
    "TABWIRE_SESSION",
    "TABWIRE_OUTPUT",
    "TABWIRE_NO_BROWSER",
    "TABWIRE_NO_START",
];

use serde_json::Value;
use tabwire_protocol::local::default_state_dir_here;

use crate::error::CliError;
use crate::link::{Link, LocalFailure};
use crate::select::ensure_private;

/// How long a hub the CLI started runs with no MCP session before it stops (30 minutes).
const IDLE_EXIT: &str = "1800";
/// How long a started hub has to answer on its socket.
const SOCKET_WITHIN: Duration = Duration::from_secs(30);
/// How long the browser it launched has to connect.
const BROWSER_WITHIN: Duration = Duration::from_secs(60);
/// How often the socket is tried while waiting.
const SOCKET_POLL: Duration = Duration::from_millis(100);
/// How often the browsers are listed while waiting.
const BROWSER_POLL: Duration = Duration::from_millis(500);

/// How to start a hub.
#[derive(Debug, Clone)]
pub struct StartPlan {
    /// `tabwire-hub`.
    pub program: PathBuf,
    /// `--socket`, when the caller named one (`TABWIRE_SOCKET` reaches the hub through the
    /// environment anyway).
    pub socket: Option<PathBuf>,
    /// Whether the hub launches its browser.
    pub launch_browser: bool,
    /// Its log file.
    pub log: PathBuf,
}

impl StartPlan {
    /// The plan for this process: the hub beside it, its log in the hub's state directory.
    pub fn here(socket: Option<&Path>, launch_browser: bool) -> Result<StartPlan, CliError> {
        let exe = std::env::current_exe()
            .and_then(|exe| exe.canonicalize())
            .map_err(|error| {
                CliError::connection(format!(
                    "no hub is running and tabwire cannot tell where it is installed to start \
                     one ({error}); start tabwire-hub yourself"
                ))
            })?;
        let program = exe
            .parent()
            .map(|dir| dir.join("tabwire-hub"))
            .filter(|program| program.exists())
            .ok_or_else(|| {
                CliError::connection(format!(
                    "no hub is running, and there is no tabwire-hub beside {} to start; install \
                     it there (cargo build --release -p tabwire-hub) or start a hub yourself",
                    exe.display()
                ))
            })?;
        let state_dir = std::env::var_os("TABWIRE_STATE_DIR")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from)
            .or_else(default_state_dir_here)
            .ok_or_else(|| {
                CliError::connection(
                    "no hub is running, and without HOME or TABWIRE_STATE_DIR there is no state \
                     directory for the hub to start with; set TABWIRE_STATE_DIR",
                )
            })?;
        // The hub makes its state directory private too; making it first puts the log there
        // under the same rule.
        ensure_private(&state_dir).map_err(|error| CliError::connection(error.to_string()))?;
        Ok(StartPlan {
            program,
            socket: socket.map(Path::to_path_buf),
            launch_browser,
            log: state_dir.join("hub.log"),
        })
    }

    /// Starts the hub, detached; returns its process.
    pub fn spawn(&self) -> Result<Child, CliError> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.log)
            .map_err(|error| {
                CliError::connection(format!(
                    "cannot open the hub's log {}: {error}",
                    self.log.display()
                ))
            })?;
        let err = log
            .try_clone()
            .map_err(|error| CliError::connection(format!("{}: {error}", self.log.display())))?;
        let mut command = Command::new(&self.program);
        if let Some(socket) = &self.socket {
            command
                .arg("--socket")
                .arg(std::path::absolute(socket).map_err(|error| {
                    CliError::usage(format!("--socket {}: {error}", socket.display()))
                })?);
        }
        // The hub outlives this call: it gets none of the CLI's own settings (a hosted token
        // above all), and it does not hold the shell's working directory.
        for name in CLI_ONLY_VARIABLES {
            command.env_remove(name);
        }
        command.current_dir("/");
        if self.launch_browser {
            command.arg("--launch-browser");
        }
        if std::env::var_os("TABWIRE_IDLE_EXIT").is_none() {
            command.args(["--idle-exit", IDLE_EXIT]);
        }
        command.stdin(Stdio::null()).stdout(log).stderr(err);
        // SAFETY: setsid is async-signal-safe and touches nothing of the parent's.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        command.spawn().map_err(|error| {
            CliError::connection(format!("cannot start {}: {error}", self.program.display()))
        })
    }
}

/// Starts a hub as `plan` says and waits until it serves `socket` (or `also`, the default's
/// home fallback, where it goes when another user took `/tmp/tabwire-<uid>` meanwhile) and,
/// when it launched a browser, until a browser is connected; returns the session.
pub async fn start_and_connect(
    plan: &StartPlan,
    socket: &Path,
    also: Option<&Path>,
) -> Result<Link, CliError> {
    let mut child = plan.spawn()?;
    let pid = child.id();
    eprintln!(
        "tabwire: no hub answered on {}; started tabwire-hub (pid {pid}{}), its log: {}",
        socket.display(),
        if plan.launch_browser {
            ", with the browser it launches"
        } else {
            ""
        },
        plan.log.display()
    );
    eprintln!("tabwire: waiting for the hub's socket…");
    let started = Instant::now();
    let link = loop {
        match Link::local(socket, also).await {
            Ok(link) => break link,
            Err(LocalFailure::Refused(refusal)) => {
                return Err(CliError::connection(refusal.to_string()));
            }
            Err(LocalFailure::Handshake(error)) => {
                return Err(CliError::connection(format!(
                    "the hub started on {} but its MCP handshake failed ({error}); its log: {}",
                    socket.display(),
                    plan.log.display()
                )));
            }
            Err(LocalFailure::Unreachable(_)) => {}
        }
        // A hub that stopped is no reason to give up yet: another call's hub may be the one
        // that won the socket. Only when nothing answers is its exit the answer.
        if let Ok(Some(status)) = child.try_wait() {
            if let Ok(link) = Link::local(socket, also).await {
                break link;
            }
            return Err(CliError::connection(format!(
                "tabwire-hub exited ({status}) before its socket answered; its log: {}{}",
                plan.log.display(),
                log_tail(&plan.log)
            )));
        }
        if started.elapsed() > SOCKET_WITHIN {
            return Err(CliError::connection(format!(
                "tabwire-hub (pid {pid}) did not answer on {} within {} s; it is still running; \
                 its log: {}{}",
                socket.display(),
                SOCKET_WITHIN.as_secs(),
                plan.log.display(),
                log_tail(&plan.log)
            )));
        }
        tokio::time::sleep(SOCKET_POLL).await;
    };
    if plan.launch_browser {
        eprintln!("tabwire: the hub is up; waiting for its browser to connect…");
        wait_for_browser(&link, plan).await?;
    }
    eprintln!("tabwire: ready");
    Ok(link)
}

/// Waits until `list_browsers` shows a connected browser.
async fn wait_for_browser(link: &Link, plan: &StartPlan) -> Result<(), CliError> {
    let started = Instant::now();
    loop {
        let data = link.data_of("list_browsers").await?;
        let connected = data["browsers"]
            .as_array()
            .is_some_and(|browsers| browsers.iter().any(|b| b["connected"] == Value::Bool(true)));
        if connected {
            return Ok(());
        }
        if started.elapsed() > BROWSER_WITHIN {
            return Err(CliError::connection(format!(
                "the hub started, but no browser connected within {} s; the hub's log: {}{}",
                BROWSER_WITHIN.as_secs(),
                plan.log.display(),
                log_tail(&plan.log)
            )));
        }
        tokio::time::sleep(BROWSER_POLL).await;
    }
}

/// The last lines of the log, to show with an error (empty when it cannot be read).
fn log_tail(log: &Path) -> String {
    let Ok(text) = std::fs::read_to_string(log) else {
        return String::new();
    };
    let lines: Vec<&str> = text.lines().collect();
    let tail = &lines[lines.len().saturating_sub(8)..];
    if tail.is_empty() {
        return String::new();
    }
    format!("; its last lines:\n  {}", tail.join("\n  "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_tail_is_short() {
        let path = std::env::temp_dir().join(format!("tabwire-cli-tail-{}", std::process::id()));
        let lines: Vec<String> = (1..=20).map(|n| format!("line {n}")).collect();
        std::fs::write(&path, lines.join("\n")).unwrap();
        let tail = log_tail(&path);
        assert!(tail.contains("line 20") && tail.contains("line 13"));
        assert!(!tail.contains("line 12\n"));
        std::fs::remove_file(&path).unwrap();
        assert_eq!(log_tail(&path), "");
    }
}
