//! A scripted WebDriverAgent for tests and benchmarks: an HTTP server on loopback that answers
//! WDA's routes (the ones `tabwire-ios` calls, in WDA's envelope and error shapes) from a
//! [`Script`] of screens, and records every request. No Mac, simulator or iPhone exists where
//! the tests run; this is what stands in for one (testdata/README.md says what that proves).
//!
//! A screen is a page source (real ones from testdata/), the app it belongs to, and what moves
//! the script on: a tap on an element with a given label, an alert's buttons, a launch. A
//! screen can scroll: a swipe moves its table's elements by the swipe's distance, and WDA's
//! `visible` is worked out again from where they land, as a real list scrolls.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A dialog over a screen.
#[derive(Debug, Clone)]
pub struct ScriptAlert {
    /// `GET /alert/text`.
    pub text: String,
    /// Its buttons' labels, dismissing first and accepting last (as WDA picks them).
    pub buttons: Vec<String>,
    /// The screen each button leads to, by label.
    pub leads_to: BTreeMap<String, String>,
}

/// One screen of a script.
#[derive(Debug, Clone)]
pub struct ScriptScreen {
    /// The page source.
    pub source: String,
    /// The bundle ID of its app (`GET /wda/activeAppInfo`).
    pub app: String,
    /// Whether its table scrolls with swipes.
    pub scrolls: bool,
    /// A tap on the element with this label leads to that screen.
    pub taps: BTreeMap<String, String>,
    /// The alert showing over it.
    pub alert: Option<ScriptAlert>,
    /// Another app shown beside it (an iPad's Split View), which `/wda/apps/list` names.
    pub beside: Option<String>,
}

impl ScriptScreen {
    /// A screen of `app` showing `source`, with nothing scripted on it yet.
    pub fn new(app: &str, source: impl Into<String>) -> ScriptScreen {
        ScriptScreen {
            source: source.into(),
            app: app.to_owned(),
            scrolls: false,
            taps: BTreeMap::new(),
            alert: None,
            beside: None,
        }
    }

    /// Another app shows beside it.
    pub fn beside(mut self, app: &str) -> ScriptScreen {
        self.beside = Some(app.to_owned());
        self
    }

    /// A tap on `label` leads to `screen`.
    pub fn tap(mut self, label: &str, screen: &str) -> ScriptScreen {
        self.taps.insert(label.to_owned(), screen.to_owned());
        self
    }

    /// Its table scrolls.
    pub fn scrolling(mut self) -> ScriptScreen {
        self.scrolls = true;
        self
    }

    /// An alert shows over it: `/alert/*` answer for it, and its source shows it as WDA's
    /// does (an `Alert` element with its text and buttons, over the app's window).
    pub fn with_alert(mut self, alert: ScriptAlert) -> ScriptScreen {
        let escape = |text: &str| {
            text.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('"', "&quot;")
        };
        let text = escape(&alert.text);
        let mut element = format!(
            r#"<XCUIElementTypeAlert type="XCUIElementTypeAlert" name="{text}" label="{text}" enabled="true" visible="true" accessible="false" x="67" y="361" width="280" height="174" index="2"><XCUIElementTypeStaticText type="XCUIElementTypeStaticText" value="{text}" name="{text}" label="{text}" enabled="true" visible="true" accessible="true" x="83" y="381" width="248" height="60" index="0"/>"#
        );
        for (i, button) in alert.buttons.iter().enumerate() {
            let label = escape(button);
            let width = 280 / alert.buttons.len().max(1);
            element.push_str(&format!(
                r#"<XCUIElementTypeButton type="XCUIElementTypeButton" name="{label}" label="{label}" enabled="true" visible="true" accessible="true" x="{}" y="491" width="{width}" height="44" index="{}"/>"#,
                67 + i * width,
                i + 1
            ));
        }
        element.push_str("</XCUIElementTypeAlert>");
        if let Some(at) = self.source.rfind("</XCUIElementTypeApplication>") {
            self.source.insert_str(at, &element);
        }
        self.alert = Some(alert);
        self
    }
}

/// The device a script plays.
#[derive(Debug, Clone)]
pub struct Script {
    /// The screens by name.
    pub screens: BTreeMap<String, ScriptScreen>,
    /// The screen shown first.
    pub start: String,
    /// The screen each installed app opens on, by bundle ID.
    pub apps: BTreeMap<String, String>,
    /// `/wda/device/info`'s `uuid`.
    pub uuid: String,
    /// The screen in points.
    pub size: (u32, u32),
}

/// One request the scripted WDA received.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// `GET`, `POST`, `DELETE`.
    pub method: String,
    /// The path, with the session's ID written `:id`.
    pub path: String,
    /// The JSON body (`null` when there was none).
    pub body: Value,
}

#[derive(Debug)]
struct Playing {
    script: Script,
    screen: String,
    /// Scroll offsets by screen, in points.
    offsets: BTreeMap<String, i64>,
    session: Option<String>,
    sessions_made: u32,
    recorded: Vec<Recorded>,
}

/// A running scripted WDA. It stops when dropped.
pub struct ScriptedWda {
    url: String,
    playing: Arc<Mutex<Playing>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ScriptedWda {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ScriptedWda {
    /// Starts serving `script` on a free loopback port.
    pub async fn start(script: Script) -> std::io::Result<ScriptedWda> {
        ScriptedWda::start_at(script, 0).await
    }

    /// Starts serving `script` on loopback `port` (WDA's own 8100 for clients that know no
    /// other; 0 for a free one).
    pub async fn start_at(script: Script, port: u16) -> std::io::Result<ScriptedWda> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let url = format!("http://{}", listener.local_addr()?);
        let screen = script.start.clone();
        let playing = Arc::new(Mutex::new(Playing {
            script,
            screen,
            offsets: BTreeMap::new(),
            session: None,
            sessions_made: 0,
            recorded: Vec::new(),
        }));
        let shared = playing.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let playing = shared.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, &playing).await;
                });
            }
        });
        Ok(ScriptedWda { url, playing, task })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The requests so far.
    pub fn recorded(&self) -> Vec<Recorded> {
        self.playing.lock().unwrap().recorded.clone()
    }

    /// Forgets the requests so far.
    pub fn clear_recorded(&self) {
        self.playing.lock().unwrap().recorded.clear();
    }

    /// The screen showing now.
    pub fn screen(&self) -> String {
        self.playing.lock().unwrap().screen.clone()
    }

    /// Shows `screen` now, as if the person had moved the device there.
    pub fn show(&self, screen: &str) {
        self.playing.lock().unwrap().screen = screen.to_owned();
    }

    /// Ends WDA's session, as a WDA restart does.
    pub fn end_session(&self) {
        self.playing.lock().unwrap().session = None;
    }

    /// How many sessions were made.
    pub fn sessions_made(&self) -> u32 {
        self.playing.lock().unwrap().sessions_made
    }
}

/// Answers one connection's request.
async fn serve(mut stream: TcpStream, playing: &Mutex<Playing>) -> std::io::Result<()> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 || buffer.len() > 1024 * 1024 {
            return Ok(());
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut words = head.split_whitespace();
    let method = words.next().unwrap_or("").to_owned();
    let target = words.next().unwrap_or("").to_owned();
    let length = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    // `/source/` is `/source`, as WDA's router has it.
    let path = match path.strip_suffix('/') {
        Some(trimmed) if !trimmed.is_empty() => trimmed.to_owned(),
        _ => path.to_owned(),
    };
    let json_source = query.split('&').any(|pair| pair == "format=json");
    let (status, mut value) = playing.lock().unwrap().answer(&method, &path, body);
    if json_source
        && status == 200
        && path.ends_with("/source")
        && let Some(xml) = value.as_str()
    {
        value = json_source_of(xml);
    }
    let session = playing.lock().unwrap().session.clone();
    let envelope = json!({"value": value, "sessionId": session});
    let text = serde_json::to_vec_pretty(&envelope).expect("JSON values serialise");
    let reason = if status == 200 { "OK" } else { "Error" };
    let mut response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json;charset=UTF-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        text.len()
    )
    .into_bytes();
    response.extend_from_slice(&text);
    stream.write_all(&response).await?;
    stream.shutdown().await
}

/// A page source in WDA's JSON format (`GET /source?format=json`): each element's type without
/// its `XCUIElementType` prefix, `name`, `label`, `value` and `rawIdentifier` (null when
/// absent), `rect`, `isEnabled`/`isVisible`/`isAccessible` as "1" or "0", and its children.
fn json_source_of(xml: &str) -> Value {
    fn element(node: roxmltree::Node) -> Option<Value> {
        let kind = node.tag_name().name().strip_prefix("XCUIElementType")?;
        let text = |name: &str| node.attribute(name).map_or(Value::Null, |v| json!(v));
        let number = |name: &str| {
            node.attribute(name)
                .and_then(|v| v.parse::<f64>().ok())
                .map_or(json!(0), |v| json!(v))
        };
        let flag = |name: &str| match node.attribute(name) {
            Some("false") => "0",
            Some(_) => "1",
            None if name == "accessible" => "0",
            None => "1",
        };
        let label = node.attribute("label");
        let identifier = node
            .attribute("name")
            .filter(|name| Some(*name) != label && !name.is_empty());
        let children: Vec<Value> = node.children().filter_map(element).collect();
        Some(json!({
            "type": kind,
            "name": text("name"),
            "label": text("label"),
            "value": text("value"),
            "rawIdentifier": identifier.map_or(Value::Null, |id| json!(id)),
            "rect": {"x": number("x"), "y": number("y"), "width": number("width"), "height": number("height")},
            "isEnabled": flag("enabled"),
            "isVisible": flag("visible"),
            "isAccessible": flag("accessible"),
            "children": children,
        }))
    }
    roxmltree::Document::parse(xml)
        .ok()
        .and_then(|doc| {
            doc.descendants()
                .find(|n| n.tag_name().name() == "XCUIElementTypeApplication")
                .and_then(element)
        })
        .unwrap_or(Value::Null)
}

fn error(status: u16, error: &str, message: &str) -> (u16, Value) {
    (
        status,
        json!({"error": error, "message": message, "traceback": ""}),
    )
}

impl Playing {
    fn answer(&mut self, method: &str, path: &str, body: Value) -> (u16, Value) {
        // `/session/ID/x` → `/x`, under the session.
        let (session, route) = match path.strip_prefix("/session/") {
            Some(rest) => match rest.split_once('/') {
                Some((id, route)) => (Some(id.to_owned()), format!("/{route}")),
                None => (Some(rest.to_owned()), String::new()),
            },
            None => (None, path.to_owned()),
        };
        self.recorded.push(Recorded {
            method: method.to_owned(),
            path: match &session {
                Some(_) => format!("/session/:id{route}"),
                None => path.to_owned(),
            },
            body: body.clone(),
        });
        if let Some(id) = &session
            && self.session.as_ref() != Some(id)
        {
            return error(404, "invalid session id", "Session does not exist");
        }
        let screen = self.script.screens[&self.screen].clone();
        let (width, height) = self.script.size;
        match (method, route.as_str(), session.is_some()) {
            ("GET", "/status", false) => (
                200,
                json!({"ready": true, "message": "WebDriverAgent is ready to accept commands",
                       "state": "success", "os": {"name": "iOS", "version": "17.5", "sdkVersion": "17.5"},
                       "ios": {"simulatorVersion": "17.5", "ip": null},
                       "build": {"productBundleIdentifier": "com.facebook.WebDriverAgentRunner", "version": "16.7.0"},
                       "device": "iphone"}),
            ),
            ("POST", "/session", false) => {
                self.sessions_made += 1;
                let id = format!("5B0A3C9E-0000-4000-8000-{:012}", self.sessions_made);
                self.session = Some(id.clone());
                (
                    200,
                    json!({"sessionId": id, "capabilities": {"device": "iphone", "sdkVersion": "17.5"}}),
                )
            }
            ("DELETE", "", true) => {
                self.session = None;
                (200, Value::Null)
            }
            ("GET", "/wda/device/info", _) => (
                200,
                json!({"currentLocale": "en_US", "timeZone": "Europe/Paris", "name": "Test iPhone",
                       "model": "iPhone", "uuid": self.script.uuid, "userInterfaceIdiom": 0,
                       "userInterfaceStyle": "light", "isSimulator": true, "thermalState": 0}),
            ),
            ("GET", "/wda/screen", _) => (
                200,
                json!({"screenSize": {"width": width, "height": height},
                       "statusBarSize": {"width": width, "height": 47}, "scale": 3}),
            ),
            ("GET", "/window/size", _) => (200, json!({"width": width, "height": height})),
            ("GET", "/source", _) => (200, json!(self.source(&screen))),
            ("GET", "/wda/apps/list", true) => {
                let mut apps = vec![json!({"pid": 4242, "bundleId": screen.app})];
                if let Some(beside) = &screen.beside {
                    apps.push(json!({"pid": 4343, "bundleId": beside}));
                }
                apps.push(json!({"pid": 1, "bundleId": "com.apple.springboard"}));
                (200, Value::Array(apps))
            }
            ("GET", "/wda/activeAppInfo", _) => (
                200,
                json!({"pid": 4242, "bundleId": screen.app, "name": "",
                       "processArguments": {"args": [], "env": {}}}),
            ),
            ("GET", "/screenshot", _) => {
                let png = tabwire_device_kit::screenshot::png_of(width, height);
                (
                    200,
                    json!(base64::engine::general_purpose::STANDARD.encode(png)),
                )
            }
            ("POST", "/wda/tap", true) => {
                let (x, y) = (number(&body, "x"), number(&body, "y"));
                if let Some(next) = self.tapped(&screen, x, y) {
                    self.screen = next;
                }
                (200, Value::Null)
            }
            ("POST", "/actions", true) => {
                if let Some(next) = self.touched(&screen, &body) {
                    self.screen = next;
                }
                (200, Value::Null)
            }
            ("POST", "/wda/keys", true) => match body.get("value") {
                Some(Value::Array(_)) => (200, Value::Null),
                _ => error(500, "unknown error", "value must be an array of strings"),
            },
            ("POST", "/wda/pressButton", true) => match body.get("name").and_then(Value::as_str) {
                Some("home" | "volumeUp" | "volumeDown") => (200, Value::Null),
                _ => error(
                    500,
                    "unknown error",
                    "The button is not supported. The device under test only supports the following buttons: (home, volumeUp, volumeDown)",
                ),
            },
            ("POST", "/wda/lock" | "/wda/keyboard/dismiss", _) => (200, Value::Null),
            ("POST", "/wda/apps/state", true) => {
                let id = body.get("bundleId").and_then(Value::as_str).unwrap_or("");
                let state = if screen.app == id {
                    4
                } else if self.script.apps.contains_key(id) {
                    1
                } else {
                    0
                };
                (200, json!(state))
            }
            ("POST", "/wda/apps/launch", true) => {
                let id = body.get("bundleId").and_then(Value::as_str).unwrap_or("");
                match self.script.apps.get(id) {
                    Some(start) => {
                        self.screen = start.clone();
                        (200, Value::Null)
                    }
                    None => error(
                        500,
                        "session not created",
                        &format!(
                            "Cannot launch {id} application. Make sure the correct bundle identifier has been provided"
                        ),
                    ),
                }
            }
            ("POST", "/wda/apps/terminate", true) => (200, json!(true)),
            ("GET", "/alert/text", _) => match &screen.alert {
                Some(alert) => (200, json!(alert.text)),
                None => error(
                    404,
                    "no such alert",
                    "An attempt was made to operate on a modal dialog when one was not open",
                ),
            },
            ("GET", "/wda/alert/buttons", true) => match &screen.alert {
                Some(alert) => (200, json!(alert.buttons)),
                None => error(
                    404,
                    "no such alert",
                    "An attempt was made to operate on a modal dialog when one was not open",
                ),
            },
            ("POST", "/alert/accept" | "/alert/dismiss", _) => {
                let Some(alert) = &screen.alert else {
                    return error(404, "no such alert", "No alert is open");
                };
                let label = match body.get("name").and_then(Value::as_str) {
                    Some(name) => name.to_owned(),
                    None if route == "/alert/accept" => {
                        alert.buttons.last().cloned().unwrap_or_default()
                    }
                    None => alert.buttons.first().cloned().unwrap_or_default(),
                };
                match alert.leads_to.get(&label) {
                    Some(next) => {
                        self.screen = next.clone();
                        (200, Value::Null)
                    }
                    None => error(
                        400,
                        "invalid element state",
                        &format!("Failed to find button with label '{label}' for alert"),
                    ),
                }
            }
            _ => error(
                404,
                "unknown command",
                &format!("Unhandled endpoint: {path} with parameters {body}"),
            ),
        }
    }

    /// The screen's source, its table moved by the screen's scroll offset.
    fn source(&self, screen: &ScriptScreen) -> String {
        let offset = self.offsets.get(&self.screen).copied().unwrap_or(0);
        if !screen.scrolls || offset == 0 {
            return screen.source.clone();
        }
        scrolled(&screen.source, offset, self.script.size.1)
    }

    /// Where a tap at (x, y) leads: the first element with a scripted label whose frame holds
    /// the point, in the source as served.
    fn tapped(&self, screen: &ScriptScreen, x: f64, y: f64) -> Option<String> {
        let source = self.source(screen);
        let document = roxmltree::Document::parse(&source).ok()?;
        document.descendants().find_map(|node| {
            let label = node.attribute("label")?;
            let next = screen.taps.get(label)?;
            let at = |name: &str| node.attribute(name)?.parse::<f64>().ok();
            let (left, top, w, h) = (at("x")?, at("y")?, at("width")?, at("height")?);
            (node.attribute("visible") != Some("false")
                && (left..left + w).contains(&x)
                && (top..top + h).contains(&y))
            .then(|| next.clone())
        })
    }

    /// A touch action: a touch that does not move is a tap (where it leads, as `/wda/tap`); a
    /// swipe scrolls a scrolling screen by the finger's vertical travel.
    fn touched(&mut self, screen: &ScriptScreen, body: &Value) -> Option<String> {
        let moves: Vec<&Value> = body
            .pointer("/actions/0/actions")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter(|m| m["type"] == "pointerMove").collect())
            .unwrap_or_default();
        match moves.as_slice() {
            [at] => self.tapped(screen, number(at, "x"), number(at, "y")),
            [start, end] if screen.scrolls => {
                let travel = number(start, "y") - number(end, "y");
                let limit = scroll_limit(&screen.source, self.script.size.1);
                let offset = self.offsets.entry(self.screen.clone()).or_default();
                *offset = (*offset + travel.round() as i64).clamp(0, limit);
                None
            }
            _ => None,
        }
    }
}

fn number(value: &Value, name: &str) -> f64 {
    value.get(name).and_then(Value::as_f64).unwrap_or(-1.0)
}

/// How far a source's table can scroll: until its last element's bottom reaches the screen's.
fn scroll_limit(source: &str, height: u32) -> i64 {
    let Some((start, end)) = table_span(source) else {
        return 0;
    };
    let bottom = tags(&source[start..end])
        .filter_map(|tag| Some(attr(tag, "y")? + attr(tag, "height")?))
        .fold(0.0f64, f64::max);
    (bottom - f64::from(height)).max(0.0) as i64
}

/// Where the first table's inside is.
fn table_span(source: &str) -> Option<(usize, usize)> {
    let open = source.find("<XCUIElementTypeTable")?;
    let start = open + source[open..].find('>')? + 1;
    let end = start + source[start..].find("</XCUIElementTypeTable>")?;
    Some((start, end))
}

/// The opening tags of elements in `text`.
fn tags(text: &str) -> impl Iterator<Item = &str> {
    text.split("<XCUIElementType")
        .skip(1)
        .filter_map(|rest| rest.find('>').map(|end| &rest[..end]))
}

fn attr(tag: &str, name: &str) -> Option<f64> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    tag[at..at + tag[at..].find('"')?].parse().ok()
}

/// `source` with its table's elements moved up by `offset` points and their `visible` worked
/// out again (on the screen below its top 92 points, the navigation bar).
fn scrolled(source: &str, offset: i64, height: u32) -> String {
    let Some((start, end)) = table_span(source) else {
        return source.to_owned();
    };
    let inside = &source[start..end];
    let mut out = String::with_capacity(source.len());
    out.push_str(&source[..start]);
    let mut rest = inside;
    while let Some(at) = rest.find("<XCUIElementType") {
        out.push_str(&rest[..at]);
        let tag_end = at + rest[at..].find('>').unwrap_or(rest.len() - at);
        let tag = &rest[at..tag_end];
        let moved = match (attr(tag, "y"), attr(tag, "height")) {
            (Some(y), Some(h)) => {
                let y2 = y - offset as f64;
                let visible = y2 + h > 92.0 && y2 < f64::from(height);
                let tag = replace_attr(tag, "y", &format!("{y2}"));
                if tag.contains(" visible=\"") {
                    replace_attr(&tag, "visible", if visible { "true" } else { "false" })
                } else {
                    tag
                }
            }
            _ => tag.to_owned(),
        };
        out.push_str(&moved);
        rest = &rest[tag_end..];
    }
    out.push_str(rest);
    out.push_str(&source[end..]);
    out
}

fn replace_attr(tag: &str, name: &str, value: &str) -> String {
    let key = format!(" {name}=\"");
    let Some(at) = tag.find(&key) else {
        return tag.to_owned();
    };
    let from = at + key.len();
    let to = from + tag[from..].find('"').unwrap_or(0);
    format!("{}{value}{}", &tag[..from], &tag[to..])
}

/// The test data's page sources (testdata/README.md says where each comes from).
pub mod sources {
    /// The Settings app's top screen in Chinese, a table of 61 cells.
    pub const SETTINGS_ZH: &str = include_str!("../testdata/settings-zh-list.xml");
    /// Appium's demo app's login screen.
    pub const THEAPP_LOGIN: &str = include_str!("../testdata/theapp-login.xml");
    /// A registration form with a status bar.
    pub const REGISTRATION: &str =
        include_str!("../testdata/shirates-registration-form-statusbar.xml");
    /// The Settings app's top screen in English.
    pub const SETTINGS_EN: &str = include_str!("../testdata/shirates-settings-top-en.xml");
    /// The Calendar app's day view in Japanese.
    pub const CALENDAR_JA: &str = include_str!("../testdata/shirates-calendar-day-ja.xml");
}

/// The script the tests and the benchmark play: Settings (a long list that scrolls), the demo
/// app's login form (typing, a login that raises an alert), a registration form, and the
/// calendar.
pub fn demo_script() -> Script {
    let login_alert = ScriptAlert {
        text: "Invalid login credentials, please try again".into(),
        buttons: vec!["OK".into()],
        leads_to: BTreeMap::from([("OK".to_owned(), "login".to_owned())]),
    };
    let screens = BTreeMap::from([
        (
            "settings".to_owned(),
            ScriptScreen::new("com.apple.Preferences", sources::SETTINGS_ZH)
                .scrolling()
                .tap("通用", "settings-en"),
        ),
        (
            "settings-en".to_owned(),
            ScriptScreen::new("com.apple.Preferences", sources::SETTINGS_EN),
        ),
        (
            "login".to_owned(),
            ScriptScreen::new("io.cloudgrey.the-app", sources::THEAPP_LOGIN)
                .tap("loginBtn", "login-failed"),
        ),
        (
            "login-failed".to_owned(),
            ScriptScreen::new("io.cloudgrey.the-app", sources::THEAPP_LOGIN)
                .with_alert(login_alert),
        ),
        (
            "location-prompt".to_owned(),
            ScriptScreen::new("com.apple.springboard", sources::THEAPP_LOGIN).with_alert(
                ScriptAlert {
                    text: "Allow “TheApp” to use your location?".into(),
                    buttons: vec![
                        "Allow Once".into(),
                        "Allow While Using App".into(),
                        "Don’t Allow".into(),
                    ],
                    leads_to: BTreeMap::from([
                        ("Allow Once".to_owned(), "login".to_owned()),
                        ("Allow While Using App".to_owned(), "login".to_owned()),
                        ("Don’t Allow".to_owned(), "login".to_owned()),
                    ]),
                },
            ),
        ),
        (
            "split".to_owned(),
            ScriptScreen::new("io.cloudgrey.the-app", sources::THEAPP_LOGIN)
                .beside("com.example.bank"),
        ),
        (
            "landscape".to_owned(),
            ScriptScreen::new(
                "com.apple.mobilecal",
                sources::CALENDAR_JA.replacen(
                    r#"width="390" height="844""#,
                    r#"width="844" height="390""#,
                    1,
                ),
            ),
        ),
        (
            "registration".to_owned(),
            ScriptScreen::new("dev.example.register", sources::REGISTRATION),
        ),
        (
            "calendar".to_owned(),
            ScriptScreen::new("com.apple.mobilecal", sources::CALENDAR_JA),
        ),
    ]);
    Script {
        screens,
        start: "settings".into(),
        apps: BTreeMap::from([
            ("com.apple.Preferences".to_owned(), "settings".to_owned()),
            ("io.cloudgrey.the-app".to_owned(), "login".to_owned()),
            ("dev.example.register".to_owned(), "registration".to_owned()),
            ("com.apple.mobilecal".to_owned(), "calendar".to_owned()),
        ]),
        uuid: "8C2E5B7A-1D34-4F6B-9A0E-3B5C7D9E1F20".into(),
        size: (414, 896),
    }
}
