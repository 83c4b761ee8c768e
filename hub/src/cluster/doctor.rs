//! `doctor`'s `cluster` check: NATS connected, this replica's node ID, the replicas heard from.

use super::Status;
use crate::doctor::Check;

/// The check's name.
pub const NAME: &str = "cluster";

/// The check for a replica whose cluster says `status`.
pub fn check(status: &Status) -> Check {
    let others = if status.replicas.is_empty() {
        "no other replica heard from".to_owned()
    } else {
        format!(
            "{} other replica{} heard from ({})",
            status.replicas.len(),
            if status.replicas.len() == 1 { "" } else { "s" },
            status.replicas.join(", ")
        )
    };
    if status.connected {
        Check::pass(
            NAME,
            format!("node {} on {}; {others}", status.node, status.url),
        )
    } else {
        Check::fail(
            NAME,
            format!(
                "node {}: not connected to NATS at {}; peers on other replicas cannot be reached \
                 (peers on this one still can)",
                status.node, status.url
            ),
            "check that nats-server runs and this host reaches it; the hub reconnects by itself",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_names_the_node_and_fails_without_nats() {
        let mut status = Status {
            node: "n1".into(),
            url: "nats://127.0.0.1:4222".into(),
            connected: true,
            replicas: vec!["n2".into(), "n3".into()],
        };
        let ok = check(&status);
        assert!(ok.ok);
        assert!(
            ok.detail.contains("node n1")
                && ok.detail.contains("2 other replicas heard from (n2, n3)"),
            "{ok:?}"
        );
        status.connected = false;
        assert!(!check(&status).ok);
    }
}
