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
//! - [`steps`]: each call of an agent on a big page (`rows.html` at 2,000 and 10,000 rows),
//!   timed step by step; [`corpus`]: real saved pages, downloaded once and served offline;
//!   [`steps_report`]: their tables and targets.
//!
//! `--only-steps` picks the parts ([`options::Parts`]): the fixture part, the big-page steps,
//! the corpus. Each part runs on each server within the same server session.
//!
//! The servers run one after the other, so their browsers never compete for the CPU, each in a
//! task of its own: a failure (the harness panics on one) loses that server's half of the table,
//! not the run, and dropping the task's state stops its processes.

pub mod bare;
pub mod corpus;
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
pub mod steps;
pub mod steps_report;
pub mod tabwire;
pub mod tasks;
pub mod wire;

use std::sync::Arc;

use corpus::{CorpusFigures, CorpusServer};
use measure::{PageFigures, ServerFigures};
use options::{Options, Parts};
use server::{Server, ServerKind};
use stats::Outcome;
use steps::StepFigures;

use crate::fixtures::Fixtures;

/// Everything one run measured.
#[derive(Debug)]
pub struct Results {
    /// Timed snapshot calls per page.
    pub rounds: usize,
    /// Timed rounds per big-page step and corpus page.
    pub step_rounds: usize,
    /// The parts that ran.
    pub parts: Parts,
    /// tabwire's figures of the fixture part; `None` when not run.
    pub tabwire: Option<Outcome<ServerFigures>>,
    /// The peer's figures of the fixture part; `None` when not run.
    pub peer: Option<Outcome<ServerFigures>>,
    /// The big-page steps per server.
    pub steps: Pair<StepFigures>,
    /// The corpus pages per server.
    pub corpus: Pair<CorpusFigures>,
    /// Why the corpus could not be had, when it could not.
    pub corpus_error: Option<String>,
    /// How each server was set up, or why it failed.
    pub setups: Pair<String>,
}

/// One figure per server: `None` when that server or part did not run.
#[derive(Debug)]
pub struct Pair<T> {
    /// tabwire's.
    pub tabwire: Option<Outcome<T>>,
    /// The peer's.
    pub peer: Option<Outcome<T>>,
}

impl<T> Pair<T> {
    fn new() -> Pair<T> {
        Pair {
            tabwire: None,
            peer: None,
        }
    }

    /// `kind`'s figure.
    pub fn of(&self, kind: ServerKind) -> Option<&Outcome<T>> {
        match kind {
            ServerKind::Tabwire => self.tabwire.as_ref(),
            ServerKind::Playwright => self.peer.as_ref(),
        }
    }

    fn set(&mut self, kind: ServerKind, value: Outcome<T>) {
        match kind {
            ServerKind::Tabwire => self.tabwire = Some(value),
            ServerKind::Playwright => self.peer = Some(value),
        }
    }
}

/// What one server's session measured, part by part (`None` for a part not asked for).
struct PhaseFigures {
    setup: String,
    fixtures: Option<ServerFigures>,
    steps: Option<StepFigures>,
    corpus: Option<CorpusFigures>,
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
        step_rounds: options.step_rounds,
        parts: options.parts,
        tabwire: None,
        peer: None,
        steps: Pair::new(),
        corpus: Pair::new(),
        corpus_error: None,
        setups: Pair::new(),
    };
    let corpus = if options.parts.corpus {
        let served = async { CorpusServer::serve(corpus::load().await?).await }.await;
        match served {
            Ok(server) => Some(Arc::new(server)),
            Err(error) => {
                let error = format!("{error:#}").replace('\n', " ");
                eprintln!("bench: no corpus: {error}");
                results.corpus_error = Some(error);
                None
            }
        }
    } else {
        None
    };
    for kind in [ServerKind::Playwright, ServerKind::Tabwire] {
        if !options.runs(kind) {
            continue;
        }
        eprintln!("bench: starting {} …", kind.name());
        let phase = tokio::spawn(phase(
            kind,
            fixtures.clone(),
            corpus.clone(),
            options.clone(),
        ));
        let outcome = match phase.await {
            Ok(outcome) => outcome.map_err(|error| format!("{error:#}").replace('\n', " ")),
            Err(error) if error.is_panic() => Err(format!("panicked: {}", panic_text(error))),
            Err(error) => Err(format!("stopped: {error}")),
        };
        match outcome {
            Ok(figures) => {
                results.setups.set(kind, Ok(figures.setup));
                if let Some(fixture_figures) = figures.fixtures {
                    match kind {
                        ServerKind::Tabwire => results.tabwire = Some(Ok(fixture_figures)),
                        ServerKind::Playwright => results.peer = Some(Ok(fixture_figures)),
                    }
                }
                if let Some(steps) = figures.steps {
                    results.steps.set(kind, Ok(steps));
                }
                if let Some(pages) = figures.corpus {
                    results.corpus.set(kind, Ok(pages));
                }
            }
            Err(error) => {
                eprintln!("bench: {} failed: {error}", kind.name());
                results.setups.set(kind, Err(error.clone()));
                if options.parts.fixtures {
                    match kind {
                        ServerKind::Tabwire => results.tabwire = Some(Err(error.clone())),
                        ServerKind::Playwright => results.peer = Some(Err(error.clone())),
                    }
                }
                if options.parts.big {
                    results.steps.set(kind, Err(error.clone()));
                }
                if corpus.is_some() {
                    results.corpus.set(kind, Err(error));
                }
            }
        }
    }
    results
}

/// Starts one server, measures the parts asked for and stops it.
async fn phase(
    kind: ServerKind,
    fixtures: Arc<Fixtures>,
    corpus: Option<Arc<CorpusServer>>,
    options: Options,
) -> anyhow::Result<PhaseFigures> {
    let server = Server::start(kind, &fixtures).await?;
    let mut figures = PhaseFigures {
        setup: server.setup_note(),
        fixtures: None,
        steps: None,
        corpus: None,
    };
    if options.parts.fixtures {
        figures.fixtures = Some(measure::measure(&server, &fixtures, options.rounds).await);
    }
    if options.parts.big {
        figures.steps = Some(steps::measure(&server, &fixtures, options.step_rounds).await);
    }
    if let Some(corpus) = &corpus {
        figures.corpus = Some(corpus::measure(&server, corpus, options.step_rounds).await);
    }
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
