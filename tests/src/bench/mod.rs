//! The side-by-side benchmark behind `cargo run --release -p tabwire-e2e --bin bench`: tabwire
//! and Microsoft's `@playwright/mcp` driven over the same fixture pages in one run, one table.
//!
//! Layout:
//! - [`options`]: the command line.
//! - [`session`]: an MCP client session with a stdio server, measured the same way for both
//!   servers; [`wire`] counts the bytes each response had on the wire; [`process_tree`] stops a
//!   server and everything it started.
//! - [`server`]: the operations the measurements need, for either server; [`tabwire`] and
//!   [`peer`] implement them (the peer module also installs playwright-mcp).
//! - [`refs`]: how snapshot lines are scored for completeness.
//! - [`screenshots`]: each server's screenshot tool at its default settings, viewport and full
//!   page, on every page.
//! - [`login`]: the login scenario (navigate, type, type, check, click, read), whose calls each
//!   server module makes its own way.
//! - [`tasks`]: what each server is asked to do beyond a snapshot (reach every interactive
//!   element, click a row), in one shape for both.
//! - [`stats`]: timing rounds of a call, percentiles, the token estimate.
//! - [`measure`]: what is measured and how; [`report`]: the printed table and the targets.
//!
//! The servers run one after the other, so their browsers never compete for the CPU, each in a
//! task of its own: a failure (the harness panics on one) loses that server's half of the table,
//! not the run, and dropping the task's state stops its processes.

pub mod login;
pub mod measure;
pub mod options;
pub mod peer;
pub mod process_tree;
pub mod refs;
pub mod report;
pub mod screenshots;
pub mod server;
pub mod session;
pub mod stats;
pub mod tabwire;
pub mod tasks;
pub mod wire;

use std::sync::Arc;

use measure::{PageFigures, ServerFigures};
use options::Options;
use server::{Server, ServerKind};
use stats::Outcome;

use crate::fixtures::Fixtures;

/// Everything one run measured.
#[derive(Debug)]
pub struct Results {
    /// Timed snapshot calls per page.
    pub rounds: usize,
    /// tabwire's figures; `None` when not run.
    pub tabwire: Option<Outcome<ServerFigures>>,
    /// The peer's figures; `None` when not run.
    pub peer: Option<Outcome<ServerFigures>>,
}

impl Results {
    /// Both servers in report order (tabwire first).
    pub fn servers(&self) -> [(ServerKind, Option<&Outcome<ServerFigures>>); 2] {
        [
            (ServerKind::Tabwire, self.tabwire.as_ref()),
            (ServerKind::Playwright, self.peer.as_ref()),
        ]
    }

    /// One server's figures.
    pub fn server(&self, kind: ServerKind) -> Option<&Outcome<ServerFigures>> {
        match kind {
            ServerKind::Tabwire => self.tabwire.as_ref(),
            ServerKind::Playwright => self.peer.as_ref(),
        }
    }

    /// One server's figures for the page at `index` of [`measure::PAGES`].
    pub fn page(&self, kind: ServerKind, index: usize) -> Option<&PageFigures> {
        match self.server(kind)? {
            Ok(figures) => figures.pages.get(index),
            Err(_) => None,
        }
    }
}

/// Runs the benchmark: the peer first (it needs nothing from this checkout), then tabwire.
pub async fn run(options: &Options) -> Results {
    let fixtures = Arc::new(Fixtures::serve().await);
    let mut results = Results {
        rounds: options.rounds,
        tabwire: None,
        peer: None,
    };
    for kind in [ServerKind::Playwright, ServerKind::Tabwire] {
        if !options.runs(kind) {
            continue;
        }
        eprintln!("bench: starting {} …", kind.name());
        let phase = tokio::spawn(phase(kind, fixtures.clone(), options.rounds));
        let outcome = match phase.await {
            Ok(outcome) => outcome.map_err(|error| format!("{error:#}").replace('\n', " ")),
            Err(error) if error.is_panic() => Err(format!("panicked: {}", panic_text(error))),
            Err(error) => Err(format!("stopped: {error}")),
        };
        if let Err(error) = &outcome {
            eprintln!("bench: {} failed: {error}", kind.name());
        }
        match kind {
            ServerKind::Tabwire => results.tabwire = Some(outcome),
            ServerKind::Playwright => results.peer = Some(outcome),
        }
    }
    results
}

/// Starts one server, measures it and stops it.
async fn phase(
    kind: ServerKind,
    fixtures: Arc<Fixtures>,
    rounds: usize,
) -> anyhow::Result<ServerFigures> {
    let server = Server::start(kind, &fixtures).await?;
    let figures = measure::measure(&server, &fixtures, rounds).await;
    server.close().await;
    Ok(figures)
}

fn panic_text(error: tokio::task::JoinError) -> String {
    let payload = error.into_panic();
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| {
            payload
                .downcast_ref::<&str>()
                .map(|text| (*text).to_owned())
        })
        .unwrap_or_else(|| "(no message)".into())
}
