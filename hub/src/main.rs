//! The `tabwire-hub` binary: parses arguments, sets up logging, and runs a [`tabwire_hub::Hub`]
//! with the [`tabwire_hub::Config`] the settings make (every rule is checked there), or one
//! `token`, `pair`, `audit`, `doctor`, `config` or `find-chrome` subcommand. With
//! `--launch-browser` it also starts the launched browser once listening, prints what the
//! person needs once that browser is connected (`launch_cli`), and stops it on the way out.

mod audit_cli;
mod config_cli;
mod doctor_cli;
mod launch_cli;
mod pair_cli;
mod token_cli;

use clap::{Parser, Subcommand};
use tabwire_hub::chrome;
use tabwire_hub::config::default_state_dir_here;
use tabwire_hub::state::FileUrls;
use tabwire_hub::{Config, Hub, Mode, Settings};
use tracing_subscriber::EnvFilter;

/// Connects AI agents (MCP) to Chrome profiles running the tabwire extension.
///
/// Without --auth-dir the hub runs in local mode: loopback only, MCP over a private Unix socket
/// (tabwire-mcp). With --auth-dir it runs in hosted mode: /mcp and /browser on one port, behind
/// bearer tokens, one account per token subject (HOSTING.md).
#[derive(Parser)]
#[command(version = tabwire_hub::doctor::VERSION, about, args_conflicts_with_subcommands = true)]
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
    /// Print the path of the Chromium or Google Chrome that --launch-browser would run (exit
    /// code 0), or every place looked at and the fix (exit code 1). TABWIRE_CHROME overrides
    /// the search.
    FindChrome,
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
        Some(Command::FindChrome) => return Ok(launch_cli::find_chrome()),
        None => {}
    }
    let config = Config::from_settings(args.serve)?;
    // Found before anything is bound, so a missing browser stops the hub at once.
    let browser = match config.launch() {
        Some(_) => {
            Some(chrome::find().map_err(|missing| anyhow::anyhow!("--launch-browser: {missing}"))?)
        }
        None => None,
    };
    let extension = config.launch().map(|launch| launch.extension.clone());
    if config.file_urls() == FileUrls::Allowed {
        let whose = match config.mode() {
            Mode::Hosted(_) => "the computers of the people whose browsers are connected",
            Mode::Local { .. } => "this computer",
        };
        tracing::warn!(
            "--allow-file-urls: agents may open file:// URLs, which read files on {whose}"
        );
    }
    if let Mode::Hosted(hosted) = config.mode() {
        // Base64 in JSON: four characters for three bytes, and a little for the rest.
        let carried = (hosted.limits.body_bytes as u64).saturating_sub(4096) / 4 * 3;
        if carried < config.uploads().max_call_bytes {
            tracing::info!(
                "upload_file calls carry their files in the /mcp body: at most about {} MB of \
                 files per call under --max-body-bytes {} (the upload cap is {} MB)",
                carried / 1_000_000,
                hosted.limits.body_bytes,
                config.uploads().max_call_bytes / 1_000_000
            );
        }
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
    // Started here, on the main thread, which lives as long as the hub (see launch::start).
    let mut launched = match browser {
        Some(browser) => hub.launch_browser(browser).transpose()?,
        None => None,
    };
    if let (Some(running), Some(extension)) = (launched.as_mut(), extension)
        && let Some(events) = running.take_events()
    {
        let reach = reach(&hub, extension)?;
        tokio::spawn(launch_cli::report(events, reach));
    }
    let unused = hub.unused();
    hub.run(async move {
        tokio::select! {
            () = shutdown_signal() => {}
            () = unused => {}
        }
    })
    .await;
    if let Some(running) = launched {
        running.stop().await;
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// How the ready block names this hub: absolute paths, and the places that are not the
/// defaults.
fn reach(hub: &Hub, extension: std::path::PathBuf) -> anyhow::Result<launch_cli::Reach> {
    let exe = std::env::current_exe()?.canonicalize()?;
    let shim = exe.with_file_name("tabwire-mcp");
    let socket = hub
        .socket_path()
        .filter(|socket| *socket != tabwire_protocol::local::default_socket_path_here())
        .map(std::path::Path::to_path_buf);
    let state_dir = hub
        .state()
        .layout
        .state_dir
        .clone()
        .filter(|dir| Some(dir) != default_state_dir_here().as_ref());
    Ok(launch_cli::Reach {
        hub: exe,
        shim,
        socket,
        state_dir,
        browser_url: hub.state().browser_url.clone(),
        extension,
    })
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}
