//! Cookies as bounded entries: what `Network.getCookies` reports for a URL, filtered by name,
//! values capped, the list cut to a character budget.
//!
//! Entries are `{name, value, valueTruncated?, domain, path, expires?, session?, httpOnly,
//! secure, sameSite?}`; `expires` is in seconds since the epoch and absent for session cookies.
//! Cookie values are often long opaque tokens: the first 200 characters identify one, and an
//! agent that needs more can read it in the page.

use serde::Deserialize;
use tabwire_protocol::Cookie as CookieEntry;

use crate::ops::budget::{Fitted, fill};
use crate::text::cap;

/// Longest value kept.
const VALUE_CHARS: usize = 200;
/// Longest name, domain or path kept.
const FIELD_CHARS: usize = 200;

/// `Network.getCookies`' answer.
#[derive(Debug, Default, Deserialize)]
pub struct CookieList {
    /// The cookies.
    #[serde(default)]
    pub cookies: Vec<Cookie>,
}

/// A CDP `Network.Cookie`, the fields read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cookie {
    name: String,
    #[serde(default)]
    value: String,
    #[serde(default)]
    domain: String,
    #[serde(default)]
    path: String,
    /// Seconds since the epoch; -1 for a session cookie.
    #[serde(default)]
    expires: f64,
    #[serde(default)]
    http_only: bool,
    #[serde(default)]
    secure: bool,
    #[serde(default)]
    session: bool,
    #[serde(default)]
    same_site: Option<String>,
}

/// The entries of a cookie read.
#[derive(Debug, PartialEq)]
pub struct Entries {
    /// Within the budget.
    pub entries: Vec<CookieEntry>,
    /// Cookies with the name asked for (all when none was).
    pub total: u32,
    /// The budget cut the list, or a value was capped.
    pub truncated: bool,
}

/// The entries for `cookies`, only those named `name` when given, within `max_chars` (at least
/// one entry, cut to fit when it alone exceeds the budget).
pub fn entries(cookies: Vec<Cookie>, name: Option<&str>, max_chars: usize) -> Entries {
    let matching: Vec<Cookie> = cookies
        .into_iter()
        .filter(|cookie| name.is_none_or(|name| cookie.name == name))
        .collect();
    let total = u32::try_from(matching.len()).unwrap_or(u32::MAX);
    let (entries, cut) = fill(matching.into_iter().map(entry), max_chars);
    let capped = entries.iter().any(|e| e.value_truncated);
    let truncated = cut || capped;
    Entries {
        entries,
        total,
        truncated,
    }
}

fn entry(cookie: Cookie) -> CookieEntry {
    let session = cookie.session || cookie.expires < 0.0 || !cookie.expires.is_finite();
    CookieEntry {
        name: cap(&cookie.name, FIELD_CHARS),
        value: cap(&cookie.value, VALUE_CHARS),
        value_truncated: cookie.value.chars().count() > VALUE_CHARS,
        domain: cap(&cookie.domain, FIELD_CHARS),
        path: cap(&cookie.path, FIELD_CHARS),
        expires: (!session).then(|| cookie.expires.round() as u64),
        session,
        http_only: cookie.http_only,
        secure: cookie.secure,
        same_site: cookie
            .same_site
            .filter(|s| !s.is_empty())
            .map(|same_site| cap(&same_site, FIELD_CHARS)),
    }
}

impl Fitted for CookieEntry {
    fn strings(&mut self) -> Vec<&mut String> {
        // The order of their JSON names: domain, name, path, sameSite, value.
        let mut strings = vec![&mut self.domain, &mut self.name, &mut self.path];
        if let Some(same_site) = &mut self.same_site {
            strings.push(same_site);
        }
        strings.push(&mut self.value);
        strings
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// The entries as the hub receives them.
    fn json(entries: &[CookieEntry]) -> Vec<Value> {
        entries
            .iter()
            .map(|entry| serde_json::to_value(entry).unwrap())
            .collect()
    }

    fn cookies(value: Value) -> Vec<Cookie> {
        match serde_json::from_value::<CookieList>(value) {
            Ok(list) => list.cookies,
            Err(e) => panic!("bad test cookies: {e}"),
        }
    }

    fn jar() -> Vec<Cookie> {
        cookies(json!({ "cookies": [
            { "name": "sid", "value": "abc", "domain": "shop.example", "path": "/",
              "expires": 1_900_000_000.4, "size": 6, "httpOnly": true, "secure": true,
              "session": false, "sameSite": "Lax", "priority": "Medium" },
            { "name": "theme", "value": "dark", "domain": ".shop.example", "path": "/",
              "expires": -1, "size": 9, "httpOnly": false, "secure": false, "session": true },
            { "name": "token", "value": "t".repeat(300), "domain": "shop.example",
              "path": "/api", "expires": -1, "session": true }
        ] }))
    }

    #[test]
    fn cookies_become_entries() {
        let read = entries(jar(), None, 12_000);
        assert_eq!(read.total, 3);
        let shown = json(&read.entries);
        assert_eq!(
            shown[0],
            json!({ "name": "sid", "value": "abc", "domain": "shop.example", "path": "/",
                    "expires": 1_900_000_000u64, "httpOnly": true, "secure": true,
                    "sameSite": "Lax" })
        );
        assert_eq!(
            shown[1],
            json!({ "name": "theme", "value": "dark", "domain": ".shop.example", "path": "/",
                    "session": true, "httpOnly": false, "secure": false })
        );
        assert_eq!(shown[2]["valueTruncated"], json!(true));
        assert_eq!(
            shown[2]["value"].as_str().map(|v| v.chars().count()),
            Some(VALUE_CHARS)
        );
        // A capped value makes the read truncated.
        assert!(read.truncated);
    }

    #[test]
    fn a_name_filters_and_the_budget_cuts_the_list() {
        let named = entries(jar(), Some("theme"), 12_000);
        assert_eq!((named.total, named.entries.len()), (1, 1));
        assert!(!named.truncated);
        let cut = entries(jar(), None, 150);
        assert_eq!(cut.total, 3);
        assert_eq!(cut.entries.len(), 1);
        assert!(cut.truncated);
        let tiny = entries(jar(), Some("token"), 160);
        assert_eq!(tiny.entries.len(), 1);
        let size = serde_json::to_string(&tiny.entries).map_or(0, |s| s.len());
        assert!(size <= 160, "{size}");
        assert!(entries(Vec::new(), None, 100).entries.is_empty());
    }
}
