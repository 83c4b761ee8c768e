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

pub mod browser_link;
pub mod local_session;
pub mod local_socket;
pub mod mcp;
pub mod registry;
pub mod session;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use tokio::net::{TcpListener, UnixListener};

/// The default TCP port.
pub const DEFAULT_PORT: u16 = 17841;

/// State shared by every connection.
pub struct HubState {
    /// Browsers and their connections.
    pub registry: registry::Registry,
    /// The URL an extension should be given to reach this hub, for messages to the user.
    pub browser_url: String,
}

/// A hub with its listeners bound.
pub struct Hub {
    http: TcpListener,
    socket: UnixListener,
    socket_path: PathBuf,
    state: Arc<HubState>,
}

impl Hub {
    /// Binds HTTP on `http_addr` and the Unix socket at `socket_path`.
    pub async fn bind(http_addr: SocketAddr, socket_path: PathBuf) -> anyhow::Result<Hub> {
        let http = TcpListener::bind(http_addr)
            .await
            .map_err(|error| anyhow::anyhow!("cannot listen on {http_addr}: {error}"))?;
        let socket = local_socket::bind(&socket_path).await.map_err(|error| {
            anyhow::anyhow!("cannot listen on {}: {error}", socket_path.display())
        })?;
        let local = http.local_addr()?;
        let state = Arc::new(HubState {
            registry: registry::Registry::default(),
            browser_url: format!("ws://{local}/browser"),
        });
        Ok(Hub {
            http,
            socket,
            socket_path,
            state,
        })
    }

    /// The bound HTTP address (useful with port 0).
    pub fn http_addr(&self) -> SocketAddr {
        self.http
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The Unix socket's path.
    pub fn socket_path(&self) -> &std::path::Path {
        &self.socket_path
    }

    /// Serves until `shutdown` completes, then removes the socket file.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let Hub {
            http,
            socket,
            socket_path,
            state,
        } = self;
        let app = Router::new()
            .route("/", get(banner))
            .route("/browser", get(browser_link::endpoint))
            .with_state(state.clone());
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut http_stop = stop_rx.clone();
        let http_task = tokio::spawn(async move {
            axum::serve(http, app)
                .with_graceful_shutdown(async move {
                    let _ = http_stop.wait_for(|stop| *stop).await;
                })
                .await
        });
        let mut socket_stop = stop_rx;
        let socket_task = tokio::spawn(async move {
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
        });
        shutdown.await;
        tracing::info!("shutting down");
        let _ = stop_tx.send(true);
        let _ = socket_task.await;
        let _ = std::fs::remove_file(&socket_path);
        // Open WebSockets keep axum's graceful shutdown waiting; the process is exiting anyway.
        http_task.abort();
        Ok(())
    }
}

async fn banner() -> String {
    format!(
        "tabwire-hub {}: point the tabwire extension at ws://<this host>/browser; MCP clients use \
         tabwire-mcp.\n",
        env!("CARGO_PKG_VERSION")
    )
}
