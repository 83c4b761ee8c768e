//! `tabwire-hub`: the server between AI agents and the Chrome profiles they drive.
//!
//! # Layout
//! - [`config`]: the settings as given and the validated [`Config`] — every rule of local and
//!   hosted mode (loopback only, which flags go together) is checked there.
//! - [`Hub::bind`] opens the listeners a [`Config`] asks for — HTTP (the `/browser` WebSocket
//!   the extension connects to, and `/mcp` in hosted mode) and, in local mode, a private Unix
//!   socket (one MCP session per connection, usually from `tabwire-mcp`) — and [`Hub::run`]
//!   serves them until the shutdown future completes.
//! - [`state`]: what every connection shares; [`accounts`]: the unit of isolation, each with a
//!   [`registry`] per [`peer`] kind; [`session`]: a session's selected peers.
//! - [`peer_link`]: what the peer endpoints share — origin check, pairing or token, hello,
//!   heartbeats; [`peer_read`]: reading what a peer sends (text in, typed message out);
//!   [`browser_link`] and [`device_link`]: `/browser` and `/device`.
//! - [`local_socket`], [`local_session`]: the Unix socket, one connection as one MCP session;
//!   [`private_dir`]: the rule and the lock for directories only the hub's user may enter.
//! - [`pairing`]: local mode's paired browsers and one-time pairing codes; [`random`]: the bytes
//!   of keys, codes and nonces.
//! - [`auth`], [`hosted`]: hosted mode's tokens and its HTTP gate; [`jwt_crypto`]: ring under
//!   the tokens' signatures.
//! - [`mcp`]: the MCP handler, the tool catalogue and the routing of tool calls; [`audit`]:
//!   the audit log every tool call is recorded in; [`doctor`]: the hub's checks of its own
//!   set-up (the `doctor` tool and `tabwire-hub doctor`).
//! - [`usage`]: whether any MCP session is open, for `--idle-exit`.
//! - [`launch`]: the launched profile (`--launch-browser`), a tabwire-owned Chromium started
//!   and stopped with the hub; [`chrome`]: finding Chromium or Chrome to run.
//!
//! Listeners and the shutdown signal are passed in, so tests can run hubs on port 0 in one
//! process.

pub mod accounts;
pub mod audit;
pub mod auth;
pub mod browser_link;
pub mod chrome;
pub mod cluster;
pub mod config;
pub mod device_link;
pub mod doctor;
pub mod handshake_places;
pub mod hosted;
pub mod jwt_crypto;
pub mod launch;
pub mod leases;
pub mod local_session;
pub mod local_socket;
pub mod loopback_user;
pub mod mcp;
pub mod pairing;
pub mod peer;
pub mod peer_link;
pub mod peer_read;
pub mod peer_socket;
pub mod policy;
pub mod private_dir;
pub mod random;
pub mod registry;
pub mod session;
pub mod state;
pub mod uploads;
pub mod usage;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use axum::serve::ListenerExt;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::{TcpListener, UnixListener};
use tokio_util::sync::CancellationToken;

use crate::peer::PeerKind;

pub use config::{Config, ConfigError, DEFAULT_PORT, HostedConfig, Mode, Settings};
pub use state::HubState;

/// Why a hub could not bind its listeners (the system's error is the source).
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The HTTP address.
    #[error("cannot listen on {addr}")]
    Http {
        /// The address.
        addr: SocketAddr,
        /// What the system said.
        source: std::io::Error,
    },
    /// The Unix socket of local mode.
    #[error("cannot listen on {}", path.display())]
    Socket {
        /// The socket's path.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// Local mode's pairing state.
    #[error(transparent)]
    State(#[from] pairing::PairingError),
    /// The audit log's directory.
    #[error(transparent)]
    Audit(#[from] audit::AuditError),
    /// The operator's policy file.
    #[error(transparent)]
    Policy(#[from] policy::PolicyFileError),
    /// The replica cluster's NATS server (`--cluster`).
    #[error("cannot join the cluster at {url}: {source}")]
    Cluster {
        /// The NATS server's URL.
        url: String,
        /// What the NATS client said.
        source: async_nats::ConnectError,
    },
}

/// A hub with its listeners bound.
pub struct Hub {
    http: TcpListener,
    socket: Option<(UnixListener, PathBuf)>,
    /// Where clients reach the hub, in hosted mode.
    public: Option<hosted::PublicOrigin>,
    state: Arc<HubState>,
    /// The MCP sessions open on the socket, for `--idle-exit`.
    usage: Arc<usage::Usage>,
    /// `--idle-exit`: how long the hub may go unused before it stops.
    idle_exit: Option<std::time::Duration>,
}

impl Hub {
    /// Binds HTTP and, in local mode, the Unix socket, as `config` says.
    pub async fn bind(config: Config) -> Result<Hub, BindError> {
        let lease_idle = config.lease_idle();
        let config::Parts {
            http: addr,
            mode,
            audit_dir,
            policy: policy_file,
            launch,
            file_urls,
            uploads,
            idle_exit,
            cluster,
        } = config.into_parts();
        let http = TcpListener::bind(addr)
            .await
            .map_err(|source| BindError::Http { addr, source })?;
        let local = http
            .local_addr()
            .map_err(|source| BindError::Http { addr, source })?;
        match mode {
            Mode::Local {
                socket_path,
                socket_also,
                state_dir,
            } => {
                let pairings = Arc::new(pairing::Pairings::open(&state_dir)?);
                let socket = match local_socket::bind(&socket_path, socket_also.as_deref()).await {
                    Ok(socket) => socket,
                    Err(source) => {
                        return Err(BindError::Socket {
                            path: socket_path,
                            source,
                        });
                    }
                };
                let mut state = HubState::local(format!("ws://{local}/browser"), pairings);
                state.file_urls = file_urls;
                state.uploads = uploads;
                state.policies = Arc::new(
                    policy::Policies::local(policy_file.as_deref())?.with_file_urls(file_urls),
                );
                state.audit = audit_dir
                    .as_deref()
                    .map(audit::AuditLog::open)
                    .transpose()?;
                state.lease_idle = lease_idle;
                state.layout = state::Layout {
                    http: Some(local),
                    public: None,
                    socket: Some(socket_path.clone()),
                    state_dir: Some(state_dir),
                    audit_dir,
                    launched: launch.map(|settings| Arc::new(launch::Launched::new(settings))),
                };
                Ok(Hub {
                    http,
                    socket: Some((socket, socket_path)),
                    public: None,
                    state: Arc::new(state),
                    usage: Arc::default(),
                    idle_exit,
                })
            }
            Mode::Hosted(config) => {
                // Hosted mode's default: sensitive reads off (and file:// as --allow-file-urls
                // says, above every policy).
                let fallback = tabwire_protocol::policy::Policy::hosted_default();
                let policies =
                    policy::Policies::hosted(&config.auth_dir, policy_file.as_deref(), fallback)?
                        .with_file_urls(file_urls);
                let cluster = match cluster {
                    Some(settings) => Some(
                        cluster::Cluster::connect(&settings.url, &settings.node_id)
                            .await
                            .map_err(|source| BindError::Cluster {
                                url: settings.url.clone(),
                                source,
                            })?,
                    ),
                    None => None,
                };
                let mut accounts = accounts::Accounts::hosted(config.limits);
                if let Some(cluster) = &cluster {
                    accounts = accounts.with_cluster(cluster.clone());
                    let auth = config.auth.clone();
                    cluster.on_revoked(move |jti| auth.revoked_elsewhere(jti));
                    let announcer = Arc::downgrade(cluster);
                    config.auth.announce_revocations(move |jti| {
                        if let Some(cluster) = announcer.upgrade() {
                            cluster.revoked(jti);
                        }
                    });
                    cluster.watch_revocations(config.auth.clone());
                }
                Ok(Hub {
                    http,
                    socket: None,
                    state: Arc::new(HubState {
                        accounts,
                        cluster,
                        browser_url: config.public.browser_url(),
                        auth: Some(config.auth),
                        pairings: None,
                        file_urls,
                        uploads,
                        audit: audit_dir
                            .as_deref()
                            .map(audit::AuditLog::open)
                            .transpose()?,
                        policies: Arc::new(policies),
                        lease_idle,
                        layout: state::Layout {
                            http: Some(local),
                            public: Some(config.public.to_string()),
                            socket: None,
                            state_dir: None,
                            audit_dir,
                            // Configuration refuses --launch-browser in hosted mode.
                            launched: None,
                        },
                    }),
                    public: Some(config.public),
                    usage: Arc::default(),
                    idle_exit: None,
                })
            }
        }
    }

    /// The bound HTTP address (useful with port 0).
    pub fn http_addr(&self) -> SocketAddr {
        self.http
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The Unix socket's path, in local mode.
    pub fn socket_path(&self) -> Option<&std::path::Path> {
        self.socket.as_ref().map(|(_, path)| path.as_path())
    }

    /// Where clients reach the hub, in hosted mode.
    pub fn public(&self) -> Option<&hosted::PublicOrigin> {
        self.public.as_ref()
    }

    /// What every connection of this hub shares.
    pub fn state(&self) -> &Arc<HubState> {
        &self.state
    }

    /// Completes once no MCP session has been open on the socket for `--idle-exit` (never
    /// without it): a hub the CLI started stops when nobody uses it.
    pub fn unused(&self) -> impl Future<Output = ()> + Send + 'static {
        let usage = self.usage.clone();
        let idle_exit = self.idle_exit;
        async move {
            match idle_exit {
                Some(after) => {
                    usage.unused_for(after).await;
                    tracing::info!(
                        "no MCP session for {}s (--idle-exit): stopping",
                        after.as_secs()
                    );
                }
                None => std::future::pending().await,
            }
        }
    }

    /// Starts the browser the configuration asked for (`--launch-browser`) with `browser`;
    /// `None` when it asked for none. Call it from the main thread (see [`launch::start`]).
    pub fn launch_browser(
        &self,
        browser: chrome::Found,
    ) -> Option<Result<launch::Running, launch::child::LaunchError>> {
        let launched = self.state.layout.launched.as_ref()?;
        Some(launch::start(&self.state, launched, browser))
    }

    /// Serves until `shutdown` completes, then removes the socket file.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + 'static) {
        let Hub {
            http,
            socket,
            public,
            state,
            usage,
            idle_exit: _,
        } = self;
        let cancel = CancellationToken::new();
        let app = app(state.clone(), public, cancel.clone());
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut http_stop = stop_rx.clone();
        // Small writes (the end of an SSE response, a WebSocket frame) must go out at once:
        // with Nagle's algorithm on, the chunk that ends a tool call's stream waited ~40 ms for
        // the peer's delayed ACK, and a proxy waits for that chunk on every call.
        let http = http.tap_io(|tcp| {
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::debug!(%error, "cannot set TCP_NODELAY");
            }
        });
        let http_task = tokio::spawn(async move {
            // The peer's address lets `/browser` tell which user opened a loopback connection.
            axum::serve(
                http,
                app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
            )
            .with_graceful_shutdown(async move {
                let _ = http_stop.wait_for(|stop| *stop).await;
            })
            .await
        });
        let mut socket_task = None;
        if let Some((socket, socket_path)) = socket {
            let mut socket_stop = stop_rx;
            let state = state.clone();
            socket_task = Some((
                tokio::spawn(async move {
                    let own_uid = tabwire_protocol::local::current_uid();
                    loop {
                        tokio::select! {
                            accepted = socket.accept() => match accepted {
                                Ok((stream, _)) => match local_socket::check_peer(&stream, own_uid) {
                                    Ok(()) => {
                                        let in_use = usage.enter();
                                        let state = state.clone();
                                        tokio::spawn(async move {
                                            local_session::serve(state, stream).await;
                                            drop(in_use);
                                        });
                                    }
                                    // Dropping the stream closes it before a byte is read.
                                    Err(refused) => tracing::warn!("{refused}"),
                                },
                                Err(error) => tracing::warn!(%error, "accept on the Unix socket failed"),
                            },
                            _ = socket_stop.wait_for(|stop| *stop) => break,
                        }
                    }
                }),
                socket_path,
            ));
        }
        shutdown.await;
        tracing::info!("shutting down");
        if let Some(cluster) = &state.cluster {
            cluster.stop().await;
        }
        cancel.cancel();
        let _ = stop_tx.send(true);
        if let Some((task, socket_path)) = socket_task {
            let _ = task.await;
            let _ = std::fs::remove_file(&socket_path);
        }
        // Open WebSockets keep axum's graceful shutdown waiting; the process is exiting anyway.
        http_task.abort();
    }
}

/// The HTTP routes: every peer kind's endpoint (`/browser`, `/device`) always; in hosted mode
/// also `/mcp`, both at the root and under the public origin's prefix, behind the Host check;
/// `/healthz` unchecked.
fn app(
    state: Arc<HubState>,
    public: Option<hosted::PublicOrigin>,
    cancel: CancellationToken,
) -> Router {
    let endpoints = peer::each_kind!(K => (K::SPEC.path, get(peer_link::endpoint::<K>)));
    let browser = endpoints
        .into_iter()
        .fold(
            Router::new().route("/", get(banner)),
            |router, (path, endpoint)| router.route(path, endpoint),
        )
        .with_state(state.clone());
    let healthz = Router::new().route("/healthz", get(|| async { "ok\n" }));
    let Some(public) = public else {
        return browser.merge(healthz);
    };
    let (Some(auth), Some(limits)) = (state.auth.clone(), state.accounts.limits()) else {
        unreachable!("a hub with a public origin is hosted: it has tokens and limits");
    };
    let gate = Arc::new(hosted::McpGate::new(state.clone(), auth, limits));
    // rmcp's own Host check is off: `hosted::check_host` does it for every route, with the
    // public origin rather than rmcp's loopback default. Origins are checked there too.
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_max_request_body_bytes(limits.body_bytes)
        .with_cancellation_token(cancel);
    let factory_state = state.clone();
    let service = StreamableHttpService::new(
        move || Ok(mcp::TabwireMcp::for_http(factory_state.clone())),
        gate.sessions.clone(),
        config,
    );
    let mcp = Router::new()
        .route_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(gate, hosted::mcp_gate));
    let checked = browser
        .merge(mcp)
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(public.clone()),
            hosted::check_host,
        ));
    let mut app = Router::new().merge(checked.clone());
    if !public.prefix().is_empty() {
        app = app.nest(public.prefix(), checked);
    }
    app.merge(healthz)
}

async fn banner(axum::extract::State(hub): axum::extract::State<Arc<HubState>>) -> String {
    if hub.is_hosted() {
        format!(
            "tabwire-hub {} (hosted): extensions connect to {} with a browser token; MCP clients \
             use {}/mcp with an agent token. See HOSTING.md.\n",
            env!("CARGO_PKG_VERSION"),
            hub.browser_url,
            hub.browser_url
                .trim_end_matches("/browser")
                .replacen("ws", "http", 1)
        )
    } else {
        format!(
            "tabwire-hub {}: point the tabwire extension at {}; MCP clients use tabwire-mcp.\n",
            env!("CARGO_PKG_VERSION"),
            hub.browser_url
        )
    }
}

#[cfg(test)]
#[path = "hosted_tests.rs"]
mod hosted_tests;

#[cfg(test)]
mod link_test_kit;

#[cfg(test)]
#[path = "handshake_tests.rs"]
mod handshake_tests;

#[cfg(test)]
#[path = "device_link_tests.rs"]
mod device_link_tests;
