//! The `tabwire-hub` binary: parses arguments, sets up logging, runs [`tabwire_hub::Hub`].

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use clap::Parser;
use tracing_subscriber::EnvFilter;

/// Connects AI agents (MCP) to Chrome profiles running the tabwire extension.
#[derive(Parser)]
#[command(version, about)]
struct Args {
    /// Address for HTTP and the extension's WebSocket (/browser). Keep it on loopback: this mode
    /// has no authentication.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// TCP port; 0 picks a free one.
    #[arg(long, default_value_t = tabwire_hub::DEFAULT_PORT)]
    port: u16,
    /// Unix socket for local MCP sessions (tabwire-mcp). Default: $XDG_RUNTIME_DIR/tabwire/hub.sock,
    /// or /tmp/tabwire-<uid>/hub.sock.
    #[arg(long, env = "TABWIRE_SOCKET")]
    socket: Option<PathBuf>,
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
        Ok(()) => std::process::ExitCode::SUCCESS,
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

async fn run(args: Args) -> anyhow::Result<()> {
    if !args.host.is_loopback() {
        anyhow::bail!(
            "refusing to listen on {} without authentication; local mode binds loopback only",
            args.host
        );
    }
    let socket = args.socket.unwrap_or_else(|| {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        tabwire_protocol::default_socket_path(std::env::var("XDG_RUNTIME_DIR").ok().as_deref(), uid)
    });
    let hub = tabwire_hub::Hub::bind(SocketAddr::new(args.host, args.port), socket).await?;
    // The one line operators and tests wait for.
    eprintln!(
        "tabwire-hub listening http={} socket={}",
        hub.http_addr(),
        hub.socket_path().display()
    );
    hub.run(shutdown_signal()).await
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}
