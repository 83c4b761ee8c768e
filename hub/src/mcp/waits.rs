//! Navigation and waits: `navigate_and_wait`, and `wait_for` — one tool for a selector, text, a
//! URL or network quiet, appearing or gone — which is also a batch's `waitFor` step, with the
//! same arguments (docs/actions.md).
//!
//! A wait's own timeout is `timeoutMs`, sent in the action; the request's deadline is a few
//! seconds longer, so the extension reports `WAIT_TIMEOUT` with what it saw instead of the hub
//! reporting a bare `BRIDGE_TIMEOUT`.

use schemars::JsonSchema;
use serde::Deserialize;
use tabwire_protocol::{Action, WaitCondition};

use super::act::{ActionTool, act};
use super::args::{self, ActionOptions, WaitUntil, in_range};
use super::envelope::{ToolError, ToolOutput};
use super::routing::ToolContext;
use super::tabs::check_url;
use crate::state::Destinations;

/// `timeoutMs` of navigate_and_wait when the caller gives none.
const NAVIGATE_TIMEOUT_MS: u32 = 30_000;
/// `timeoutMs` of a wait when the caller gives none.
const WAIT_TIMEOUT_MS: u32 = 10_000;
/// How much longer than its own timeout a wait's request may take.
const WAIT_MARGIN_MS: u32 = 3000;
const DEFAULT_IDLE_MS: u32 = 500;

/// Arguments of navigate_and_wait.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NavigateAndWaitArgs {
    pub url: String,
    #[schemars(extend("default" = "complete"))]
    pub wait_until: Option<WaitUntil>,
    pub wait_for: Option<String>,
}

pub const NAVIGATE_AND_WAIT: &str = "Load a URL, wait for waitUntil, then for waitFor (CSS) to \
render.";

impl NavigateAndWaitArgs {
    /// The navigation under a hub's rule for file URLs. The arguments alone do not know it, so
    /// only this has an [`ActionTool`] (and can become an action): no path sends a navigation
    /// without the rule (the tool, a batch's `navigate` step).
    pub fn under(self, destinations: Destinations) -> Navigation {
        Navigation {
            args: self,
            destinations,
        }
    }
}

/// A navigate_and_wait, or a batch's `navigate` step, with the hub's rule for file URLs.
#[derive(Debug)]
pub struct Navigation {
    args: NavigateAndWaitArgs,
    destinations: Destinations,
}

impl ActionTool for Navigation {
    const DEFAULT_TIMEOUT_MS: u32 = NAVIGATE_TIMEOUT_MS;

    fn into_action(self, _timeout_ms: u32) -> Result<Action, ToolError> {
        let navigation = self.args;
        check_url(&navigation.url, &self.destinations)?;
        Ok(Action::Navigate {
            url: navigation.url,
            wait_until: navigation.wait_until.map(Into::into).unwrap_or_default(),
            wait_for: navigation
                .wait_for
                .map(|css| args::css(&css, "waitFor"))
                .transpose()?,
        })
    }
}

/// navigate_and_wait: one action, under this hub's rule for file URLs.
pub async fn navigate_and_wait(
    ctx: &ToolContext,
    args: NavigateAndWaitArgs,
    options: ActionOptions,
) -> Result<ToolOutput, ToolError> {
    act(ctx, args.under(ctx.destinations()), options).await
}

/// Arguments of wait_for, and of a batch's `waitFor` step: exactly one of `selector`, `text`,
/// `url` and `networkIdle`, and `gone` to wait for the opposite (docs/actions.md, "Waiting").
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitForArgs {
    pub selector: Option<String>,
    pub text: Option<String>,
    pub url: Option<String>,
    #[serde(default)]
    #[schemars(schema_with = "network_idle_schema")]
    pub network_idle: Option<NetworkIdle>,
    pub gone: Option<bool>,
}

pub const WAIT_FOR: &str = "Wait until exactly one of these holds: selector (CSS) is rendered; \
text shows (case-sensitive); url matches (https://… its start, /… in its path, other text \
anywhere, * glob); networkIdle (true, or quiet ms 100-10000; true: 500). gone: until it no \
longer does (not with networkIdle). Returns what appeared as an @ref line.";

/// `networkIdle`: `true` (quiet for the default time) or the quiet time in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkIdle {
    /// `true` or `false`.
    Switch(bool),
    /// Milliseconds without a request in flight.
    QuietMs(u32),
}

impl<'de> Deserialize<'de> for NetworkIdle {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::Bool(on) => Ok(NetworkIdle::Switch(on)),
            serde_json::Value::Number(ms) => ms
                .as_u64()
                .and_then(|ms| u32::try_from(ms).ok())
                .map(NetworkIdle::QuietMs)
                .ok_or_else(|| {
                    D::Error::custom(format!("networkIdle: {ms} is no whole number of ms"))
                }),
            other => Err(D::Error::custom(format!(
                "networkIdle must be true or the quiet time in ms; got {other}"
            ))),
        }
    }
}

fn network_idle_schema(_generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"anyOf": [{"type": "boolean"}, {"type": "integer"}]})
}

impl WaitForArgs {
    /// The condition: exactly one thing to wait for, and `gone` only where it means something.
    pub fn condition(self) -> Result<WaitCondition, ToolError> {
        let given: Vec<&str> = [
            ("selector", self.selector.is_some()),
            ("text", self.text.is_some()),
            ("url", self.url.is_some()),
            ("networkIdle", self.network_idle.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, present)| present.then_some(name))
        .collect();
        if given.len() != 1 {
            return Err(ToolError::invalid(format!(
                "give exactly one of selector, text, url and networkIdle to wait for; got {}",
                if given.is_empty() {
                    "none".to_owned()
                } else {
                    given.join(" and ")
                }
            )));
        }
        let gone = self.gone.unwrap_or(false);
        if let Some(css) = self.selector {
            return Ok(WaitCondition::Selector {
                css: args::css(&css, "selector")?,
                hidden: gone,
            });
        }
        if let Some(text) = self.text {
            args::text(&text, "text", true)?;
            return Ok(WaitCondition::Text { text, gone });
        }
        if let Some(pattern) = self.url {
            args::text(&pattern, "url", true)?;
            return Ok(WaitCondition::Url { pattern, gone });
        }
        if self.gone.is_some() {
            return Err(ToolError::invalid(
                "gone does not go with networkIdle: the network is quiet or it is not; wait for \
                 networkIdle alone",
            ));
        }
        let idle_ms = match self.network_idle {
            Some(NetworkIdle::Switch(true)) => DEFAULT_IDLE_MS,
            Some(NetworkIdle::QuietMs(ms)) => {
                in_range(Some(ms), DEFAULT_IDLE_MS, 100, 10_000, "networkIdle")?
            }
            Some(NetworkIdle::Switch(false)) | None => {
                return Err(ToolError::invalid(
                    "networkIdle: false waits for nothing; give true, or the quiet time in ms \
                     (100-10000)",
                ));
            }
        };
        Ok(WaitCondition::NetworkIdle { idle_ms })
    }
}

impl ActionTool for WaitForArgs {
    const DEFAULT_TIMEOUT_MS: u32 = WAIT_TIMEOUT_MS;
    const DEADLINE_MARGIN_MS: u32 = WAIT_MARGIN_MS;

    fn into_action(self, timeout_ms: u32) -> Result<Action, ToolError> {
        Ok(Action::Wait {
            condition: self.condition()?,
            timeout_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::FileUrls;
    use serde_json::json;
    use tabwire_protocol::ErrorCode;

    fn wait(args: serde_json::Value) -> Result<WaitCondition, ToolError> {
        serde_json::from_value::<WaitForArgs>(args)
            .map_err(|error| ToolError::invalid(error.to_string()))?
            .condition()
    }

    #[test]
    fn waits_carry_their_timeout() {
        let action = WaitForArgs {
            text: Some("Saved".into()),
            ..WaitForArgs::default()
        }
        .into_action(7000)
        .unwrap();
        assert_eq!(
            action,
            Action::Wait {
                condition: WaitCondition::Text {
                    text: "Saved".into(),
                    gone: false
                },
                timeout_ms: 7000
            }
        );
        assert_eq!(<WaitForArgs as ActionTool>::DEFAULT_TIMEOUT_MS, 10_000);
        assert_eq!(<WaitForArgs as ActionTool>::DEADLINE_MARGIN_MS, 3000);
    }

    #[test]
    fn each_thing_to_wait_for_becomes_its_condition() {
        assert_eq!(
            wait(json!({"selector": ".done", "gone": true})).unwrap(),
            WaitCondition::Selector {
                css: ".done".into(),
                hidden: true
            }
        );
        assert_eq!(
            wait(json!({"text": "Saved"})).unwrap(),
            WaitCondition::Text {
                text: "Saved".into(),
                gone: false
            }
        );
        assert_eq!(
            wait(json!({"url": "*/home", "gone": true})).unwrap(),
            WaitCondition::Url {
                pattern: "*/home".into(),
                gone: true
            }
        );
        assert_eq!(
            wait(json!({"networkIdle": true})).unwrap(),
            WaitCondition::NetworkIdle { idle_ms: 500 }
        );
        assert_eq!(
            wait(json!({"networkIdle": 800})).unwrap(),
            WaitCondition::NetworkIdle { idle_ms: 800 }
        );
    }

    #[test]
    fn exactly_one_thing_is_waited_for_and_gone_only_where_it_means_something() {
        for (args, says) in [
            (json!({}), "got none"),
            (json!({"gone": true}), "got none"),
            (json!({"text": "a", "url": "b"}), "got text and url"),
            (
                json!({"selector": "#a", "networkIdle": true}),
                "got selector and networkIdle",
            ),
            (
                json!({"networkIdle": true, "gone": true}),
                "gone does not go with networkIdle",
            ),
            (
                json!({"networkIdle": true, "gone": false}),
                "gone does not go with networkIdle",
            ),
            (json!({"networkIdle": false}), "waits for nothing"),
            (
                json!({"networkIdle": 99}),
                "networkIdle must be between 100 and 10000",
            ),
            (json!({"networkIdle": 10_001}), "between 100 and 10000"),
            (json!({"networkIdle": 1.5}), "no whole number"),
            (json!({"networkIdle": "yes"}), "networkIdle must be true"),
            (json!({"text": ""}), "text is empty"),
            (json!({"url": ""}), "url is empty"),
            (json!({"selector": "@e3"}), "CSS"),
            (json!({"selector": "text=Save"}), "Playwright"),
            (json!({"pattern": "x"}), "unknown field"),
            (json!({"for": "text", "text": "x"}), "unknown field"),
        ] {
            let error = wait(args.clone()).unwrap_err();
            assert!(
                matches!(
                    error.code,
                    ErrorCode::InvalidArgument | ErrorCode::InvalidSelector
                ),
                "{args}: {error:?}"
            );
            assert!(error.message.contains(says), "{args}: {}", error.message);
        }
    }

    #[test]
    fn navigation_checks_the_url_like_navigate_to() {
        let navigate = |url: &str, file_urls| {
            NavigateAndWaitArgs {
                url: url.into(),
                wait_until: Some(WaitUntil::Domcontentloaded),
                wait_for: None,
            }
            .under(Destinations::from(file_urls))
            .into_action(30_000)
        };
        assert!(navigate("https://example.com/", FileUrls::Refused).is_ok());
        assert!(navigate("javascript:alert(1)", FileUrls::Allowed).is_err());
        assert!(navigate("file:///etc/hosts", FileUrls::Allowed).is_ok());
        assert!(navigate("file:///etc/hosts", FileUrls::Refused).is_err());
        assert_eq!(<Navigation as ActionTool>::DEFAULT_TIMEOUT_MS, 30_000);
    }
}
