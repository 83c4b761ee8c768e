//! The peer: Microsoft's `@playwright/mcp`, installed from npm into the git-ignored
//! `bench-peers/` folder and started as a stdio MCP server against the same Debian Chromium
//! tabwire uses (its own browser download fails here; PLATFORM.md).
//!
//! Its snapshot is the whole page as a YAML accessibility tree, iframe content included, with
//! refs such as `e12` and `f1e3`; `browser_click` takes a `target` ref.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::json;
use tokio::process::Command;

use super::login::{LoginRun, PASSWORD, Step, USERNAME, login_refs, signed_in_line};
use super::refs::{page_counts, playwright_interactive_refs};
use super::session::{Exchange, Session, clip};
use super::tasks::{Completeness, RowClick, status_line};
use crate::artifacts::repo_root;
use crate::browser::chromium;
use crate::scratch::Scratch;

/// The npm package.
pub const PACKAGE: &str = "@playwright/mcp";
/// The newest version on npm when the big-page steps were added (issue 25); 0.0.83, which
/// PLATFORM.md found working with Node 20 and Debian Chromium, took the same flags.
pub const VERSION: &str = "0.0.86";

/// A running playwright-mcp with its browser.
pub struct Playwright {
    /// The MCP session (node, and the Chromium Playwright launches).
    pub session: Session,
    /// How long `npm install` took, or `None` when the right version was already there.
    install_took: Option<Duration>,
    /// Its working and output directory: it writes snapshots of large pages and console logs
    /// there instead of into the repository.
    _dir: Scratch,
}

/// Where the peers are installed (`npm install --prefix bench-peers`).
fn prefix() -> PathBuf {
    repo_root().join("bench-peers")
}

/// Where npm puts `package` under [`prefix`].
pub fn installed_dir(package: &str) -> PathBuf {
    prefix().join("node_modules").join(package)
}

fn package_dir() -> PathBuf {
    installed_dir(PACKAGE)
}

/// Installs the pinned version unless it is already there; returns how long installing took.
pub async fn ensure_installed() -> Result<Option<Duration>> {
    npm_install(PACKAGE, VERSION).await
}

/// Installs `package` at `version` into the git-ignored `bench-peers/` unless that version is
/// there already; returns how long installing took, or `None` when nothing was installed.
pub async fn npm_install(package: &str, version: &str) -> Result<Option<Duration>> {
    let manifest = installed_dir(package).join("package.json");
    let installed = std::fs::read_to_string(&manifest)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|json| json["version"].as_str().map(str::to_owned));
    if installed.as_deref() == Some(version) {
        return Ok(None);
    }
    eprintln!("bench: installing {package}@{version} into bench-peers/ …");
    std::fs::create_dir_all(prefix()).context("create bench-peers/")?;
    let started = Instant::now();
    // npm's own progress goes to the terminal's stderr; stdout is kept for the table.
    let status = Command::new("npm")
        .arg("install")
        .arg("--prefix")
        .arg(prefix())
        .arg("--no-audit")
        .arg("--no-fund")
        .arg(format!("{package}@{version}"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .status()
        .await
        .context("cannot run npm (Node.js and npm are needed for the peer)")?;
    if !status.success() {
        bail!("npm install {package}@{version} failed ({status})");
    }
    Ok(Some(started.elapsed()))
}

impl Playwright {
    /// Installs (if needed) and starts playwright-mcp: headless, an in-memory profile, Debian's
    /// Chromium, no sandbox (the benchmark may run as root, like tabwire's Chromium), the same
    /// viewport as tabwire's browser.
    pub async fn start() -> Result<Playwright> {
        let install_took = ensure_installed().await?;
        let dir = Scratch::new("playwright-mcp");
        let mut command = Command::new("node");
        command
            .arg(package_dir().join("cli.js"))
            .args(["--headless", "--isolated", "--no-sandbox"])
            .arg("--executable-path")
            .arg(chromium())
            .args(["--viewport-size", "1280x800"])
            .arg("--output-dir")
            .arg(dir.path().join("output"))
            .current_dir(dir.path());
        let session = Session::start("playwright-mcp", command).await?;
        Ok(Playwright {
            session,
            install_took,
            _dir: dir,
        })
    }

    /// The install time, for the report.
    pub fn setup_note(&self) -> String {
        match self.install_took {
            Some(took) => format!(
                "{PACKAGE}@{VERSION} installed into bench-peers/ in {:.1} s",
                took.as_secs_f64()
            ),
            None => format!("{PACKAGE}@{VERSION} already installed in bench-peers/"),
        }
    }

    /// `browser_navigate`.
    pub async fn navigate(&self, url: &str) -> Result<()> {
        let reply = self
            .session
            .call("browser_navigate", json!({"url": url}))
            .await?;
        if reply.is_error {
            bail!("browser_navigate {url} failed: {}", clip(&reply.text));
        }
        Ok(())
    }

    /// `browser_tabs {action: "list"}`: its cheapest call that reaches the browser.
    pub async fn list_tabs(&self) -> Result<Exchange> {
        self.tool("browser_tabs", json!({"action": "list"})).await
    }

    /// `browser_snapshot` with its defaults: the whole page.
    pub async fn snapshot(&self) -> Result<Exchange> {
        self.tool("browser_snapshot", json!({})).await
    }

    /// One full snapshot already holds every frame, so it is the whole walk.
    pub fn completeness(&self, snapshot: &Exchange) -> Completeness {
        let counts = page_counts(&snapshot.text);
        Completeness {
            expected: (!counts.is_empty()).then(|| counts.iter().sum()),
            reached: playwright_interactive_refs(&snapshot.text).len(),
            calls: 1,
            how: "1 full snapshot (iframes inline)".into(),
        }
    }

    /// The same path as for tabwire: a plain snapshot, a search (`browser_find`) only if the
    /// button is not in it, the click, and a search for the status line only if the click's
    /// result does not show it.
    pub async fn open_row(&self, row: u32) -> Result<RowClick> {
        let button_line = format!("button \"Open {row}\"");
        let first = self.snapshot().await?;
        let mut reach_calls = 1;
        let mut reach_bytes = first.bytes;
        let mut button = ref_on_line(&first.text, &button_line);
        if button.is_none() {
            let found = self
                .session
                .call("browser_find", json!({"text": format!("Open {row}")}))
                .await?;
            reach_calls += 1;
            reach_bytes += found.bytes;
            button = ref_on_line(&found.text, &button_line);
        }
        let button = button.with_context(|| format!("no ref for {button_line}"))?;
        let click = self
            .tool(
                "browser_click",
                json!({"target": button, "element": format!("Open {row} button")}),
            )
            .await?;
        let mut status = status_line(&click.text, "Opened row ");
        let (mut confirm_calls, mut confirm_bytes) = (0, 0);
        if status.is_none() {
            let found = self
                .session
                .call("browser_find", json!({"text": "Opened row"}))
                .await?;
            confirm_calls += 1;
            confirm_bytes += found.bytes;
            status = status_line(&found.text, "Opened row ");
        }
        Ok(RowClick {
            first_view: format!(
                "whole page, {} interactive refs",
                playwright_interactive_refs(&first.text).len()
            ),
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

    /// One run of the login scenario ([`super::login`]) the way an agent drives this server:
    /// `browser_navigate`, `browser_type` twice, `browser_click` on the checkbox and on the
    /// submit button. The refs come from the navigation's result and the outcome from the last
    /// click's, with a `browser_snapshot` (counted) only where they are missing.
    pub async fn login(&self, url: &str) -> Result<LoginRun> {
        let started = Instant::now();
        let mut run = LoginRun::new();
        let loaded = self.tool("browser_navigate", json!({"url": url})).await?;
        let mut refs = login_refs(&run.record("browser_navigate", Step::Navigate, loaded).text);
        if refs.is_none() {
            let snapshot = self.snapshot().await?;
            refs = login_refs(&run.record("browser_snapshot", Step::Read, snapshot).text);
        }
        let [username, password, remember, submit] =
            refs.context("the login form's refs are in neither the navigation nor a snapshot")?;
        for (element, field, text) in [
            ("Username textbox", username, USERNAME),
            ("Password textbox", password, PASSWORD),
        ] {
            let typed = self
                .tool(
                    "browser_type",
                    json!({"element": element, "target": field, "text": text}),
                )
                .await?;
            run.record("browser_type", Step::Type, typed);
        }
        let checked = self
            .tool(
                "browser_click",
                json!({"element": "Remember me checkbox", "target": remember}),
            )
            .await?;
        run.record("browser_click", Step::Click, checked);
        let clicked = self
            .tool(
                "browser_click",
                json!({"element": "Sign in button", "target": submit}),
            )
            .await?;
        let mut text = run
            .record("browser_click", Step::Click, clicked)
            .text
            .clone();
        let from_click = signed_in_line(&text).is_some();
        if !from_click {
            let snapshot = self.snapshot().await?;
            text = run
                .record("browser_snapshot", Step::Read, snapshot)
                .text
                .clone();
        }
        run.finish(&text, from_click, started.elapsed())
    }

    /// A tool call that must succeed.
    async fn tool(&self, tool: &str, args: serde_json::Value) -> Result<Exchange> {
        let reply = self.session.call(tool, args).await?;
        if reply.is_error {
            bail!("{tool} failed: {}", clip(&reply.text));
        }
        Ok(reply)
    }

    /// Ends the session; playwright-mcp closes its browser when its stdin closes, and whatever
    /// is left is killed.
    pub async fn close(self) {
        self.session.close().await;
    }
}

/// The ref on the first line containing `needle`, from `[ref=…]`.
pub fn ref_on_line(snapshot: &str, needle: &str) -> Option<String> {
    let line = snapshot.lines().find(|line| line.contains(needle))?;
    let (_, after) = line.split_once("[ref=")?;
    Some(after.split_once(']')?.0.to_owned())
}
