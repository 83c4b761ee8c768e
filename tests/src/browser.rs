//! Headless Chromium with the real extension, configured through a bundled `config.json` in a
//! per-browser copy of the extension folder (PLATFORM.md: no clicks, no root, per instance).

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tabwire_hub::chrome;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::artifacts::artifacts;
use crate::hub::Hub;
use crate::scratch::Scratch;

/// The Chromium the tests run, found once per test process as `tabwire-hub find-chrome` finds
/// it (`TABWIRE_CHROME` overrides; on Debian the package's real binary comes before its wrapper
/// script). Panics with every place looked at, and the fix, when there is none, and with the
/// way out when only Google Chrome is installed: it ignores the `--load-extension` the tests
/// load the extension with.
pub fn chromium() -> &'static Path {
    static FOUND: OnceLock<Result<chrome::Found, chrome::NotFound>> = OnceLock::new();
    match FOUND.get_or_init(chrome::find) {
        Ok(found) if found.kind == chrome::Kind::GoogleChrome => panic!(
            "the tests need Chromium, and only Google Chrome was found ({}): {}",
            found.path.display(),
            tabwire_hub::launch::chrome_hint()
        ),
        Ok(found) => &found.path,
        Err(not_found) => panic!("the tests need Chromium: {not_found}"),
    }
}

/// A running headless Chromium with its own fresh profile.
pub struct Browser {
    child: Option<Child>,
    /// The name given to the extension.
    pub name: String,
    /// The profile directory (it holds `DevToolsActivePort`).
    profile: PathBuf,
    /// The extension's console lines as Chromium logged them (with its timestamps), newest
    /// last, at most [`MAX_LOG_LINES`].
    log: Arc<Mutex<Vec<String>>>,
    _dir: Scratch,
}

/// A well-formed pairing code that no hub issued.
pub const UNISSUED_PAIRING_CODE: &str = "7KQ2M-H9D4X-0RB6T-WC3NP";

/// Whether the extensions these helpers launch check their page model against a fresh walk on
/// every snapshot (`checkPageModel` in the bundled config.json; js/collector/25-model.js): in
/// the tests (debug builds) they do, so every end-to-end test also proves the model; the
/// benchmarks (release builds) measure the model alone. `TABWIRE_CHECK_PAGE_MODEL=1` or `=0`
/// overrides it.
pub fn checks_page_model() -> bool {
    match std::env::var("TABWIRE_CHECK_PAGE_MODEL").as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => cfg!(debug_assertions),
    }
}

/// How many of the extension's log lines a [`Browser`] keeps.
const MAX_LOG_LINES: usize = 2000;

impl Browser {
    /// Starts Chromium with the extension pointed at `hub` and paired with it through a fresh
    /// pairing code in its bundled configuration, named `name`, showing `url`. (Headless
    /// Chromium accepts only one start URL; see [`Browser::open_tab`] for more.)
    pub fn launch(hub: &Hub, name: &str, url: &str) -> Browser {
        Browser::launch_with_config(Browser::paired_config(hub, name), name, url, &[])
    }

    /// The extension config [`Browser::launch`] uses: `hub`'s URL, the name, a fresh pairing
    /// code.
    pub fn paired_config(hub: &Hub, name: &str) -> serde_json::Value {
        serde_json::json!({
            "serverUrl": hub.browser_url(),
            "browserName": name,
            "pairingCode": hub.pair(),
        })
    }

    /// Starts Chromium with the extension pointed at any server URL (a stand-in hub), with a
    /// pairing code no hub issued: the extension dials and sends its challenge, and only a
    /// hub that knows the code could answer it.
    pub fn launch_with_server(server_url: &str, name: &str, url: &str) -> Browser {
        let config = serde_json::json!({
            "serverUrl": server_url,
            "browserName": name,
            "pairingCode": UNISSUED_PAIRING_CODE,
        });
        Browser::launch_with_config(config, name, url, &[])
    }

    /// Starts Chromium with the extension pointed at a hosted hub behind a TLS proxy
    /// (`wss://…/browser`), with `access_token` in the bundled configuration. The proxy's test
    /// certificate is accepted with `--ignore-certificate-errors` (PLATFORM.md).
    pub fn launch_hosted(server_url: &str, access_token: &str, name: &str, url: &str) -> Browser {
        let config = serde_json::json!({
            "serverUrl": server_url,
            "browserName": name,
            "accessToken": access_token,
        });
        Browser::launch_with_config(config, name, url, &["--ignore-certificate-errors"])
    }

    /// Starts Chromium with `config` as the extension's bundled `config.json`, named `name`
    /// (for logs), showing `url`, with extra Chromium flags.
    pub fn launch_with_config(
        config: serde_json::Value,
        name: &str,
        url: &str,
        extra_args: &[&str],
    ) -> Browser {
        Browser::launch_patched(config, name, url, extra_args, |_| {})
    }

    /// Like [`Browser::launch_with_config`], with `patch` run on this browser's copy of the
    /// extension folder before Chromium loads it (a benchmark adds a probe line that way).
    pub fn launch_patched(
        config: serde_json::Value,
        name: &str,
        url: &str,
        extra_args: &[&str],
        patch: impl FnOnce(&Path),
    ) -> Browser {
        let dir = Scratch::new("chromium");
        let extension = dir.path().join("extension");
        copy_dir(&artifacts().extension, &extension);
        let mut config = config;
        if let Some(fields) = config.as_object_mut() {
            fields
                .entry("checkPageModel")
                .or_insert(checks_page_model().into());
        }
        std::fs::write(extension.join("config.json"), config.to_string()).unwrap();
        patch(&extension);
        let profile = dir.path().join("profile");
        // Downloads land in the scratch directory (Chrome's default is ~/Downloads), without
        // asking where.
        std::fs::create_dir_all(profile.join("Default")).unwrap();
        let downloads = dir.path().join("downloads");
        let preferences = serde_json::json!({
            "download": {"default_directory": downloads, "prompt_for_download": false}
        });
        std::fs::write(profile.join("Default/Preferences"), preferences.to_string()).unwrap();
        let mut command = Command::new(chromium());
        command
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--window-size=1280,800",
                "--enable-logging=stderr",
                // Only for opening extra tabs from the test, the way a user would; the
                // extension's own debugger use is unaffected.
                "--remote-debugging-port=0",
            ])
            .args(extra_args)
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(format!("--load-extension={}", extension.display()))
            .arg(format!(
                "--disable-extensions-except={}",
                extension.display()
            ))
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // Its own process group, so killing it takes its helper processes along.
            .process_group(0);
        let mut child = command.spawn().expect("start chromium");
        let stderr = child.stderr.take().expect("piped stderr");
        let label = name.to_owned();
        let log = Arc::new(Mutex::new(Vec::new()));
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                // Only the extension's own console lines; Chromium is chatty.
                if line.contains("tabwire") {
                    crate::logs::forward_log(&format!("chromium {label}"), &line);
                    let mut kept = kept.lock().unwrap();
                    if kept.len() == MAX_LOG_LINES {
                        kept.remove(0);
                    }
                    kept.push(line);
                }
            }
        });
        Browser {
            child: Some(child),
            name: name.to_owned(),
            profile,
            log,
            _dir: dir,
        }
    }

    /// The extension's console lines so far, as Chromium logged them: each starts with
    /// Chromium's `[pid:tid:MMDD/HHMMSS.micros:LEVEL:…]` prefix.
    pub fn log_lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Opens another tab on `url` through Chromium's DevTools HTTP endpoint, as if the user had
    /// opened it. Returns the tab's DevTools WebSocket URL (for [`Browser::evaluate`]).
    pub async fn open_tab(&self, url: &str) -> String {
        let target = self.devtools_http("PUT", &format!("/json/new?{url}")).await;
        target["webSocketDebuggerUrl"]
            .as_str()
            .expect("the new tab has a DevTools URL")
            .to_owned()
    }

    /// The DevTools WebSocket URL of the first tab whose URL contains `needle` (the tab
    /// Chromium started with, or one opened since), for [`Browser::evaluate`].
    pub async fn page_ws(&self, needle: &str) -> String {
        self.page_target(needle, "webSocketDebuggerUrl").await
    }

    /// The field `field` of the DevTools target of the first tab whose URL contains `needle`.
    async fn page_target(&self, needle: &str, field: &str) -> String {
        let targets = self.devtools_http("GET", "/json/list").await;
        targets
            .as_array()
            .expect("DevTools lists its targets")
            .iter()
            .find(|target| {
                target["type"] == "page"
                    && target["url"]
                        .as_str()
                        .is_some_and(|url| url.contains(needle))
            })
            .and_then(|target| target[field].as_str())
            .unwrap_or_else(|| panic!("no tab with {needle:?} among {targets}"))
            .to_owned()
    }

    /// Evaluates `expression` in the first tab whose URL contains `needle`: the test's own eyes
    /// on what a page recorded (click counters, framework state), independent of the tools.
    pub async fn evaluate_in(&self, needle: &str, expression: &str) -> serde_json::Value {
        Browser::evaluate(&self.page_ws(needle).await, expression).await
    }

    /// Brings the first tab whose URL contains `needle` to the front (DevTools
    /// `/json/activate`), as a person clicking on it would.
    pub async fn activate_tab(&self, needle: &str) {
        let id = self.page_target(needle, "id").await;
        // The answer is a sentence ("Target activated"), not JSON.
        self.devtools_raw("GET", &format!("/json/activate/{id}"))
            .await;
    }

    /// Closes the extension's service worker through DevTools, as Chrome does when it stops or
    /// loses a worker; Chrome starts a new one at the next event (the popup opening, an alarm).
    pub async fn stop_service_worker(&self) {
        let targets = self.devtools_http("GET", "/json/list").await;
        let worker = targets
            .as_array()
            .expect("DevTools lists its targets")
            .iter()
            .find(|target| target["type"] == "service_worker")
            .and_then(|target| target["id"].as_str())
            .unwrap_or_else(|| panic!("no service worker among {targets}"))
            .to_owned();
        self.devtools_raw("GET", &format!("/json/close/{worker}"))
            .await;
    }

    /// One request to Chromium's DevTools HTTP endpoint; returns the JSON body.
    async fn devtools_http(&self, method: &str, path: &str) -> serde_json::Value {
        serde_json::from_slice(&self.devtools_raw(method, path).await).unwrap()
    }

    /// One request to Chromium's DevTools HTTP endpoint; returns the body.
    async fn devtools_raw(&self, method: &str, path: &str) -> Vec<u8> {
        let port = self.devtools_port().await;
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        // Chromium keeps the connection open after answering: read exactly one response.
        let mut reader = tokio::io::BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).await.unwrap();
        assert!(
            status.starts_with("HTTP/1.1 200"),
            "DevTools {method} {path} failed: {status}"
        );
        let mut length = 0;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).await.unwrap();
            if header.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).await.unwrap();
        body
    }

    /// Evaluates `expression` in a page through its DevTools WebSocket (a test's own eyes on a
    /// page the extension cannot script, such as its popup). A promise is awaited.
    pub async fn evaluate(page_ws: &str, expression: &str) -> serde_json::Value {
        let mut page = DevToolsPage::connect(page_ws).await.unwrap();
        page.evaluate(expression).await.unwrap()
    }

    async fn devtools_port(&self) -> u16 {
        let port_file = self.profile.join("DevToolsActivePort");
        crate::wait::eventually("DevToolsActivePort", Duration::from_secs(10), || async {
            let text = std::fs::read_to_string(&port_file).ok()?;
            text.lines().next()?.trim().parse::<u16>().ok()
        })
        .await
    }

    /// Kills Chromium and all its processes at once, as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let group = child.id() as i32;
            // SAFETY: signalling a process group we created; no memory is involved.
            unsafe {
                libc::kill(-group, libc::SIGKILL);
            }
            let _ = child.wait();
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.kill();
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else if entry.file_name() != "config.json" {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// One DevTools session on a page (its `webSocketDebuggerUrl`), commands answered in turn.
pub struct DevToolsPage {
    socket: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>,
    next: u64,
}

impl DevToolsPage {
    /// Opens the session.
    pub async fn connect(page_ws: &str) -> anyhow::Result<DevToolsPage> {
        use anyhow::Context;
        let (socket, _) = tokio_tungstenite::connect_async(page_ws)
            .await
            .context("connecting to the page's DevTools socket")?;
        Ok(DevToolsPage { socket, next: 0 })
    }

    /// Sends `method` and waits for its result (events meanwhile are skipped).
    pub async fn call(
        &mut self,
        method: &str,
        params: serde_json::Value,
    ) -> anyhow::Result<serde_json::Value> {
        use futures_util::{SinkExt, StreamExt};
        self.next += 1;
        let id = self.next;
        let call = serde_json::json!({"id": id, "method": method, "params": params});
        self.socket
            .send(tokio_tungstenite::tungstenite::Message::Text(
                call.to_string().into(),
            ))
            .await?;
        while let Some(message) = self.socket.next().await {
            let Ok(text) = message?.into_text() else {
                continue;
            };
            let reply: serde_json::Value = serde_json::from_str(&text)?;
            if reply["id"] == id {
                if let Some(error) = reply.get("error") {
                    anyhow::bail!("{method}: {error}");
                }
                return Ok(reply["result"].clone());
            }
        }
        anyhow::bail!("DevTools closed before answering {method}")
    }

    /// The value of `expression` in the page's own world; a promise is awaited.
    pub async fn evaluate(&mut self, expression: &str) -> anyhow::Result<serde_json::Value> {
        let params = serde_json::json!({
            "expression": expression, "returnByValue": true, "awaitPromise": true
        });
        let result = self.call("Runtime.evaluate", params).await?;
        Ok(result["result"]["value"].clone())
    }
}
