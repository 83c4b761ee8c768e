//! The soak's short run (`bench-soak`'s code, `tabwire_e2e::soak`): a hosted hub, 20 simulated
//! browsers over five accounts, 50 MCP sessions with the mixed workload (snapshots of three
//! sizes, clicks, typing, cancelled waits, sessions reopened) for 20 s while a browser
//! disconnects and reconnects every 5 s. What it asserts holds on any machine, however slow:
//! the hub answered every call before its deadline plus the hub's grace, its descriptors did not
//! grow past the bound after warm-up, and no call failed in a way the run did not cause. Memory
//! over time and speed are the benchmark's figures, not this test's.

use std::time::Duration;

use tabwire_e2e::soak::{Config, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_soak_answers_every_call_in_time_and_leaks_no_descriptor() {
    let hub = tabwire_e2e::artifacts::artifacts().hub.clone();
    let config = Config {
        flap_every: Duration::from_secs(5),
        // Calls at a gentler pace than the benchmark's: the other tests share the machine.
        think: Duration::from_millis(50),
        ..Config::new(hub, Duration::from_secs(20))
    };
    let report = run(config).await.expect("the soak runs");
    let text = report.text();
    println!("{text}");
    assert!(report.calls() > 0, "no call completed:\n{text}");
    assert_eq!(
        report.past_deadline(),
        0,
        "the hub answered calls after their deadline + grace:\n{text}"
    );
    let (fds, within) = report.fd_growth();
    assert!(within, "the hub's descriptors grew by {fds}:\n{text}");
    assert_eq!(report.unexpected(), 0, "unexpected failures:\n{text}");
    assert!(report.run_errors.is_empty(), "{text}");
    // The run did disconnect browsers under the calls, and cancel calls.
    assert!(report.flaps > 0, "{text}");
    assert!(report.errors.contains_key("CANCELLED"), "{text}");
}
