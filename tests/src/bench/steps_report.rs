//! The tables of the big-page steps ([`super::steps`]) and of the real saved pages
//! ([`super::corpus`]), each row with the targets of issue 25 judged beside it:
//!
//! - every step within [`STEP_P50_MS`] p50 on the big pages;
//! - every step within [`PEER_SHARE`] of the peer's p50 for the same step;
//! - no page where tabwire's default snapshot is slower (p50) than the peer's.
//!
//! A figure that is missing is printed with its reason and never counts as met.

use std::fmt::Write;

use super::Results;
use super::corpus::{self, CorpusFigures};
use super::login::LoginFigures;
use super::peer;
use super::server::ServerKind;
use super::stats::{Outcome, SnapshotFigures};
use super::steps::{OTHER_ROW, ROW, ROW_COUNTS, Step, StepFigures, StepOutcome, StepTiming};

/// What a server that did not run (`--only`) shows instead of figures.
const NOT_RUN: &str = "not run";
/// Each step's p50 on a big page must be at most this, milliseconds.
pub const STEP_P50_MS: f64 = 25.0;
/// Each step's p50 must be at most this share of the peer's.
pub const PEER_SHARE: f64 = 0.1;

/// Appends the big-page and corpus tables of the parts that ran.
pub fn render(out: &mut String, results: &Results) {
    if !results.parts.big && !results.parts.corpus {
        return;
    }
    if !results.parts.fixtures {
        header(out, results);
    }
    if results.parts.big {
        big_pages(out, results);
    }
    if results.parts.corpus {
        corpus_pages(out, results);
    }
}

/// The servers and their setup, when the fixture part (which prints them) did not run.
fn header(out: &mut String, results: &Results) {
    let _ = writeln!(
        out,
        "tabwire vs {}@{} — same Chromium ({}, headless)",
        peer::PACKAGE,
        peer::VERSION,
        crate::browser::chromium().display(),
    );
    for kind in [ServerKind::Tabwire, ServerKind::Playwright] {
        let note = match results.setups.of(kind) {
            None => "not run (--only)".to_owned(),
            Some(Ok(setup)) => setup.clone(),
            Some(Err(error)) => format!("FAILED: {error}"),
        };
        let _ = writeln!(out, "  {:<15} {note}", format!("{}:", kind.name()));
    }
}

fn big_pages(out: &mut String, results: &Results) {
    let _ = writeln!(
        out,
        "\nBig-page steps: rows.html?rows=N (a \"Select N\" button per row, a status line and a Note \
         textbox\nunder the table); {} timed rounds per step after one warm-up; p50/p90 ms by \
         nearest rank; KB = the\nlast timed response. Targets beside each row: tabwire p50 ≤ {} ms; \
         tabwire p50 ≤ 1/{} of the peer's.",
        results.step_rounds,
        STEP_P50_MS,
        (1.0 / PEER_SHARE).round()
    );
    let _ = writeln!(
        out,
        "{:<27} {:>6}  {:>17} {:>6}  {:>17} {:>6}  {:>7}  {:<9} {:<9}",
        "step", "rows", "tabwire p50/p90", "KB", "peer p50/p90", "KB", "tw/peer", "≤25 ms", "≤1/10"
    );
    let steps_of = |kind| figures_of(results.steps.of(kind));
    let (ours, theirs) = (
        steps_of(ServerKind::Tabwire),
        steps_of(ServerKind::Playwright),
    );
    let (mut met, mut total) = (0, 0);
    for step in Step::ALL {
        for (index, rows) in ROW_COUNTS.iter().enumerate() {
            let pick = |figures: &Outcome<&StepFigures>| -> StepOutcome {
                match figures {
                    Ok(figures) => figures
                        .pages
                        .get(index)
                        .and_then(|page| page.step(step).cloned())
                        .unwrap_or_else(|| Err("not measured".into())),
                    Err(error) => Err(error.clone()),
                }
            };
            let row = step_row(step.label(), *rows, &pick(&ours), &pick(&theirs));
            met += row.met;
            total += 2;
            let _ = writeln!(out, "{}", row.line);
        }
    }
    login_rows(out, results);
    let _ = writeln!(out, "  {met} of {total} step targets met");
    bare_clicks(out, &ours);
    let _ = writeln!(
        out,
        "Calls per step (tabwire | peer). Clicks alternate between row {ROW}'s and row \
         {OTHER_ROW}'s button so each\nchanges the status line; before a delta the other button \
         is clicked, untimed (tabwire with observe: false)."
    );
    for step in Step::ALL {
        let _ = writeln!(
            out,
            "  {:<27} {} | {}",
            step.label(),
            step.call(ServerKind::Tabwire),
            step.call(ServerKind::Playwright)
        );
    }
}

/// The bare click per page size (`super::bare`): the browser's own share of the click step.
fn bare_clicks(out: &mut String, ours: &Outcome<&StepFigures>) {
    let Ok(figures) = ours else { return };
    let _ = writeln!(
        out,
        "The same click with nothing around it, straight through DevTools in tabwire's browser (move, press,\n\
         release, read the status line; no checks, no pause for the hover, no observation), p50/p90 ms:"
    );
    for page in &figures.pages {
        let figure = match &page.bare_click {
            Some(Ok(timing)) => format!("{:.1} / {:.1}", timing.p50_ms, timing.p90_ms),
            Some(Err(error)) => format!("failed: {error}"),
            None => continue,
        };
        let _ = writeln!(out, "  {:>6} rows  {figure}", thousands(page.rows));
    }
}

/// A server's figures of one part, or why they are missing.
fn figures_of<T>(outcome: Option<&Outcome<T>>) -> Outcome<&T> {
    match outcome {
        None => Err(NOT_RUN.into()),
        Some(Ok(figures)) => Ok(figures),
        Some(Err(_)) => Err("server failed; see above".into()),
    }
}

/// One printed row and how many of its two targets it met.
#[derive(Debug, PartialEq)]
pub struct Row {
    /// The line.
    pub line: String,
    /// Targets met (0–2).
    pub met: usize,
}

/// A step's row: both servers' timings, the ratio, and the two targets.
pub fn step_row(label: &str, rows: u32, ours: &StepOutcome, theirs: &StepOutcome) -> Row {
    let ours_p50 = match ours {
        Ok(Some(timing)) => Some(timing.p50_ms),
        _ => None,
    };
    let theirs_p50 = match theirs {
        Ok(Some(timing)) => Some(timing.p50_ms),
        _ => None,
    };
    let absolute = match ours_p50 {
        Some(p50) => mark(p50 <= STEP_P50_MS),
        None => "UNMEASURED",
    };
    let share = match (ours_p50, theirs_p50) {
        (Some(p50), Some(peer)) => mark(p50 <= PEER_SHARE * peer),
        (Some(_), None) if matches!(theirs, Ok(None)) => "no peer",
        _ => "UNMEASURED",
    };
    let ratio = match (ours_p50, theirs_p50) {
        (Some(p50), Some(peer)) if peer > 0.0 => format!("{:.3}", p50 / peer),
        _ => "—".into(),
    };
    let mut line = format!(
        "{label:<27} {:>6}  {}  {}  {ratio:>7}  {absolute:<9} {share:<9}",
        thousands(rows),
        timing_cells(ours),
        timing_cells(theirs),
    );
    for (kind, outcome) in [
        (ServerKind::Tabwire, ours),
        (ServerKind::Playwright, theirs),
    ] {
        if let Err(error) = outcome
            && error != NOT_RUN
        {
            let _ = write!(line, "\n{:<35}{}: {error}", "", kind.name());
        }
    }
    let met = usize::from(absolute == "met") + usize::from(share == "met");
    Row { line, met }
}

/// `p50 / p90` and KB, or "—" (no such call) or "failed".
fn timing_cells(outcome: &StepOutcome) -> String {
    match outcome {
        Ok(Some(StepTiming {
            p50_ms,
            p90_ms,
            bytes,
            ..
        })) => format!(
            "{:>17} {:>6}",
            format!("{p50_ms:.1} / {p90_ms:.1}"),
            format!("{:.1}", *bytes as f64 / 1024.0)
        ),
        Ok(None) => format!("{:>17} {:>6}", "—", ""),
        Err(error) if error == NOT_RUN => format!("{:>17} {:>6}", NOT_RUN, ""),
        Err(_) => format!("{:>17} {:>6}", "failed", ""),
    }
}

/// The small page: the same calls, from the login scenario of the fixture part.
fn login_rows(out: &mut String, results: &Results) {
    if !results.parts.fixtures {
        let _ = writeln!(
            out,
            "{:<27} {:>6}  (the login scenario of the fixture part; run with --only-steps all)",
            "same calls on login.html", "small"
        );
        return;
    }
    for kind in [ServerKind::Tabwire, ServerKind::Playwright] {
        let figures = match results.server(kind) {
            Some(Ok(figures)) => figures.login.as_ref().map_err(Clone::clone),
            Some(Err(_)) => Err("server failed".into()),
            None => Err("not run".into()),
        };
        let _ = writeln!(
            out,
            "{:<27} {:>6}  {}: {}",
            "same calls on login.html",
            "small",
            kind.name(),
            login_line(&figures)
        );
    }
}

/// Each tool's p50 in the login scenario, e.g. `navigate_and_wait 12.0, type_text 4.1 ms p50`.
pub fn login_line(figures: &Result<&LoginFigures, String>) -> String {
    match figures {
        Ok(figures) => {
            let tools: Vec<String> = figures
                .tools
                .iter()
                .map(|tool| format!("{} {:.1}", tool.tool, tool.p50_ms))
                .collect();
            format!("{} ms p50 (login scenario above)", tools.join(", "))
        }
        Err(error) => format!("not measured ({error})"),
    }
}

fn corpus_pages(out: &mut String, results: &Results) {
    let _ = writeln!(
        out,
        "\nReal saved pages: tests/cache/ of {}=={} from PyPI ({}), kept in target/bench-corpus/; \
         served\noffline (every <script> removed, a CSP <meta> allows loads from the page's own \
         server only).\nDefault snapshot (tabwire get_page_snapshot {{}}, peer browser_snapshot \
         {{}}), {} timed rounds after one warm-up.\nTarget: no page where tabwire's p50 is above \
         the peer's.",
        corpus::PACKAGE,
        corpus::VERSION,
        corpus::LICENCE,
        results.step_rounds
    );
    if let Some(error) = &results.corpus_error {
        let _ = writeln!(out, "  not measured: {error}");
        return;
    }
    let _ = writeln!(
        out,
        "{:<34} {:>7}  {:>17} {:>6}  {:>17} {:>6}  {:>7}  target",
        "page", "saved KB", "tabwire p50/p90", "KB", "peer p50/p90", "KB", "tw/peer"
    );
    let ours = figures_of(results.corpus.of(ServerKind::Tabwire));
    let theirs = figures_of(results.corpus.of(ServerKind::Playwright));
    let names: Vec<(&str, usize)> = match (&ours, &theirs) {
        (Ok(figures), _) | (_, Ok(figures)) => figures
            .pages
            .iter()
            .map(|page| (page.name, page.saved_bytes))
            .collect(),
        _ => Vec::new(),
    };
    let mut slower = Vec::new();
    let mut unmeasured = 0;
    for (index, (name, saved)) in names.iter().enumerate() {
        let (ours, theirs) = (page_of(&ours, index), page_of(&theirs, index));
        let (line, verdict) = corpus_row(name, *saved, &ours, &theirs);
        match verdict {
            Some(true) => {}
            Some(false) => slower.push(*name),
            None => unmeasured += 1,
        }
        let _ = writeln!(out, "{line}");
    }
    if names.is_empty() {
        let _ = writeln!(out, "  no figures from either server");
    }
    let _ = writeln!(
        out,
        "  pages where tabwire is slower than the peer: {}{}",
        if slower.is_empty() {
            "none".to_owned()
        } else {
            slower.join(", ")
        },
        if unmeasured > 0 {
            format!(" ({unmeasured} page(s) UNMEASURED)")
        } else {
            String::new()
        }
    );
}

fn page_of(figures: &Outcome<&CorpusFigures>, index: usize) -> Outcome<SnapshotFigures> {
    match figures {
        Ok(figures) => figures
            .pages
            .get(index)
            .map_or_else(|| Err("not measured".into()), |page| page.snapshot.clone()),
        Err(error) => Err(error.clone()),
    }
}

/// A corpus page's row and its verdict: `Some(true)` when tabwire's p50 is at most the peer's,
/// `Some(false)` when it is slower, `None` when either is missing.
pub fn corpus_row(
    name: &str,
    saved_bytes: usize,
    ours: &Outcome<SnapshotFigures>,
    theirs: &Outcome<SnapshotFigures>,
) -> (String, Option<bool>) {
    let cells = |outcome: &Outcome<SnapshotFigures>| match outcome {
        Ok(figures) => format!(
            "{:>17} {:>6}",
            format!("{:.1} / {:.1}", figures.p50_ms, figures.p90_ms),
            format!("{:.1}", figures.bytes as f64 / 1024.0)
        ),
        Err(error) if error == NOT_RUN => format!("{:>17} {:>6}", NOT_RUN, ""),
        Err(_) => format!("{:>17} {:>6}", "failed", ""),
    };
    let (ratio, verdict) = match (ours, theirs) {
        (Ok(ours), Ok(theirs)) if theirs.p50_ms > 0.0 => (
            format!("{:.3}", ours.p50_ms / theirs.p50_ms),
            Some(ours.p50_ms <= theirs.p50_ms),
        ),
        _ => ("—".to_owned(), None),
    };
    let mark = match verdict {
        Some(true) => "met",
        Some(false) => "SLOWER",
        None => "UNMEASURED",
    };
    let mut line = format!(
        "{name:<34} {:>7.1}  {}  {}  {ratio:>7}  {mark}",
        saved_bytes as f64 / 1024.0,
        cells(ours),
        cells(theirs)
    );
    for (kind, outcome) in [
        (ServerKind::Tabwire, ours),
        (ServerKind::Playwright, theirs),
    ] {
        if let Err(error) = outcome
            && error != NOT_RUN
        {
            let _ = write!(line, "\n{:<35}{}: {error}", "", kind.name());
        }
    }
    (line, verdict)
}

fn mark(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

/// `12345` → `12,345`.
fn thousands(value: u32) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(p50_ms: f64) -> StepOutcome {
        Ok(Some(StepTiming {
            p50_ms,
            p90_ms: p50_ms * 2.0,
            rounds: 10,
            bytes: 2048,
        }))
    }

    fn snapshot(p50_ms: f64) -> Outcome<SnapshotFigures> {
        Ok(SnapshotFigures {
            bytes: 1024,
            text_chars: 100,
            p50_ms,
            p90_ms: p50_ms + 1.0,
            rounds: 10,
        })
    }

    #[test]
    fn a_fast_step_meets_both_targets() {
        let row = step_row("query", 2000, &timing(20.0), &timing(400.0));
        assert_eq!(row.met, 2);
        assert!(row.line.contains("20.0 / 40.0"), "{}", row.line);
        assert!(row.line.contains("0.050"), "{}", row.line);
        assert!(row.line.contains("2,000"), "{}", row.line);
        assert!(!row.line.contains("MISSED"), "{}", row.line);
    }

    #[test]
    fn each_target_is_judged_on_its_own() {
        // Under 25 ms but more than a tenth of the peer's.
        let row = step_row("type", 2000, &timing(20.0), &timing(87.0));
        assert_eq!(row.met, 1);
        assert!(row.line.contains("met       MISSED"), "{}", row.line);
        // A tenth of the peer's but over 25 ms.
        let row = step_row("first", 10000, &timing(60.0), &timing(900.0));
        assert_eq!(row.met, 1);
        assert!(row.line.contains("MISSED    met"), "{}", row.line);
    }

    #[test]
    fn missing_figures_never_count_as_met() {
        let row = step_row("query", 2000, &timing(5.0), &Ok(None));
        assert_eq!(row.met, 1);
        assert!(row.line.contains("no peer"), "{}", row.line);
        assert!(row.line.contains('—'), "{}", row.line);
        let row = step_row("click", 2000, &Err("timed out".into()), &timing(100.0));
        assert_eq!(row.met, 0);
        assert!(row.line.contains("UNMEASURED"), "{}", row.line);
        assert!(row.line.contains("tabwire: timed out"), "{}", row.line);
        let row = step_row("click", 2000, &timing(1.0), &Err("crashed".into()));
        assert_eq!(row.met, 1);
        assert!(row.line.contains("playwright-mcp: crashed"), "{}", row.line);
    }

    #[test]
    fn slower_corpus_pages_are_flagged() {
        let (line, verdict) = corpus_row("a.html", 2048, &snapshot(30.0), &snapshot(80.0));
        assert_eq!(verdict, Some(true));
        assert!(line.contains("0.375") && line.ends_with("met"), "{line}");
        let (line, verdict) = corpus_row("b.html", 2048, &snapshot(90.0), &snapshot(80.0));
        assert_eq!(verdict, Some(false));
        assert!(line.contains("SLOWER"), "{line}");
        let (line, verdict) = corpus_row("c.html", 2048, &snapshot(9.0), &Err("404".into()));
        assert_eq!(verdict, None);
        assert!(
            line.contains("UNMEASURED") && line.contains("404"),
            "{line}"
        );
        let (line, verdict) = corpus_row("d.html", 2048, &snapshot(9.0), &Err(NOT_RUN.into()));
        assert_eq!(verdict, None);
        assert!(line.contains(NOT_RUN) && !line.contains('\n'), "{line}");
    }

    #[test]
    fn login_line_lists_each_tool() {
        assert_eq!(
            login_line(&Err("no login".into())),
            "not measured (no login)"
        );
    }
}
