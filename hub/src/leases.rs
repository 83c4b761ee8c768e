//! The hub's side of leases (issue 14 §3): naming the caller of every changing request, and
//! telling the peers when a session ends.
//!
//! The hub does not keep the leases: which tab a request lands on (the active tab, a tab a
//! click opened) is known only in the browser, so the table lives there
//! ([`tabwire_protocol::leases`]). What the hub knows is who calls: each MCP session gets one
//! [`LeaseHolder`], made once with its first tool call, with an opaque ID unique in this hub
//! process and a label people can read ("Claude Code · 2": the client's name from its
//! `initialize` and a number counting that name's sessions in the account,
//! [`ClientLabels`]). When the session ends its [`crate::session::SessionLease`] is dropped,
//! which tells every connected peer of the account
//! ([`crate::accounts::Account::session_ended`]), whatever their kind.
//!
//! A client without a session (MCP's per-request HTTP) is its token: its holder is named after
//! the token's ID, the same for each of its requests, and its leases end by idle time or a
//! `release_tab` only.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tabwire_protocol::leases::MAX_CLIENT_LABEL;
use tabwire_protocol::{LeaseHolder, shown_name};

/// How long a lease lasts without a changing call when the operator does not say
/// (`--lease-idle`).
pub const DEFAULT_LEASE_IDLE: Duration = Duration::from_secs(600);

/// The label of a client that gave no name.
const UNNAMED_CLIENT: &str = "MCP client";

/// Numbers the sessions of each client name in one account, from 1, for their labels.
#[derive(Default)]
pub struct ClientLabels {
    issued: Mutex<HashMap<String, u64>>,
}

impl ClientLabels {
    /// A fresh label for a session of the client named `name`: `Claude Code · 2` for its second.
    pub fn next(&self, name: Option<&str>) -> String {
        let name = client_name(name);
        let number = {
            let mut issued = self.issued.lock().unwrap();
            let count = issued.entry(name.clone()).or_default();
            *count += 1;
            *count
        };
        format!("{name} · {number}")
    }
}

/// A client's name as shown to people — in tab groups' titles, approval questions,
/// `TAB_LEASED` messages and the audit log: cleaned with the hellos' rule (the protocol's
/// [`shown_name`]: no control or format characters such as bidi overrides, whitespace runs as
/// one space), short enough for a tab group's title and the label's number, or
/// [`UNNAMED_CLIENT`]. The name comes from the client's `initialize`, which any local process
/// or token holder writes.
pub fn client_name(name: Option<&str>) -> String {
    let name = shown_name(name.unwrap_or_default(), MAX_CLIENT_LABEL - 12);
    if name.is_empty() {
        UNNAMED_CLIENT.to_owned()
    } else {
        name
    }
}

/// The holder of a client without an MCP session: its token (`jti`), labelled with its
/// client's name alone.
pub fn tokens_holder(jti: &str, name: Option<&str>, idle: Duration) -> LeaseHolder {
    LeaseHolder {
        session: format!("token:{jti}"),
        client: client_name(name),
        idle_ms: millis(idle),
    }
}

/// A duration in whole milliseconds, as the protocol carries it.
pub fn millis(duration: Duration) -> u64 {
    duration.as_millis().try_into().unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_number_each_clients_sessions_and_keep_names_printable() {
        let labels = ClientLabels::default();
        assert_eq!(labels.next(Some("Claude Code")), "Claude Code · 1");
        assert_eq!(labels.next(Some("Cursor")), "Cursor · 1");
        assert_eq!(labels.next(Some("  Claude Code ")), "Claude Code · 2");
        assert_eq!(labels.next(None), "MCP client · 1");
        assert_eq!(labels.next(Some("\u{7}\n")), "MCP client · 2");
        assert_eq!(labels.next(Some("a\u{1b}[31mb")), "a [31mb · 1");
        // Format characters hide or reorder what a name says: they go too.
        assert_eq!(
            labels.next(Some("Claude\u{202E}edoC\u{2066} \u{200B}")),
            "ClaudeedoC · 1"
        );
        assert_eq!(labels.next(Some("\u{202E}\u{FEFF}")), "MCP client · 3");
        let long = labels.next(Some(&"x".repeat(500)));
        assert!(long.chars().count() <= MAX_CLIENT_LABEL, "{long}");
    }

    #[test]
    fn a_client_without_a_session_is_its_token() {
        let holder = tokens_holder("j1", Some("curl"), Duration::from_secs(5));
        assert_eq!(holder.session, "token:j1");
        assert_eq!(holder.client, "curl");
        assert_eq!(holder.idle_ms, 5000);
    }
}
