//! The device's shell: every command line tabwire sends to `adb shell` or `adb exec-out`.
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

/// The longest text one `device_type` call takes, in characters.
pub const MAX_TYPED_CHARS: usize = 10_000;
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

/// Whether `package` is an Android package name (`com.example.app`): segments of letters,
/// digits and `_`, each starting with a letter, joined by dots. Only such names are written
/// into command lines.
pub fn valid_package(package: &str) -> bool {
    package.len() <= 255
        && !package.is_empty()
        && package.split('.').all(|segment| {
            segment
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic())
                && segment
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// Checks a package name an agent gave, as `INVALID_ARGUMENT` when it is not one.
pub fn check_package(package: &str) -> Result<(), OpError> {
    if valid_package(package) {
        Ok(())
    } else {
        Err(OpError::new(
            ErrorCode::InvalidArgument,
            format!(
                "`{}` is not an Android package name (letters, digits and `_` in dot-separated \
                 parts, such as com.example.app)",
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

/// The command lines that type `text`, each at most [`MAX_COMMAND_BYTES`] long, with the
/// steps joined by `&&` so a failed step stops the rest.
pub fn type_commands(text: &str) -> Result<Vec<String>, OpError> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for step in text_steps(text)? {
        let command = step.command();
        if !line.is_empty() && line.len() + 4 + command.len() > MAX_COMMAND_BYTES {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push_str(" && ");
        }
        line.push_str(&command);
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

/// The extended regular expression (toybox `grep -E`, Android 6 and later) that finds the
/// focused app in `dumpsys window`: the focused window when it belongs to an activity
/// (`mCurrentFocus=Window{hash u0 pkg/activity}`), else the focused app's activity
/// (`mFocusedApp=ActivityRecord{hash u0 pkg/activity t9}`, or wrapped in an
/// `AppWindowToken{… token=Token{…` before Android 10). [`foreground_package`] reads the same
/// text on the host the same way.
const FOCUS_PATTERN: &str = r"mCurrentFocus=Window\{[^ ]+ u[0-9]+ [^ /}]+/|mFocusedApp=([^ ]+ token=Token\{[^ ]+ )?ActivityRecord\{[^ ]+ u[0-9]+ [^ /}]+/";

/// The shell lines that print the focus match, first one only, as `FOREGROUND_MARK…`.
pub fn focus_read() -> String {
    format!(
        "echo \"{FOREGROUND_MARK}$(dumpsys window | grep -oE {} | head -n 1)\"",
        quote(FOCUS_PATTERN)
    )
}

/// `command`, run only while `package` is the focused app; otherwise it prints
/// `FOREGROUND_MARK` and what has the focus. `package` must be [`valid_package`] (or empty,
/// which matches nothing: the first action on a device learns the foreground this way).
///
/// The check and the input are one shell line on the phone, so the app judged is the app
/// the input reaches, short of a switch in the milliseconds between them.
pub fn guarded(package: &str, command: &str) -> String {
    debug_assert!(package.is_empty() || valid_package(package));
    format!(
        "p=$(dumpsys window | grep -oE {} | head -n 1); case \"$p\" in *' {package}/') {command} && echo {DONE_MARK};; *) echo \"{FOREGROUND_MARK}$p\";; esac",
        quote(FOCUS_PATTERN)
    )
}

/// What a guarded command printed: whether its command ran and, when it did not, the
/// package that had the focus (`None`: nothing recognisable had it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardOutcome {
    /// The command ran to its end.
    Ran,
    /// Another app (or none) had the focus; nothing ran.
    Foreground(Option<String>),
    /// Neither mark was printed: the command ran and failed, or the output was cut off.
    Unknown,
}

/// Reads a guarded command's output.
pub fn guard_outcome(output: &str) -> GuardOutcome {
    for line in output.lines().map(|l| l.trim_end_matches('\r')) {
        if line == DONE_MARK {
            return GuardOutcome::Ran;
        }
        if let Some(rest) = line.strip_prefix(FOREGROUND_MARK) {
            return GuardOutcome::Foreground(foreground_package(rest));
        }
    }
    GuardOutcome::Unknown
}

/// The focused app's package in `dumpsys window` output (or in a line the guard printed), read
/// as [`FOCUS_PATTERN`] reads it: the first match in the text, of either form.
pub fn foreground_package(text: &str) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    let mut consider = |at: usize, package: Option<String>| {
        if let Some(package) = package
            && best.as_ref().is_none_or(|(b, _)| at < *b)
        {
            best = Some((at, package));
        }
    };
    for (at, _) in text.match_indices("mCurrentFocus=Window{") {
        let rest = &text[at + "mCurrentFocus=Window{".len()..];
        consider(at, record_package(rest));
    }
    for (at, _) in text.match_indices("mFocusedApp=") {
        let rest = &text[at + "mFocusedApp=".len()..];
        let record = match rest.strip_prefix("ActivityRecord{") {
            Some(record) => Some(record),
            None => {
                // `AppWindowToken{hash token=Token{hash ActivityRecord{…`
                let (first, after) = rest.split_once(' ').unwrap_or((rest, ""));
                let _ = first;
                after
                    .strip_prefix("token=Token{")
                    .and_then(|t| t.split_once(' '))
                    .and_then(|(_, t)| t.strip_prefix("ActivityRecord{"))
            }
        };
        consider(at, record.and_then(record_package));
    }
    best.map(|(_, package)| package)
}

/// `hash u0 pkg/activity…` → `pkg`.
fn record_package(rest: &str) -> Option<String> {
    let mut words = rest.splitn(3, ' ');
    let hash = words.next()?;
    let user = words.next()?;
    let component = words.next()?;
    let user_ok = user
        .strip_prefix('u')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if hash.is_empty() || !user_ok {
        return None;
    }
    let end = component.find(['/', ' ', '}'])?;
    (component.as_bytes()[end] == b'/' && end > 0 && valid_package(&component[..end]))
        .then(|| component[..end].to_owned())
}

#[cfg(test)]
mod tests {
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
            write_exec(
                &dir.join("bin/dumpsys"),
                &format!("#!/bin/sh\ncat '{}'\n", dir.join("window.txt").display()),
            );
            Phone { dir }
        }

        fn focus(&self, package: &str) {
            std::fs::write(
                self.dir.join("window.txt"),
                format!(
                    "  mGlobalConfiguration={{1.0 ?mcc}}\n  mCurrentFocus=Window{{1a2b3c u0 {package}/{package}.MainActivity}}\n  mFocusedApp=ActivityRecord{{9f u0 {package}/.MainActivity t12}}\n"
                ),
            )
            .unwrap();
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
            top.retain(|f| !["bin", "cwd", "calls", "window.txt"].contains(&f.as_str()));
            assert!(top.is_empty(), "files appeared: {top:?}");
        }
    }

    impl Drop for Phone {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

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
        for line in type_commands(text).unwrap() {
            assert!(line.len() <= MAX_COMMAND_BYTES);
            phone.run(&line);
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

    #[test]
    fn the_guard_runs_the_command_only_in_the_judged_app() {
        let phone = Phone::new("guard");
        phone.focus("com.example.notes");
        let out = phone.run(&guarded("com.example.notes", "input tap 5 6"));
        assert_eq!(guard_outcome(&out), GuardOutcome::Ran);
        assert_eq!(phone.calls(), [vec!["tap", "5", "6"]]);
        std::fs::remove_file(phone.dir.join("calls")).unwrap();

        phone.focus("com.bank.app");
        let out = phone.run(&guarded("com.example.notes", "input tap 5 6"));
        assert_eq!(
            guard_outcome(&out),
            GuardOutcome::Foreground(Some("com.bank.app".into()))
        );
        assert!(phone.calls().is_empty(), "nothing typed in the other app");
        // A package that is a prefix of the focused one does not pass either.
        phone.focus("com.example.notes2");
        let out = phone.run(&guarded("com.example.notes", "input tap 5 6"));
        assert_eq!(
            guard_outcome(&out),
            GuardOutcome::Foreground(Some("com.example.notes2".into()))
        );
        // The empty package never matches: it only reads the focus.
        let out = phone.run(&guarded("", "input tap 5 6"));
        assert_eq!(
            guard_outcome(&out),
            GuardOutcome::Foreground(Some("com.example.notes2".into()))
        );
        assert!(phone.calls().is_empty());
        assert_eq!(
            guard_outcome(&phone.run(&focus_read())),
            GuardOutcome::Foreground(Some("com.example.notes2".into()))
        );
    }

    #[test]
    fn the_focus_is_read_from_either_form_of_dumpsys_window() {
        let modern = "  mCurrentFocus=Window{4b1e2c0 u0 com.android.settings/com.android.settings.Settings}\n  mFocusedApp=ActivityRecord{7c0d5a1 u0 com.android.settings/.Settings t37}\n";
        assert_eq!(
            foreground_package(modern).as_deref(),
            Some("com.android.settings")
        );
        let popup = "  mCurrentFocus=Window{4b1e2c0 u0 PopupWindow:c0ffee}\n  mFocusedApp=AppWindowToken{ae32b7e token=Token{e5a4839 ActivityRecord{1ff1aa0 u0 com.example.app/.Main t4}}}\n";
        assert_eq!(
            foreground_package(popup).as_deref(),
            Some("com.example.app")
        );
        assert_eq!(
            foreground_package("  mCurrentFocus=null\n  mFocusedApp=null\n"),
            None
        );
        assert_eq!(foreground_package(""), None);
        // Other activity records in the dump are not the focus.
        let noise = "  mActivityRecord=ActivityRecord{1 u0 com.other/.X t1}\n  mCurrentFocus=Window{2 u0 com.real/.Y}\n";
        assert_eq!(foreground_package(noise).as_deref(), Some("com.real"));
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
