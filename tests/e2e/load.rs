//! The load tool's short run (`bench-load`'s code, `tabwire_e2e::load`): a hosted hub, 20
//! simulated browsers over two accounts welcomed by the real token handshake, two MCP sessions
//! calling `list_tabs` on them for two seconds. It must complete with every call answered and
//! no connection lost; how fast is the benchmark's business, not this test's.

use std::time::Duration;

use tabwire_e2e::load::{Config, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_load_run_completes_with_no_errors() {
    let config = Config {
        browsers: 20,
        accounts: 2,
        sessions: 2,
        in_flight: 2,
        duration: Duration::from_secs(2),
        delay: Duration::from_millis(1),
        answer_bytes: 1000,
        ..Config::figures(tabwire_e2e::artifacts::artifacts().hub.clone())
    };
    let report = run(config).await.expect("the load run completes");
    let table = report.table();
    assert_eq!(report.errors, 0, "{table}");
    assert!(report.calls > 0, "no call completed: {table}");
    // Every call reached a simulated browser (the warm-up calls too), and went to one only.
    assert!(report.served >= report.calls, "{table}");
    assert!(report.rss_kib.iter().all(|&kib| kib > 0), "{table}");
}
