//! Reading what a peer sends: its first messages (the pairing exchange's challenge, its hello)
//! and, after the welcome, its messages (responses, heartbeats, a `gone` reason). Text in,
//! typed message or refusal out, with no socket, so the fuzz targets (`fuzz/`,
//! docs/fuzzing.md) call exactly what [`crate::peer_link`] calls on every frame.

use serde::de::DeserializeOwned;
use tabwire_protocol::{Challenge, ErrorCode, PROTOCOL_VERSION, Refusal, check_challenge};

use crate::peer::PeerKind;

/// What a peer sends, in the words every kind shares.
// Built from one message and matched at once; boxing the response would buy nothing (as for
// the protocol's own message enums).
#[allow(clippy::large_enum_variant)]
pub enum Incoming<H> {
    /// The first message to a local hub: the pairing exchange's challenge.
    Challenge(Challenge),
    /// Who the peer is.
    Hello(H),
    /// The answer to one request.
    Response(tabwire_protocol::Response),
    /// A heartbeat echo.
    Heartbeat,
    /// The peer is going away, and why (shown by `list_*`).
    Gone(String),
}

/// How a kind's peers' messages read (the reading half of [`crate::peer_link::Linked`]).
pub trait Reads: PeerKind {
    /// What its peers send.
    type Message: DeserializeOwned;
    /// A message in the shared words.
    fn incoming(message: Self::Message) -> Incoming<Self::Hello>;
    /// The hello's own checks (version, bounded fields).
    fn check_hello(hello: &Self::Hello) -> Result<(), Refusal>;
}

/// A refusal for a malformed handshake message.
pub(crate) fn invalid(message: &str) -> Refusal {
    Refusal {
        code: ErrorCode::InvalidArgument,
        message: message.to_owned(),
    }
}

/// The longest reason a peer may give for going away; longer ones are cut.
pub const MAX_GONE_REASON: usize = 200;

/// A handshake message (a challenge or a hello), checked: the protocol version first, then the
/// strict parse, then the hello's or challenge's own checks.
pub fn handshake<K: Reads>(text: &str) -> Result<Incoming<K::Hello>, Refusal> {
    // Read the protocol version before the strict parse: a message from a newer peer may carry
    // fields this hub does not know, and it deserves "update the hub", not "malformed".
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|_| invalid("hello is not JSON"))?;
    if let Some(theirs) = value.get("protocolVersion").and_then(|v| v.as_u64())
        && theirs != u64::from(PROTOCOL_VERSION)
    {
        return Err(Refusal::protocol_mismatch(
            u32::try_from(theirs).unwrap_or(u32::MAX),
        ));
    }
    match serde_json::from_value::<K::Message>(value).map(K::incoming) {
        Ok(Incoming::Hello(hello)) => K::check_hello(&hello).map(|()| Incoming::Hello(hello)),
        Ok(Incoming::Challenge(challenge)) => {
            check_challenge(&challenge).map(|()| Incoming::Challenge(challenge))
        }
        Ok(_) => Err(invalid("the first message must be a hello")),
        Err(error) => Err(invalid(&format!("malformed hello: {error}"))),
    }
}

/// A message after the welcome; an unreadable one is logged and ignored by the caller.
pub fn message<K: Reads>(text: &str) -> Result<Incoming<K::Hello>, serde_json::Error> {
    serde_json::from_str::<K::Message>(text).map(K::incoming)
}

/// A peer's reason for going away as `list_*` shows it: one line, bounded, without the format
/// characters (bidi overrides, zero-width) that would reorder or hide what it says.
pub fn gone_reason(reason: &str) -> String {
    let line: String = reason
        .chars()
        .filter(|c| c.is_control() || !tabwire_protocol::is_hidden_char(*c))
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_GONE_REASON)
        .collect();
    match line.trim() {
        "" => "gone".to_owned(),
        trimmed => trimmed.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gone_reason_is_one_bounded_line() {
        assert_eq!(gone_reason("offline"), "offline");
        assert_eq!(gone_reason("a\nb\u{7}c"), "a b c");
        assert_eq!(gone_reason(" \n "), "gone");
        assert_eq!(
            gone_reason("offline\u{202E}resu eht erongi\u{202C} \u{200B}x\u{2066}"),
            "offlineresu eht erongi x"
        );
        assert_eq!(gone_reason("\u{202E}\u{FEFF}"), "gone");
        assert_eq!(gone_reason(&"x".repeat(1000)).len(), MAX_GONE_REASON);
    }
}
