//! One operation's run on a device: its deadline, its adb calls (each with `-s SERIAL`), the
//! hierarchy dumps with their retries and the settle loop, and input sent behind the
//! foreground guard once the policy allowed it.
//!
//! Counting adb invocations (issue 15's target is at most two per tap with observation): an
//! action is one `adb shell` (the guard and the input in one line) and an observation one
//! `adb exec-out` (the dump, the keyboard's state and the focus state in one line), plus one
//! re-dump per round of the settle loop while a busy indicator shows, and one when the first
//! dump still shows the screen from before the action. The first action on a
//! device reads the focus first, and the first after the focus changed under it costs one
//! more: the guard refuses and reports the state it found, which is then judged.

use std::time::Duration;

use tabwire_protocol::devices::{
    DeviceActed, DeviceResult, ObserveAfter, Point, ScreenSize, Settling,
};
use tabwire_protocol::policy::Need;
use tabwire_protocol::{ErrorCode, LeaseHolder, OpError};
use tokio::time::Instant;

use tabwire_device_kit::cancel::Cancel;
use tabwire_device_kit::gesture::after_input;
use tabwire_device_kit::node::{Extent, ScreenNode};
use tabwire_device_kit::queue::Forgets;
use tabwire_device_kit::refs::RefTable;
use tabwire_device_kit::safety::Safety;
use tabwire_device_kit::view::{Screen, Views};

use crate::adb::{Adb, AdbError, AdbOutput};
use crate::hierarchy::{DumpProblem, keyboard_shown, parse_dump};
use crate::logs::LogCursor;
use crate::screen::screen_nodes;
use crate::shell::{self, Focus, GuardOutcome};

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
    /// The screen recording under way: when it started, and which session started it.
    pub(crate) recording: Option<(Instant, String)>,
}

impl Forgets for State {
    fn forget(&mut self, session: &str) {
        self.views.forget(session);
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
