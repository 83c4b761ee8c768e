//! `cargo run --release -p tabwire-e2e --bin bench-coldstart [-- --runs N]`: how long the
//! extension's service worker takes from its first line of script to its first answered call,
//! on a cold start (Chrome stops idle workers, and compiles the wasm again on each start).
//!
//! Each run launches a fresh headless Chromium profile with the built extension pointed at one
//! running hub. Probe lines added to the top of the run's copy of `background.js` log when the
//! worker's script starts, when the first request reaches its WebSocket and when the first
//! response leaves it; the wasm logs `starting` once it is compiled and instantiated, and
//! `connected to` once the hub welcomed it. As soon as the log says connected, an MCP client
//! calls `list_tabs`. Chromium stamps every console line (`--enable-logging=stderr`), so the
//! times come from one clock. The first call's own time (request in → response out, lazy
//! compilation of the code it runs included) added to the connection's is the start to a first
//! answer for a call that was waiting for the worker (the bench's own delay in noticing the
//! connection is left out). Prints each run and the medians; asserts nothing.

use std::time::Duration;

use tabwire_e2e::{Browser, Hub, McpClient, eventually};

/// What the probes log; the extension's own lines start with `tabwire: `.
const PROBE: &str = "tabwire-probe: worker script start";
const REQUEST_IN: &str = "tabwire-probe: first request in";
const RESPONSE_OUT: &str = "tabwire-probe: first response out";

/// Prepended to the run's `background.js`: the script-start line, and a WebSocket that logs the
/// first request it receives and the first response it sends (the wasm's `new WebSocket` and
/// `send` find these at call time).
fn probe_script() -> String {
    format!(
        "console.log('{PROBE}');\n\
         globalThis.WebSocket = class extends WebSocket {{\n\
         \x20 constructor(...args) {{\n\
         \x20   super(...args);\n\
         \x20   this.addEventListener('message', (e) => {{\n\
         \x20     if (!globalThis.probeIn && String(e.data).includes('\"type\":\"request\"')) {{\n\
         \x20       globalThis.probeIn = true; console.log('{REQUEST_IN}');\n\
         \x20     }}\n\
         \x20   }});\n\
         \x20 }}\n\
         \x20 send(data) {{\n\
         \x20   if (!globalThis.probeOut && String(data).includes('\"type\":\"response\"')) {{\n\
         \x20     globalThis.probeOut = true; console.log('{RESPONSE_OUT}');\n\
         \x20   }}\n\
         \x20   return super.send(data);\n\
         \x20 }}\n\
         }};\n"
    )
}

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
         started → connected; the first call (list_tabs) in → out; start to first answer (ms)",
        wasm / 1024
    );
    println!("| run | wasm started | connected | first call | first answer |");
    println!("| --- | --- | --- | --- | --- |");
    let mut started_ms = Vec::new();
    let mut connected_ms = Vec::new();
    let mut call_ms = Vec::new();
    let mut answer_ms = Vec::new();
    for run in 1..=runs {
        let config = serde_json::json!({
            "serverUrl": hub.browser_url(),
            "browserName": format!("Cold {run}"),
            "pairingCode": hub.pair(),
        });
        let browser = Browser::launch_patched(config, "cold", "about:blank", &[], |extension| {
            let path = extension.join("background.js");
            let script = std::fs::read_to_string(&path).expect("background.js");
            std::fs::write(&path, format!("{}{script}", probe_script()))
                .expect("patch background.js");
        });
        // A session of its own per run: one that saw the last run's browser would keep asking
        // for it.
        let client = McpClient::connect(&hub).await;
        eventually("the extension to connect", Duration::from_secs(60), || {
            let lines = browser.log_lines();
            let connected = lines.iter().any(|l| l.contains("tabwire: connected to"));
            async move { connected.then_some(()) }
        })
        .await;
        // Until the extension answered one (the hub may still list the last run's browser for
        // a moment, and then asks which browser).
        let lines = eventually("a first answered call", Duration::from_secs(60), || {
            let client = &client;
            let browser = &browser;
            async move {
                let _ = client.try_call("list_tabs", serde_json::json!({})).await;
                let lines = browser.log_lines();
                lines
                    .iter()
                    .any(|l| l.contains(RESPONSE_OUT))
                    .then_some(lines)
            }
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
        let call = since(at(REQUEST_IN), at(RESPONSE_OUT));
        let answer = connected + call;
        println!("| {run} | {started:.0} | {connected:.0} | {call:.1} | {answer:.0} |");
        started_ms.push(started);
        connected_ms.push(connected);
        call_ms.push(call);
        answer_ms.push(answer);
        drop(browser);
    }
    println!(
        "| median | {:.0} | {:.0} | {:.1} | {:.0} |",
        median(&mut started_ms),
        median(&mut connected_ms),
        median(&mut call_ms),
        median(&mut answer_ms)
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
