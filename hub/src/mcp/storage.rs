//! Storage (SPEC §6): `get_cookies` and `get_local_storage`.
//!
//! The extension reads the entries and cuts them to the budget; the hub checks the arguments
//! and renders one `name=value flags…` line per entry. The data is the protocol's struct as it
//! came.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tabwire_protocol::{Ask, GetCookies, GetLocalStorage, StorageEntries};

use super::args::in_range;
use super::capture::{DEADLINE, MIN_CHARS, cut, short_text};
use super::envelope::{ToolError, ToolOutput, quote_if_spaced, quoted};
use super::routing::ToolContext;
use crate::state::FileUrls;

const DEFAULT_STORAGE_CHARS: u32 = 4000;
const MAX_STORAGE_CHARS: u32 = 20_000;

/// Arguments of get_cookies.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CookiesArgs {
    pub url: Option<String>,
    pub name: Option<String>,
    #[schemars(extend("default" = 4000))]
    pub max_chars: Option<u32>,
}

pub const GET_COOKIES: &str = "Cookies for url (default: the tab's URL), or one by name.";

pub async fn get_cookies(ctx: &ToolContext, args: CookiesArgs) -> Result<ToolOutput, ToolError> {
    if let Some(url) = &args.url {
        cookie_url(url)?;
    }
    let request = GetCookies {
        url: args.url,
        name: short_text(args.name, "name")?,
        max_chars: storage_chars(args.max_chars)?,
    };
    read_storage(ctx, "cookies", request).await
}

/// Cookies belong to http(s) URLs. (Reading cookies opens no URL: a file URL is refused just
/// below, as no cookie's, whatever the hub's rule for opening one.)
fn cookie_url(url: &str) -> Result<(), ToolError> {
    super::tabs::check_url(url, &FileUrls::Allowed.into())?;
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        Ok(())
    } else {
        Err(ToolError::invalid(format!(
            "url must be an http:// or https:// URL for cookies; got {}",
            quoted(&cut(url, 100))
        )))
    }
}

fn storage_chars(max_chars: Option<u32>) -> Result<u32, ToolError> {
    in_range(
        max_chars,
        DEFAULT_STORAGE_CHARS,
        MIN_CHARS,
        MAX_STORAGE_CHARS,
        "maxChars",
    )
}

/// Arguments of get_local_storage.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalStorageArgs {
    /// Key contains.
    pub filter: Option<String>,
    #[schemars(extend("default" = 4000))]
    pub max_chars: Option<u32>,
}

pub const GET_LOCAL_STORAGE: &str = "The tab's localStorage entries.";

pub async fn get_local_storage(
    ctx: &ToolContext,
    args: LocalStorageArgs,
) -> Result<ToolOutput, ToolError> {
    let request = GetLocalStorage {
        filter: short_text(args.filter, "filter")?,
        max_chars: storage_chars(args.max_chars)?,
    };
    read_storage(ctx, "localStorage entries", request).await
}

/// Reads cookies or storage entries and renders them.
async fn read_storage<A, E>(
    ctx: &ToolContext,
    noun: &str,
    request: A,
) -> Result<ToolOutput, ToolError>
where
    A: Ask<Answer = StorageEntries<E>>,
    E: Serialize,
{
    let entries = ctx.call(request, DEADLINE).await?;
    let text = render_storage(noun, &entries);
    Ok(ToolOutput::new(json!(entries), text))
}

/// `tab 4 cookies for https://x/ (2)` and one `name=value flags…` line per entry.
fn render_storage<E: Serialize>(noun: &str, entries: &StorageEntries<E>) -> String {
    let shown = entries.entries.len();
    let mut lines = vec![if shown == 0 && entries.total == 0 {
        format!("tab {}: no {noun} for {}", entries.tab_id, entries.origin)
    } else {
        format!(
            "tab {} {noun} for {} ({})",
            entries.tab_id, entries.origin, entries.total
        )
    }];
    lines.extend(
        entries
            .entries
            .iter()
            .map(|entry| entry_line(&serde_json::to_value(entry).unwrap_or_default())),
    );
    if entries.truncated {
        lines.push(format!(
            "[{shown} of {} shown, values may be cut: raise maxChars or filter]",
            entries.total
        ));
    }
    lines.join("\n")
}

/// `name=value domain=.x.com path=/ secure httpOnly`: the name (or key) and value first, then
/// the other fields in the order of their names; true flags by name alone, false ones left out.
fn entry_line(entry: &Value) -> String {
    let Value::Object(fields) = entry else {
        return entry.to_string();
    };
    let mut parts = Vec::new();
    let key = ["name", "key"]
        .into_iter()
        .find(|key| fields.get(*key).is_some_and(Value::is_string));
    if let Some(key) = key {
        let name = fields[key].as_str().unwrap_or_default();
        let value = match fields.get("value") {
            Some(Value::String(value)) => quote_if_spaced(value),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        parts.push(format!("{}={value}", quote_if_spaced(name)));
    }
    for (name, value) in fields {
        if Some(name.as_str()) == key || (key.is_some() && name == "value") {
            continue;
        }
        match value {
            Value::Bool(true) => parts.push(name.clone()),
            Value::Bool(false) | Value::Null => {}
            Value::String(s) => parts.push(format!("{name}={}", quote_if_spaced(s))),
            other => parts.push(format!("{name}={other}")),
        }
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tabwire_protocol::{Cookie, StorageEntry};

    fn typed<E: serde::de::DeserializeOwned>(entries: Vec<Value>) -> Vec<E> {
        entries
            .into_iter()
            .map(|entry| serde_json::from_value(entry).unwrap())
            .collect()
    }

    #[test]
    fn cookies_and_storage_render_as_name_value_lines() {
        let cookies = StorageEntries::<Cookie> {
            tab_id: 4,
            origin: "https://x.test/".into(),
            entries: typed(vec![
                json!({"name": "sid", "value": "abc", "domain": ".x.test", "path": "/",
                       "secure": true, "httpOnly": true, "session": false}),
                json!({"name": "pref", "value": "a b", "domain": ".x.test", "path": "/",
                       "secure": false, "httpOnly": false}),
            ]),
            total: 3,
            truncated: true,
        };
        assert_eq!(
            render_storage("cookies", &cookies),
            "tab 4 cookies for https://x.test/ (3)\n\
             sid=abc domain=.x.test httpOnly path=/ secure\n\
             pref=\"a b\" domain=.x.test path=/\n\
             [2 of 3 shown, values may be cut: raise maxChars or filter]"
        );
        let storage = StorageEntries::<StorageEntry> {
            tab_id: 4,
            origin: "https://x.test".into(),
            entries: typed(vec![json!({"key": "theme", "value": "dark"})]),
            total: 1,
            truncated: false,
        };
        assert_eq!(
            render_storage("localStorage entries", &storage),
            "tab 4 localStorage entries for https://x.test (1)\ntheme=dark"
        );
        let empty = StorageEntries {
            entries: vec![],
            total: 0,
            ..storage
        };
        assert_eq!(
            render_storage("localStorage entries", &empty),
            "tab 4: no localStorage entries for https://x.test"
        );
    }

    #[test]
    fn cookie_urls_are_http() {
        assert!(cookie_url("https://x.test/a").is_ok());
        assert!(cookie_url("file:///tmp/a").is_err());
        assert!(cookie_url("about:blank").is_err());
        assert!(cookie_url("javascript:alert(1)").is_err());
        assert!(storage_chars(Some(20_001)).is_err());
        assert_eq!(storage_chars(None).unwrap(), 4000);
    }
}
