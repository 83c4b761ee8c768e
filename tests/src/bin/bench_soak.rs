//! `cargo run --release -p tabwire-e2e --bin bench-soak [-- OPTIONS]`: one hosted hub soaked
//! (`tabwire_e2e::soak`): 50 agent sessions over MCP streamable HTTP with a mixed workload
//! (list_browsers, snapshots of three sizes, list_tabs, clicks, typing, a few cancelled waits,
//! sessions closed and reopened) against simulated browsers, one of which disconnects and
//! reconnects every 10 s. Samples the hub every few seconds — RSS, open file descriptors, the
//! interval's calls, p50/p99, errors — and prints them with a verdict. Exits 1 when a call
//! waited past its deadline plus the hub's grace, the hub's descriptors or memory grew beyond
//! their bounds after warm-up (`soak::report`), or a call failed in a way the run did not
//! cause. Streamable HTTP only: the load kit has no Unix-socket MCP transport.
//!
//! Options (defaults: a CI-size run):
//!   --duration D (60s; 90s, 10m, 1h)  --sessions N (50)  --browsers N (20)  --accounts N (5)
//!   --sample-every D (5s; 60s from 10m on)  --warmup D (a sixth of the run, 5s to 60s)
//!   --flap-every D (10s)  --think-ms MS (10)  --delay-ms MS (1)
//!   --hub PATH (this checkout's tabwire-hub, built with the bench's profile)

use std::path::PathBuf;
use std::time::Duration;

use tabwire_e2e::soak::{Config, run};

const USAGE: &str = "usage: bench-soak [--duration D] [--sessions N] [--browsers N] \
                     [--accounts N] [--sample-every D] [--warmup D] [--flap-every D] \
                     [--think-ms MS] [--delay-ms MS] [--hub PATH]   (D: 90s, 10m, 1h)";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut pairs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let Some(value) = args.next() else {
            fail(&format!("{flag} needs a value"));
        };
        pairs.push((flag, value));
    }
    // The duration first: the sampling and the warm-up default to shares of it.
    let duration = pairs
        .iter()
        .find(|(flag, _)| flag == "--duration")
        .map_or(Duration::from_secs(60), |(flag, value)| span(flag, value));
    let mut config = Config::new(PathBuf::new(), duration);
    let mut hub = None;
    for (flag, value) in &pairs {
        let number = || -> usize {
            value
                .parse()
                .unwrap_or_else(|_| fail(&format!("{flag} takes a number, not {value:?}")))
        };
        match flag.as_str() {
            "--duration" => {}
            "--sessions" => config.sessions = number().max(1),
            "--browsers" => config.browsers = number().max(1),
            "--accounts" => config.accounts = number().max(1),
            "--sample-every" => config.sample_every = span(flag, value).max(Duration::from_secs(1)),
            "--warmup" => config.warmup = span(flag, value),
            "--flap-every" => config.flap_every = span(flag, value).max(Duration::from_secs(1)),
            "--think-ms" => config.think = Duration::from_millis(number() as u64),
            "--delay-ms" => config.delay = Duration::from_millis(number() as u64),
            "--hub" => hub = Some(PathBuf::from(value)),
            _ => fail(&format!("unknown option {flag}")),
        }
    }
    if config.browsers < config.accounts {
        fail("every account needs a browser: --browsers must be at least --accounts");
    }
    config.hub = hub.unwrap_or_else(|| tabwire_e2e::artifacts::artifacts().hub.clone());
    println!(
        "bench-soak: {} sessions for {} s against {}",
        config.sessions,
        config.duration.as_secs(),
        config.hub.display()
    );
    let report = match run(config).await {
        Ok(report) => report,
        Err(error) => {
            eprintln!("bench-soak: {error:#}");
            std::process::exit(1);
        }
    };
    print!("{}", report.text());
    if !report.failures().is_empty() {
        std::process::exit(1);
    }
}

/// `90s`, `10m`, `1h` or plain seconds.
fn span(flag: &str, value: &str) -> Duration {
    let (number, unit) = match value.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => value.split_at(at),
        None => (value, "s"),
    };
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => fail(&format!("{flag} takes 90s, 10m or 1h, not {value:?}")),
    };
    match number.parse::<u64>() {
        Ok(n) => Duration::from_secs(n * seconds),
        Err(_) => fail(&format!("{flag} takes 90s, 10m or 1h, not {value:?}")),
    }
}

fn fail(message: &str) -> ! {
    eprintln!("bench-soak: {message}\n{USAGE}");
    std::process::exit(2);
}
