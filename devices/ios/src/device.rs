//! One iPhone or simulator behind a WebDriverAgent, as the hub's operations see it: the kit's
//! [`Served`], each operation a few WDA calls.
//!
//! - **Looking**: `GET /source` (the front app's tree), plus `GET /wda/activeAppInfo` when the
//!   source does not name its app's bundle ID (WDA before 5). Every app a look shows must allow
//!   reading.
//! - **Acting**: a tap is `POST /wda/tap` at the node's centre, a long press and a swipe a W3C
//!   touch action (`POST /actions`), typing `POST /wda/keys`. Before input goes out, the app
//!   in front must allow acting: the one the latest look showed, and, while any app rule
//!   restricts something, the one WDA says is in front right now (one more call). WDA has no
//!   guard that runs with the input, as Android's shell line does, so the time between that
//!   read and the input is the window in which another app could come to the front.
//! - **Settling**: after an action, the source is read again while an activity indicator
//!   shows, and once more when the first read still shows the screen from before the action
//!   (WDA waits for the app to be idle before it answers, so this is rare), within the
//!   deadline.
//! - **Sessions**: WDA's routes for input need a session; one is made (`POST /session` with no
//!   app to launch) on the first such call and made again when WDA says it is gone.
//!
//! Coordinates are points, as XCUITest's: the screen a hello announces, node bounds, tap
//! coordinates and a screenshot's `screenWidth` all count points (a screenshot's pixels are
//! scaled to them).

use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use tabwire_device_kit::cancel::Cancel;
use tabwire_device_kit::gesture::{
    MAX_GESTURE_MS, Scroller, after_input, check_duration, check_swipe, named_ref, scroll_to,
    swipe_end, swipe_points,
};
use tabwire_device_kit::link::Served;
use tabwire_device_kit::node::Extent;
use tabwire_device_kit::queue::{Forgets, Queue, unless_cancelled};
use tabwire_device_kit::refs::RefTable;
use tabwire_device_kit::safety::Safety;
use tabwire_device_kit::view::{Screen, Views};
use tabwire_protocol::Settling;
use tabwire_protocol::devices::{
    AppClosed, Button, CloseApp, DeviceActed, DeviceHello, DeviceOp, DeviceReleased, DeviceResult,
    DeviceSwipe, DeviceType, DismissAlert, MAX_TYPED_CHARS, ObserveAfter, OpenApp, Platform,
    PressTarget, ScreenSize, is_package_name,
};
use tabwire_protocol::policy::{Need, Policy};
use tabwire_protocol::refs::DeviceRef;
use tabwire_protocol::{ErrorCode, LeaseHolder, OpError, PROTOCOL_VERSION};
use tabwire_protocol::{Point, Rect};
use tokio::time::Instant;

use crate::source::{read_source, source_bundle_id, with_app};
use crate::wda::{Method, Wda, WdaError};

/// The longest one WDA call may take, whatever the deadline.
const WDA_TIMEOUT: Duration = Duration::from_secs(30);
/// The most looks of one settle loop.
const MAX_SETTLE_LOOKS: u32 = 5;
/// The system's own app: the home screen, Notification Center, system alerts.
const SPRINGBOARD: &str = "com.apple.springboard";
/// The longest name or model a hello carries.
const MAX_HELLO_TEXT: usize = 80;

/// What the backend learns about a device before announcing it.
#[derive(Debug, Clone, PartialEq)]
pub struct IosFacts {
    /// `ios-` and the device's identifier for vendor (WDA's `uuid`), or, when WDA gives none,
    /// a digest of its URL.
    pub device_id: String,
    /// The device's name (`Anna's iPhone`).
    pub name: String,
    /// `iPhone`, `iPad`; `(simulator)` after it for a simulator.
    pub model: String,
    /// `17.5`.
    pub os_version: String,
    /// The screen in points.
    pub screen: ScreenSize,
    /// Pixels per point.
    pub scale: f64,
}

impl IosFacts {
    /// Reads a device's facts from its WDA: `/status`, `/wda/device/info`, `/wda/screen`.
    pub async fn probe(wda: &Wda) -> Result<IosFacts, String> {
        let timeout = Duration::from_secs(15);
        let status = wda
            .call(Method::Get, "/status", None, timeout)
            .await
            .map_err(|e| e.to_string())?;
        if status.get("ready").and_then(Value::as_bool) == Some(false) {
            return Err(format!(
                "WebDriverAgent at {} is not ready: {}",
                wda.url().display(),
                text_of(&status, "message")
            ));
        }
        let info = wda
            .call(Method::Get, "/wda/device/info", None, timeout)
            .await
            .map_err(|e| e.to_string())?;
        let screen = wda
            .call(Method::Get, "/wda/screen", None, timeout)
            .await
            .map_err(|e| e.to_string())?;
        let size = |name: &str| {
            screen
                .get("screenSize")
                .and_then(|s| s.get(name))
                .and_then(Value::as_f64)
                .filter(|v| {
                    *v >= 1.0 && *v <= f64::from(tabwire_protocol::devices::MAX_SCREEN_SIDE)
                })
                .map(|v| v.round() as u32)
        };
        let (Some(width), Some(height)) = (size("width"), size("height")) else {
            return Err(format!(
                "WebDriverAgent at {} did not report the screen's size (/wda/screen)",
                wda.url().display()
            ));
        };
        let scale = screen
            .get("scale")
            .and_then(Value::as_f64)
            .filter(|s| (1.0..=4.0).contains(s))
            .unwrap_or(1.0);
        let uuid: String = text_of(&info, "uuid")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .take(64)
            .collect();
        let device_id = if uuid.len() >= 8 && uuid != "unknown" {
            format!("ios-{}", uuid.to_ascii_lowercase())
        } else {
            use sha2::Digest as _;
            let digest = sha2::Sha256::digest(wda.url().display().as_bytes());
            let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
            format!("ios-wda-{hex}")
        };
        let simulator = info.get("isSimulator").and_then(Value::as_bool) == Some(true);
        let mut model = clean(&text_of(&info, "model"));
        if model.is_empty() {
            model = "iOS device".into();
        }
        if simulator {
            model.push_str(" (simulator)");
        }
        let os = status.get("os").cloned().unwrap_or(Value::Null);
        Ok(IosFacts {
            device_id,
            name: clean(&text_of(&info, "name")),
            model,
            os_version: clean(&text_of(&os, "version")),
            screen: ScreenSize { width, height },
            scale,
        })
    }

    /// The hello announcing the device.
    pub fn hello(&self) -> DeviceHello {
        DeviceHello {
            device_id: self.device_id.clone(),
            device_name: if self.name.is_empty() {
                self.model.clone()
            } else {
                self.name.clone()
            },
            platform: Platform::Ios,
            model: self.model.clone(),
            os_version: if self.os_version.is_empty() {
                "iOS".into()
            } else {
                format!("iOS {}", self.os_version)
            },
            screen: self.screen,
            backend_version: env!("CARGO_PKG_VERSION").into(),
            protocol_version: PROTOCOL_VERSION,
            proof: None,
        }
    }
}

fn text_of(value: &Value, name: &str) -> String {
    value
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// A device's words for a hello: printable, trimmed, bounded.
fn clean(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control())
        .take(MAX_HELLO_TEXT)
        .collect::<String>()
        .trim()
        .to_owned()
}

/// How the backend was started, as far as a device's operations care.
#[derive(Debug, Clone, Default)]
pub struct IosOptions {
    /// The device owner's policy (`--policy FILE`); the stricter of it and the operator's
    /// applies.
    pub owner_policy: Option<Policy>,
}

/// What a device remembers between operations.
#[derive(Debug, Default)]
struct State {
    refs: RefTable,
    views: Views,
    /// The latest look: what refs resolve against.
    screen: Option<Screen>,
    /// Whether `screen` was cleared by an action that did not look afterwards.
    unobserved: bool,
    /// WDA's session for routes that need one.
    session: Option<String>,
    /// The last app other than SpringBoard a look showed: the app a system alert is about.
    last_app: Option<String>,
    /// The app's frame in the latest look, in screen points.
    frame: Option<Rect>,
}

impl Forgets for State {
    fn forget(&mut self, session: &str) {
        self.views.forget(session);
    }
}

/// One device behind a WebDriverAgent.
pub struct IosDevice {
    wda: Wda,
    through: String,
    facts: IosFacts,
    safety: Safety,
    queue: Queue<State>,
}

impl IosDevice {
    /// The device behind `wda`.
    pub fn new(wda: Wda, facts: IosFacts, options: IosOptions) -> Self {
        IosDevice {
            through: wda.url().display(),
            wda,
            facts,
            safety: Safety::new(options.owner_policy),
            queue: Queue::default(),
        }
    }

    /// What was learnt when it was probed.
    pub fn facts(&self) -> &IosFacts {
        &self.facts
    }
}

impl Served for IosDevice {
    async fn execute_unless(
        &self,
        op: DeviceOp,
        holder: Option<LeaseHolder>,
        viewer: &str,
        deadline: Duration,
        cancel: &Cancel,
    ) -> Result<DeviceResult, OpError> {
        let deadline = Instant::now() + deadline;
        let mut state = self.queue.turn(deadline, cancel).await?;
        if op.is_mutation() {
            self.safety.check(holder.as_ref())?;
        }
        let mut run = Run {
            device: self,
            state: &mut state,
            deadline,
            holder: holder.as_ref(),
            viewer,
            cancel,
        };
        let outcome = unless_cancelled(run.execute(op), cancel).await;
        if outcome.is_err() && cancel.is_cancelled() && cancel.input_sent() {
            state.screen = None;
        }
        outcome
    }

    fn session_ended(&self, session: &str) {
        self.safety.session_ended(session);
        self.queue.session_ended(session);
    }

    fn set_operator_policy(&self, policy: Policy) {
        self.safety.set_operator_policy(policy);
    }

    fn reached_through(&self) -> &str {
        &self.through
    }
}

/// One operation, holding its device's queue.
struct Run<'a> {
    device: &'a IosDevice,
    state: &'a mut State,
    deadline: Instant,
    holder: Option<&'a LeaseHolder>,
    viewer: &'a str,
    cancel: &'a Cancel,
}

impl Run<'_> {
    async fn execute(&mut self, op: DeviceOp) -> Result<DeviceResult, OpError> {
        if let Some(target) = named_ref(&op)
            && self.state.screen.is_none()
            && self.state.unobserved
        {
            // As on Android: a ref outlives an action that did not look afterwards.
            let issued = self.state.refs.last_issued();
            self.look().await?;
            if target.0 > issued {
                self.state.screen = None;
                self.state.unobserved = true;
            }
        }
        match op {
            DeviceOp::Snapshot(snapshot) => {
                let screen = self.look().await?;
                Ok(DeviceResult::Snapshot(self.state.views.observe(
                    &screen,
                    &snapshot.view,
                    self.viewer,
                    false,
                    None,
                )))
            }
            DeviceOp::Tap(tap) => {
                let at = self.resolve_to_act(tap.target)?.centre();
                let app = self.tap(at).await?;
                self.acted(app, Some(at), &tap.observe).await
            }
            DeviceOp::TapCoordinates(tap) => {
                let at = self.check_point(tap.point)?;
                self.judge_point(at)?;
                let app = self.tap(at).await?;
                self.acted(app, Some(at), &tap.observe).await
            }
            DeviceOp::LongPress(press) => {
                check_duration(press.duration_ms)?;
                let at = match press.target {
                    PressTarget::Ref(target) => self.resolve_to_act(target)?.centre(),
                    PressTarget::Point(point) => {
                        let at = self.check_point(point)?;
                        self.judge_point(at)?;
                        at
                    }
                };
                let app = self.touch(at, at, press.duration_ms, true).await?;
                self.acted(app, Some(at), &press.observe).await
            }
            DeviceOp::Type(typing) => self.type_text(typing).await,
            DeviceOp::Swipe(swipe) => self.swipe(swipe).await,
            DeviceOp::PressButton(press) => {
                let app = self.press(press.button).await?;
                self.acted(app, None, &press.observe).await
            }
            DeviceOp::OpenApp(open) => self.open_app(open).await,
            DeviceOp::CloseApp(close) => self.close_app(close).await,
            DeviceOp::DismissKeyboard(dismiss) => {
                let app = self.before_input().await?;
                self.input(Method::Post, "/wda/keyboard/dismiss", Some(json!({})))
                    .await?;
                self.acted(app, None, &dismiss.observe).await
            }
            DeviceOp::Screenshot(request) => self.screenshot(request.max_width).await,
            DeviceOp::Logs(_) => Err(OpError::new(
                ErrorCode::DeviceError,
                "WebDriverAgent offers no device log. Read an iPhone's log on the Mac it is \
                 attached to (Console, `idevicesyslog`), or a simulator's with `xcrun simctl \
                 spawn booted log stream`.",
            )),
            DeviceOp::Release(_) => Ok(DeviceResult::Released(DeviceReleased {
                released: self.device.safety.release(self.holder)?,
            })),
            DeviceOp::DismissAlert(dismiss) => self.dismiss_alert(dismiss).await,
            DeviceOp::ScreenRecording(_) => Err(OpError::new(
                ErrorCode::DeviceError,
                "WebDriverAgent keeps its screen recordings on the Mac the device is attached to \
                 (as XCTest attachments) and cannot hand them over; record there (`xcrun simctl \
                 io booted recordVideo`, QuickTime) instead.",
            )),
            DeviceOp::InstallApp(_) => Err(OpError::new(
                ErrorCode::DeviceError,
                "WebDriverAgent cannot install apps; install on the Mac the device is attached to \
                 (`xcrun simctl install booted App.app`, `xcrun devicectl device install app`).",
            )),
            DeviceOp::ScrollToElement(scroll) => {
                let scrolled = scroll_to(self, &scroll).await?;
                let observation = scroll.observe.as_ref().map(|view| {
                    self.state
                        .views
                        .observe(&scrolled.screen, view, self.viewer, true, None)
                });
                Ok(scrolled.acted(observation))
            }
        }
    }

    fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// One WDA call within the deadline; `session` puts it under WDA's session (made when
    /// there is none, and made again once when WDA says it is gone).
    async fn call(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Value>,
        session: bool,
    ) -> Result<Value, OpError> {
        if self.cancel.is_cancelled() {
            return Err(OpError::cancelled(self.cancel.input_sent()));
        }
        let mut renewed = false;
        loop {
            let full = if session {
                format!("/session/{}{path}", self.session().await?)
            } else {
                path.to_owned()
            };
            let remaining = self.remaining();
            if remaining.is_zero() {
                return Err(deadline_passed());
            }
            match self
                .device
                .wda
                .call(method, &full, body.as_ref(), remaining.min(WDA_TIMEOUT))
                .await
            {
                Err(gone) if session && gone.session_gone() && !renewed => {
                    // The input did not run: WDA refused the session before the route.
                    self.state.session = None;
                    renewed = true;
                }
                outcome => return outcome.map_err(|e| self.op_error(e)),
            }
        }
    }

    /// WDA's session, made when there is none.
    async fn session(&mut self) -> Result<String, OpError> {
        if let Some(id) = &self.state.session {
            return Ok(id.clone());
        }
        let remaining = self.remaining();
        let created = self
            .device
            .wda
            .call(
                Method::Post,
                "/session",
                Some(&json!({"capabilities": {"alwaysMatch": {}, "firstMatch": [{}]}})),
                remaining.min(WDA_TIMEOUT),
            )
            .await
            .map_err(|e| self.op_error(e))?;
        let id: String = created
            .get("sessionId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .take(64)
            .collect();
        if id.is_empty() {
            return Err(OpError::new(
                ErrorCode::DeviceError,
                "WebDriverAgent made a session without an ID",
            ));
        }
        self.state.session = Some(id.clone());
        Ok(id)
    }

    fn op_error(&self, error: WdaError) -> OpError {
        match &error {
            WdaError::Unreachable { .. } => {
                OpError::new(ErrorCode::DeviceDisconnected, error.to_string())
            }
            WdaError::Timeout { .. } if self.remaining().is_zero() => deadline_passed(),
            WdaError::Answered { error: kind, .. } if kind == "no such alert" => OpError::new(
                ErrorCode::NoDialog,
                "No alert shows on the device; nothing was pressed.",
            ),
            _ => OpError::new(ErrorCode::DeviceError, error.to_string()),
        }
    }

    /// A call that sends input: from here on a cancel says the action may have happened.
    async fn input(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, OpError> {
        if self.cancel.is_cancelled() {
            return Err(OpError::cancelled(self.cancel.input_sent()));
        }
        let cancel = self.cancel;
        let _under_way = cancel.input_going_out();
        self.call(method, path, body, true)
            .await
            .map_err(OpError::action_may_have_occurred)
    }

    /// The bundle ID of the app in front, as WDA says now.
    async fn front_app(&mut self) -> Result<String, OpError> {
        let info = self
            .call(Method::Get, "/wda/activeAppInfo", None, false)
            .await?;
        let id = text_of(&info, "bundleId");
        if is_package_name(&id) {
            Ok(id)
        } else {
            Err(OpError::new(
                ErrorCode::DeviceBusy,
                "Which app is in front could not be read (the device may be locked, or an app \
                 starting); nothing was done. Unlock the device, or wait and observe again.",
            ))
        }
    }

    /// Before input: the lease is claimed and the app in front may be acted on (read again
    /// from WDA while any app rule restricts something). Returns that app.
    async fn before_input(&mut self) -> Result<String, OpError> {
        let restricts = self.device.safety.restricts_apps();
        if restricts {
            self.judge_shown_apps(Need::Act).await?;
        }
        let app = if restricts || self.state.screen.is_none() {
            self.front_app().await?
        } else {
            self.state
                .screen
                .as_ref()
                .map(|s| s.package.clone())
                .unwrap_or_default()
        };
        self.device.safety.gate(Need::Act, &app)?;
        self.device.safety.claim(self.holder)?;
        Ok(app)
    }

    /// Judges for `need` every app WDA says it is interacting with (`/wda/apps/list`: two
    /// side by side on an iPad, a picture in picture), not only the one in the middle of the
    /// screen that `/wda/activeAppInfo` names. SpringBoard (the home screen, Notification
    /// Center, system alerts) is judged when it is the app in front.
    async fn judge_shown_apps(&mut self, need: Need) -> Result<(), OpError> {
        let listed = self.call(Method::Get, "/wda/apps/list", None, true).await?;
        for app in listed.as_array().into_iter().flatten() {
            let id = text_of(app, "bundleId");
            if id != SPRINGBOARD && is_package_name(&id) {
                self.device.safety.gate(need, &id)?;
            }
        }
        Ok(())
    }

    /// `at` in screen points as WDA's gestures take it: an offset from the app's frame (which
    /// starts away from the screen's corner beside another app on an iPad).
    fn offset(&self, at: Point) -> (u32, u32) {
        let origin = self.state.frame.map_or((0, 0), |f| (f.left, f.top));
        (at.x.saturating_sub(origin.0), at.y.saturating_sub(origin.1))
    }

    async fn tap(&mut self, at: Point) -> Result<String, OpError> {
        let app = self.before_input().await?;
        let (x, y) = self.offset(at);
        self.input(Method::Post, "/wda/tap", Some(json!({"x": x, "y": y})))
            .await?;
        Ok(app)
    }

    /// A touch from `from` to `to` over `duration_ms` (a long press when they are the same
    /// point), as one W3C touch action.
    async fn touch(
        &mut self,
        from: Point,
        to: Point,
        duration_ms: u32,
        hold: bool,
    ) -> Result<String, OpError> {
        let app = self.before_input().await?;
        let (from, to) = (self.offset(from), self.offset(to));
        let moves = if hold {
            json!([
                {"type": "pointerMove", "duration": 0, "x": from.0, "y": from.1},
                {"type": "pointerDown", "button": 0},
                {"type": "pause", "duration": duration_ms},
                {"type": "pointerUp", "button": 0},
            ])
        } else {
            json!([
                {"type": "pointerMove", "duration": 0, "x": from.0, "y": from.1},
                {"type": "pointerDown", "button": 0},
                {"type": "pointerMove", "duration": duration_ms, "x": to.0, "y": to.1},
                {"type": "pointerUp", "button": 0},
            ])
        };
        let body = json!({"actions": [{
            "type": "pointer",
            "id": "finger1",
            "parameters": {"pointerType": "touch"},
            "actions": moves,
        }]});
        self.input(Method::Post, "/actions", Some(body)).await?;
        Ok(app)
    }

    async fn press(&mut self, button: Button) -> Result<String, OpError> {
        let keys = |text: &str| json!({"value": [text]});
        let (path, body) = match button {
            Button::Home => ("/wda/pressButton", json!({"name": "home"})),
            Button::VolumeUp => ("/wda/pressButton", json!({"name": "volumeUp"})),
            Button::VolumeDown => ("/wda/pressButton", json!({"name": "volumeDown"})),
            Button::Power => ("/wda/lock", json!({})),
            Button::Enter => ("/wda/keys", keys("\n")),
            Button::Delete => ("/wda/keys", keys("\u{8}")),
            Button::Tab => ("/wda/keys", keys("\t")),
            Button::Back | Button::AppSwitch | Button::Escape => {
                return Err(OpError::new(
                    ErrorCode::InvalidArgument,
                    "iOS has no back, app-switch or escape button: tap the screen's own back \
                     control (often the top-left button), or swipe.",
                ));
            }
        };
        let app = self.before_input().await?;
        self.input(Method::Post, path, Some(body)).await?;
        Ok(app)
    }

    async fn type_text(&mut self, typing: DeviceType) -> Result<DeviceResult, OpError> {
        if typing.text.chars().count() > MAX_TYPED_CHARS {
            return Err(OpError::new(
                ErrorCode::InvalidArgument,
                format!("text is longer than {MAX_TYPED_CHARS} characters"),
            ));
        }
        if typing.text.is_empty() && typing.target.is_none() && !typing.submit {
            return Err(OpError::new(
                ErrorCode::InvalidArgument,
                "nothing to do: the text is empty, with no field to tap and no submit",
            ));
        }
        let mut at = None;
        let mut app = String::new();
        if let Some(target) = typing.target {
            let centre = self.resolve_to_act(target)?.centre();
            at = Some(centre);
            app = self.tap(centre).await?;
        }
        let mut text = typing.text;
        if typing.submit {
            text.push('\n');
        }
        if !text.is_empty() {
            app = self.before_input().await?;
            self.input(Method::Post, "/wda/keys", Some(json!({"value": [text]})))
                .await?;
        }
        self.acted(app, at, &typing.observe).await
    }

    async fn swipe(&mut self, swipe: DeviceSwipe) -> Result<DeviceResult, OpError> {
        check_duration(swipe.duration_ms)?;
        check_swipe(
            swipe.distance_percent,
            swipe.from.is_some(),
            swipe.within.is_some(),
        )?;
        let area = self.area(swipe.within)?;
        let (from, to) = match swipe.from {
            Some(start) => {
                let start = self.check_point(start)?;
                (
                    start,
                    swipe_end(area, start, swipe.direction, swipe.distance_percent),
                )
            }
            None => swipe_points(area, swipe.direction, swipe.distance_percent),
        };
        self.judge_point(from)?;
        let app = self.touch(from, to, swipe.duration_ms, false).await?;
        self.acted(app, Some(from), &swipe.observe).await
    }

    async fn open_app(&mut self, open: OpenApp) -> Result<DeviceResult, OpError> {
        check_bundle(&open.package)?;
        if open.clear_data {
            return Err(OpError::new(
                ErrorCode::InvalidArgument,
                "iOS lets no tool clear one app's data; reinstall the app instead. Nothing was \
                 done.",
            ));
        }
        let bundle = open.package;
        self.device.safety.gate(Need::Load, &bundle)?;
        self.device.safety.claim(self.holder)?;
        self.installed(&bundle).await?;
        self.input(
            Method::Post,
            "/wda/apps/launch",
            Some(json!({"bundleId": bundle})),
        )
        .await?;
        self.acted(bundle, None, &open.observe).await
    }

    async fn close_app(&mut self, close: CloseApp) -> Result<DeviceResult, OpError> {
        check_bundle(&close.package)?;
        if close.clear_data {
            return Err(OpError::new(
                ErrorCode::InvalidArgument,
                "iOS lets no tool clear one app's data; nothing was done.",
            ));
        }
        let bundle = close.package;
        self.device.safety.gate(Need::Act, &bundle)?;
        self.device.safety.claim(self.holder)?;
        self.installed(&bundle).await?;
        self.input(
            Method::Post,
            "/wda/apps/terminate",
            Some(json!({"bundleId": bundle})),
        )
        .await?;
        self.state.screen = None;
        Ok(DeviceResult::Closed(AppClosed {
            package: bundle,
            data_cleared: false,
        }))
    }

    /// Refuses an app WDA does not know (state 0: not installed).
    async fn installed(&mut self, bundle: &str) -> Result<(), OpError> {
        let state = self
            .call(
                Method::Post,
                "/wda/apps/state",
                Some(json!({"bundleId": bundle})),
                true,
            )
            .await?;
        if state.as_u64() == Some(0) {
            return Err(OpError::new(
                ErrorCode::AppNotFound,
                format!("No app {bundle} is installed on the device."),
            ));
        }
        Ok(())
    }

    /// Answers the alert in front. The app in front is judged first (an alert's text is read
    /// only once acting there is allowed); a system alert (SpringBoard's: a permission prompt)
    /// also needs the app beneath it to allow acting, since the answer is about that app. WDA
    /// picks an alert's buttons by position (accept: the last, dismiss: the first), which a
    /// three-button permission prompt turns around ("Allow Once, Allow While Using, Don't
    /// Allow"): so the buttons are listed first, a label asked for must be one of them, and with
    /// more than two the call must name one.
    async fn dismiss_alert(&mut self, dismiss: DismissAlert) -> Result<DeviceResult, OpError> {
        let app = self.before_input().await?;
        if app == SPRINGBOARD
            && let Some(beneath) = self.state.last_app.clone()
        {
            self.device.safety.gate(Need::Act, &beneath)?;
        }
        let text = self
            .call(Method::Get, "/alert/text", None, true)
            .await?
            .as_str()
            .unwrap_or("")
            .chars()
            .take(2_000)
            .collect::<String>();
        let buttons: Vec<String> = self
            .call(Method::Get, "/wda/alert/buttons", None, true)
            .await?
            .as_array()
            .map(|labels| {
                labels
                    .iter()
                    .filter_map(|label| label.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(label) = &dismiss.button {
            if !buttons.contains(label) {
                return Err(OpError::new(
                    ErrorCode::OptionNotFound,
                    format!(
                        "The alert has no such button; its buttons are: {}.",
                        buttons.join(", ")
                    ),
                ));
            }
        } else if buttons.len() > 2 {
            return Err(OpError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "The alert has {} buttons ({}): name the one to press with button; nothing \
                     was pressed.",
                    buttons.len(),
                    buttons.join(", ")
                ),
            ));
        }
        let path = if dismiss.accept {
            "/alert/accept"
        } else {
            "/alert/dismiss"
        };
        let body = match &dismiss.button {
            Some(label) => json!({"name": label}),
            None => json!({}),
        };
        self.input(Method::Post, path, Some(body)).await?;
        let mut result = self.acted(app, None, &dismiss.observe).await?;
        if let DeviceResult::Acted(acted) = &mut result {
            acted.alert = Some(text);
        }
        Ok(result)
    }

    async fn screenshot(&mut self, max_width: u32) -> Result<DeviceResult, OpError> {
        // While app rules restrict anything, the image is fetched only when every app shown may
        // be read, and dropped when the app in front changed while it was taken.
        let restricts = self.device.safety.restricts_apps();
        let before = if restricts {
            self.judge_shown_apps(Need::Read).await?;
            let app = self.front_app().await?;
            self.device.safety.gate(Need::Read, &app)?;
            Some(app)
        } else {
            None
        };
        let value = self.call(Method::Get, "/screenshot", None, false).await?;
        if let Some(before) = before
            && self.front_app().await? != before
        {
            return Err(OpError::new(
                ErrorCode::DeviceBusy,
                "Another app came to the front while the screenshot was taken; it was dropped. \
                 Take it again.",
            ));
        }
        let png = base64::engine::general_purpose::STANDARD
            .decode(value.as_str().unwrap_or("").as_bytes())
            .map_err(|e| {
                OpError::new(
                    ErrorCode::DeviceError,
                    format!("WebDriverAgent's screenshot is not base64: {e}"),
                )
            })?;
        let mut shot = tabwire_device_kit::screenshot::scale(&png, max_width)?;
        // Coordinates are points: the image maps onto the screen in points (in the orientation
        // of the latest look).
        let screen = self.screen_extent();
        shot.screen_width = screen.width;
        shot.screen_height = screen.height;
        Ok(DeviceResult::Screenshot(shot))
    }

    /// The screen now: the source read and judged, its nodes given refs.
    async fn look(&mut self) -> Result<Screen, OpError> {
        let value = self.call(Method::Get, "/source", None, true).await?;
        let xml = value.as_str().unwrap_or("");
        let source = read_source(xml, None).map_err(|problem| {
            OpError::new(
                ErrorCode::DeviceError,
                format!("The screen could not be read: {problem}."),
            )
        })?;
        let app = match source.bundle_id.clone().or_else(|| source_bundle_id(xml)) {
            Some(app) => app,
            None => self.front_app().await?,
        };
        let judged = match self.device.safety.gate(Need::Read, &app) {
            Ok(()) if self.device.safety.restricts_apps() => {
                self.judge_shown_apps(Need::Read).await
            }
            judged => judged,
        };
        if let Err(refused) = judged {
            self.state.screen = None;
            return Err(refused);
        }
        self.state.frame = source.frame;
        if app != SPRINGBOARD {
            self.state.last_app = Some(app.clone());
        }
        let nodes = with_app(source.nodes, &app);
        self.state.unobserved = false;
        let refs = self.state.refs.assign(nodes.iter().map(|n| &n.identity));
        let screen = Screen {
            package: app,
            rotation: 0,
            keyboard_shown: source.keyboard_shown,
            nodes,
            refs,
        };
        self.state.screen = Some(screen.clone());
        Ok(screen)
    }

    /// The screen once it settles after an action (see the module's comment).
    async fn settle(&mut self) -> Result<(Screen, Settling), OpError> {
        let before = self.state.screen.take();
        let mut last = self.look().await?;
        let mut looks = 1;
        let unchanged = before.as_ref().is_some_and(|b| b.nodes == last.nodes);
        let mut settled = !last.busy();
        if settled
            && unchanged
            && !self.remaining().is_zero()
            && let Ok(next) = self.look().await
        {
            // The first good look stands when this one fails.
            last = next;
            looks += 1;
            settled = !last.busy();
        }
        while !settled && looks < MAX_SETTLE_LOOKS && !self.remaining().is_zero() {
            let Ok(next) = self.look().await else {
                break;
            };
            looks += 1;
            settled = next.nodes == last.nodes && !next.busy();
            last = next;
        }
        Ok((
            last,
            Settling {
                dumps: looks,
                settled,
            },
        ))
    }

    /// The result of an action that ran in `app`: with the settled screen when the agent
    /// asked for an observation.
    async fn acted(
        &mut self,
        app: String,
        at: Option<Point>,
        observe: &ObserveAfter,
    ) -> Result<DeviceResult, OpError> {
        let observation = match observe {
            None => {
                self.state.screen = None;
                self.state.unobserved = true;
                None
            }
            Some(view) => {
                let (screen, settling) = self.settle().await.map_err(after_input)?;
                Some(
                    self.state
                        .views
                        .observe(&screen, view, self.viewer, true, Some(settling)),
                )
            }
        };
        Ok(DeviceResult::Acted(DeviceActed::new(at, app, observation)))
    }

    fn resolve(&self, target: DeviceRef) -> Result<Rect, OpError> {
        self.state
            .screen
            .as_ref()
            .and_then(|screen| screen.bounds_of(target))
            .ok_or_else(|| {
                OpError::new(
                    ErrorCode::StaleRef,
                    format!(
                        "{target} is not on the device's screen as last observed (the screen \
                         changed since, or the ref was never issued): take a new snapshot."
                    ),
                )
            })
    }

    fn resolve_to_act(&self, target: DeviceRef) -> Result<Rect, OpError> {
        let bounds = self.resolve(target)?;
        if let Some(app) = self
            .state
            .screen
            .as_ref()
            .and_then(|screen| screen.package_of(target))
            .filter(|app| !app.is_empty())
        {
            self.device.safety.gate(Need::Act, app)?;
        }
        Ok(bounds)
    }

    fn judge_point(&self, at: Point) -> Result<(), OpError> {
        if let Some(app) = self
            .state
            .screen
            .as_ref()
            .and_then(|screen| screen.node_at(at))
            .map(|node| node.package.as_str())
            .filter(|app| !app.is_empty())
        {
            self.device.safety.gate(Need::Act, app)?;
        }
        Ok(())
    }

    /// The screen in points: as the latest look's app frame shows it (its orientation of the
    /// moment), else as the probe read it.
    fn screen_extent(&self) -> Extent {
        match self.state.frame {
            Some(frame) => Extent {
                width: frame.right,
                height: frame.bottom,
            },
            None => Extent {
                width: self.device.facts.screen.width,
                height: self.device.facts.screen.height,
            },
        }
    }

    /// The area input may go to: the app's frame (input outside it would reach an app beside
    /// it that the look did not show).
    fn extent(&self) -> Rect {
        self.state.frame.unwrap_or_else(|| {
            let Extent { width, height } = self.screen_extent();
            Rect {
                left: 0,
                top: 0,
                right: width,
                bottom: height,
            }
        })
    }

    fn check_point(&self, point: Point) -> Result<Point, OpError> {
        let area = self.extent();
        if (area.left..area.right).contains(&point.x) && (area.top..area.bottom).contains(&point.y)
        {
            Ok(point)
        } else {
            Err(OpError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "({}, {}) is outside the app's screen, x {}-{} and y {}-{} points",
                    point.x,
                    point.y,
                    area.left,
                    area.right.saturating_sub(1),
                    area.top,
                    area.bottom.saturating_sub(1)
                ),
            ))
        }
    }
}

impl Scroller for Run<'_> {
    async fn look(&mut self) -> Result<Screen, OpError> {
        Run::look(self).await
    }

    async fn swipe(&mut self, from: Point, to: Point, duration_ms: u32) -> Result<String, OpError> {
        self.judge_point(from)?;
        self.touch(from, to, duration_ms.min(MAX_GESTURE_MS), false)
            .await
    }

    fn area(&self, within: Option<DeviceRef>) -> Result<Rect, OpError> {
        match within {
            Some(target) => self.resolve_to_act(target),
            None => Ok(self.extent()),
        }
    }
}

fn check_bundle(bundle: &str) -> Result<(), OpError> {
    if is_package_name(bundle) {
        Ok(())
    } else {
        Err(OpError::new(
            ErrorCode::InvalidArgument,
            "package must be an app's bundle ID like com.apple.Preferences",
        ))
    }
}

fn deadline_passed() -> OpError {
    OpError::new(
        ErrorCode::DeviceBusy,
        "The call's deadline passed before the device answered; observe the screen before \
         trying again.",
    )
}
