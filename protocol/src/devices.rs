//! Mobile devices (issue 15, SPEC §10): what a device backend says about a device when it
//! connects to the hub's `/device` endpoint, the operations it serves and their results.
//!
//! A device backend (`tabwire-android`) opens one WebSocket per attached device. The
//! connection goes as a browser's does (see [`crate::messages`]): in local mode the backend's
//! [`crate::Challenge`] and the hub's proof, then a [`DeviceMessage::Hello`] carrying a
//! [`DeviceHello`]; the hub answers with the same [`crate::HubMessage`]s it sends browsers
//! (welcome, refusal, requests, heartbeats, session ends, policy changes), and the backend
//! answers each request with one [`crate::Response`].
//!
//! Observations are the browsers' [`Observation`], of the device's [`Foreground`]: a flat list
//! of kept nodes with refs (`@d7`), one line each, within a node and character budget, with
//! `query`, paging by `offset` and `since` deltas. Every action that changes the screen answers with the settled screen's
//! observation, so a tap and a look cost one call.

use serde::{Deserialize, Serialize};

use crate::observation::{Node, Observation, Point, Subject};
use crate::refs::DeviceRef;

/// The longest text one `device_type` call types, in characters (the hub refuses longer text
/// before it reaches a device; a backend refuses it too).
pub const MAX_TYPED_CHARS: usize = 10_000;
/// The most swipes one `scroll_to_element` makes (the hub refuses more; a backend too).
pub const MAX_SCROLL_SWIPES: u32 = 30;
/// The longest app ID (an Android package name, an iOS bundle ID).
pub const MAX_PACKAGE_LEN: usize = 255;

/// Whether `name` is an app ID: an Android package name (`com.example.app`, or a system one
/// such as `android`) or an iOS bundle ID (`com.apple.Preferences`, `com.example.my-app`):
/// dot-separated segments of ASCII letters, digits, `_` and `-`, the first starting with a
/// letter and the others with a letter or a digit, at most [`MAX_PACKAGE_LEN`] bytes. The one
/// rule for the hub's arguments, the policy's app patterns, a backend's command lines (only
/// such names are written into them) and the names it reads back from the device.
pub fn is_package_name(name: &str) -> bool {
    name.len() <= MAX_PACKAGE_LEN
        && name.split('.').enumerate().all(|(i, segment)| {
            let mut chars = segment.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()))
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
}

// The connection's messages live in `messages.rs` beside the browser's (they carry the same
// challenge and response); they are named here too, with the rest of the device contract.
pub use crate::messages::{DeviceHello, DeviceMessage, MAX_SCREEN_SIDE, check_device_hello};

/// The platform a device runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Platform {
    /// Android, driven over adb.
    Android,
    /// iOS, driven through WebDriverAgent.
    Ios,
}

/// A screen's size in physical pixels, as the device reports it for its natural orientation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScreenSize {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// The budget of a device observation, and the view it shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceView {
    /// Keep only nodes whose line contains this text (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// At most this many nodes.
    pub max_nodes: u32,
    /// At most this many characters of node text.
    pub max_chars: u32,
    /// Skip this many nodes of the (filtered) list.
    #[serde(default)]
    pub offset: u32,
    /// Return only the changes since this observation version, when it is still a baseline
    /// for the same query, offset and budget; otherwise a full observation with `reset`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
}

/// Observe the device's screen (the focused window).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceSnapshot {
    /// The budget and view.
    pub view: DeviceView,
}

/// After an action: observe the settled screen with this view (`None`: do not observe).
pub type ObserveAfter = Option<DeviceView>;

/// Tap a node at the centre of its bounds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceTap {
    /// The node, by a ref from an observation of the current screen.
    pub target: DeviceRef,
    /// What to observe once the screen settles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: ObserveAfter,
}

/// Tap a point of the screen; it must lie within the screen's size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TapCoordinates {
    /// The point.
    pub point: Point,
    /// What to observe once the screen settles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: ObserveAfter,
}

/// Where a long press lands: a node or a point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum PressTarget {
    /// A node's centre.
    Ref(DeviceRef),
    /// A point of the screen.
    Point(Point),
}

/// Press and hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LongPress {
    /// Where.
    pub target: PressTarget,
    /// How long, in milliseconds.
    pub duration_ms: u32,
    /// What to observe once the screen settles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: ObserveAfter,
}

/// Type text into the focused field, or into a node after tapping it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceType {
    /// The field to tap first; `None` types into whatever has focus.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<DeviceRef>,
    /// The text, typed as is: nothing in it is interpreted by a shell.
    pub text: String,
    /// Press Enter after typing.
    #[serde(default)]
    pub submit: bool,
    /// What to observe once the screen settles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: ObserveAfter,
}

/// Which way a swipe moves the finger's opposite: `up` scrolls the content up to show what is
/// below, as a person's finger moving up does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SwipeDirection {
    /// Finger moves up (shows what is below).
    Up,
    /// Finger moves down (shows what is above).
    Down,
    /// Finger moves left (shows what is to the right).
    Left,
    /// Finger moves right (shows what is to the left).
    Right,
}

/// Swipe across the screen or within a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceSwipe {
    /// Which way the finger moves.
    pub direction: SwipeDirection,
    /// Swipe within this node's bounds (a list, a carousel); `None` is the whole screen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<DeviceRef>,
    /// Where the finger starts (a drawer's edge, a slider's knob); `None` is placed so that the
    /// swipe runs through the area's centre. The area is then the whole screen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Point>,
    /// How far, as a percentage of the area's extent in that direction (10–95): from a start
    /// point, that much of the screen, stopping at its edge.
    pub distance_percent: u8,
    /// How long the finger moves, in milliseconds.
    pub duration_ms: u32,
    /// What to observe once the screen settles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: ObserveAfter,
}

/// A hardware or system button.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Button {
    /// Back.
    Back,
    /// Home.
    Home,
    /// Enter on the keyboard.
    Enter,
    /// The recent-apps switcher.
    AppSwitch,
    /// Volume up.
    VolumeUp,
    /// Volume down.
    VolumeDown,
    /// Delete the character before the cursor.
    Delete,
    /// Tab to the next field.
    Tab,
    /// Escape.
    Escape,
    /// Power (locks the screen; wakes it).
    Power,
}

/// Press a button.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PressButton {
    /// Which.
    pub button: Button,
    /// What to observe once the screen settles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: ObserveAfter,
}

/// Launch an app by package (its launcher activity).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpenApp {
    /// The package (`com.example.app`).
    pub package: String,
    /// Clear the app's data first: destructive, refused unless the backend was started with
    /// `--allow-destructive`.
    #[serde(default)]
    pub clear_data: bool,
    /// What to observe once the screen settles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: ObserveAfter,
}

/// Stop an app (force-stop).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CloseApp {
    /// The package.
    pub package: String,
    /// Clear its data too: destructive, refused unless the backend was started with
    /// `--allow-destructive`.
    #[serde(default)]
    pub clear_data: bool,
}

/// Hide the on-screen keyboard if it shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DismissKeyboard {
    /// What to observe once the screen settles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: ObserveAfter,
}

/// Answer the native dialog (an alert) in front: with its accepting button (the last of an
/// alert's, `OK`, `Allow`), its dismissing one (the first, `Cancel`, `Don't Allow`), or the
/// button with this exact label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DismissAlert {
    /// Accept rather than dismiss.
    pub accept: bool,
    /// The button to press, by its label, instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub button: Option<String>,
    /// What to observe once the screen settles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: ObserveAfter,
}

/// Swipe until a node is on the screen: one whose line contains `query`, or the node a ref
/// seen before names (refs are kept by identity, so it has the same ref when it shows again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScrollToElement {
    /// Text the node's line contains (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The node, by a ref from an earlier observation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<DeviceRef>,
    /// Which way the finger moves (up shows what is below).
    pub direction: SwipeDirection,
    /// Swipe within this node (a list) rather than the middle of the screen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<DeviceRef>,
    /// At most this many swipes.
    pub max_swipes: u32,
    /// What to observe at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: ObserveAfter,
}

/// The longest screen recording, in seconds (Android's `screenrecord` stops at 180).
pub const MAX_RECORDING_SECONDS: u32 = 180;
/// The largest recording returned, in bytes.
pub const MAX_RECORDING_BYTES: u64 = 10 * 1024 * 1024;
/// The largest app package `install_app` sends, in bytes (it travels to the backend in one
/// message).
pub const MAX_INSTALL_BYTES: u64 = 40 * 1024 * 1024;

/// Start or stop recording the screen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScreenRecording {
    /// Start (else stop and return the video).
    pub start: bool,
    /// When starting: it stops by itself after this many seconds.
    pub max_seconds: u32,
}

/// A screen recording started, or stopped with its video.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Recording {
    /// Started: it stops by itself after this many seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_seconds: Option<u32>,
    /// Stopped: the video.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video: Option<DeviceVideo>,
}

/// A recording, stopped: the video.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceVideo {
    /// The video, base64.
    pub data: String,
    /// `video/mp4`.
    pub mime_type: String,
    /// Its size in bytes.
    pub size: u64,
    /// How long it recorded, in milliseconds, as the backend timed it.
    pub recorded_ms: u64,
}

/// Install an app from its package file (`.apk` on Android).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InstallApp {
    /// The file's name.
    pub name: String,
    /// The file, base64.
    pub data_base64: String,
    /// Replace an installed app of the same package (keeping its data): destructive, refused
    /// unless the backend was started with `--allow-destructive`.
    pub replace: bool,
}

/// An app installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppInstalled {
    /// The file's name.
    pub name: String,
    /// Whether an installed app was replaced.
    pub replaced: bool,
}

/// A screenshot of the device's screen, PNG.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceScreenshotRequest {
    /// Scaled down to at most this many pixels wide.
    pub max_width: u32,
}

/// A logcat priority, from the least to the most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum LogLevel {
    /// `V`.
    Verbose,
    /// `D`.
    Debug,
    /// `I`.
    Info,
    /// `W`.
    Warn,
    /// `E`.
    Error,
    /// `F`.
    Fatal,
}

/// Where a log read starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum LogsSince {
    /// After the last entry this session's previous `device_logs` call returned (the first
    /// call: the most recent entries).
    Previous,
    /// Entries at or after this device time, `YYYY-MM-DD HH:MM:SS.mmm` or `MM-DD HH:MM:SS.mmm`.
    Time(String),
}

/// Read the device's log (logcat), filtered and bounded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceLogsRequest {
    /// Where to start.
    pub since: LogsSince,
    /// Only entries of this app's processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// Only entries with this tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// Only entries at this level or above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_level: Option<LogLevel>,
    /// At most this many entries.
    pub max_entries: u32,
    /// At most this many characters of messages.
    pub max_chars: u32,
}

/// Give up this session's lease on the device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseDevice {}

/// The device group's operations, nested in [`crate::Operation::Device`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum DeviceOp {
    /// Observe the screen.
    Snapshot(DeviceSnapshot),
    /// Tap a node.
    Tap(DeviceTap),
    /// Tap a point.
    TapCoordinates(TapCoordinates),
    /// Press and hold.
    LongPress(LongPress),
    /// Type text.
    Type(DeviceType),
    /// Swipe.
    Swipe(DeviceSwipe),
    /// Press a button.
    PressButton(PressButton),
    /// Launch an app.
    OpenApp(OpenApp),
    /// Stop an app.
    CloseApp(CloseApp),
    /// Hide the keyboard.
    DismissKeyboard(DismissKeyboard),
    /// A screenshot.
    Screenshot(DeviceScreenshotRequest),
    /// Read the log.
    Logs(DeviceLogsRequest),
    /// Give up the lease.
    Release(ReleaseDevice),
    /// Answer the native dialog in front.
    DismissAlert(DismissAlert),
    /// Swipe until a node is on the screen.
    ScrollToElement(ScrollToElement),
    /// Start or stop a screen recording.
    ScreenRecording(ScreenRecording),
    /// Install an app.
    InstallApp(InstallApp),
}

crate::tagged::deserialize_tagged!(DeviceOp, "kind", {
    "snapshot" => DeviceSnapshot => Self::Snapshot,
    "tap" => DeviceTap => Self::Tap,
    "tapCoordinates" => TapCoordinates => Self::TapCoordinates,
    "longPress" => LongPress => Self::LongPress,
    "type" => DeviceType => Self::Type,
    "swipe" => DeviceSwipe => Self::Swipe,
    "pressButton" => PressButton => Self::PressButton,
    "openApp" => OpenApp => Self::OpenApp,
    "closeApp" => CloseApp => Self::CloseApp,
    "dismissKeyboard" => DismissKeyboard => Self::DismissKeyboard,
    "screenshot" => DeviceScreenshotRequest => Self::Screenshot,
    "logs" => DeviceLogsRequest => Self::Logs,
    "release" => ReleaseDevice => Self::Release,
    "dismissAlert" => DismissAlert => Self::DismissAlert,
    "scrollToElement" => ScrollToElement => Self::ScrollToElement,
    "screenRecording" => ScreenRecording => Self::ScreenRecording,
    "installApp" => InstallApp => Self::InstallApp,
});

impl DeviceOp {
    /// Whether it can change what the device shows or holds.
    pub fn is_mutation(&self) -> bool {
        !matches!(
            self,
            DeviceOp::Snapshot(_)
                | DeviceOp::Screenshot(_)
                | DeviceOp::Logs(_)
                | DeviceOp::Release(_)
        )
    }
}

/// What a device observation looked at: the foreground app.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Foreground {
    /// The foreground app's package (Android) or bundle ID (iOS).
    pub package: String,
    /// The screen's rotation in quarter turns (0–3).
    pub rotation: u8,
    /// Whether the on-screen keyboard shows (it is not part of the hierarchy).
    pub keyboard_shown: bool,
}

impl Subject for Foreground {
    type Ref = DeviceRef;
}

/// What a device action did, and the settled screen after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceActed {
    /// Where the input landed, for taps, presses and swipes' start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Point>,
    /// The foreground package the action was judged against (read just before it).
    pub package: String,
    /// The observation, when one was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation<Foreground>>,
    /// The dialog's text, when the action answered one (`dismiss_alert`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert: Option<String>,
    /// The node looked for, when the action found it (`scroll_to_element`): its ref, line and
    /// bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found: Option<Node<DeviceRef>>,
    /// How many swipes the action made (`scroll_to_element`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swipes: Option<u32>,
}

impl DeviceActed {
    /// What an action did: where its input landed, the app it ran in, the screen after it.
    pub fn new(
        at: Option<Point>,
        package: String,
        observation: Option<Observation<Foreground>>,
    ) -> DeviceActed {
        DeviceActed {
            at,
            package,
            observation,
            alert: None,
            found: None,
            swipes: None,
        }
    }
}

/// A device screenshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceScreenshot {
    /// The PNG image, base64.
    pub data: String,
    /// Its width in pixels.
    pub width: u32,
    /// Its height in pixels.
    pub height: u32,
    /// The screen's width before scaling.
    pub screen_width: u32,
    /// The screen's height before scaling.
    pub screen_height: u32,
}

/// One logcat entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LogEntry {
    /// Device time, `MM-DD HH:MM:SS.mmm` (logcat's `threadtime` format).
    pub time: String,
    /// The process.
    pub pid: u32,
    /// The level.
    pub level: LogLevel,
    /// The tag.
    pub tag: String,
    /// The message, cut to the budget.
    pub message: String,
}

/// Log entries, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceLogs {
    /// The entries.
    pub entries: Vec<LogEntry>,
    /// Matching entries left out by the budget (the newest are kept).
    pub omitted: u32,
    /// Pass this as `since` (a time) to read on from here; `Previous` does the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_time: Option<String>,
}

/// The app an `open_app` or `close_app` acted on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppClosed {
    /// The package.
    pub package: String,
    /// Whether its data was cleared.
    pub data_cleared: bool,
}

/// The lease given up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceReleased {
    /// Whether the session held it.
    pub released: bool,
}

/// What a [`DeviceOp`] produced, nested in [`crate::OpResult::Device`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum DeviceResult {
    /// An observation.
    Snapshot(Observation<Foreground>),
    /// An action's outcome.
    Acted(DeviceActed),
    /// An app stopped.
    Closed(AppClosed),
    /// A screenshot.
    Screenshot(DeviceScreenshot),
    /// Log entries.
    Logs(DeviceLogs),
    /// The lease given up.
    Released(DeviceReleased),
    /// A recording started or stopped.
    Recording(Recording),
    /// An app installed.
    Installed(AppInstalled),
}

crate::tagged::deserialize_tagged!(DeviceResult, "kind", {
    "snapshot" => Observation<Foreground> => Self::Snapshot,
    "acted" => DeviceActed => Self::Acted,
    "closed" => AppClosed => Self::Closed,
    "screenshot" => DeviceScreenshot => Self::Screenshot,
    "logs" => DeviceLogs => Self::Logs,
    "released" => DeviceReleased => Self::Released,
    "recording" => Recording => Self::Recording,
    "installed" => AppInstalled => Self::Installed,
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_ids_are_android_packages_and_ios_bundle_ids() {
        for good in [
            "android",
            "com.example.app",
            "com.android.settings",
            "com.apple.Preferences",
            "com.example.my-app",
            "com.1password.ios",
            "org.my_app.v2",
        ] {
            assert!(is_package_name(good), "{good}");
        }
        for bad in [
            "",
            "com..app",
            ".com.app",
            "com.app.",
            "1com.app",
            "-com.app",
            "com.-app",
            "com.app;reboot",
            "com.app app",
            "com.app/x",
            "com.app'",
            &"a".repeat(MAX_PACKAGE_LEN + 1),
        ] {
            assert!(!is_package_name(bad), "{bad}");
        }
    }

    fn hello() -> DeviceHello {
        DeviceHello {
            device_id: "android-R58M12ABCDE".into(),
            device_name: "Pixel 7".into(),
            platform: Platform::Android,
            model: "Google Pixel 7".into(),
            os_version: "14 (API 34)".into(),
            screen: ScreenSize {
                width: 1080,
                height: 2400,
            },
            backend_version: "0.1.0".into(),
            protocol_version: crate::PROTOCOL_VERSION,
            proof: None,
        }
    }

    #[test]
    fn hello_checks_bound_every_field() {
        assert!(check_device_hello(&hello()).is_ok());
        let mut bad = hello();
        bad.device_id = "192.168.1.5:5555".into();
        assert!(check_device_hello(&bad).is_err());
        let mut bad = hello();
        bad.model = "x\u{7}".into();
        assert!(check_device_hello(&bad).is_err());
        let mut bad = hello();
        bad.screen.width = 0;
        assert!(check_device_hello(&bad).is_err());
        let mut bad = hello();
        bad.protocol_version += 1;
        assert_eq!(
            check_device_hello(&bad).unwrap_err().code,
            crate::ErrorCode::ProtocolMismatch
        );
    }

    #[test]
    fn ops_round_trip_with_their_tags() {
        let op = DeviceOp::Type(DeviceType {
            target: Some(DeviceRef(7)),
            text: "a b;$(x)".into(),
            submit: true,
            observe: None,
        });
        let json = serde_json::to_string(&op).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"type","target":"@d7","text":"a b;$(x)","submit":true}"#
        );
        assert_eq!(serde_json::from_str::<DeviceOp>(&json).unwrap(), op);
        assert!(op.is_mutation());
        assert!(!DeviceOp::Release(ReleaseDevice {}).is_mutation());
    }
}
