//! One operation's run on a device: its deadline, its adb calls (each with `-s SERIAL`), the
//! hierarchy dumps with their retries and the settle loop, and input sent behind the
//! foreground guard once the policy allowed it.
//!
//! Counting adb invocations (issue 15's target is at most two per tap with observation): an
//! action is one `adb shell` (the guard and the input in one line) and an observation one
//! `adb exec-out` (the dump and the keyboard's state in one line), plus one re-dump per round
//! of the settle loop while a busy indicator shows. The first action on a device, or the
//! first after the foreground app changed under it, costs one more: the guard refuses and
//! reports the app it found, which is then judged.

use std::time::Duration;

use tabwire_protocol::devices::{
    DeviceActed, DeviceResult, ObserveAfter, Point, ScreenSize, Settling,
};
use tabwire_protocol::policy::Need;
use tabwire_protocol::{ErrorCode, LeaseHolder, OpError};
use tokio::time::Instant;

use crate::adb::{Adb, AdbError, AdbOutput};
use crate::hierarchy::{DumpProblem, keyboard_shown, parse_dump};
use crate::logs::LogCursor;
use crate::refs::RefTable;
use crate::safety::Safety;
use crate::screen::{Extent, ScreenNode, screen_nodes};
use crate::shell::{self, GuardOutcome};
use crate::view::{Screen, Views};

/// The longest one adb invocation may take, whatever the deadline.
const ADB_TIMEOUT: Duration = Duration::from_secs(30);
/// Dumps tried before a failure that exits 0 is reported.
const DUMP_ATTEMPTS: u32 = 3;
/// The most dumps of one settle loop.
pub const MAX_SETTLE_DUMPS: u32 = 5;
/// How many times the foreground is read again when it changed under an action.
const FOREGROUND_ATTEMPTS: u32 = 3;

/// A dump, read and judged but without refs yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dumped {
    package: String,
    rotation: u8,
    keyboard_shown: bool,
    nodes: Vec<ScreenNode>,
}

impl Dumped {
    fn busy(&self) -> bool {
        self.nodes.iter().any(|n| n.busy)
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
    /// The app last seen in the foreground (by a look or by the guard).
    pub(crate) foreground: Option<String>,
    /// Where the previous log read ended.
    pub(crate) log_cursor: Option<LogCursor>,
}

/// One operation, holding its device's queue (the device's parts it needs, borrowed).
pub struct Run<'a, A: Adb> {
    pub(crate) adb: &'a A,
    pub(crate) serial: &'a str,
    pub(crate) screen_size: ScreenSize,
    pub(crate) safety: &'a Safety,
    pub(crate) allow_destructive: bool,
    pub(crate) state: &'a mut State,
    pub(crate) deadline: Instant,
    pub(crate) holder: Option<&'a LeaseHolder>,
}

impl<A: Adb> Run<'_, A> {
    fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// `adb -s SERIAL ARGS…` within the deadline; adb's own failures become device errors.
    pub(crate) async fn adb(&self, args: &[&str]) -> Result<AdbOutput, OpError> {
        let remaining = self.remaining();
        if remaining.is_zero() {
            return Err(deadline_passed());
        }
        let mut full = vec!["-s", self.serial];
        full.extend_from_slice(args);
        let out = self
            .adb
            .run(&full, remaining.min(ADB_TIMEOUT))
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

    /// One `exec-out` dump with the keyboard's state.
    async fn dump_once(&self) -> Result<Result<Dumped, DumpProblem>, OpError> {
        let line = format!(
            "uiautomator dump /dev/tty; echo; echo {}; dumpsys input_method | grep mInputShown",
            shell::IME_MARK
        );
        let out = self.adb(&["exec-out", &line]).await?;
        let text = out.text();
        let (dump, ime) = match text.rfind(&format!("\n{}\n", shell::IME_MARK)) {
            Some(at) => (&text[..at], &text[at..]),
            // The marker is missing: the stream ended early.
            None => (text.as_str(), ""),
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
        let refs = self.state.refs.assign(&dumped.nodes);
        let screen = Screen {
            package: dumped.package,
            rotation: dumped.rotation,
            keyboard_shown: dumped.keyboard_shown,
            nodes: dumped.nodes,
            refs,
        };
        if !screen.package.is_empty() {
            self.state.foreground = Some(screen.package.clone());
        }
        self.state.screen = Some(screen.clone());
        Ok(screen)
    }

    /// The screen now, for a snapshot: one dump (with its retries), judged.
    pub(crate) async fn look(&mut self) -> Result<Screen, OpError> {
        let dumped = self.dump().await?;
        self.accept(dumped)
    }

    /// The screen once it settles: dumped again while a busy indicator shows, or, once
    /// dumping again started, until two dumps in a row are the same; at most
    /// [`MAX_SETTLE_DUMPS`] dumps within the deadline.
    pub(crate) async fn settle(&mut self) -> Result<(Screen, Settling), OpError> {
        let mut last = self.dump().await?;
        let mut dumps = 1;
        let mut settled = !last.busy();
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

    /// Runs `command` behind the foreground guard, in the app the latest look found (or, when
    /// it changed, the one the guard reports), once the policy allows acting there. Returns the
    /// package it ran in.
    pub(crate) async fn act(&mut self, command: &str) -> Result<String, OpError> {
        let mut expected = self.state.foreground.clone().unwrap_or_default();
        for _ in 0..FOREGROUND_ATTEMPTS {
            if !expected.is_empty() {
                self.safety.gate(Need::Act, &expected)?;
                self.safety.claim(self.holder)?;
            }
            match self.guarded(&expected, command).await? {
                GuardOutcome::Ran => return Ok(expected),
                GuardOutcome::Foreground(Some(found)) => {
                    self.state.foreground = Some(found.clone());
                    expected = found;
                }
                GuardOutcome::Foreground(None) => return Err(no_focus()),
                GuardOutcome::Unknown => unreachable!("guarded() reports unknown outcomes"),
            }
        }
        Err(OpError::new(
            ErrorCode::DeviceBusy,
            "The app in the foreground kept changing; nothing was done. Observe the screen and \
             try again.",
        ))
    }

    /// Runs `command` behind the guard only if `package` still has the focus (a later part of
    /// typing, after the first part ran there).
    pub(crate) async fn act_again(&mut self, package: &str, command: &str) -> Result<(), OpError> {
        self.safety.gate(Need::Act, package)?;
        match self.guarded(package, command).await? {
            GuardOutcome::Ran => Ok(()),
            GuardOutcome::Foreground(found) => Err(OpError::new(
                ErrorCode::DeviceBusy,
                format!(
                    "The foreground app changed from {package} to {} part of the way through; \
                     the rest was not sent. Observe the screen before going on.",
                    found.as_deref().unwrap_or("none")
                ),
            )
            .action_may_have_occurred()),
            GuardOutcome::Unknown => unreachable!("guarded() reports unknown outcomes"),
        }
    }

    async fn guarded(&self, package: &str, command: &str) -> Result<GuardOutcome, OpError> {
        let line = shell::guarded(package, command);
        let (text, out) = self
            .shell(&line)
            .await
            .map_err(|e| e.action_may_have_occurred())?;
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
                // The screen changed: refs resolve against a look taken after it.
                self.state.screen = None;
                None
            }
            Some(view) => {
                let (screen, settling) = self.settle().await.map_err(|e| {
                    let mut e = e.action_may_have_occurred();
                    e.message = format!("The action was sent. {}", e.message);
                    e
                })?;
                Some(
                    self.state
                        .views
                        .observe(&screen, view, true, Some(settling)),
                )
            }
        };
        Ok(DeviceResult::Acted(DeviceActed {
            at,
            package,
            observation,
        }))
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
