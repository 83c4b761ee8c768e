//! `cargo run --release -p tabwire-e2e --bin bench-load [-- OPTIONS]`: one hosted hub under
//! load (`tabwire_e2e::load`): simulated browsers speaking the real protocol, agent sessions over
//! MCP streamable HTTP calling `list_tabs` on them. Prints one table — calls/s, p50/p99
//! latency, the hub's CPU per call, its memory before and after the browsers connect and per
//! idle connection, errors — and exits 1 if any call or connection failed. Asserts no speed.
//!
//! Options (defaults: the documented figures' run):
//!   --browsers N (1000)  --accounts N (10)  --sessions N (20)  --in-flight N (4)
//!   --seconds S (10)  --delay-ms MS (0)  --answer-bytes B (200)
//!   --hub PATH (this checkout's tabwire-hub, built with the bench's profile)

use std::path::PathBuf;
use std::time::Duration;

use tabwire_e2e::load::{Config, run};

const USAGE: &str = "usage: bench-load [--browsers N] [--accounts N] [--sessions N] \
                     [--in-flight N] [--seconds S] [--delay-ms MS] [--answer-bytes B] [--hub PATH]";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut hub = None;
    let mut config = Config::figures(PathBuf::new());
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let Some(value) = args.next() else {
            fail(&format!("{flag} needs a value"));
        };
        let number = || -> usize {
            value
                .parse()
                .unwrap_or_else(|_| fail(&format!("{flag} takes a number, not {value:?}")))
        };
        match flag.as_str() {
            "--browsers" => config.browsers = number(),
            "--accounts" => config.accounts = number().max(1),
            "--sessions" => config.sessions = number(),
            "--in-flight" => config.in_flight = number().max(1),
            "--seconds" => config.duration = Duration::from_secs(number() as u64),
            "--delay-ms" => config.delay = Duration::from_millis(number() as u64),
            "--answer-bytes" => config.answer_bytes = number(),
            "--hub" => hub = Some(PathBuf::from(&value)),
            _ => fail(&format!("unknown option {flag}")),
        }
    }
    config.hub = hub.unwrap_or_else(|| tabwire_e2e::artifacts::artifacts().hub.clone());
    println!(
        "bench-load: one hosted tabwire-hub on loopback ({}), {} simulated browsers over {} \
         accounts, {} MCP sessions × {} calls in flight of list_tabs for {} s",
        config.hub.display(),
        config.browsers,
        config.accounts,
        config.sessions,
        config.in_flight,
        config.duration.as_secs()
    );
    let report = match run(config).await {
        Ok(report) => report,
        Err(error) => {
            eprintln!("bench-load: {error:#}");
            std::process::exit(1);
        }
    };
    println!();
    print!("{}", report.table());
    if report.errors > 0 {
        std::process::exit(1);
    }
}

fn fail(message: &str) -> ! {
    eprintln!("bench-load: {message}\n{USAGE}");
    std::process::exit(2);
}
