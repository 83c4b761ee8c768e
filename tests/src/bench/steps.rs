//! The big-page steps: each call an agent makes on a long page, timed on its own, on
//! `rows.html?rows=N` (a ledger of N rows with a "Select N" button each, a status line and a
//! Note textbox under the table) for each of [`ROW_COUNTS`].
//!
//! | step | tabwire | peer |
//! | --- | --- | --- |
//! | first | `navigate_to`, then the timed `get_page_snapshot {}` | `browser_navigate`, then the timed `browser_snapshot {}` |
//! | again | `get_page_snapshot {}` on the unchanged page | `browser_snapshot {}` |
//! | query | `get_page_snapshot {query: "Select 1500"}` | `browser_find {text: "Select 1500"}` |
//! | click | `click_element` by ref, default observation | `browser_click`, its reply as it comes |
//! | type | `type_text` into Note, default observation | `browser_type`, its reply as it comes |
//! | delta | `get_page_snapshot {since}` after the status line changed | `browser_snapshot {}` after the same change (it has no deltas) |
//!
//! Each step is timed over `rounds` calls after one untimed warm-up; "first" repeats the
//! navigation every round, and the later steps share the page it left loaded. Clicks alternate between row 1,500's and row 1,501's button, so
//! every click changes the status line (clicking one button again would change nothing); the
//! change before a delta is an untimed click on the other one (tabwire with `observe: false`).
//! A step a server has no tool for is recorded as `None` and printed as "—".

use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::peer::{Playwright, ref_on_line};
use super::server::{Server, ServerKind};
use super::session::{Exchange, clip};
use super::stats::{Outcome, millis, nearest_rank};
use super::tabwire::Tabwire;
use crate::fixtures::Fixtures;

/// The page sizes, in rows.
pub const ROW_COUNTS: [u32; 2] = [2_000, 10_000];
/// The row whose button is found and clicked.
pub const ROW: u32 = 1_500;
/// The other row clicked, so every click changes the status line.
pub const OTHER_ROW: u32 = ROW + 1;

/// The steps, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The first snapshot after loading.
    First,
    /// A plain snapshot again, page unchanged.
    Again,
    /// A search for row 1,500's button.
    Query,
    /// Clicking the row's button, with the observation that comes with it.
    Click,
    /// Typing into Note, with its observation.
    Type,
    /// What changed after a small change (the status line).
    Delta,
}

impl Step {
    /// Every step in report order.
    pub const ALL: [Step; 6] = [
        Step::First,
        Step::Again,
        Step::Query,
        Step::Click,
        Step::Type,
        Step::Delta,
    ];

    /// The step's label in the table.
    pub fn label(self) -> &'static str {
        match self {
            Step::First => "first snapshot after load",
            Step::Again => "snapshot again (unchanged)",
            Step::Query => "query \"Select 1500\"",
            Step::Click => "click row's button + obs.",
            Step::Type => "type into Note + obs.",
            Step::Delta => "delta after a small change",
        }
    }

    /// The call behind the step, per server, for the table's notes.
    pub fn call(self, kind: ServerKind) -> &'static str {
        match (self, kind) {
            (Step::First, ServerKind::Tabwire) => "navigate_to, then get_page_snapshot {}",
            (Step::First, ServerKind::Playwright) => "browser_navigate, then browser_snapshot {}",
            (Step::Again, ServerKind::Tabwire) => "get_page_snapshot {}",
            (Step::Again, ServerKind::Playwright) => "browser_snapshot {}",
            (Step::Query, ServerKind::Tabwire) => "get_page_snapshot {query}",
            (Step::Query, ServerKind::Playwright) => "browser_find {text} (— if it has none)",
            (Step::Click, ServerKind::Tabwire) => "click_element by ref, default observation",
            (Step::Click, ServerKind::Playwright) => "browser_click, its reply as it comes",
            (Step::Type, ServerKind::Tabwire) => "type_text by ref, default observation",
            (Step::Type, ServerKind::Playwright) => "browser_type, its reply as it comes",
            (Step::Delta, ServerKind::Tabwire) => "get_page_snapshot {since}",
            (Step::Delta, ServerKind::Playwright) => {
                "browser_snapshot {} after the change (no deltas)"
            }
        }
    }
}

/// One step's timings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepTiming {
    /// Median round trip, milliseconds.
    pub p50_ms: f64,
    /// 90th percentile, milliseconds.
    pub p90_ms: f64,
    /// Timed calls.
    pub rounds: usize,
    /// Response bytes of the last timed call.
    pub bytes: usize,
}

impl StepTiming {
    /// The figures of `samples` (at least one), with the last call's size.
    pub fn of(samples: &mut [Duration], bytes: usize) -> StepTiming {
        samples.sort();
        StepTiming {
            p50_ms: millis(nearest_rank(samples, 50)),
            p90_ms: millis(nearest_rank(samples, 90)),
            rounds: samples.len(),
            bytes,
        }
    }
}

/// A step's result: timings, `None` when the server has no such call, or why it failed.
pub type StepOutcome = Outcome<Option<StepTiming>>;

/// Every step on one page size.
#[derive(Debug, Clone)]
pub struct PageSteps {
    /// Rows on the page.
    pub rows: u32,
    /// One entry per [`Step::ALL`], in that order.
    pub steps: Vec<(Step, StepOutcome)>,
    /// The same click with nothing around it (`super::bare`), in tabwire's browser; `None`
    /// for the peer.
    pub bare_click: Option<Outcome<StepTiming>>,
}

impl PageSteps {
    /// The outcome of `step`.
    pub fn step(&self, step: Step) -> Option<&StepOutcome> {
        self.steps
            .iter()
            .find(|(each, _)| *each == step)
            .map(|(_, outcome)| outcome)
    }
}

/// The big-page steps on one server.
#[derive(Debug, Clone)]
pub struct StepFigures {
    /// One entry per [`ROW_COUNTS`].
    pub pages: Vec<PageSteps>,
}

/// Runs every step on every page size.
pub async fn measure(server: &Server, fixtures: &Fixtures, rounds: usize) -> StepFigures {
    let mut pages = Vec::with_capacity(ROW_COUNTS.len());
    for rows in ROW_COUNTS {
        let url = fixtures.url(&format!("rows.html?rows={rows}"));
        let mut steps = Vec::with_capacity(Step::ALL.len());
        let mut reload = true;
        for step in Step::ALL {
            eprintln!(
                "bench: {} rows={rows} {} x{rounds} …",
                server.kind().name(),
                step.label()
            );
            let outcome = measure_step(server, &url, step, rounds, reload)
                .await
                .map_err(|error| format!("{error:#}").replace('\n', " "));
            // The steps share the loaded page (a navigation of the peer on the 10,000-row page
            // alone can take its 30 s limit on a loaded machine); after a failed step the page
            // is loaded afresh.
            reload = outcome.is_err();
            steps.push((step, outcome));
        }
        let bare_click = match server {
            Server::Tabwire(tabwire) => Some(
                super::bare::bare_click(tabwire, [ROW, OTHER_ROW], rounds)
                    .await
                    .map(|mut samples| StepTiming::of(&mut samples, 0))
                    .map_err(|error| format!("{error:#}").replace('\n', " ")),
            ),
            Server::Playwright(_) => None,
        };
        pages.push(PageSteps {
            rows,
            steps,
            bare_click,
        });
    }
    StepFigures { pages }
}

/// One step: loads the page first when `reload`, then one warm-up round and `rounds` timed ones.
async fn measure_step(
    server: &Server,
    url: &str,
    step: Step,
    rounds: usize,
    reload: bool,
) -> Result<Option<StepTiming>> {
    match server {
        Server::Tabwire(tabwire) => measure_step_on(tabwire, url, step, rounds, reload).await,
        Server::Playwright(peer) => measure_step_on(peer, url, step, rounds, reload).await,
    }
}

async fn measure_step_on<D: Driver>(
    driver: &D,
    url: &str,
    step: Step,
    rounds: usize,
    reload: bool,
) -> Result<Option<StepTiming>> {
    if step == Step::Query && !driver.can_query().await? {
        return Ok(None);
    }
    if reload && step != Step::First {
        driver.navigate(url).await?;
    }
    let mut samples = Vec::with_capacity(rounds);
    let mut bytes = 0;
    // The refs the step needs, found before timing.
    let lines = match step {
        Step::Click | Step::Delta => vec![
            (format!("Select {ROW}"), format!("button \"Select {ROW}\"")),
            (
                format!("Select {OTHER_ROW}"),
                format!("button \"Select {OTHER_ROW}\""),
            ),
        ],
        Step::Type => vec![("Note".to_owned(), "textbox \"Note\"".to_owned())],
        Step::First | Step::Again | Step::Query => Vec::new(),
    };
    let refs = driver.refs(&lines).await?;
    let (button, other, note) = (refs.first(), refs.get(1), refs.first());
    for round in 0..=rounds {
        // Alternate buttons so each click changes the status line.
        let (this, that) = if round % 2 == 0 {
            (button, other)
        } else {
            (other, button)
        };
        let exchange = match step {
            Step::First => {
                driver.navigate(url).await?;
                driver.snapshot().await?
            }
            Step::Again => driver.snapshot().await?,
            Step::Query => driver.query(&format!("Select {ROW}")).await?,
            Step::Click => driver.click(this.context("a button ref")?).await?,
            Step::Type => {
                driver
                    .type_text(note.context("the Note ref")?, &format!("note {round}"))
                    .await?
            }
            Step::Delta => {
                let version = driver.version().await?;
                driver.change(that.context("a button ref")?).await?;
                driver.delta(version).await?
            }
        };
        if round > 0 {
            samples.push(exchange.elapsed);
            bytes = exchange.bytes;
        }
    }
    Ok(Some(StepTiming::of(&mut samples, bytes)))
}

/// The calls of the steps, per server.
trait Driver {
    async fn navigate(&self, url: &str) -> Result<()>;
    async fn snapshot(&self) -> Result<Exchange>;
    /// Whether the server has a search call.
    async fn can_query(&self) -> Result<bool>;
    async fn query(&self, text: &str) -> Result<Exchange>;
    /// For each `(text, line)`: the ref of the first line containing `line`, found by searching
    /// for `text` where the server searches, else in a snapshot.
    async fn refs(&self, lines: &[(String, String)]) -> Result<Vec<String>>;
    async fn click(&self, target: &str) -> Result<Exchange>;
    async fn type_text(&self, target: &str, text: &str) -> Result<Exchange>;
    /// The version a delta is taken against (`None` for a server without deltas).
    async fn version(&self) -> Result<Option<u64>>;
    /// The small change before a delta, untimed and unobserved where the server allows.
    async fn change(&self, target: &str) -> Result<()>;
    async fn delta(&self, since: Option<u64>) -> Result<Exchange>;
}

impl Driver for Tabwire {
    async fn navigate(&self, url: &str) -> Result<()> {
        Tabwire::navigate(self, url).await
    }

    async fn snapshot(&self) -> Result<Exchange> {
        Tabwire::snapshot(self).await
    }

    async fn can_query(&self) -> Result<bool> {
        Ok(true)
    }

    async fn query(&self, text: &str) -> Result<Exchange> {
        tabwire_call(self, "get_page_snapshot", json!({"query": text})).await
    }

    async fn refs(&self, lines: &[(String, String)]) -> Result<Vec<String>> {
        let mut refs = Vec::with_capacity(lines.len());
        for (text, line) in lines {
            let found = self.query(text).await?;
            let nodes = found.data()?["nodes"]
                .as_array()
                .context("the observation has no nodes")?;
            let found = nodes
                .iter()
                .find(|node| {
                    node["text"]
                        .as_str()
                        .is_some_and(|t| t.contains(line.as_str()))
                })
                .and_then(|node| node["ref"].as_str().map(str::to_owned))
                .with_context(|| format!("no ref for {line} in query {text:?}"))?;
            refs.push(found);
        }
        Ok(refs)
    }

    async fn click(&self, target: &str) -> Result<Exchange> {
        tabwire_call(self, "click_element", json!({"selector": target})).await
    }

    async fn type_text(&self, target: &str, text: &str) -> Result<Exchange> {
        tabwire_call(self, "type_text", json!({"selector": target, "text": text})).await
    }

    async fn version(&self) -> Result<Option<u64>> {
        let base = Tabwire::snapshot(self).await?;
        let version = base.data()?["version"]
            .as_u64()
            .context("the snapshot has no version")?;
        Ok(Some(version))
    }

    async fn change(&self, target: &str) -> Result<()> {
        tabwire_call(
            self,
            "click_element",
            json!({"selector": target, "observe": false}),
        )
        .await?;
        Ok(())
    }

    async fn delta(&self, since: Option<u64>) -> Result<Exchange> {
        let reply = tabwire_call(self, "get_page_snapshot", json!({"since": since})).await?;
        if reply.data()?["delta"].is_null() && reply.data()?["reset"] != true {
            bail!("the since call answered neither a delta nor a reset");
        }
        Ok(reply)
    }
}

impl Driver for Playwright {
    async fn navigate(&self, url: &str) -> Result<()> {
        Playwright::navigate(self, url).await
    }

    async fn snapshot(&self) -> Result<Exchange> {
        Playwright::snapshot(self).await
    }

    async fn can_query(&self) -> Result<bool> {
        Ok(self.session.input_schema("browser_find").await?.is_some())
    }

    async fn query(&self, text: &str) -> Result<Exchange> {
        peer_call(self, "browser_find", json!({"text": text})).await
    }

    async fn refs(&self, lines: &[(String, String)]) -> Result<Vec<String>> {
        if lines.is_empty() {
            return Ok(Vec::new());
        }
        let snapshot = Playwright::snapshot(self).await?;
        lines
            .iter()
            .map(|(_, line)| {
                ref_on_line(&snapshot.text, line).with_context(|| format!("no ref for {line}"))
            })
            .collect()
    }

    async fn click(&self, target: &str) -> Result<Exchange> {
        peer_call(
            self,
            "browser_click",
            json!({"target": target, "element": "the row's Select button"}),
        )
        .await
    }

    async fn type_text(&self, target: &str, text: &str) -> Result<Exchange> {
        peer_call(
            self,
            "browser_type",
            json!({"target": target, "element": "Note textbox", "text": text}),
        )
        .await
    }

    async fn version(&self) -> Result<Option<u64>> {
        Ok(None)
    }

    async fn change(&self, target: &str) -> Result<()> {
        self.click(target).await?;
        Ok(())
    }

    async fn delta(&self, _since: Option<u64>) -> Result<Exchange> {
        Playwright::snapshot(self).await
    }
}

/// A tabwire call that must succeed.
async fn tabwire_call(tabwire: &Tabwire, tool: &str, args: Value) -> Result<Exchange> {
    let reply = tabwire.session.call(tool, args).await?;
    reply.data().with_context(|| tool.to_owned())?;
    Ok(reply)
}

/// A peer call that must succeed.
async fn peer_call(peer: &Playwright, tool: &str, args: Value) -> Result<Exchange> {
    let reply = peer.session.call(tool, args).await?;
    if reply.is_error {
        bail!("{tool} failed: {}", clip(&reply.text));
    }
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_by_nearest_rank_with_the_last_size() {
        let mut samples: Vec<Duration> = (1..=10).rev().map(Duration::from_millis).collect();
        let timing = StepTiming::of(&mut samples, 42);
        assert_eq!(
            timing,
            StepTiming {
                p50_ms: 5.0,
                p90_ms: 9.0,
                rounds: 10,
                bytes: 42
            }
        );
    }

    #[test]
    fn every_step_has_a_label_and_both_calls() {
        for step in Step::ALL {
            assert!(!step.label().is_empty());
            assert_ne!(
                step.call(ServerKind::Tabwire),
                step.call(ServerKind::Playwright)
            );
        }
    }
}
