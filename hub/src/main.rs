//! The `tabwire-hub` binary: parses arguments, sets up logging, runs [`tabwire_hub::Hub`].

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use tabwire_hub::accounts::Limits;
use tabwire_hub::auth::{Authenticator, KeySource};
use tabwire_hub::hosted::PublicOrigin;
use tabwire_hub::{HostedConfig, Hub, Mode};
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
    serve: ServeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Issue, revoke and list hosted mode's access tokens.
    #[command(subcommand)]
    Token(tabwire_hub::token_cli::TokenCommand),
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Address for HTTP. Local mode binds loopback only; hosted mode may bind any address.
    #[arg(long, env = "TABWIRE_HOST", default_value = "127.0.0.1")]
    host: IpAddr,
    /// TCP port; 0 picks a free one.
    #[arg(long, env = "TABWIRE_PORT", default_value_t = tabwire_hub::DEFAULT_PORT)]
    port: u16,
    /// Unix socket for local MCP sessions (tabwire-mcp), local mode only. Default:
    /// $XDG_RUNTIME_DIR/tabwire/hub.sock, or /tmp/tabwire-<uid>/hub.sock.
    #[arg(long, env = "TABWIRE_SOCKET")]
    socket: Option<PathBuf>,
    /// Hosted mode: the directory with the token key, the issued-token ledger and the
    /// revocation list (see `tabwire-hub token`).
    #[arg(long, env = "TABWIRE_AUTH_DIR")]
    auth_dir: Option<PathBuf>,
    /// Hosted mode: where clients reach the hub, https://host[:port][/prefix]. Requests for any
    /// other Host are refused.
    #[arg(long, env = "TABWIRE_PUBLIC_ORIGIN")]
    public_origin: Option<String>,
    /// Hosted mode: verify tokens with these public keys (a JWKS file) instead of the auth
    /// directory's HS256 key.
    #[arg(long, env = "TABWIRE_JWKS")]
    jwks: Option<PathBuf>,
    /// The one algorithm tokens must use: HS256 (the hub's own key), or RS256 or EdDSA (with
    /// --jwks).
    #[arg(long, env = "TABWIRE_JWT_ALG", default_value = "HS256")]
    jwt_alg: String,
    /// Hosted mode with --jwks: tokens must carry this `iss` (your issuer's name).
    #[arg(long, env = "TABWIRE_JWT_ISSUER")]
    jwt_issuer: Option<String>,
    /// Hosted mode: browsers one account may have connected at once.
    #[arg(long, default_value_t = Limits::default().browsers)]
    max_browsers_per_account: usize,
    /// Hosted mode: MCP sessions (with an Mcp-Session-Id) one account may keep open.
    #[arg(long, default_value_t = Limits::default().sessions)]
    max_sessions_per_account: usize,
    /// Hosted mode: /mcp requests (POST, DELETE) one account may have open at once.
    #[arg(long, default_value_t = Limits::default().requests)]
    max_requests_per_account: usize,
    /// Hosted mode: the largest /mcp request body, in bytes.
    #[arg(long, default_value_t = Limits::default().body_bytes)]
    max_body_bytes: usize,
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
    if let Some(Command::Token(command)) = args.command {
        return tabwire_hub::token_cli::run(command);
    }
    let args = args.serve;
    let addr = SocketAddr::new(args.host, args.port);
    let Some(auth_dir) = args.auth_dir else {
        if !args.host.is_loopback() {
            anyhow::bail!(
                "refusing to listen on {} without authentication; local mode binds loopback only \
                 (give --auth-dir for hosted mode)",
                args.host
            );
        }
        if args.public_origin.is_some() || args.jwks.is_some() {
            anyhow::bail!("--public-origin and --jwks belong to hosted mode: give --auth-dir too");
        }
        let socket = args.socket.unwrap_or_else(|| {
            // SAFETY: geteuid has no preconditions and cannot fail.
            let uid = unsafe { libc::geteuid() };
            tabwire_protocol::default_socket_path(
                std::env::var("XDG_RUNTIME_DIR").ok().as_deref(),
                uid,
            )
        });
        let hub = Hub::bind(
            addr,
            Mode::Local {
                socket_path: socket,
            },
        )
        .await?;
        // The one line operators and tests wait for.
        eprintln!(
            "tabwire-hub listening http={} socket={}",
            hub.http_addr(),
            hub.socket_path()
                .expect("local mode has a socket")
                .display()
        );
        return hub.run(shutdown_signal()).await;
    };
    if args.socket.is_some() {
        anyhow::bail!("hosted mode serves MCP on /mcp; --socket is for local mode only");
    }
    let Some(public) = args.public_origin else {
        anyhow::bail!(
            "hosted mode needs --public-origin https://host[/prefix]: the address clients use, \
             which requests must name"
        );
    };
    let public = PublicOrigin::parse(&public).map_err(anyhow::Error::msg)?;
    let algorithm: jsonwebtoken::Algorithm = match args.jwt_alg.to_ascii_uppercase().as_str() {
        "HS256" => jsonwebtoken::Algorithm::HS256,
        "RS256" => jsonwebtoken::Algorithm::RS256,
        "EDDSA" => jsonwebtoken::Algorithm::EdDSA,
        other => anyhow::bail!("--jwt-alg must be HS256, RS256 or EdDSA, not {other}"),
    };
    let source = match (args.jwks, algorithm) {
        (None, jsonwebtoken::Algorithm::HS256) => KeySource::Secret,
        (None, _) => anyhow::bail!("--jwt-alg {} needs --jwks", args.jwt_alg),
        (Some(_), jsonwebtoken::Algorithm::HS256) => {
            anyhow::bail!("--jwks takes --jwt-alg RS256 or EdDSA")
        }
        (Some(path), algorithm) => KeySource::Jwks(path, algorithm),
    };
    let mut auth = Authenticator::load(&auth_dir, &source)?;
    if let Some(issuer) = &args.jwt_issuer {
        if matches!(source, KeySource::Secret) {
            anyhow::bail!("--jwt-issuer is for tokens from your own issuer: give --jwks too");
        }
        auth = auth.with_issuer(issuer);
    }
    let limits = Limits {
        browsers: args.max_browsers_per_account.max(1),
        sessions: args.max_sessions_per_account.max(1),
        requests: args.max_requests_per_account.max(1),
        body_bytes: args.max_body_bytes.max(1024),
    };
    let hub = Hub::bind(
        addr,
        Mode::Hosted(HostedConfig {
            public: public.clone(),
            auth: Arc::new(auth),
            limits,
        }),
    )
    .await?;
    eprintln!(
        "tabwire-hub listening http={} public={public}",
        hub.http_addr()
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
