//! The device's shell: the rules every command line tabwire sends to `adb shell` or `adb
//! exec-out` keeps, and the parts of those lines that carry an agent's input — quoting, package
//! names, typed text, key codes, the foreground guard and the focus read — and the lines
//! themselves (probe, taps, swipes, keys, launching and stopping apps, dumps, screenshots, the
//! log), so that every line sent to a phone is read in this one file.
//!
//! adb joins its arguments with spaces and the device runs the result with `sh -c`, so a
//! command line is parsed by a shell on the phone. Nothing an agent sends reaches that shell
//! unquoted: numbers are formatted by us, package names are checked against
//! [`valid_package`] before they are written into a line, and text is typed through
//! [`type_commands`], which passes each piece as one single-quoted argument.
//!
//! `input text` then applies one escape of its own: `%s` becomes a space (AOSP
//! `InputShellCommand.sendText`). Spaces are sent as `%s`, and a `%` the text holds right
//! before an `s` ends its call, so the two never meet in one argument. Newlines and tabs are
//! key events (Enter, Tab). Anything outside printable ASCII cannot be typed by `input text`
//! (its key map has no events for it and the whole call is dropped), so it is refused with
//! `TEXT_NOT_TYPABLE` rather than typed wrong.

use tabwire_protocol::{ErrorCode, OpError};

pub use tabwire_protocol::devices::MAX_TYPED_CHARS;
/// The most characters of text in one `input text` argument (after `%s` encoding): each call
/// starts a program on the phone, but very long arguments make some keyboards drop keys.
const MAX_CHUNK: usize = 200;
/// The longest command line sent in one adb invocation: old adb daemons take 4 KiB per
/// message, command included.
pub const MAX_COMMAND_BYTES: usize = 3_000;

/// The printed line a guarded command ends with when its input ran.
pub const DONE_MARK: &str = "tabwire-done";
/// The printed prefix of a guarded command that did not run because another app had the
/// focus; the rest of the line is what the focus read showed.
pub const FOREGROUND_MARK: &str = "tabwire-foreground:";
/// The line between the hierarchy dump and the keyboard's state in an observation's output.
pub const IME_MARK: &str = "tabwire-ime";

/// Quotes `arg` as one word for a POSIX shell: single quotes, each `'` written `'\''`.
pub fn quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

/// Whether `package` is an Android package name (the protocol's rule,
/// [`tabwire_protocol::devices::is_package_name`]). Only such names are written into command
/// lines.
pub fn valid_package(package: &str) -> bool {
    tabwire_protocol::devices::is_package_name(package)
}

/// Checks a package name an agent gave, as `INVALID_ARGUMENT` when it is not one.
pub fn check_package(package: &str) -> Result<(), OpError> {
    if valid_package(package) {
        Ok(())
    } else {
        Err(OpError::new(
            ErrorCode::InvalidArgument,
            format!(
                "`{}` is not an app ID (letters, digits, `_` and `-` in dot-separated parts, \
                 such as com.example.app)",
                package.chars().take(80).collect::<String>()
            ),
        ))
    }
}

/// An Android key code, as `input keyevent` takes it.
pub mod keycode {
    /// `KEYCODE_HOME`.
    pub const HOME: u32 = 3;
    /// `KEYCODE_BACK`.
    pub const BACK: u32 = 4;
    /// `KEYCODE_VOLUME_UP`.
    pub const VOLUME_UP: u32 = 24;
    /// `KEYCODE_VOLUME_DOWN`.
    pub const VOLUME_DOWN: u32 = 25;
    /// `KEYCODE_POWER`.
    pub const POWER: u32 = 26;
    /// `KEYCODE_TAB`.
    pub const TAB: u32 = 61;
    /// `KEYCODE_ENTER`.
    pub const ENTER: u32 = 66;
    /// `KEYCODE_DEL` (backspace).
    pub const DEL: u32 = 67;
    /// `KEYCODE_ESCAPE`.
    pub const ESCAPE: u32 = 111;
    /// `KEYCODE_APP_SWITCH`.
    pub const APP_SWITCH: u32 = 187;
}

/// One step of typing: an `input text` argument (already `%s`-encoded) or a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextStep {
    /// `input text ARG`.
    Text(String),
    /// `input keyevent CODE`.
    Key(u32),
}

impl TextStep {
    /// The command that performs the step.
    pub fn command(&self) -> String {
        match self {
            TextStep::Text(arg) => format!("input text {}", quote(arg)),
            TextStep::Key(code) => format!("input keyevent {code}"),
        }
    }
}

/// Splits `text` into the steps that type it exactly, or says why it cannot be typed.
pub fn text_steps(text: &str) -> Result<Vec<TextStep>, OpError> {
    let count = text.chars().count();
    if count > MAX_TYPED_CHARS {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            format!("the text is {count} characters; one call types at most {MAX_TYPED_CHARS}"),
        ));
    }
    if let Some((at, bad)) = text
        .chars()
        .enumerate()
        .find(|(_, c)| !(c.is_ascii_graphic() || matches!(c, ' ' | '\n' | '\r' | '\t')))
    {
        return Err(OpError::new(
            ErrorCode::TextNotTypable,
            format!(
                "character {} of the text ({}) cannot be typed: adb's `input text` types only \
                 printable ASCII, spaces, tabs and newlines, and would drop the whole text. \
                 Nothing was typed. Type the ASCII parts separately, or pick the text from the \
                 app's own suggestions or keyboard.",
                at + 1,
                describe(bad)
            ),
        ));
    }
    let mut steps = Vec::new();
    let mut chunk = String::new();
    let flush = |chunk: &mut String, steps: &mut Vec<TextStep>| {
        if !chunk.is_empty() {
            steps.push(TextStep::Text(std::mem::take(chunk)));
        }
    };
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                // CR LF is one line break; a lone CR too.
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                flush(&mut chunk, &mut steps);
                steps.push(TextStep::Key(keycode::ENTER));
            }
            '\n' => {
                flush(&mut chunk, &mut steps);
                steps.push(TextStep::Key(keycode::ENTER));
            }
            '\t' => {
                flush(&mut chunk, &mut steps);
                steps.push(TextStep::Key(keycode::TAB));
            }
            ' ' => chunk.push_str("%s"),
            '%' if chars.peek() == Some(&'s') => {
                // `input text` would read `%s` as a space: end the call after the `%`.
                chunk.push('%');
                flush(&mut chunk, &mut steps);
            }
            other => chunk.push(other),
        }
        // Cut long runs, never between the two characters of an encoded space.
        if chunk.len() >= MAX_CHUNK && !chunk.ends_with('%') {
            flush(&mut chunk, &mut steps);
        }
    }
    flush(&mut chunk, &mut steps);
    Ok(steps)
}

/// The bytes `steps` take in a guarded line (each with its `" && g && "`), to compare with
/// [`MAX_STEP_BYTES`].
pub fn step_bytes(steps: &[String]) -> usize {
    steps.iter().map(|step| step.len() + STEP_JOIN.len()).sum()
}

const STEP_JOIN: &str = " && g && ";

/// The steps that type `text`, grouped into command lines of at most [`MAX_STEP_BYTES`]; each
/// line is sent with [`guarded`], which checks the focus before every step.
pub fn type_commands(text: &str) -> Result<Vec<Vec<String>>, OpError> {
    let mut lines: Vec<Vec<String>> = Vec::new();
    let mut line: Vec<String> = Vec::new();
    let mut bytes = 0;
    for step in text_steps(text)? {
        let command = step.command();
        let cost = command.len() + STEP_JOIN.len();
        if !line.is_empty() && bytes + cost > MAX_STEP_BYTES {
            lines.push(std::mem::take(&mut line));
            bytes = 0;
        }
        bytes += cost;
        line.push(command);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    Ok(lines)
}

fn describe(c: char) -> String {
    if c.is_control() {
        format!("control character U+{:04X}", u32::from(c))
    } else {
        format!("'{c}', U+{:04X}", u32::from(c))
    }
}

/// The printed line before the focus state in a command's output; [`FOCUS_END`] ends it.
pub const FOCUS_MARK: &str = "tabwire-focus";
/// The printed line after the focus state.
pub const FOCUS_END: &str = "tabwire-focus-end";
/// The longest focus state a guard checks, in bytes (it is written into the command line).
pub const MAX_FOCUS_TEXT: usize = 256;
/// The most bytes of input steps in one guarded command line (each step also costs
/// `" && g && "`): what is left of [`MAX_COMMAND_BYTES`] after the guard and its focus state.
pub const MAX_STEP_BYTES: usize = 1_400;

/// Where the live focus is read. Only live state: a bare `dumpsys window` begins with the
/// `WINDOW MANAGER LAST ANR` section, which keeps a frozen copy of the focus at the last ANR
/// for hours. From Android 10 (API 29) each display prints its `mCurrentFocus` and
/// `mFocusedApp` in `dumpsys window displays` (AOSP `DisplayContent.dump`); before, the window
/// manager printed them at the end of `dumpsys window windows`. A device whose API level is
/// unknown is asked both.
pub fn focus_source(sdk: Option<u32>) -> &'static str {
    match sdk {
        Some(sdk) if sdk >= 29 => "dumpsys window displays",
        Some(_) => "dumpsys window windows",
        None => "{ dumpsys window displays; dumpsys window windows; }",
    }
}

/// The `sed -nE` script (toybox sed, Android 6 and later) that turns the focus lines into the
/// focus state, one line each, sorted and without repeats:
/// `mCurrentFocus=Window{hash u0 pkg/activity}` → `window u0 pkg/`,
/// `mCurrentFocus=Window{hash u0 NotificationShade}` → `window u0 NotificationShade` (a window
/// that is not an activity's: its title, or its package when it has none),
/// `mFocusedApp=ActivityRecord{hash u0 pkg/activity t9}` (or wrapped in an
/// `AppWindowToken{… token=Token{…` before Android 10) → `app u0 pkg/`. `mCurrentFocus=null`
/// prints nothing. Window hashes are left out: the same app's next window is the same focus.
const FOCUS_SED: &str = r"s#^ *mCurrentFocus=Window\{[^ ]+ (u[0-9]+ [^/}]*/?).*#window \1#p;s#^ *mFocusedApp=.*ActivityRecord\{[^ ]+ (u[0-9]+ [^ /}]+/).*#app \1#p";

/// The pipeline printing the focus state.
fn focus_state(sdk: Option<u32>) -> String {
    format!(
        "{} | sed -nE {} | sort -u",
        focus_source(sdk),
        quote(FOCUS_SED)
    )
}

/// The shell lines that print the focus state between [`FOCUS_MARK`] and [`FOCUS_END`].
pub fn focus_read(sdk: Option<u32>) -> String {
    format!("echo {FOCUS_MARK}; {}; echo {FOCUS_END}", focus_state(sdk))
}

/// `steps`, each run only while the live focus state is still `expected` (read again right
/// before each step), joined by `&&` so a failed step stops the rest; `DONE_MARK` when all
/// ran. When the focus changed, it prints `FOREGROUND_MARK` with the number of steps that ran,
/// the focus state it found and `FOCUS_END`, and runs nothing more.
///
/// The check is defined once, as the function `g`, and called before every step: one line may
/// press Enter (which can open another app) and then type, and each step must reach the app
/// that was judged. `expected` must be non-empty, at most [`MAX_FOCUS_TEXT`] bytes, and
/// `steps` at most [`MAX_STEP_BYTES`].
pub fn guarded(sdk: Option<u32>, expected: &str, steps: &[String]) -> String {
    debug_assert!(!expected.is_empty() && expected.len() <= MAX_FOCUS_TEXT);
    debug_assert!(!steps.is_empty());
    let mut line = format!(
        "n=0; g() {{ f=$({}); if [ \"$f\" = {} ]; then n=$((n+1)); return 0; fi; echo \"{FOREGROUND_MARK}$n\"; printf '%s\\n' \"$f\"; echo {FOCUS_END}; return 1; }}",
        focus_state(sdk),
        quote(expected)
    );
    line.push_str("; g && ");
    line.push_str(&steps.join(" && g && "));
    line.push_str(&format!(" && echo {DONE_MARK}"));
    line
}

/// The focus state as the device printed it, and what it names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Focus {
    /// The printed lines, joined by newlines: what a guard compares.
    pub text: String,
    /// The packages of focused activity windows.
    pub activities: Vec<String>,
    /// Focused windows that are not an activity's, by their title (`NotificationShade`,
    /// `PopupWindow:1f2e`, `Application Not Responding: com.x`, or a package name when the
    /// window has no title).
    pub windows: Vec<String>,
    /// The packages of focused apps (`mFocusedApp`).
    pub apps: Vec<String>,
    /// Lines that were none of these.
    pub unreadable: bool,
}

impl Focus {
    /// Reads the focus state's lines.
    pub fn parse<'a>(lines: impl IntoIterator<Item = &'a str>) -> Focus {
        let mut focus = Focus::default();
        let mut text = Vec::new();
        for line in lines {
            let line = line.trim_end_matches('\r');
            if line.is_empty() {
                continue;
            }
            text.push(line);
            let user_and = |rest: &'a str| -> Option<&'a str> {
                let (user, what) = rest.split_once(' ')?;
                let digits = user.strip_prefix('u')?;
                (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(what)
            };
            if let Some(what) = line.strip_prefix("window ").and_then(user_and) {
                match what.strip_suffix('/') {
                    Some(package) if valid_package(package) => {
                        focus.activities.push(package.to_owned())
                    }
                    Some(_) => focus.unreadable = true,
                    None => focus.windows.push(what.to_owned()),
                }
            } else if let Some(what) = line.strip_prefix("app ").and_then(user_and) {
                match what.strip_suffix('/') {
                    Some(package) if valid_package(package) => focus.apps.push(package.to_owned()),
                    _ => focus.unreadable = true,
                }
            } else {
                focus.unreadable = true;
            }
        }
        focus.text = text.join("\n");
        focus
    }

    /// Reads the focus state printed between [`FOCUS_MARK`] and [`FOCUS_END`] in `output`;
    /// `None` when it is not there whole.
    pub fn read(output: &str) -> Option<Focus> {
        let mut lines = output.lines().map(|l| l.trim_end_matches('\r'));
        lines.find(|l| *l == FOCUS_MARK)?;
        let mut state = Vec::new();
        for line in lines {
            if line == FOCUS_END {
                return Some(Focus::parse(state));
            }
            state.push(line);
        }
        None
    }

    /// Whether nothing is focused at all.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }
}

/// Whether a focused window's title is a package name: a window with no title is named by its
/// package (AOSP `WindowState.getWindowTag`). Android package names have at least two parts;
/// one-word titles (`StatusBar`, `NotificationShade`) are not packages.
pub fn title_is_package(title: &str) -> bool {
    title.contains('.') && valid_package(title)
}

/// What a guarded command printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardOutcome {
    /// Every step ran.
    Ran,
    /// The focus changed before step `done + 1`; the first `done` steps ran.
    Foreground {
        /// Steps that ran before the focus was found changed.
        done: u32,
        /// The focus state found.
        focus: Focus,
    },
    /// Neither mark was printed whole: a step failed, or the output was cut off.
    Unknown,
}

/// Reads a guarded command's output.
pub fn guard_outcome(output: &str) -> GuardOutcome {
    let mut lines = output.lines().map(|l| l.trim_end_matches('\r'));
    while let Some(line) = lines.next() {
        if line == DONE_MARK {
            return GuardOutcome::Ran;
        }
        if let Some(done) = line.strip_prefix(FOREGROUND_MARK) {
            let Ok(done) = done.parse() else {
                return GuardOutcome::Unknown;
            };
            let mut state = Vec::new();
            for line in lines.by_ref() {
                if line == FOCUS_END {
                    return GuardOutcome::Foreground {
                        done,
                        focus: Focus::parse(state),
                    };
                }
                state.push(line);
            }
            return GuardOutcome::Unknown;
        }
    }
    GuardOutcome::Unknown
}

// The command lines themselves: every line tabwire sends to `adb shell` or `adb exec-out` is
// written here (numbers formatted here, package names checked by the caller with
// [`check_package`] before they are given).

/// The facts a hello needs (serial, maker, model, Android version and SDK, screen size, the
/// per-app Android ID), in one `adb shell` line.
pub const PROBE: &str = "getprop ro.serialno; getprop ro.product.manufacturer; getprop \
                         ro.product.model; getprop ro.build.version.release; getprop \
                         ro.build.version.sdk; wm size; echo \"android_id:$(settings get \
                         secure android_id 2>/dev/null)\"";

/// Back, only while a keyboard shows (Back goes back when none does), decided on the device in
/// the same line.
pub const DISMISS_KEYBOARD: &str =
    "if dumpsys input_method | grep -q mInputShown=true; then input keyevent 4; fi";

/// A tap at (`x`, `y`).
pub fn tap(x: u32, y: u32) -> String {
    format!("input tap {x} {y}")
}

/// A press held `ms` milliseconds at (`x`, `y`): a swipe that does not move.
pub fn long_press(x: u32, y: u32, ms: u32) -> String {
    swipe((x, y), (x, y), ms)
}

/// A swipe from `from` to `to` over `ms` milliseconds.
pub fn swipe(from: (u32, u32), to: (u32, u32), ms: u32) -> String {
    format!("input swipe {} {} {} {} {ms}", from.0, from.1, to.0, to.1)
}

/// One key event ([`keycode`]).
pub fn key_event(code: u32) -> String {
    format!("input keyevent {code}")
}

/// Launches `package`'s launcher activity (after clearing its data when `clear`).
pub fn launch(package: &str, clear: bool) -> String {
    let launch = format!("monkey -p {package} -c android.intent.category.LAUNCHER 1 2>&1");
    if clear {
        format!("pm clear {package} 2>&1 && {launch}")
    } else {
        launch
    }
}

/// The line printed by [`stop`] when `package` is not installed.
pub const MISSING_MARK: &str = "tabwire-missing";

/// Stops `package` (and clears its data when `clear`), printing [`DONE_MARK`], or
/// [`MISSING_MARK`] when it is not installed.
pub fn stop(package: &str, clear: bool) -> String {
    let clear = if clear {
        format!(" && pm clear {package}")
    } else {
        String::new()
    };
    format!(
        "if pm path {package} >/dev/null 2>&1; then am force-stop {package}{clear} && echo \
         {DONE_MARK}; else echo {MISSING_MARK}; fi"
    )
}

/// The screen's hierarchy, then [`IME_MARK`] and whether a keyboard shows, then the focus
/// ([`focus_read`]): one `exec-out` line.
pub fn dump(sdk: Option<u32>) -> String {
    format!(
        "uiautomator dump /dev/tty; echo; echo {IME_MARK}; dumpsys input_method | grep \
         mInputShown; {}",
        focus_read(sdk)
    )
}

/// The focus ([`focus_read`]), then the screenshot's PNG: one `exec-out` line.
pub fn screenshot(sdk: Option<u32>) -> String {
    format!("{}; screencap -p", focus_read(sdk))
}

/// The line before a log's lines in [`log_read`]'s output.
pub const LOG_MARK: &str = "tabwire-logcat";

/// The app's process IDs when `package` is given, [`LOG_MARK`], then the log: the newest
/// [`crate::logs::RECENT_LINES`] lines, or every line since `since` (checked by the caller), at
/// `min_level` or above.
pub fn log_read(
    package: Option<&str>,
    since: Option<&str>,
    min_level: Option<tabwire_protocol::devices::LogLevel>,
) -> String {
    let pidof = match package {
        Some(package) => format!("pidof {package}; "),
        None => String::new(),
    };
    let start = match since {
        Some(time) => quote(time),
        None => crate::logs::RECENT_LINES.to_string(),
    };
    let mut line = format!("{pidof}echo {LOG_MARK}; logcat -d -v threadtime -t {start}");
    if let Some(level) = min_level {
        line.push_str(&format!(" '*:{}'", crate::logs::level_letter(level)));
    }
    line
}

/// Where a screen recording is written on the phone, while it records.
pub const RECORDING_PATH: &str = "/data/local/tmp/tabwire-recording.mp4";
/// The bit rate recordings are made at: 2 Mbit/s, so the longest stays under the size bound
/// returned for most screens.
const RECORDING_BIT_RATE: u32 = 2_000_000;
/// The line a recording's start prints once `screenrecord` runs in the background.
pub const RECORDING_MARK: &str = "tabwire-recording";

/// Starts `screenrecord` in the background, stopping by itself after `seconds`: it outlives
/// this shell (`nohup`, no terminal), and the stop line ends it.
pub fn recording_start(seconds: u32) -> String {
    format!(
        "rm -f {RECORDING_PATH}; nohup screenrecord --time-limit {seconds} --bit-rate \
         {RECORDING_BIT_RATE} {RECORDING_PATH} >/dev/null 2>&1 & echo {RECORDING_MARK}"
    )
}

/// Stops the recording (SIGINT: `screenrecord` finishes the file), waits up to 5 s for it to
/// end, and prints the file's size, or [`MISSING_MARK`] when there is none.
pub const RECORDING_STOP: &str = "pkill -INT -x screenrecord; i=0; while pidof screenrecord \
     >/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done; stat -c %s \
     /data/local/tmp/tabwire-recording.mp4 2>/dev/null || echo tabwire-missing";

/// Prints the recording's bytes (for `exec-out`), then removes the file.
pub fn recording_fetch() -> String {
    format!("cat {RECORDING_PATH} && rm -f {RECORDING_PATH}")
}

/// Removes a recording too large to return.
pub fn recording_discard() -> String {
    format!("rm -f {RECORDING_PATH}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_recording_is_stopped_and_fetched_where_it_was_started() {
        assert!(recording_start(30).contains(RECORDING_PATH));
        assert!(recording_start(30).contains("--time-limit 30 "));
        assert!(RECORDING_STOP.contains(RECORDING_PATH));
        assert!(RECORDING_STOP.ends_with(MISSING_MARK));
        assert!(recording_fetch().starts_with(&format!("cat {RECORDING_PATH}")));
    }

    use super::*;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// A scratch directory with a fake `input` (recording each call's arguments, one record
    /// per call, NUL-separated) and a fake `dumpsys` (printing `window.txt`).
    struct Phone {
        dir: PathBuf,
    }

    impl Phone {
        fn new(name: &str) -> Phone {
            let dir = std::env::temp_dir().join(format!(
                "tabwire-shell-{name}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.join("bin")).unwrap();
            std::fs::create_dir_all(dir.join("cwd")).unwrap();
            write_exec(
                &dir.join("bin/input"),
                &format!(
                    "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\" >> '{}'; done\nprintf '\\n' >> '{}'\n",
                    dir.join("calls").display(),
                    dir.join("calls").display()
                ),
            );
            // `dumpsys window SECTION` prints `window-SECTION.txt` when there is one, else
            // `window.txt`.
            write_exec(
                &dir.join("bin/dumpsys"),
                &format!(
                    "#!/bin/sh\nif [ -f '{d}/window-'\"$2\"'.txt' ]; then cat '{d}/window-'\"$2\"'.txt'; else cat '{d}/window.txt'; fi\n",
                    d = dir.display()
                ),
            );
            Phone { dir }
        }

        /// Enter (`input keyevent 66`) moves the focus to `package`, as a search box's Enter
        /// that opens another app would.
        fn enter_opens(&self, package: &str) {
            let next = self.dir.join("after-enter.txt");
            std::fs::write(&next, focus_lines(package)).unwrap();
            let input = self.dir.join("bin/input");
            let mut script = std::fs::read_to_string(&input).unwrap();
            script.push_str(&format!(
                "if [ \"$1 $2\" = 'keyevent 66' ] && [ -f '{n}' ]; then mv '{n}' '{w}'; fi\n",
                n = next.display(),
                w = self.dir.join("window.txt").display()
            ));
            std::fs::write(&input, script).unwrap();
        }

        fn write(&self, name: &str, text: &str) {
            std::fs::write(self.dir.join(name), text).unwrap();
        }

        fn focus(&self, package: &str) {
            self.write("window.txt", &focus_lines(package));
        }

        /// Runs `line` as the phone's shell would, and returns what it printed.
        fn run(&self, line: &str) -> String {
            let path = format!(
                "{}:{}",
                self.dir.join("bin").display(),
                std::env::var("PATH").unwrap_or_default()
            );
            let out = Command::new("sh")
                .arg("-c")
                .arg(line)
                .env("PATH", path)
                .current_dir(self.dir.join("cwd"))
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        }

        /// Each `input` call's arguments.
        fn calls(&self) -> Vec<Vec<String>> {
            let Ok(log) = std::fs::read(self.dir.join("calls")) else {
                return Vec::new();
            };
            String::from_utf8(log)
                .unwrap()
                .split_terminator('\n')
                .map(|call| {
                    call.split_terminator('\0')
                        .map(str::to_owned)
                        .collect::<Vec<_>>()
                })
                .collect()
        }

        /// Nothing but the calls' record was written anywhere we can see.
        fn nothing_else_ran(&self) {
            let cwd: Vec<_> = std::fs::read_dir(self.dir.join("cwd")).unwrap().collect();
            assert!(cwd.is_empty(), "files appeared: {cwd:?}");
            let mut top: Vec<String> = std::fs::read_dir(&self.dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            top.sort();
            top.retain(|f| {
                let ours = ["bin", "cwd", "calls", "after-enter.txt"].contains(&f.as_str())
                    || (f.starts_with("window") && f.ends_with(".txt"));
                !ours
            });
            assert!(top.is_empty(), "files appeared: {top:?}");
        }
    }

    impl Drop for Phone {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// A display's focus lines, as `dumpsys window displays` prints them on Android 10 and
    /// later.
    fn focus_lines(package: &str) -> String {
        format!(
            "  mGlobalConfiguration={{1.0 ?mcc}}\n  mCurrentFocus=Window{{1a2b3c u0 {package}/{package}.MainActivity}}\n  mFocusedApp=ActivityRecord{{9f u0 {package}/.MainActivity t12}}\n"
        )
    }

    /// The focus state `focus_lines(package)` reads as.
    fn state_of(package: &str) -> String {
        format!("app u0 {package}/\nwindow u0 {package}/")
    }

    const SDK: Option<u32> = Some(34);

    fn write_exec(path: &Path, body: &str) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, body).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// What the phone would have received: `input text` arguments with Android's `%s` rule
    /// applied, and key events as `<66>`.
    fn as_typed(calls: &[Vec<String>]) -> String {
        let mut typed = String::new();
        for call in calls {
            match call.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                ["text", arg] => typed.push_str(&android_send_text(arg)),
                ["keyevent", "66"] => typed.push('\n'),
                ["keyevent", "61"] => typed.push('\t'),
                ref other => panic!("unexpected input call {other:?}"),
            }
        }
        typed
    }

    /// AOSP `InputShellCommand.sendText`'s escape, written again: a `%` followed by `s` is a
    /// space.
    fn android_send_text(arg: &str) -> String {
        let mut buff: Vec<char> = arg.chars().collect();
        let mut escape = false;
        let mut i = 0;
        while i < buff.len() {
            if escape {
                escape = false;
                if buff[i] == 's' {
                    buff[i] = ' ';
                    buff.remove(i - 1);
                    i -= 1;
                }
            }
            if buff[i] == '%' {
                escape = true;
            }
            i += 1;
        }
        buff.into_iter().collect()
    }

    fn type_through_shell(phone: &Phone, text: &str) -> String {
        phone.focus("com.example.notes");
        for steps in type_commands(text).unwrap() {
            let line = guarded(SDK, &state_of("com.example.notes"), &steps);
            assert!(line.len() <= MAX_COMMAND_BYTES);
            assert_eq!(guard_outcome(&phone.run(&line)), GuardOutcome::Ran);
        }
        let typed = as_typed(&phone.calls());
        std::fs::remove_file(phone.dir.join("calls")).ok();
        typed
    }

    #[test]
    fn hostile_text_arrives_as_typed_and_runs_nothing() {
        let phone = Phone::new("hostile");
        let attacks = [
            "$(touch x)",
            "`touch x`",
            "a; touch x",
            "a && touch x || touch y",
            "a | tee x",
            "it's > x",
            "\"$(touch x)\"",
            "back\\slash \\' \\\" \\n",
            "100%s done %% %%s %s% s %",
            "#comment ~ ~/x * ? [a] {b,c} ! & < > (sub)",
            "'; touch x; echo '",
            "'\\''$(touch x)'\\''",
            "$HOME ${PATH} $0 $$ $? !!",
            "tab\there\nnew line\r\ncrlf\rcr",
            "  leading and trailing  ",
            "-n -e --help",
            "%",
            "s",
            "%%",
        ];
        for text in attacks {
            assert_eq!(
                type_through_shell(&phone, text),
                text.replace("\r\n", "\n").replace('\r', "\n"),
                "{text:?}"
            );
            phone.nothing_else_ran();
        }
    }

    #[test]
    fn long_text_is_chunked_and_still_arrives_whole() {
        let phone = Phone::new("long");
        let text: String = (0..3000)
            .map(|i| match i % 7 {
                0 => ' ',
                1 => '%',
                2 => 's',
                3 => '\'',
                4 => '$',
                _ => (b'a' + (i % 26) as u8) as char,
            })
            .collect();
        let lines = type_commands(&text).unwrap();
        assert!(lines.len() > 1, "3000 characters take several invocations");
        assert_eq!(type_through_shell(&phone, &text), text);
        phone.nothing_else_ran();
    }

    #[test]
    fn a_percent_before_an_s_ends_its_call() {
        let steps = text_steps("50%sale 5% s").unwrap();
        assert_eq!(
            steps,
            [
                TextStep::Text("50%".into()),
                TextStep::Text("sale%s5%%ss".into()),
            ],
            "`5% s` encodes its space after the `%`, which `input text` still reads as `% `"
        );
        assert_eq!(android_send_text("sale%s5%%ss"), "sale 5% s");
    }

    #[test]
    fn text_outside_ascii_is_refused_before_anything_is_typed() {
        for text in ["café", "emoji 😀", "\u{200f}rtl", "a\u{7}bell", "null\0"] {
            let error = text_steps(text).unwrap_err();
            assert_eq!(error.code, ErrorCode::TextNotTypable, "{text:?}");
            assert!(
                error.message.contains("Nothing was typed"),
                "{}",
                error.message
            );
        }
        let error = text_steps(&"a".repeat(MAX_TYPED_CHARS + 1)).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidArgument);
        assert!(text_steps("").unwrap().is_empty());
    }

    fn one(step: &str) -> Vec<String> {
        vec![step.to_owned()]
    }

    #[test]
    fn the_guard_runs_the_command_only_in_the_judged_app() {
        let phone = Phone::new("guard");
        phone.focus("com.example.notes");
        let notes = state_of("com.example.notes");
        let out = phone.run(&guarded(SDK, &notes, &one("input tap 5 6")));
        assert_eq!(guard_outcome(&out), GuardOutcome::Ran);
        assert_eq!(phone.calls(), [vec!["tap", "5", "6"]]);
        std::fs::remove_file(phone.dir.join("calls")).unwrap();

        phone.focus("com.bank.app");
        let out = phone.run(&guarded(SDK, &notes, &one("input tap 5 6")));
        let GuardOutcome::Foreground { done: 0, focus } = guard_outcome(&out) else {
            panic!("{out}");
        };
        assert_eq!(focus.activities, ["com.bank.app"]);
        assert_eq!(focus.apps, ["com.bank.app"]);
        assert_eq!(focus.text, state_of("com.bank.app"));
        assert!(phone.calls().is_empty(), "nothing typed in the other app");
        // A package that is a prefix of the focused one does not pass either.
        phone.focus("com.example.notes2");
        let out = phone.run(&guarded(SDK, &notes, &one("input tap 5 6")));
        assert!(matches!(
            guard_outcome(&out),
            GuardOutcome::Foreground { done: 0, .. }
        ));
        assert!(phone.calls().is_empty());
        let read = Focus::read(&phone.run(&focus_read(SDK))).unwrap();
        assert_eq!(read.text, state_of("com.example.notes2"));
    }

    /// Review finding 2: Enter in the allowed browser opens the bank, and the rest of the same
    /// command line (the typed code and its Enter) must not reach it.
    #[test]
    fn every_step_of_a_line_is_guarded_on_its_own() {
        let phone = Phone::new("steps");
        phone.focus("com.android.chrome");
        phone.enter_opens("com.bank.app");
        let steps: Vec<String> = [
            "input text 'x'",
            "input keyevent 66",
            "input text '123456'",
            "input keyevent 66",
        ]
        .map(str::to_owned)
        .to_vec();
        let out = phone.run(&guarded(SDK, &state_of("com.android.chrome"), &steps));
        assert_eq!(
            phone.calls(),
            [vec!["text", "x"], vec!["keyevent", "66"]],
            "nothing after the Enter that changed the app"
        );
        let GuardOutcome::Foreground { done, focus } = guard_outcome(&out) else {
            panic!("{out}");
        };
        assert_eq!(done, 2, "two steps ran before the focus changed");
        assert_eq!(focus.activities, ["com.bank.app"]);
    }

    /// Review finding 1: after an ANR, a bare `dumpsys window` begins with a frozen copy of the
    /// focus of that moment; only the live sections are read.
    #[test]
    fn a_frozen_focus_in_the_last_anr_section_is_never_read() {
        let phone = Phone::new("anr");
        // What a bare `dumpsys window` prints (the ANR copy first)...
        phone.write(
            "window.txt",
            "WINDOW MANAGER LAST ANR (dumpsys window lastanr)\n  ANR time: 1 Jan 2026 10:00:00\n  Application at fault: ActivityRecord{1b2c u0 com.android.chrome/.Main t42}\n  mCurrentFocus=Window{9f8e u0 com.android.chrome/org.chromium.chrome.browser.ChromeTabbedActivity}\n  mFocusedApp=ActivityRecord{5e6f u0 com.android.chrome/.Main t42}\n\nLast ANR continued\nWINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)\n  mCurrentFocus=Window{9f8e u0 com.android.chrome/org.chromium.chrome.browser.ChromeTabbedActivity}\nWINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)\n  Display: mDisplayId=0 rootTasks=2\n  mCurrentFocus=Window{1a2b u0 com.bank.app/com.bank.app.TransferActivity}\n  mFocusedApp=ActivityRecord{5e6f u0 com.bank.app/.TransferActivity t1}\n",
        );
        // ...and the live section alone.
        phone.write(
            "window-displays.txt",
            "WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)\n  Display: mDisplayId=0 rootTasks=2\n  mCurrentFocus=Window{1a2b u0 com.bank.app/com.bank.app.TransferActivity}\n  mFocusedApp=ActivityRecord{5e6f u0 com.bank.app/.TransferActivity t1}\n",
        );
        let out = phone.run(&guarded(
            SDK,
            &state_of("com.android.chrome"),
            &one("input tap 540 1800"),
        ));
        let GuardOutcome::Foreground { done: 0, focus } = guard_outcome(&out) else {
            panic!("{out}");
        };
        assert_eq!(focus.activities, ["com.bank.app"]);
        assert_eq!(focus.apps, ["com.bank.app"]);
        assert!(phone.calls().is_empty(), "the tap never reached the bank");
        assert!(focus_source(Some(29)).contains("displays"));
        assert!(focus_source(Some(28)).contains("windows"));
        for sdk in [Some(21), Some(35), None] {
            assert!(!focus_read(sdk).contains("dumpsys window |"), "{sdk:?}");
        }
    }

    #[test]
    fn every_live_focus_line_is_kept_and_windows_that_are_no_activity_say_so() {
        let phone = Phone::new("forms");
        let read = |text: &str| {
            phone.write("window.txt", text);
            Focus::read(&phone.run(&focus_read(SDK))).unwrap()
        };
        // Two displays focused on two apps: both are named.
        let two = read(
            "  mCurrentFocus=Window{1 u0 com.a/com.a.Main}\n  mFocusedApp=ActivityRecord{2 u0 com.a/.Main t1}\n  mCurrentFocus=Window{3 u10 com.b/com.b.Main}\n  mFocusedApp=ActivityRecord{4 u10 com.b/.Main t2}\n",
        );
        assert_eq!(two.activities, ["com.a", "com.b"]);
        assert_eq!(two.apps, ["com.a", "com.b"]);
        // The notification shade over an app: the window is not the app's.
        let shade = read(
            "  mCurrentFocus=Window{fc51 u0 NotificationShade}\n  mFocusedApp=ActivityRecord{f0c9 u0 com.android.launcher3/.Launcher t208}\n",
        );
        assert_eq!(shade.windows, ["NotificationShade"]);
        assert!(shade.activities.is_empty());
        assert_eq!(shade.apps, ["com.android.launcher3"]);
        let anr = read(
            "  mCurrentFocus=Window{c343 u0 Application Not Responding: com.x.y}\n  mFocusedApp=ActivityRecord{e459 u0 com.monyvi.app/.Main t10}\n",
        );
        assert_eq!(anr.windows, ["Application Not Responding: com.x.y"]);
        assert!(!title_is_package(&anr.windows[0]));
        assert!(!title_is_package("NotificationShade"));
        assert!(title_is_package("com.example.app"));
        // Android 9's form of the focused app.
        let old = read(
            "  mCurrentFocus=Window{4b1e u0 PopupWindow:c0ffee}\n  mFocusedApp=AppWindowToken{ae32 token=Token{e5a4 ActivityRecord{1ff1 u0 com.example.app/.Main t4}}}\n",
        );
        assert_eq!(old.windows, ["PopupWindow:c0ffee"]);
        assert_eq!(old.apps, ["com.example.app"]);
        // Nothing focused; other records are not the focus.
        let none = read(
            "  mCurrentFocus=null\n  mFocusedApp=null\n  mActivityRecord=ActivityRecord{1 u0 com.other/.X t1}\n",
        );
        assert!(none.is_empty());
        assert_eq!(
            Focus::read("tabwire-focus\nwindow u0 com.a/\n"),
            None,
            "cut off"
        );
        assert!(Focus::parse(["window u0 com.a/", "something else"]).unreadable);
    }

    #[test]
    fn a_full_guarded_line_fits_one_adb_message() {
        // The longest focus state, all quotes (each written as four bytes), and the most steps.
        let expected = "'".repeat(MAX_FOCUS_TEXT);
        for steps in type_commands(&"'".repeat(MAX_TYPED_CHARS)).unwrap() {
            assert!(step_bytes(&steps) <= MAX_STEP_BYTES);
            for sdk in [None, Some(28), Some(35)] {
                let line = guarded(sdk, &expected, &steps);
                assert!(line.len() <= MAX_COMMAND_BYTES, "{}", line.len());
            }
        }
    }

    #[test]
    fn package_names_are_checked_before_they_reach_a_command_line() {
        for good in ["com.example.app", "a", "com.Ex_1.b2"] {
            assert!(valid_package(good), "{good}");
        }
        for bad in [
            "", "com..x", "1com.x", "com.x;rm", "com.x y", "com.x/.A", "com.*", "$(x)", ".a",
        ] {
            assert!(!valid_package(bad), "{bad}");
            assert_eq!(
                check_package(bad).unwrap_err().code,
                ErrorCode::InvalidArgument
            );
        }
        assert_eq!(quote("it's"), r"'it'\''s'");
    }
}
