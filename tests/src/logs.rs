//! The child processes' logs (hub, shim, Chromium, nginx): forwarded to the test's stderr,
//! which the test harness shows only for a failing test, unless a benchmark asks for quiet.

use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);

/// Stops forwarding the hub's, shim's and Chromium's logs to stderr (tests keep them: the test
/// harness shows them only for a failing test; the benchmark does not want them).
pub fn quiet_logs() {
    QUIET.store(true, Ordering::Relaxed);
}

/// Forwards one line of a child process's log, unless [`quiet_logs`] was called.
pub fn forward_log(source: &str, line: &str) {
    if !QUIET.load(Ordering::Relaxed) {
        eprintln!("[{source}] {line}");
    }
}
