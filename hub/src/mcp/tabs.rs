//! `list_tabs` and `navigate_to`.
//!
//! `tabId` and `browserId` carry no description in the schemas: the server instructions
//! explain them once instead of in every tool (every word of `tools/list` costs tokens).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::{OpResult, Operation, TabId};

use super::envelope::{ToolError, ToolOutput, quoted};
use super::routing::{ToolContext, unexpected};

const LIST_TABS_DEADLINE: Duration = Duration::from_secs(10);
const NAVIGATE_DEADLINE: Duration = Duration::from_secs(30);
const MAX_URL_LEN: usize = 8192;

/// Arguments of list_tabs.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListTabsArgs {
    pub browser_id: Option<String>,
}

pub const LIST_TABS: &str = "List the browser's tabs: tabId, title, URL, which are active. Tab \
IDs are only unique within one browser.";

pub async fn list_tabs(ctx: &ToolContext, args: ListTabsArgs) -> Result<ToolOutput, ToolError> {
    let result = ctx
        .call(
            "list_tabs",
            args.browser_id.as_deref(),
            None,
            Operation::ListTabs,
            LIST_TABS_DEADLINE,
        )
        .await?;
    let OpResult::Tabs { tabs } = result else {
        return Err(unexpected("list_tabs"));
    };
    let text = tabs
        .iter()
        .map(|tab| {
            format!(
                "tab {}{} {} {}",
                tab.tab_id,
                if tab.active { " [active]" } else { "" },
                quoted(&tab.title),
                tab.url
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    Ok(ToolOutput {
        data: json!({ "tabs": tabs }),
        text: if tabs.is_empty() {
            "No tabs.".into()
        } else {
            text
        },
    })
}

/// Arguments of navigate_to.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NavigateArgs {
    /// Absolute http(s) or file URL, or about:blank.
    pub url: String,
    pub tab_id: Option<TabId>,
    pub browser_id: Option<String>,
}

pub const NAVIGATE_TO: &str = "Load a URL in a tab and wait until it has finished loading. Refs \
from earlier snapshots of that tab become stale.";

pub async fn navigate_to(ctx: &ToolContext, args: NavigateArgs) -> Result<ToolOutput, ToolError> {
    check_url(&args.url)?;
    let result = ctx
        .call(
            "navigate_to",
            args.browser_id.as_deref(),
            args.tab_id,
            Operation::Navigate { url: args.url },
            NAVIGATE_DEADLINE,
        )
        .await?;
    let OpResult::Navigated(navigated) = result else {
        return Err(unexpected("navigate_to"));
    };
    Ok(ToolOutput {
        text: format!(
            "tab {} loaded {} {}",
            navigated.tab_id,
            quoted(&navigated.title),
            navigated.url
        ),
        data: json!(navigated),
    })
}

/// Accepts the URLs an agent has reason to open; `javascript:`, `data:` and browser-internal
/// schemes are refused here, before anything reaches the browser.
pub(super) fn check_url(url: &str) -> Result<(), ToolError> {
    if url.len() > MAX_URL_LEN {
        return Err(ToolError::invalid(format!(
            "url is longer than {MAX_URL_LEN} characters"
        )));
    }
    let lower = url.to_ascii_lowercase();
    let allowed = ["http://", "https://", "file://"]
        .iter()
        .any(|scheme| lower.starts_with(scheme) && lower.len() > scheme.len())
        || lower == "about:blank";
    if allowed && !url.chars().any(char::is_control) {
        Ok(())
    } else {
        Err(ToolError::invalid(format!(
            "url must be an absolute http://, https:// or file:// URL, or about:blank; got {}",
            serde_json::Value::String(url.chars().take(100).collect())
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_an_agent_may_open() {
        for ok in [
            "http://127.0.0.1:8080/login.html",
            "https://example.com/a?b#c",
            "HTTPS://EXAMPLE.COM",
            "file:///tmp/x.html",
            "about:blank",
        ] {
            assert!(check_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "javascript:alert(1)",
            "data:text/html,hi",
            "chrome://settings",
            "example.com",
            "http://",
            "",
            "http://a/\nb",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }
}
