//! What is measured on each server, and how. Every figure here is computed the same way for
//! both servers; only the calls behind [`Server`]'s operations differ.
//!
//! - **bytes**: the JSON-RPC response line the server sent (see [`super::wire`]).
//! - **~tokens**: characters of the result's text content (what the model reads) / 4.
//! - **latency**: client-side round trip of the plain snapshot call, `rounds` times after one
//!   warm-up call that follows the navigation; p50 and p90 by nearest rank.
//! - **completeness**: distinct refs on lines with an interactive role ([`super::refs`]) over the
//!   page's own count, summed over its frames, with the number of calls it took.
//! - **login scenario**: see [`super::login`]; its ~tokens count every response as received.
//! - **screenshots**: see [`super::screenshots`]; measured on each page after its snapshot.
//!
//! A failure is recorded as text in the figure it spoils and the run goes on, so the report
//! shows it instead of losing the rest.

use anyhow::Result;

use super::login::{self, LoginFigures};
use super::screenshots::{self, Shot, ShotFigures, ShotTool};
use super::server::{Server, ServerKind};
use super::session::{Exchange, ToolsList};
use super::stats::{Outcome, SnapshotFigures, time_calls};
use super::tabwire::Delta;
use super::tasks::{Completeness, RowClick};
use crate::fixtures::Fixtures;

/// The fixture pages, in report order.
pub const PAGES: [&str; 5] = [
    "login.html",
    "table.html",
    "frames.html",
    "article.html",
    "big.html",
];
/// The page of the row scenario.
pub const TABLE_PAGE: &str = "table.html";
/// The row whose button is reached and clicked.
pub const ROW: u32 = 1500;
/// Timed rounds of the cheap call.
pub const CHEAP_ROUNDS: usize = 100;

/// Everything measured on one server.
#[derive(Debug)]
pub struct ServerFigures {
    /// Which server.
    pub kind: ServerKind,
    /// How it was set up (install time for the peer).
    pub setup: String,
    /// Its `tools/list`.
    pub tools: Outcome<ToolsList>,
    /// One entry per page of [`PAGES`].
    pub pages: Vec<PageFigures>,
    /// The table-row scenario.
    pub row: Outcome<RowClick>,
    /// Round trips of a cheap call (listing tabs), [`CHEAP_ROUNDS`] times.
    pub cheap: Outcome<SnapshotFigures>,
    /// The login scenario.
    pub login: Outcome<LoginFigures>,
}

/// What was measured on one page.
#[derive(Debug)]
pub struct PageFigures {
    /// The fixture page.
    pub page: &'static str,
    /// Size and latency of the plain snapshot.
    pub snapshot: Outcome<SnapshotFigures>,
    /// Share of the page's interactive elements with usable refs.
    pub completeness: Outcome<Completeness>,
    /// The unchanged-page delta (tabwire only; the peer has no deltas).
    pub delta: Option<Outcome<Delta>>,
    /// The screenshot tool's calls at default settings: viewport, then full page.
    pub screenshots: Vec<(Shot, Outcome<ShotFigures>)>,
}

/// Runs every measurement on `server`.
pub async fn measure(server: &Server, fixtures: &Fixtures, rounds: usize) -> ServerFigures {
    let kind = server.kind();
    let tools = server.session().tools_list().await.map_err(reason);
    eprintln!("bench: {} list tabs x{CHEAP_ROUNDS} …", kind.name());
    let cheap = async {
        server.navigate(&fixtures.url("login.html")).await?;
        time_calls(CHEAP_ROUNDS, || server.list_tabs()).await
    }
    .await
    .map(|(figures, _)| figures)
    .map_err(reason);
    let shot_tool = screenshots::tool_of(server).await;
    let mut pages = Vec::with_capacity(PAGES.len());
    for page in PAGES {
        eprintln!("bench: {} {page} …", kind.name());
        pages.push(measure_page(server, page, &fixtures.url(page), rounds, &shot_tool).await);
    }
    eprintln!("bench: {} row {ROW} …", kind.name());
    let row = async {
        server.navigate(&fixtures.url(TABLE_PAGE)).await?;
        server.open_row(ROW).await
    }
    .await
    .map_err(reason);
    eprintln!(
        "bench: {} login scenario x{} …",
        kind.name(),
        login::LOGIN_RUNS
    );
    let login = measure_login(server, &fixtures.url(login::LOGIN_PAGE))
        .await
        .map_err(reason);
    ServerFigures {
        kind,
        setup: server.setup_note(),
        tools,
        pages,
        row,
        cheap,
        login,
    }
}

async fn measure_page(
    server: &Server,
    page: &'static str,
    url: &str,
    rounds: usize,
    shot_tool: &ShotTool,
) -> PageFigures {
    if let Err(error) = server.navigate(url).await {
        let error = reason(error);
        return PageFigures {
            page,
            snapshot: Err(error.clone()),
            completeness: Err(error.clone()),
            delta: None,
            screenshots: Shot::ALL
                .into_iter()
                .map(|shot| (shot, Err(error.clone())))
                .collect(),
        };
    }
    let (snapshot, completeness) = match time_snapshots(server, rounds).await {
        Ok((figures, last)) => (
            Ok(figures),
            server.completeness(&last).await.map_err(reason),
        ),
        Err(error) => {
            let error = reason(error);
            (Err(error.clone()), Err(error))
        }
    };
    let delta = match server {
        Server::Tabwire(tabwire) => Some(tabwire.unchanged_delta().await.map_err(reason)),
        Server::Playwright(_) => None,
    };
    let screenshots = screenshots::measure(server, shot_tool).await;
    PageFigures {
        page,
        snapshot,
        completeness,
        delta,
        screenshots,
    }
}

/// One warm-up snapshot, then `rounds` timed ones; returns the figures and the last snapshot.
async fn time_snapshots(server: &Server, rounds: usize) -> Result<(SnapshotFigures, Exchange)> {
    time_calls(rounds, || server.snapshot()).await
}

/// The login scenario: one warm-up run, then [`login::LOGIN_RUNS`] timed ones.
async fn measure_login(server: &Server, url: &str) -> Result<LoginFigures> {
    server.login(url).await?;
    let mut runs = Vec::with_capacity(login::LOGIN_RUNS);
    for _ in 0..login::LOGIN_RUNS {
        runs.push(server.login(url).await?);
    }
    Ok(login::summarise(&runs))
}

/// An error as one line of the report.
fn reason(error: anyhow::Error) -> String {
    format!("{error:#}").replace('\n', " ")
}
