//! `list_browsers` and `select_browser`.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tabwire_protocol::ErrorCode;

use super::envelope::{ToolError, ToolOutput, quote_if_spaced};
use super::routing::ToolContext;

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListBrowsersArgs {}

pub const LIST_BROWSERS: &str = "List the Chrome profiles known to this hub: browserId, name, \
connected, selected. With several connected, call select_browser before other tools.";

pub async fn list_browsers(
    ctx: &ToolContext,
    _args: ListBrowsersArgs,
) -> Result<ToolOutput, ToolError> {
    let selected = ctx.session.selected();
    let browsers = ctx.account.registry.list();
    let mut text = String::new();
    let mut data = Vec::new();
    for browser in &browsers {
        let is_selected = selected.as_deref() == Some(browser.browser_id.as_str());
        text.push_str(&format!(
            "browserId={} name={} {}{}\n",
            browser.browser_id,
            quote_if_spaced(&browser.name),
            if browser.connected {
                "connected"
            } else {
                "disconnected"
            },
            if is_selected { " selected" } else { "" },
        ));
        let mut entry = json!({
            "browserId": browser.browser_id,
            "name": browser.name,
            "connected": browser.connected,
            "selected": is_selected,
            "extensionVersion": browser.extension_version,
            "chromeVersion": browser.chrome_version,
        });
        if let Some(since) = browser.connected_for {
            entry["connectedForSecs"] = json!(since.as_secs());
        }
        data.push(entry);
    }
    // A selection restored after a hub restart may name a browser that has not reconnected
    // yet; it is still this session's browser and is listed as such.
    if let Some(selected) = selected.as_deref()
        && !browsers.iter().any(|b| b.browser_id == selected)
    {
        text.push_str(&format!(
            "browserId={selected} (not connected since the hub started) disconnected selected\n"
        ));
        data.push(json!({
            "browserId": selected, "name": null, "connected": false, "selected": true,
        }));
    }
    if data.is_empty() {
        text = format!("No browser has connected. {}.", ctx.hub.connect_hint());
    }
    Ok(ToolOutput::new(
        json!({ "browsers": Value::Array(data) }),
        text.trim_end().to_owned(),
    ))
}

/// Arguments of select_browser.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelectBrowserArgs {
    /// From list_browsers.
    pub browser_id: String,
}

pub const SELECT_BROWSER: &str = "Route this session's browser tools to one browser from \
list_browsers.";

pub async fn select_browser(
    ctx: &ToolContext,
    args: SelectBrowserArgs,
) -> Result<ToolOutput, ToolError> {
    let Some(browser) = ctx.account.registry.get(&args.browser_id) else {
        return Err(ToolError::new(
            ErrorCode::BrowserNotFound,
            format!(
                "no browser with ID {} is known to this hub; call list_browsers",
                args.browser_id
            ),
        ));
    };
    if !browser.connected {
        return Err(ToolError::new(
            ErrorCode::BrowserDisconnected,
            format!(
                "browser {} ({}) is not connected; select a connected browser or wait for it to \
                 reconnect",
                quote_if_spaced(&browser.name),
                browser.browser_id
            ),
        ));
    }
    ctx.session.select(&browser.browser_id);
    tracing::info!(session = ctx.session.id(), browser = %browser.browser_id, "browser selected");
    Ok(ToolOutput::new(
        json!({"browserId": browser.browser_id, "name": browser.name}),
        format!(
            "Selected {} ({}).",
            quote_if_spaced(&browser.name),
            browser.browser_id
        ),
    ))
}
