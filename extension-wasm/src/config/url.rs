//! The Server URL rules (SPEC §9): what a person may type in the popup, a policy or a bundled
//! `config.json`, and the WebSocket URL the extension actually dials.
//!
//! This is a pure function so the rules are unit-tested natively; the browser's own `WebSocket`
//! constructor would accept things we want to refuse (embedded credentials) and reject others
//! with an unhelpful `SyntaxError`.

/// Why a Server URL was refused. Each message says what to type instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlError {
    /// No `scheme://` at the start.
    MissingScheme,
    /// A scheme other than ws, wss, http or https.
    UnsupportedScheme(String),
    /// A `#fragment`, which a WebSocket URL cannot carry.
    Fragment,
    /// `user:password@` in the authority: credentials must never sit in a URL that is stored
    /// and shown in the popup.
    Credentials,
    /// Nothing between `://` and the path.
    MissingHost,
    /// A port that is not a number from 1 to 65535.
    BadPort(String),
    /// Spaces or control characters inside the URL.
    Whitespace,
}

impl std::fmt::Display for UrlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UrlError::MissingScheme => {
                f.write_str("the server URL must start with ws://, wss://, http:// or https://")
            }
            UrlError::UnsupportedScheme(scheme) => write!(
                f,
                "the server URL scheme `{scheme}:` is not supported; use ws://, wss://, http:// \
                 or https://"
            ),
            UrlError::Fragment => f.write_str("the server URL must not contain a #fragment"),
            UrlError::Credentials => f.write_str(
                "the server URL must not contain a user name or password (user:password@)",
            ),
            UrlError::MissingHost => f.write_str("the server URL has no host name"),
            UrlError::BadPort(port) => {
                write!(
                    f,
                    "the server URL port `{port}` is not a number from 1 to 65535"
                )
            }
            UrlError::Whitespace => {
                f.write_str("the server URL must not contain spaces or control characters")
            }
        }
    }
}

impl std::error::Error for UrlError {}

/// The path the hub serves browser connections on. A URL given without a path (or with just
/// `/`) means "this hub", so the extension adds it; a URL with any other path is used as given,
/// because a reverse proxy may mount the hub under a prefix (`wss://example.com/tabwire/browser`).
pub const BROWSER_ENDPOINT_PATH: &str = "/browser";

/// Turns what the user typed into the WebSocket URL to dial.
///
/// Returns `Ok(None)` for an empty (or all-blank) input, which means "not configured": the
/// extension then makes no connection attempts at all.
pub fn normalize_server_url(input: &str) -> Result<Option<String>, UrlError> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    if trimmed.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(UrlError::Whitespace);
    }
    let (scheme, rest) = trimmed.split_once("://").ok_or(UrlError::MissingScheme)?;
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "https" | "wss" => "wss",
        "http" | "ws" => "ws",
        "" => return Err(UrlError::MissingScheme),
        other => return Err(UrlError::UnsupportedScheme(other.to_owned())),
    };
    if rest.contains('#') {
        return Err(UrlError::Fragment);
    }
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path_and_query) = rest.split_at(authority_end);
    if authority.contains('@') {
        return Err(UrlError::Credentials);
    }
    check_authority(authority)?;
    let authority = loopback_by_address(scheme, authority);
    let (path, query) = match path_and_query.find('?') {
        Some(at) => path_and_query.split_at(at),
        None => (path_and_query, ""),
    };
    let path = if path.is_empty() || path == "/" {
        BROWSER_ENDPOINT_PATH
    } else {
        path
    };
    Ok(Some(format!("{scheme}://{authority}{path}{query}")))
}

/// `localhost` in a plain `ws://` URL becomes `127.0.0.1` (the protocol's rule,
/// [`tabwire_protocol::local::dialled_host`]): Chrome tries `[::1]` first, where another
/// user's program could listen.
fn loopback_by_address(scheme: &str, authority: &str) -> String {
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.contains(']') && !host.contains('[') => (host, Some(port)),
        _ => (authority, None),
    };
    let dialled = tabwire_protocol::local::dialled_host(host, scheme != "ws");
    match port {
        Some(port) => format!("{dialled}:{port}"),
        None => dialled.to_owned(),
    }
}

/// Checks `host`, `host:port`, `[v6]` or `[v6]:port`.
fn check_authority(authority: &str) -> Result<(), UrlError> {
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let close = v6.find(']').ok_or(UrlError::MissingHost)?;
        let after = &v6[close + 1..];
        let port = match after.strip_prefix(':') {
            Some(port) => Some(port),
            None if after.is_empty() => None,
            None => return Err(UrlError::MissingHost),
        };
        (&v6[..close], port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(UrlError::MissingHost);
    }
    if let Some(port) = port {
        let valid = !port.is_empty()
            && port.bytes().all(|b| b.is_ascii_digit())
            && port.parse::<u32>().is_ok_and(|p| (1..=65535).contains(&p));
        if !valid {
            return Err(UrlError::BadPort(port.to_owned()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(input: &str) -> String {
        normalize_server_url(input)
            .unwrap_or_else(|e| panic!("{input:?} refused: {e}"))
            .unwrap_or_else(|| panic!("{input:?} treated as empty"))
    }

    #[test]
    fn empty_means_not_configured() {
        assert_eq!(normalize_server_url(""), Ok(None));
        assert_eq!(normalize_server_url("   \t "), Ok(None));
    }

    #[test]
    fn http_schemes_become_websocket_schemes() {
        assert_eq!(
            ok("https://hub.example.com"),
            "wss://hub.example.com/browser"
        );
        assert_eq!(ok("http://127.0.0.1:8080"), "ws://127.0.0.1:8080/browser");
        assert_eq!(
            ok("HTTPS://Hub.example.com/"),
            "wss://Hub.example.com/browser"
        );
    }

    #[test]
    fn websocket_schemes_are_kept() {
        assert_eq!(ok("ws://localhost:7000/"), "ws://127.0.0.1:7000/browser");
        assert_eq!(ok("wss://h.example/browser"), "wss://h.example/browser");
    }

    #[test]
    fn localhost_is_dialled_by_address() {
        // A name that may resolve to [::1], where another user's program could listen.
        assert_eq!(ok("http://LOCALHOST:17841"), "ws://127.0.0.1:17841/browser");
        assert_eq!(ok("ws://localhost"), "ws://127.0.0.1/browser");
        // TLS keeps the name its certificate is for; other names are left alone.
        assert_eq!(ok("wss://localhost:8443"), "wss://localhost:8443/browser");
        assert_eq!(
            ok("ws://localhost.example:1"),
            "ws://localhost.example:1/browser"
        );
        assert_eq!(ok("ws://[::1]:9"), "ws://[::1]:9/browser");
    }

    #[test]
    fn input_is_trimmed() {
        assert_eq!(ok("  ws://h:1  \n"), "ws://h:1/browser");
    }

    #[test]
    fn path_and_query_are_kept() {
        assert_eq!(
            ok("https://example.com/tabwire/browser?token=abc"),
            "wss://example.com/tabwire/browser?token=abc"
        );
        assert_eq!(ok("http://h:9/?x=1"), "ws://h:9/browser?x=1");
        assert_eq!(ok("http://h:9?x=1"), "ws://h:9/browser?x=1");
        assert_eq!(ok("ws://h/custom"), "ws://h/custom");
    }

    #[test]
    fn ipv6_hosts_work() {
        assert_eq!(ok("ws://[::1]:8080"), "ws://[::1]:8080/browser");
        assert_eq!(ok("http://[::1]"), "ws://[::1]/browser");
        assert_eq!(
            normalize_server_url("ws://[::1]x"),
            Err(UrlError::MissingHost)
        );
    }

    #[test]
    fn fragments_are_rejected() {
        assert_eq!(
            normalize_server_url("wss://h/browser#x"),
            Err(UrlError::Fragment)
        );
        assert_eq!(normalize_server_url("ws://h#"), Err(UrlError::Fragment));
    }

    #[test]
    fn credentials_are_rejected() {
        assert_eq!(
            normalize_server_url("https://user:pw@h.example"),
            Err(UrlError::Credentials)
        );
        assert_eq!(
            normalize_server_url("ws://user@h.example/browser"),
            Err(UrlError::Credentials)
        );
        // An @ after the authority is part of the path or query, not a credential.
        assert_eq!(ok("ws://h/browser?email=a@b"), "ws://h/browser?email=a@b");
    }

    #[test]
    fn other_schemes_are_rejected() {
        assert_eq!(
            normalize_server_url("ftp://h"),
            Err(UrlError::UnsupportedScheme("ftp".into()))
        );
        assert_eq!(
            normalize_server_url("localhost:8080"),
            Err(UrlError::MissingScheme)
        );
        assert_eq!(normalize_server_url("://h"), Err(UrlError::MissingScheme));
        assert_eq!(
            normalize_server_url("javascript:alert(1)"),
            Err(UrlError::MissingScheme)
        );
    }

    #[test]
    fn missing_host_is_rejected() {
        assert_eq!(normalize_server_url("ws://"), Err(UrlError::MissingHost));
        assert_eq!(
            normalize_server_url("https:///browser"),
            Err(UrlError::MissingHost)
        );
        assert_eq!(
            normalize_server_url("ws://:8080"),
            Err(UrlError::MissingHost)
        );
    }

    #[test]
    fn bad_ports_and_spaces_are_rejected() {
        assert_eq!(
            normalize_server_url("ws://h:0"),
            Err(UrlError::BadPort("0".into()))
        );
        assert_eq!(
            normalize_server_url("ws://h:99999"),
            Err(UrlError::BadPort("99999".into()))
        );
        assert_eq!(
            normalize_server_url("ws://h:"),
            Err(UrlError::BadPort(String::new()))
        );
        assert_eq!(normalize_server_url("ws://h x"), Err(UrlError::Whitespace));
    }

    #[test]
    fn messages_say_what_to_do() {
        assert!(UrlError::Fragment.to_string().contains("#fragment"));
        assert!(UrlError::MissingScheme.to_string().contains("wss://"));
    }
}
