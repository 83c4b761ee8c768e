//! `tabwire-hub`: the server between AI agents and the Chrome profiles they drive.
//!
//! # Layout
//! - [`Hub::bind`] opens the two listeners — HTTP on loopback (the `/browser` WebSocket the
//!   extension connects to) and a private Unix socket (one MCP session per connection, usually
//!   from `tabwire-mcp`) — and [`Hub::run`] serves both until the shutdown future completes.
//! - [`registry`]: browsers known to the hub, their connections, and request correlation.
//! - [`browser_link`]: the `/browser` endpoint — origin check, hello, heartbeats.
//! - [`local_socket`]: binding the Unix socket in a private directory.
//! - [`local_session`]: one Unix-socket connection served as one MCP session.
//! - [`session`]: a session's selected browser.
//! - [`mcp`]: the MCP handler and the tool catalogue.
//!
//! Listeners and the shutdown signal are passed in, so tests can run hubs on port 0 in one
//! process.

pub mod accounts;
pub mod auth;
pub mod browser_link;
pub mod hosted;
pub mod local_session;
pub mod local_socket;
pub mod mcp;
pub mod registry;
pub mod session;
pub mod token_cli;

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

/// The default TCP port.
pub const DEFAULT_PORT: u16 = 17841;

/// State shared by every connection.
pub struct HubState {
    /// Accounts and their browsers (local mode has one account).
    pub accounts: accounts::Accounts,
    /// The URL an extension should be given to reach this hub, for messages to the user.
    pub browser_url: String,
    /// Token checks, in hosted mode.
    pub auth: Option<Arc<auth::Authenticator>>,
}

impl HubState {
    /// What a person does to connect a browser, for messages to agents: "In Chrome, …".
    pub fn connect_hint(&self) -> String {
        if self.auth.is_some() {
            format!(
                "In Chrome, open the tabwire extension's popup, set Server URL to {}, paste a \
                 browser token of this account in Access token and press Connect",
                self.browser_url
            )
        } else {
            format!(
                "In Chrome, open the tabwire extension's popup, set Server URL to {} and press \
                 Connect",
                self.browser_url
            )
        }
    }

    /// Local mode's state: one account, no tokens.
    pub fn local(browser_url: String) -> Self {
        HubState {
            accounts: accounts::Accounts::local(),
            browser_url,
            auth: None,
        }
    }
}

/// Hosted mode's settings (docs/hosted.md).
pub struct HostedConfig {
    /// Where the hub is reached from outside.
    pub public: hosted::PublicOrigin,
    /// Token checks.
    pub auth: Arc<auth::Authenticator>,
    /// Per-account limits.
    pub limits: accounts::Limits,
}

/// How the hub serves agents.
pub enum Mode {
    /// MCP sessions over a private Unix socket; `/browser` for local extensions only.
    Local {
        /// Where the socket is bound.
        socket_path: PathBuf,
    },
    /// `/mcp` and `/browser` on one port, behind bearer tokens.
    Hosted(HostedConfig),
}

/// A hub with its listeners bound.
pub struct Hub {
    http: TcpListener,
    socket: Option<(UnixListener, PathBuf)>,
    /// Where clients reach the hub, in hosted mode.
    public: Option<hosted::PublicOrigin>,
    state: Arc<HubState>,
}

impl Hub {
    /// Binds HTTP on `http_addr` and, in local mode, the Unix socket.
    pub async fn bind(http_addr: SocketAddr, mode: Mode) -> anyhow::Result<Hub> {
        let http = TcpListener::bind(http_addr)
            .await
            .map_err(|error| anyhow::anyhow!("cannot listen on {http_addr}: {error}"))?;
        let local = http.local_addr()?;
        match mode {
            Mode::Local { socket_path } => {
                let socket = local_socket::bind(&socket_path).await.map_err(|error| {
                    anyhow::anyhow!("cannot listen on {}: {error}", socket_path.display())
                })?;
                Ok(Hub {
                    http,
                    socket: Some((socket, socket_path)),
                    public: None,
                    state: Arc::new(HubState::local(format!("ws://{local}/browser"))),
                })
            }
            Mode::Hosted(config) => Ok(Hub {
                http,
                socket: None,
                state: Arc::new(HubState {
                    accounts: accounts::Accounts::hosted(config.limits),
                    browser_url: config.public.browser_url(),
                    auth: Some(config.auth),
                }),
                public: Some(config.public),
            }),
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

    /// Serves until `shutdown` completes, then removes the socket file.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let Hub {
            http,
            socket,
            public,
            state,
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
            axum::serve(http, app)
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
                    loop {
                        tokio::select! {
                            accepted = socket.accept() => match accepted {
                                Ok((stream, _)) => {
                                    tokio::spawn(local_session::serve(state.clone(), stream));
                                }
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
        cancel.cancel();
        let _ = stop_tx.send(true);
        if let Some((task, socket_path)) = socket_task {
            let _ = task.await;
            let _ = std::fs::remove_file(&socket_path);
        }
        // Open WebSockets keep axum's graceful shutdown waiting; the process is exiting anyway.
        http_task.abort();
        Ok(())
    }
}

/// The HTTP routes: `/browser` always; in hosted mode also `/mcp`, both at the root and under
/// the public origin's prefix, behind the Host check; `/healthz` unchecked.
fn app(
    state: Arc<HubState>,
    public: Option<hosted::PublicOrigin>,
    cancel: CancellationToken,
) -> Router {
    let browser = Router::new()
        .route("/", get(banner))
        .route("/browser", get(browser_link::endpoint))
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
    if hub.auth.is_some() {
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
