//! One attached device, as the hub's operations see it: [`Device::execute`] runs a
//! [`DeviceOp`] against it through adb and answers with its [`DeviceResult`].
//!
//! Operations on one device run one at a time, in the order they arrive, through the kit's
//! [`Queue`] (see [`tabwire_device_kit::queue`]).
//! The device keeps its leases (which MCP session may change it) and its policy (the
//! operator's, from the hub, and the device owner's `--policy`), and judges every action
//! against the foreground app it reads right before acting (see [`crate::run`]).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use tabwire_protocol::devices::{
    AppClosed, AppInstalled, Button, CloseApp, DeviceLogsRequest, DeviceOp, DeviceReleased,
    DeviceResult, DeviceSwipe, DeviceType, DeviceVideo, DismissAlert, InstallApp, LogsSince,
    MAX_INSTALL_BYTES, MAX_RECORDING_BYTES, MAX_RECORDING_SECONDS, OpenApp, Point, PressTarget,
    Recording, Rect, ScreenRecording, ScreenSize,
};
use tabwire_protocol::policy::{Need, Policy};
use tabwire_protocol::refs::DeviceRef;
use tabwire_protocol::{ErrorCode, LeaseHolder, OpError};
use tokio::time::Instant;

use tabwire_device_kit::cancel::Cancel;
use tabwire_device_kit::gesture::{
    Scroller, check_duration, check_swipe, named_ref, scroll_to, swipe_end, swipe_points,
};
use tabwire_device_kit::link::Served;
use tabwire_device_kit::node::Extent;
use tabwire_device_kit::node::ScreenNode;
use tabwire_device_kit::queue::{Queue, unless_cancelled};
use tabwire_device_kit::refs::Key;
use tabwire_device_kit::safety::Safety;
use tabwire_device_kit::view::Screen;

use crate::adb::Adb;
use crate::logs::{self, LogFilter};
use crate::run::{Run, State, what_it_said};
use crate::shell::{self, keycode};

/// What the backend learns about a device before announcing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceFacts {
    /// The device's own serial number (`ro.serialno`), the same over USB and Wi-Fi; the adb
    /// serial when the device reports none.
    pub serialno: String,
    /// `settings get secure android_id` (lowercase hex), read in the same probe: a second
    /// identifier, so that two phones reporting the same serial number are not taken for one.
    /// Empty when the device did not give one.
    pub android_id: String,
    /// `ro.product.manufacturer`.
    pub manufacturer: String,
    /// `ro.product.model`.
    pub model: String,
    /// `ro.build.version.release`.
    pub os_version: String,
    /// `ro.build.version.sdk`.
    pub sdk: Option<u32>,
    /// The screen's size (`wm size`, the override when there is one).
    pub screen: ScreenSize,
}

#[cfg(test)]
impl DeviceFacts {
    /// A Pixel 7 on Android 14 with the serial number `serialno`, for tests.
    pub fn pixel(serialno: &str) -> DeviceFacts {
        DeviceFacts {
            serialno: serialno.into(),
            android_id: String::new(),
            manufacturer: "Google".into(),
            model: "Pixel 7".into(),
            os_version: "14".into(),
            sdk: Some(34),
            screen: ScreenSize {
                width: 1080,
                height: 2400,
            },
        }
    }
}

/// How the backend was started, as far as a device's operations care.
#[derive(Debug, Clone, Default)]
pub struct DeviceOptions {
    /// `--allow-destructive`: clearing app data is allowed.
    pub allow_destructive: bool,
    /// The device owner's policy (`--policy FILE`); the stricter of it and the operator's
    /// applies.
    pub owner_policy: Option<Policy>,
}

/// The longest a probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// One attached device.
pub struct Device<A: Adb> {
    adb: Arc<A>,
    serial: String,
    facts: DeviceFacts,
    options: DeviceOptions,
    safety: Safety,
    queue: Queue<State>,
}

impl<A: Adb> Device<A> {
    /// Reads the facts a hello needs from the device at `serial`, in one adb invocation.
    pub async fn probe(adb: &A, serial: &str) -> Result<DeviceFacts, OpError> {
        let out = adb
            .run(&["-s", serial, "shell", shell::PROBE], PROBE_TIMEOUT)
            .await
            .map_err(|e| OpError::new(ErrorCode::DeviceError, e.to_string()))?;
        let text = out.text().replace("\r\n", "\n");
        if !out.success() {
            return Err(OpError::new(
                ErrorCode::DeviceError,
                format!(
                    "Reading the device {serial}'s properties failed: {}",
                    what_it_said(&text, &out)
                ),
            ));
        }
        parse_probe(&text, serial)
    }

    /// The device at `serial` (an adb serial: `emulator-5554`, `192.168.1.5:5555`).
    pub fn new(adb: Arc<A>, serial: String, facts: DeviceFacts, options: DeviceOptions) -> Self {
        let safety = Safety::new(options.owner_policy.clone());
        Device {
            adb,
            serial,
            facts,
            options,
            safety,
            queue: Queue::default(),
        }
    }

    /// The adb serial it is reached through.
    pub fn serial(&self) -> &str {
        &self.serial
    }

    /// What was learnt when it was probed.
    pub fn facts(&self) -> &DeviceFacts {
        &self.facts
    }

    /// Runs one operation for `holder` (sent with every changing operation) within `deadline`;
    /// its observation is `viewer`'s (the hub's name for the calling session: deltas are
    /// against what that session was shown).
    pub async fn execute(
        &self,
        op: DeviceOp,
        holder: Option<LeaseHolder>,
        viewer: &str,
        deadline: Duration,
    ) -> Result<DeviceResult, OpError> {
        self.execute_unless(op, holder, viewer, deadline, &Cancel::never())
            .await
    }
}

impl<A: Adb> Served for Device<A> {
    /// [`Device::execute`] for an operation the hub may cancel through `cancel`: waiting for
    /// its turn, it leaves the queue and never runs; running, it stops at its next await (an
    /// input command under way first runs to its end), and the answer is `CANCELLED`, saying
    /// whether input had gone out.
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
            adb: &*self.adb,
            serial: &self.serial,
            screen_size: self.facts.screen,
            sdk: self.facts.sdk,
            safety: &self.safety,
            allow_destructive: self.options.allow_destructive,
            state: &mut state,
            deadline,
            holder: holder.as_ref(),
            viewer,
            cancel,
        };
        let outcome = unless_cancelled(run.execute(op), cancel).await;
        if outcome.is_err() && cancel.is_cancelled() && cancel.input_sent() {
            // Stopped after its input, before the look that would have followed: refs must
            // resolve against a look taken after it.
            state.screen = None;
        }
        outcome
    }

    /// An MCP session of the hub ended: its lease on this device lapses, and what it was shown
    /// is forgotten (now, or when the operation running now is done).
    fn session_ended(&self, session: &str) {
        self.safety.session_ended(session);
        self.queue.session_ended(session);
    }

    /// The operator's policy arrived (in the welcome) or changed.
    fn set_operator_policy(&self, policy: Policy) {
        self.safety.set_operator_policy(policy);
    }

    fn reached_through(&self) -> &str {
        &self.serial
    }
}

impl<A: Adb> Run<'_, A> {
    async fn execute(&mut self, op: DeviceOp) -> Result<DeviceResult, OpError> {
        if let Some(target) = named_ref(&op)
            && self.state.screen.is_none()
            && self.state.unobserved
        {
            // A ref outlives an action that did not look afterwards: the screen is looked at
            // now, and the ref resolves there by its element's identity (stale when the
            // element is gone). A ref never issued before stays unknown, whatever the new look
            // numbers.
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
                let package = self.act(&shell::tap(at.x, at.y)).await?;
                self.acted(package, Some(at), &tap.observe).await
            }
            DeviceOp::TapCoordinates(tap) => {
                let at = self.check_point(tap.point)?;
                self.judge_point(at)?;
                let package = self.act(&shell::tap(at.x, at.y)).await?;
                self.acted(package, Some(at), &tap.observe).await
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
                let line = shell::long_press(at.x, at.y, press.duration_ms);
                let package = self.act(&line).await?;
                self.acted(package, Some(at), &press.observe).await
            }
            DeviceOp::Type(typing) => self.type_text(typing).await,
            DeviceOp::Swipe(swipe) => self.swipe(swipe).await,
            DeviceOp::PressButton(press) => {
                let package = self.act(&shell::key_event(key_of(press.button))).await?;
                self.acted(package, None, &press.observe).await
            }
            DeviceOp::OpenApp(open) => self.open_app(open).await,
            DeviceOp::CloseApp(close) => self.close_app(close).await,
            DeviceOp::DismissKeyboard(dismiss) => {
                let package = self.act(shell::DISMISS_KEYBOARD).await?;
                self.acted(package, None, &dismiss.observe).await
            }
            DeviceOp::Screenshot(request) => self.screenshot(request.max_width).await,
            DeviceOp::Logs(request) => self.logs(request).await,
            DeviceOp::Release(_) => Ok(DeviceResult::Released(DeviceReleased {
                released: self.safety.release(self.holder)?,
            })),
            DeviceOp::DismissAlert(dismiss) => self.dismiss_alert(dismiss).await,
            DeviceOp::ScreenRecording(recording) => self.screen_recording(recording).await,
            DeviceOp::InstallApp(install) => self.install_app(install).await,
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

    /// Starts `screenrecord`, or stops it and returns the video. A recording sees every app
    /// that comes to the front while it runs, so it is refused while app rules restrict any
    /// app; it holds the device's lease, and only the session that started it stops it.
    async fn screen_recording(
        &mut self,
        recording: ScreenRecording,
    ) -> Result<DeviceResult, OpError> {
        let session = self.holder.map(|h| h.session.clone()).unwrap_or_default();
        if recording.start {
            if !(1..=MAX_RECORDING_SECONDS).contains(&recording.max_seconds) {
                return Err(OpError::new(
                    ErrorCode::InvalidArgument,
                    format!("maxSeconds must be 1-{MAX_RECORDING_SECONDS}"),
                ));
            }
            if self.safety.restricts_apps() {
                return Err(recording_blocked());
            }
            if self.state.recording.is_some() {
                return Err(OpError::new(
                    ErrorCode::DeviceBusy,
                    "A recording is already under way on this device; stop it first.",
                ));
            }
            self.safety.claim(self.holder)?;
            let (text, out) = self
                .input_shell(&shell::recording_start(recording.max_seconds))
                .await?;
            if !text.lines().any(|l| l.trim() == shell::RECORDING_MARK) {
                return Err(OpError::new(
                    ErrorCode::DeviceError,
                    format!(
                        "Starting the recording failed: {}",
                        what_it_said(&text, &out)
                    ),
                ));
            }
            self.state.recording = Some((Instant::now(), session));
            return Ok(DeviceResult::Recording(Recording {
                max_seconds: Some(recording.max_seconds),
                video: None,
            }));
        }
        let Some((started, owner)) = self.state.recording.clone() else {
            return Err(OpError::new(
                ErrorCode::InvalidArgument,
                "No recording is under way on this device (start one with start: true).",
            ));
        };
        if owner != session {
            return Err(OpError::new(
                ErrorCode::DeviceLeased,
                "Another session started this recording; only it can stop it.",
            ));
        }
        self.safety.claim(self.holder)?;
        let (text, out) = self.shell(shell::RECORDING_STOP).await?;
        self.state.recording = None;
        let size: Option<u64> = text.lines().last().and_then(|l| l.trim().parse().ok());
        let Some(size) = size else {
            return Err(OpError::new(
                ErrorCode::DeviceError,
                format!(
                    "The recording left no video (screenrecord may be missing or refused): {}",
                    what_it_said(&text, &out)
                ),
            ));
        };
        if size > MAX_RECORDING_BYTES {
            let _ = self.shell(&shell::recording_discard()).await;
            return Err(OpError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "The recording is {size} bytes, more than the {MAX_RECORDING_BYTES} returned; \
                     it was deleted. Record a shorter stretch."
                ),
            ));
        }
        let out = self.adb(&["exec-out", &shell::recording_fetch()]).await?;
        if out.stdout.len() as u64 != size {
            return Err(OpError::new(
                ErrorCode::DeviceError,
                format!(
                    "The recording could not be read whole ({} of {size} bytes).",
                    out.stdout.len()
                ),
            ));
        }
        Ok(DeviceResult::Recording(Recording {
            max_seconds: None,
            video: Some(DeviceVideo {
                data: base64::engine::general_purpose::STANDARD.encode(&out.stdout),
                mime_type: "video/mp4".into(),
                size,
                recorded_ms: started.elapsed().as_millis() as u64,
            }),
        }))
    }

    /// `adb install` of an `.apk` written to a private file. Which package a file holds is not
    /// known before it is installed, so installing is refused while app rules restrict any
    /// app; replacing an installed app needs `--allow-destructive`.
    async fn install_app(&mut self, install: InstallApp) -> Result<DeviceResult, OpError> {
        if !install.name.to_ascii_lowercase().ends_with(".apk") {
            return Err(OpError::new(
                ErrorCode::InvalidArgument,
                "an Android app is installed from an .apk file",
            ));
        }
        if self.safety.restricts_apps() {
            return Err(OpError::new(
                ErrorCode::AppBlocked,
                "App rules restrict some apps on this device, and which app a package file holds \
                 is known only once it is installed: installing is refused here.",
            ));
        }
        self.destructive(install.replace)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(install.data_base64.as_bytes())
            .map_err(|e| OpError::new(ErrorCode::InvalidArgument, format!("dataBase64: {e}")))?;
        if bytes.len() as u64 > MAX_INSTALL_BYTES {
            return Err(OpError::new(
                ErrorCode::LimitExceeded,
                format!("the app is larger than {MAX_INSTALL_BYTES} bytes"),
            ));
        }
        self.safety.claim(self.holder)?;
        let file = PrivateFile::write(&bytes).map_err(|e| {
            OpError::new(
                ErrorCode::DeviceError,
                format!("The app could not be written for adb: {e}"),
            )
        })?;
        let path = file.path.display().to_string();
        let mut args = vec!["install"];
        if install.replace {
            args.push("-r");
        }
        args.push(&path);
        let out = {
            let _under_way = self.cancel.input_going_out();
            self.adb_within(&args, INSTALL_TIMEOUT)
                .await
                .map_err(|e| e.action_may_have_occurred())?
        };
        let said = format!("{}\n{}", out.text(), out.stderr);
        if said.contains("INSTALL_FAILED_ALREADY_EXISTS") {
            return Err(OpError::new(
                ErrorCode::InvalidArgument,
                "The app is installed already; replace: true replaces it (the backend must run \
                 with --allow-destructive).",
            ));
        }
        if !out.success() || !said.lines().any(|l| l.trim() == "Success") {
            let reason = said
                .lines()
                .find(|l| l.contains("Failure") || l.contains("failed"))
                .unwrap_or("")
                .trim()
                .chars()
                .take(300)
                .collect::<String>();
            return Err(OpError::new(
                ErrorCode::DeviceError,
                format!("adb could not install the app: {reason}"),
            )
            .action_may_have_occurred());
        }
        Ok(DeviceResult::Installed(AppInstalled {
            name: install.name,
            replaced: install.replace,
        }))
    }

    /// Answers the dialog in front: Android's alert dialogs name their buttons
    /// `android:id/button1` (accepting) and `button2` (dismissing), permission dialogs
    /// `permission_allow…` and `permission_deny…`; or the button with the label asked for.
    async fn dismiss_alert(&mut self, dismiss: DismissAlert) -> Result<DeviceResult, OpError> {
        let screen = self.look().await?;
        let Some(alert) = alert_of(&screen) else {
            return Err(OpError::new(
                ErrorCode::NoDialog,
                "No dialog shows on the device's screen (an Android alert or permission \
                 dialog, with the buttons it names); nothing was pressed.",
            ));
        };
        let button = match &dismiss.button {
            Some(label) => alert.buttons.iter().find(|b| b.name == *label).copied(),
            None if dismiss.accept => alert.accept,
            None => alert.dismiss,
        }
        .ok_or_else(|| {
            let labels: Vec<&str> = alert.buttons.iter().map(|b| b.name.as_str()).collect();
            OpError::new(
                ErrorCode::OptionNotFound,
                format!(
                    "The dialog has no such button; its buttons are: {}.",
                    labels.join(", ")
                ),
            )
        })?;
        if !button.package.is_empty() {
            self.safety.gate(Need::Act, &button.package)?;
        }
        let at = button.bounds.centre();
        let text = alert.text;
        let package = self.act(&shell::tap(at.x, at.y)).await?;
        let mut result = self.acted(package, Some(at), &dismiss.observe).await?;
        if let DeviceResult::Acted(acted) = &mut result {
            acted.alert = Some(text);
        }
        Ok(result)
    }

    /// A ref's bounds in the latest look at the screen.
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

    /// A ref's bounds, once the app its node belongs to (as the dump names it) allows acting:
    /// a touch lands in the window under it, which need not be the focused one.
    fn resolve_to_act(&self, target: DeviceRef) -> Result<Rect, OpError> {
        let bounds = self.resolve(target)?;
        if let Some(package) = self
            .state
            .screen
            .as_ref()
            .and_then(|screen| screen.package_of(target))
            .filter(|package| !package.is_empty())
        {
            self.safety.gate(Need::Act, package)?;
        }
        Ok(bounds)
    }

    /// Judges the app of the topmost node under `at` in the latest look, when there is one:
    /// a touch lands in the window under the point, which need not be the focused one.
    fn judge_point(&self, at: Point) -> Result<(), OpError> {
        if let Some(package) = self
            .state
            .screen
            .as_ref()
            .and_then(|screen| screen.node_at(at))
            .map(|node| node.package.as_str())
            .filter(|package| !package.is_empty())
        {
            self.safety.gate(Need::Act, package)?;
        }
        Ok(())
    }

    fn check_point(&self, point: Point) -> Result<Point, OpError> {
        let extent = self.extent();
        if point.x < extent.width && point.y < extent.height {
            Ok(point)
        } else {
            Err(OpError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "({}, {}) is off the screen, which is {} × {} pixels (x below {}, y below \
                     {})",
                    point.x, point.y, extent.width, extent.height, extent.width, extent.height
                ),
            ))
        }
    }

    async fn type_text(&mut self, typing: DeviceType) -> Result<DeviceResult, OpError> {
        let mut lines = shell::type_commands(&typing.text)?;
        let mut at = None;
        if let Some(target) = typing.target {
            let centre = self.resolve_to_act(target)?.centre();
            at = Some(centre);
            let tap = shell::tap(centre.x, centre.y);
            match lines.first_mut() {
                Some(first)
                    if shell::step_bytes(first) + shell::step_bytes(std::slice::from_ref(&tap))
                        <= shell::MAX_STEP_BYTES =>
                {
                    first.insert(0, tap)
                }
                _ => lines.insert(0, vec![tap]),
            }
        }
        if typing.submit {
            let enter = shell::key_event(keycode::ENTER);
            match lines.last_mut() {
                Some(last)
                    if shell::step_bytes(last)
                        + shell::step_bytes(std::slice::from_ref(&enter))
                        <= shell::MAX_STEP_BYTES =>
                {
                    last.push(enter)
                }
                _ => lines.push(vec![enter]),
            }
        }
        if lines.is_empty() {
            return Err(OpError::new(
                ErrorCode::InvalidArgument,
                "nothing to do: the text is empty, with no field to tap and no submit",
            ));
        }
        let package = self.act_lines(&lines).await?;
        self.acted(package, at, &typing.observe).await
    }

    async fn swipe(&mut self, swipe: DeviceSwipe) -> Result<DeviceResult, OpError> {
        check_duration(swipe.duration_ms)?;
        check_swipe(
            swipe.distance_percent,
            swipe.from.is_some(),
            swipe.within.is_some(),
        )?;
        let area = match swipe.within {
            Some(target) => self.resolve_to_act(target)?,
            None => {
                let Extent { width, height } = self.extent();
                Rect {
                    left: 0,
                    top: 0,
                    right: width,
                    bottom: height,
                }
            }
        };
        let (from, to) = match swipe.from {
            Some(start) => {
                let start = self.check_point(start)?;
                let to = swipe_end(area, start, swipe.direction, swipe.distance_percent);
                (start, to)
            }
            None => swipe_points(area, swipe.direction, swipe.distance_percent),
        };
        // The gesture goes to the window under its first touch.
        self.judge_point(from)?;
        let line = shell::swipe((from.x, from.y), (to.x, to.y), swipe.duration_ms);
        let package = self.act(&line).await?;
        self.acted(package, Some(from), &swipe.observe).await
    }

    async fn open_app(&mut self, open: OpenApp) -> Result<DeviceResult, OpError> {
        shell::check_package(&open.package)?;
        let package = open.package;
        self.destructive(open.clear_data)?;
        self.safety.gate(Need::Load, &package)?;
        if open.clear_data {
            self.safety.gate(Need::Act, &package)?;
        }
        self.safety.claim(self.holder)?;
        let line = shell::launch(&package, open.clear_data);
        let (text, out) = self
            .input_shell(&line)
            .await
            .map_err(|e| e.action_may_have_occurred())?;
        if text.contains("No activities found") || text.starts_with("Failed") {
            return Err(not_installed(&package));
        }
        if !text.contains("Events injected") {
            return Err(OpError::new(
                ErrorCode::DeviceError,
                format!("Launching {package} failed: {}", what_it_said(&text, &out)),
            )
            .action_may_have_occurred());
        }
        // Another app is about to be in front: the next action reads the focus first.
        self.state.focus = None;
        self.acted(package, None, &open.observe).await
    }

    async fn close_app(&mut self, close: CloseApp) -> Result<DeviceResult, OpError> {
        shell::check_package(&close.package)?;
        let package = close.package;
        self.destructive(close.clear_data)?;
        self.safety.gate(Need::Act, &package)?;
        self.safety.claim(self.holder)?;
        let line = shell::stop(&package, close.clear_data);
        let (text, out) = self
            .input_shell(&line)
            .await
            .map_err(|e| e.action_may_have_occurred())?;
        if text.lines().any(|l| l.trim() == shell::MISSING_MARK) {
            return Err(not_installed(&package));
        }
        if !text.lines().any(|l| l.trim() == shell::DONE_MARK) {
            return Err(OpError::new(
                ErrorCode::DeviceError,
                format!("Stopping {package} failed: {}", what_it_said(&text, &out)),
            )
            .action_may_have_occurred());
        }
        self.state.screen = None;
        Ok(DeviceResult::Closed(AppClosed {
            package,
            data_cleared: close.clear_data,
        }))
    }

    fn destructive(&self, asked: bool) -> Result<(), OpError> {
        if asked && !self.allow_destructive {
            return Err(OpError::new(
                ErrorCode::DestructiveNotAllowed,
                "Clearing an app's data is destructive, and this device's backend was not \
                 started with --allow-destructive; nothing was done.",
            ));
        }
        Ok(())
    }

    async fn screenshot(&mut self, max_width: u32) -> Result<DeviceResult, OpError> {
        let line = shell::screenshot(self.sdk);
        let out = self.adb(&["exec-out", &line]).await?;
        let end = format!("\n{}\n", shell::FOCUS_END);
        let (focus, png) = match out
            .stdout
            .windows(end.len())
            .position(|w| w == end.as_bytes())
        {
            Some(at) => (
                shell::Focus::read(&String::from_utf8_lossy(&out.stdout[..at + end.len()])),
                &out.stdout[at + end.len()..],
            ),
            None => (None, &out.stdout[..]),
        };
        // The image is dropped unread when the app in front may not be read. While either
        // policy restricts any app, the app in front must be known and allowed: an image of
        // an unknown screen may be a denied app's.
        match &focus {
            Some(focus) if !focus.is_empty() => {
                self.judge(focus, Need::Read)?;
            }
            _ if self.safety.restricts_apps() => {
                return Err(OpError::new(
                    ErrorCode::AppBlocked,
                    "A policy restricts some apps on this device, and which app is in front \
                     could not be read (the screen may be off or locked, or an app starting); \
                     no screenshot is returned. Wake or unlock the device and try again.",
                ));
            }
            _ => {}
        }
        let shot = tabwire_device_kit::screenshot::scale(png, max_width)?;
        Ok(DeviceResult::Screenshot(shot))
    }

    async fn logs(&mut self, request: DeviceLogsRequest) -> Result<DeviceResult, OpError> {
        let safety = self.safety;
        match &request.package {
            Some(package) => {
                shell::check_package(package)?;
                safety.gate(Need::Read, package)?;
            }
            None if safety.restricts_apps() => {
                return Err(OpError::new(
                    ErrorCode::AppBlocked,
                    "A policy restricts some apps on this device, and the log holds every app's \
                     entries: name the app whose entries to read (package).",
                ));
            }
            None => {}
        }
        let key = (request.package.clone(), request.min_level);
        let (since, after) = match &request.since {
            LogsSince::Previous => {
                let cursor = self.state.log_cursor(&key).cloned();
                (cursor.as_ref().map(|c| c.time.clone()), cursor)
            }
            LogsSince::Time(time) => {
                logs::check_time(time)?;
                (Some(time.clone()), None)
            }
        };
        let line = shell::log_read(
            request.package.as_deref(),
            since.as_deref(),
            request.min_level,
        );
        let (text, out) = self.shell(&line).await?;
        let Some((pids, log)) = text.split_once(&format!("{}\n", shell::LOG_MARK)) else {
            return Err(OpError::new(
                ErrorCode::DeviceError,
                format!("Reading the log failed: {}", what_it_said(&text, &out)),
            ));
        };
        let filter = LogFilter {
            pids: request.package.as_ref().map(|_| logs::parse_pids(pids)),
            tag: request.tag.clone(),
            min_level: request.min_level,
            after: after.clone(),
        };
        let selected = logs::select(log, &filter, request.max_entries, request.max_chars);
        let cursor = logs::cursor_after(log, after.as_ref());
        self.state.set_log_cursor(key, cursor);
        Ok(DeviceResult::Logs(selected))
    }
}

/// How long an app's install may take.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(120);

fn recording_blocked() -> OpError {
    OpError::new(
        ErrorCode::AppBlocked,
        "A recording sees every app that comes to the front, and app rules restrict some apps \
         on this device: recording is refused here.",
    )
}

/// A file only this user can read, removed when dropped: an app handed to `adb install`.
struct PrivateFile {
    path: std::path::PathBuf,
}

impl PrivateFile {
    fn write(bytes: &[u8]) -> std::io::Result<PrivateFile> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "tabwire-android-install-{}-{}.apk",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        let file_guard = PrivateFile { path };
        file.write_all(bytes)?;
        Ok(file_guard)
    }
}

impl Drop for PrivateFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn not_installed(package: &str) -> OpError {
    OpError::new(
        ErrorCode::AppNotFound,
        format!("No app {package} with a launcher activity is installed on the device."),
    )
}

fn key_of(button: Button) -> u32 {
    match button {
        Button::Back => keycode::BACK,
        Button::Home => keycode::HOME,
        Button::Enter => keycode::ENTER,
        Button::AppSwitch => keycode::APP_SWITCH,
        Button::VolumeUp => keycode::VOLUME_UP,
        Button::VolumeDown => keycode::VOLUME_DOWN,
        Button::Delete => keycode::DEL,
        Button::Tab => keycode::TAB,
        Button::Escape => keycode::ESCAPE,
        Button::Power => keycode::POWER,
    }
}

/// A dialog on the screen: its text and its buttons.
struct Alert<'a> {
    text: String,
    buttons: Vec<&'a ScreenNode>,
    accept: Option<&'a ScreenNode>,
    dismiss: Option<&'a ScreenNode>,
}

/// The packages whose `permission_*` views are a permission dialog's.
const PERMISSION_DIALOGS: [&str; 3] = [
    "com.android.permissioncontroller",
    "com.google.android.permissioncontroller",
    "com.android.packageinstaller",
];

/// The dialog `screen` shows, found by the resource IDs Android's dialogs use: the platform's
/// own button IDs (`android:id/button1`…, never an app's view that happens to be called
/// `button2`), and a permission dialog's views only in the permission controller's packages.
fn alert_of(screen: &Screen) -> Option<Alert<'_>> {
    let mut alert = Alert {
        text: String::new(),
        buttons: Vec::new(),
        accept: None,
        dismiss: None,
    };
    let mut text = Vec::new();
    for node in &screen.nodes {
        let Key::Id(id) = &node.identity.key else {
            continue;
        };
        let (namespace, name) = id.split_once(":id/").unwrap_or(("", id));
        let permission = PERMISSION_DIALOGS.contains(&namespace);
        match (namespace, name) {
            ("android", "message") | (_, "alertTitle") => text.push(node.name.clone()),
            (_, "permission_message") if permission => text.push(node.name.clone()),
            ("android", "button1" | "button2" | "button3") => {
                alert.buttons.push(node);
                match name {
                    "button1" => alert.accept = Some(node),
                    "button2" => alert.dismiss = Some(node),
                    _ => {}
                }
            }
            (_, name)
                if permission
                    && (name.starts_with("permission_allow")
                        || name.starts_with("permission_deny")) =>
            {
                alert.buttons.push(node);
                if name.starts_with("permission_allow") && alert.accept.is_none() {
                    alert.accept = Some(node);
                }
                if name.starts_with("permission_deny") && alert.dismiss.is_none() {
                    alert.dismiss = Some(node);
                }
            }
            _ => {}
        }
    }
    alert.text = text.join("\n");
    (!alert.buttons.is_empty()).then_some(alert)
}

impl<A: Adb> Scroller for Run<'_, A> {
    async fn look(&mut self) -> Result<Screen, OpError> {
        Run::look(self).await
    }

    async fn swipe(&mut self, from: Point, to: Point, duration_ms: u32) -> Result<String, OpError> {
        self.judge_point(from)?;
        self.act(&shell::swipe((from.x, from.y), (to.x, to.y), duration_ms))
            .await
    }

    fn area(&self, within: Option<DeviceRef>) -> Result<Rect, OpError> {
        match within {
            Some(target) => self.resolve_to_act(target),
            None => {
                let Extent { width, height } = self.extent();
                Ok(Rect {
                    left: 0,
                    top: 0,
                    right: width,
                    bottom: height,
                })
            }
        }
    }
}

/// The probe's output: five property lines, then `wm size`'s.
fn parse_probe(text: &str, serial: &str) -> Result<DeviceFacts, OpError> {
    let lines: Vec<&str> = text.split('\n').collect();
    let prop = |i: usize| lines.get(i).map_or("", |l| l.trim()).to_owned();
    let size_of = |label: &str| {
        lines.iter().find_map(|line| {
            let (w, h) = line.trim().strip_prefix(label)?.trim().split_once('x')?;
            Some(ScreenSize {
                width: w.trim().parse().ok()?,
                height: h.trim().parse().ok()?,
            })
        })
    };
    let screen = size_of("Override size:")
        .or_else(|| size_of("Physical size:"))
        .filter(|s| s.width > 0 && s.height > 0)
        .ok_or_else(|| {
            OpError::new(
                ErrorCode::DeviceError,
                format!(
                    "The device {serial} did not report its screen size (`wm size` printed \
                     nothing usable)."
                ),
            )
        })?;
    let serialno = prop(0);
    let android_id = lines
        .iter()
        .find_map(|line| line.trim().strip_prefix("android_id:"))
        .map(|id| id.trim().to_ascii_lowercase())
        .filter(|id| {
            (1..=64).contains(&id.len())
                && id.bytes().all(|b| b.is_ascii_hexdigit())
                && id.bytes().any(|b| b != b'0')
        })
        .unwrap_or_default();
    Ok(DeviceFacts {
        android_id,
        serialno: if serialno.is_empty() {
            serial.to_owned()
        } else {
            serialno
        },
        manufacturer: prop(1),
        model: prop(2),
        os_version: prop(3),
        sdk: prop(4).parse().ok(),
        screen,
    })
}
