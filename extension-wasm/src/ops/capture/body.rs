//! Response bodies as an agent can use them: text cut to a budget, binary left out with a note.
//!
//! `Network.getResponseBody` answers `{body, base64Encoded}`: text bodies usually come as they
//! are, anything Chrome does not consider text as base64. A base64 body whose MIME type is text
//! (JSON, JavaScript, XML…) is decoded; images, fonts, media and other binary bodies are never
//! returned, since their bytes mean nothing to a model and would spend its whole budget.

use crate::text::slice_chars;

/// A body ready for the answer.
#[derive(Debug, PartialEq)]
pub struct Body {
    /// The text, cut to the budget; empty when left out.
    pub body: String,
    /// The full length: characters for text, bytes for binary.
    pub total_chars: u32,
    /// True when the text was cut.
    pub truncated: bool,
    /// Why the body is cut or left out.
    pub note: Option<String>,
}

/// Turns Chrome's answer into a [`Body`] within `max_chars`.
pub fn prepare(raw: &str, base64_encoded: bool, mime_type: &str, max_chars: u32) -> Body {
    if !base64_encoded {
        return text(raw, max_chars);
    }
    let Some(bytes) = decode_base64(raw) else {
        return Body {
            body: String::new(),
            total_chars: 0,
            truncated: false,
            note: Some(format!(
                "Chrome sent the {} body in a form tabwire could not decode, so it is left out.",
                describe(mime_type)
            )),
        };
    };
    let decoded = if is_text_mime(mime_type) {
        Some(String::from_utf8_lossy(&bytes).into_owned())
    } else if is_binary_mime(mime_type) {
        None
    } else {
        // An unknown type: text if it reads as text.
        String::from_utf8(bytes.clone())
            .ok()
            .filter(|t| !t.contains('\0'))
    };
    match decoded {
        Some(decoded) => text(&decoded, max_chars),
        None => Body {
            body: String::new(),
            total_chars: u32::try_from(bytes.len()).unwrap_or(u32::MAX),
            truncated: false,
            note: Some(format!(
                "The body is binary ({}, {} bytes), so it is left out.",
                describe(mime_type),
                bytes.len()
            )),
        },
    }
}

fn text(text: &str, max_chars: u32) -> Body {
    let slice = slice_chars(text, 0, max_chars);
    let total = slice.total;
    Body {
        body: slice.text,
        total_chars: total,
        truncated: slice.truncated,
        note: slice
            .truncated
            .then(|| format!("The body has {total} characters; this is the first {max_chars}.")),
    }
}

fn describe(mime_type: &str) -> &str {
    if mime_type.is_empty() {
        "unknown type"
    } else {
        mime_type
    }
}

/// The MIME type without parameters, lower case.
fn essence(mime_type: &str) -> String {
    mime_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// Whether a MIME type is text: `text/*`, JSON, JavaScript, XML (SVG too) and forms.
pub fn is_text_mime(mime_type: &str) -> bool {
    let mime = essence(mime_type);
    mime.starts_with("text/")
        || ["json", "javascript", "ecmascript", "xml", "graphql"]
            .iter()
            .any(|word| mime.contains(word))
        || mime == "application/x-www-form-urlencoded"
}

/// Whether a MIME type is known to be binary.
pub fn is_binary_mime(mime_type: &str) -> bool {
    let mime = essence(mime_type);
    ["image/", "audio/", "video/", "font/", "application/font"]
        .iter()
        .any(|prefix| mime.starts_with(prefix))
        || [
            "application/octet-stream",
            "application/pdf",
            "application/zip",
            "application/gzip",
            "application/wasm",
            "application/x-protobuf",
            "application/protobuf",
        ]
        .contains(&mime.as_str())
}

/// Decodes standard base64 (padding optional, whitespace ignored); `None` when it is not.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    fn value(c: u8) -> Option<u32> {
        match c {
            b'A'..=b'Z' => Some(u32::from(c - b'A')),
            b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
            b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let symbols: Vec<u8> = text.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    let data = symbols
        .iter()
        .position(|&c| c == b'=')
        .map_or(&symbols[..], |end| &symbols[..end]);
    if data.len() % 4 == 1 || symbols[data.len()..].iter().any(|&c| c != b'=') {
        return None;
    }
    let mut out = Vec::with_capacity(data.len() / 4 * 3 + 2);
    for chunk in data.chunks(4) {
        let mut bits = 0u32;
        for &c in chunk {
            bits = bits << 6 | value(c)?;
        }
        // A chunk of n symbols carries n * 6 bits, of which the whole bytes count.
        bits <<= 6 * (4 - chunk.len() as u32);
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_with_and_without_padding() {
        assert_eq!(decode_base64("aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(decode_base64("aGVsbG8"), Some(b"hello".to_vec()));
        assert_eq!(decode_base64("aGVs\nbG8h"), Some(b"hello!".to_vec()));
        assert_eq!(decode_base64("aGk="), Some(b"hi".to_vec()));
        assert_eq!(decode_base64(""), Some(Vec::new()));
        assert_eq!(decode_base64("a"), None);
        assert_eq!(decode_base64("aGk*"), None);
        assert_eq!(decode_base64("aG=k"), None);
    }

    #[test]
    fn plain_text_is_cut_to_the_budget() {
        let body = prepare("{\"items\":[1,2,3]}", false, "application/json", 8);
        assert_eq!(body.body, "{\"items\"");
        assert_eq!(body.total_chars, 17);
        assert!(body.truncated);
        assert!(body.note.is_some_and(|n| n.contains("17 characters")));
        let whole = prepare("héllo", false, "text/html", 100);
        assert_eq!((whole.body.as_str(), whole.total_chars), ("héllo", 5));
        assert!(!whole.truncated && whole.note.is_none());
    }

    #[test]
    fn base64_text_is_decoded() {
        // "{\"ok\":true}"
        let body = prepare(
            "eyJvayI6dHJ1ZX0=",
            true,
            "application/json; charset=utf-8",
            100,
        );
        assert_eq!(body.body, "{\"ok\":true}");
        assert_eq!(body.total_chars, 11);
        let svg = prepare("PHN2Zy8+", true, "image/svg+xml", 100);
        assert_eq!(svg.body, "<svg/>");
    }

    #[test]
    fn binary_bodies_are_left_out_with_a_note() {
        let png = prepare("iVBORw0KGgo=", true, "image/png", 100);
        assert_eq!(png.body, "");
        assert_eq!(png.total_chars, 8);
        assert!(!png.truncated);
        assert_eq!(
            png.note.as_deref(),
            Some("The body is binary (image/png, 8 bytes), so it is left out.")
        );
        assert!(prepare("AAEC", true, "font/woff2", 100).body.is_empty());
        // Unknown type: text when it reads as text, binary otherwise.
        assert_eq!(prepare("aGk=", true, "", 100).body, "hi");
        let bytes = prepare("AP8A", true, "", 100);
        assert!(bytes.body.is_empty());
        assert!(
            bytes
                .note
                .is_some_and(|n| n.contains("unknown type, 3 bytes"))
        );
    }

    #[test]
    fn mime_types_are_classified() {
        for text in [
            "text/html",
            "application/javascript",
            "application/ld+json",
            "text/css; charset=utf-8",
            "application/xml",
        ] {
            assert!(is_text_mime(text), "{text}");
            assert!(!is_binary_mime(text), "{text}");
        }
        for binary in [
            "image/webp",
            "font/woff2",
            "application/octet-stream",
            "video/mp4",
            "application/pdf",
        ] {
            assert!(is_binary_mime(binary), "{binary}");
            assert!(!is_text_mime(binary), "{binary}");
        }
    }
}
