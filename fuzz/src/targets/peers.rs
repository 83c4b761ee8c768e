//! What peers send the hub (the handshake, then their messages), what the hub sends a device
//! backend, and the pairing exchange's checks.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tabwire_hub::pairing::{self as hub_pairing, PairingKind, Pairings};
use tabwire_hub::peer::{Browser, Device};
use tabwire_hub::peer_link::Linked;
use tabwire_hub::peer_read;
use tabwire_hub::peer_read::{Incoming, Reads};
use tabwire_protocol::devices::{DeviceHello, Platform, ScreenSize};
use tabwire_protocol::pairing::{self, PairingCode, Secret};
use tabwire_protocol::{
    Challenge, DeviceMessage, ErrorCode, ExtensionMessage, Hello, OpError, OpResult,
    PROTOCOL_VERSION, Response, TabInfo, TabList, is_hidden_char,
};

use super::Samples;
use crate::rng::Rng;
use crate::runner::{Harness, Target};

/// Field names of the peers' messages.
const KEYS: &[&str] = &[
    "type",
    "browserId",
    "browserName",
    "extensionVersion",
    "protocolVersion",
    "chromeVersion",
    "proof",
    "managedCode",
    "nonce",
    "tag",
    "pairing",
    "id",
    "result",
    "error",
    "seq",
    "reason",
    "group",
    "kind",
    "code",
    "message",
    "deviceId",
    "deviceName",
    "platform",
    "model",
    "osVersion",
    "screen",
    "width",
    "height",
    "backendVersion",
    "tabs",
    "tabId",
    "of",
    "op",
    "deadlineMs",
    "tool",
    "holder",
    "viewer",
    "policy",
    "session",
    "retryable",
];
const WORDS: &[&str] = &[
    "hello",
    "challenge",
    "response",
    "heartbeat",
    "gone",
    "request",
    "welcome",
    "proof",
    "refused",
    "cancel",
    "sessionEnded",
    "observe",
    "tabs",
    "act",
    "device",
    "snapshot",
    "listTabs",
    "android",
    "INTERNAL",
    "TIMEOUT",
    "ELEMENT_NOT_FOUND",
    "11",
    "12",
];

/// A hex string of `n` bytes.
fn hex(byte: u8, n: usize) -> String {
    pairing::encode_hex(&vec![byte; n])
}

fn hello() -> Hello {
    Hello {
        browser_id: "b-0f3a".into(),
        browser_name: "Work".into(),
        extension_version: "0.1.0".into(),
        protocol_version: PROTOCOL_VERSION,
        chrome_version: "141.0".into(),
        proof: Some(hex(7, 32)),
        managed_code: false,
    }
}

fn device_hello() -> DeviceHello {
    DeviceHello {
        device_id: "android-R58M12ABCDE".into(),
        device_name: "Pixel 7".into(),
        platform: Platform::Android,
        model: "Google Pixel 7".into(),
        os_version: "14 (API 34)".into(),
        screen: ScreenSize {
            width: 1080,
            height: 2400,
        },
        backend_version: "0.1.0".into(),
        protocol_version: PROTOCOL_VERSION,
        proof: Some(hex(9, 32)),
    }
}

fn challenge(pairing: bool) -> Challenge {
    Challenge {
        protocol_version: PROTOCOL_VERSION,
        nonce: hex(1, 32),
        tag: hex(2, 32),
        pairing,
    }
}

/// Answers as peers send them: a tab list, an observation, an error, neither, both.
fn responses() -> Vec<Response> {
    let tabs = OpResult::from(TabList {
        tabs: vec![TabInfo {
            tab_id: 3,
            window_id: 1,
            active: true,
            url: "https://example.com/a?b=c#d".into(),
            title: "Example \u{202e} title".into(),
            status: "complete".into(),
            blocked: false,
        }],
    });
    vec![
        Response::new(1, Ok(tabs.clone())),
        Response::new(
            2,
            Err(OpError::new(ErrorCode::InvalidSelector, "no element @e12")),
        ),
        Response {
            id: 3,
            result: Some(tabs),
            error: Some(OpError::new(ErrorCode::Internal, "both")),
        },
        Response {
            id: 4,
            result: None,
            error: None,
        },
    ]
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("samples serialise")
}

fn extension_samples() -> Vec<String> {
    let mut texts = vec![
        json(&ExtensionMessage::Hello(hello())),
        json(&ExtensionMessage::Challenge(challenge(true))),
        json(&ExtensionMessage::Challenge(challenge(false))),
        json(&ExtensionMessage::Heartbeat { seq: 17 }),
    ];
    texts.extend(
        responses()
            .into_iter()
            .map(|r| json(&ExtensionMessage::Response(r))),
    );
    texts.push(include_str!("samples/observation.json").trim().to_owned());
    texts
}

fn device_samples() -> Vec<String> {
    let mut texts = vec![
        json(&DeviceMessage::Hello(device_hello())),
        json(&DeviceMessage::Challenge(challenge(false))),
        json(&DeviceMessage::Heartbeat { seq: 2 }),
        json(&DeviceMessage::Gone {
            reason: "adb: device offline\u{200b}".into(),
        }),
    ];
    texts.extend(
        responses()
            .into_iter()
            .map(|r| json(&DeviceMessage::Response(r))),
    );
    texts
}

/// What holds of any handshake answer: a refusal says why.
fn check_handshake<H>(outcome: Result<Incoming<H>, tabwire_protocol::Refusal>) {
    if let Err(refusal) = outcome {
        assert!(!refusal.message.is_empty(), "a refusal without a reason");
    }
}

/// What holds of any message after the welcome: a response is one outcome, a `gone` reason is
/// one bounded line with nothing hidden.
fn check_message<H>(outcome: Result<Incoming<H>, serde_json::Error>) {
    match outcome {
        Ok(Incoming::Response(response)) => {
            let _ = response.into_outcome();
        }
        Ok(Incoming::Gone(reason)) => {
            let shown = peer_read::gone_reason(&reason);
            assert!(!shown.is_empty());
            assert!(shown.chars().count() <= peer_read::MAX_GONE_REASON);
            assert!(
                !shown.chars().any(|c| c.is_control() || is_hidden_char(c)),
                "{shown:?}"
            );
        }
        _ => {}
    }
}

struct Handshake<K> {
    samples: Samples,
    kind: std::marker::PhantomData<K>,
}

impl<K: Reads> Harness for Handshake<K> {
    fn generate(&mut self, rng: &mut Rng) -> String {
        self.samples.generate(rng)
    }

    fn run(&mut self, input: &str) {
        check_handshake(peer_read::handshake::<K>(input));
    }
}

struct Message<K> {
    samples: Samples,
    kind: std::marker::PhantomData<K>,
}

impl<K: Reads> Harness for Message<K> {
    fn generate(&mut self, rng: &mut Rng) -> String {
        self.samples.generate(rng)
    }

    fn run(&mut self, input: &str) {
        check_message(peer_read::message::<K>(input));
    }
}

/// A browser's first messages, as `/browser` reads them.
pub const HANDSHAKE_BROWSER: Target = Target {
    name: "peer-handshake-browser",
    entry: "tabwire_hub::peer_read::handshake::<Browser>",
    build: || {
        Box::new(Handshake::<Browser> {
            samples: Samples::new(extension_samples(), KEYS, WORDS),
            kind: std::marker::PhantomData,
        })
    },
};

/// A device backend's first messages, as `/device` reads them.
pub const HANDSHAKE_DEVICE: Target = Target {
    name: "peer-handshake-device",
    entry: "tabwire_hub::peer_read::handshake::<Device>",
    build: || {
        Box::new(Handshake::<Device> {
            samples: Samples::new(device_samples(), KEYS, WORDS),
            kind: std::marker::PhantomData,
        })
    },
};

/// An extension's messages after the welcome.
pub const MESSAGE_BROWSER: Target = Target {
    name: "peer-message-browser",
    entry: "tabwire_hub::peer_read::message::<Browser>, Response::into_outcome",
    build: || {
        Box::new(Message::<Browser> {
            samples: Samples::new(extension_samples(), KEYS, WORDS),
            kind: std::marker::PhantomData,
        })
    },
};

/// A device backend's messages after the welcome.
pub const MESSAGE_DEVICE: Target = Target {
    name: "peer-message-device",
    entry: "tabwire_hub::peer_read::message::<Device>, gone_reason",
    build: || {
        Box::new(Message::<Device> {
            samples: Samples::new(device_samples(), KEYS, WORDS),
            kind: std::marker::PhantomData,
        })
    },
};

struct HubMessages(Samples);

impl Harness for HubMessages {
    fn generate(&mut self, rng: &mut Rng) -> String {
        self.0.generate(rng)
    }

    fn run(&mut self, input: &str) {
        if let Err((_, Some(answer))) = tabwire_device_kit::link::read_hub_message(input) {
            let error = answer
                .error
                .expect("an unreadable request is answered with an error");
            assert_eq!(error.code, ErrorCode::InvalidArgument);
        }
    }
}

/// What the hub sends a device backend, as its connection reads it.
pub const HUB_MESSAGE_DEVICE: Target = Target {
    name: "hub-message-device",
    entry: "tabwire_device_kit::link::read_hub_message",
    build: || {
        let texts = include_str!("samples/hub_messages.jsonl")
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(str::to_owned)
            .collect();
        Box::new(HubMessages(Samples::new(texts, KEYS, WORDS)))
    },
};

/// The pairing exchange as a local hub runs it on a challenge and a hello: the nonce, the tag
/// against every pairing and open code, the pairing's kind, the hello's proof; and a pasted code.
struct Pairing {
    samples: Samples,
    pairings: Arc<Pairings>,
    secret: Secret,
    _dir: TempDir,
}

const HUB_NONCE: [u8; pairing::NONCE_LEN] = [5; pairing::NONCE_LEN];

impl Harness for Pairing {
    fn generate(&mut self, rng: &mut Rng) -> String {
        self.samples.generate(rng)
    }

    fn run(&mut self, input: &str) {
        let _ = PairingCode::parse(input);
        match peer_read::handshake::<Browser>(input) {
            Ok(Incoming::Challenge(challenge)) => {
                let Some(nonce) = pairing::decode_nonce(&challenge.nonce) else {
                    return;
                };
                if let Some(claim) = self.pairings.find(&nonce, &challenge.tag) {
                    let _ = claim.kind() == PairingKind::Browser;
                    let _ = claim.secret();
                }
            }
            Ok(Incoming::Hello(hello)) => {
                let nonce = [1; pairing::NONCE_LEN];
                if let Some(proof) = Browser::proof(&hello) {
                    let _ = pairing::browser_proof_matches(&self.secret, &nonce, &HUB_NONCE, proof);
                    let _ = pairing::hub_proof_matches(&self.secret, &nonce, &HUB_NONCE, proof);
                }
            }
            _ => {}
        }
    }
}

/// A private temporary directory, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new 0700 directory under the system's temporary directory.
    pub fn new(what: &str) -> TempDir {
        use std::os::unix::fs::PermissionsExt;
        let path = std::env::temp_dir().join(format!(
            "tabwire-fuzz-{what}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&path).expect("a temporary directory");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))
            .expect("a private temporary directory");
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn pairing_harness() -> Pairing {
    let dir = TempDir::new("pairing");
    let state = dir.0.join("state");
    // One paired browser (through a code, as a person pairs it), one open code of each kind.
    let code = hub_pairing::new_code(&state, Duration::from_secs(600), PairingKind::Browser)
        .expect("a pairing code");
    let pairings = Arc::new(Pairings::open(&state).expect("the pairing state"));
    let browser_nonce = [1; pairing::NONCE_LEN];
    let key = pairing::derive_key(&code, &browser_nonce, &HUB_NONCE);
    pairings
        .complete(&code, "b-0f3a", "Work", &key, false)
        .expect("a pairing");
    let open = hub_pairing::new_code(&state, Duration::from_secs(600), PairingKind::Browser)
        .expect("a pairing code");
    hub_pairing::new_code(&state, Duration::from_secs(600), PairingKind::Device)
        .expect("a pairing code");
    let paired = Secret::Key(key);
    let open_secret = Secret::Code(open.clone());
    let nonce = pairing::encode_hex(&browser_nonce);
    let mut texts = Vec::new();
    for (secret, is_code) in [(&paired, false), (&open_secret, true)] {
        texts.push(json(&ExtensionMessage::Challenge(Challenge {
            protocol_version: PROTOCOL_VERSION,
            nonce: nonce.clone(),
            tag: pairing::tag(secret, &browser_nonce),
            pairing: is_code,
        })));
        texts.push(json(&ExtensionMessage::Hello(Hello {
            proof: Some(pairing::browser_proof(secret, &browser_nonce, &HUB_NONCE)),
            ..hello()
        })));
    }
    texts.push(open.to_string());
    texts.push(open.as_str().to_owned());
    Pairing {
        samples: Samples::new(texts, KEYS, WORDS),
        pairings,
        secret: paired,
        _dir: dir,
    }
}

/// The pairing exchange's checks on a challenge, a hello and a pasted code.
pub const PAIRING: Target = Target {
    name: "pairing",
    entry: "peer_read::handshake, pairing::decode_nonce, Pairings::find, browser_proof_matches, PairingCode::parse",
    build: || Box::new(pairing_harness()),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_samples_get_through_the_checks() {
        for text in extension_samples().iter().take(3) {
            assert!(peer_read::handshake::<Browser>(text).is_ok(), "{text}");
        }
        for text in device_samples().iter().take(2) {
            assert!(peer_read::handshake::<Device>(text).is_ok(), "{text}");
        }
        for text in extension_samples() {
            assert!(peer_read::message::<Browser>(&text).is_ok(), "{text}");
        }
        for text in device_samples() {
            assert!(peer_read::message::<Device>(&text).is_ok(), "{text}");
        }
        for line in include_str!("samples/hub_messages.jsonl").lines() {
            assert!(
                tabwire_device_kit::link::read_hub_message(line).is_ok(),
                "{line}"
            );
        }
    }

    #[test]
    fn the_pairing_samples_find_their_pairing_and_code() {
        let harness = pairing_harness();
        let found = harness
            .samples
            .texts()
            .iter()
            .filter_map(|text| match peer_read::handshake::<Browser>(text) {
                Ok(Incoming::Challenge(c)) => harness
                    .pairings
                    .find(&pairing::decode_nonce(&c.nonce)?, &c.tag),
                _ => None,
            })
            .count();
        assert_eq!(
            found, 2,
            "the paired browser's and the open code's challenges"
        );
    }
}
