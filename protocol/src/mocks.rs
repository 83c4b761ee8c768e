//! Network mocks (issue 28): answering a tab's requests with a stubbed response, and the
//! record of which requests were mocked and which went to the network.
//!
//! A mock matches a request by a URL pattern in the CDP Fetch domain's syntax (`*` any run of
//! characters, `?` one, `\` escapes the next) and optionally its method, and answers it with a
//! status, headers and a body, after an optional delay. Requests no mock answers continue to
//! the network untouched. Mocks belong to the tab and the session that added them, and end
//! with that session or `clear`.
//!
//! The rules here (patterns, methods, statuses, headers, bounds) are checked by the hub before
//! a request leaves it and again by the extension, which answers the requests.

use serde::{Deserialize, Serialize};

use crate::TabId;
use crate::records::{Records, RecordsRequest};

/// The largest body of one mock, in bytes (decoded).
pub const MAX_MOCK_BODY_BYTES: usize = 256 * 1024;
/// The most bytes of bodies one call adds (decoded): its request fits a message between hub
/// replicas.
pub const MAX_CALL_BODY_BYTES: usize = 384 * 1024;
/// The most bytes of bodies a tab keeps for all its sessions' mocks.
pub const MAX_TAB_MOCK_BYTES: usize = 4 * 1024 * 1024;
/// The most mocks one session keeps in one tab.
pub const MAX_MOCKS: usize = 50;
/// The longest URL pattern.
pub const MAX_PATTERN_LEN: usize = 2000;
/// The longest delay before a mock answers, in milliseconds.
pub const MAX_DELAY_MS: u32 = 30_000;
/// The most headers of one mock.
pub const MAX_HEADERS: usize = 32;
/// The most bytes of one mock's header names and values together.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;
/// The methods a mock may name.
pub const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
/// Headers a mock may not set: state that would outlive the mock (cookies, cleared site data,
/// caching: every answer is `no-store`), a way elsewhere (`location`, `refresh`), and framing
/// the browser computes itself.
pub const REFUSED_HEADERS: [&str; 12] = [
    "set-cookie",
    "clear-site-data",
    "cache-control",
    "expires",
    "location",
    "refresh",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "content-encoding",
];

/// Add, clear, list a tab's mocks and read what they saw, in that order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MockNetwork {
    /// Mocks to add (newest first wins when several match).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add: Vec<MockSpec>,
    /// Remove this session's mocks of the tab (before adding any).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clear: bool,
    /// A page of the requests seen while mocks were on: mocked and missed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<RecordsRequest>,
}

impl MockNetwork {
    /// Whether it adds mocks: then it changes what the page gets, an action on its origin.
    pub fn adds(&self) -> bool {
        !self.add.is_empty()
    }
}

/// One mock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MockSpec {
    /// The URLs it answers, in the Fetch domain's pattern syntax.
    pub url_pattern: String,
    /// Only requests of this method (upper case); any when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The response's status.
    pub status: u16,
    /// The response's headers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<MockHeader>,
    /// The response's body, base64.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub body_base64: String,
    /// Wait this long before answering.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u32,
}

fn is_zero(ms: &u32) -> bool {
    *ms == 0
}

/// A response header of a mock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockHeader {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// A tab's mocks as one session sees them, and what it asked to read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MockState {
    /// The tab.
    pub tab_id: TabId,
    /// The session's mocks in the tab, newest first.
    pub mocks: Vec<MockInfo>,
    /// How many this call added.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub added: u32,
    /// How many this call removed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cleared: u32,
    /// False when the mocks cannot answer now: tabwire's debugger is not attached to the tab
    /// (they answer again once it is).
    pub active: bool,
    /// The page of requests, when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<Records<MockRecord>>,
}

/// One mock, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MockInfo {
    /// Its number within the tab.
    pub id: u32,
    /// Its URL pattern.
    pub url_pattern: String,
    /// Its method, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Its status.
    pub status: u16,
    /// Its body's size in bytes.
    pub body_bytes: u32,
    /// Its delay.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u32,
    /// How many requests it answered.
    pub hits: u32,
}

/// A request seen while a session's mocks were on in its tab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MockRecord {
    /// Its sequence number (increasing for the tab's life).
    pub seq: u64,
    /// The method.
    pub method: String,
    /// The URL.
    pub url: String,
    /// Chrome's resource type (`Fetch`, `XHR`, `Document`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// What happened to it.
    pub outcome: MockOutcome,
    /// The mock that answered it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mock_id: Option<u32>,
    /// The status it was answered with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

/// What happened to a request while mocks were on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum MockOutcome {
    /// A mock answered it.
    Mocked,
    /// No mock matched: it went to the network untouched.
    Missed,
    /// A mock matched, but it went to the network untouched: the policy does not let agents
    /// act on its URL or frame, or the mock was removed while its answer waited.
    Passed,
}

/// Whether `url` matches `pattern` in the Fetch domain's syntax: `*` any run of characters,
/// `?` exactly one, `\` takes the next character literally; everything else as itself.
pub fn pattern_matches(pattern: &str, url: &str) -> bool {
    #[derive(Clone, Copy, PartialEq)]
    enum Token {
        Any,
        One,
        Char(char),
    }
    let mut tokens = Vec::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        tokens.push(match c {
            '*' => Token::Any,
            '?' => Token::One,
            '\\' => Token::Char(chars.next().unwrap_or('\\')),
            c => Token::Char(c),
        });
    }
    let text: Vec<char> = url.chars().collect();
    // Greedy matching with one backtrack point: the last `*` seen.
    let (mut t, mut u) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while u < text.len() {
        match tokens.get(t) {
            Some(Token::One) => {
                t += 1;
                u += 1;
            }
            Some(Token::Char(c)) if *c == text[u] => {
                t += 1;
                u += 1;
            }
            Some(Token::Any) => {
                star = Some((t, u));
                t += 1;
            }
            _ => match star {
                Some((star_t, star_u)) => {
                    t = star_t + 1;
                    u = star_u + 1;
                    star = Some((star_t, star_u + 1));
                }
                None => return false,
            },
        }
    }
    tokens[t..].iter().all(|token| *token == Token::Any)
}

/// The origin a pattern can only match (`https://api.example.com` for
/// `https://api.example.com/items*`), or `None` when its scheme or host has a wildcard: then
/// each request it matches is judged by its own URL.
pub fn pattern_origin(pattern: &str) -> Option<String> {
    let (scheme, rest) = pattern.split_once("://")?;
    if !matches!(scheme, "http" | "https") {
        return None;
    }
    // Only `/` ends the host: `?` is a wildcard in patterns, and a request's URL always has a
    // path.
    let end = rest.find('/').unwrap_or(rest.len());
    let authority = &rest[..end];
    // A `*` right after the host (`https://x.com*`) could match `x.com.evil.example`.
    let wild = |s: &str| s.contains(['*', '?', '\\', '@']);
    if authority.is_empty() || wild(authority) || (end == rest.len() && wild(pattern)) {
        return None;
    }
    Some(format!("{scheme}://{}", authority.to_ascii_lowercase()))
}

/// Whether a mock may answer with `status`: a success or an error (200–299, 400–599), never a
/// redirect, which would send the page elsewhere.
pub fn status_allowed(status: u16) -> bool {
    (200..=299).contains(&status) || (400..=599).contains(&status)
}

/// Why `status` is refused.
pub fn status_refused(status: u32) -> String {
    format!("status {status} is not a mock's: 200–299 or 400–599 (a mock does not redirect)")
}

/// Checks one mock against the rules both sides apply; the error is a sentence for the agent.
pub fn check_spec(spec: &MockSpec, body_bytes: usize) -> Result<(), String> {
    let pattern = &spec.url_pattern;
    if pattern.is_empty() || pattern.len() > MAX_PATTERN_LEN {
        return Err(format!(
            "urlPattern must have 1 to {MAX_PATTERN_LEN} characters"
        ));
    }
    if pattern.chars().any(char::is_control) {
        return Err("urlPattern must not hold control characters".into());
    }
    let scheme_ok = ["http://", "https://", "*://", "*"]
        .iter()
        .any(|start| pattern.starts_with(start));
    if !scheme_ok {
        return Err(format!(
            "urlPattern {pattern:?} must start with http://, https://, *:// or * (pages' other \
             schemes, file:// among them, are not mocked)"
        ));
    }
    if let Some(method) = &spec.method
        && !METHODS.contains(&method.as_str())
    {
        return Err(format!(
            "method {method:?} is not one of {}",
            METHODS.join(", ")
        ));
    }
    if !status_allowed(spec.status) {
        return Err(status_refused(u32::from(spec.status)));
    }
    if spec.delay_ms > MAX_DELAY_MS {
        return Err(format!("delayMs is at most {MAX_DELAY_MS}"));
    }
    if body_bytes > MAX_MOCK_BODY_BYTES {
        return Err(format!(
            "a mock's body is at most {} KiB ({body_bytes} bytes given)",
            MAX_MOCK_BODY_BYTES / 1024
        ));
    }
    if spec.headers.len() > MAX_HEADERS {
        return Err(format!("a mock has at most {MAX_HEADERS} headers"));
    }
    let mut header_bytes = 0;
    for header in &spec.headers {
        let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
        if header.name.is_empty() || !header.name.chars().all(token) {
            return Err(format!("header name {:?} is not a token", header.name));
        }
        if header
            .value
            .chars()
            .any(|c| matches!(c, '\r' | '\n' | '\0'))
        {
            return Err(format!(
                "header {} must not hold CR, LF or NUL",
                header.name
            ));
        }
        let lower = header.name.to_ascii_lowercase();
        if REFUSED_HEADERS.contains(&lower.as_str()) {
            return Err(format!(
                "header {} cannot be mocked (refused: {})",
                header.name,
                REFUSED_HEADERS.join(", ")
            ));
        }
        header_bytes += header.name.len() + header.value.len();
    }
    if header_bytes > MAX_HEADER_BYTES {
        return Err(format!(
            "a mock's headers hold at most {} KiB",
            MAX_HEADER_BYTES / 1024
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_the_fetch_domain_does() {
        for (pattern, url, expected) in [
            ("*", "https://a.example/x", true),
            (
                "*/api/items*",
                "http://127.0.0.1:8080/api/items?page=2",
                true,
            ),
            ("*/api/items*", "http://127.0.0.1:8080/api/other", false),
            ("https://a.example/x", "https://a.example/x", true),
            ("https://a.example/x", "https://a.example/xy", false),
            ("https://a.example/?", "https://a.example/y", true),
            ("https://a.example/?", "https://a.example/", false),
            ("https://a.example/\\*", "https://a.example/*", true),
            ("https://a.example/\\*", "https://a.example/z", false),
            ("*a*b*c", "xxaxxbxxc", true),
            ("*a*b*c", "xxaxxcxxb", false),
            ("", "", true),
            ("", "x", false),
        ] {
            assert_eq!(pattern_matches(pattern, url), expected, "{pattern} {url}");
        }
    }

    #[test]
    fn a_pattern_names_its_origin_only_when_no_wildcard_can_reach_another() {
        assert_eq!(
            pattern_origin("https://API.example.com/items*").as_deref(),
            Some("https://api.example.com")
        );
        assert_eq!(
            pattern_origin("http://127.0.0.1:9000/x").as_deref(),
            Some("http://127.0.0.1:9000")
        );
        for wild in [
            "*/api/*",
            "*://a.example/x",
            "https://*.example.com/x",
            "https://a.example*",
            "https://a.example?x",
            "ftp://a.example/x",
        ] {
            assert_eq!(pattern_origin(wild), None, "{wild}");
        }
    }

    fn spec() -> MockSpec {
        MockSpec {
            url_pattern: "*/api/items*".into(),
            method: Some("GET".into()),
            status: 200,
            headers: vec![MockHeader {
                name: "Content-Type".into(),
                value: "application/json".into(),
            }],
            body_base64: String::new(),
            delay_ms: 0,
        }
    }

    #[test]
    fn mocks_that_break_a_rule_are_refused_with_a_reason() {
        assert_eq!(check_spec(&spec(), 10), Ok(()));
        let refused = [
            MockSpec {
                url_pattern: "file:///etc/*".into(),
                ..spec()
            },
            MockSpec {
                url_pattern: String::new(),
                ..spec()
            },
            MockSpec {
                method: Some("get".into()),
                ..spec()
            },
            MockSpec {
                status: 99,
                ..spec()
            },
            MockSpec {
                status: 302,
                ..spec()
            },
            MockSpec {
                headers: vec![MockHeader {
                    name: "Cache-Control".into(),
                    value: "max-age=31536000".into(),
                }],
                ..spec()
            },
            MockSpec {
                delay_ms: MAX_DELAY_MS + 1,
                ..spec()
            },
            MockSpec {
                headers: vec![MockHeader {
                    name: "Set-Cookie".into(),
                    value: "session=x".into(),
                }],
                ..spec()
            },
            MockSpec {
                headers: vec![MockHeader {
                    name: "X-A".into(),
                    value: "a\r\nSet-Cookie: x=1".into(),
                }],
                ..spec()
            },
            MockSpec {
                headers: vec![MockHeader {
                    name: "X A".into(),
                    value: "a".into(),
                }],
                ..spec()
            },
        ];
        for mock in refused {
            assert!(check_spec(&mock, 0).is_err(), "{mock:?}");
        }
        assert!(check_spec(&spec(), MAX_MOCK_BODY_BYTES + 1).is_err());
    }

    #[test]
    fn a_request_round_trips_and_refuses_unknown_fields() {
        let request = MockNetwork {
            add: vec![spec()],
            clear: true,
            requests: None,
        };
        let json = serde_json::to_string(&request).unwrap();
        assert_eq!(serde_json::from_str::<MockNetwork>(&json).unwrap(), request);
        assert!(serde_json::from_str::<MockNetwork>(r#"{"add":[],"extra":1}"#).is_err());
    }
}
