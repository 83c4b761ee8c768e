//! `cargo run --release -p tabwire-e2e --bin bench-mobile [-- --rounds N] [--only tabwire|mobile-mcp] [--platform android|ios]`:
//! tabwire against `@mobilenext/mobile-mcp` on the same scripted phone (see
//! `tabwire_e2e::bench_mobile`). Prints markdown tables; exits 1 when a target is missed.

use tabwire_e2e::bench_mobile::measure::{mobile_mcp, phones, tabwire};
use tabwire_e2e::bench_mobile::report::{Results, print};
use tabwire_e2e::bench_mobile::{Options, Server, USAGE};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{USAGE}");
            return;
        }
        Err(error) => {
            eprintln!("bench-mobile: {error}\n{USAGE}");
            std::process::exit(2);
        }
    };
    tabwire_e2e::quiet_logs();
    let mut results = Results {
        rounds: options.rounds,
        tabwire: None,
        mobile_mcp: None,
    };
    // Each server gets a fresh phone, so neither inherits the other's calls or state.
    let android = options.measures("android");
    if android && options.runs(Server::MobileMcp) {
        eprintln!("bench-mobile: mobile-mcp …");
        let phones = phones();
        results.mobile_mcp = Some(
            mobile_mcp(&phones, &options)
                .await
                .map_err(|e| format!("{e:#}")),
        );
    }
    if android && options.runs(Server::Tabwire) {
        eprintln!("bench-mobile: tabwire …");
        let phones = phones();
        results.tabwire = Some(
            tabwire(&phones, &options)
                .await
                .map_err(|e| format!("{e:#}")),
        );
    }
    let met = !android || print(&results);
    if !options.measures("ios") {
        if !met {
            std::process::exit(1);
        }
        return;
    }
    let ios_tabwire = if options.runs(Server::Tabwire) {
        eprintln!("bench-mobile: tabwire on iOS …");
        tabwire_e2e::bench_mobile::ios::tabwire().await
    } else {
        Err(anyhow::anyhow!("not run (--only)"))
    };
    let ios_peer = if options.runs(Server::MobileMcp) {
        eprintln!("bench-mobile: mobile-mcp on iOS …");
        tabwire_e2e::bench_mobile::ios::mobile_mcp().await
    } else {
        Err(anyhow::anyhow!("not run (--only)"))
    };
    tabwire_e2e::bench_mobile::ios::print(&ios_tabwire, &ios_peer);
    if !met {
        std::process::exit(1);
    }
}
