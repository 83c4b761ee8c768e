//! The tool catalogue: every tool once, with its group, MCP annotations, arguments, handler
//! and description.
//!
//! [`catalogue!`] generates both the `tools/list` definitions and the dispatch of `tools/call`
//! from one table, so a tool cannot be listed without being callable or the other way round,
//! and its name reaches its handler from here (as [`ToolContext::tool`]) instead of being
//! repeated in it. A tool's arguments are its own struct with the routing arguments of its
//! group ([`BrowserRoute`], [`TabRoute`]) and, for actions, the common [`ActionOptions`]
//! flattened beside them ([`ToolArgs`]); the JSON Schema is derived from that and unknown fields
//! are refused with `INVALID_ARGUMENT` before anything reaches a browser.

use std::sync::OnceLock;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;

use super::args::{ActionOptions, NoArgs};
use super::devices::DeviceRoute;
use super::envelope::{ToolError, ToolOutput};
use super::routing::{BrowserRoute, Caller, Group, NoRoute, TabRoute, ToolContext};
use super::{
    act, actions, batch, capture, devices, doctor, files, health, input, mocks, observe, optin,
    peers, people, schema, screenshot, storage, tabs, waits,
};
use crate::peer::{Browser, Device, SelectBrowserArgs, SelectDeviceArgs};
use tabwire_protocol::{Kind, KindSet, Listing};

/// MCP's tool annotations, set per tool. Only the hints that differ from MCP's defaults
/// (`readOnlyHint: false`, `destructiveHint: true`, `idempotentHint: false`,
/// `openWorldHint: true`) are sent: clients apply the defaults, and every character of
/// `tools/list` is paid for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    /// The tool changes nothing: pages, tabs and the browser are as they were.
    pub read_only: bool,
    /// The tool may destroy something (a page's state, a tab, what was typed). Meaningful only
    /// when it is not read-only.
    pub destructive: bool,
    /// Calling it again with the same arguments changes nothing more.
    pub idempotent: bool,
    /// It works on the open world of web pages rather than on the hub's own state.
    pub open_world: bool,
}

/// Reads a page or a browser.
pub const READS: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: true,
};
/// Reads the hub's own state (its browsers).
pub const READS_HUB: Hints = Hints {
    open_world: false,
    ..READS
};
/// Sets the session's state in the hub (a selection): nothing is lost, repeating changes
/// nothing.
pub const SETS_HUB: Hints = Hints {
    read_only: false,
    open_world: false,
    ..READS
};
/// Changes a browser without destroying anything (scrolling, a new tab, capture on), and may
/// change more when repeated.
pub const ADDS: Hints = Hints {
    read_only: false,
    destructive: false,
    idempotent: false,
    open_world: true,
};
/// Changes a browser without destroying anything, and repeating it changes nothing more
/// (switching to a tab, hovering, capture off).
pub const SETS: Hints = Hints {
    idempotent: true,
    ..ADDS
};
/// Acts on a page the way a person does: a click, typing, a navigation may change or destroy
/// anything the page lets a person change.
pub const CHANGES: Hints = Hints {
    read_only: false,
    destructive: true,
    idempotent: false,
    open_world: true,
};
/// Forgets records a tab's capture kept (`start_*` starts afresh; a read with `clearAfter`
/// drops what it returned): not read-only, and what is forgotten is gone for every reader.
pub const FORGETS: Hints = CHANGES;

impl Hints {
    /// The annotations sent for these hints; `None` when every hint is MCP's default.
    fn annotations(self) -> Option<ToolAnnotations> {
        let mut annotations = ToolAnnotations::new();
        if self.read_only {
            annotations.read_only_hint = Some(true);
        } else {
            // Meaningful only for tools that are not read-only.
            if !self.destructive {
                annotations.destructive_hint = Some(false);
            }
            if self.idempotent {
                annotations.idempotent_hint = Some(true);
            }
        }
        if !self.open_world {
            annotations.open_world_hint = Some(false);
        }
        (annotations != ToolAnnotations::new()).then_some(annotations)
    }
}

/// One tool of the catalogue.
pub struct Entry {
    /// Its `tools/list` definition.
    pub tool: Tool,
    /// Its group.
    pub group: Group,
    /// Its annotations, before the defaults are left out.
    pub hints: Hints,
}

/// A tool's arguments: its own (`T`), its group's routing arguments (`R`) and its options
/// (`O`), each flattened into one strict object. None of the three may flatten anything itself:
/// serde cannot refuse unknown fields through two levels of flattening.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolArgs<T, R, O> {
    /// The tool's own arguments.
    #[serde(flatten)]
    pub args: T,
    /// `browserId`, `tabId`.
    #[serde(flatten)]
    pub route: R,
    /// The common options of actions.
    #[serde(flatten)]
    pub options: O,
}

/// The options of a tool that takes none.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct NoOptions {}

/// Calls an entry's handler with its arguments, and its options unless it takes none.
macro_rules! handle {
    ($handler:path, $ctx:expr, $parsed:expr, NoOptions) => {
        $handler($ctx, $parsed.args)
    };
    ($handler:path, $ctx:expr, $parsed:expr, $options:ident) => {
        $handler($ctx, $parsed.args, $parsed.options)
    };
}

/// A row's group: `Hub`, or the name of a peer kind (`Browser`, a [`Kind`] variant).
macro_rules! group {
    (Hub) => {
        Group::Hub
    };
    ($kind:ident) => {
        Group::Peer(Kind::$kind)
    };
}

/// Declares every tool once: name, group, routing arguments, hints, own arguments, options,
/// handler, description.
macro_rules! catalogue {
    ($(
        $name:literal, $group:ident $route:ident $hints:ident, $args:ty, $options:ident
            => $handler:path, $description:expr;
    )*) => {
        /// Every tool, in `tools/list` order.
        fn entries() -> Vec<Entry> {
            vec![$({
                let schema = schema::input_schema::<ToolArgs<$args, $route, $options>>();
                let mut tool = Tool::new($name, $description, schema);
                tool.annotations = $hints.annotations();
                Entry {
                    tool,
                    group: group!($group),
                    hints: $hints,
                }
            },)*]
        }

        /// Runs the named tool for `caller`; `None` for a name not in the catalogue.
        pub async fn dispatch(
            caller: &Caller,
            name: &str,
            args: JsonObject,
        ) -> Option<Result<ToolOutput, ToolError>> {
            match name {
                $($name => Some(
                    match schema::parse_args::<ToolArgs<$args, $route, $options>>(args) {
                        Ok(parsed) => {
                            let ctx: ToolContext = caller.context($name, group!($group), parsed.route.into());
                            handle!($handler, &ctx, parsed, $options).await
                        }
                        Err(error) => Err(error),
                    },
                ),)*
                _ => None,
            }
        }
    };
}

catalogue! {
    "list_browsers", Hub NoRoute READS_HUB, peers::ListArgs, NoOptions => peers::list::<Browser>, peers::LIST_BROWSERS;
    "select_browser", Hub NoRoute SETS_HUB, SelectBrowserArgs, NoOptions => peers::select::<Browser>, peers::SELECT_BROWSER;
    "show_tools", Hub NoRoute SETS_HUB, optin::ShowToolsArgs, NoOptions => optin::show_tools, optin::SHOW_TOOLS;
    "doctor", Hub NoRoute READS_HUB, NoArgs, NoOptions => doctor::doctor, doctor::DOCTOR;
    "list_tabs", Browser BrowserRoute READS, NoArgs, NoOptions => tabs::list_tabs, tabs::LIST_TABS;
    "get_active_tab", Browser BrowserRoute READS, NoArgs, NoOptions => tabs::get_active_tab, tabs::GET_ACTIVE_TAB;
    "switch_tab", Browser BrowserRoute SETS, tabs::PickTabArgs, NoOptions => tabs::switch_tab, tabs::SWITCH_TAB;
    "close_tab", Browser BrowserRoute CHANGES, tabs::PickTabArgs, NoOptions => tabs::close_tab, tabs::CLOSE_TAB;
    "create_tab", Browser BrowserRoute ADDS, tabs::CreateTabArgs, NoOptions => tabs::create_tab, tabs::CREATE_TAB;
    "list_frames", Browser TabRoute READS, NoArgs, NoOptions => observe::list_frames, observe::LIST_FRAMES;
    "navigate_to", Browser TabRoute CHANGES, tabs::NavigateArgs, NoOptions => tabs::navigate_to, tabs::NAVIGATE_TO;
    "go_back", Browser TabRoute CHANGES, NoArgs, NoOptions => tabs::go_back, tabs::GO_BACK;
    "go_forward", Browser TabRoute CHANGES, NoArgs, NoOptions => tabs::go_forward, tabs::GO_FORWARD;
    "reload_tab", Browser TabRoute CHANGES, tabs::ReloadArgs, NoOptions => tabs::reload_tab, tabs::RELOAD_TAB;
    "get_page_snapshot", Browser TabRoute READS, observe::SnapshotArgs, NoOptions => observe::get_page_snapshot, observe::GET_PAGE_SNAPSHOT;
    "get_page_content", Browser TabRoute READS, observe::ContentArgs, NoOptions => observe::get_page_content, observe::GET_PAGE_CONTENT;
    "get_selected_text", Browser TabRoute READS, observe::SelectedTextArgs, NoOptions => observe::get_selected_text, observe::GET_SELECTED_TEXT;
    "take_screenshot", Browser TabRoute READS, screenshot::ScreenshotArgs, NoOptions => screenshot::take_screenshot, screenshot::TAKE_SCREENSHOT;
    "save_pdf", Browser TabRoute READS, files::PdfArgs, NoOptions => files::save_pdf, files::SAVE_PDF;
    "get_downloads", Browser BrowserRoute READS, files::DownloadsArgs, NoOptions => files::get_downloads, files::GET_DOWNLOADS;
    "clipboard", Browser TabRoute CHANGES, files::ClipboardArgs, NoOptions => files::clipboard, files::CLIPBOARD;
    "click_element", Browser TabRoute CHANGES, actions::ClickArgs, ActionOptions => act::act, actions::CLICK_ELEMENT;
    "click_and_wait", Browser TabRoute CHANGES, actions::ClickAndWaitArgs, ActionOptions => act::act, actions::CLICK_AND_WAIT;
    "hover_element", Browser TabRoute SETS, actions::HoverArgs, ActionOptions => act::act, actions::HOVER_ELEMENT;
    "drag_element", Browser TabRoute CHANGES, actions::DragArgs, ActionOptions => act::act, actions::DRAG_ELEMENT;
    "type_text", Browser TabRoute CHANGES, input::TypeArgs, ActionOptions => act::act, input::TYPE_TEXT;
    "press_key", Browser TabRoute CHANGES, input::PressKeyArgs, ActionOptions => act::act, input::PRESS_KEY;
    "select_option", Browser TabRoute CHANGES, input::SelectOptionArgs, ActionOptions => act::act, input::SELECT_OPTION;
    "fill_form", Browser TabRoute CHANGES, input::FillFormArgs, ActionOptions => act::act, input::FILL_FORM;
    "upload_file", Browser TabRoute CHANGES, files::UploadArgs, ActionOptions => files::upload_file, files::UPLOAD_FILE;
    "scroll_page", Browser TabRoute ADDS, actions::ScrollArgs, ActionOptions => act::act, actions::SCROLL_PAGE;
    "navigate_and_wait", Browser TabRoute CHANGES, waits::NavigateAndWaitArgs, ActionOptions => waits::navigate_and_wait, waits::NAVIGATE_AND_WAIT;
    "wait_for", Browser TabRoute READS, waits::WaitForArgs, ActionOptions => act::act, waits::WAIT_FOR;
    "run_browser_actions", Browser TabRoute CHANGES, batch::RunActionsArgs, ActionOptions => batch::run_browser_actions, batch::RUN_BROWSER_ACTIONS;
    "read_element_state", Browser TabRoute READS, health::ReadStateArgs, NoOptions => health::read_element_state, health::READ_ELEMENT_STATE;
    "handle_dialog", Browser TabRoute CHANGES, health::HandleDialogArgs, NoOptions => health::handle_dialog, health::HANDLE_DIALOG;
    "request_human", Browser TabRoute ADDS, people::RequestHumanArgs, NoOptions => people::request_human, people::REQUEST_HUMAN;
    "record_actions", Browser TabRoute SETS, people::RecordActionsArgs, NoOptions => people::record_actions, people::RECORD_ACTIONS;
    "get_tab_health", Browser TabRoute SETS, health::TabHealthArgs, NoOptions => health::get_tab_health, health::GET_TAB_HEALTH;
    "start_network_capture", Browser TabRoute FORGETS, NoArgs, NoOptions => capture::start_network_capture, capture::START_NETWORK_CAPTURE;
    "stop_network_capture", Browser TabRoute SETS, NoArgs, NoOptions => capture::stop_network_capture, capture::STOP_NETWORK_CAPTURE;
    "get_captured_requests", Browser TabRoute FORGETS, capture::RequestsArgs, NoOptions => capture::get_captured_requests, capture::GET_CAPTURED_REQUESTS;
    "get_response_body", Browser TabRoute READS, capture::ResponseBodyArgs, NoOptions => capture::get_response_body, capture::GET_RESPONSE_BODY;
    "start_console_capture", Browser TabRoute FORGETS, NoArgs, NoOptions => capture::start_console_capture, capture::START_CONSOLE_CAPTURE;
    "stop_console_capture", Browser TabRoute SETS, NoArgs, NoOptions => capture::stop_console_capture, capture::STOP_CONSOLE_CAPTURE;
    "get_console_logs", Browser TabRoute FORGETS, capture::ConsoleArgs, NoOptions => capture::get_console_logs, capture::GET_CONSOLE_LOGS;
    "mock_network", Browser TabRoute CHANGES, mocks::MockNetworkArgs, NoOptions => mocks::mock_network, mocks::MOCK_NETWORK;
    "get_cookies", Browser TabRoute READS, storage::CookiesArgs, NoOptions => storage::get_cookies, storage::GET_COOKIES;
    "get_local_storage", Browser TabRoute READS, storage::LocalStorageArgs, NoOptions => storage::get_local_storage, storage::GET_LOCAL_STORAGE;
    "release_tab", Browser TabRoute SETS, NoArgs, NoOptions => tabs::release_tab, tabs::RELEASE_TAB;
    "list_devices", Hub NoRoute READS_HUB, peers::ListArgs, NoOptions => peers::list::<Device>, peers::LIST_DEVICES;
    "select_device", Hub NoRoute SETS_HUB, SelectDeviceArgs, NoOptions => peers::select::<Device>, peers::SELECT_DEVICE;
    "device_snapshot", Device DeviceRoute READS, devices::SnapshotArgs, NoOptions => devices::device_snapshot, devices::DEVICE_SNAPSHOT;
    "device_tap", Device DeviceRoute CHANGES, devices::TapArgs, ActionOptions => devices::act, devices::DEVICE_TAP;
    "tap_coordinates", Device DeviceRoute CHANGES, devices::TapCoordinatesArgs, ActionOptions => devices::act, devices::TAP_COORDINATES;
    "long_press", Device DeviceRoute CHANGES, devices::LongPressArgs, ActionOptions => devices::act, devices::LONG_PRESS;
    "device_type", Device DeviceRoute CHANGES, devices::TypeArgs, ActionOptions => devices::act, devices::DEVICE_TYPE;
    "device_swipe", Device DeviceRoute CHANGES, devices::SwipeArgs, ActionOptions => devices::act, devices::DEVICE_SWIPE;
    "press_button", Device DeviceRoute CHANGES, devices::PressButtonArgs, ActionOptions => devices::act, devices::PRESS_BUTTON;
    "open_app", Device DeviceRoute CHANGES, devices::OpenAppArgs, ActionOptions => devices::open_app, devices::OPEN_APP;
    "close_app", Device DeviceRoute CHANGES, devices::CloseAppArgs, NoOptions => devices::close_app, devices::CLOSE_APP;
    "dismiss_alert", Device DeviceRoute CHANGES, devices::DismissAlertArgs, ActionOptions => devices::act, devices::DISMISS_ALERT;
    "scroll_to_element", Device DeviceRoute CHANGES, devices::ScrollToArgs, ActionOptions => devices::act, devices::SCROLL_TO_ELEMENT;
    "screen_recording", Device DeviceRoute CHANGES, devices::RecordingArgs, NoOptions => devices::screen_recording, devices::SCREEN_RECORDING;
    "install_app", Device DeviceRoute CHANGES, devices::InstallArgs, NoOptions => devices::install_app, devices::INSTALL_APP;
    "dismiss_keyboard", Device DeviceRoute SETS, devices::DismissKeyboardArgs, ActionOptions => devices::act, devices::DISMISS_KEYBOARD;
    "device_screenshot", Device DeviceRoute READS, devices::ScreenshotArgs, NoOptions => devices::device_screenshot, devices::DEVICE_SCREENSHOT;
    "device_logs", Device DeviceRoute READS, devices::LogsArgs, NoOptions => devices::device_logs, devices::DEVICE_LOGS;
    "release_device", Device DeviceRoute SETS, NoArgs, NoOptions => devices::release_device, devices::RELEASE_DEVICE;
}

/// The catalogue, built once per process.
pub fn catalogue() -> &'static [Entry] {
    static ENTRIES: OnceLock<Vec<Entry>> = OnceLock::new();
    ENTRIES.get_or_init(entries)
}

/// The `tools/list` definitions of the tools listed by default, of the opt-in groups that
/// `shows` says are shown, and of the peer kinds listed only while one is connected
/// ([`Listing::WhileConnected`]: SPEC §7, a session without devices does not pay for their
/// tools) that are `present` (the caller's account has one connected).
pub fn listed(
    shows: impl Fn(optin::OptIn) -> bool,
    present: KindSet,
) -> impl Iterator<Item = &'static Tool> {
    catalogue()
        .iter()
        .filter(move |entry| {
            kind_of(entry)
                .is_none_or(|kind| kind.spec().listing == Listing::Always || present.contains(kind))
        })
        .map(|entry| &entry.tool)
        .filter(move |tool| optin::OptIn::of(&tool.name).is_none_or(&shows))
}

/// The kind of peer a tool is about, whose listing rule it follows: its group's, or the kind
/// whose `list_*`/`select_*` it is.
fn kind_of(entry: &Entry) -> Option<Kind> {
    match entry.group {
        Group::Peer(kind) => Some(kind),
        Group::Hub => Kind::of_peer_tool(&entry.tool.name),
    }
}

/// Every tool's `tools/list` definition.
pub fn tools() -> impl Iterator<Item = &'static Tool> {
    catalogue().iter().map(|entry| &entry.tool)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str) -> &'static Entry {
        catalogue()
            .iter()
            .find(|entry| entry.tool.name == name)
            .unwrap_or_else(|| panic!("no tool {name}"))
    }

    #[test]
    fn annotations_say_each_hint_and_send_only_what_differs_from_the_defaults() {
        for entry in catalogue() {
            let name = &entry.tool.name;
            let sent = entry.tool.annotations.clone().unwrap_or_default();
            // MCP's defaults, as a client applies them to what is left out.
            assert_eq!(
                sent.read_only_hint.unwrap_or(false),
                entry.hints.read_only,
                "{name}"
            );
            assert_eq!(
                sent.open_world_hint.unwrap_or(true),
                entry.hints.open_world,
                "{name}"
            );
            if entry.hints.read_only {
                assert_eq!(
                    sent.destructive_hint, None,
                    "{name}: meaningless when read-only"
                );
                assert_eq!(
                    sent.idempotent_hint, None,
                    "{name}: meaningless when read-only"
                );
            } else {
                assert_eq!(
                    sent.destructive_hint.unwrap_or(true),
                    entry.hints.destructive,
                    "{name}"
                );
                assert_eq!(
                    sent.idempotent_hint.unwrap_or(false),
                    entry.hints.idempotent,
                    "{name}"
                );
            }
            for default in [
                sent.read_only_hint == Some(false),
                sent.destructive_hint == Some(true),
                sent.idempotent_hint == Some(false),
                sent.open_world_hint == Some(true),
            ] {
                assert!(!default, "{name} sends a default hint: {sent:?}");
            }
        }
    }

    #[test]
    fn hints_are_honest() {
        // Reads change nothing, wherever they read.
        for name in ["get_page_snapshot", "list_tabs", "get_cookies", "wait_for"] {
            assert_eq!(entry(name).hints, READS, "{name}");
        }
        // The hub's own tools do not reach the web.
        for name in ["list_browsers", "select_browser", "doctor"] {
            assert!(!entry(name).hints.open_world, "{name}");
            assert_eq!(entry(name).group, Group::Hub, "{name}");
        }
        // What a person's input can do, a tool's can: it may destroy.
        for name in [
            "click_element",
            "type_text",
            "close_tab",
            "navigate_to",
            "run_browser_actions",
        ] {
            assert_eq!(entry(name).hints, CHANGES, "{name}");
        }
        // Capture keeps records for every reader; starting afresh or reading with clearAfter
        // forgets them.
        for name in [
            "start_network_capture",
            "start_console_capture",
            "get_captured_requests",
            "get_console_logs",
        ] {
            assert!(!entry(name).hints.read_only, "{name}");
            assert!(entry(name).hints.destructive, "{name}");
        }
        for name in ["stop_network_capture", "stop_console_capture"] {
            assert_eq!(entry(name).hints, SETS, "{name}");
        }
        // Reads of what was recorded, without a way to forget it, are reads.
        for name in [
            "get_response_body",
            "get_local_storage",
            "read_element_state",
            "take_screenshot",
            "get_page_content",
            "get_selected_text",
            "list_frames",
        ] {
            assert_eq!(entry(name).hints, READS, "{name}");
        }
        // Changes that destroy nothing.
        assert_eq!(entry("create_tab").hints, ADDS);
        assert_eq!(entry("switch_tab").hints, SETS);
        // Giving up a lease ungroups the tab and nothing more, however often.
        assert_eq!(entry("release_tab").hints, SETS);
        // Devices: looking changes nothing; input may destroy what a person's input could;
        // stopping an app loses its state.
        for name in ["device_snapshot", "device_screenshot", "device_logs"] {
            assert_eq!(entry(name).hints, READS, "{name}");
        }
        for name in [
            "device_tap",
            "device_type",
            "close_app",
            "open_app",
            "press_button",
        ] {
            assert_eq!(entry(name).hints, CHANGES, "{name}");
        }
        for name in ["list_devices", "select_device"] {
            assert!(!entry(name).hints.open_world, "{name}");
            assert_eq!(entry(name).group, Group::Hub, "{name}");
        }
        assert_eq!(entry("release_device").hints, SETS);
        // The doctor looks and changes nothing.
        assert_eq!(entry("doctor").hints, READS_HUB);
        assert!(
            catalogue()
                .iter()
                .filter(|entry| matches!(entry.group, Group::Peer(_)))
                .all(|entry| entry.hints.open_world)
        );
    }
}
