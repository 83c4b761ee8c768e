//! What every backend binary shares: the hub's arguments (URL, token, pairing code, CA, the
//! owner's policy), logging, and the checks that must pass before anything is served. Secrets
//! never go on the command line: other users read it in `ps`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use tabwire_protocol::pairing::PairingCode;
use tabwire_protocol::policy::Policy;
use tracing_subscriber::EnvFilter;

use crate::endpoint::{DEFAULT_HUB, HubEndpoint, Mode, read_secret_file};
use crate::keys::{CodeSource, Credentials, KeyStore, default_state_dir};

/// The arguments about the hub, flattened into each backend's own.
#[derive(clap::Args, Debug)]
pub struct HubArgs {
    /// The hub's device endpoint.
    #[arg(long, value_name = "URL", default_value = DEFAULT_HUB)]
    pub hub: String,
    /// A file holding a hosted hub's device token, readable by you alone (chmod 600); or set
    /// TABWIRE_TOKEN.
    #[arg(long, env = "TABWIRE_TOKEN_FILE", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Removed: a token on the command line is read by every user in `ps`.
    #[arg(long, hide = true, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Send the token over plain ws:// to a loopback address (a hosted hub on this machine
    /// without TLS), where another local user may listen on a port the hub left free.
    #[arg(long, env = "TABWIRE_INSECURE_HTTP", value_parser = clap::builder::BoolishValueParser::new())]
    pub insecure_http: bool,
    /// The device owner's policy (TOML, the same shape as the hub's --policy: docs/policy.md);
    /// the stricter of it and the operator's applies.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// A file holding a one-time code from `tabwire-hub pair --device`, readable by you alone
    /// (chmod 600), to pair with a local hub; or set TABWIRE_PAIRING_CODE.
    #[arg(long, env = "TABWIRE_PAIRING_CODE_FILE", value_name = "FILE")]
    pub pairing_code_file: Option<PathBuf>,
    /// Removed: a code on the command line is read by every user in `ps`, and whoever uses it
    /// first pairs.
    #[arg(long, hide = true, value_name = "CODE")]
    pub pairing_code: Option<String>,
    /// The tabwire-hub program that makes pairing codes when there is neither a key nor a
    /// pairing code (default: the tabwire-hub beside this program, else on PATH).
    #[arg(long, value_name = "PATH")]
    pub hub_bin: Option<PathBuf>,
    /// A PEM file of certificate authorities to trust for a wss:// hub, besides the system's.
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
}

/// What [`HubArgs`] come to once checked: the endpoint, local mode's pairing and the owner's
/// policy.
pub struct Hub {
    /// The hub.
    pub endpoint: Arc<HubEndpoint>,
    /// Local mode's pairing, shared by all devices; `None` for a hosted hub.
    pub credentials: Option<Arc<Credentials>>,
    /// The device owner's `--policy`.
    pub owner_policy: Option<Policy>,
}

const TOKEN_FLAG_GONE: &str = "--token is no longer taken: other users of the machine read every \
     command line in ps. Set TABWIRE_TOKEN in the environment, or put the token in a file only \
     you can read (chmod 600) and pass --token-file FILE";
const CODE_FLAG_GONE: &str = "--pairing-code is no longer taken: other users of the machine read \
     every command line in ps, and whoever uses a code first pairs. Set TABWIRE_PAIRING_CODE in \
     the environment, or put the code in a file only you can read (chmod 600) and pass \
     --pairing-code-file FILE";

/// The process's exit: 0 after `outcome` succeeded, else 1 with its error on standard error.
pub fn exit(program: &str, outcome: anyhow::Result<()>) -> std::process::ExitCode {
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{program}: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Logs to standard error, filtered by `TABWIRE_LOG`, else `RUST_LOG`, else `info`.
pub fn init_logging(program: &str) {
    let spec = std::env::var("TABWIRE_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info".into());
    let filter = EnvFilter::try_new(&spec).unwrap_or_else(|error| {
        eprintln!("{program}: ignoring the log filter {spec:?} ({error})");
        EnvFilter::new("info")
    });
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

impl HubArgs {
    /// Checks the arguments and reads what they name: the token, the pairing code, the owner's
    /// policy, and (for a local hub) the pairing key in `state_dir`, else
    /// `$XDG_STATE_HOME/PROGRAM`.
    pub fn open(&self, program: &str, state_dir: Option<&Path>) -> anyhow::Result<Hub> {
        if self.token.is_some() {
            anyhow::bail!(TOKEN_FLAG_GONE);
        }
        if self.pairing_code.is_some() {
            anyhow::bail!(CODE_FLAG_GONE);
        }
        let token = secret(self.token_file.as_deref(), "--token-file", "TABWIRE_TOKEN")?;
        let endpoint = Arc::new(HubEndpoint::new(
            &self.hub,
            token,
            self.ca_cert.as_deref(),
            self.insecure_http,
        )?);
        let owner_policy = self.policy.as_deref().map(read_policy).transpose()?;
        let pairing_code = secret(
            self.pairing_code_file.as_deref(),
            "--pairing-code-file",
            "TABWIRE_PAIRING_CODE",
        )?
        .as_deref()
        .map(PairingCode::parse)
        .transpose()
        .map_err(|error| anyhow::anyhow!("the pairing code: {error}"))?;
        let credentials = match endpoint.mode() {
            Mode::Local => {
                Some(self.local_credentials(program, state_dir, &endpoint, pairing_code)?)
            }
            Mode::Hosted(token) => {
                if pairing_code.is_some() {
                    tracing::warn!("a pairing code is for a local hub; a hosted hub takes a token");
                }
                if token.is_none() {
                    tracing::warn!(
                        "no token (TABWIRE_TOKEN or --token-file) for the hosted hub: it will \
                         refuse the devices"
                    );
                }
                None
            }
        };
        Ok(Hub {
            endpoint,
            credentials,
            owner_policy,
        })
    }

    /// Local mode's key store and where codes come from.
    fn local_credentials(
        &self,
        program: &str,
        state_dir: Option<&Path>,
        endpoint: &HubEndpoint,
        pairing_code: Option<PairingCode>,
    ) -> anyhow::Result<Arc<Credentials>> {
        let dir = match state_dir {
            Some(dir) => dir.to_owned(),
            None => default_state_dir(
                program,
                std::env::var("XDG_STATE_HOME").ok().as_deref(),
                std::env::var("HOME").ok().as_deref(),
            )
            .context("cannot tell where to keep the pairing key: give --state-dir")?,
        };
        let store = KeyStore::open(&dir)?;
        let source = match pairing_code {
            Some(code) => CodeSource::Given(code),
            None if endpoint.is_loopback() => CodeSource::HubProgram(self.hub_program()),
            None => CodeSource::Nothing(format!(
                "no pairing key for {} and no pairing code: run `tabwire-hub pair --device` on \
                 the hub's machine and start {program} with the code in TABWIRE_PAIRING_CODE \
                 (or in a file only you can read, given as --pairing-code-file)",
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
    fn hub_program(&self) -> PathBuf {
        if let Some(path) = &self.hub_bin {
            return path.clone();
        }
        std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|dir| dir.join("tabwire-hub")))
            .filter(|sibling| sibling.is_file())
            .unwrap_or_else(|| PathBuf::from("tabwire-hub"))
    }
}

/// A secret from its file, else from the environment variable.
fn secret(file: Option<&Path>, flag: &str, variable: &str) -> anyhow::Result<Option<String>> {
    match file {
        Some(path) => read_secret_file(path)
            .map(Some)
            .map_err(|why| anyhow::anyhow!("{flag} {}: {why}", path.display())),
        None => Ok(std::env::var(variable)
            .ok()
            .filter(|value| !value.trim().is_empty())),
    }
}

/// The device owner's policy file: it must parse, or nothing is served.
fn read_policy(path: &Path) -> anyhow::Result<Policy> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("--policy {}", path.display()))?;
    let policy: Policy = toml::from_str(&text)
        .map_err(|error| anyhow::anyhow!("--policy {}: {error}", path.display()))?;
    policy
        .validate()
        .map_err(|error| anyhow::anyhow!("--policy {}: {error}", path.display()))?;
    Ok(policy)
}

/// Completes at SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}
