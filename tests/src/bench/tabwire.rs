//! tabwire as the benchmark drives it: the real hub, the real extension in headless Chromium
//! (the e2e harness's [`Hub`] and [`Browser`]), and a metered session through the real
//! `tabwire-mcp`.
//!
//! Its snapshot is bounded (200 nodes / 10,000 characters by default) and says when it is
//! truncated; the rest of a page is reached by paging (`offset`/`nextOffset`), filtering
//! (`query`), scoping, and frame snapshots (`list_frames`, then `frameId`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tokio::process::Command;

use super::login::{LoginRun, PASSWORD, Step, USERNAME, login_refs, signed_in_line};
use super::refs::{is_interactive, page_counts, tabwire_role};
use super::session::{Exchange, Session};
use super::tasks::{Completeness, RowClick, status_line};
use crate::artifacts::artifacts;
use crate::browser::Browser;
use crate::hub::Hub;

/// How long the extension may take to connect to a fresh hub.
const CONNECT_LIMIT: Duration = Duration::from_secs(30);
/// A bound on paging one frame, so a server that never stops paging cannot hang the run.
const MAX_PAGES: u32 = 200;

/// A running tabwire: hub, browser with the extension, and the MCP session.
pub struct Tabwire {
    /// The session through `tabwire-mcp` (declared first: it closes before the hub goes).
    pub session: Session,
    /// Headless Chromium with the extension; killed with its process group on drop.
    browser: Browser,
    /// The hub; killed on drop.
    _hub: Hub,
}

/// The unchanged-page delta check.
#[derive(Debug, Clone)]
pub struct Delta {
    /// Response bytes of the `since` call.
    pub bytes: usize,
    /// Whether the answer was an empty delta (nothing changed, nothing removed, no new order).
    pub empty: bool,
    /// Whether the server fell back to a full observation (`reset: true`).
    pub reset: bool,
}

impl Tabwire {
    /// The browser the extension runs in.
    pub fn browser(&self) -> &Browser {
        &self.browser
    }

    /// Starts the hub and a browser showing `start_url`, connects through `tabwire-mcp`, and
    /// waits until the extension has connected.
    pub async fn start(start_url: &str) -> Result<Tabwire> {
        // The harness builds the binaries and the extension on first use (blocking), and
        // panics on failure; the caller runs this in a task of its own.
        let (shim, hub, browser) = tokio::task::block_in_place(|| {
            let shim = artifacts().shim.clone();
            let hub = Hub::spawn();
            let browser = Browser::launch(&hub, "Bench", start_url);
            (shim, hub, browser)
        });
        let mut command = Command::new(shim);
        command.arg("--socket").arg(&hub.socket);
        let session = Session::start("tabwire-mcp", command).await?;
        let connected = tokio::time::timeout(CONNECT_LIMIT, async {
            loop {
                let reply = session.call("list_browsers", json!({})).await?;
                if reply.data()?["browsers"][0]["connected"] == true {
                    return anyhow::Ok(());
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
        .await;
        match connected {
            Ok(result) => result?,
            Err(_) => bail!("the extension did not connect within {CONNECT_LIMIT:?}"),
        }
        Ok(Tabwire {
            session,
            browser,
            _hub: hub,
        })
    }

    /// Nothing to install.
    pub fn setup_note(&self) -> String {
        "hub, tabwire-mcp and extension built from this checkout".into()
    }

    /// `navigate_to` in the active tab.
    pub async fn navigate(&self, url: &str) -> Result<()> {
        self.call("navigate_to", json!({"url": url}))
            .await
            .with_context(|| format!("navigate_to {url}"))?;
        Ok(())
    }

    /// `get_page_snapshot` with its default budget.
    pub async fn snapshot(&self) -> Result<Exchange> {
        self.call("get_page_snapshot", json!({})).await
    }

    /// Every frame (`list_frames`), each paged through at the default budget until no
    /// `nextOffset` is left.
    pub async fn completeness(&self) -> Result<Completeness> {
        let frames = self.call("list_frames", json!({})).await?;
        let frames = frames.data()?["frames"]
            .as_array()
            .context("list_frames has no frames")?
            .clone();
        let mut calls = 1;
        let mut pages = 0;
        let mut refs = BTreeSet::new();
        // Each page's count line once, by its ref: a frame's lines come both inlined in the
        // top document's snapshot and in the frame's own.
        let mut counts = BTreeMap::new();
        for frame in &frames {
            let mut args = json!({});
            if frame
                .get("parentFrameId")
                .is_some_and(|parent| !parent.is_null())
            {
                args["frameId"] = frame["frameId"].clone();
            }
            let mut offset = 0;
            loop {
                if offset > 0 {
                    args["offset"] = json!(offset);
                }
                let reply = self.call("get_page_snapshot", args.clone()).await?;
                calls += 1;
                pages += 1;
                let data = reply.data()?;
                for node in nodes(data)? {
                    let text = node["text"].as_str().unwrap_or_default();
                    if let Some(reference) = node["ref"].as_str() {
                        for count in page_counts(text) {
                            counts.insert(reference.to_owned(), count);
                        }
                    }
                    // An interactive line without a ref cannot be acted on: not counted.
                    if tabwire_role(text).is_some_and(is_interactive)
                        && let Some(reference) = node["ref"].as_str()
                    {
                        refs.insert(reference.to_owned());
                    }
                }
                match data["nextOffset"].as_u64() {
                    Some(next) if next > offset && pages < MAX_PAGES => offset = next,
                    Some(_) => bail!("paging did not advance (or exceeded {MAX_PAGES} pages)"),
                    None => break,
                }
            }
        }
        Ok(Completeness {
            expected: (!counts.is_empty()).then(|| counts.values().sum()),
            reached: refs.len(),
            calls,
            how: format!(
                "list_frames + {} frame{}, {pages} snapshot page{}",
                frames.len(),
                if frames.len() == 1 { "" } else { "s" },
                if pages == 1 { "" } else { "s" }
            ),
        })
    }

    /// A plain snapshot; if the button is not in it, `query: "Row N"`; then `click_element`,
    /// and `query: "Opened row"` only if the click's result does not show the status line.
    pub async fn open_row(&self, row: u32) -> Result<RowClick> {
        let button_text = format!("button \"Open {row}\"");
        let first = self.snapshot().await?;
        let data = first.data()?;
        let first_view = format!(
            "truncated: {}, {} of {} nodes shown, {} nodes / {} chars omitted",
            data["truncated"],
            nodes(data)?.len(),
            data["totalNodes"],
            data["omittedNodes"],
            data["omittedChars"]
        );
        let mut reach_calls = 1;
        let mut reach_bytes = first.bytes;
        let mut button = ref_of(data, &button_text)?;
        if button.is_none() {
            let found = self
                .call("get_page_snapshot", json!({"query": format!("Row {row}")}))
                .await?;
            reach_calls += 1;
            reach_bytes += found.bytes;
            button = ref_of(found.data()?, &button_text)?;
        }
        let button = button.with_context(|| format!("no ref for {button_text}"))?;
        let click = self
            .call("click_element", json!({"selector": button}))
            .await?;
        let mut status = status_line(&click.text, "Opened row ");
        let (mut confirm_calls, mut confirm_bytes) = (0, 0);
        if status.is_none() {
            let found = self
                .call("get_page_snapshot", json!({"query": "Opened row"}))
                .await?;
            confirm_calls += 1;
            confirm_bytes += found.bytes;
            status = status_line(&found.text, "Opened row ");
        }
        Ok(RowClick {
            first_view,
            reach_calls,
            reach_bytes,
            button,
            click_bytes: click.bytes,
            click_ms: click.elapsed.as_secs_f64() * 1000.0,
            confirm_calls,
            confirm_bytes,
            status,
        })
    }

    /// One run of the login scenario ([`super::login`]): `navigate_and_wait`, `type_text` twice,
    /// `click_element` on the checkbox and on the submit button, each with its default
    /// observation. The refs come from the navigation's observation and the result from the
    /// last click's, with a `get_page_snapshot` (counted) only where they are missing.
    pub async fn login(&self, url: &str) -> Result<LoginRun> {
        let started = Instant::now();
        let mut run = LoginRun::new();
        let loaded = self.call("navigate_and_wait", json!({"url": url})).await?;
        let mut refs = login_refs(&run.record("navigate_and_wait", Step::Navigate, loaded).text);
        if refs.is_none() {
            let snapshot = self.snapshot().await?;
            refs = login_refs(&run.record("get_page_snapshot", Step::Read, snapshot).text);
        }
        let [username, password, remember, submit] =
            refs.context("the login form's refs are in neither the observation nor a snapshot")?;
        for (field, text) in [(username, USERNAME), (password, PASSWORD)] {
            let typed = self
                .call("type_text", json!({"selector": field, "text": text}))
                .await?;
            run.record("type_text", Step::Type, typed);
        }
        let checked = self
            .call("click_element", json!({"selector": remember}))
            .await?;
        run.record("click_element", Step::Click, checked);
        let clicked = self
            .call("click_element", json!({"selector": submit}))
            .await?;
        let mut text = run
            .record("click_element", Step::Click, clicked)
            .text
            .clone();
        let from_click = signed_in_line(&text).is_some();
        if !from_click {
            let snapshot = self.snapshot().await?;
            text = run
                .record("get_page_snapshot", Step::Read, snapshot)
                .text
                .clone();
        }
        run.finish(&text, from_click, started.elapsed())
    }

    /// A snapshot, then `since` its version on the unchanged page.
    pub async fn unchanged_delta(&self) -> Result<Delta> {
        let base = self.snapshot().await?;
        let version = base.data()?["version"].clone();
        if !version.is_u64() {
            bail!("the snapshot has no version");
        }
        let reply = self
            .call("get_page_snapshot", json!({"since": version}))
            .await?;
        let data = reply.data()?;
        let delta = &data["delta"];
        let is_empty = |key: &str| delta[key].as_array().is_none_or(Vec::is_empty);
        Ok(Delta {
            bytes: reply.bytes,
            empty: delta.is_object()
                && is_empty("changed")
                && is_empty("removed")
                && delta["order"].is_null(),
            reset: data["reset"] == true,
        })
    }

    /// Stops the session; the browser and the hub die with their handles.
    pub async fn close(self) {
        let Tabwire {
            session,
            browser: _browser,
            _hub,
        } = self;
        session.close().await;
    }

    /// A tool call that must succeed.
    /// `list_tabs`: the cheapest call that reaches the browser.
    pub async fn list_tabs(&self) -> Result<Exchange> {
        self.call("list_tabs", json!({})).await
    }

    async fn call(&self, tool: &str, args: Value) -> Result<Exchange> {
        let reply = self.session.call(tool, args).await?;
        reply.data().with_context(|| tool.to_owned())?;
        Ok(reply)
    }
}

/// `data.nodes` of an observation.
fn nodes(data: &Value) -> Result<&Vec<Value>> {
    data["nodes"]
        .as_array()
        .context("the observation has no nodes")
}

/// The ref of the first node whose text contains `needle`.
fn ref_of(data: &Value, needle: &str) -> Result<Option<String>> {
    Ok(nodes(data)?
        .iter()
        .find(|node| node["text"].as_str().is_some_and(|t| t.contains(needle)))
        .and_then(|node| node["ref"].as_str().map(str::to_owned)))
}
