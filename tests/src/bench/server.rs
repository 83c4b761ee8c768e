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
use crate::Fixtures;

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
pub enum Server {
    /// tabwire.
    Tabwire(Tabwire),
    /// The peer.
    Playwright(Playwright),
}

/// How many of a page's interactive elements a server gave usable refs for.
#[derive(Debug, Clone)]
pub struct Completeness {
    /// The page's own count (`Interactive elements here: N`), summed over its frames; `None`
    /// when the page shows no such line.
    pub expected: Option<u32>,
    /// Distinct refs on lines with an interactive role.
    pub reached: usize,
    /// Tool calls it took.
    pub calls: u32,
    /// How the refs were gathered, e.g. "list_frames + 3 frames, 14 pages".
    pub how: String,
}

/// Reaching a row's button on the 2,000-row table and clicking it.
#[derive(Debug, Clone)]
pub struct RowClick {
    /// What the first (plain) snapshot said about its own completeness.
    pub first_view: String,
    /// Calls until the button's ref was known (the plain snapshot, then a search if needed).
    pub reach_calls: u32,
    /// Response bytes of those calls.
    pub reach_bytes: usize,
    /// The ref clicked.
    pub button: String,
    /// Response bytes of the click.
    pub click_bytes: usize,
    /// Round trip of the click, in milliseconds.
    pub click_ms: f64,
    /// Calls after the click to read the status line (0 when the click's result showed it).
    pub confirm_calls: u32,
    /// Response bytes of those calls.
    pub confirm_bytes: usize,
    /// The page's status line after the click, if it was found.
    pub status: Option<String>,
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

/// The status line `Opened row 1500 (…)` in `text`: the first `prefix` followed by a digit (so a
/// search echoing "Opened row" back is skipped), up to the end of its line or closing quote.
pub fn status_line(text: &str, prefix: &str) -> Option<String> {
    text.match_indices(prefix).find_map(|(at, _)| {
        let rest = &text[at..];
        rest[prefix.len()..]
            .starts_with(|c: char| c.is_ascii_digit())
            .then(|| {
                rest.split(['\n', '"'])
                    .next()
                    .unwrap_or_default()
                    .trim_end()
                    .to_owned()
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_in_either_rendering() {
        assert_eq!(
            status_line(
                "- status [ref=f3e3]: Opened row 1500 (trusted: true)\n- table",
                "Opened row "
            )
            .as_deref(),
            Some("Opened row 1500 (trusted: true)")
        );
        assert_eq!(
            status_line(
                r#"@e3 status "Opened row 1500 (trusted: true)""#,
                "Opened row "
            )
            .as_deref(),
            Some("Opened row 1500 (trusted: true)")
        );
        assert_eq!(
            status_line(
                "Found 1 match for \"Opened row \":\n  - status [ref=e3]: Opened row 7 (trusted: true)",
                "Opened row "
            )
            .as_deref(),
            Some("Opened row 7 (trusted: true)")
        );
        assert_eq!(status_line("No row opened yet", "Opened row "), None);
    }
}
