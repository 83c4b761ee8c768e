//! Small steps that scenarios share: waiting for a browser, picking refs and tabs out of tool
//! results.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::browser::{Browser, checks_page_model};
use crate::client::{McpClient, Reply};
use crate::fixtures::Fixtures;
use crate::hub::Hub;
use crate::wait::eventually;

/// How long a browser may take to connect after Chromium starts.
pub const CONNECT_LIMIT: Duration = Duration::from_secs(30);

/// The extension's popup (its ID is fixed by the manifest's key).
pub const POPUP: &str = "chrome-extension://hjpjigandemmiglamagndeppmlncdhag/popup.html";

/// Waits until a browser named `name` is connected and returns its ID.
pub async fn connected_browser(client: &McpClient, name: &str) -> String {
    eventually(
        &format!("browser {name:?} to connect"),
        CONNECT_LIMIT,
        || async {
            let reply = client.call("list_browsers", json!({})).await;
            reply.data()["browsers"]
                .as_array()?
                .iter()
                .find(|b| b["name"] == name && b["connected"] == true)
                .map(|b| b["browserId"].as_str().unwrap().to_owned())
        },
    )
    .await
}

/// Waits until `list_tabs` (with `args`) lists a tab for which `wanted` holds; returns that tab.
pub async fn listed_tab(
    client: &McpClient,
    args: serde_json::Value,
    what: &str,
    wanted: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    eventually(what, CONNECT_LIMIT, || async {
        let tabs = client.call("list_tabs", args.clone()).await;
        tabs.data()["tabs"]
            .as_array()?
            .iter()
            .find(|tab| wanted(tab))
            .cloned()
    })
    .await
}

/// Waits until `list_tabs` (with `args`) shows `url` loaded; returns its tab's ID.
pub async fn loaded_tab(client: &McpClient, args: serde_json::Value, url: &str) -> u64 {
    let tab = listed_tab(client, args, &format!("{url} to load"), |tab| {
        tab["url"] == url && tab["status"] == "complete"
    })
    .await;
    tab["tabId"].as_u64().expect("a listed tab has an ID")
}

/// Opens the sign-in fixture in a new active tab of the selected browser and snapshots it, as
/// a first look at a browser that just connected: returns the tab's ID, after checking that
/// the snapshot shows the page's heading.
pub async fn reads_the_login_page(client: &McpClient, fixtures: &Fixtures) -> u64 {
    let url = fixtures.url("login.html");
    client
        .call("create_tab", json!({"url": url, "active": true}))
        .await;
    let tab = loaded_tab(client, json!({}), &url).await;
    let snapshot = client
        .call("get_page_snapshot", json!({"tabId": tab}))
        .await;
    assert!(
        snapshot.text.contains("heading[1] \"Sign in\""),
        "{}",
        snapshot.text
    );
    tab
}

/// Waits until the extension's popup (its DevTools WebSocket URL, from
/// [`Browser::open_tab`]`(POPUP)`) shows text for which `shows` holds; returns the text.
pub async fn popup_text(popup: &str, what: &str, shows: impl Fn(&str) -> bool) -> String {
    eventually(what, CONNECT_LIMIT, || async {
        let text = Browser::evaluate(popup, "document.body.innerText").await;
        let text = text.as_str()?.to_owned();
        shows(&text).then_some(text)
    })
    .await
}

/// The ref on the first line of a snapshot's text containing `needle`.
pub fn ref_of(snapshot: &Reply, needle: &str) -> String {
    let line = snapshot
        .text
        .lines()
        .find(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{}", snapshot.text));
    let token = line.split_whitespace().next().unwrap();
    assert!(token.starts_with('@'), "line has no ref: {line}");
    token.to_owned()
}

/// The ref of an inline element shown as `[@e12 word]` (or `[@e12 word (selected)]`) inside
/// another node's line.
pub fn inline_ref(snapshot: &Reply, word: &str) -> String {
    for (at, _) in snapshot.text.match_indices("[@") {
        let rest = &snapshot.text[at + 1..];
        let Some((element_ref, after)) = rest.split_once(' ') else {
            continue;
        };
        if after.starts_with(&format!("{word}]")) || after.starts_with(&format!("{word} (")) {
            return element_ref.to_owned();
        }
    }
    panic!("no inline ref for {word:?} in:\n{}", snapshot.text)
}

/// The element state in a `read_element_state` answer (`data.state`).
pub fn element_state(reply: &Reply) -> &serde_json::Value {
    &reply.data()["state"]
}

/// The ID of the tab whose URL contains `needle`.
pub fn tab_with(tabs: &Reply, needle: &str) -> u64 {
    tabs.data()["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tab| tab["url"].as_str().unwrap().contains(needle))
        .unwrap_or_else(|| panic!("no tab with {needle:?}: {}", tabs.text))["tabId"]
        .as_u64()
        .unwrap()
}

/// The tab in a tab tool's answer (`get_active_tab`, `switch_tab`, `create_tab`, `go_back`,
/// `go_forward`, `reload_tab`): `data.tab`, or `data` itself when the tab's fields are there.
pub fn tab_of(reply: &Reply) -> &serde_json::Value {
    let data = reply.data();
    if data["tab"].is_object() {
        &data["tab"]
    } else {
        data
    }
}

/// The IDs of the tabs `list_tabs` marks active (one per window).
pub fn active_tabs(tabs: &Reply) -> Vec<u64> {
    tabs.data()["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|tab| tab["active"] == true)
        .map(|tab| tab["tabId"].as_u64().unwrap())
        .collect()
}

/// Whether `list_tabs` lists a tab with this ID.
pub fn lists_tab(tabs: &Reply, id: u64) -> bool {
    tabs.data()["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|tab| tab["tabId"] == id)
}

/// The usual cast: a fixture server, a hub, one browser named `name` showing `page`, and a
/// connected MCP client that has seen the browser arrive.
pub struct OneBrowser {
    /// Serves the fixture pages.
    pub fixtures: Fixtures,
    /// The hub.
    pub hub: Hub,
    /// The browser.
    pub browser: Browser,
    /// The agent's session.
    pub client: McpClient,
}

impl OneBrowser {
    /// Starts everything and waits for the browser to connect.
    pub async fn on(name: &str, page: &str) -> OneBrowser {
        OneBrowser::with_model_check(name, page, checks_page_model()).await
    }

    /// Like [`OneBrowser::on`], with the page model's check against a fresh walk on or off
    /// whatever the build: off, a snapshot answers from the model alone, as in a user's
    /// browser (the check completes a first walk that stopped at its window).
    pub async fn with_model_check(name: &str, page: &str, check: bool) -> OneBrowser {
        OneBrowser::start(name, page, check, &[]).await
    }

    /// Like [`OneBrowser::on`], with the hub started with `hub_args`.
    pub async fn with_hub_args(name: &str, page: &str, hub_args: &[&str]) -> OneBrowser {
        OneBrowser::start(name, page, checks_page_model(), hub_args).await
    }

    /// Like [`OneBrowser::on`], with `patch` run on the browser's copy of the extension (see
    /// [`Browser::launch_patched`]).
    pub async fn patched(name: &str, page: &str, patch: impl FnOnce(&Path)) -> OneBrowser {
        OneBrowser::start_patched(name, page, checks_page_model(), &[], patch).await
    }

    async fn start(name: &str, page: &str, check: bool, hub_args: &[&str]) -> OneBrowser {
        OneBrowser::start_patched(name, page, check, hub_args, |_| {}).await
    }

    async fn start_patched(
        name: &str,
        page: &str,
        check: bool,
        hub_args: &[&str],
        patch: impl FnOnce(&Path),
    ) -> OneBrowser {
        let fixtures = Fixtures::serve().await;
        let hub = Hub::spawn_with_args(hub_args);
        let mut config = Browser::paired_config(&hub, name);
        config["checkPageModel"] = check.into();
        let browser = Browser::launch_patched(config, name, &fixtures.url(page), &[], patch);
        let client = McpClient::connect(&hub).await;
        connected_browser(&client, name).await;
        // The browser may connect before its start page has replaced the initial blank
        // document, which no extension may script.
        loaded_tab(&client, json!({}), &fixtures.url(page)).await;
        OneBrowser {
            fixtures,
            hub,
            browser,
            client,
        }
    }

    /// Opens another tab on the fixture `path` the way a user would (DevTools), waits until
    /// `list_tabs` shows it loaded, and returns its ID.
    pub async fn open_tab(&self, path: &str) -> u64 {
        let url = self.fixtures.url(path);
        self.browser.open_tab(&url).await;
        loaded_tab(&self.client, json!({}), &url).await
    }

    /// Waits until `get_tab_health` (with `args`) shows an operation running in the tab;
    /// returns it (`data.active`).
    pub async fn running(&self, what: &str, args: serde_json::Value) -> serde_json::Value {
        eventually(what, CONNECT_LIMIT, || async {
            let health = self.call("get_tab_health", args.clone()).await;
            let active = &health.data()["active"];
            active.is_object().then(|| active.clone())
        })
        .await
    }

    /// `get_page_snapshot` with `args`.
    pub async fn snapshot(&self, args: serde_json::Value) -> Reply {
        self.client.call("get_page_snapshot", args).await
    }

    /// Calls `tool` with `args`.
    pub async fn call(&self, tool: &str, args: serde_json::Value) -> Reply {
        self.client.call(tool, args).await
    }

    /// Evaluates `expression` in the tab whose URL contains `needle`, through DevTools.
    pub async fn evaluate(&self, needle: &str, expression: &str) -> serde_json::Value {
        self.browser.evaluate_in(needle, expression).await
    }

    /// `click_element` on `selector`.
    pub async fn click(&self, selector: &str) -> Reply {
        self.client
            .call("click_element", json!({ "selector": selector }))
            .await
    }

    /// `click_element` on `selector` with `observe: false`: the summary alone.
    pub async fn quiet_click(&self, selector: &str) -> Reply {
        self.client
            .call(
                "click_element",
                json!({ "selector": selector, "observe": false }),
            )
            .await
    }
}
