//! The scenario directory a fake adb serves, shared by the fake itself (which reads it and
//! advances it) and the test-kit (which writes it and changes it while a test runs).
//!
//! ```text
//! $FAKE_ADB_DIR/
//!   devices              one attached device a line: SERIAL<TAB>STATE<TAB>TRANSPORT_ID
//!                        (re-read on every call: tests hot-plug by rewriting it)
//!   calls.log            one JSON line per invocation, adb's and the device commands' (CallRecord)
//!   screens/NAME.xml     UI hierarchies in `uiautomator dump` format (served without the
//!                        line breaks and indentation between tags, as a device writes them)
//!   bin/                 the device's commands (input, uiautomator, dumpsys, …): links to the
//!                        fake adb binary, first on the PATH of `shell` and `exec-out`
//!   SERIAL/config.json   what the device is (DeviceConfig: properties, screen, packages, pids)
//!   SERIAL/state.json    what it shows now (DeviceState: screen, keyboard, pending failures)
//!   SERIAL/rules         screen transitions triggered by commands (Rule)
//!   SERIAL/logcat        its log, one threadtime entry a line, with the year
//!   SERIAL/fs/           its file system: the working directory of its shell
//!   SERIAL/lock          taken (flock) around every read-modify-write of state.json
//! ```

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The environment variable naming the scenario directory.
pub const DIR_VAR: &str = "FAKE_ADB_DIR";
/// The environment variable a device command reads its serial from.
pub const SERIAL_VAR: &str = "FAKE_ADB_SERIAL";

/// The commands a fake device has, each a link to the fake adb binary, which dispatches on the
/// name it was started as.
pub const DEVICE_COMMANDS: &[&str] = &[
    "input",
    "uiautomator",
    "dumpsys",
    "wm",
    "getprop",
    "screencap",
    "logcat",
    "monkey",
    "am",
    "pm",
    "cmd",
    "pidof",
    "ps",
    "settings",
    "cat",
    "rm",
    "touch",
];

/// One attached device as `adb devices` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The adb serial (`emulator-5554`, `192.168.1.5:5555`).
    pub serial: String,
    /// `device`, `offline`, `unauthorized`, `no permissions (…)`.
    pub state: String,
    /// adb's transport ID (`-t N`).
    pub transport_id: u32,
}

/// The scenario directory.
#[derive(Debug, Clone)]
pub struct ScenarioDir {
    root: PathBuf,
}

impl ScenarioDir {
    /// The directory at `root`.
    pub fn new(root: impl Into<PathBuf>) -> ScenarioDir {
        ScenarioDir { root: root.into() }
    }

    /// The directory `$FAKE_ADB_DIR` names; `None` when it is not set.
    pub fn from_env() -> Option<ScenarioDir> {
        std::env::var_os(DIR_VAR)
            .filter(|dir| !dir.is_empty())
            .map(ScenarioDir::new)
    }

    /// Its path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The devices list.
    pub fn devices_path(&self) -> PathBuf {
        self.root.join("devices")
    }

    /// The invocation log.
    pub fn calls_path(&self) -> PathBuf {
        self.root.join("calls.log")
    }

    /// The device commands' directory.
    pub fn bin_dir(&self) -> PathBuf {
        self.root.join("bin")
    }

    /// The screens' directory.
    pub fn screens_dir(&self) -> PathBuf {
        self.root.join("screens")
    }

    /// One device's directory.
    pub fn device_dir(&self, serial: &str) -> PathBuf {
        self.root.join(serial)
    }

    /// One device's file system root (its shell's working directory).
    pub fn fs_root(&self, serial: &str) -> PathBuf {
        self.device_dir(serial).join("fs")
    }

    /// One device's log.
    pub fn logcat_path(&self, serial: &str) -> PathBuf {
        self.device_dir(serial).join("logcat")
    }

    /// The devices list as it is now (empty when the file is missing).
    pub fn devices(&self) -> Vec<Listed> {
        let text = std::fs::read_to_string(self.devices_path()).unwrap_or_default();
        text.lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| {
                let mut fields = line.split('\t');
                let serial = fields.next().unwrap_or_default().to_owned();
                let state = fields.next().unwrap_or("device").to_owned();
                let transport_id = fields.next().and_then(|id| id.parse().ok()).unwrap_or(1);
                Listed {
                    serial,
                    state,
                    transport_id,
                }
            })
            .collect()
    }

    /// Replaces the devices list (written whole and renamed into place, so a reader never sees
    /// half of it).
    pub fn set_devices(&self, devices: &[Listed]) {
        let text: String = devices
            .iter()
            .map(|d| format!("{}\t{}\t{}\n", d.serial, d.state, d.transport_id))
            .collect();
        write_atomically(&self.devices_path(), text.as_bytes());
    }

    /// The state `serial` is listed in, if it is listed.
    pub fn state_of(&self, serial: &str) -> Option<String> {
        self.devices()
            .into_iter()
            .find(|d| d.serial == serial)
            .map(|d| d.state)
    }

    /// One device's configuration.
    pub fn config(&self, serial: &str) -> DeviceConfig {
        let path = self.device_dir(serial).join("config.json");
        std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Replaces one device's configuration.
    pub fn set_config(&self, serial: &str, config: &DeviceConfig) {
        std::fs::create_dir_all(self.device_dir(serial)).expect("create the device directory");
        let json = serde_json::to_vec_pretty(config).expect("config serialises");
        write_atomically(&self.device_dir(serial).join("config.json"), &json);
    }

    /// One device's state, read under its lock.
    pub fn state(&self, serial: &str) -> DeviceState {
        self.update_state(serial, |_| ())
            .map(|(state, ())| state)
            .unwrap_or_default()
    }

    /// Reads one device's state, lets `change` change it, and writes it back, all under the
    /// device's lock; returns the state after the change and what `change` returned. `None`
    /// when the device has no directory (the scenario was removed).
    pub fn update_state<T>(
        &self,
        serial: &str,
        change: impl FnOnce(&mut DeviceState) -> T,
    ) -> Option<(DeviceState, T)> {
        let dir = self.device_dir(serial);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("lock"))
            .ok()?;
        let _held = Flock::exclusive(&lock);
        let path = dir.join("state.json");
        let mut state: DeviceState = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        let before = serde_json::to_vec(&state).expect("state serialises");
        let answer = change(&mut state);
        let after = serde_json::to_vec_pretty(&state).expect("state serialises");
        if after != before {
            write_atomically(&path, &after);
        }
        Some((state, answer))
    }

    /// One device's transition rules (none when the file is missing).
    pub fn rules(&self, serial: &str) -> Vec<Rule> {
        let text =
            std::fs::read_to_string(self.device_dir(serial).join("rules")).unwrap_or_default();
        text.lines().filter_map(Rule::parse).collect()
    }

    /// Replaces one device's rules with `text` (the rules file's own format, see [`Rule`]).
    pub fn set_rules(&self, serial: &str, text: &str) {
        for line in text.lines() {
            let trimmed = line.trim();
            assert!(
                trimmed.is_empty() || trimmed.starts_with('#') || Rule::parse(line).is_some(),
                "not a rule: {line}"
            );
        }
        write_atomically(&self.device_dir(serial).join("rules"), text.as_bytes());
    }

    /// A screen's hierarchy as a device prints it: the file without the whitespace between
    /// tags. `None` when there is no such screen.
    pub fn screen_xml(&self, name: &str) -> Option<String> {
        let text = std::fs::read_to_string(self.screens_dir().join(name)).ok()?;
        Some(compact_xml(&text))
    }

    /// Appends one record to the invocation log, in one write.
    pub fn log_call(&self, record: &CallRecord) {
        let mut line = serde_json::to_string(record).expect("record serialises");
        line.push('\n');
        if let Ok(mut file) = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.calls_path())
        {
            let _ = file.write_all(line.as_bytes());
        }
    }

    /// Every record of the invocation log so far.
    pub fn calls(&self) -> Vec<CallRecord> {
        let text = std::fs::read_to_string(self.calls_path()).unwrap_or_default();
        text.lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }
}

/// Writes `bytes` to a temporary file beside `path` and renames it into place.
pub fn write_atomically(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes).unwrap_or_else(|e| panic!("write {}: {e}", tmp.display()));
    std::fs::rename(&tmp, path).unwrap_or_else(|e| panic!("rename to {}: {e}", path.display()));
}

/// A hierarchy file as one line: the line breaks and indentation between tags removed, as
/// `uiautomator dump` writes it (text inside attributes is kept as is).
pub fn compact_xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut between_tags = false;
    for c in text.chars() {
        match c {
            '>' => {
                out.push(c);
                between_tags = true;
            }
            '<' => {
                out.push(c);
                between_tags = false;
            }
            c if between_tags && c.is_whitespace() => {}
            c => {
                // Text between tags that is not whitespace (there is none in a dump) is kept.
                between_tags = false;
                out.push(c);
            }
        }
    }
    out.trim_end().to_owned()
}

/// An exclusive `flock`, released when dropped.
struct Flock<'a>(&'a File);

impl<'a> Flock<'a> {
    fn exclusive(file: &'a File) -> Flock<'a> {
        // SAFETY: flock on a file descriptor we own for the guard's lifetime.
        unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        Flock(file)
    }
}

impl Drop for Flock<'_> {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// What a device is: fixed for a test unless the test changes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceConfig {
    /// `getprop` values (`ro.serialno`, `ro.product.model`, …).
    pub props: BTreeMap<String, String>,
    /// `wm size`'s physical size, `[width, height]`.
    pub physical_size: [u32; 2],
    /// `wm size`'s override, when one is set.
    pub override_size: Option<[u32; 2]>,
    /// `wm density`.
    pub density: u32,
    /// Installed packages.
    pub packages: Vec<String>,
    /// Each launchable package's launcher activity (`.MainActivity`).
    pub activities: BTreeMap<String, String>,
    /// Running processes: package → PID (`pidof`, `ps`).
    pub pids: BTreeMap<String, u32>,
}

impl DeviceConfig {
    /// The size screenshots and `wm size` report: the override, else the physical size.
    pub fn screen_size(&self) -> [u32; 2] {
        self.override_size.unwrap_or(self.physical_size)
    }
}

/// One of the ways `uiautomator dump` fails while exiting 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DumpFailure {
    /// The UI never went idle within 10 s (an animation).
    IdleState,
    /// The active window had no root node (between activities, a secure window).
    NullRoot,
    /// Another UiAutomation client (Appium, Maestro, a second dump) is registered.
    AlreadyRegistered,
}

impl DumpFailure {
    /// What the device prints (to stderr) for it.
    pub fn message(self) -> &'static str {
        match self {
            DumpFailure::IdleState => "ERROR: could not get idle state.\n",
            DumpFailure::NullRoot => "ERROR: null root node returned by UiTestAutomationBridge.\n",
            DumpFailure::AlreadyRegistered => concat!(
                "java.lang.IllegalStateException: UiAutomationService android.accessibilityservice.",
                "IAccessibilityServiceClient$Stub$Proxy@5c7b2a1 already registered!\n",
                "\tat android.app.UiAutomationConnection.registerUiTestAutomationServiceLocked(",
                "UiAutomationConnection.java:425)\n",
                "\tat android.app.UiAutomationConnection.connect(UiAutomationConnection.java:100)\n",
                "\tat android.app.UiAutomation.connectWithTimeout(UiAutomation.java:383)\n",
                "\tat com.android.uiautomator.core.UiAutomationShellWrapper.connect(",
                "UiAutomationShellWrapper.java:62)\n",
                "\tat com.android.commands.uiautomator.DumpCommand.run(DumpCommand.java:83)\n",
                "\tat com.android.commands.uiautomator.Launcher.main(Launcher.java:83)\n",
                "\tat com.android.internal.os.RuntimeInit.nativeFinishInit(Native Method)\n",
                "\tat com.android.internal.os.RuntimeInit.main(RuntimeInit.java:355)\n",
            ),
        }
    }
}

/// What a device shows and what is about to happen to it; changed by its commands and by tests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceState {
    /// The screen shown: a file name in `screens/`.
    pub screen: String,
    /// Successful dumps of the current screen since it was entered (rules count them).
    pub dumps_on_screen: u32,
    /// Whether the on-screen keyboard shows.
    pub keyboard: bool,
    /// `dumpsys input_method`'s `mIsInputViewShown`: the IME's own flag, which stays true
    /// after the keyboard first showed (a stale value a backend must not trust).
    pub input_view_ever_shown: bool,
    /// The next dumps fail this way, one each, in order.
    pub pending_failures: Vec<DumpFailure>,
    /// The next time this device command runs, the device goes away half-way through its
    /// output (it is removed from the devices list and adb exits 255).
    pub vanish_on: Option<String>,
    /// While set, this device command hangs (until cleared, or the device goes away).
    pub hang_on: Option<String>,
    /// Device commands hanging now (told to by `hang_on`), so a test knows a call is stuck.
    pub hanging: u32,
    /// The focused window (`package/activity`) when it is not the screen's own package.
    pub focus: Option<String>,
    /// Texts typed with `input text`, as the device decoded them (`%s` is a space).
    pub typed: Vec<String>,
    /// Packages whose data `pm clear` wiped.
    pub cleared: Vec<String>,
}

/// A screen transition: when a command matching `pattern` runs on the device while `on` (if
/// given) is the screen, the effects apply.
///
/// One rule a line: `[@SCREEN] WORD… -> EFFECT…`. Words match the command's argv as the fake
/// normalises it (`input keyevent 4` for `KEYCODE_BACK`, integers for coordinates, the input
/// source dropped): `*` matches any one word, `...` any rest. A successful dump is the command
/// `dump N` (its count on this screen), so `@busy.xml dump 2 -> content.xml` settles a busy
/// screen on its second dump. Effects: a screen name (ending in `.xml`), `keyboard=on`,
/// `keyboard=off`. The first matching rule applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The screen it applies on; `None`: any.
    pub on: Option<String>,
    /// The words to match.
    pub pattern: Vec<String>,
    /// The next screen, if it changes.
    pub screen: Option<String>,
    /// The keyboard's new state, if it changes.
    pub keyboard: Option<bool>,
}

impl Rule {
    /// Parses one line; `None` for blank lines, comments and malformed rules.
    pub fn parse(line: &str) -> Option<Rule> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        let (left, right) = line.split_once("->")?;
        let mut words: Vec<String> = left.split_whitespace().map(str::to_owned).collect();
        let on = match words.first() {
            Some(first) if first.starts_with('@') => Some(words.remove(0)[1..].to_owned()),
            _ => None,
        };
        if words.is_empty() {
            return None;
        }
        let mut rule = Rule {
            on,
            pattern: words,
            screen: None,
            keyboard: None,
        };
        for effect in right.split_whitespace() {
            match effect {
                "keyboard=on" => rule.keyboard = Some(true),
                "keyboard=off" => rule.keyboard = Some(false),
                screen if screen.ends_with(".xml") => rule.screen = Some(screen.to_owned()),
                _ => return None,
            }
        }
        Some(rule)
    }

    /// Whether it applies to `event` on `screen`.
    pub fn matches(&self, screen: &str, event: &[String]) -> bool {
        if self.on.as_deref().is_some_and(|on| on != screen) {
            return false;
        }
        let mut words = event.iter();
        for want in &self.pattern {
            if want == "..." {
                return true;
            }
            match words.next() {
                Some(word) if want == "*" || want == word => {}
                _ => return false,
            }
        }
        words.next().is_none()
    }
}

/// Applies the first of `rules` matching `event` to `state`; returns whether one matched.
pub fn apply_rules(rules: &[Rule], state: &mut DeviceState, event: &[String]) -> bool {
    let Some(rule) = rules.iter().find(|rule| rule.matches(&state.screen, event)) else {
        return false;
    };
    if let Some(screen) = rule.screen.as_ref().filter(|s| **s != state.screen) {
        state.screen = screen.clone();
        state.dumps_on_screen = 0;
    }
    if let Some(keyboard) = rule.keyboard {
        state.keyboard = keyboard;
        state.input_view_ever_shown |= keyboard;
    }
    true
}

/// Which side an invocation ran on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CallKind {
    /// The `adb` program on the host.
    Adb,
    /// A command on the device, run by `adb shell` or `adb exec-out`.
    Device,
}

/// One invocation, as `calls.log` records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRecord {
    /// adb or a device command.
    pub kind: CallKind,
    /// Its arguments, without the program's name for adb (`-s S shell input tap 1 2`), with
    /// it for a device command (`input tap 1 2`).
    pub argv: Vec<String>,
    /// The device it addressed, when there is one.
    pub serial: Option<String>,
    /// Its process ID.
    pub pid: u32,
    /// When it started, microseconds since the Unix epoch.
    pub start_us: u64,
    /// When it ended; `None` for `track-devices`, which is recorded when it starts.
    pub end_us: Option<u64>,
    /// Its exit status.
    pub status: Option<i32>,
}

impl CallRecord {
    /// How long it ran, in microseconds (0 while unknown).
    pub fn duration_us(&self) -> u64 {
        self.end_us
            .map(|end| end.saturating_sub(self.start_us))
            .unwrap_or(0)
    }
}

/// Now, in microseconds since the Unix epoch.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(words: &str) -> Vec<String> {
        words.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn rules_match_words_wildcards_and_screens() {
        let rule = Rule::parse("@login.xml input tap 540 * -> home.xml keyboard=off").unwrap();
        assert_eq!(rule.on.as_deref(), Some("login.xml"));
        assert!(rule.matches("login.xml", &event("input tap 540 1200")));
        assert!(!rule.matches("home.xml", &event("input tap 540 1200")));
        assert!(!rule.matches("login.xml", &event("input tap 540")));
        assert!(!rule.matches("login.xml", &event("input tap 540 1200 9")));
        let rest = Rule::parse("monkey -p com.example.shop ... -> shop.xml").unwrap();
        assert!(rest.matches("x", &event("monkey -p com.example.shop -c cat 1")));
        assert!(Rule::parse("input tap -> sideways").is_none());
        assert!(Rule::parse("# input tap 1 2 -> a.xml").is_none());
    }

    #[test]
    fn the_first_matching_rule_changes_the_screen_and_resets_its_dump_count() {
        let rules: Vec<Rule> = ["@busy.xml dump 2 -> content.xml", "dump * -> other.xml"]
            .iter()
            .filter_map(|line| Rule::parse(line))
            .collect();
        let mut state = DeviceState {
            screen: "busy.xml".into(),
            dumps_on_screen: 2,
            ..DeviceState::default()
        };
        assert!(apply_rules(&rules, &mut state, &event("dump 2")));
        assert_eq!(state.screen, "content.xml");
        assert_eq!(state.dumps_on_screen, 0);
    }

    #[test]
    fn compacting_keeps_attribute_text_and_drops_indentation() {
        let xml = "<?xml version='1.0' ?>\n<hierarchy rotation=\"0\">\n  <node text=\"a  b\" />\n</hierarchy>\n";
        assert_eq!(
            compact_xml(xml),
            "<?xml version='1.0' ?><hierarchy rotation=\"0\"><node text=\"a  b\" /></hierarchy>"
        );
    }
}
