//! The access token for a hub in hosted mode (`docs/hosted.md`, "The extension's token").
//!
//! The browser's `WebSocket` cannot set headers, so the token travels as a subprotocol:
//! `new WebSocket(url, ["tabwire", "tabwire.bearer." + token])`. That is why a token may hold
//! only `A-Z a-z 0-9 - _ .`: the alphabet of a JWT, and legal inside a `Sec-WebSocket-Protocol`
//! header. The token is a secret: [`AccessToken`]'s `Debug` hides it, nothing here puts it in
//! an error message, and [`redact`] scrubs it from text that came from elsewhere.

/// The longest token accepted, in characters.
pub const MAX_TOKEN_LEN: usize = 8192;

/// The subprotocol the hub answers with.
pub const SUBPROTOCOL: &str = "tabwire";

/// The prefix of the subprotocol that carries the token.
pub const BEARER_PREFIX: &str = "tabwire.bearer.";

/// What [`redact`] puts in place of the token.
const HIDDEN: &str = "••••";

/// A checked, non-empty access token. Its `Debug` never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken(String);

impl AccessToken {
    /// The token itself; only for dialling.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The subprotocols to offer the hub, in order.
    pub fn subprotocols(&self) -> [String; 2] {
        [SUBPROTOCOL.to_owned(), format!("{BEARER_PREFIX}{}", self.0)]
    }
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AccessToken({HIDDEN})")
    }
}

/// Why an access token was refused. Never carries the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenError {
    /// Longer than [`MAX_TOKEN_LEN`]; the length it has.
    TooLong(usize),
    /// A character outside the token alphabet, at this 1-based position.
    BadCharacter(usize),
    /// The Server URL is plain `ws://` (or `http://`), where anyone on the way could read the
    /// token.
    Unencrypted,
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenError::TooLong(len) => write!(
                f,
                "the access token is {len} characters long; at most {MAX_TOKEN_LEN} are allowed"
            ),
            TokenError::BadCharacter(position) => write!(
                f,
                "the access token may contain only letters, digits, '-', '_' and '.' \
                 (character {position} is something else); paste the token alone, without \
                 \"Bearer\" or quotes"
            ),
            TokenError::Unencrypted => f.write_str(
                "the access token is sent only over an encrypted connection: use a wss:// (or \
                 https://) Server URL; a local hub takes no token (pair it instead)",
            ),
        }
    }
}

impl std::error::Error for TokenError {}

/// Checks a token from the popup, a policy or a bundled `config.json`. Surrounding whitespace
/// (a pasted line break) is dropped; an empty token means "no token": `Ok(None)`.
pub fn validate_access_token(input: &str) -> Result<Option<AccessToken>, TokenError> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    let len = trimmed.chars().count();
    if len > MAX_TOKEN_LEN {
        return Err(TokenError::TooLong(len));
    }
    if let Some(position) = trimmed.chars().position(|c| !is_token_char(c)) {
        return Err(TokenError::BadCharacter(position + 1));
    }
    Ok(Some(AccessToken(trimmed.to_owned())))
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// `text` with every occurrence of the token hidden: for messages that did not come from
/// tabwire's own code (a browser exception, a hub's sentence) before they are logged or shown.
pub fn redact(text: &str, token: Option<&AccessToken>) -> String {
    match token {
        Some(token) if text.contains(token.as_str()) => text.replace(token.as_str(), HIDDEN),
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.sig-_nature";

    #[test]
    fn empty_means_no_token() {
        assert_eq!(validate_access_token(""), Ok(None));
        assert_eq!(validate_access_token(" \n\t "), Ok(None));
    }

    #[test]
    fn jwts_are_accepted_and_trimmed() {
        let token = validate_access_token(&format!("  {JWT}\n"))
            .unwrap()
            .unwrap();
        assert_eq!(token.as_str(), JWT);
        assert_eq!(
            token.subprotocols(),
            ["tabwire".to_owned(), format!("tabwire.bearer.{JWT}")]
        );
        assert!(validate_access_token("a").unwrap().is_some());
    }

    #[test]
    fn the_length_is_bounded() {
        assert!(validate_access_token(&"a".repeat(MAX_TOKEN_LEN)).is_ok());
        assert_eq!(
            validate_access_token(&"a".repeat(MAX_TOKEN_LEN + 1)),
            Err(TokenError::TooLong(MAX_TOKEN_LEN + 1))
        );
    }

    #[test]
    fn only_the_token_alphabet_is_accepted() {
        for (bad, position) in [
            ("Bearer abc", 7),
            ("abc,def", 4),
            ("\"abc\"", 1),
            ("ab=", 3),
            ("a+b/c", 2),
            ("é", 1),
            ("a\nb", 2),
        ] {
            assert_eq!(
                validate_access_token(bad),
                Err(TokenError::BadCharacter(position)),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn errors_and_debug_never_show_the_token() {
        let secret = "s3cret-token";
        let bad = format!("{secret}!");
        let error = validate_access_token(&bad).unwrap_err();
        assert!(!error.to_string().contains(secret), "{error}");
        assert!(
            error
                .to_string()
                .contains("only letters, digits, '-', '_' and '.'")
        );
        let token = validate_access_token(secret).unwrap().unwrap();
        assert!(!format!("{token:?}").contains(secret));
    }

    #[test]
    fn redaction() {
        let token = validate_access_token("abc.def").unwrap();
        assert_eq!(
            redact(
                "The subprotocol 'tabwire.bearer.abc.def' is invalid",
                token.as_ref()
            ),
            "The subprotocol 'tabwire.bearer.••••' is invalid"
        );
        assert_eq!(redact("nothing here", token.as_ref()), "nothing here");
        assert_eq!(redact("abc.def", None), "abc.def");
    }
}
