//! `cargo run --release -p tabwire-e2e --bin bench [-- --rounds N --only tabwire|playwright]`:
//! tabwire and Microsoft's `@playwright/mcp` side by side on the same fixture pages, one table
//! on stdout (progress on stderr). See `tabwire_e2e::bench` for what is measured and how.

use std::process::ExitCode;

use tabwire_e2e::bench::options::{Options, Parsed, USAGE};
use tabwire_e2e::bench::{report, run};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(Parsed::Run(options)) => options,
        Ok(Parsed::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            eprintln!("bench: {error:#}");
            return ExitCode::from(2);
        }
    };
    tabwire_e2e::quiet_logs();
    // On Ctrl-C the run is dropped and the runtime shuts down, which drops every server's
    // handles: the hub, both browsers and the peer's processes are killed, not orphaned.
    tokio::select! {
        results = run(&options) => {
            print!("{}", report::render(&results));
            ExitCode::SUCCESS
        }
        _ = tokio::signal::ctrl_c() => {
            eprintln!("bench: interrupted; stopping the servers and browsers");
            ExitCode::from(130)
        }
    }
}
