//! The two servers behind one set of operations, so the measuring code is written once: load a
//! page, take the server's default snapshot, score completeness, reach and click a table row,
//! sign in.
//! Each server's own way of doing these lives in its module ([`super::tabwire`],
//! [`super::peer`]).

use anyhow::Result;

use super::login::LoginRun;
use super::peer::Playwright;
use super::session::{Exchange, Session};
use super::tabwire::Tabwire;
use super::tasks::{Completeness, RowClick};
use crate::fixtures::Fixtures;

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    /// tabwire through `tabwire-mcp`, the hub and the extension.
    Tabwire,
    /// Microsoft's `@playwright/mcp` from npm.
    Playwright,
}

impl ServerKind {
    /// The name printed in the table.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Tabwire => "tabwire",
            ServerKind::Playwright => "playwright-mcp",
        }
    }
}

/// A started server with its browser.
// One of each is made per benchmark run; boxing to even out the variants buys nothing.
#[allow(clippy::large_enum_variant)]
pub enum Server {
    /// tabwire.
    Tabwire(Tabwire),
    /// The peer.
    Playwright(Playwright),
}

impl Server {
    /// Starts `kind` with its browser; fixture pages come from `fixtures`.
    pub async fn start(kind: ServerKind, fixtures: &Fixtures) -> Result<Server> {
        Ok(match kind {
            ServerKind::Tabwire => {
                Server::Tabwire(Tabwire::start(&fixtures.url("blank.html")).await?)
            }
            ServerKind::Playwright => Server::Playwright(Playwright::start().await?),
        })
    }

    /// Which server this is.
    pub fn kind(&self) -> ServerKind {
        match self {
            Server::Tabwire(_) => ServerKind::Tabwire,
            Server::Playwright(_) => ServerKind::Playwright,
        }
    }

    /// The MCP session with it.
    pub fn session(&self) -> &Session {
        match self {
            Server::Tabwire(server) => &server.session,
            Server::Playwright(server) => &server.session,
        }
    }

    /// A note on how it was set up (e.g. the peer's install time).
    pub fn setup_note(&self) -> String {
        match self {
            Server::Tabwire(server) => server.setup_note(),
            Server::Playwright(server) => server.setup_note(),
        }
    }

    /// Loads `url` in the current tab and waits for it.
    pub async fn navigate(&self, url: &str) -> Result<()> {
        match self {
            Server::Tabwire(server) => server.navigate(url).await,
            Server::Playwright(server) => server.navigate(url).await,
        }
    }

    /// The server's plain snapshot call with its defaults (what an agent calls first).
    pub async fn snapshot(&self) -> Result<Exchange> {
        match self {
            Server::Tabwire(server) => server.snapshot().await,
            Server::Playwright(server) => server.snapshot().await,
        }
    }

    /// Scores completeness on the loaded page; `snapshot` is a plain snapshot of it just taken.
    /// A cheap call that still goes all the way to the browser: listing the tabs.
    pub async fn list_tabs(&self) -> Result<Exchange> {
        match self {
            Server::Tabwire(server) => server.list_tabs().await,
            Server::Playwright(server) => server.list_tabs().await,
        }
    }

    pub async fn completeness(&self, snapshot: &Exchange) -> Result<Completeness> {
        match self {
            Server::Tabwire(server) => server.completeness().await,
            Server::Playwright(server) => Ok(server.completeness(snapshot)),
        }
    }

    /// On the loaded table page: reaches row `row`'s button and clicks it.
    pub async fn open_row(&self, row: u32) -> Result<RowClick> {
        match self {
            Server::Tabwire(server) => server.open_row(row).await,
            Server::Playwright(server) => server.open_row(row).await,
        }
    }

    /// One run of the login scenario on `url` ([`super::login`]).
    pub async fn login(&self, url: &str) -> Result<LoginRun> {
        match self {
            Server::Tabwire(server) => server.login(url).await,
            Server::Playwright(server) => server.login(url).await,
        }
    }

    /// Stops the server, its browser and everything they started.
    pub async fn close(self) {
        match self {
            Server::Tabwire(server) => server.close().await,
            Server::Playwright(server) => server.close().await,
        }
    }
}
