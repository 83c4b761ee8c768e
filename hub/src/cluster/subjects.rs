//! The NATS subjects replicas talk on.
//!
//! An account name or a peer ID is whatever a token's `sub` or a peer's hello said: it may hold
//! `.` (NATS's token separator), `*` and `>` (its wildcards), spaces or be empty. Each is put in
//! a subject hex-encoded (lower case, prefixed `x` so an empty name is still one token), so two
//! different names never make the same subject and no name acts as a wildcard.

/// Prefix of every subject tabwire uses.
pub const ROOT: &str = "tw";

/// The queue group every owner of a peer subscribes in: while an old and a new owner both
/// listen (a takeover not yet seen), each call is still delivered to one of them.
pub const OWNERS: &str = "owners";

/// One subject token for any string: `x` and its UTF-8 bytes in lower-case hex.
pub fn token(name: &str) -> String {
    let mut out = String::with_capacity(1 + name.len() * 2);
    out.push('x');
    for byte in name.bytes() {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// The string a [`token`] encodes, or `None` for anything else.
pub fn decode(token: &str) -> Option<String> {
    let hex = token.strip_prefix('x')?;
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// Where calls for one peer go: `tw.peer.<account>.<kind>.<peer>`.
pub fn peer(account: &str, kind: &str, peer: &str) -> String {
    format!("{ROOT}.peer.{}.{kind}.{}", token(account), token(peer))
}

/// Where the owner of one peer announces its takeover: `tw.fence.<account>.<kind>.<peer>`.
pub fn fence(account: &str, kind: &str, peer: &str) -> String {
    format!("{ROOT}.fence.{}.{kind}.{}", token(account), token(peer))
}

/// Every takeover.
pub const ALL_FENCES: &str = "tw.fence.>";

/// Where a replica says which peers of one account and kind it holds.
pub fn presence(account: &str, kind: &str) -> String {
    format!("{ROOT}.presence.{}.{kind}", token(account))
}

/// Every presence message.
pub const ALL_PRESENCE: &str = "tw.presence.>";

/// Where cancels of calls a replica runs for others are sent.
pub fn cancel(node: &str) -> String {
    format!("{ROOT}.cancel.{}", token(node))
}

/// Where an account's ended MCP sessions are announced.
pub fn session(account: &str) -> String {
    format!("{ROOT}.session.{}", token(account))
}

/// Every account's ended sessions.
pub const ALL_SESSIONS: &str = "tw.session.>";

/// Where new revocations are announced.
pub const REVOKED: &str = "tw.revoked";

/// The account token of a subject `tw.<what>.<account>…`, decoded.
pub fn account_of(subject: &str) -> Option<String> {
    decode(subject.split('.').nth(2)?)
}

/// The `Mcp-Session-Id` a client sees for rmcp's session `id` on replica `node`:
/// `<node>.<id>`, so a load balancer can send the session's requests to the replica that holds
/// it (MCP sessions live in one replica's memory).
pub fn tag_session(node: &str, id: &str) -> String {
    format!("{node}.{id}")
}

/// rmcp's session ID in a client's `Mcp-Session-Id`, if the session is `node`'s; `None` for a
/// session of another replica (the client is told the session is gone: it starts a new one).
pub fn local_session<'a>(node: &str, tagged: &'a str) -> Option<&'a str> {
    tagged.strip_prefix(node)?.strip_prefix('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_one_plain_token_each() {
        for name in [
            "",
            "a.b",
            "*",
            ">",
            "a b",
            "tw.peer.>",
            "ünïcode",
            "x",
            "\t",
        ] {
            let token = token(name);
            assert!(
                token
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()),
                "{token}"
            );
            assert_eq!(decode(&token).as_deref(), Some(name));
        }
    }

    #[test]
    fn dots_and_wildcards_cannot_collide() {
        // Without encoding, account "a.b" peer "c" and account "a" peer "b.c" would share
        // `tw.peer.a.b.browser.c`-like subjects; and "*" would match every peer.
        let pairs = [
            (("a.b", "c"), ("a", "b.c")),
            (("a", "*"), ("a", "b")),
            (("a", ">"), ("a", "b.c")),
            (("", "a"), ("a", "")),
        ];
        for ((a1, p1), (a2, p2)) in pairs {
            assert_ne!(peer(a1, "browser", p1), peer(a2, "browser", p2));
        }
        let subject = peer("a.b*", "browser", "c d>");
        assert_eq!(subject.split('.').count(), 5, "{subject}");
        assert!(!subject.contains('*') && !subject.contains('>') && !subject.contains(' '));
        assert_eq!(account_of(&subject).as_deref(), Some("a.b*"));
    }

    #[test]
    fn junk_tokens_decode_to_nothing() {
        for junk in ["", "x0", "xzz", "y00", "xff"] {
            assert_eq!(decode(junk), None, "{junk}");
        }
    }
}
