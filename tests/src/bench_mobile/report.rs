//! The printed tables and the targets (issue 15): snapshot tokens at most half of
//! mobile-mcp's with every actionable element present, at most two adb invocations per tap with
//! its observation, and hub + backend at most 5 ms (median) beyond adb's own time.

use std::time::Duration;

use super::Server;
use super::measure::{Sample, ScreenFigures, ServerFigures};
use crate::bench::stats::{millis, p50_p90, tokens};

/// Everything one run measured; `Err` says why a server has no figures.
pub struct Results {
    /// Timed calls per screen and measurement.
    pub rounds: usize,
    /// tabwire's.
    pub tabwire: Option<Result<ServerFigures, String>>,
    /// mobile-mcp's.
    pub mobile_mcp: Option<Result<ServerFigures, String>>,
}

fn ms(d: Duration) -> String {
    format!("{:.1}", millis(d))
}

fn median(mut values: Vec<usize>) -> Option<usize> {
    values.sort();
    (!values.is_empty()).then(|| values[(values.len() - 1) / 2])
}

fn pooled(figures: &ServerFigures, pick: fn(&ScreenFigures) -> &Vec<Sample>) -> Vec<Sample> {
    figures
        .screens
        .iter()
        .flat_map(|s| pick(s).iter().copied())
        .collect()
}

fn own_adb(samples: &[Sample]) -> Option<(Duration, Duration, Duration)> {
    if samples.is_empty() {
        return None;
    }
    let (own50, own90) = p50_p90(&mut samples.iter().map(Sample::own).collect::<Vec<_>>());
    let (adb50, _) = p50_p90(&mut samples.iter().map(Sample::adb).collect::<Vec<_>>());
    Some((own50, own90, adb50))
}

/// Prints the tables; returns whether every target was met (false when a server is missing).
pub fn print(results: &Results) -> bool {
    let ok = |r: &Option<Result<ServerFigures, String>>| {
        r.as_ref().and_then(|r| r.as_ref().ok()).cloned()
    };
    let tabwire = ok(&results.tabwire);
    let peer = ok(&results.mobile_mcp);
    for (server, result) in [
        (Server::Tabwire, &results.tabwire),
        (Server::MobileMcp, &results.mobile_mcp),
    ] {
        match result {
            Some(Ok(figures)) => println!("- {}: {}", server.name(), figures.note),
            Some(Err(error)) => println!("- {}: NOT MEASURED: {error}", server.name()),
            None => println!("- {}: not run", server.name()),
        }
    }
    println!(
        "\nElement list per screen ({} timed calls each; tokens = characters of the text the model reads / 4)\n",
        results.rounds
    );
    println!(
        "| screen | actionable | tabwire tokens | all reached | mobile-mcp tokens | all reached | tabwire ÷ mobile-mcp |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let mut token_target = tabwire.is_some() && peer.is_some();
    let (mut sum_t, mut sum_p) = (0, 0);
    let count = tabwire
        .as_ref()
        .or(peer.as_ref())
        .map_or(0, |f| f.screens.len());
    for index in 0..count {
        let t = tabwire.as_ref().map(|f| &f.screens[index]);
        let p = peer.as_ref().map(|f| &f.screens[index]);
        let any = t.or(p).expect("one server ran");
        let cell = |s: Option<&ScreenFigures>| match s {
            Some(s) => (
                tokens(s.chars).to_string(),
                if s.missing.is_empty() {
                    "yes".to_owned()
                } else {
                    format!("no ({} missing)", s.missing.len())
                },
            ),
            None => ("—".into(), "—".into()),
        };
        let (tt, tc) = cell(t);
        let (pt, pc) = cell(p);
        let ratio = match (t, p) {
            (Some(t), Some(p)) if p.chars > 0 => {
                let r = t.chars as f64 / p.chars as f64;
                token_target &= r <= 0.5 && t.missing.is_empty();
                sum_t += t.chars;
                sum_p += p.chars;
                format!("{r:.2}")
            }
            _ => "—".into(),
        };
        println!(
            "| {} | {} | {tt} | {tc} | {pt} | {pc} | {ratio} |",
            any.screen, any.actionable
        );
    }
    if sum_p > 0 {
        println!(
            "| all screens | | {} | | {} | | {:.2} |",
            tokens(sum_t),
            tokens(sum_p),
            sum_t as f64 / sum_p as f64
        );
    }
    for figures in [&tabwire, &peer].into_iter().flatten() {
        for screen in &figures.screens {
            if !screen.missing.is_empty() {
                println!(
                    "  {} misses on {}: {}",
                    figures.server.name(),
                    screen.screen,
                    screen.missing.join("; ")
                );
            }
        }
    }

    println!(
        "\nA tap with its observation (tabwire: device_tap; mobile-mcp: click, then list the elements), per screen\n"
    );
    println!(
        "| screen | tabwire adb calls | tabwire p50 ms (own) | mobile-mcp adb calls | mobile-mcp p50 ms (own) |"
    );
    println!("| --- | --- | --- | --- | --- |");
    let mut max_taps = 0;
    for index in 0..count {
        let cell = |f: &Option<ServerFigures>| match f.as_ref().map(|f| &f.screens[index]) {
            Some(s) if !s.taps.is_empty() => {
                let calls = median(s.taps.iter().map(|t| t.invocations).collect()).unwrap_or(0);
                let (own, _, _) = own_adb(&s.taps).expect("samples");
                let (total, _) = p50_p90(&mut s.taps.iter().map(Sample::total).collect::<Vec<_>>());
                (
                    calls,
                    format!("{calls}"),
                    format!("{} ({})", ms(total), ms(own)),
                )
            }
            Some(_) => (0, "not listed".into(), "—".into()),
            None => (0, "—".into(), "—".into()),
        };
        let (tc, tcalls, ttime) = cell(&tabwire);
        let (_, pcalls, ptime) = cell(&peer);
        max_taps = max_taps.max(tc);
        let screen = tabwire
            .as_ref()
            .or(peer.as_ref())
            .map(|f| f.screens[index].screen)
            .unwrap_or("");
        println!("| {screen} | {tcalls} | {ttime} | {pcalls} | {ptime} |");
    }

    println!("\nEach server's own time per call beyond adb's, all screens pooled (ms)\n");
    println!("| server | call | p50 own | p90 own | p50 adb | samples |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let mut overhead_ok = tabwire.is_some();
    for figures in [&tabwire, &peer].into_iter().flatten() {
        for (what, samples) in [
            ("element list", pooled(figures, |s| &s.snapshots)),
            ("tap + observation", pooled(figures, |s| &s.taps)),
        ] {
            if let Some((own50, own90, adb50)) = own_adb(&samples) {
                if figures.server == Server::Tabwire {
                    overhead_ok &= own50 <= Duration::from_millis(5);
                }
                println!(
                    "| {} | {what} | {} | {} | {} | {} |",
                    figures.server.name(),
                    ms(own50),
                    ms(own90),
                    ms(adb50),
                    samples.len()
                );
            }
        }
    }
    let taps_ok = tabwire.is_some() && max_taps <= 2;
    println!("\nTargets");
    println!(
        "- snapshot tokens ≤ ½ of mobile-mcp's on every screen, every actionable element reached: {}",
        if token_target { "met" } else { "NOT met" }
    );
    println!(
        "- ≤ 2 adb invocations per tap with observation (tabwire's median, worst screen: {max_taps}): {}",
        if taps_ok { "met" } else { "NOT met" }
    );
    println!(
        "- hub + backend ≤ 5 ms p50 beyond adb's own time: {}",
        if overhead_ok { "met" } else { "NOT met" }
    );
    token_target && taps_ok && overhead_ok
}
