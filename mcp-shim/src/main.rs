//! The `tabwire-mcp` binary: parses arguments and runs [`tabwire_mcp::run`] on stdio.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

/// Stdio MCP server for tabwire: connects your MCP client to a running tabwire-hub.
#[derive(Parser)]
#[command(version, about)]
struct Args {
    /// The hub's Unix socket (the hub's default too): $XDG_RUNTIME_DIR/tabwire/hub.sock, on
    /// macOS $TMPDIR/tabwire/hub.sock, else /tmp/tabwire-<uid>/hub.sock, or, when another user
    /// holds /tmp/tabwire-<uid> (or held it when the hub started),
    /// ~/.local/state/tabwire-run/hub.sock. Its directory must be yours and mode 0700, and the
    /// hub must run as you.
    #[arg(long, env = "TABWIRE_SOCKET")]
    socket: Option<PathBuf>,
    /// Seconds to keep trying when no hub answers at start.
    #[arg(long, default_value_t = 5)]
    wait: u64,
}

fn main() {
    // Exit explicitly: tokio's stdin reader sits in a blocking thread that would otherwise keep
    // the process alive after the pipe has finished.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let code = runtime.block_on(shim());
    std::process::exit(code);
}

async fn shim() -> i32 {
    let args = Args::parse();
    let (socket, also) = match args.socket {
        Some(socket) => (socket, None),
        None => {
            let chosen = tabwire_protocol::local::default_socket_here();
            if let Some(why) = &chosen.fell_back {
                eprintln!("tabwire-mcp: {why}");
            }
            (chosen.path, chosen.also)
        }
    };
    let mut options = tabwire_mcp::Options::new(socket);
    options.also = also;
    options.startup_wait = Duration::from_secs(args.wait);
    match tabwire_mcp::run(options, tokio::io::stdin(), tokio::io::stdout()).await {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("tabwire-mcp: {error}");
            1
        }
    }
}
