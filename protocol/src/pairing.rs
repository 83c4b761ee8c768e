//! Pairing: how a browser and a local hub prove to each other that they are the pair they
//! think they are, without a secret ever crossing the wire.
//!
//! A browser joins a local hub once, with a one-time [`PairingCode`] printed by
//! `tabwire-hub pair`. The code is never sent: both sides use it as an HMAC key, and when the
//! exchange succeeds both derive the same per-browser key from it and the two fresh nonces
//! ([`derive_key`]). Every later connection uses that key the same way. One exchange:
//!
//! 1. The extension sends a `challenge`: the protocol version, its nonce `nb` and
//!    [`tag`]`(secret, nb)`. The tag lets the hub find which of its secrets the browser holds
//!    without the browser naming itself; it is fresh for every nonce, so it identifies nothing
//!    to anyone else.
//! 2. The hub answers with its nonce `nh` and [`hub_proof`]`(secret, nb, nh)`. The extension
//!    checks it before it reveals anything about itself (its ID, its name) or runs a request.
//! 3. The extension sends its hello with [`browser_proof`]`(secret, nb, nh)`; the hub checks it
//!    (a replayed challenge cannot answer a fresh `nh`) and welcomes the browser.
//!
//! Each message is a different HMAC input (a distinct label first), so no proof can be passed
//! off as another. This module is pure computation; the nonces and keys come from the callers'
//! random sources.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Bytes in a nonce.
pub const NONCE_LEN: usize = 32;
/// Bytes in a per-browser key.
pub const KEY_LEN: usize = 32;
/// Bytes in a tag or a proof (HMAC-SHA-256).
pub const MAC_LEN: usize = 32;

/// The secret one side proves it knows: the per-browser key of a paired browser, or the
/// one-time code of a browser pairing now.
#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    /// A paired browser's key.
    Key([u8; KEY_LEN]),
    /// A pairing code, not yet used.
    Code(PairingCode),
}

impl Secret {
    fn bytes(&self) -> &[u8] {
        match self {
            Secret::Key(key) => key,
            Secret::Code(code) => code.0.as_bytes(),
        }
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Secret::Key(_) => f.write_str("Secret::Key(••••)"),
            Secret::Code(_) => f.write_str("Secret::Code(••••)"),
        }
    }
}

fn mac(secret: &Secret, label: &[u8], parts: &[&[u8]]) -> HmacSha256 {
    let mut mac =
        HmacSha256::new_from_slice(secret.bytes()).expect("HMAC takes a key of any length");
    mac.update(label);
    for part in parts {
        mac.update(part);
    }
    mac
}

fn compute(secret: &Secret, label: &[u8], parts: &[&[u8]]) -> [u8; MAC_LEN] {
    mac(secret, label, parts).finalize().into_bytes().into()
}

/// Compares in constant time, so a wrong guess learns nothing from how long the refusal took.
fn verify(secret: &Secret, label: &[u8], parts: &[&[u8]], given_hex: &str) -> bool {
    match decode_hex(given_hex) {
        Some(given) if given.len() == MAC_LEN => {
            mac(secret, label, parts).verify_slice(&given).is_ok()
        }
        _ => false,
    }
}

const TAG: &[u8] = b"tabwire pairing v1 tag\0";
const HUB: &[u8] = b"tabwire pairing v1 hub\0";
const BROWSER: &[u8] = b"tabwire pairing v1 browser\0";
const KEY: &[u8] = b"tabwire pairing v1 key\0";

/// The tag of a challenge: which secret the browser holds, readable only by one that knows it.
pub fn tag(secret: &Secret, browser_nonce: &[u8]) -> String {
    encode_hex(&compute(secret, TAG, &[browser_nonce]))
}

/// Whether `tag_hex` is [`tag`]`(secret, browser_nonce)`.
pub fn tag_matches(secret: &Secret, browser_nonce: &[u8], tag_hex: &str) -> bool {
    verify(secret, TAG, &[browser_nonce], tag_hex)
}

/// The hub's proof that it knows the secret, bound to both nonces.
pub fn hub_proof(secret: &Secret, browser_nonce: &[u8], hub_nonce: &[u8]) -> String {
    encode_hex(&compute(secret, HUB, &[browser_nonce, hub_nonce]))
}

/// Whether `proof_hex` is the hub's proof for these nonces.
pub fn hub_proof_matches(
    secret: &Secret,
    browser_nonce: &[u8],
    hub_nonce: &[u8],
    proof_hex: &str,
) -> bool {
    verify(secret, HUB, &[browser_nonce, hub_nonce], proof_hex)
}

/// The browser's proof that it knows the secret, bound to both nonces.
pub fn browser_proof(secret: &Secret, browser_nonce: &[u8], hub_nonce: &[u8]) -> String {
    encode_hex(&compute(secret, BROWSER, &[browser_nonce, hub_nonce]))
}

/// Whether `proof_hex` is the browser's proof for these nonces.
pub fn browser_proof_matches(
    secret: &Secret,
    browser_nonce: &[u8],
    hub_nonce: &[u8],
    proof_hex: &str,
) -> bool {
    verify(secret, BROWSER, &[browser_nonce, hub_nonce], proof_hex)
}

/// The per-browser key both sides keep after a pairing with `code` succeeded.
pub fn derive_key(code: &PairingCode, browser_nonce: &[u8], hub_nonce: &[u8]) -> [u8; KEY_LEN] {
    compute(
        &Secret::Code(code.clone()),
        KEY,
        &[browser_nonce, hub_nonce],
    )
}

/// The alphabet of pairing codes: Crockford's base 32 (no I, L, O or U), so a code read aloud
/// or retyped survives.
const CODE_ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Characters in a code: 100 random bits, far beyond guessing within a code's few minutes, and
/// beyond an offline search by a program that watched an exchange.
pub const CODE_CHARS: usize = 20;
/// Random bytes a code is made from (the first [`CODE_CHARS`] × 5 bits are used).
pub const CODE_RANDOM_BYTES: usize = 13;

/// A one-time pairing code, normalised: 20 characters of [`CODE_ALPHABET`]. Shown in groups of
/// five (`7KQ2M-…`); its `Debug` hides it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PairingCode(String);

impl std::fmt::Debug for PairingCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PairingCode(••••)")
    }
}

impl std::fmt::Display for PairingCode {
    /// The code in groups of five, for people: `7KQ2M-H9D4X-0RB6T-WC3NP`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, chunk) in self.0.as_bytes().chunks(5).enumerate() {
            if i > 0 {
                f.write_str("-")?;
            }
            f.write_str(std::str::from_utf8(chunk).expect("the alphabet is ASCII"))?;
        }
        Ok(())
    }
}

/// Why a typed pairing code is not one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeError {
    /// It has this many code characters instead of [`CODE_CHARS`].
    WrongLength(usize),
    /// It contains a character that no code has.
    BadCharacter(char),
}

impl std::fmt::Display for CodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CodeError::WrongLength(n) => write!(
                f,
                "a pairing code has {CODE_CHARS} letters and digits (dashes optional); this has \
                 {n}: paste the whole code `tabwire-hub pair` printed"
            ),
            CodeError::BadCharacter(c) => write!(
                f,
                "a pairing code has only letters and digits (and dashes), not {c:?}: paste the \
                 code `tabwire-hub pair` printed"
            ),
        }
    }
}

impl std::error::Error for CodeError {}

impl PairingCode {
    /// A code made from random bytes.
    pub fn from_random(bytes: [u8; CODE_RANDOM_BYTES]) -> PairingCode {
        let mut bits: u128 = 0;
        for byte in bytes {
            bits = (bits << 8) | u128::from(byte);
        }
        let code = (0..CODE_CHARS)
            .map(|i| {
                let shift = (CODE_RANDOM_BYTES * 8) - 5 * (i + 1);
                CODE_ALPHABET[((bits >> shift) & 31) as usize] as char
            })
            .collect();
        PairingCode(code)
    }

    /// Reads a code as a person pastes or types it: case, spaces and dashes do not matter, and
    /// the letters Crockford's alphabet leaves out are read as the digits they resemble
    /// (I and L as 1, O as 0).
    pub fn parse(input: &str) -> Result<PairingCode, CodeError> {
        let mut code = String::with_capacity(CODE_CHARS);
        for c in input.chars() {
            let c = match c.to_ascii_uppercase() {
                '-' | ' ' | '\t' | '\n' | '\r' => continue,
                'I' | 'L' => '1',
                'O' => '0',
                c if c.is_ascii() && CODE_ALPHABET.contains(&(c as u8)) => c,
                _ => return Err(CodeError::BadCharacter(c)),
            };
            code.push(c);
        }
        if code.len() != CODE_CHARS {
            return Err(CodeError::WrongLength(code.len()));
        }
        Ok(PairingCode(code))
    }

    /// The normalised code (no dashes), for storage.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Lower-case hex.
pub fn encode_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(DIGITS[usize::from(byte >> 4)] as char);
        text.push(DIGITS[usize::from(byte & 15)] as char);
    }
    text
}

/// Hex of either case; `None` for anything else (odd length, other characters).
pub fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    text.as_bytes()
        .chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

/// A nonce from its hex form, when it has the right length.
pub fn decode_nonce(text: &str) -> Option<[u8; NONCE_LEN]> {
    decode_hex(text)?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code() -> PairingCode {
        PairingCode::from_random([7; CODE_RANDOM_BYTES])
    }

    #[test]
    fn codes_are_twenty_characters_in_groups() {
        let code = PairingCode::from_random([0xff; CODE_RANDOM_BYTES]);
        assert_eq!(code.as_str(), "ZZZZZZZZZZZZZZZZZZZZ");
        let code = PairingCode::from_random([0; CODE_RANDOM_BYTES]);
        assert_eq!(code.to_string(), "00000-00000-00000-00000");
        let mixed = PairingCode::from_random([0x12; CODE_RANDOM_BYTES]);
        assert_eq!(mixed.as_str().len(), CODE_CHARS);
        assert_eq!(format!("{mixed:?}"), "PairingCode(••••)");
    }

    #[test]
    fn codes_are_read_as_people_type_them() {
        let code = code();
        let shown = code.to_string();
        assert_eq!(PairingCode::parse(&shown).unwrap(), code);
        assert_eq!(
            PairingCode::parse(&format!(" {}\n", shown.to_lowercase())).unwrap(),
            code
        );
        let typed = PairingCode::parse("ILO00-00000-00000-00000").unwrap();
        assert_eq!(typed.as_str(), "11000000000000000000");
        assert_eq!(PairingCode::parse("12345"), Err(CodeError::WrongLength(5)));
        assert_eq!(
            PairingCode::parse("UUUUU-00000-00000-00000"),
            Err(CodeError::BadCharacter('U'))
        );
        assert!(
            PairingCode::parse("é")
                .unwrap_err()
                .to_string()
                .contains("only letters and digits")
        );
    }

    #[test]
    fn the_exchange_proves_both_sides() {
        let key = Secret::Key([3; KEY_LEN]);
        let (nb, nh) = ([1; NONCE_LEN], [2; NONCE_LEN]);
        let tag = tag(&key, &nb);
        assert!(tag_matches(&key, &nb, &tag));
        assert!(!tag_matches(&key, &nh, &tag), "a tag is bound to its nonce");
        assert!(!tag_matches(&Secret::Key([4; KEY_LEN]), &nb, &tag));

        let hub = hub_proof(&key, &nb, &nh);
        assert!(hub_proof_matches(&key, &nb, &nh, &hub));
        assert!(!hub_proof_matches(&key, &nb, &[9; NONCE_LEN], &hub));
        let browser = browser_proof(&key, &nb, &nh);
        assert!(browser_proof_matches(&key, &nb, &nh, &browser));
        // No message can stand in for another: each has its own label.
        assert_ne!(hub, browser);
        assert!(!browser_proof_matches(&key, &nb, &nh, &hub));
        assert!(!hub_proof_matches(&key, &nb, &nh, &browser));
        assert!(!hub_proof_matches(&key, &nb, &nh, "not hex"));
        assert!(!hub_proof_matches(&key, &nb, &nh, ""));
    }

    #[test]
    fn a_code_derives_one_key_per_exchange() {
        let code = code();
        let (nb, nh) = ([1; NONCE_LEN], [2; NONCE_LEN]);
        let key = derive_key(&code, &nb, &nh);
        assert_eq!(key, derive_key(&code, &nb, &nh));
        assert_ne!(key, derive_key(&code, &nb, &[3; NONCE_LEN]));
        assert_ne!(
            key,
            derive_key(&PairingCode::from_random([8; CODE_RANDOM_BYTES]), &nb, &nh)
        );
        // The key is not any value that crossed the wire.
        let secret = Secret::Code(code);
        for sent in [tag(&secret, &nb), hub_proof(&secret, &nb, &nh)] {
            assert_ne!(sent, encode_hex(&key));
        }
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(encode_hex(&[0, 0xab, 0x10]), "00ab10");
        assert_eq!(decode_hex("00AB10").unwrap(), vec![0, 0xab, 0x10]);
        assert_eq!(decode_hex("0"), None);
        assert_eq!(decode_hex("zz"), None);
        assert_eq!(
            decode_nonce(&encode_hex(&[5; NONCE_LEN])),
            Some([5; NONCE_LEN])
        );
        assert_eq!(decode_nonce("00"), None);
    }
}
