//! One operation's run on a device, all of `Run` in this file: its deadline, its adb calls
//! (each with `-s SERIAL`), the hierarchy dumps with their retries and the settle loop, input
//! sent behind the foreground guard once the policy allowed it, and each operation's arm
//! (`Run::execute`).
//!
//! Counting adb invocations (issue 15's target is at most two per tap with observation): an
//! action is one `adb shell` (the guard and the input in one line) and an observation one
//! `adb exec-out` (the dump, the keyboard's state and the focus state in one line), plus one
//! re-dump per round of the settle loop while a busy indicator shows, and one when the first
//! dump still shows the screen from before the action. The first action on a
//! device reads the focus first, and the first after the focus changed under it costs one
//! more: the guard refuses and reports the state it found, which is then judged.

use std::time::Duration;

use base64::Engine as _;
use tabwire_protocol::Settling;
use tabwire_protocol::devices::{
    AppClosed, AppInstalled, Button, CloseApp, DeviceActed, DeviceLogsRequest, DeviceOp,
    DeviceReleased, DeviceResult, DeviceSwipe, DeviceType, DeviceVideo, DismissAlert, InstallApp,
    LogsSince, MAX_INSTALL_BYTES, MAX_RECORDING_BYTES, MAX_RECORDING_SECONDS, ObserveAfter,
    OpenApp, PressTarget, Recording, ScreenRecording, ScreenSize,
};
use tabwire_protocol::policy::Need;
use tabwire_protocol::refs::DeviceRef;
use tabwire_protocol::{ErrorCode, LeaseHolder, OpError};
use tabwire_protocol::{Point, Rect};
use tokio::time::Instant;

use tabwire_device_kit::cancel::Cancel;
use tabwire_device_kit::gesture::{
    Scroller, after_input, check_duration, check_swipe, named_ref, scroll_to, swipe_end,
    swipe_points,
};
use tabwire_device_kit::node::{Extent, ScreenNode};
use tabwire_device_kit::queue::Forgets;
use tabwire_device_kit::refs::{Key, RefTable};
use tabwire_device_kit::safety::Safety;
use tabwire_device_kit::view::{Screen, Views};

use crate::adb::{Adb, AdbError, AdbOutput};
use crate::hierarchy::{DumpProblem, keyboard_shown, parse_dump};
use crate::logs::{self, LogCursor, LogFilter};
use crate::screen::screen_nodes;
use crate::shell::{self, Focus, GuardOutcome, keycode};

/// The longest one adb invocation may take, whatever the deadline.
const ADB_TIMEOUT: Duration = Duration::from_secs(30);
/// Dumps tried before a failure that exits 0 is reported.
const DUMP_ATTEMPTS: u32 = 3;
/// The most dumps of one settle loop.
pub const MAX_SETTLE_DUMPS: u32 = 5;
/// How many times the foreground is read again when it changed under an action.
const FOREGROUND_ATTEMPTS: u32 = 3;

/// The most log cursors a device keeps (each package filter read has its own).
pub(crate) const MAX_LOG_CURSORS: usize = 32;

/// What a log cursor belongs to: the package filter and the lowest level asked for.
pub(crate) type LogKey = (Option<String>, Option<tabwire_protocol::devices::LogLevel>);

impl State {
    /// The cursor of the reader `key`.
    pub(crate) fn log_cursor(&self, key: &LogKey) -> Option<&LogCursor> {
        self.log_cursors
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, cursor)| cursor)
    }

    /// Moves the reader `key`'s cursor (or forgets it).
    pub(crate) fn set_log_cursor(&mut self, key: LogKey, cursor: Option<LogCursor>) {
        self.log_cursors.retain(|(k, _)| *k != key);
        if let Some(cursor) = cursor {
            if self.log_cursors.len() >= MAX_LOG_CURSORS {
                self.log_cursors.remove(0);
            }
            self.log_cursors.push((key, cursor));
        }
    }
}

/// A dump, read and judged but without refs yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dumped {
    package: String,
    rotation: u8,
    keyboard_shown: bool,
    nodes: Vec<ScreenNode>,
    /// The focus state read right after the dump, when it was printed whole.
    focus: Option<Focus>,
}

impl Dumped {
    fn busy(&self) -> bool {
        self.nodes.iter().any(|n| n.busy)
    }

    /// Whether it shows what `screen` showed (its refs aside).
    fn shows(&self, screen: &Screen) -> bool {
        self.package == screen.package
            && self.rotation == screen.rotation
            && self.keyboard_shown == screen.keyboard_shown
            && self.nodes == screen.nodes
    }
}

/// What a device remembers between operations; held by one operation at a time.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Refs by identity.
    pub(crate) refs: RefTable,
    /// Observation versions and baselines.
    pub(crate) views: Views,
    /// The latest look at the screen: what refs resolve against. Cleared by an action that did
    /// not look afterwards.
    pub(crate) screen: Option<Screen>,
    /// Whether `screen` was cleared by an action that did not look afterwards (`observe:
    /// false`): the refs it showed still count, and the next action that names one looks
    /// first.
    pub(crate) unobserved: bool,
    /// The focus state last seen (by a look or by the guard): what the next action's guard
    /// expects, once it is judged.
    pub(crate) focus: Option<Focus>,
    /// Where the previous log read ended, per reader: by the package filter and the lowest
    /// level (which change what logcat returns). Reads carry no session, so every session of
    /// the device shares these. At most [`MAX_LOG_CURSORS`]; the oldest key goes first.
    pub(crate) log_cursors: Vec<(LogKey, LogCursor)>,
    /// The screen recording under way.
    pub(crate) recording: Option<Recorder>,
    /// The last app a look showed other than the system's dialogs: the app a permission
    /// dialog is about.
    pub(crate) last_app: Option<String>,
}

/// A screen recording under way: when it started, for how long, and which session started it.
#[derive(Debug, Clone)]
pub(crate) struct Recorder {
    started: Instant,
    max_seconds: u32,
    session: String,
}

impl Recorder {
    /// Whether `screenrecord` has stopped by itself by now (its time limit, and a margin).
    fn ended(&self) -> bool {
        self.started.elapsed() > Duration::from_secs(u64::from(self.max_seconds) + 5)
    }
}

impl Forgets for State {
    fn forget(&mut self, session: &str) {
        self.views.forget(session);
        // A recording ends with the session that started it (screenrecord stops at its limit;
        // the next start removes its file).
        if self
            .recording
            .as_ref()
            .is_some_and(|recorder| recorder.session == session)
        {
            self.recording = None;
        }
    }
}

/// One operation, holding its device's queue (the device's parts it needs, borrowed).
pub struct Run<'a, A: Adb> {
    pub(crate) adb: &'a A,
    pub(crate) serial: &'a str,
    pub(crate) screen_size: ScreenSize,
    /// The device's API level, which decides where the focus is read.
    pub(crate) sdk: Option<u32>,
    pub(crate) safety: &'a Safety,
    pub(crate) allow_destructive: bool,
    /// `--allow-install`: agents may install apps.
    pub(crate) allow_install: bool,
    pub(crate) state: &'a mut State,
    pub(crate) deadline: Instant,
    pub(crate) holder: Option<&'a LeaseHolder>,
    /// Whom the operation's observation is for.
    pub(crate) viewer: &'a str,
    /// Whether the hub cancelled the operation, and whether its input went out.
    pub(crate) cancel: &'a Cancel,
}

impl<A: Adb> Run<'_, A> {
    fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// `adb -s SERIAL ARGS…` within the deadline; adb's own failures become device errors.
    pub(crate) async fn adb(&self, args: &[&str]) -> Result<AdbOutput, OpError> {
        self.adb_within(args, ADB_TIMEOUT).await
    }

    /// [`Run::adb`] for a call that may take up to `bound` (an app's install).
    pub(crate) async fn adb_within(
        &self,
        args: &[&str],
        bound: Duration,
    ) -> Result<AdbOutput, OpError> {
        // No adb call once the hub cancelled the operation: not a look, let alone input.
        if self.cancel.is_cancelled() {
            return Err(OpError::cancelled(self.cancel.input_sent()));
        }
        let remaining = self.remaining();
        if remaining.is_zero() {
            return Err(deadline_passed());
        }
        let mut full = vec!["-s", self.serial];
        full.extend_from_slice(args);
        let out = self
            .adb
            .run(&full, remaining.min(bound))
            .await
            .map_err(|error| match error {
                AdbError::Timeout { .. } if self.remaining().is_zero() => deadline_passed(),
                other => OpError::new(ErrorCode::DeviceError, other.to_string()),
            })?;
        if let Some(gone) = disconnected(&out) {
            return Err(gone);
        }
        Ok(out)
    }

    /// `adb shell LINE`: its standard output, with any carriage returns of old devices gone.
    pub(crate) async fn shell(&self, line: &str) -> Result<(String, AdbOutput), OpError> {
        let out = self.adb(&["shell", line]).await?;
        Ok((out.text().replace("\r\n", "\n"), out))
    }

    /// [`Run::shell`] for a line that sends input (a tap, keys, an app launched or stopped):
    /// from here on a cancel says the action may have happened, and a cancel that arrives
    /// while the line runs lets it run to its end (see [`tabwire_device_kit::cancel`]).
    pub(crate) async fn input_shell(&self, line: &str) -> Result<(String, AdbOutput), OpError> {
        if self.cancel.is_cancelled() {
            return Err(OpError::cancelled(self.cancel.input_sent()));
        }
        let _under_way = self.cancel.input_going_out();
        self.shell(line).await
    }

    /// One `exec-out` dump with the keyboard's state.
    async fn dump_once(&self) -> Result<Result<Dumped, DumpProblem>, OpError> {
        let line = shell::dump(self.sdk);
        let out = self.adb(&["exec-out", &line]).await?;
        let text = out.text();
        let (text, focus) = match text.rfind(&format!("\n{}\n", shell::FOCUS_MARK)) {
            Some(at) => (&text[..at], Focus::read(&text[at..])),
            None => (text.as_str(), None),
        };
        let (dump, ime) = match text.rfind(&format!("\n{}\n", shell::IME_MARK)) {
            Some(at) => (&text[..at], &text[at..]),
            // The marker is missing: the stream ended early.
            None => (text, ""),
        };
        Ok(parse_dump(dump).map(|hierarchy| {
            let natural = Extent {
                width: self.screen_size.width,
                height: self.screen_size.height,
            };
            let extent = Extent::rotated(natural, hierarchy.rotation);
            Dumped {
                package: hierarchy
                    .nodes
                    .iter()
                    .map(|n| n.package.as_str())
                    .find(|p| !p.is_empty())
                    .unwrap_or("")
                    .to_owned(),
                rotation: hierarchy.rotation,
                keyboard_shown: keyboard_shown(ime),
                nodes: screen_nodes(&hierarchy, extent),
                focus,
            }
        }))
    }

    /// A dump, tried again (within the deadline) when it failed in a way that may pass.
    async fn dump(&self) -> Result<Dumped, OpError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.dump_once().await? {
                Ok(dumped) => return Ok(dumped),
                Err(problem)
                    if problem.retryable()
                        && attempt < DUMP_ATTEMPTS
                        && !self.remaining().is_zero() => {}
                Err(problem) => {
                    let code = if problem.retryable() {
                        ErrorCode::DeviceBusy
                    } else {
                        ErrorCode::DeviceError
                    };
                    return Err(OpError::new(
                        code,
                        format!(
                            "The screen could not be read after {attempt} tries: {}.",
                            problem.advice()
                        ),
                    ));
                }
            }
        }
    }

    /// Judges a dump (every app it shows must allow reading), gives its nodes refs and keeps it
    /// as the screen later refs resolve against.
    fn accept(&mut self, dumped: Dumped) -> Result<Screen, OpError> {
        let mut packages = vec![dumped.package.as_str()];
        packages.extend(dumped.nodes.iter().map(|n| n.package.as_str()));
        packages.sort_unstable();
        packages.dedup();
        for package in packages.into_iter().filter(|p| !p.is_empty()) {
            if let Err(refused) = self.safety.gate(Need::Read, package) {
                // A screen that may not be read leaves no refs behind either.
                self.state.screen = None;
                return Err(refused);
            }
        }
        self.state.unobserved = false;
        if !dumped.package.is_empty()
            && !PERMISSION_DIALOGS.contains(&dumped.package.as_str())
            && dumped.package != "com.android.systemui"
        {
            self.state.last_app = Some(dumped.package.clone());
        }
        let refs = self
            .state
            .refs
            .assign(dumped.nodes.iter().map(|n| &n.identity));
        let screen = Screen {
            package: dumped.package,
            rotation: dumped.rotation,
            keyboard_shown: dumped.keyboard_shown,
            nodes: dumped.nodes,
            refs,
        };
        if let Some(focus) = dumped.focus {
            self.state.focus = Some(focus);
        }
        self.state.screen = Some(screen.clone());
        Ok(screen)
    }

    /// The screen now, for a snapshot: one dump (with its retries), judged.
    pub(crate) async fn look(&mut self) -> Result<Screen, OpError> {
        let dumped = self.dump().await?;
        self.accept(dumped)
    }

    /// The screen once it settles after an action: dumped again while a busy indicator shows,
    /// or, once dumping again started, until two dumps in a row are the same; and dumped once
    /// more when the first still shows the screen of the look before the action (the app had
    /// not redrawn yet). At most [`MAX_SETTLE_DUMPS`] dumps within the deadline.
    pub(crate) async fn settle(&mut self) -> Result<(Screen, Settling), OpError> {
        let mut last = self.dump().await?;
        let mut dumps = 1;
        let mut settled = !last.busy();
        let unchanged = self
            .state
            .screen
            .as_ref()
            .is_some_and(|before| last.shows(before));
        if settled
            && unchanged
            && !self.remaining().is_zero()
            && let Ok(next) = self.dump().await
        {
            dumps += 1;
            settled = !next.busy();
            last = next;
        }
        while !settled && dumps < MAX_SETTLE_DUMPS && !self.remaining().is_zero() {
            let Ok(next) = self.dump().await else {
                // The last good dump stands.
                break;
            };
            dumps += 1;
            settled = next == last && !next.busy();
            last = next;
        }
        let screen = self.accept(last)?;
        Ok((screen, Settling { dumps, settled }))
    }

    /// The focus state now, read on its own (an action with no focus state to expect).
    pub(crate) async fn read_focus(&mut self) -> Result<Focus, OpError> {
        let (text, out) = self.shell(&shell::focus_read(self.sdk)).await?;
        let focus = Focus::read(&text).ok_or_else(|| {
            OpError::new(
                ErrorCode::DeviceError,
                format!(
                    "Reading which app has the focus failed: {}",
                    what_it_said(&text, &out)
                ),
            )
        })?;
        self.state.focus = Some(focus.clone());
        Ok(focus)
    }

    /// Judges a focus state for `need`: every app it names must allow it. A focused window
    /// that is not an activity's (the notification shade, a system dialog, a popup) counts by
    /// its title when that is a package name (a window with no title is named by its package);
    /// otherwise its owner cannot be read, and while any app rule restricts anything it is
    /// refused (the app behind it is not where the input would land). Returns the app to
    /// report: the focused activity's, else the window's, else the focused app's.
    pub(crate) fn judge(&self, focus: &Focus, need: Need) -> Result<String, OpError> {
        let restricts = self.safety.restricts_apps();
        if focus.text.len() > shell::MAX_FOCUS_TEXT || focus.unreadable {
            return Err(OpError::new(
                ErrorCode::DeviceError,
                "The device's focus state could not be read in full, so the app the call \
                 would reach is unknown; nothing was done.",
            ));
        }
        let titled: Vec<&String> = focus
            .windows
            .iter()
            .filter(|title| shell::title_is_package(title))
            .collect();
        let unowned: Vec<&String> = focus
            .windows
            .iter()
            .filter(|title| !shell::title_is_package(title))
            .collect();
        if let Some(window) = unowned.first()
            && restricts
        {
            let window: String = window.chars().take(80).collect();
            return Err(OpError::new(
                ErrorCode::AppBlocked,
                format!(
                    "The focused window ({window}) is not an app's screen (the notification \
                     shade, a system dialog or a popup), and which app owns it cannot be read; \
                     while app rules are in force nothing is sent to or read from it. Close it \
                     on the device, or wait, and observe again."
                ),
            ));
        }
        let mut packages: Vec<&String> = focus.activities.iter().collect();
        packages.extend(titled.iter().copied());
        packages.extend(focus.apps.iter());
        if packages.is_empty() && unowned.is_empty() {
            return Err(no_focus());
        }
        let mut seen: Vec<&String> = Vec::new();
        for package in packages.iter().copied() {
            if !seen.contains(&package) {
                self.safety.gate(need, package)?;
                seen.push(package);
            }
        }
        Ok(focus
            .activities
            .first()
            .or(titled.first().copied())
            .or(focus.apps.first())
            .cloned()
            .unwrap_or_default())
    }

    /// Runs one input command behind the foreground guard (see [`Run::act_lines`]).
    pub(crate) async fn act(&mut self, command: &str) -> Result<String, OpError> {
        self.act_lines(&[vec![command.to_owned()]]).await
    }

    /// Runs `lines` of input steps behind the foreground guard: each line is one adb call whose
    /// every step runs only while the focus state is still the one judged (a step that opens
    /// another app stops the rest). The focus expected is the latest seen; when the guard finds
    /// another before anything ran, that one is judged and the line sent again (at most
    /// [`FOREGROUND_ATTEMPTS`] times). Returns the app it ran in.
    pub(crate) async fn act_lines(&mut self, lines: &[Vec<String>]) -> Result<String, OpError> {
        let mut focus = match self.state.focus.clone() {
            Some(focus) if !focus.is_empty() => focus,
            _ => self.read_focus().await?,
        };
        let mut package = String::new();
        let mut sent = false;
        let mut attempts = 0;
        let mut line = 0;
        while line < lines.len() {
            let judged = self.judge(&focus, Need::Act).and_then(|package| {
                self.safety.claim(self.holder)?;
                Ok(package)
            });
            package = match judged {
                Ok(package) => package,
                Err(refused) if sent => return Err(refused.action_may_have_occurred()),
                Err(refused) => return Err(refused),
            };
            match self.guarded(&focus, &lines[line]).await? {
                GuardOutcome::Ran => {
                    sent = true;
                    line += 1;
                }
                GuardOutcome::Foreground { done, focus: found } => {
                    self.state.focus = Some(found.clone());
                    if done > 0 || sent {
                        // Part of it ran: the screen changed, and refs need a new look.
                        self.state.screen = None;
                        return Err(OpError::new(
                            ErrorCode::DeviceBusy,
                            format!(
                                "The focus moved from {package} to {} part of the way through \
                                 (after an Enter, a tap or a part of the text); the rest was not \
                                 sent. Observe the screen before going on.",
                                describe_focus(&found)
                            ),
                        )
                        .action_may_have_occurred());
                    }
                    attempts += 1;
                    if attempts >= FOREGROUND_ATTEMPTS {
                        return Err(OpError::new(
                            ErrorCode::DeviceBusy,
                            "The app in the foreground kept changing; nothing was done. \
                             Observe the screen and try again.",
                        ));
                    }
                    if found.is_empty() {
                        return Err(no_focus());
                    }
                    focus = found;
                }
                GuardOutcome::Unknown => unreachable!("guarded() reports unknown outcomes"),
            }
        }
        Ok(package)
    }

    async fn guarded(&self, focus: &Focus, steps: &[String]) -> Result<GuardOutcome, OpError> {
        let line = shell::guarded(self.sdk, &focus.text, steps);
        let may_have = |e: OpError| e.action_may_have_occurred();
        let (text, out) = self.input_shell(&line).await.map_err(may_have)?;
        match shell::guard_outcome(&text) {
            GuardOutcome::Unknown => Err(OpError::new(
                ErrorCode::DeviceError,
                format!(
                    "The device's input command failed: {}",
                    what_it_said(&text, &out)
                ),
            )
            .action_may_have_occurred()),
            known => Ok(known),
        }
    }

    /// The result of an action that ran in `package`: with the settled screen when the agent
    /// asked for an observation.
    pub(crate) async fn acted(
        &mut self,
        package: String,
        at: Option<Point>,
        observe: &ObserveAfter,
    ) -> Result<DeviceResult, OpError> {
        let observation = match observe {
            None => {
                // The screen changed: refs resolve against a look taken after it, which the
                // next action naming one takes.
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
        Ok(DeviceResult::Acted(DeviceActed::new(
            at,
            package,
            observation,
        )))
    }

    /// The screen's size in the orientation of the latest look.
    pub(crate) fn extent(&self) -> Extent {
        let natural = Extent {
            width: self.screen_size.width,
            height: self.screen_size.height,
        };
        let rotation = self.state.screen.as_ref().map_or(0, |s| s.rotation);
        Extent::rotated(natural, rotation)
    }
}

/// A focus state in a few words, for messages.
fn describe_focus(focus: &Focus) -> String {
    let named: Vec<&str> = focus
        .activities
        .iter()
        .chain(&focus.windows)
        .chain(&focus.apps)
        .map(String::as_str)
        .collect();
    if named.is_empty() {
        "nothing".to_owned()
    } else {
        named.join(", ").chars().take(200).collect()
    }
}

fn deadline_passed() -> OpError {
    OpError::new(
        ErrorCode::DeviceBusy,
        "The call's deadline passed before the device answered; observe the screen before \
         trying again.",
    )
}

fn no_focus() -> OpError {
    OpError::new(
        ErrorCode::DeviceBusy,
        "No app has the input focus (the screen may be off or locked, or an app is starting); \
         nothing was done. Wake or unlock the device, or wait and observe again.",
    )
}

/// adb's words for a device that went away.
fn disconnected(out: &AdbOutput) -> Option<OpError> {
    let said = out.stderr.trim();
    let gone = said.contains("not found")
        && (said.contains("device '") || said.contains("no devices"))
        || said.contains("device offline")
        || said.contains("device unauthorized")
        || said.contains("no devices/emulators found");
    (gone || out.status == Some(255)).then(|| {
        OpError::new(
            ErrorCode::DeviceDisconnected,
            format!(
                "The device stopped answering over adb{}.",
                if said.is_empty() {
                    String::new()
                } else {
                    format!(
                        " ({})",
                        said.lines()
                            .next()
                            .unwrap_or("")
                            .chars()
                            .take(200)
                            .collect::<String>()
                    )
                }
            ),
        )
    })
}

/// A short account of a command's output, for an error.
pub(crate) fn what_it_said(text: &str, out: &AdbOutput) -> String {
    let said = if text.trim().is_empty() {
        out.stderr.trim()
    } else {
        text.trim()
    };
    let said: String = said.chars().take(300).collect();
    if said.is_empty() {
        format!("it printed nothing (exit status {:?})", out.status)
    } else {
        format!("it printed `{said}`")
    }
}

// --- Each operation's arm ------------------------------------------------------------------

impl<A: Adb> Run<'_, A> {
    pub(crate) async fn execute(&mut self, op: DeviceOp) -> Result<DeviceResult, OpError> {
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
    /// Starts `screenrecord`, or stops it and returns the video. A recording sees every app
    /// that comes to the front while it runs, so it is refused while app rules restrict any
    /// app, at its start and at its stop. It is held under the starting session's lease: only
    /// that session stops it, and the video is dropped when the lease was released or lapsed
    /// in between (another session may have used the device meanwhile). One that ended by its
    /// time limit, or whose session ended, no longer blocks a new one.
    async fn screen_recording(
        &mut self,
        recording: ScreenRecording,
    ) -> Result<DeviceResult, OpError> {
        let Some(holder) = self.holder else {
            return Err(OpError::new(
                ErrorCode::Internal,
                "screen_recording reached the device without its caller",
            ));
        };
        if self.safety.restricts_apps() {
            if !recording.start && self.state.recording.take().is_some() {
                let _ = self.shell(shell::RECORDING_STOP).await;
                let _ = self.shell(&shell::recording_discard()).await;
            }
            return Err(recording_blocked());
        }
        if recording.start {
            if !(1..=MAX_RECORDING_SECONDS).contains(&recording.max_seconds) {
                return Err(OpError::new(
                    ErrorCode::InvalidArgument,
                    format!("maxSeconds must be 1-{MAX_RECORDING_SECONDS}"),
                ));
            }
            if self.state.recording.as_ref().is_some_and(|r| !r.ended()) {
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
            self.state.recording = Some(Recorder {
                started: Instant::now(),
                max_seconds: recording.max_seconds,
                session: holder.session.clone(),
            });
            return Ok(DeviceResult::Recording(Recording {
                max_seconds: Some(recording.max_seconds),
                video: None,
            }));
        }
        let Some(recorder) = self.state.recording.clone() else {
            return Err(OpError::new(
                ErrorCode::InvalidArgument,
                "No recording is under way on this device (start one with start: true).",
            ));
        };
        if recorder.session != holder.session {
            return Err(OpError::new(
                ErrorCode::DeviceLeased,
                "Another session started this recording; only it can stop it.",
            ));
        }
        let kept = self.safety.claim_kept(holder)?;
        let (text, out) = self.shell(shell::RECORDING_STOP).await?;
        self.state.recording = None;
        if !kept {
            let _ = self.shell(&shell::recording_discard()).await;
            return Err(OpError::new(
                ErrorCode::DeviceLeased,
                "This session's lease on the device ended while it recorded (released, or idle \
                 too long), so the recording may show another session's work: it was deleted.",
            ));
        }
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
                recorded_ms: recorder.started.elapsed().as_millis() as u64,
            }),
        }))
    }

    /// `adb install` of an `.apk` written to a private file. Installing needs the backend's
    /// `--allow-install` (an app stays on the phone, and runs, after the agent's lease and
    /// session end); which package a file holds is not known before it is installed, so it is
    /// refused while app rules restrict any app; replacing an installed app needs
    /// `--allow-destructive`, and without it the install forbids replacing (`-R`: current
    /// Android replaces by default).
    async fn install_app(&mut self, install: InstallApp) -> Result<DeviceResult, OpError> {
        if !self.allow_install {
            return Err(OpError::new(
                ErrorCode::Forbidden,
                "This device's backend was not started with --allow-install: agents may not \
                 install apps on it. Nothing was done.",
            ));
        }
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
        if install.replace && !self.allow_destructive {
            return Err(OpError::new(
                ErrorCode::DestructiveNotAllowed,
                "Replacing an installed app is destructive, and this device's backend was not \
                 started with --allow-destructive; nothing was done.",
            ));
        }
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
        let args = ["install", if install.replace { "-r" } else { "-R" }, &path];
        let out = {
            let _under_way = self.cancel.input_going_out();
            self.adb_within(&args, INSTALL_TIMEOUT)
                .await
                .map_err(|e| e.action_may_have_occurred())?
        };
        // adb names the file it was given: the agent is told the app's name, not the path.
        let said = format!("{}\n{}", out.text(), out.stderr).replace(&path, &install.name);
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
        // A permission dialog is the permission controller's, but what it grants is the app's
        // beneath it (the last other app a look showed), which must allow acting too.
        if PERMISSION_DIALOGS.contains(&button.package.as_str())
            && let Some(beneath) = self.state.last_app.clone()
        {
            self.safety.gate(Need::Act, &beneath)?;
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
        use std::hash::{BuildHasher as _, Hasher as _};
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        // A name no other user can guess in advance (and so take first): random keys of the
        // standard library's hasher.
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let path = std::env::temp_dir().join(format!(
            "tabwire-android-install-{}-{random:016x}.apk",
            std::process::id()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_cursors_are_kept_per_reader_and_bounded() {
        let cursor = |n: u32| LogCursor {
            time: format!("01-02 03:04:05.{n:03}"),
            at_time: 1,
        };
        let mut state = State::default();
        state.set_log_cursor((Some("com.a".into()), None), Some(cursor(1)));
        state.set_log_cursor((None, None), Some(cursor(2)));
        assert_eq!(
            state.log_cursor(&(Some("com.a".into()), None)),
            Some(&cursor(1))
        );
        assert_eq!(state.log_cursor(&(None, None)), Some(&cursor(2)));
        assert_eq!(state.log_cursor(&(Some("com.b".into()), None)), None);
        for n in 0..100 {
            state.set_log_cursor((Some(format!("com.p{n}")), None), Some(cursor(n)));
        }
        assert_eq!(state.log_cursors.len(), MAX_LOG_CURSORS);
        assert_eq!(
            state.log_cursor(&(Some("com.p99".into()), None)),
            Some(&cursor(99))
        );
        assert_eq!(
            state.log_cursor(&(Some("com.a".into()), None)),
            None,
            "the oldest went"
        );
    }
}
