//! The hub's configuration: the settings as an operator gives them (flags or environment), and
//! the validated [`Config`] a hub is bound with.
//!
//! Every rule about which settings go together lives here, so no hub can be bound in a mode its
//! settings do not allow: local mode listens on loopback only (it has no authentication), hosted
//! mode needs a public origin and a key to check tokens with (an operator's own keys only with
//! their issuer pinned), and a flag of one mode given in the other is an error rather than
//! silently ignored. A [`Config`] can only be made through these
//! rules: [`Config::local`], [`Config::hosted`] or [`Config::from_settings`].

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::Algorithm;

use tabwire_protocol::KINDS;

use crate::accounts::Limits;
use crate::auth::{AuthError, Authenticator, KeySource};
use crate::hosted::{InvalidOrigin, PublicOrigin};
use crate::launch::{self, Headless, LaunchSettings};
use crate::leases::DEFAULT_LEASE_IDLE;
use crate::state::FileUrls;
use crate::uploads::{DEFAULT_MAX_MB, Uploads};

/// The default TCP port.
pub const DEFAULT_PORT: u16 = 17841;

/// The settings of `tabwire-hub` as given: flags, or the environment variables beside them.
#[derive(Debug, Clone, clap::Args)]
pub struct Settings {
    /// Address for HTTP. Local mode binds loopback only; hosted mode may bind any address.
    #[arg(long, env = "TABWIRE_HOST", default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// TCP port; 0 picks a free one.
    #[arg(long, env = "TABWIRE_PORT", default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Unix socket for local MCP sessions (tabwire-mcp), local mode only. Default:
    /// $XDG_RUNTIME_DIR/tabwire/hub.sock, or /tmp/tabwire-<uid>/hub.sock.
    #[arg(long, env = "TABWIRE_SOCKET")]
    pub socket: Option<PathBuf>,
    /// Local mode: the private directory with the paired browsers' keys (see `tabwire-hub
    /// pair`). Default: $XDG_STATE_HOME/tabwire, or ~/.local/state/tabwire (on macOS
    /// ~/Library/Application Support/tabwire).
    #[arg(long, env = "TABWIRE_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    /// The private directory of the audit log (one JSON-lines file per account; see
    /// `tabwire-hub audit`). Default: `audit` in the state directory (local mode) or in the
    /// auth directory (hosted mode).
    #[arg(long, env = "TABWIRE_AUDIT_DIR")]
    pub audit_dir: Option<PathBuf>,
    /// The operator's policy: what agents may do on which origins (TOML; read again when it
    /// changes). In hosted mode every account's default; an account's own is
    /// `policies/ACCOUNT.toml` in the auth directory. Default: everything allowed (local mode);
    /// hosted mode allows actions but not sensitive reads or file:// URLs.
    #[arg(long, env = "TABWIRE_POLICY")]
    pub policy: Option<PathBuf>,
    /// Hosted mode: the directory with the token key, the issued-token ledger and the
    /// revocation list (see `tabwire-hub token`).
    #[arg(long, env = "TABWIRE_AUTH_DIR")]
    pub auth_dir: Option<PathBuf>,
    /// Hosted mode: where clients reach the hub, https://host[:port][/prefix]. Requests for any
    /// other Host are refused.
    #[arg(long, env = "TABWIRE_PUBLIC_ORIGIN")]
    pub public_origin: Option<String>,
    /// Hosted mode: verify tokens with these public keys (a JWKS file) instead of the auth
    /// directory's HS256 key.
    #[arg(long, env = "TABWIRE_JWKS")]
    pub jwks: Option<PathBuf>,
    /// The one algorithm tokens must use: HS256 (the hub's own key), or RS256 or EdDSA (with
    /// --jwks).
    #[arg(long, env = "TABWIRE_JWT_ALG", default_value = "HS256")]
    pub jwt_alg: String,
    /// Hosted mode with --jwks (required there): tokens must carry this `iss` (your issuer's
    /// name).
    #[arg(long, env = "TABWIRE_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// Let agents open and read file:// URLs, which read files on the computer the browser runs
    /// on (in hosted mode, someone else's). Refused in both modes without it.
    #[arg(long, env = "TABWIRE_ALLOW_FILE_URLS", value_parser = clap::builder::BoolishValueParser::new())]
    pub allow_file_urls: bool,
    /// Local mode: a directory agents may upload files from by path (`upload_file`), links
    /// followed; repeat for several. None by default: agents then send the bytes themselves.
    #[arg(long = "upload-dir", value_name = "DIR")]
    pub upload_dirs: Vec<PathBuf>,
    /// The most one `upload_file` call may upload, over all its files, in MB (1 to 100).
    #[arg(long, env = "TABWIRE_MAX_UPLOAD_MB", default_value_t = crate::uploads::DEFAULT_MAX_MB,
          value_parser = clap::value_parser!(u64).range(1..=crate::uploads::MAX_MB))]
    pub max_upload_mb: u64,
    /// The most one uploaded file may hold, in MB (1 to 100; at most --max-upload-mb).
    #[arg(long, env = "TABWIRE_MAX_UPLOAD_FILE_MB", default_value_t = crate::uploads::DEFAULT_MAX_MB,
          value_parser = clap::value_parser!(u64).range(1..=crate::uploads::MAX_MB))]
    pub max_upload_file_mb: u64,
    /// Local mode: stop (with the launched browser) after this many seconds with no MCP session
    /// open and no call running; 0 never stops. The `tabwire` CLI starts its hub with 1800.
    #[arg(
        long,
        env = "TABWIRE_IDLE_EXIT",
        value_name = "SECS",
        default_value_t = 0
    )]
    pub idle_exit: u64,
    /// How long an agent session keeps a tab it changed (its lease) without changing it again,
    /// in seconds (1 to 86400); other sessions cannot change the tab meanwhile.
    #[arg(long, env = "TABWIRE_LEASE_IDLE", default_value_t = DEFAULT_LEASE_IDLE.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub lease_idle: u64,
    /// Hosted mode: peers of each kind one account may have connected at once.
    #[command(flatten)]
    pub max_peers_per_account: PeerLimits,
    /// Hosted mode: MCP sessions (with an Mcp-Session-Id) one account may keep open.
    #[arg(long, default_value_t = Limits::default().sessions)]
    pub max_sessions_per_account: usize,
    /// Hosted mode: /mcp requests (POST, DELETE) one account may have open at once.
    #[arg(long, default_value_t = Limits::default().requests)]
    pub max_requests_per_account: usize,
    /// Hosted mode: the largest /mcp request body, in bytes.
    #[arg(long, default_value_t = Limits::default().body_bytes)]
    pub max_body_bytes: usize,
    /// Local mode: once listening, start a tabwire-owned Chromium profile with the extension
    /// loaded, paired and connected (docs/launched-browser.md); stopped with the hub. The
    /// browser is found as `tabwire-hub find-chrome` finds it (TABWIRE_CHROME overrides).
    #[arg(long, env = "TABWIRE_LAUNCH_BROWSER", value_parser = clap::builder::BoolishValueParser::new())]
    pub launch_browser: bool,
    /// With --launch-browser: the launched browser's name, as agents see it. Default: "tabwire
    /// Chromium".
    #[arg(long, env = "TABWIRE_BROWSER_NAME", value_name = "NAME")]
    pub browser_name: Option<String>,
    /// With --launch-browser: its profile directory, kept between runs (logins made there
    /// last). Default: $XDG_DATA_HOME/tabwire/chromium, or ~/.local/share/tabwire/chromium (on
    /// macOS ~/Library/Application Support/tabwire/chromium).
    #[arg(long, env = "TABWIRE_BROWSER_PROFILE", value_name = "DIR")]
    pub browser_profile: Option<PathBuf>,
    /// With --launch-browser: the extension folder (with a built pkg/). Default: the one beside
    /// tabwire-hub in a release (extension/, or ../share/tabwire/extension when installed),
    /// else extension/ of the repository tabwire-hub was built in (fixed at build time).
    #[arg(long, env = "TABWIRE_EXTENSION", value_name = "DIR")]
    pub extension: Option<PathBuf>,
    /// With --launch-browser: run it headless. auto: headless on Linux when neither DISPLAY nor
    /// WAYLAND_DISPLAY is set, with a window otherwise (and on macOS).
    #[arg(long, env = "TABWIRE_HEADLESS", value_enum)]
    pub headless: Option<Headless>,
    /// Hosted mode: run as one replica of several sharing this NATS server
    /// (nats://HOST:PORT; docs/cluster.md).
    #[arg(long, env = "TABWIRE_CLUSTER", value_name = "URL")]
    pub cluster: Option<String>,
    /// With --cluster: this replica's ID (1-32 of a-z, 0-9, '-'); default a random one.
    #[arg(long, env = "TABWIRE_NODE_ID", value_name = "ID")]
    pub node_id: Option<String>,
}

/// `--cluster` and `--node-id`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSettings {
    /// The NATS server's URL.
    pub url: String,
    /// This replica's node ID.
    pub node_id: String,
}

/// Hosted mode's limit of each kind of peer per account, by its kind's index: one flag per row
/// of the kinds table (`--max-browsers-per-account`, `--max-devices-per-account`), its default
/// the row's `per_account`.
#[derive(Debug, Clone)]
pub struct PeerLimits(pub [usize; KINDS.len()]);

impl clap::FromArgMatches for PeerLimits {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Ok(PeerLimits(KINDS.map(|spec| {
            matches
                .get_one::<usize>(spec.limit_flag)
                .copied()
                .unwrap_or(spec.per_account)
        })))
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for PeerLimits {
    fn augment_args(command: clap::Command) -> clap::Command {
        KINDS.iter().fold(command, |command, spec| {
            command.arg(
                clap::Arg::new(spec.limit_flag)
                    .long(spec.limit_flag)
                    .value_name("N")
                    .value_parser(clap::value_parser!(usize))
                    .help(format!(
                        "Hosted mode: {} one account may have connected at once [default: {}]",
                        spec.plural, spec.per_account
                    )),
            )
        })
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        Self::augment_args(command)
    }
}

/// A configuration that keeps every rule of its mode.
#[derive(Debug)]
pub struct Config {
    http: SocketAddr,
    mode: Mode,
    /// Where the audit log is kept; `None` keeps none.
    audit_dir: Option<PathBuf>,
    /// How long a lease lasts without a changing call.
    lease_idle: Duration,
    /// The `--policy` file.
    policy: Option<PathBuf>,
    /// The launched browser's settings, with `--launch-browser`.
    launch: Option<LaunchSettings>,
    /// Whether agents may open file:// URLs (`--allow-file-urls`).
    file_urls: FileUrls,
    /// What uploads may carry, and the directories paths are read from.
    uploads: Uploads,
    /// Local mode: how long the hub may sit unused before it stops (`--idle-exit`).
    idle_exit: Option<Duration>,
    /// Hosted mode: the replica cluster to join (`--cluster`).
    cluster: Option<ClusterSettings>,
}

/// How the hub serves agents.
#[derive(Debug)]
pub enum Mode {
    /// MCP sessions over a private Unix socket; `/browser` for local extensions only.
    Local {
        /// Where the socket is bound.
        socket_path: PathBuf,
        /// The default socket's home fallback, when `socket_path` is the default in `/tmp`
        /// (`DefaultSocket::also`): a hub answering there is another hub of this user, which
        /// clients would find when this one is not yet up, so this one does not start.
        socket_also: Option<PathBuf>,
        /// The private directory of paired browsers (`crate::pairing`).
        state_dir: PathBuf,
    },
    /// `/mcp` and `/browser` on one port, behind bearer tokens.
    Hosted(HostedConfig),
}

/// Hosted mode's settings (docs/hosted.md).
pub struct HostedConfig {
    /// Where the hub is reached from outside.
    pub public: PublicOrigin,
    /// Token checks.
    pub auth: Arc<Authenticator>,
    /// Per-account limits.
    pub limits: Limits,
    /// The auth directory (its `policies/` holds the accounts' own policies).
    pub auth_dir: PathBuf,
}

impl std::fmt::Debug for HostedConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostedConfig")
            .field("public", &self.public)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Why settings make no configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Local mode on an address other hosts can reach.
    #[error(
        "refusing to listen on {0} without authentication; local mode binds loopback only \
         (give --auth-dir for hosted mode)"
    )]
    LocalNotLoopback(IpAddr),
    /// A hosted-mode flag without `--auth-dir`.
    #[error("{0} belongs to hosted mode: give --auth-dir too")]
    HostedOnly(&'static str),
    /// `--socket` with `--auth-dir`.
    #[error("hosted mode serves MCP on /mcp; --socket is for local mode only")]
    SocketInHostedMode,
    /// A local-mode flag with `--auth-dir`.
    #[error("{0} is for local mode only: a hosted hub serves until its operator stops it")]
    LocalOnly(&'static str),
    /// `--state-dir` with `--auth-dir`.
    #[error("hosted mode's browsers use tokens, not pairing; --state-dir is for local mode only")]
    StateDirInHostedMode,
    /// No state directory was given and none can be derived (no home directory).
    #[error("cannot tell where to keep the hub's state: set HOME or give --state-dir")]
    NoStateDir,
    /// Hosted mode without `--public-origin`.
    #[error(
        "hosted mode needs --public-origin https://host[/prefix]: the address clients use, which \
         requests must name"
    )]
    NoPublicOrigin,
    /// `--public-origin` is not an origin.
    #[error(transparent)]
    PublicOrigin(#[from] InvalidOrigin),
    /// `--jwt-alg` names no algorithm the hub takes.
    #[error("--jwt-alg must be HS256, RS256 or EdDSA, not {0}")]
    UnknownAlgorithm(String),
    /// A public-key algorithm without keys.
    #[error("--jwt-alg {0} needs --jwks")]
    NoJwks(String),
    /// `--jwks` with HS256.
    #[error("--jwks takes --jwt-alg RS256 or EdDSA")]
    JwksWithSecret,
    /// `--jwks` without the issuer its tokens must name.
    #[error(
        "--jwks needs --jwt-issuer ISS: without it, a token your identity service signs for any \
         other application with the same keys would be accepted"
    )]
    JwksWithoutIssuer,
    /// `--jwt-issuer` for the hub's own tokens, which carry none.
    #[error("--jwt-issuer is for tokens from your own issuer: give --jwks too")]
    IssuerWithoutJwks,
    /// The keys or the revocation list cannot be loaded.
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// The launched browser's settings make no launched browser.
    #[error(transparent)]
    Launch(#[from] launch::SettingsError),
    /// `--cluster` or `--node-id` is malformed, or `--node-id` came alone.
    #[error("{0}")]
    Cluster(String),
    /// `--upload-dir` with `--auth-dir`.
    #[error(
        "--upload-dir is for local mode only: a hosted hub's agents send the bytes of the files \
         they upload, and never read the hub's disk"
    )]
    UploadDirHosted,
    /// An `--upload-dir` that is no directory.
    #[error(transparent)]
    UploadDir(#[from] crate::uploads::BadDir),
}

impl Config {
    /// Local mode: HTTP on `http` (a loopback address), MCP sessions on `socket_path`, paired
    /// browsers in `state_dir`.
    pub fn local(
        http: SocketAddr,
        socket_path: PathBuf,
        state_dir: PathBuf,
    ) -> Result<Config, ConfigError> {
        if !http.ip().is_loopback() {
            return Err(ConfigError::LocalNotLoopback(http.ip()));
        }
        Ok(Config {
            http,
            audit_dir: Some(state_dir.join("audit")),
            lease_idle: DEFAULT_LEASE_IDLE,
            policy: None,
            launch: None,
            file_urls: FileUrls::Refused,
            uploads: Uploads::default(),
            idle_exit: None,
            cluster: None,
            mode: Mode::Local {
                socket_path,
                socket_also: None,
                state_dir,
            },
        })
    }

    /// Hosted mode: everything behind tokens, on any address.
    pub fn hosted(http: SocketAddr, hosted: HostedConfig) -> Config {
        Config {
            http,
            mode: Mode::Hosted(hosted),
            audit_dir: None,
            lease_idle: DEFAULT_LEASE_IDLE,
            policy: None,
            launch: None,
            file_urls: FileUrls::Refused,
            uploads: Uploads::hosted(DEFAULT_MAX_MB, DEFAULT_MAX_MB),
            idle_exit: None,
            cluster: None,
        }
    }

    /// The configuration `settings` describe: hosted mode when they name an auth directory
    /// (its keys are loaded here), local mode otherwise.
    pub fn from_settings(settings: Settings) -> Result<Config, ConfigError> {
        Config::from_settings_in(settings, &launch::Places::here())
    }

    /// [`Config::from_settings`] with the launched browser's default places given.
    fn from_settings_in(
        settings: Settings,
        places: &launch::Places,
    ) -> Result<Config, ConfigError> {
        let http = SocketAddr::new(settings.host, settings.port);
        let given = launch::Given {
            launch: settings.launch_browser,
            name: settings.browser_name,
            profile: settings.browser_profile,
            extension: settings.extension,
            headless: settings.headless,
        };
        let launch = launch::validate(given, settings.auth_dir.is_some(), places)?;
        let Some(auth_dir) = settings.auth_dir else {
            let hosted_only = [
                ("--cluster", settings.cluster.is_some()),
                ("--node-id", settings.node_id.is_some()),
                ("--public-origin", settings.public_origin.is_some()),
                ("--jwks", settings.jwks.is_some()),
                ("--jwt-issuer", settings.jwt_issuer.is_some()),
            ];
            if let Some((flag, _)) = hosted_only.into_iter().find(|(_, given)| *given) {
                return Err(ConfigError::HostedOnly(flag));
            }
            let (socket, socket_also) = match settings.socket {
                Some(socket) => (socket, None),
                None => {
                    let chosen = tabwire_protocol::local::default_socket_here();
                    if let Some(why) = &chosen.fell_back {
                        tracing::warn!("{why}");
                    }
                    (chosen.path, chosen.also)
                }
            };
            let state_dir = match settings.state_dir {
                Some(dir) => dir,
                None => default_state_dir_here().ok_or(ConfigError::NoStateDir)?,
            };
            let mut config = Config::local(http, socket, state_dir)?
                .with_audit_dir(settings.audit_dir)
                .with_policy(settings.policy)
                .with_lease_idle(Duration::from_secs(settings.lease_idle))
                .with_file_urls(file_urls(settings.allow_file_urls))
                .with_uploads(Uploads::local(
                    &settings.upload_dirs,
                    settings.max_upload_mb,
                    settings.max_upload_file_mb,
                )?)
                .with_idle_exit(
                    (settings.idle_exit > 0).then(|| Duration::from_secs(settings.idle_exit)),
                );
            config.launch = launch;
            if let Mode::Local {
                socket_also: also, ..
            } = &mut config.mode
            {
                *also = socket_also;
            }
            return Ok(config);
        };
        if settings.socket.is_some() {
            return Err(ConfigError::SocketInHostedMode);
        }
        if settings.state_dir.is_some() {
            return Err(ConfigError::StateDirInHostedMode);
        }
        if settings.idle_exit > 0 {
            return Err(ConfigError::LocalOnly("--idle-exit"));
        }
        if !settings.upload_dirs.is_empty() {
            return Err(ConfigError::UploadDirHosted);
        }
        let cluster = match (settings.cluster, settings.node_id) {
            (None, None) => None,
            (None, Some(_)) => {
                return Err(ConfigError::Cluster(
                    "--node-id names this hub as a replica: give --cluster too".into(),
                ));
            }
            (Some(url), node_id) => {
                crate::cluster::check_url(&url).map_err(ConfigError::Cluster)?;
                let node_id = node_id.unwrap_or_else(crate::cluster::random_node_id);
                crate::cluster::check_node_id(&node_id).map_err(ConfigError::Cluster)?;
                Some(ClusterSettings { url, node_id })
            }
        };
        let public = PublicOrigin::parse(
            settings
                .public_origin
                .as_deref()
                .ok_or(ConfigError::NoPublicOrigin)?,
        )?;
        let algorithm = match settings.jwt_alg.to_ascii_uppercase().as_str() {
            "HS256" => Algorithm::HS256,
            "RS256" => Algorithm::RS256,
            "EDDSA" => Algorithm::EdDSA,
            _ => return Err(ConfigError::UnknownAlgorithm(settings.jwt_alg)),
        };
        // An empty issuer (a blank line in an environment file) pins nothing.
        let issuer = settings
            .jwt_issuer
            .filter(|issuer| !issuer.trim().is_empty());
        let source = match (settings.jwks, algorithm, issuer) {
            (None, Algorithm::HS256, None) => KeySource::Secret,
            (None, Algorithm::HS256, Some(_)) => return Err(ConfigError::IssuerWithoutJwks),
            (None, _, _) => return Err(ConfigError::NoJwks(settings.jwt_alg)),
            (Some(_), Algorithm::HS256, _) => return Err(ConfigError::JwksWithSecret),
            (Some(_), _, None) => return Err(ConfigError::JwksWithoutIssuer),
            (Some(path), algorithm, Some(issuer)) => KeySource::Jwks {
                path,
                algorithm,
                issuer,
            },
        };
        let auth = Authenticator::load(&auth_dir, &source)?;
        let audit_dir = settings.audit_dir.unwrap_or_else(|| auth_dir.join("audit"));
        let limits = Limits {
            peers: settings.max_peers_per_account.0.map(|limit| limit.max(1)),
            sessions: settings.max_sessions_per_account.max(1),
            requests: settings.max_requests_per_account.max(1),
            body_bytes: settings.max_body_bytes.max(1024),
        };
        let mut config = Config::hosted(
            http,
            HostedConfig {
                public,
                auth: Arc::new(auth),
                limits,
                auth_dir,
            },
        )
        .with_audit_dir(Some(audit_dir))
        .with_policy(settings.policy)
        .with_lease_idle(Duration::from_secs(settings.lease_idle))
        .with_file_urls(file_urls(settings.allow_file_urls))
        .with_uploads(Uploads::hosted(
            settings.max_upload_mb,
            settings.max_upload_file_mb,
        ));
        config.cluster = cluster;
        Ok(config)
    }

    /// The replica cluster to join, in hosted mode with `--cluster`.
    pub fn cluster(&self) -> Option<&ClusterSettings> {
        self.cluster.as_ref()
    }

    /// The same hosted configuration as a replica of `cluster`.
    pub fn with_cluster(mut self, cluster: Option<ClusterSettings>) -> Config {
        self.cluster = cluster;
        self
    }

    /// The same configuration with the operator's policy in `file`, when given.
    pub fn with_policy(mut self, file: Option<PathBuf>) -> Config {
        if file.is_some() {
            self.policy = file;
        }
        self
    }

    /// The same configuration with leases lasting `idle` without a changing call.
    pub fn with_lease_idle(mut self, idle: Duration) -> Config {
        self.lease_idle = idle;
        self
    }

    /// How long a lease lasts without a changing call.
    pub fn lease_idle(&self) -> Duration {
        self.lease_idle
    }

    /// The same configuration with file URLs as `files` says.
    pub fn with_file_urls(mut self, files: FileUrls) -> Config {
        self.file_urls = files;
        self
    }

    /// Whether agents may open file:// URLs.
    pub fn file_urls(&self) -> FileUrls {
        self.file_urls
    }

    /// What uploads may carry.
    pub fn uploads(&self) -> &Uploads {
        &self.uploads
    }

    /// The same configuration with these upload rules.
    pub fn with_uploads(mut self, uploads: Uploads) -> Config {
        self.uploads = uploads;
        self
    }

    /// The same configuration stopping after `idle` unused (local mode; `None`: never).
    pub fn with_idle_exit(mut self, idle: Option<Duration>) -> Config {
        self.idle_exit = idle;
        self
    }

    /// How long the hub may sit unused before it stops, if it ever does.
    pub fn idle_exit(&self) -> Option<Duration> {
        self.idle_exit
    }

    /// The same configuration with its audit log in `dir`, when given (the mode's default
    /// otherwise: local mode's is in the state directory, and [`Config::hosted`] keeps none).
    pub fn with_audit_dir(mut self, dir: Option<PathBuf>) -> Config {
        if dir.is_some() {
            self.audit_dir = dir;
        }
        self
    }

    /// Where the audit log is kept, if anywhere.
    pub fn audit_dir(&self) -> Option<&std::path::Path> {
        self.audit_dir.as_deref()
    }

    /// Where HTTP is to listen.
    pub fn http_addr(&self) -> SocketAddr {
        self.http
    }

    /// The mode and its settings.
    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// The launched browser's settings, with `--launch-browser`.
    pub fn launch(&self) -> Option<&LaunchSettings> {
        self.launch.as_ref()
    }

    pub(crate) fn into_parts(self) -> Parts {
        Parts {
            http: self.http,
            mode: self.mode,
            audit_dir: self.audit_dir,
            policy: self.policy,
            launch: self.launch,
            file_urls: self.file_urls,
            uploads: self.uploads,
            idle_exit: self.idle_exit,
            cluster: self.cluster,
        }
    }
}

/// `--allow-file-urls` as a rule.
fn file_urls(allow: bool) -> FileUrls {
    if allow {
        FileUrls::Allowed
    } else {
        FileUrls::Refused
    }
}

/// A [`Config`] taken apart by [`Hub::bind`](crate::Hub::bind).
pub(crate) struct Parts {
    pub http: SocketAddr,
    pub mode: Mode,
    pub audit_dir: Option<PathBuf>,
    pub policy: Option<PathBuf>,
    pub launch: Option<LaunchSettings>,
    pub file_urls: FileUrls,
    pub uploads: Uploads,
    pub idle_exit: Option<Duration>,
    pub cluster: Option<ClusterSettings>,
}

// The state directory's default lives with the socket's in the protocol crate: the `tabwire`
// CLI finds the hub's log there without linking the hub.
pub use tabwire_protocol::local::{default_state_dir, default_state_dir_here};

#[cfg(test)]
mod tests {
    use std::path::Path;

    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        settings: Settings,
    }

    /// The settings as `tabwire-hub` would parse `flags`, with none from the environment.
    fn settings(flags: &[&str]) -> Settings {
        let mut argv = vec!["tabwire-hub"];
        argv.extend(flags);
        Flags::try_parse_from(argv).unwrap().settings
    }

    fn config(flags: &[&str]) -> Result<Config, ConfigError> {
        Config::from_settings(settings(flags))
    }

    /// An auth directory with an HS256 key.
    fn auth_dir() -> tempfile_dir::Dir {
        let dir = tempfile_dir::Dir::new();
        crate::auth::issue(
            dir.path(),
            "alice",
            crate::auth::Role::Agent,
            std::time::Duration::from_secs(60),
            "",
        )
        .unwrap();
        dir
    }

    #[test]
    fn local_mode_listens_on_loopback_only() {
        for host in ["0.0.0.0", "::", "192.168.1.7"] {
            let error = config(&["--host", host, "--socket", "/tmp/x/hub.sock"]).unwrap_err();
            assert!(
                matches!(error, ConfigError::LocalNotLoopback(_)),
                "{host}: {error}"
            );
            assert!(error.to_string().contains("loopback only"), "{error}");
        }
        let direct = Config::local(
            "0.0.0.0:1".parse().unwrap(),
            "/tmp/x/hub.sock".into(),
            "/tmp/x/state".into(),
        );
        assert!(matches!(direct, Err(ConfigError::LocalNotLoopback(_))));
        for host in ["127.0.0.1", "::1"] {
            let config = config(&["--host", host, "--socket", "/tmp/x/hub.sock"]).unwrap();
            assert!(config.http_addr().ip().is_loopback());
            assert!(
                matches!(config.mode(), Mode::Local { socket_path, .. } if socket_path.ends_with("x/hub.sock"))
            );
        }
    }

    #[test]
    fn local_mode_has_a_default_socket() {
        let config = config(&[]).unwrap();
        let Mode::Local { socket_path, .. } = config.mode() else {
            panic!("{config:?}")
        };
        assert!(
            socket_path.ends_with("hub.sock"),
            "{}",
            socket_path.display()
        );
        assert_eq!(config.http_addr().port(), DEFAULT_PORT);
    }

    #[test]
    fn the_state_dir_can_be_given() {
        let config = config(&["--state-dir", "/tmp/x/state"]).unwrap();
        assert!(
            matches!(config.mode(), Mode::Local { state_dir, .. } if state_dir.ends_with("x/state"))
        );
    }

    #[test]
    fn the_audit_log_defaults_to_the_state_or_auth_directory() {
        let local = config(&["--state-dir", "/tmp/x/state"]).unwrap();
        assert_eq!(local.audit_dir(), Some(Path::new("/tmp/x/state/audit")));
        let given = config(&["--state-dir", "/tmp/x/state", "--audit-dir", "/tmp/y"]).unwrap();
        assert_eq!(given.audit_dir(), Some(Path::new("/tmp/y")));
        let dir = auth_dir();
        let auth = dir.path().to_str().unwrap();
        let hosted = |extra: &[&str]| {
            let mut flags = vec!["--auth-dir", auth, "--public-origin", "https://hub.example"];
            flags.extend(extra);
            config(&flags).unwrap()
        };
        assert_eq!(
            hosted(&[]).audit_dir(),
            Some(dir.path().join("audit").as_path())
        );
        assert_eq!(
            hosted(&["--audit-dir", "/tmp/y"]).audit_dir(),
            Some(Path::new("/tmp/y"))
        );
    }

    #[test]
    fn hosted_flags_are_refused_in_local_mode() {
        for (flags, flag) in [
            (
                &["--public-origin", "https://x.example"][..],
                "--public-origin",
            ),
            (&["--jwks", "/tmp/keys.json"][..], "--jwks"),
            (&["--jwt-issuer", "me"][..], "--jwt-issuer"),
        ] {
            let error = config(flags).unwrap_err();
            assert!(
                matches!(error, ConfigError::HostedOnly(named) if named == flag),
                "{error}"
            );
        }
    }

    #[test]
    fn the_launched_browser_is_for_local_mode_and_its_flags_need_it() {
        let error = config(&["--browser-name", "Bot"]).unwrap_err();
        assert!(
            matches!(
                error,
                ConfigError::Launch(launch::SettingsError::LaunchOnly("--browser-name"))
            ),
            "{error}"
        );
        let dir = auth_dir();
        let error = config(&[
            "--auth-dir",
            dir.path().to_str().unwrap(),
            "--public-origin",
            "https://hub.example",
            "--launch-browser",
        ])
        .unwrap_err();
        assert!(
            matches!(
                error,
                ConfigError::Launch(launch::SettingsError::HostedMode)
            ),
            "{error}"
        );
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap();
        let places = launch::Places {
            xdg_data_home: Some("/data".into()),
            home: Some("/home/a".into()),
            built_extension: Ok(root.join("extension")),
        };
        let launching = Config::from_settings_in(
            settings(&[
                "--launch-browser",
                "--headless",
                "always",
                "--extension",
                "/x",
            ]),
            &places,
        );
        // A folder that is not the extension's is named.
        assert!(
            matches!(
                launching,
                Err(ConfigError::Launch(launch::SettingsError::NotAnExtension(
                    _
                )))
            ),
            "{launching:?}"
        );
        assert!(config(&[]).unwrap().launch().is_none());
    }

    #[test]
    fn the_cluster_is_hosted_only_and_its_flags_are_checked() {
        for (flags, flag) in [
            (&["--cluster", "nats://127.0.0.1:4222"][..], "--cluster"),
            (&["--node-id", "n1"][..], "--node-id"),
        ] {
            let error = config(flags).unwrap_err();
            assert!(
                matches!(error, ConfigError::HostedOnly(named) if named == flag),
                "{error}"
            );
        }
        let dir = auth_dir();
        let auth = dir.path().to_str().unwrap();
        let hosted = |extra: &[&str]| {
            let mut flags = vec!["--auth-dir", auth, "--public-origin", "https://hub.example"];
            flags.extend(extra);
            config(&flags)
        };
        assert_eq!(
            hosted(&[]).unwrap().cluster(),
            None,
            "nothing changes without it"
        );
        let named = hosted(&["--cluster", "nats://10.0.0.5:4222", "--node-id", "n-1"]).unwrap();
        assert_eq!(
            named.cluster(),
            Some(&ClusterSettings {
                url: "nats://10.0.0.5:4222".into(),
                node_id: "n-1".into()
            })
        );
        let random = hosted(&["--cluster", "nats://h:4222"]).unwrap();
        let id = &random.cluster().unwrap().node_id;
        assert_eq!(id.len(), 8, "{id}");
        assert!(crate::cluster::check_node_id(id).is_ok());
        for bad in [
            &["--node-id", "n1"][..],
            &["--cluster", "http://h:4222"],
            &["--cluster", "nats://"],
            &["--cluster", "nats://h:1", "--node-id", "N1"],
            &["--cluster", "nats://h:1", "--node-id", "a.b"],
            &["--cluster", "nats://h:1", "--node-id", ""],
            &["--cluster", "nats://h:1", "--node-id", &"n".repeat(33)],
        ] {
            let error = hosted(bad).unwrap_err();
            assert!(matches!(error, ConfigError::Cluster(_)), "{bad:?}: {error}");
        }
    }

    #[test]
    fn hosted_mode_rules() {
        let dir = auth_dir();
        let auth = dir.path().to_str().unwrap();
        let hosted = |extra: &[&str]| {
            let mut flags = vec!["--auth-dir", auth];
            flags.extend(extra);
            config(&flags)
        };
        assert!(matches!(hosted(&[]), Err(ConfigError::NoPublicOrigin)));
        let origin = ["--public-origin", "https://hub.example/team"];
        let with_origin = |extra: &[&str]| {
            let mut flags = origin.to_vec();
            flags.extend(extra);
            hosted(&flags)
        };
        assert!(matches!(
            hosted(&["--public-origin", "ftp://hub.example"]),
            Err(ConfigError::PublicOrigin(_))
        ));
        assert!(matches!(
            with_origin(&["--socket", "/tmp/x/hub.sock"]),
            Err(ConfigError::SocketInHostedMode)
        ));
        assert!(matches!(
            with_origin(&["--state-dir", "/tmp/x/state"]),
            Err(ConfigError::StateDirInHostedMode)
        ));
        assert!(matches!(
            with_origin(&["--jwt-alg", "none"]),
            Err(ConfigError::UnknownAlgorithm(_))
        ));
        assert!(matches!(
            with_origin(&["--jwt-alg", "RS256"]),
            Err(ConfigError::NoJwks(_))
        ));
        assert!(matches!(
            with_origin(&["--jwks", "/tmp/keys.json"]),
            Err(ConfigError::JwksWithSecret)
        ));
        assert!(matches!(
            with_origin(&["--jwt-issuer", "me"]),
            Err(ConfigError::IssuerWithoutJwks)
        ));
        assert!(matches!(
            with_origin(&[
                "--jwt-alg",
                "EdDSA",
                "--jwks",
                "/nonexistent/keys.json",
                "--jwt-issuer",
                "https://idp.example"
            ]),
            Err(ConfigError::Auth(_))
        ));
        let config = with_origin(&["--host", "0.0.0.0", "--max-browsers-per-account", "0"])
            .expect("hosted mode may bind any address");
        assert!(!config.http_addr().ip().is_loopback());
        let Mode::Hosted(hosted) = config.mode() else {
            panic!("{config:?}")
        };
        assert_eq!(hosted.public.prefix(), "/team");
        assert_eq!(
            hosted.limits.peers(tabwire_protocol::Kind::Browser),
            1,
            "limits are at least 1"
        );
        assert_eq!(
            hosted.limits.peers(tabwire_protocol::Kind::Device),
            tabwire_protocol::Kind::Device.spec().per_account,
            "the default"
        );
    }

    #[test]
    fn a_jwks_is_taken_only_with_its_issuer() {
        let dir = auth_dir();
        let keys = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/test-only-jwks.json");
        let jwks = |issuer: Option<&str>| {
            let mut flags = vec![
                "--auth-dir",
                dir.path().to_str().unwrap(),
                "--public-origin",
                "https://hub.example",
                "--jwt-alg",
                "EdDSA",
                "--jwks",
                keys,
            ];
            if let Some(issuer) = issuer {
                flags.extend(["--jwt-issuer", issuer]);
            }
            config(&flags)
        };
        for issuer in [None, Some(""), Some("  ")] {
            let error = jwks(issuer).unwrap_err();
            assert!(
                matches!(error, ConfigError::JwksWithoutIssuer),
                "{issuer:?}: {error}"
            );
            assert!(error.to_string().contains("--jwt-issuer"), "{error}");
        }
        assert!(jwks(Some("https://idp.example")).is_ok());
    }

    #[test]
    fn both_modes_refuse_file_urls_unless_the_operator_allows_them() {
        let dir = auth_dir();
        let hosted = |extra: &[&str]| {
            let mut flags = vec![
                "--auth-dir",
                dir.path().to_str().unwrap(),
                "--public-origin",
                "https://hub.example",
            ];
            flags.extend(extra);
            config(&flags).unwrap().file_urls()
        };
        assert_eq!(hosted(&[]), FileUrls::Refused);
        assert_eq!(hosted(&["--allow-file-urls"]), FileUrls::Allowed);
        assert_eq!(config(&[]).unwrap().file_urls(), FileUrls::Refused);
        assert_eq!(
            config(&["--allow-file-urls"]).unwrap().file_urls(),
            FileUrls::Allowed
        );
        assert_eq!(
            crate::state::HubState::local(String::new(), crate::pairing::Pairings::for_tests())
                .file_urls,
            FileUrls::Refused,
            "a hub's state starts closed"
        );
    }

    #[test]
    fn upload_directories_are_local_and_must_exist_and_the_caps_are_bounded() {
        let dir = auth_dir();
        let there = dir.path().to_str().unwrap();
        let local = config(&["--upload-dir", there, "--max-upload-mb", "10"]).unwrap();
        assert_eq!(local.uploads().max_call_bytes, 10_000_000);
        // A file may not hold more than a call.
        assert_eq!(local.uploads().max_file_bytes, 10_000_000);
        let missing = config(&["--upload-dir", "/nonexistent/tabwire-uploads"]).unwrap_err();
        assert!(matches!(missing, ConfigError::UploadDir(_)), "{missing}");
        assert!(missing.to_string().contains("--upload-dir"), "{missing}");
        let hosted = config(&[
            "--auth-dir",
            there,
            "--public-origin",
            "https://hub.example",
            "--upload-dir",
            there,
        ])
        .unwrap_err();
        assert!(matches!(hosted, ConfigError::UploadDirHosted), "{hosted}");
        let argv = |cap: &str| Flags::try_parse_from(["tabwire-hub", "--max-upload-mb", cap]);
        assert!(argv("0").is_err());
        assert!(argv("101").is_err());
        assert!(argv("100").is_ok());
    }

    #[test]
    fn idle_exit_is_local_and_zero_never_stops() {
        assert_eq!(config(&[]).unwrap().idle_exit(), None);
        assert_eq!(config(&["--idle-exit", "0"]).unwrap().idle_exit(), None);
        assert_eq!(
            config(&["--idle-exit", "1800"]).unwrap().idle_exit(),
            Some(Duration::from_secs(1800))
        );
        let dir = auth_dir();
        let error = config(&[
            "--auth-dir",
            dir.path().to_str().unwrap(),
            "--public-origin",
            "https://hub.example",
            "--idle-exit",
            "60",
        ])
        .unwrap_err();
        assert!(
            matches!(error, ConfigError::LocalOnly("--idle-exit")),
            "{error}"
        );
    }

    #[test]
    fn a_missing_key_is_named() {
        let dir = tempfile_dir::Dir::new();
        let error = config(&[
            "--auth-dir",
            dir.path().to_str().unwrap(),
            "--public-origin",
            "https://hub.example",
        ])
        .unwrap_err();
        assert!(matches!(error, ConfigError::Auth(_)), "{error}");
        assert!(error.to_string().contains("hs256.secret"), "{error}");
    }

    /// A directory removed when dropped.
    mod tempfile_dir {
        use std::path::{Path, PathBuf};

        pub struct Dir(PathBuf);

        impl Dir {
            /// A private directory (0700), as an auth directory must be.
            pub fn new() -> Dir {
                use std::os::unix::fs::DirBuilderExt;
                let path = std::env::temp_dir().join(format!(
                    "tabwire-config-{}-{}",
                    std::process::id(),
                    uuid::Uuid::new_v4().simple()
                ));
                std::fs::DirBuilder::new()
                    .mode(0o700)
                    .create(&path)
                    .unwrap();
                Dir(path)
            }

            pub fn path(&self) -> &Path {
                &self.0
            }
        }

        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }
}
