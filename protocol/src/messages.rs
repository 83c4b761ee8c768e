//! Envelopes exchanged on the `/browser` WebSocket, and on `/device` ([`DeviceMessage`]: the
//! same exchange with a device backend's [`DeviceHello`]).
//!
//! A connection goes: the extension sends [`Hello`]; the hub answers [`Welcome`] or, for an
//! incompatible extension, [`Refusal`] and closes. With a local hub the hello is preceded by
//! the pairing exchange (see [`crate::pairing`]): the extension's [`Challenge`], the hub's
//! [`HubProof`], and only then a hello carrying the browser's proof. After that the hub sends [`Request`]s, the
//! extension answers each with one [`Response`] carrying the same `id`, and either side may send a
//! heartbeat. The hub sends one at least every 20 seconds and the extension echoes it: traffic on
//! the socket is what keeps Chrome from stopping the extension's service worker.

use serde::{Deserialize, Serialize};

use crate::devices::{Platform, ScreenSize};
use crate::{LeaseHolder, OpError, OpResult, Operation, TabId};

/// The protocol version this build speaks. The hub accepts an extension only when both sides
/// speak the same version; it is raised whenever a message changes shape.
pub const PROTOCOL_VERSION: u32 = 15;

/// The bodies of the messages' struct variants, read on their own after the tag
/// ([`crate::tagged`]); their fields are the variants' fields.
mod bodies {
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Heartbeat {
        pub seq: u64,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct SessionEnded {
        pub session: String,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Cancel {
        pub id: u64,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Gone {
        pub reason: String,
    }
}

/// A message from the extension to the hub.
// A message is built, sent and dropped once; boxing the response to even out the variants'
// sizes would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
pub enum ExtensionMessage {
    /// The first message to a local hub: asks it to prove itself before the extension says
    /// who it is.
    Challenge(Challenge),
    /// The first message to a hosted hub (which the token and TLS vouch for), and the second,
    /// with a proof, to a local hub that proved itself.
    Hello(Hello),
    /// The answer to one [`Request`].
    Response(Response),
    /// A heartbeat echo.
    Heartbeat {
        /// The sequence number of the hub heartbeat being echoed.
        seq: u64,
    },
}

crate::tagged::deserialize_tagged!(ExtensionMessage, "type", {
    "challenge" => Challenge => Self::Challenge,
    "hello" => Hello => Self::Hello,
    "response" => Response => Self::Response,
    "heartbeat" => bodies::Heartbeat => |b| Self::Heartbeat { seq: b.seq },
});

/// A message from the hub to the extension.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
pub enum HubMessage {
    /// The hub's answer to a [`Challenge`]: its proof that it holds the browser's secret.
    Proof(HubProof),
    /// The hub accepted the extension's [`Hello`].
    Welcome(Welcome),
    /// The hub refused the connection; the socket is closed right after.
    Refused(Refusal),
    /// Work for the extension.
    Request(Request),
    /// A liveness ping; the extension echoes it.
    Heartbeat {
        /// Increases by one with each heartbeat on a connection.
        seq: u64,
    },
    /// An MCP session of this hub ended: every lease it holds lapses.
    SessionEnded {
        /// The session, as [`LeaseHolder::session`] named it.
        session: String,
    },
    /// The operator's policy changed: it replaces the one the welcome carried.
    Policy(crate::policy::Policy),
    /// The MCP client cancelled the call that [`Request`] `id` serves (or went away): a
    /// request still waiting for its turn is dropped before it runs, a running one stops at its
    /// next checkpoint (no input after this message). Either way the peer answers the request
    /// with [`crate::ErrorCode::Cancelled`], saying whether input had gone out; a request
    /// already answered is not answered again.
    Cancel {
        /// The `id` of the request to stop.
        id: u64,
    },
}

crate::tagged::deserialize_tagged!(HubMessage, "type", {
    "proof" => HubProof => Self::Proof,
    "welcome" => Welcome => Self::Welcome,
    "refused" => Refusal => Self::Refused,
    "request" => Request => Self::Request,
    "heartbeat" => bodies::Heartbeat => |b| Self::Heartbeat { seq: b.seq },
    "sessionEnded" => bodies::SessionEnded => |b| Self::SessionEnded { session: b.session },
    "policy" => crate::policy::Policy => Self::Policy,
    "cancel" => bodies::Cancel => |b| Self::Cancel { id: b.id },
});

/// How an extension introduces itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Hello {
    /// Generated once per Chrome profile and kept in its `chrome.storage.local`, so the hub can
    /// tell a returning browser from a new one and keep sessions bound to it.
    pub browser_id: String,
    /// The name the user gave this browser ("Work Chrome"); shown to agents.
    pub browser_name: String,
    /// The extension's own version (its manifest version).
    pub extension_version: String,
    /// The [`PROTOCOL_VERSION`] the extension was built with.
    pub protocol_version: u32,
    /// The Chrome version, for diagnostics.
    pub chrome_version: String,
    /// After a pairing exchange: [`crate::pairing::browser_proof`] for its nonces. Absent in
    /// hosted mode, where the token identifies the browser.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<String>,
    /// The pairing code of this exchange came from the browser's managed policy (a file other
    /// users of the machine may read, on Linux): the hub pairs it only when it was made for
    /// this browser ID (`tabwire-hub pair --browser-id`), and closes it otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub managed_code: bool,
}

/// The first message to a local hub. It reveals nothing about the browser: the tag is fresh
/// for every nonce and readable only by a hub that holds the same secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Challenge {
    /// The [`PROTOCOL_VERSION`] the extension was built with.
    pub protocol_version: u32,
    /// The browser's fresh nonce, hex ([`crate::pairing::NONCE_LEN`] bytes).
    pub nonce: String,
    /// [`crate::pairing::tag`] of the browser's secret and its nonce, hex.
    pub tag: String,
    /// Whether the secret is a one-time pairing code (the browser is pairing now) rather than
    /// the key of an earlier pairing.
    pub pairing: bool,
}

/// The hub's answer to a [`Challenge`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HubProof {
    /// The hub's fresh nonce, hex.
    pub nonce: String,
    /// [`crate::pairing::hub_proof`] for both nonces, hex.
    pub proof: String,
}

/// The longest browser ID or name the hub accepts, and the longest version string.
pub const MAX_IDENTITY_LEN: usize = 64;

/// Checks a [`Challenge`] the way the hub does: the protocol version, and hex fields of the
/// right length.
pub fn check_challenge(challenge: &Challenge) -> Result<(), Refusal> {
    if challenge.protocol_version != PROTOCOL_VERSION {
        return Err(Refusal::protocol_mismatch(challenge.protocol_version));
    }
    let hex_of = |text: &str, len: usize| {
        crate::pairing::decode_hex(text).is_some_and(|bytes| bytes.len() == len)
    };
    if !hex_of(&challenge.nonce, crate::pairing::NONCE_LEN)
        || !hex_of(&challenge.tag, crate::pairing::MAC_LEN)
    {
        return Err(Refusal {
            code: crate::ErrorCode::InvalidArgument,
            message: "malformed challenge: nonce and tag must be 32 bytes of hex each".to_owned(),
        });
    }
    Ok(())
}

/// `text` as it may be written to a terminal: C0 control characters other than newline and tab
/// become their visible pictures (ESC is `␛`), DEL `␡` and the C1 controls (U+0080–U+009F,
/// which some terminals also take as escape sequences) `�`. Page text can carry escape
/// sequences that set a terminal's clipboard or title, fake links or erase lines (the fence
/// of untrusted text among them); written this way they are only shown.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_ascii_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c)
    };
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    text.chars()
        .map(|c| match c {
            '\u{7f}' => '\u{2421}',
            c if c.is_ascii_control() && c != '\n' && c != '\t' => {
                char::from_u32(0x2400 + u32::from(c)).unwrap_or('\u{fffd}')
            }
            c if unsafe_char(c) => '\u{fffd}',
            c => c,
        })
        .collect()
}

/// Whether `c` is a character a person does not see as written: a control character, a
/// format character (Unicode category Cf: bidirectional overrides and isolates U+202A–202E and
/// U+2066–2069, zero-width spaces and joiners, the BOM, tag characters…), which
/// [`char::is_control`] lets through and which can reorder or hide text in a name, or another
/// default-ignorable code point, which fonts draw as nothing (the combining grapheme joiner
/// U+034F, variation selectors U+FE00–FE0F and U+E0100–E01EF, the Hangul fillers U+115F,
/// U+1160, U+3164 and U+FFA0, …): "Work" and "Wo\u{34F}rk" would be two names that look alike.
/// The ranges are Unicode 15.1's Cf and Default_Ignorable_Code_Point.
pub fn is_hidden_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{0600}'..='\u{0605}'
                | '\u{061C}'
                | '\u{06DD}'
                | '\u{070F}'
                | '\u{0890}'..='\u{0891}'
                | '\u{08E2}'
                | '\u{115F}'..='\u{1160}'
                | '\u{17B4}'..='\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF0}'..='\u{FFFB}'
                | '\u{110BD}'
                | '\u{110CD}'
                | '\u{13430}'..='\u{1343F}'
                | '\u{1BCA0}'..='\u{1BCA3}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

/// Whether `text` holds at least one character that puts ink on the screen: one that is not
/// whitespace, not hidden ([`is_hidden_char`]), not the blank Braille pattern U+2800 (a symbol
/// drawn as nothing), and not a combining mark (U+0300–036F, U+1AB0–1AFF, U+1DC0–1DFF,
/// U+20D0–20FF, U+FE20–FE2F), which marks the letter before it and has none of its own. The
/// rule for a name a person must tell apart from others: a browser's and a device's.
pub fn has_visible_char(text: &str) -> bool {
    text.chars().any(|c| {
        !(c.is_whitespace()
            || is_hidden_char(c)
            || matches!(
                c,
                '\u{2800}'
                    | '\u{0300}'..='\u{036F}'
                    | '\u{1AB0}'..='\u{1AFF}'
                    | '\u{1DC0}'..='\u{1DFF}'
                    | '\u{20D0}'..='\u{20FF}'
                    | '\u{FE20}'..='\u{FE2F}'
            ))
    })
}

/// A name as people are shown it (a client's name in tab groups, approvals, `TAB_LEASED` and the
/// audit log; a device's model): without the characters [`is_hidden_char`] names, each run of
/// whitespace one space, trimmed, and at most `max` characters. Empty when nothing is left, for
/// the caller to put its own default there. The rule the hellos enforce, applied instead of
/// refusing where nobody could fix the name.
pub fn shown_name(text: &str, max: usize) -> String {
    let words: Vec<String> = text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .map(|word| word.chars().filter(|c| !is_hidden_char(*c)).collect())
        .filter(|word: &String| !word.is_empty())
        .collect();
    let joined = words.join(" ");
    let cut: String = joined.chars().take(max).collect();
    if !has_visible_char(&cut) {
        return String::new();
    }
    cut.trim_end().to_owned()
}

/// The refusal of a hello whose name shows nothing ([`has_visible_char`]): empty, blanks, or
/// characters drawn as nothing. Every list of browsers and devices names peers by it, and a
/// person picks one by it.
fn blank_name(field: &str) -> Refusal {
    Refusal {
        code: crate::ErrorCode::InvalidArgument,
        message: format!(
            "the {field} is empty (or shows nothing: blanks and invisible characters only): give \
             it a name people can tell apart"
        ),
    }
}

/// Checks a [`Hello`] the way the hub does, so the extension can show the same reason.
///
/// Returns a [`Refusal`] for an incompatible protocol version or a malformed identity.
pub fn check_hello(hello: &Hello) -> Result<(), Refusal> {
    if hello.protocol_version != PROTOCOL_VERSION {
        return Err(Refusal::protocol_mismatch(hello.protocol_version));
    }
    let id_ok = !hello.browser_id.is_empty()
        && hello.browser_id.len() <= MAX_IDENTITY_LEN
        && hello
            .browser_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !id_ok {
        return Err(Refusal {
            code: crate::ErrorCode::InvalidArgument,
            message: format!(
                "browser ID must be 1-{MAX_IDENTITY_LEN} characters of letters, digits, '-' or '_'"
            ),
        });
    }
    if !has_visible_char(&hello.browser_name) {
        return Err(blank_name("browser name"));
    }
    // Every text field ends up in logs and in every `list_browsers`, so each is bounded.
    for (field, value) in [
        ("browser name", &hello.browser_name),
        ("extension version", &hello.extension_version),
        ("Chrome version", &hello.chrome_version),
    ] {
        if value.chars().count() > MAX_IDENTITY_LEN || value.chars().any(is_hidden_char) {
            return Err(Refusal {
                code: crate::ErrorCode::InvalidArgument,
                message: format!(
                    "{field} must be at most {MAX_IDENTITY_LEN} characters without control \
                     characters or format characters (bidi overrides, zero-width)"
                ),
            });
        }
    }
    if hello
        .proof
        .as_deref()
        .is_some_and(|proof| proof.len() != 2 * crate::pairing::MAC_LEN)
    {
        return Err(Refusal {
            code: crate::ErrorCode::InvalidArgument,
            message: "malformed hello: the proof must be 32 bytes of hex".to_owned(),
        });
    }
    Ok(())
}

/// A message from a device backend to the hub, on one device's connection.
// A message is built, sent and dropped once; boxing the response would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
pub enum DeviceMessage {
    /// The first message to a local hub (the pairing exchange, as for browsers).
    Challenge(Challenge),
    /// Who the device is; the first message to a hosted hub.
    Hello(DeviceHello),
    /// The answer to one [`crate::Request`].
    Response(Response),
    /// A heartbeat echo.
    Heartbeat {
        /// The sequence number of the hub heartbeat being echoed.
        seq: u64,
    },
    /// The device is going away (unplugged, offline, unauthorized); the backend closes the
    /// connection right after, and the hub shows the reason in `list_devices`.
    Gone {
        /// Why, for agents and people: `offline`, `unauthorized: accept the USB debugging
        /// prompt on the phone`.
        reason: String,
    },
}

crate::tagged::deserialize_tagged!(DeviceMessage, "type", {
    "challenge" => Challenge => Self::Challenge,
    "hello" => DeviceHello => Self::Hello,
    "response" => Response => Self::Response,
    "heartbeat" => bodies::Heartbeat => |b| Self::Heartbeat { seq: b.seq },
    "gone" => bodies::Gone => |b| Self::Gone { reason: b.reason },
});

/// How a device backend introduces one device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceHello {
    /// Stable across reconnects, cables and Wi-Fi: derived from the device's own serial number
    /// (`ro.serialno`), not from the adb transport, so the same phone listed twice (USB and
    /// `192.168.1.5:5555`) is one device. Letters, digits, `-` and `_`.
    pub device_id: String,
    /// The name agents see (the model by default: `Pixel 7`).
    pub device_name: String,
    /// The platform.
    pub platform: Platform,
    /// The manufacturer and model (`Google Pixel 7`).
    pub model: String,
    /// The OS version (`14`) and API level (`34`) as the device reports them.
    pub os_version: String,
    /// The screen's size.
    pub screen: ScreenSize,
    /// The backend's own version.
    pub backend_version: String,
    /// The [`crate::PROTOCOL_VERSION`] the backend was built with.
    pub protocol_version: u32,
    /// After a pairing exchange: [`crate::pairing::browser_proof`] for its nonces (the same
    /// computation as a browser's). Absent in hosted mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<String>,
}

/// Checks a [`DeviceHello`] the way the hub does: the version, the ID's characters, every text
/// field bounded and free of control characters, the proof's length.
pub fn check_device_hello(hello: &DeviceHello) -> Result<(), crate::Refusal> {
    if hello.protocol_version != crate::PROTOCOL_VERSION {
        return Err(crate::Refusal::protocol_mismatch(hello.protocol_version));
    }
    let invalid = |message: String| crate::Refusal {
        code: crate::ErrorCode::InvalidArgument,
        message,
    };
    let id_ok = !hello.device_id.is_empty()
        && hello.device_id.len() <= MAX_IDENTITY_LEN
        && hello
            .device_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !id_ok {
        return Err(invalid(format!(
            "device ID must be 1-{MAX_IDENTITY_LEN} characters of letters, digits, '-' or '_'"
        )));
    }
    if !has_visible_char(&hello.device_name) {
        return Err(blank_name("device name"));
    }
    for (field, value) in [
        ("device name", &hello.device_name),
        ("model", &hello.model),
        ("OS version", &hello.os_version),
        ("backend version", &hello.backend_version),
    ] {
        if value.chars().count() > MAX_IDENTITY_LEN || value.chars().any(is_hidden_char) {
            return Err(invalid(format!(
                "{field} must be at most {MAX_IDENTITY_LEN} characters without control characters \
                 or format characters (bidi overrides, zero-width)"
            )));
        }
    }
    if hello.screen.width == 0
        || hello.screen.height == 0
        || hello.screen.width > MAX_SCREEN_SIDE
        || hello.screen.height > MAX_SCREEN_SIDE
    {
        return Err(invalid(format!(
            "screen size must be 1-{MAX_SCREEN_SIDE} pixels a side"
        )));
    }
    if hello
        .proof
        .as_deref()
        .is_some_and(|proof| proof.len() != 2 * crate::pairing::MAC_LEN)
    {
        return Err(invalid(
            "malformed hello: the proof must be 32 bytes of hex".to_owned(),
        ));
    }
    Ok(())
}

/// The longest side of a screen a hello may report.
pub const MAX_SCREEN_SIDE: u32 = 16_384;

/// The hub's acceptance of a [`Hello`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Welcome {
    /// The hub's protocol version (equal to the extension's, or there would be no welcome).
    pub protocol_version: u32,
    /// The hub's own version, for the popup.
    pub hub_version: String,
    /// How often the hub sends heartbeats. The extension treats a silence of three intervals as
    /// a dead connection and reconnects.
    pub heartbeat_interval_ms: u64,
    /// The operator's policy for this browser's account, until a [`HubMessage::Policy`]
    /// replaces it; the extension applies the stricter of it and its owner's.
    pub policy: crate::policy::Policy,
}

/// Why the hub refused a connection. The extension shows `message` in its popup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Refusal {
    /// [`crate::ErrorCode::ProtocolMismatch`] or [`crate::ErrorCode::InvalidArgument`].
    pub code: crate::ErrorCode,
    /// A sentence for the person looking at the popup.
    pub message: String,
}

impl Refusal {
    /// The refusal for an extension that speaks `theirs` instead of [`PROTOCOL_VERSION`].
    pub fn protocol_mismatch(theirs: u32) -> Self {
        let advice = if theirs > PROTOCOL_VERSION {
            "update tabwire-hub"
        } else {
            "update the tabwire extension"
        };
        Refusal {
            code: crate::ErrorCode::ProtocolMismatch,
            message: format!(
                "incompatible versions: the extension speaks protocol {theirs}, the hub speaks \
                 protocol {PROTOCOL_VERSION}; {advice}"
            ),
        }
    }
}

/// One unit of work for the extension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Request {
    /// Correlates the [`Response`]; unique per connection.
    pub id: u64,
    /// The tab to act on; `None` means the active tab of the focused window (or, for
    /// browser-wide operations, no tab at all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab_id: Option<TabId>,
    /// Milliseconds the extension has, counted from receipt. Relative rather than absolute so
    /// that clock skew between the hub's machine and the browser's machine does not matter.
    pub deadline_ms: u64,
    /// The MCP tool this request serves, for the popup's call log.
    pub tool: String,
    /// Who calls, on requests that can change a tab or take or give up a lease
    /// ([`Operation::carries_holder`]); the extension checks and keeps leases by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<LeaseHolder>,
    /// Whose view of the page the request serves: the calling MCP session (a sessionless
    /// client's token), named as [`LeaseHolder::session`] names it, on every request a tool
    /// call makes. A peer keeps observation baselines per viewer, so an automatic delta or a
    /// `since` is always against what this viewer was shown, never against another session's
    /// view of the same page. At most [`MAX_VIEWER_LEN`] characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub viewer: Option<String>,
    /// What to do.
    pub op: Operation,
}

/// The longest [`Request::viewer`] a peer keeps baselines for; a longer one is refused.
pub const MAX_VIEWER_LEN: usize = 128;

/// The answer to one [`Request`]: exactly one of `result` and `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Response {
    /// The `id` of the request answered.
    pub id: u64,
    /// The result, when the operation succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<OpResult>,
    /// The failure, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<OpError>,
}

impl Response {
    /// Builds a response from an operation's outcome.
    pub fn new(id: u64, outcome: Result<OpResult, OpError>) -> Self {
        match outcome {
            Ok(result) => Response {
                id,
                result: Some(result),
                error: None,
            },
            Err(error) => Response {
                id,
                result: None,
                error: Some(error),
            },
        }
    }

    /// The outcome carried. A response with both or neither field set is a protocol violation
    /// and comes back as an [`crate::ErrorCode::Internal`] error.
    pub fn into_outcome(self) -> Result<OpResult, OpError> {
        match (self.result, self.error) {
            (Some(result), None) => Ok(result),
            (None, Some(error)) => Err(error),
            _ => Err(OpError::new(
                crate::ErrorCode::Internal,
                "the extension sent a response with neither or both of result and error",
            )),
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn terminal_escapes_are_shown_not_obeyed() {
        assert!(matches!(
            terminal_safe("plain\ttext\nnext"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            terminal_safe("a\u{1b}]52;c;Y3VybA==\u{7}b\u{9b}2Jc\u{7f}"),
            "a\u{241b}]52;c;Y3VybA==\u{2407}b\u{fffd}2Jc\u{2421}"
        );
        assert_eq!(terminal_safe("\r\u{0}"), "\u{240d}\u{2400}");
    }

    use super::*;
    use crate::{ErrorCode, Target};

    fn hello() -> Hello {
        Hello {
            browser_id: "0b6f-41aa".into(),
            browser_name: "Work".into(),
            extension_version: "0.1.0".into(),
            protocol_version: PROTOCOL_VERSION,
            chrome_version: "156.0.0.0".into(),
            proof: None,
            managed_code: false,
        }
    }

    fn device_hello() -> DeviceHello {
        DeviceHello {
            device_id: "android-R58M12ABCDE".into(),
            device_name: "Pixel 7".into(),
            platform: crate::devices::Platform::Android,
            model: "Google Pixel 7".into(),
            os_version: "14 (API 34)".into(),
            screen: crate::devices::ScreenSize {
                width: 1080,
                height: 2400,
            },
            backend_version: "0.1.0".into(),
            protocol_version: PROTOCOL_VERSION,
            proof: None,
        }
    }

    #[test]
    fn hello_round_trips_with_camel_case_fields() {
        let msg = ExtensionMessage::Hello(hello());
        let json = serde_json::to_string(&msg).unwrap();
        assert!(json.contains(r#""type":"hello""#), "{json}");
        assert!(json.contains(r#""browserId":"0b6f-41aa""#), "{json}");
        assert_eq!(
            serde_json::from_str::<ExtensionMessage>(&json).unwrap(),
            msg
        );
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let json = r#"{"type":"hello","browserId":"a","browserName":"b","extensionVersion":"1",
            "protocolVersion":1,"chromeVersion":"1","extra":true}"#;
        assert!(serde_json::from_str::<ExtensionMessage>(json).is_err());
        let beat = r#"{"type":"heartbeat","seq":1,"extra":true}"#;
        assert!(serde_json::from_str::<HubMessage>(beat).is_err());
        assert!(serde_json::from_str::<ExtensionMessage>(beat).is_err());
        let ok = r#"{"type":"heartbeat","seq":1}"#;
        assert!(serde_json::from_str::<HubMessage>(ok).is_ok());
    }

    #[test]
    fn request_wire_shape() {
        let msg = HubMessage::Request(Request {
            id: 7,
            tab_id: Some(12),
            deadline_ms: 30_000,
            tool: "click_element".into(),
            holder: Some(LeaseHolder {
                session: "s3".into(),
                client: "Claude Code · 2".into(),
                idle_ms: 600_000,
            }),
            viewer: Some("s3".into()),
            op: crate::ActRequest {
                action: crate::Action::Click {
                    target: Target::Css("#go".into()),
                    mode: Default::default(),
                    button: Default::default(),
                    click_count: 1,
                    wait_until: None,
                    wait_for: None,
                },
                observe: None,
            }
            .into(),
        });
        let json = serde_json::to_value(&msg).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "type": "request", "id": 7, "tabId": 12, "deadlineMs": 30000,
                "tool": "click_element",
                "holder": {"session": "s3", "client": "Claude Code · 2", "idleMs": 600000},
                "viewer": "s3",
                "op": {"group": "act", "kind": "act", "action": {"kind": "click", "target": {"css": "#go"},
                       "mode": "trusted", "button": "left", "clickCount": 1}}
            })
        );
        assert_eq!(serde_json::from_value::<HubMessage>(json).unwrap(), msg);
    }

    #[test]
    fn a_sessions_end_is_a_message_of_its_own() {
        let json = r#"{"type":"sessionEnded","session":"s3"}"#;
        assert_eq!(
            serde_json::from_str::<HubMessage>(json).unwrap(),
            HubMessage::SessionEnded {
                session: "s3".into()
            }
        );
    }

    #[test]
    fn a_cancel_names_its_request() {
        let json = r#"{"type":"cancel","id":7}"#;
        assert_eq!(
            serde_json::from_str::<HubMessage>(json).unwrap(),
            HubMessage::Cancel { id: 7 }
        );
        assert!(serde_json::from_str::<HubMessage>(r#"{"type":"cancel"}"#).is_err());
    }

    #[test]
    fn response_carries_exactly_one_outcome() {
        let ok = Response::new(1, Ok(crate::TabList { tabs: vec![] }.into()));
        let json = serde_json::to_string(&ExtensionMessage::Response(ok.clone())).unwrap();
        assert_eq!(
            json,
            r#"{"type":"response","id":1,"result":{"group":"tabs","kind":"tabs","tabs":[]}}"#
        );
        assert!(ok.into_outcome().is_ok());

        let both = Response {
            id: 2,
            result: Some(crate::TabList { tabs: vec![] }.into()),
            error: Some(OpError::new(ErrorCode::Internal, "x")),
        };
        assert_eq!(both.into_outcome().unwrap_err().code, ErrorCode::Internal);
    }

    #[test]
    fn mismatched_protocol_is_refused_with_advice() {
        let mut newer = hello();
        newer.protocol_version = PROTOCOL_VERSION + 1;
        let refusal = check_hello(&newer).unwrap_err();
        assert_eq!(refusal.code, ErrorCode::ProtocolMismatch);
        assert!(refusal.message.contains("update tabwire-hub"));

        let mut older = hello();
        older.protocol_version = 0;
        assert!(
            check_hello(&older)
                .unwrap_err()
                .message
                .contains("update the tabwire extension")
        );
        assert!(check_hello(&hello()).is_ok());
    }

    #[test]
    fn malformed_identity_is_refused() {
        let mut bad = hello();
        bad.browser_id = "has space".into();
        assert_eq!(
            check_hello(&bad).unwrap_err().code,
            ErrorCode::InvalidArgument
        );
        let mut long = hello();
        long.browser_name = "x".repeat(MAX_IDENTITY_LEN + 1);
        assert!(check_hello(&long).is_err());
    }

    #[test]
    fn every_hello_field_is_bounded() {
        let mut version = hello();
        version.extension_version = "1".repeat(MAX_IDENTITY_LEN + 1);
        let refusal = check_hello(&version).unwrap_err();
        assert!(refusal.message.contains("extension version"), "{refusal:?}");
        let mut chrome = hello();
        chrome.chrome_version = "156\n0".into();
        assert!(
            check_hello(&chrome)
                .unwrap_err()
                .message
                .contains("Chrome version")
        );
        let mut proof = hello();
        proof.proof = Some("ab".into());
        assert!(check_hello(&proof).unwrap_err().message.contains("proof"));
        proof.proof = Some("ab".repeat(32));
        assert!(check_hello(&proof).is_ok());
    }

    /// Bidi overrides and zero-width characters are no control characters, yet they reorder or
    /// hide what a name says (`Work\u{202E}knaB` reads as "WorkBank" backwards): refused in every
    /// text field of both hellos.
    #[test]
    fn hello_fields_refuse_format_characters() {
        for hidden in [
            '\u{202E}',
            '\u{2066}',
            '\u{2069}',
            '\u{200B}',
            '\u{FEFF}',
            '\u{E0041}',
            // Default-ignorable: drawn as nothing, so "Work" and "Wo\u{34F}rk" would look alike.
            '\u{034F}',
            '\u{FE00}',
            '\u{FE0F}',
            '\u{3164}',
            '\u{E0100}',
        ] {
            assert!(is_hidden_char(hidden), "{:?}", hidden);
            let text = format!("Work{hidden}Bank");
            for field in 0..3 {
                let mut browser = hello();
                match field {
                    0 => browser.browser_name = text.clone(),
                    1 => browser.extension_version = text.clone(),
                    _ => browser.chrome_version = text.clone(),
                }
                let refusal = check_hello(&browser).unwrap_err();
                assert!(refusal.message.contains("format characters"), "{refusal:?}");
            }
            for field in 0..4 {
                let mut device = device_hello();
                match field {
                    0 => device.device_name = text.clone(),
                    1 => device.model = text.clone(),
                    2 => device.os_version = text.clone(),
                    _ => device.backend_version = text.clone(),
                }
                let refusal = check_device_hello(&device).unwrap_err();
                assert!(refusal.message.contains("format characters"), "{refusal:?}");
            }
        }
        for shown in ['é', 'ß', '日', '😀', ' '] {
            assert!(!is_hidden_char(shown), "{shown}");
        }
        let mut fine = device_hello();
        fine.device_name = "Pixel 7 · Mañana 日本".into();
        assert!(check_device_hello(&fine).is_ok());
    }

    #[test]
    fn blank_names_are_refused_in_both_hellos() {
        // Blanks, Hangul fillers (letters by category, drawn as nothing), the blank Braille
        // pattern (a symbol drawn as nothing), and marks with no letter to mark.
        for blank in [
            "",
            " ",
            "\u{3000}",
            "\u{3164}",
            "\u{2800}\u{2800}",
            "\u{115F}",
            "\u{FFA0}",
            "\u{3164} \u{2800}\u{115F}\u{FFA0}",
            "\u{0301}\u{20DD}",
        ] {
            let mut browser = hello();
            browser.browser_name = blank.into();
            let refusal = check_hello(&browser).unwrap_err();
            assert_eq!(refusal.code, ErrorCode::InvalidArgument);
            assert!(
                refusal.message.contains("browser name is empty"),
                "{refusal:?}"
            );
            let mut device = device_hello();
            device.device_name = blank.into();
            let refusal = check_device_hello(&device).unwrap_err();
            assert!(
                refusal.message.contains("device name is empty"),
                "{refusal:?}"
            );
        }
        // One letter, digit or symbol that shows is a name: a marked letter, a Braille dot,
        // a lone digit, an emoji, a letter beside a filler.
        for shown in ["e\u{0301}", "\u{2801}", "7", "😀", "\u{3164}x", "\u{2800}·"] {
            let mut browser = hello();
            browser.browser_name = shown.replace('\u{3164}', " ");
            assert!(check_hello(&browser).is_ok(), "{shown:?}");
            assert!(has_visible_char(shown), "{shown:?}");
        }
    }

    #[test]
    fn shown_names_keep_only_what_people_see() {
        assert_eq!(shown_name("  Claude Code ", 50), "Claude Code");
        assert_eq!(shown_name("a\u{1b}[31mb", 50), "a [31mb");
        assert_eq!(shown_name("Work\u{202E}knaB\u{202C}", 50), "WorkknaB");
        assert_eq!(shown_name("x\n\t\u{200B} y", 50), "x y");
        assert_eq!(shown_name("\u{2066}\u{FEFF} \u{7}", 50), "");
        assert_eq!(shown_name("abc def", 4), "abc");
        assert_eq!(shown_name(&"é".repeat(100), 64).chars().count(), 64);
        // Nothing visible is nothing: the caller's default goes there.
        assert_eq!(
            shown_name("\u{3164} \u{2800}\u{115F}\u{FFA0}\u{34F}", 50),
            ""
        );
        assert_eq!(shown_name("a\u{FE0F}b", 50), "ab");
        // What it keeps passes the hellos' rule.
        let mut browser = hello();
        browser.browser_name = shown_name("Fleet\u{202E}\u{E0041} one", MAX_IDENTITY_LEN);
        assert!(check_hello(&browser).is_ok());
    }

    #[test]
    fn challenges_are_checked() {
        let good = Challenge {
            protocol_version: PROTOCOL_VERSION,
            nonce: "01".repeat(32),
            tag: "02".repeat(32),
            pairing: false,
        };
        assert!(check_challenge(&good).is_ok());
        let json = serde_json::to_string(&ExtensionMessage::Challenge(good.clone())).unwrap();
        assert!(
            json.starts_with(r#"{"type":"challenge","protocolVersion":"#),
            "{json}"
        );
        let short = Challenge {
            nonce: "01".into(),
            ..good.clone()
        };
        assert_eq!(
            check_challenge(&short).unwrap_err().code,
            ErrorCode::InvalidArgument
        );
        let old = Challenge {
            protocol_version: 1,
            ..good
        };
        assert_eq!(
            check_challenge(&old).unwrap_err().code,
            ErrorCode::ProtocolMismatch
        );
    }
}
