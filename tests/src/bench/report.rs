//! The printed table: the rules first, then the figures side by side, then every target with
//! the figure it is judged on and whether it was met. A figure that could not be measured is
//! printed as such with the reason, and its target is never shown as met.

use std::fmt::Write;

use super::Results;
use super::login::{LOGIN_PAGE, LOGIN_RUNS, LoginFigures};
use super::measure::{PAGES, PageFigures, ROW, ServerFigures, TABLE_PAGE};
use super::peer;
use super::refs::INTERACTIVE_ROLES;
use super::screenshots::{SHOT_ROUNDS, ShotFigures};
use super::server::ServerKind;
use super::stats::{Outcome, SnapshotFigures, tokens};
use super::tasks::Completeness;

/// tabwire's table snapshot must be at most this share of the peer's.
const TABLE_BYTES_SHARE: f64 = 0.1;
/// tabwire's snapshot p50 must be at most this share of the peer's, on every page.
const P50_SHARE: f64 = 0.2;
/// The unchanged-page delta must be at most this many bytes.
const DELTA_BYTES: usize = 300;
/// tabwire's tools/list must be at most this many ~tokens.
const TOOLS_TOKENS: usize = 5_000;
/// The row scenario must reach the button within this many calls.
const ROW_CALLS: u32 = 2;
/// tabwire's click (with its observation) p50 must be at most this share of the peer's click.
const CLICK_P50_SHARE: f64 = 1.0 / 20.0;
/// tabwire's login scenario must cost at most this share of the peer's tokens.
const LOGIN_TOKENS_SHARE: f64 = 1.0;

/// Renders the whole report: the fixture part, then the big-page and corpus tables
/// ([`super::steps_report`]), each only when it ran.
pub fn render(results: &Results) -> String {
    let mut out = String::new();
    if results.parts.fixtures {
        header(&mut out, results);
        snapshots(&mut out, results);
        row_scenario(&mut out, results);
        login_scenario(&mut out, results);
        deltas(&mut out, results);
        cheap_calls(&mut out, results);
        tools(&mut out, results);
        screenshots(&mut out, results);
        targets(&mut out, results);
    }
    super::steps_report::render(&mut out, results);
    out
}

fn header(out: &mut String, results: &Results) {
    let _ = writeln!(
        out,
        "tabwire vs {}@{} — same fixture pages, same Chromium ({}, headless), {} timed rounds \
         per page",
        peer::PACKAGE,
        peer::VERSION,
        crate::browser::chromium().display(),
        results.rounds
    );
    for (kind, outcome) in results.servers() {
        let note = match outcome {
            None => "not run (--only)".to_owned(),
            Some(Ok(figures)) => figures.setup.clone(),
            Some(Err(error)) => format!("FAILED: {error}"),
        };
        let _ = writeln!(out, "  {:<15} {note}", format!("{}:", kind.name()));
    }
    let _ = writeln!(
        out,
        "\nHow each figure is computed\n\
         \x20 bytes      the JSON-RPC response line the server sent for the call (without its newline)\n\
         \x20 ~tokens    characters of the result's text content (what the model reads) / 4\n\
         \x20 p50, p90   client-side round trip of the plain snapshot (tabwire get_page_snapshot {{}},\n\
         \x20            peer browser_snapshot {{}}), {} calls after one warm-up call that follows the\n\
         \x20            navigation; nearest rank\n\
         \x20 complete   distinct refs on lines with an interactive role / the page's own\n\
         \x20            \"Interactive elements here: N\" summed over its frames. Roles:\n\
         {}\n\
         \x20            `option` is not counted: the page counts a <select> once and its options are\n\
         \x20            reached through it. tabwire: list_frames, then each frame paged at the default\n\
         \x20            budget (offset/nextOffset); peer: its one full snapshot (iframes inline).\n\
         \x20 ratio      tabwire / peer",
        results.rounds,
        wrap(&INTERACTIVE_ROLES.join(", "), 13, 92)
    );
}

fn snapshots(out: &mut String, results: &Results) {
    let _ = writeln!(
        out,
        "\nSnapshot per page\n{:<13} {:<15} {:>9} {:>8} {:>9} {:>9}  {:<18} {:>5}  how",
        "page", "server", "bytes", "~tokens", "p50 ms", "p90 ms", "complete", "calls"
    );
    for (index, page) in PAGES.iter().enumerate() {
        let mut label = *page;
        for (kind, outcome) in results.servers() {
            let line = match outcome {
                None => continue,
                Some(Err(_)) => "(server failed; see above)".to_owned(),
                Some(Ok(figures)) => page_line(&figures.pages[index]),
            };
            let _ = writeln!(out, "{label:<13} {:<15} {line}", kind.name());
            label = "";
        }
        if let (Some(tabwire), Some(peer)) = (
            results.page(ServerKind::Tabwire, index),
            results.page(ServerKind::Playwright, index),
        ) && let (Ok(ours), Ok(theirs)) = (&tabwire.snapshot, &peer.snapshot)
        {
            let _ = writeln!(
                out,
                "{:<13} {:<15} {:>9} {:>8} {:>9}",
                "",
                "tabwire/peer",
                ratio(ours.bytes as f64, theirs.bytes as f64),
                ratio(ours.text_chars as f64, theirs.text_chars as f64),
                ratio(ours.p50_ms, theirs.p50_ms),
            );
        }
    }
}

fn page_line(page: &PageFigures) -> String {
    let figures = match &page.snapshot {
        Ok(SnapshotFigures {
            bytes,
            text_chars,
            p50_ms,
            p90_ms,
            ..
        }) => format!(
            "{:>9} {:>8} {:>9.1} {:>9.1}",
            thousands(*bytes),
            thousands(tokens(*text_chars)),
            p50_ms,
            p90_ms
        ),
        Err(error) => return format!("FAILED: {error}"),
    };
    let completeness = match &page.completeness {
        Ok(completeness) => format!(
            "{:<18} {:>5}  {}",
            complete(completeness),
            completeness.calls,
            completeness.how
        ),
        Err(error) => format!("FAILED: {error}"),
    };
    format!("{figures}  {completeness}")
}

/// `2,000/2,000 100%`, or `3/? (no count)` when the page shows no count line.
fn complete(completeness: &Completeness) -> String {
    match completeness.expected {
        Some(expected) if expected > 0 => format!(
            "{}/{} {:.0}%",
            thousands(completeness.reached),
            thousands(expected as usize),
            completeness.reached as f64 * 100.0 / expected as f64
        ),
        _ => format!("{}/? (no count)", thousands(completeness.reached)),
    }
}

fn row_scenario(out: &mut String, results: &Results) {
    let _ = writeln!(
        out,
        "\nRow {ROW} on {TABLE_PAGE}: plain snapshot, a search only if the button is not in it, \
         click, status line"
    );
    for (kind, outcome) in results.servers() {
        let Some(Ok(figures)) = outcome else { continue };
        let name = kind.name();
        match &figures.row {
            Ok(row) => {
                let confirm = if row.confirm_calls == 0 {
                    "read from the click's result".to_owned()
                } else {
                    format!(
                        "{} more call ({} B)",
                        row.confirm_calls,
                        thousands(row.confirm_bytes)
                    )
                };
                let _ = writeln!(
                    out,
                    "  {name:<15} first snapshot: {}\n  {:<15} button {} reached in {} call{} \
                     ({} B); click_element {} B, {:.1} ms; status {confirm}: {}",
                    row.first_view,
                    "",
                    row.button,
                    row.reach_calls,
                    if row.reach_calls == 1 { "" } else { "s" },
                    thousands(row.reach_bytes),
                    thousands(row.click_bytes),
                    row.click_ms,
                    row.status
                        .as_deref()
                        .map_or("NOT FOUND".to_owned(), |status| format!("{status:?}")),
                );
            }
            Err(error) => {
                let _ = writeln!(out, "  {name:<15} FAILED: {error}");
            }
        }
    }
}

fn login_scenario(out: &mut String, results: &Results) {
    let _ = writeln!(
        out,
        "\nLogin on {LOGIN_PAGE}: navigate, type, type, check \"Remember me\", click \"Sign in\", \
         read the result ({LOGIN_RUNS} timed runs after a warm-up; per run: calls and ~tokens of \
         every response as received (text content only in brackets); p50 per call)"
    );
    for (kind, outcome) in results.servers() {
        let Some(Ok(figures)) = outcome else { continue };
        let name = kind.name();
        let login = match &figures.login {
            Ok(login) => login,
            Err(error) => {
                let _ = writeln!(out, "  {name:<15} FAILED: {error}");
                continue;
            }
        };
        let mut label = name;
        for tool in &login.tools {
            let _ = writeln!(
                out,
                "  {label:<15} {:<19} {:>4} call{} {:>7} ~tokens ({:>6}) p50 {:>8.1} ms",
                tool.tool,
                calls(tool.calls),
                if tool.calls == 1.0 { " " } else { "s" },
                thousands(tool.tokens),
                thousands(tool.text_tokens),
                tool.p50_ms
            );
            label = "";
        }
        let _ = writeln!(
            out,
            "  {:<15} {:<19} {:>4} calls {:>7} ~tokens ({:>6}) p50 {:>8.1} ms per run; result read \
             from {}",
            "",
            "whole scenario",
            calls(login.calls),
            thousands(login.tokens),
            thousands(login.text_tokens),
            login.p50_ms,
            if login.read_from_click {
                "the last click's answer"
            } else {
                "a snapshot after the click"
            }
        );
    }
    if let Ok((ours, theirs)) = login_of(results) {
        let clicks = match (ours.click(), theirs.click()) {
            (Some(our), Some(their)) => ratio(our.p50_ms, their.p50_ms),
            _ => "-".into(),
        };
        let _ = writeln!(
            out,
            "  {:<15} scenario ~tokens {}, click p50 {clicks}",
            "tabwire/peer",
            ratio(ours.tokens as f64, theirs.tokens as f64),
        );
    }
}

/// Calls per run: a whole number, or one decimal when runs differed.
fn calls(per_run: f64) -> String {
    if per_run.fract() == 0.0 {
        format!("{per_run:.0}")
    } else {
        format!("{per_run:.1}")
    }
}

fn deltas(out: &mut String, results: &Results) {
    let Some(Ok(tabwire)) = results.server(ServerKind::Tabwire) else {
        return;
    };
    let _ = writeln!(
        out,
        "\nUnchanged-page delta (tabwire: get_page_snapshot, then get_page_snapshot {{since: version}}; \
         the peer has no deltas)"
    );
    for page in &tabwire.pages {
        let line = match &page.delta {
            Some(Ok(delta)) => format!(
                "{:>5} B  {}{}",
                thousands(delta.bytes),
                if delta.empty {
                    "empty delta"
                } else {
                    "NOT an empty delta"
                },
                if delta.reset { ", reset: true" } else { "" }
            ),
            Some(Err(error)) => format!("FAILED: {error}"),
            None => "not measured".to_owned(),
        };
        let _ = writeln!(out, "  {:<13} {line}", page.page);
    }
}

fn cheap_calls(out: &mut String, results: &Results) {
    let _ = writeln!(
        out,
        "\nCheap call round trip: listing tabs ({} rounds after a warm-up; tabwire: list_tabs \
         through tabwire-mcp and the hub; peer: browser_tabs list)",
        super::measure::CHEAP_ROUNDS
    );
    for (kind, outcome) in results.servers() {
        let Some(Ok(figures)) = outcome else { continue };
        let line = match &figures.cheap {
            Ok(call) => format!(
                "p50 {:.2} ms, p90 {:.2} ms, {} B",
                call.p50_ms,
                call.p90_ms,
                thousands(call.bytes)
            ),
            Err(error) => format!("FAILED: {error}"),
        };
        let _ = writeln!(out, "  {:<15} {line}", kind.name());
    }
}

fn tools(out: &mut String, results: &Results) {
    let _ = writeln!(
        out,
        "\ntools/list (the response as received; ~tokens = chars / 4)"
    );
    for (kind, outcome) in results.servers() {
        let Some(Ok(figures)) = outcome else { continue };
        let line = match &figures.tools {
            Ok(list) => format!(
                "{} tools, {} chars, ~{} tokens",
                list.tools,
                thousands(list.chars),
                thousands(tokens(list.chars))
            ),
            Err(error) => format!("FAILED: {error}"),
        };
        let _ = writeln!(out, "  {:<15} {line}", kind.name());
    }
}

fn screenshots(out: &mut String, results: &Results) {
    let _ = writeln!(
        out,
        "\nScreenshots at default settings (tabwire take_screenshot: webp, quality 60, maxWidth 800; \
         peer browser_take_screenshot: png, CSS scale; the page loaded in the active tab)\n\
         \x20 image = its base64 decoded; pixels and format from the image's header; resp = the \
         JSON-RPC response line\n\
         \x20 as received; ~tokens = its characters / 4 (base64 included); p50 of {SHOT_ROUNDS} \
         calls after a warm-up\n\
         {:<13} {:<15} {:<18} {:>15} {:>10} {:>10} {:>9} {:>8}",
        "page", "server", "arguments", "image", "image B", "resp B", "~tokens", "p50 ms"
    );
    for (index, page) in PAGES.iter().enumerate() {
        let mut label = *page;
        for (kind, outcome) in results.servers() {
            let lines = match outcome {
                None => continue,
                Some(Err(_)) => vec![("".to_owned(), "(server failed; see above)".to_owned())],
                Some(Ok(figures)) => figures.pages[index]
                    .screenshots
                    .iter()
                    .map(|(shot, figures)| {
                        let line = match figures {
                            Ok(figures) => shot_line(figures),
                            Err(error) => format!("FAILED: {error}"),
                        };
                        (shot.args().to_string(), line)
                    })
                    .collect(),
            };
            let mut name = kind.name();
            for (args, line) in lines {
                let _ = writeln!(out, "{label:<13} {name:<15} {args:<18} {line}");
                label = "";
                name = "";
            }
        }
    }
}

fn shot_line(figures: &ShotFigures) -> String {
    let image = match figures.pixels {
        Some((width, height)) => format!("{} {width}x{height}", figures.format),
        None => format!("{} ?x?", figures.format),
    };
    format!(
        "{image:>15} {:>10} {:>10} {:>9} {:>8.1}",
        thousands(figures.image_bytes),
        thousands(figures.response_bytes),
        thousands(tokens(figures.response_chars)),
        figures.p50_ms
    )
}

/// How a target fared.
enum Verdict {
    Met,
    Missed,
    /// A figure it needs is missing; never counted as met.
    Unmeasured,
}

fn targets(out: &mut String, results: &Results) {
    let _ = writeln!(out, "\nTargets (tabwire)");
    let checks = [
        table_bytes_target(results),
        p50_target(results),
        delta_target(results),
        completeness_target(results),
        row_target(results),
        tools_target(results),
        click_target(results),
        login_tokens_target(results),
    ];
    let total = checks.len();
    let mut missed = 0;
    for (verdict, target, figures) in checks {
        let mark = match verdict {
            Verdict::Met => "met",
            Verdict::Missed => {
                missed += 1;
                "MISSED"
            }
            Verdict::Unmeasured => {
                missed += 1;
                "UNMEASURED"
            }
        };
        let _ = writeln!(out, "  [{mark:<10}] {target}: {figures}");
    }
    let _ = writeln!(out, "  {} of {total} targets met", total - missed);
}

type Check = (Verdict, &'static str, String);

fn table_bytes_target(results: &Results) -> Check {
    const TARGET: &str = "table.html snapshot bytes ≤ 1/10 of the peer's";
    let index = PAGES
        .iter()
        .position(|page| *page == TABLE_PAGE)
        .unwrap_or(0);
    match (
        snapshot_of(results, ServerKind::Tabwire, index),
        snapshot_of(results, ServerKind::Playwright, index),
    ) {
        (Ok(ours), Ok(theirs)) => {
            let share = ours.bytes as f64 / theirs.bytes as f64;
            (
                verdict(share <= TABLE_BYTES_SHARE),
                TARGET,
                format!(
                    "{} B vs {} B = {share:.3}",
                    thousands(ours.bytes),
                    thousands(theirs.bytes)
                ),
            )
        }
        (ours, theirs) => (
            Verdict::Unmeasured,
            TARGET,
            missing(&[ours.err(), theirs.err()]),
        ),
    }
}

fn p50_target(results: &Results) -> Check {
    const TARGET: &str = "snapshot p50 ≤ 1/5 of the peer's on every page";
    let mut parts = Vec::new();
    let mut all_met = true;
    for (index, page) in PAGES.iter().enumerate() {
        match (
            snapshot_of(results, ServerKind::Tabwire, index),
            snapshot_of(results, ServerKind::Playwright, index),
        ) {
            (Ok(ours), Ok(theirs)) => {
                let share = ours.p50_ms / theirs.p50_ms;
                all_met &= share <= P50_SHARE;
                parts.push(format!(
                    "{page} {:.1}/{:.1} ms = {share:.3}{}",
                    ours.p50_ms,
                    theirs.p50_ms,
                    if share <= P50_SHARE { "" } else { " (missed)" }
                ));
            }
            (ours, theirs) => {
                return (
                    Verdict::Unmeasured,
                    TARGET,
                    format!("{page}: {}", missing(&[ours.err(), theirs.err()])),
                );
            }
        }
    }
    (verdict(all_met), TARGET, parts.join("; "))
}

fn delta_target(results: &Results) -> Check {
    const TARGET: &str = "unchanged-page delta ≤ 300 B (and empty)";
    let Some(Ok(tabwire)) = results.server(ServerKind::Tabwire) else {
        return (Verdict::Unmeasured, TARGET, "tabwire did not run".into());
    };
    let mut parts = Vec::new();
    let mut all_met = true;
    for page in &tabwire.pages {
        match &page.delta {
            Some(Ok(delta)) => {
                let met = delta.bytes <= DELTA_BYTES && delta.empty && !delta.reset;
                all_met &= met;
                parts.push(format!(
                    "{} {} B{}",
                    page.page,
                    delta.bytes,
                    if met { "" } else { " (missed)" }
                ));
            }
            _ => {
                return (
                    Verdict::Unmeasured,
                    TARGET,
                    format!("{}: no delta figure", page.page),
                );
            }
        }
    }
    (verdict(all_met), TARGET, parts.join("; "))
}

fn completeness_target(results: &Results) -> Check {
    const TARGET: &str = "completeness 100% on every page";
    let Some(Ok(tabwire)) = results.server(ServerKind::Tabwire) else {
        return (Verdict::Unmeasured, TARGET, "tabwire did not run".into());
    };
    let mut parts = Vec::new();
    let mut result = Verdict::Met;
    for page in &tabwire.pages {
        match &page.completeness {
            Ok(completeness) => {
                match completeness.expected {
                    Some(expected) if completeness.reached < expected as usize => {
                        result = Verdict::Missed;
                    }
                    None if matches!(result, Verdict::Met) => result = Verdict::Unmeasured,
                    _ => {}
                }
                parts.push(format!("{} {}", page.page, complete(completeness)));
            }
            Err(_) => {
                result = Verdict::Missed;
                parts.push(format!("{} failed", page.page));
            }
        }
    }
    (result, TARGET, parts.join("; "))
}

fn row_target(results: &Results) -> Check {
    const TARGET: &str =
        "row 1500's button reached in ≤ 2 calls, truncation reported, trusted click";
    let Some(Ok(tabwire)) = results.server(ServerKind::Tabwire) else {
        return (Verdict::Unmeasured, TARGET, "tabwire did not run".into());
    };
    match &tabwire.row {
        Ok(row) => {
            let expected = format!("Opened row {ROW} (trusted: true)");
            let truncation = row.first_view.contains("truncated: true");
            let met = row.reach_calls <= ROW_CALLS
                && truncation
                && row.status.as_deref() == Some(expected.as_str());
            (
                verdict(met),
                TARGET,
                format!(
                    "{} call{}, {} B; first view {}; status {}",
                    row.reach_calls,
                    if row.reach_calls == 1 { "" } else { "s" },
                    thousands(row.reach_bytes),
                    if truncation {
                        "reports truncation"
                    } else {
                        "does NOT report truncation"
                    },
                    row.status
                        .as_deref()
                        .map_or("not found".to_owned(), |status| format!("{status:?}"))
                ),
            )
        }
        Err(error) => (Verdict::Missed, TARGET, format!("failed: {error}")),
    }
}

fn tools_target(results: &Results) -> Check {
    const TARGET: &str = "tools/list ≤ 5,000 tokens";
    match results.server(ServerKind::Tabwire) {
        Some(Ok(ServerFigures {
            tools: Ok(list), ..
        })) => (
            verdict(tokens(list.chars) <= TOOLS_TOKENS),
            TARGET,
            format!("~{} tokens", thousands(tokens(list.chars))),
        ),
        _ => (Verdict::Unmeasured, TARGET, "no tools/list figure".into()),
    }
}

fn click_target(results: &Results) -> Check {
    const TARGET: &str = "login: click with its observation p50 ≤ 1/20 of the peer's click p50";
    match login_of(results) {
        Ok((ours, theirs)) => match (ours.click(), theirs.click()) {
            (Some(our), Some(their)) => {
                let share = our.p50_ms / their.p50_ms;
                (
                    verdict(share <= CLICK_P50_SHARE),
                    TARGET,
                    format!(
                        "{} {:.1} ms vs {} {:.1} ms = {share:.3}",
                        our.tool, our.p50_ms, their.tool, their.p50_ms
                    ),
                )
            }
            _ => (Verdict::Unmeasured, TARGET, "no click figures".into()),
        },
        Err(error) => (Verdict::Unmeasured, TARGET, error),
    }
}

fn login_tokens_target(results: &Results) -> Check {
    const TARGET: &str = "login scenario ~tokens (every response as received) ≤ the peer's";
    match login_of(results) {
        Ok((ours, theirs)) => {
            let share = ours.tokens as f64 / theirs.tokens as f64;
            (
                verdict(share <= LOGIN_TOKENS_SHARE),
                TARGET,
                format!(
                    "~{} vs ~{} tokens per run = {share:.3}",
                    thousands(ours.tokens),
                    thousands(theirs.tokens)
                ),
            )
        }
        Err(error) => (Verdict::Unmeasured, TARGET, error),
    }
}

/// Both servers' login figures, or why they are missing.
fn login_of(results: &Results) -> Result<(&LoginFigures, &LoginFigures), String> {
    let figures = |kind: ServerKind| match results.server(kind) {
        None => Err(format!("{} did not run", kind.name())),
        Some(Err(_)) => Err(format!("{} failed", kind.name())),
        Some(Ok(figures)) => figures
            .login
            .as_ref()
            .map_err(|_| format!("{} login failed", kind.name())),
    };
    match (
        figures(ServerKind::Tabwire),
        figures(ServerKind::Playwright),
    ) {
        (Ok(ours), Ok(theirs)) => Ok((ours, theirs)),
        (ours, theirs) => Err(missing(&[ours.err(), theirs.err()])),
    }
}

fn verdict(met: bool) -> Verdict {
    if met { Verdict::Met } else { Verdict::Missed }
}

/// The snapshot figures of one server on one page, or why they are missing.
fn snapshot_of(results: &Results, kind: ServerKind, index: usize) -> Outcome<SnapshotFigures> {
    match results.server(kind) {
        None => Err(format!("{} did not run", kind.name())),
        Some(Err(_)) => Err(format!("{} failed", kind.name())),
        Some(Ok(figures)) => figures.pages[index]
            .snapshot
            .clone()
            .map_err(|_| format!("{} snapshot failed", kind.name())),
    }
}

fn missing(reasons: &[Option<String>]) -> String {
    let reasons: Vec<&str> = reasons.iter().flatten().map(String::as_str).collect();
    format!("not measured ({})", reasons.join(", "))
}

/// `text` broken at spaces into lines of at most `width` columns, each indented by `indent`.
fn wrap(text: &str, indent: usize, width: usize) -> String {
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let line = lines.last_mut().expect("one line at least");
        if !line.is_empty() && indent + line.len() + 1 + word.len() > width {
            lines.push(word.to_owned());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    let pad = " ".repeat(indent);
    lines
        .iter()
        .map(|line| format!("{pad}{line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `a / b` for the ratio rows.
fn ratio(ours: f64, theirs: f64) -> String {
    if theirs > 0.0 {
        format!("{:.3}", ours / theirs)
    } else {
        "-".into()
    }
}

/// `12345` → `12,345`.
fn thousands(value: usize) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
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

    #[test]
    fn wrapping_keeps_words_whole() {
        assert_eq!(wrap("aa, bb, cc", 2, 9), "  aa, bb,\n  cc");
        assert_eq!(wrap("a", 0, 1), "a");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(486342), "486,342");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn counts_without_a_page_figure_are_marked() {
        let completeness = Completeness {
            expected: None,
            reached: 3,
            calls: 1,
            how: String::new(),
        };
        assert_eq!(complete(&completeness), "3/? (no count)");
        let completeness = Completeness {
            expected: Some(2000),
            ..completeness
        };
        assert_eq!(complete(&completeness), "3/2,000 0%");
    }
}
