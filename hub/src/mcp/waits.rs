//! Navigation and waits: `navigate_and_wait`, `wait_for_text`, `wait_for_url`,
//! `wait_for_network_idle`, and the `waitFor` step of a batch (docs/actions.md).
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

/// Implements [`ActionTool`] for a wait: its condition, bounded by `timeoutMs`.
macro_rules! wait_tool {
    ($args:ty) => {
        impl ActionTool for $args {
            const DEFAULT_TIMEOUT_MS: u32 = WAIT_TIMEOUT_MS;
            const DEADLINE_MARGIN_MS: u32 = WAIT_MARGIN_MS;

            fn into_action(self, timeout_ms: u32) -> Result<Action, ToolError> {
                Ok(Action::Wait {
                    condition: self.condition()?,
                    timeout_ms,
                })
            }
        }
    };
}

/// Arguments of wait_for_text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitForTextArgs {
    /// Case-sensitive.
    pub text: String,
    pub gone: Option<bool>,
}

pub const WAIT_FOR_TEXT: &str = "Wait until the page's visible text contains text (gone: no longer \
does).";

impl WaitForTextArgs {
    fn condition(self) -> Result<WaitCondition, ToolError> {
        args::text(&self.text, "text", true)?;
        Ok(WaitCondition::Text {
            text: self.text,
            gone: self.gone.unwrap_or(false),
        })
    }
}

wait_tool!(WaitForTextArgs);

/// Arguments of wait_for_url.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitForUrlArgs {
    pub pattern: String,
}

pub const WAIT_FOR_URL: &str = "Wait until the tab's URL matches pattern (equal, contained, or \
with * wildcards).";

impl WaitForUrlArgs {
    fn condition(self) -> Result<WaitCondition, ToolError> {
        args::text(&self.pattern, "pattern", true)?;
        Ok(WaitCondition::Url {
            pattern: self.pattern,
        })
    }
}

wait_tool!(WaitForUrlArgs);

/// Arguments of wait_for_network_idle.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitForNetworkIdleArgs {
    pub idle_ms: Option<u32>,
}

pub const WAIT_FOR_NETWORK_IDLE: &str = "Wait until no request has been in flight for idleMs \
(100-10000, default 500).";

impl WaitForNetworkIdleArgs {
    fn condition(self) -> Result<WaitCondition, ToolError> {
        Ok(WaitCondition::NetworkIdle {
            idle_ms: in_range(self.idle_ms, DEFAULT_IDLE_MS, 100, 10_000, "idleMs")?,
        })
    }
}

wait_tool!(WaitForNetworkIdleArgs);

/// What a batch's `waitFor` step waits for.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WaitFor {
    /// An element matching a CSS selector is rendered (or gone).
    Selector,
    /// Visible text appears (or disappears).
    Text,
    /// The URL matches.
    Url,
    /// The network is quiet.
    NetworkIdle,
}

/// A batch's `waitFor` step: `{for, selector?|text?|pattern?|idleMs?, gone?}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitForStep {
    /// What to wait for.
    #[serde(rename = "for")]
    pub what: WaitFor,
    /// For `selector`: a CSS selector.
    pub selector: Option<String>,
    /// For `text`.
    pub text: Option<String>,
    /// For `url`.
    pub pattern: Option<String>,
    /// For `networkIdle`.
    pub idle_ms: Option<u32>,
    /// For `selector` and `text`: wait until gone.
    pub gone: Option<bool>,
}

impl WaitForStep {
    /// The step's condition. Each `for` takes its own fields only, so a misplaced one (say
    /// `text` with `for: "url"`) is an error rather than silently ignored.
    pub fn condition(self) -> Result<WaitCondition, ToolError> {
        let (name, allowed): (&str, &[&str]) = match self.what {
            WaitFor::Selector => ("selector", &["selector", "gone"]),
            WaitFor::Text => ("text", &["text", "gone"]),
            WaitFor::Url => ("url", &["pattern"]),
            WaitFor::NetworkIdle => ("networkIdle", &["idleMs"]),
        };
        let given = [
            ("selector", self.selector.is_some()),
            ("text", self.text.is_some()),
            ("pattern", self.pattern.is_some()),
            ("idleMs", self.idle_ms.is_some()),
            ("gone", self.gone.is_some()),
        ];
        if let Some((field, _)) = given
            .iter()
            .find(|(field, present)| *present && !allowed.contains(field))
        {
            return Err(ToolError::invalid(format!(
                "for \"{name}\" takes {} only, not {field}",
                allowed.join(" and ")
            )));
        }
        let missing = |field: &str| ToolError::invalid(format!("for \"{name}\" needs {field}"));
        match self.what {
            WaitFor::Selector => Ok(WaitCondition::Selector {
                css: args::css(
                    &self.selector.ok_or_else(|| missing("selector"))?,
                    "selector",
                )?,
                hidden: self.gone.unwrap_or(false),
            }),
            WaitFor::Text => WaitForTextArgs {
                text: self.text.ok_or_else(|| missing("text"))?,
                gone: self.gone,
            }
            .condition(),
            WaitFor::Url => WaitForUrlArgs {
                pattern: self.pattern.ok_or_else(|| missing("pattern"))?,
            }
            .condition(),
            WaitFor::NetworkIdle => WaitForNetworkIdleArgs {
                idle_ms: self.idle_ms,
            }
            .condition(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::FileUrls;

    #[test]
    fn waits_carry_their_timeout() {
        let action = WaitForTextArgs {
            text: "Saved".into(),
            gone: None,
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
        assert_eq!(<WaitForTextArgs as ActionTool>::DEFAULT_TIMEOUT_MS, 10_000);
        assert_eq!(<WaitForUrlArgs as ActionTool>::DEADLINE_MARGIN_MS, 3000);
        let empty = WaitForTextArgs {
            text: String::new(),
            gone: Some(true),
        };
        assert!(empty.into_action(7000).is_err());
        let empty = WaitForUrlArgs {
            pattern: String::new(),
        };
        assert!(empty.into_action(7000).is_err());
    }

    #[test]
    fn network_idle_is_between_100_ms_and_10_s() {
        let idle = |ms| WaitForNetworkIdleArgs { idle_ms: ms }.condition();
        assert_eq!(
            idle(None).unwrap(),
            WaitCondition::NetworkIdle { idle_ms: 500 }
        );
        assert!(idle(Some(99)).is_err());
        assert!(idle(Some(10_001)).unwrap_err().message.contains("idleMs"));
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

    fn step(json: serde_json::Value) -> Result<WaitCondition, ToolError> {
        serde_json::from_value::<WaitForStep>(json)
            .map_err(|error| ToolError::invalid(error.to_string()))?
            .condition()
    }

    #[test]
    fn wait_for_steps_take_the_fields_of_their_kind() {
        use serde_json::json;
        assert_eq!(
            step(json!({"for": "selector", "selector": ".done", "gone": true})).unwrap(),
            WaitCondition::Selector {
                css: ".done".into(),
                hidden: true
            }
        );
        assert_eq!(
            step(json!({"for": "networkIdle"})).unwrap(),
            WaitCondition::NetworkIdle { idle_ms: 500 }
        );
        assert!(step(json!({"for": "url", "pattern": "*/home"})).is_ok());
        let error = step(json!({"for": "url", "pattern": "x", "text": "y"})).unwrap_err();
        assert!(error.message.contains("not text"), "{}", error.message);
        let error = step(json!({"for": "text"})).unwrap_err();
        assert!(error.message.contains("needs text"), "{}", error.message);
        assert!(step(json!({"for": "selector", "selector": "@e3"})).is_err());
        assert!(step(json!({"for": "pixel"})).is_err());
    }
}
