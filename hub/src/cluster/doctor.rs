//! `doctor`'s `cluster` check: NATS connected, this replica's node ID, the replicas heard from.

use super::Status;

/// The check's name.
pub const NAME: &str = "cluster";

/// What the check says for a replica whose cluster says `status`: its detail when it passes,
/// its detail and the fix when it fails (`doctor.rs` makes the `Check`).
pub fn check(status: &Status) -> Result<String, (String, String)> {
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
        Ok(format!("node {} on {}; {others}", status.node, status.url))
    } else {
        Err((
            format!(
                "node {}: not connected to NATS at {}; peers on other replicas cannot be reached \
                 (peers on this one still can)",
                status.node, status.url
            ),
            "check that nats-server runs and this host reaches it; the hub reconnects by itself"
                .to_owned(),
        ))
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
        let ok = check(&status).unwrap();
        assert!(
            ok.contains("node n1") && ok.contains("2 other replicas heard from (n2, n3)"),
            "{ok}"
        );
        status.connected = false;
        assert!(check(&status).is_err());
    }
}
