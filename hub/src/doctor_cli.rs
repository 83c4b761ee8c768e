//! `tabwire-hub doctor`: asks the running local hub for its `doctor` report and prints it for a
//! person. Exit code 0 when every check passes, 1 when a problem is found, 2 when no hub
//! answers.
//!
//! It talks to the hub the way `tabwire-mcp` does — no endpoint of its own: the socket's
//! directory is checked first (this user's, mode 0700), the listener must run as this user, and
//! then the shim's attach line and plain JSON-RPC lines go over the socket (`initialize`,
//! `notifications/initialized`, `tools/call doctor`). When no hub answers, what can be checked
//! without one is checked here: the socket's directory, the state directory and its pairings.
//!
//! Hosted hubs are not covered here: they are reached over HTTPS, and the hub has no HTTP
//! client (nor TLS) of its own to call their `/mcp` with; an agent calls the `doctor` tool
//! there instead.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::{Value, json};
use tabwire_protocol::local::{LocalControl, Selections, current_uid, default_socket_here};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use tabwire_hub::config::default_state_dir_here;
use tabwire_hub::doctor::{self, Check, Report};
use tabwire_hub::pairing;

/// How long the hub has to answer the whole exchange.
const ANSWER_WITHIN: Duration = Duration::from_secs(15);

/// `tabwire-hub doctor [--socket PATH] [--state-dir DIR] [--json]`.
#[derive(Args)]
pub struct DoctorArgs {
    /// The hub's Unix socket, as given to the hub. Default: the hub's own default
    /// ($XDG_RUNTIME_DIR/tabwire/hub.sock, or /tmp/tabwire-<uid>/hub.sock).
    #[arg(long, env = "TABWIRE_SOCKET")]
    socket: Option<PathBuf>,
    /// The hub's state directory, checked here when no hub answers (as given to the hub).
    #[arg(long, env = "TABWIRE_STATE_DIR")]
    state_dir: Option<PathBuf>,
    /// Print the report as one JSON object (the doctor tool's data) instead of lines.
    #[arg(long)]
    json: bool,
}

/// Why the hub's report could not be had.
enum Unreached {
    /// Nothing answers on the socket: exit 2.
    NotRunning(String),
    /// Something answers, but it is not safe to talk to, or it did not give a report: a
    /// problem (exit 1), with its fix.
    Problem(Check),
}

/// Runs `doctor`; the exit code says what it found.
pub async fn run(args: DoctorArgs) -> ExitCode {
    let socket = args.socket.clone().unwrap_or_else(default_socket_answering);
    match ask(&socket).await {
        Ok(report) => {
            print_report(&report, args.json);
            if report.problems().next().is_some() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(Unreached::Problem(check)) => {
            let mut checks = vec![check];
            checks.extend(offline_checks(&socket, args.state_dir.as_deref()));
            print_checks(&checks, args.json);
            ExitCode::from(1)
        }
        Err(Unreached::NotRunning(why)) => {
            let mut start = "tabwire-hub".to_owned();
            if let Some(path) = &args.socket {
                start.push_str(&format!(" --socket {}", path.display()));
            }
            if let Some(dir) = &args.state_dir {
                start.push_str(&format!(" --state-dir {}", dir.display()));
            }
            let mut checks = vec![Check::fail(
                "hub",
                format!("the hub is not running ({why})"),
                format!("start it: {start} (and keep it running)"),
            )];
            checks.extend(offline_checks(&socket, args.state_dir.as_deref()));
            print_checks(&checks, args.json);
            ExitCode::from(2)
        }
    }
}

/// The default socket where a hub answers: in `/tmp`, else the home fallback beside it
/// (`DefaultSocket::also`: a hub that started while another user held `/tmp/tabwire-<uid>`
/// stays there), as `tabwire-mcp` finds it. The probe only connects; `ask` checks the directory
/// and the listener's user before anything is said.
fn default_socket_answering() -> PathBuf {
    let chosen = default_socket_here();
    let answers = |path: &Path| std::os::unix::net::UnixStream::connect(path).is_ok();
    match chosen.also {
        Some(also) if !answers(&chosen.path) && answers(&also) => also,
        _ => chosen.path,
    }
}

/// What can be checked without a hub: the socket's directory (the socket itself is gone or
/// dead with the hub) and the state directory with its pairings.
fn offline_checks(socket: &Path, state_dir: Option<&Path>) -> Vec<Check> {
    let mut checks = Vec::new();
    if let Some(dir) = socket.parent().filter(|dir| dir.exists()) {
        checks.push(match doctor::dir_problem(dir, "the socket's directory") {
            Some(problem) => problem.named("socket"),
            None => Check::pass(
                "socket",
                format!("{} (its directory is yours, 0700)", socket.display()),
            ),
        });
    }
    let state_dir = state_dir
        .map(Path::to_path_buf)
        .or_else(default_state_dir_here);
    if let Some(dir) = state_dir.filter(|dir| dir.exists()) {
        let check = doctor::state_dir_check(&dir);
        let private = check.ok;
        checks.push(check);
        if private {
            checks.push(match pairing::summary(&dir) {
                Ok(summary) => doctor::pairing_check(&summary),
                Err(error) => Check::fail(
                    "pairing",
                    error.to_string(),
                    "move pairings.json away and pair again with `tabwire-hub pair`",
                ),
            });
        }
    }
    checks
}

/// Connects as the shim does and calls the `doctor` tool.
async fn ask(socket: &Path) -> Result<Report, Unreached> {
    if let Some(dir) = socket.parent().filter(|dir| !dir.as_os_str().is_empty())
        && dir.exists()
        && let Some(problem) = doctor::dir_problem(dir, "the socket's directory")
    {
        // Whoever could write there could pose as the hub: nothing is sent.
        let mut problem = problem.named("socket");
        problem.detail.push_str("; doctor did not connect");
        return Err(Unreached::Problem(problem));
    }
    let stream = UnixStream::connect(socket).await.map_err(|error| {
        Unreached::NotRunning(format!("nothing answers on {}: {error}", socket.display()))
    })?;
    let own = current_uid();
    match stream.peer_cred().map(|cred| cred.uid()) {
        Ok(uid) if uid == own => {}
        Ok(uid) => {
            return Err(Unreached::Problem(Check::fail(
                "socket",
                format!(
                    "the process listening on {} runs as user {uid}, not as you (user {own})",
                    socket.display()
                ),
                "stop that process and start tabwire-hub as yourself, or pass --socket",
            )));
        }
        Err(error) => {
            return Err(Unreached::Problem(Check::fail(
                "socket",
                format!("cannot tell who listens on {} ({error})", socket.display()),
                "start tabwire-hub as yourself, or pass --socket",
            )));
        }
    }
    let (read, write) = stream.into_split();
    let mut link = Link {
        lines: BufReader::new(read),
        write,
    };
    tokio::time::timeout(ANSWER_WITHIN, link.doctor())
        .await
        .unwrap_or_else(|_| {
            Err(Unreached::Problem(Check::fail(
                "hub",
                format!(
                    "the hub on {} did not answer within {} s",
                    socket.display(),
                    ANSWER_WITHIN.as_secs()
                ),
                "restart tabwire-hub; its log may say why it hangs",
            )))
        })
}

/// One MCP session over the socket, in JSON-RPC lines.
struct Link {
    lines: BufReader<OwnedReadHalf>,
    write: OwnedWriteHalf,
}

impl Link {
    async fn doctor(&mut self) -> Result<Report, Unreached> {
        let session = format!("doctor-{}", std::process::id());
        self.send(&LocalControl::attach(session, Selections::default()).to_line())
            .await?;
        self.request(
            1,
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                // The report comes back as data: the envelope is asked for.
                "capabilities": {"experimental": {tabwire_protocol::local::ENVELOPE_CAPABILITY: {}}},
                "clientInfo": {"name": "tabwire-hub doctor", "version": env!("CARGO_PKG_VERSION")},
            }),
        )
        .await?;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.send(&format!("{initialized}\n")).await?;
        let result = self
            .request(2, "tools/call", json!({"name": "doctor", "arguments": {}}))
            .await?;
        let envelope = &result["structuredContent"];
        if envelope["ok"] != Value::Bool(true) {
            return Err(Unreached::Problem(Check::fail(
                "hub",
                format!("the doctor tool failed: {}", envelope["error"]["message"]),
                "restart tabwire-hub",
            )));
        }
        serde_json::from_value(envelope["data"].clone()).map_err(|error| {
            Unreached::Problem(Check::fail(
                "hub",
                format!("the hub's report is not one this doctor reads ({error})"),
                "run the tabwire-hub doctor of the same release as the running hub",
            ))
        })
    }

    /// Sends a request and waits for its answer's `result`, skipping the hub's control lines
    /// and notifications.
    async fn request(&mut self, id: u64, method: &str, params: Value) -> Result<Value, Unreached> {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&format!("{request}\n")).await?;
        loop {
            let mut line = String::new();
            let read = self.lines.read_line(&mut line).await.map_err(gone)?;
            if read == 0 {
                return Err(Unreached::NotRunning(
                    "the hub closed the connection".to_owned(),
                ));
            }
            if LocalControl::parse(line.trim_end()).is_some() {
                continue;
            }
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message["id"] != json!(id) {
                continue;
            }
            if let Some(error) = message.get("error") {
                return Err(Unreached::Problem(Check::fail(
                    "hub",
                    format!("the hub refused {method}: {}", error["message"]),
                    "the running hub may be older than this doctor: restart it with this \
                     release's tabwire-hub",
                )));
            }
            return Ok(message["result"].clone());
        }
    }

    async fn send(&mut self, line: &str) -> Result<(), Unreached> {
        self.write.write_all(line.as_bytes()).await.map_err(gone)
    }
}

fn gone(error: std::io::Error) -> Unreached {
    Unreached::NotRunning(format!("the connection failed: {error}"))
}

fn print_report(report: &Report, json: bool) {
    if json {
        println!(
            "{}",
            serde_json::to_string(report).expect("a report serialises")
        );
        return;
    }
    println!(
        "tabwire-hub {} ({} mode, protocol {})",
        report.hub_version, report.mode, report.protocol_version
    );
    for check in &report.checks {
        println!("{}", check.render());
    }
    for peer in &report.peers {
        match &peer.reason {
            Some(reason) => println!("  {}; it said: {reason}", Report::peer_line(peer)),
            None => println!("  {}", Report::peer_line(peer)),
        }
    }
    print_summary(report.problems().count());
}

fn print_checks(checks: &[Check], json: bool) {
    if json {
        println!("{}", json!({ "checks": checks }));
        return;
    }
    for check in checks {
        println!("{}", check.render());
    }
    print_summary(checks.iter().filter(|check| !check.ok).count());
}

fn print_summary(problems: usize) {
    match problems {
        0 => println!("No problem found."),
        1 => println!("1 problem."),
        n => println!("{n} problems."),
    }
}
