//! The `tabwire-android` binary: arguments, logging, the checks that must pass before anything
//! is served (the hub URL, the owner's policy, adb itself, the pairing key's directory), then
//! the [`Backend`] until SIGINT or SIGTERM.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use tabwire_android::adb::AdbProgram;
use tabwire_android::backend::{Backend, check_adb};
use tabwire_android::device::DeviceOptions;
use tabwire_android::endpoint::{DEFAULT_HUB, HubEndpoint, Mode, read_secret_file};
use tabwire_android::keys::{CodeSource, Credentials, KeyStore, default_state_dir};
use tabwire_protocol::pairing::PairingCode;
use tabwire_protocol::policy::Policy;
use tracing_subscriber::EnvFilter;

/// Serves the Android phones and emulators attached to adb to a tabwire hub: one device
/// connection per phone, hot-plugged as adb sees them come and go.
///
/// With a local hub (ws://, the default) the backend pairs once — with a code from
/// `tabwire-hub pair --device` (TABWIRE_PAIRING_CODE or --pairing-code-file), or by running
/// that command itself — and keeps the key in --state-dir. With a hosted hub (wss://) it sends
/// its token (TABWIRE_TOKEN or --token-file). Secrets never go on the command line: other users
/// read it in `ps`.
#[derive(Parser)]
#[command(version, about)]
struct Args {
    /// The hub's device endpoint.
    #[arg(long, value_name = "URL", default_value = DEFAULT_HUB)]
    hub: String,
    /// The adb program (default: $ADB, else `adb` on PATH).
    #[arg(long, value_name = "PATH")]
    adb: Option<PathBuf>,
    /// Serve only this adb serial (repeatable); default: every device adb lists.
    #[arg(long = "serial", value_name = "SERIAL")]
    serials: Vec<String>,
    /// A file holding a hosted hub's device token, readable by you alone (chmod 600); or set
    /// TABWIRE_TOKEN.
    #[arg(long, env = "TABWIRE_TOKEN_FILE", value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Removed: a token on the command line is read by every user in `ps`.
    #[arg(long, hide = true, value_name = "TOKEN")]
    token: Option<String>,
    /// Send the token over plain ws:// to a loopback address (a hosted hub on this machine
    /// without TLS), where another local user may listen on a port the hub left free.
    #[arg(long, env = "TABWIRE_INSECURE_HTTP", value_parser = clap::builder::BoolishValueParser::new())]
    insecure_http: bool,
    /// Where the pairing key is kept (default: $XDG_STATE_HOME/tabwire-android, else
    /// ~/.local/state/tabwire-android).
    #[arg(long, env = "TABWIRE_ANDROID_STATE_DIR", value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Allow destructive options (clearing an app's data).
    #[arg(long)]
    allow_destructive: bool,
    /// The device owner's policy (TOML, the same shape as the hub's --policy: docs/policy.md);
    /// the stricter of it and the operator's applies.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// A file holding a one-time code from `tabwire-hub pair --device`, readable by you alone
    /// (chmod 600), to pair with a local hub; or set TABWIRE_PAIRING_CODE.
    #[arg(long, env = "TABWIRE_PAIRING_CODE_FILE", value_name = "FILE")]
    pairing_code_file: Option<PathBuf>,
    /// Removed: a code on the command line is read by every user in `ps`, and whoever uses it
    /// first pairs.
    #[arg(long, hide = true, value_name = "CODE")]
    pairing_code: Option<String>,
    /// The tabwire-hub program that makes pairing codes when there is neither a key nor a
    /// pairing code (default: the tabwire-hub beside this program, else on PATH).
    #[arg(long, value_name = "PATH")]
    hub_bin: Option<PathBuf>,
    /// A PEM file of certificate authorities to trust for a wss:// hub, besides the system's.
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(log_filter())
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("tabwire-android: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The log filter from `TABWIRE_LOG`, else `RUST_LOG` (default `info`).
fn log_filter() -> EnvFilter {
    let spec = std::env::var("TABWIRE_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info".into());
    EnvFilter::try_new(&spec).unwrap_or_else(|error| {
        eprintln!("tabwire-android: ignoring the log filter {spec:?} ({error})");
        EnvFilter::new("info")
    })
}

/// What the removed flags say: where the secret goes now.
const TOKEN_FLAG_GONE: &str = "--token is no longer taken: other users of the machine read every \
     command line in ps. Set TABWIRE_TOKEN in the environment, or put the token in a file only \
     you can read (chmod 600) and pass --token-file FILE";
const CODE_FLAG_GONE: &str = "--pairing-code is no longer taken: other users of the machine read \
     every command line in ps, and whoever uses a code first pairs. Set TABWIRE_PAIRING_CODE in \
     the environment, or put the code in a file only you can read (chmod 600) and pass \
     --pairing-code-file FILE";

/// A secret from its file (which wins) or its variable; `None` when neither is set.
fn secret(
    file: Option<&std::path::Path>,
    flag: &str,
    variable: &str,
) -> anyhow::Result<Option<String>> {
    match file {
        Some(path) => read_secret_file(path)
            .map(Some)
            .map_err(|why| anyhow::anyhow!("{flag} {}: {why}", path.display())),
        None => Ok(std::env::var(variable)
            .ok()
            .filter(|value| !value.trim().is_empty())),
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    if args.token.is_some() {
        anyhow::bail!(TOKEN_FLAG_GONE);
    }
    if args.pairing_code.is_some() {
        anyhow::bail!(CODE_FLAG_GONE);
    }
    let token = secret(args.token_file.as_deref(), "--token-file", "TABWIRE_TOKEN")?;
    let endpoint = Arc::new(HubEndpoint::new(
        &args.hub,
        token,
        args.ca_cert.as_deref(),
        args.insecure_http,
    )?);
    let owner_policy = match &args.policy {
        Some(path) => Some(read_policy(path)?),
        None => None,
    };
    let pairing_code = secret(
        args.pairing_code_file.as_deref(),
        "--pairing-code-file",
        "TABWIRE_PAIRING_CODE",
    )?
    .as_deref()
    .map(PairingCode::parse)
    .transpose()
    .map_err(|error| anyhow::anyhow!("the pairing code: {error}"))?;

    let adb = AdbProgram::choose(args.adb.clone());
    let program = adb.program().display().to_string();
    let version = check_adb(&adb, &program)
        .await
        .map_err(anyhow::Error::msg)?;
    tracing::info!(adb = %program, %version, "using adb");

    let credentials = match endpoint.mode() {
        Mode::Local => Some(local_credentials(&args, &endpoint, pairing_code)?),
        Mode::Hosted(token) => {
            if pairing_code.is_some() {
                tracing::warn!("a pairing code is for a local hub; a hosted hub takes a token");
            }
            if token.is_none() {
                tracing::warn!(
                    "no token (TABWIRE_TOKEN or --token-file) for the hosted hub: it will refuse \
                     the devices"
                );
            }
            None
        }
    };
    if args.allow_destructive {
        tracing::warn!("--allow-destructive: agents may clear apps' data on the attached devices");
    }
    // The one line operators and tests wait for.
    eprintln!(
        "tabwire-android serving hub={} adb={program}",
        endpoint.url()
    );
    Backend {
        adb: Arc::new(adb),
        endpoint,
        credentials,
        options: DeviceOptions {
            allow_destructive: args.allow_destructive,
            owner_policy,
        },
        serials: args.serials,
    }
    .run(shutdown_signal())
    .await;
    Ok(())
}

/// The device owner's policy file: it must parse, or nothing is served.
fn read_policy(path: &std::path::Path) -> anyhow::Result<Policy> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("--policy {}", path.display()))?;
    let policy: Policy = toml::from_str(&text)
        .map_err(|error| anyhow::anyhow!("--policy {}: {error}", path.display()))?;
    policy
        .validate()
        .map_err(|error| anyhow::anyhow!("--policy {}: {error}", path.display()))?;
    Ok(policy)
}

/// Local mode's key store and where codes come from.
fn local_credentials(
    args: &Args,
    endpoint: &HubEndpoint,
    pairing_code: Option<PairingCode>,
) -> anyhow::Result<Arc<Credentials>> {
    let dir = match &args.state_dir {
        Some(dir) => dir.clone(),
        None => default_state_dir(
            std::env::var("XDG_STATE_HOME").ok().as_deref(),
            std::env::var("HOME").ok().as_deref(),
        )
        .context("cannot tell where to keep the pairing key: give --state-dir")?,
    };
    let store = KeyStore::open(&dir)?;
    let source = match pairing_code {
        Some(code) => CodeSource::Given(code),
        None if endpoint.is_loopback() => CodeSource::HubProgram(hub_program(args)),
        None => CodeSource::Nothing(format!(
            "no pairing key for {} and no pairing code: run `tabwire-hub pair --device` on the \
             hub's machine and start tabwire-android with the code in TABWIRE_PAIRING_CODE (or \
             in a file only you can read, given as --pairing-code-file)",
            endpoint.url()
        )),
    };
    let credentials = Credentials::new(store, endpoint.url(), source)?;
    if !credentials.has_key() {
        tracing::info!(hub = %endpoint.url(), "not paired with this hub yet: the first device pairs");
    }
    Ok(credentials)
}

/// `--hub-bin`, else the `tabwire-hub` beside this program, else `tabwire-hub` on PATH.
fn hub_program(args: &Args) -> PathBuf {
    if let Some(path) = &args.hub_bin {
        return path.clone();
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("tabwire-hub")))
        .filter(|sibling| sibling.is_file())
        .unwrap_or_else(|| PathBuf::from("tabwire-hub"))
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}
