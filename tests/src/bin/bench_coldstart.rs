//! `cargo run --release -p tabwire-e2e --bin bench-coldstart [-- --runs N]`: how long the
//! extension's service worker takes from its first line of script to a connection the hub has
//! welcomed, on a cold start.
//!
//! Each run launches a fresh headless Chromium profile with the built extension pointed at one
//! running hub. A probe line added to the top of the run's copy of `background.js` logs when the
//! worker's script starts; the wasm logs `starting` once it is compiled and instantiated, and
//! `connected to` once the hub welcomed it. Chromium stamps every console line
//! (`--enable-logging=stderr`), so the three times come from one clock. Prints each run and the
//! medians; asserts nothing.

use std::time::Duration;

use tabwire_e2e::{Browser, Hub, eventually};

/// What the probe logs; the extension's own lines start with `tabwire: `.
const PROBE: &str = "tabwire-probe: worker script start";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut runs = 10usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next().and_then(|n| n.parse().ok())) {
            ("--runs", Some(n)) if n > 0 => runs = n,
            _ => {
                eprintln!("usage: bench-coldstart [--runs N]");
                std::process::exit(2);
            }
        }
    }
    tabwire_e2e::quiet_logs();
    let hub = Hub::spawn();
    let wasm = std::fs::metadata(
        tabwire_e2e::artifacts::artifacts()
            .extension
            .join("pkg/tabwire_extension_bg.wasm"),
    )
    .map(|meta| meta.len())
    .unwrap_or(0);
    println!(
        "service worker cold start, {runs} fresh profiles (wasm {} KB): script start → wasm \
         started → connected (ms)",
        wasm / 1024
    );
    println!("| run | wasm started | connected |");
    println!("| --- | --- | --- |");
    let mut started_ms = Vec::new();
    let mut connected_ms = Vec::new();
    for run in 1..=runs {
        let config = serde_json::json!({
            "serverUrl": hub.browser_url(),
            "browserName": format!("Cold {run}"),
            "pairingCode": hub.pair(),
        });
        let browser = Browser::launch_patched(config, "cold", "about:blank", &[], |extension| {
            let path = extension.join("background.js");
            let script = std::fs::read_to_string(&path).expect("background.js");
            std::fs::write(&path, format!("console.log('{PROBE}');\n{script}"))
                .expect("patch background.js");
        });
        let lines = eventually("the extension to connect", Duration::from_secs(60), || {
            let lines = browser.log_lines();
            let connected = lines.iter().any(|l| l.contains("tabwire: connected to"));
            async move { connected.then_some(lines) }
        })
        .await;
        let at = |needle: &str| {
            lines
                .iter()
                .find(|line| line.contains(needle))
                .and_then(|line| chromium_seconds(line))
                .unwrap_or_else(|| panic!("no timestamped line with {needle:?} in {lines:#?}"))
        };
        let script = at(PROBE);
        let started = since(script, at("tabwire: starting"));
        let connected = since(script, at("tabwire: connected to"));
        println!("| {run} | {started:.0} | {connected:.0} |");
        started_ms.push(started);
        connected_ms.push(connected);
        drop(browser);
    }
    println!(
        "| median | {:.0} | {:.0} |",
        median(&mut started_ms),
        median(&mut connected_ms)
    );
}

/// Milliseconds from `from` to `to`, both seconds of the day (a run across midnight wraps).
fn since(from: f64, to: f64) -> f64 {
    let seconds = (to - from).rem_euclid(86_400.0);
    seconds * 1000.0
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

/// The time of day, in seconds, of a Chromium log line: its prefix is
/// `[pid:tid:MMDD/HHMMSS.micros:LEVEL:…]`.
fn chromium_seconds(line: &str) -> Option<f64> {
    let prefix = line.strip_prefix('[')?.split(']').next()?;
    let stamp = prefix.split(':').find(|part| part.contains('/'))?;
    let (_, time) = stamp.split_once('/')?;
    let (hms, fraction) = time.split_once('.').unwrap_or((time, "0"));
    if hms.len() != 6 || !hms.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let field = |range: std::ops::Range<usize>| hms[range].parse::<f64>().ok();
    let fraction: f64 = format!("0.{fraction}").parse().ok()?;
    Some(field(0..2)? * 3600.0 + field(2..4)? * 60.0 + field(4..6)? + fraction)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chromium_timestamps_are_read() {
        let line = "[4711:4711:1201/193005.250000:INFO:CONSOLE(2)] \"tabwire: starting\"";
        assert_eq!(
            chromium_seconds(line),
            Some(19.0 * 3600.0 + 30.0 * 60.0 + 5.25)
        );
        assert_eq!(chromium_seconds("tabwire: starting"), None);
        assert_eq!(since(86_399.5, 0.5), 1000.0);
    }
}
