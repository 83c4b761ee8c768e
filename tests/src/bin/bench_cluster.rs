//! `cargo run --release -p tabwire-e2e --bin bench-cluster [-- OPTIONS]`: hub replicas on NATS
//! under load and failure (`tabwire_e2e::load::cluster`): a nats-server and 3 hosted
//! `tabwire-hub --cluster` replicas on loopback, simulated browsers spread over them, an agent
//! session per account on every replica calling `create_tab` with a URL unique to each call.
//! Scenarios: (a) calls to browsers on the same replica, then across replicas; (c) nats-server
//! killed and restarted mid-run; (b) `kill -9` of one replica mid-run. Prints one table — calls,
//! calls/s, p50/p99, the p50 added across replicas, errors, failover and recovery times, calls
//! run twice — and exits 1 if any call ran twice. Asserts no speed.
//!
//! Options (defaults: the documented figures' run):
//!   --replicas N (3)  --browsers N (300)  --accounts N (10)  --in-flight N (2)
//!   --seconds S (5, each steady phase; the run takes about 11 phases)  --delay-ms MS (5)
//!   --hub PATH (this checkout's tabwire-hub, built with the bench's profile)

use std::path::PathBuf;
use std::time::Duration;

use tabwire_e2e::load::cluster::{Config, run};

const USAGE: &str = "usage: bench-cluster [--replicas N] [--browsers N] [--accounts N] \
                     [--in-flight N] [--seconds S] [--delay-ms MS] [--hub PATH]";

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
            "--replicas" => config.replicas = number(),
            "--browsers" => config.browsers = number(),
            "--accounts" => config.accounts = number().max(1),
            "--in-flight" => config.in_flight = number().max(1),
            "--seconds" => config.phase = Duration::from_secs(number().max(1) as u64),
            "--delay-ms" => config.delay = Duration::from_millis(number() as u64),
            "--hub" => hub = Some(PathBuf::from(&value)),
            _ => fail(&format!("unknown option {flag}")),
        }
    }
    if config.replicas < 2 {
        fail("--replicas must be 2 or more");
    }
    if config.browsers < config.replicas * config.accounts {
        fail(
            "--browsers must be at least replicas × accounts (a browser of each account on each replica)",
        );
    }
    config.hub = hub.unwrap_or_else(|| tabwire_e2e::artifacts::artifacts().hub.clone());
    println!(
        "bench-cluster: nats-server + {} hosted tabwire-hub replicas on loopback ({}), {} \
         simulated browsers over {} accounts, a session per account on each replica × {} calls \
         in flight of create_tab, {} s phases",
        config.replicas,
        config.hub.display(),
        config.browsers,
        config.accounts,
        config.in_flight,
        config.phase.as_secs()
    );
    let report = match run(config).await {
        Ok(report) => report,
        Err(error) => {
            eprintln!("bench-cluster: {error:#}");
            std::process::exit(1);
        }
    };
    println!();
    print!("{}", report.table());
    if !report.duplicates.is_empty() {
        eprintln!(
            "bench-cluster: {} calls ran more than once",
            report.duplicates.len()
        );
        std::process::exit(1);
    }
}

fn fail(message: &str) -> ! {
    eprintln!("bench-cluster: {message}\n{USAGE}");
    std::process::exit(2);
}
