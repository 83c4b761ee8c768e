//! The `tabwire-hub` binary: parses arguments, sets up logging, and runs a [`tabwire_hub::Hub`]
//! with the [`tabwire_hub::Config`] the settings make (every rule is checked there), or one
//! `token`, `pair`, `audit`, `doctor` or `config` subcommand.

mod audit_cli;
mod config_cli;
mod doctor_cli;
mod pair_cli;
mod token_cli;

use clap::{Parser, Subcommand};
use tabwire_hub::state::FileUrls;
use tabwire_hub::{Config, Hub, Mode, Settings};
use tracing_subscriber::EnvFilter;

/// Connects AI agents (MCP) to Chrome profiles running the tabwire extension.
///
/// Without --auth-dir the hub runs in local mode: loopback only, MCP over a private Unix socket
/// (tabwire-mcp). With --auth-dir it runs in hosted mode: /mcp and /browser on one port, behind
/// bearer tokens, one account per token subject (HOSTING.md).
#[derive(Parser)]
#[command(version, about, args_conflicts_with_subcommands = true)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: Settings,
}

#[derive(Subcommand)]
enum Command {
    /// Issue, revoke and list hosted mode's access tokens.
    #[command(subcommand)]
    Token(token_cli::TokenCommand),
    /// Pair a browser with this local hub: prints a one-time code for the extension's popup.
    /// --list and --revoke manage the paired browsers.
    Pair(pair_cli::PairArgs),
    /// Print the audit log (a JSON line per tool call, oldest first), filtered by account and
    /// time; --follow keeps printing new calls.
    Audit(audit_cli::AuditArgs),
    /// Check the running local hub's set-up (browsers, devices, pairing, policy, audit log,
    /// socket): each problem with its fix. Exit code 0: all is well; 1: a problem; 2: no hub
    /// answers.
    Doctor(doctor_cli::DoctorArgs),
    /// Print the configuration an MCP client needs to use tabwire (absolute paths; with --url,
    /// a hosted hub's URL and a token placeholder).
    Config(config_cli::ConfigArgs),
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(log_filter())
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match run(args).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("tabwire-hub: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The log filter from `TABWIRE_LOG` (default `info`). rmcp logs whole requests and results
/// at debug level — typed text, passwords included — so it stays at `info` unless the filter
/// names it explicitly.
fn log_filter() -> EnvFilter {
    let spec = std::env::var("TABWIRE_LOG").unwrap_or_else(|_| "info".into());
    let spec = if spec.contains("rmcp") {
        spec
    } else {
        format!("{spec},rmcp=info")
    };
    EnvFilter::try_new(&spec).unwrap_or_else(|error| {
        eprintln!("tabwire-hub: ignoring TABWIRE_LOG ({error})");
        EnvFilter::new("info")
    })
}

async fn run(args: Args) -> anyhow::Result<std::process::ExitCode> {
    let done = |()| std::process::ExitCode::SUCCESS;
    match args.command {
        Some(Command::Token(command)) => return token_cli::run(command).map(done),
        Some(Command::Pair(pair)) => return pair_cli::run(pair).map(done),
        Some(Command::Audit(audit)) => return audit_cli::run(audit).map(done),
        Some(Command::Doctor(doctor)) => return Ok(doctor_cli::run(doctor).await),
        Some(Command::Config(config)) => return Ok(config_cli::run(config)),
        None => {}
    }
    let config = Config::from_settings(args.serve)?;
    if let Mode::Hosted(hosted) = config.mode()
        && hosted.file_urls == FileUrls::Allowed
    {
        tracing::warn!(
            "--allow-file-urls: agents may open file:// URLs, which read files on the computers \
             of the people whose browsers are connected"
        );
    }
    let hub = Hub::bind(config).await?;
    // The one line operators and tests wait for.
    match (hub.socket_path(), hub.public()) {
        (Some(socket), _) => eprintln!(
            "tabwire-hub listening http={} socket={}",
            hub.http_addr(),
            socket.display()
        ),
        (None, Some(public)) => eprintln!(
            "tabwire-hub listening http={} public={public}",
            hub.http_addr()
        ),
        (None, None) => unreachable!("a hub is local (a socket) or hosted (a public origin)"),
    }
    hub.run(shutdown_signal()).await;
    Ok(std::process::ExitCode::SUCCESS)
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}
