//! The extension's configuration: where it connects, what it calls itself, the pairing code it
//! pairs with a local hub and the access token it shows a hub in hosted mode.
//!
//! Values come from three sources, and for each field the first source that sets it wins:
//! managed storage (an administrator's policy), then user-saved values (`chrome.storage.local`,
//! written by the popup's Connect), then a bundled `config.json` (how tests configure a copy of
//! the extension), then empty. This module holds the pure rules — precedence, URL normalisation,
//! browser-name and token checks — so they are unit-tested natively; [`store`] reads and writes
//! the sources.

pub mod store;
pub mod token;
pub mod url;

use serde::{Deserialize, Serialize};
use tabwire_protocol::messages::MAX_IDENTITY_LEN;
use tabwire_protocol::pairing::{CodeError, PairingCode};
use tabwire_protocol::{has_visible_char, is_hidden_char, shown_name};

pub use token::{AccessToken, TokenError, validate_access_token};
pub use url::{UrlError, normalize_server_url};

/// The browser name used when none is configured.
pub const DEFAULT_BROWSER_NAME: &str = "Chrome";

/// The values one source sets. `None` means the source leaves the field to the next one.
/// Its `Debug` hides the access token.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigLayer {
    /// The Server URL as typed (not yet normalised).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_url: Option<String>,
    /// The browser name as typed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser_name: Option<String>,
    /// The access token as typed (not yet checked); `Some("")` means "no token".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_token: Option<String>,
    /// A one-time pairing code from `tabwire-hub pair` (not yet checked); used only while the
    /// extension holds no pairing key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairing_code: Option<String>,
}

/// How a secret is shown in `Debug`: whether it is set, never what it is.
fn hidden(secret: &Option<String>) -> Option<&'static str> {
    secret.as_ref().map(|t| match t.is_empty() {
        true => "",
        false => "••••",
    })
}

impl std::fmt::Debug for ConfigLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigLayer")
            .field("server_url", &self.server_url)
            .field("browser_name", &self.browser_name)
            .field("access_token", &hidden(&self.access_token))
            .field("pairing_code", &hidden(&self.pairing_code))
            .finish()
    }
}

/// Which source a field's effective value came from; the popup shows managed fields read-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    /// An administrator's policy.
    Managed,
    /// Saved by the popup's Connect button.
    User,
    /// The bundled `config.json`.
    Bundled,
    /// Nothing set it.
    Default,
}

/// All three sources as last read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layers {
    /// `chrome.storage.managed`.
    pub managed: ConfigLayer,
    /// `chrome.storage.local`.
    pub user: ConfigLayer,
    /// The bundled `config.json`.
    pub bundled: ConfigLayer,
}

/// One field's winning value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    /// The raw value (empty when no source sets it).
    pub value: String,
    /// Its source.
    pub source: Source,
}

impl Layers {
    /// The effective Server URL, raw.
    pub fn server_url(&self) -> Chosen {
        self.choose(|layer| layer.server_url.as_deref())
    }

    /// The effective browser name, raw.
    pub fn browser_name(&self) -> Chosen {
        self.choose(|layer| layer.browser_name.as_deref())
    }

    /// The effective access token, raw. Never log it.
    pub fn access_token(&self) -> Chosen {
        self.choose(|layer| layer.access_token.as_deref())
    }

    /// The effective pairing code, raw. Never log it.
    pub fn pairing_code(&self) -> Chosen {
        self.choose(|layer| layer.pairing_code.as_deref())
    }

    /// What the connection should use: the normalised URL (or why it cannot be used), the
    /// browser name to announce, the checked access token and the checked pairing code.
    ///
    /// A token is never sent over a plain `ws://` connection: anyone on the way could read it,
    /// and on this machine nothing would vouch for the program listening there (a local hub
    /// proves itself by pairing instead, and takes no token).
    pub fn target(&self) -> ConnectTarget {
        let url = normalize_server_url(&self.server_url().value);
        let mut token = validate_access_token(&self.access_token().value);
        if let (Ok(Some(url)), Ok(Some(_))) = (&url, &token)
            && url.starts_with("ws://")
        {
            token = Err(TokenError::Unencrypted);
        }
        let code = self.pairing_code().value;
        ConnectTarget {
            url,
            browser_name: sanitize_browser_name(&self.browser_name().value),
            token,
            pairing_code: match code.trim() {
                "" => Ok(None),
                code => PairingCode::parse(code).map(Some),
            },
            pairing_code_managed: self.pairing_code().source == Source::Managed,
        }
    }

    /// Managed and user-saved values win even when empty: an administrator may blank a field on
    /// purpose, and a user who clears the URL and presses Connect means "disconnect", not "fall
    /// back to the bundled file". A bundled empty string is the same as absent.
    fn choose(&self, field: impl Fn(&ConfigLayer) -> Option<&str>) -> Chosen {
        let candidates = [
            (field(&self.managed), Source::Managed),
            (field(&self.user), Source::User),
            (
                field(&self.bundled).filter(|v| !v.trim().is_empty()),
                Source::Bundled,
            ),
        ];
        candidates
            .into_iter()
            .find_map(|(value, source)| {
                value.map(|v| Chosen {
                    value: v.to_owned(),
                    source,
                })
            })
            .unwrap_or(Chosen {
                value: String::new(),
                source: Source::Default,
            })
    }
}

/// What the connection dials and announces, derived from [`Layers`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectTarget {
    /// `Ok(None)`: not configured; `Err`: configured with an unusable URL.
    pub url: Result<Option<String>, UrlError>,
    /// The name sent in `Hello`.
    pub browser_name: String,
    /// `Ok(None)`: dial without a token (local mode); `Err`: a token that cannot be sent.
    pub token: Result<Option<AccessToken>, TokenError>,
    /// `Ok(None)`: no code configured; `Err`: a code that cannot be one.
    pub pairing_code: Result<Option<PairingCode>, CodeError>,
    /// The code comes from the administrator's policy (managed storage), a file other users of
    /// the machine may read: the hello says so, and the hub pairs it only when it was made for
    /// this browser (`tabwire-hub pair --browser-id`).
    pub pairing_code_managed: bool,
}

/// Why a browser name typed in the popup was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameError {
    /// Longer than the hub accepts.
    TooLong,
    /// Contains a control character (a newline, a tab …) or a format character (a bidi
    /// override, a zero-width space …), which would hide or reorder what the name says.
    ControlCharacter,
}

impl std::fmt::Display for NameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NameError::TooLong => write!(
                f,
                "the browser name must be at most {MAX_IDENTITY_LEN} characters"
            ),
            NameError::ControlCharacter => f.write_str(
                "the browser name must not contain control characters or format characters (bidi \
                 overrides, zero-width)",
            ),
        }
    }
}

impl std::error::Error for NameError {}

/// Checks a name typed in the popup, with the same limits as the hub's `check_hello`, so the
/// person typing it hears about a problem at once instead of through a refused connection.
/// Returns the trimmed name, or the default when it is blank: the hub refuses a blank name,
/// and a browser nobody named is still told apart by its ID.
pub fn validate_browser_name(input: &str) -> Result<String, NameError> {
    let trimmed = input.trim();
    if trimmed.chars().any(is_hidden_char) {
        return Err(NameError::ControlCharacter);
    }
    if trimmed.chars().count() > MAX_IDENTITY_LEN {
        return Err(NameError::TooLong);
    }
    // Blanks the hub would refuse (U+2800, say, or lone combining marks) count as no name.
    Ok(if !has_visible_char(trimmed) {
        DEFAULT_BROWSER_NAME.to_owned()
    } else {
        trimmed.to_owned()
    })
}

/// Makes any configured name acceptable to the hub. Names from a policy or a bundled file are
/// not typed where an error could be shown, so a bad one is repaired with the hub's own rule
/// (the protocol's `shown_name`: control and format characters dropped, cut to the limit)
/// rather than left to make every connection fail; a name with nothing left, or none at all
/// (a new install, a launched browser's bundled file without one), is [`DEFAULT_BROWSER_NAME`],
/// since the hub refuses a blank one.
pub fn sanitize_browser_name(input: &str) -> String {
    let cut = shown_name(input, MAX_IDENTITY_LEN);
    if cut.is_empty() {
        DEFAULT_BROWSER_NAME.to_owned()
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(url: Option<&str>, name: Option<&str>) -> ConfigLayer {
        ConfigLayer {
            server_url: url.map(Into::into),
            browser_name: name.map(Into::into),
            ..ConfigLayer::default()
        }
    }

    fn token_layer(token: Option<&str>) -> ConfigLayer {
        ConfigLayer {
            access_token: token.map(Into::into),
            ..ConfigLayer::default()
        }
    }

    #[test]
    fn managed_beats_user_beats_bundled_per_field() {
        let layers = Layers {
            managed: layer(None, Some("Fleet")),
            user: layer(Some("ws://user:1"), Some("Mine")),
            bundled: layer(Some("ws://bundled:1"), Some("Bundled")),
        };
        assert_eq!(layers.server_url().value, "ws://user:1");
        assert_eq!(layers.server_url().source, Source::User);
        assert_eq!(layers.browser_name().value, "Fleet");
        assert_eq!(layers.browser_name().source, Source::Managed);
    }

    #[test]
    fn bundled_applies_when_nothing_else_is_set() {
        let layers = Layers {
            bundled: layer(Some("http://127.0.0.1:9"), None),
            ..Layers::default()
        };
        let target = layers.target();
        assert_eq!(target.url, Ok(Some("ws://127.0.0.1:9/browser".into())));
        assert_eq!(target.browser_name, "Chrome");
        assert_eq!(layers.browser_name().source, Source::Default);
    }

    #[test]
    fn a_user_cleared_url_does_not_fall_back_to_bundled() {
        let layers = Layers {
            user: layer(Some(""), None),
            bundled: layer(Some("ws://bundled:1"), None),
            ..Layers::default()
        };
        assert_eq!(layers.target().url, Ok(None));
        let blank_bundle = Layers {
            bundled: layer(Some("  "), None),
            ..Layers::default()
        };
        assert_eq!(blank_bundle.server_url().source, Source::Default);
    }

    #[test]
    fn a_bad_url_is_reported_not_dialled() {
        let layers = Layers {
            managed: layer(Some("ftp://x"), None),
            ..Layers::default()
        };
        assert!(layers.target().url.is_err());
    }

    #[test]
    fn popup_names_are_validated() {
        assert_eq!(validate_browser_name("  Work  ").unwrap(), "Work");
        assert_eq!(validate_browser_name("").unwrap(), "Chrome");
        assert_eq!(validate_browser_name("\u{2800} \u{301}").unwrap(), "Chrome");
        assert!(validate_browser_name("Wo\u{34F}rk").is_err());
        assert_eq!(
            validate_browser_name("Work\u{202E}knaB"),
            Err(NameError::ControlCharacter)
        );
        assert_eq!(
            validate_browser_name("a\nb"),
            Err(NameError::ControlCharacter)
        );
        assert_eq!(
            validate_browser_name(&"x".repeat(MAX_IDENTITY_LEN + 1)),
            Err(NameError::TooLong)
        );
        assert!(validate_browser_name(&"é".repeat(MAX_IDENTITY_LEN)).is_ok());
    }

    #[test]
    fn configured_names_are_repaired() {
        assert_eq!(sanitize_browser_name("Wo\trk"), "Wo rk");
        assert_eq!(sanitize_browser_name(" \n "), "Chrome");
        assert_eq!(sanitize_browser_name("Fleet\u{202E}\u{200B}"), "Fleet");
        assert_eq!(sanitize_browser_name("\u{2066}"), "Chrome");
        assert_eq!(sanitize_browser_name("\u{3164}\u{2800}\u{FFA0}"), "Chrome");
        assert_eq!(
            sanitize_browser_name(&"y".repeat(100)).chars().count(),
            MAX_IDENTITY_LEN
        );
    }

    #[test]
    fn tokens_follow_the_same_precedence() {
        let layers = Layers {
            managed: token_layer(None),
            user: token_layer(Some("user.tok")),
            bundled: token_layer(Some("bundled.tok")),
        };
        assert_eq!(layers.access_token().source, Source::User);
        assert_eq!(layers.target().token.unwrap().unwrap().as_str(), "user.tok");
        let managed = Layers {
            managed: token_layer(Some("policy.tok")),
            ..layers.clone()
        };
        assert_eq!(managed.access_token().source, Source::Managed);
        assert_eq!(
            managed.target().token.unwrap().unwrap().as_str(),
            "policy.tok"
        );
        // A forgotten token (saved as "") does not fall back to the bundled one.
        let forgotten = Layers {
            user: token_layer(Some("")),
            ..layers.clone()
        };
        assert_eq!(forgotten.target().token, Ok(None));
        let bundled_only = Layers {
            bundled: token_layer(Some("bundled.tok")),
            ..Layers::default()
        };
        assert_eq!(bundled_only.access_token().source, Source::Bundled);
        assert_eq!(Layers::default().target().token, Ok(None));
    }

    #[test]
    fn a_token_change_changes_the_target() {
        let before = Layers {
            user: layer(Some("ws://h:1"), None),
            ..Layers::default()
        };
        let mut after = before.clone();
        after.user.access_token = Some("new.tok".into());
        assert_ne!(before.target(), after.target());
        let mut bad = before.clone();
        bad.managed.access_token = Some("not a token".into());
        assert_eq!(bad.target().token, Err(TokenError::BadCharacter(4)));
    }

    #[test]
    fn a_token_never_travels_unencrypted() {
        let with = |url: &str| Layers {
            user: ConfigLayer {
                server_url: Some(url.into()),
                access_token: Some("a.b.c".into()),
                ..ConfigLayer::default()
            },
            ..Layers::default()
        };
        for plain in [
            "ws://hub.example",
            "http://10.0.0.5:17841",
            "ws://127.0.0.1:17841",
            "ws://localhost:9",
        ] {
            assert_eq!(
                with(plain).target().token,
                Err(TokenError::Unencrypted),
                "{plain}"
            );
        }
        for fine in [
            "wss://hub.example",
            "https://hub.example/team",
            "wss://localhost:1",
        ] {
            assert!(with(fine).target().token.unwrap().is_some(), "{fine}");
        }
        assert!(TokenError::Unencrypted.to_string().contains("wss://"));
    }

    #[test]
    fn pairing_codes_are_checked_and_hidden() {
        let layers = Layers {
            bundled: ConfigLayer {
                pairing_code: Some("jks5y-881sg-6cgya-zj027".into()),
                ..ConfigLayer::default()
            },
            ..Layers::default()
        };
        let code = layers.target().pairing_code.unwrap().unwrap();
        assert_eq!(code.as_str(), "JKS5Y881SG6CGYAZJ027");
        assert!(!layers.target().pairing_code_managed);
        // From the policy the code is said to be managed, so the hub pairs it only when it was
        // made for this browser.
        let managed = Layers {
            managed: ConfigLayer {
                pairing_code: Some("jks5y-881sg-6cgya-zj027".into()),
                ..ConfigLayer::default()
            },
            ..Layers::default()
        };
        assert!(managed.target().pairing_code_managed);
        assert!(!format!("{layers:?}").contains("jks5y"));
        let bad = Layers {
            user: ConfigLayer {
                pairing_code: Some("12345".into()),
                ..ConfigLayer::default()
            },
            ..layers.clone()
        };
        assert!(bad.target().pairing_code.is_err());
        let parsed: ConfigLayer =
            serde_json::from_str(r#"{"serverUrl":"ws://h:1","pairingCode":"X"}"#).unwrap();
        assert_eq!(parsed.pairing_code.as_deref(), Some("X"));
    }

    #[test]
    fn debug_hides_the_token() {
        let layers = Layers {
            user: token_layer(Some("very.secret")),
            ..Layers::default()
        };
        assert!(!format!("{layers:?}").contains("very.secret"));
        assert!(!format!("{:?}", layers.target()).contains("very.secret"));
    }

    #[test]
    fn config_json_shape() {
        let parsed: ConfigLayer =
            serde_json::from_str(r#"{"serverUrl":"ws://h:1","browserName":"T","extra":1}"#)
                .unwrap();
        assert_eq!(parsed, layer(Some("ws://h:1"), Some("T")));
        let with_token: ConfigLayer =
            serde_json::from_str(r#"{"serverUrl":"ws://h:1","accessToken":"a.b.c"}"#).unwrap();
        assert_eq!(with_token.access_token.as_deref(), Some("a.b.c"));
    }
}
