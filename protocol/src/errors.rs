//! Stable error codes.
//!
//! Codes are part of the product contract: agents branch on them, so a code is never renamed
//! or reused for a different meaning. Each code belongs to one [`ErrorCategory`] and says whether
//! repeating the same call unchanged can succeed ([`ErrorCode::retryable`]).

use serde::{Deserialize, Serialize};

/// The broad class of a failure, as SPEC §8 lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCategory {
    /// The caller's arguments are wrong.
    Input,
    /// The MCP session is not in a state to serve the call (e.g. no browser selected).
    Session,
    /// The browser connection: unknown, gone, or incompatible.
    Browser,
    /// The tab: missing, restricted, or failing to load.
    Tab,
    /// The element the call is aimed at.
    Target,
    /// A deadline passed.
    Timeout,
    /// Authentication or authorisation.
    Auth,
    /// What the operator's or the browser owner's policy allows, and a person's answer.
    Policy,
    /// A mobile device.
    Device,
    /// A fault inside tabwire.
    Internal,
}

/// A stable, machine-readable failure code, serialised as `SCREAMING_SNAKE_CASE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum ErrorCode {
    /// An argument is missing, unknown, of the wrong type or out of range.
    InvalidArgument,
    /// A selector is not valid CSS, or uses syntax tabwire does not accept (Playwright's
    /// `:has-text()`, `text=`).
    InvalidSelector,
    /// Several browsers are connected and the session has not chosen one.
    BrowserNotSelected,
    /// No browser with that ID is known to this hub (for this account).
    BrowserNotFound,
    /// The browser is known but not connected; calls never fall back to another browser.
    BrowserDisconnected,
    /// The extension and the hub speak different protocol versions.
    ProtocolMismatch,
    /// No tab with that ID exists in the browser.
    TabNotFound,
    /// No tab ID was given and the browser has no active tab.
    NoActiveTab,
    /// The page cannot be scripted (chrome://, the Web Store, another extension's pages).
    RestrictedPage,
    /// The navigation was refused or failed.
    NavigationFailed,
    /// The `@ref` does not belong to the tab's current document (it changed, or the ref was
    /// never issued): take a new snapshot.
    StaleRef,
    /// No element matches the selector.
    SelectorNotFound,
    /// The CSS selector matches more than one element.
    SelectorNotUnique,
    /// The element has no rendered box to act on.
    TargetNotVisible,
    /// Another element sits on top of the target's click point.
    TargetCovered,
    /// The element does not accept text (not a text field, disabled or read-only).
    NotEditable,
    /// `chrome.debugger` could not attach (DevTools or another debugger owns the tab).
    DebuggerUnavailable,
    /// The hub did not hear back from the extension before the deadline.
    BridgeTimeout,
    /// The operation waited in the tab's queue past its deadline and never started.
    QueueTimeout,
    /// The page did not respond before the deadline.
    TabUnresponsive,
    /// The navigation did not finish loading before the deadline.
    NavigationTimeout,
    /// A newer observation of the same document finished first; this one's refs and baseline
    /// were not kept. Use the newer observation (or observe again).
    Superseded,
    /// A wait's condition did not come true within its timeout.
    WaitTimeout,
    /// A JavaScript dialog (alert, confirm, prompt) blocks the page: call `handle_dialog`.
    DialogOpen,
    /// `handle_dialog` was called but no dialog is open in the tab.
    NoDialog,
    /// No visible option with that text or value exists.
    OptionNotFound,
    /// The tab is running an operation, so the request (e.g. recovering the debugger) was not
    /// carried out.
    TabBusy,
    /// A tab match (URL or title) fits several tabs: pick one by its tabId.
    AmbiguousMatch,
    /// The document changed between a screenshot and the observation taken with it.
    DocumentChanged,
    /// Chrome drew no frame of the tab to capture (its window may be minimized): show it.
    TabHidden,
    /// Another agent's MCP session holds the tab's lease: changing calls are refused until it
    /// lapses (the message says who holds it and when); reads still work.
    TabLeased,
    /// The tab has no document yet: it is still loading its first page and stayed so until
    /// the call's deadline. Repeating the call once the page is there succeeds.
    TabLoading,
    /// The access token is missing, malformed, expired, wrongly signed or revoked (hosted mode).
    /// Deliberately says no more than that.
    Unauthorized,
    /// The token is valid but its role may not do this (a browser token on `/mcp`, an agent
    /// token registering a browser), or the person has not granted the browser permission the
    /// call needs (the clipboard).
    Forbidden,
    /// An account limit (browsers, sessions, requests in flight) is reached.
    LimitExceeded,
    /// A local hub does not know this browser: it never paired, its pairing was revoked, or
    /// the pairing code it offers is unknown, used or expired. Run `tabwire-hub pair`.
    NotPaired,
    /// The policy (the operator's or the browser owner's, whichever is stricter) does not let
    /// agents do this on that origin; the message names the rule.
    OriginBlocked,
    /// A person answered *Deny* to an action on an `ask` origin, or declined a handoff.
    ApprovalDenied,
    /// Nobody answered an approval in time.
    ApprovalTimeout,
    /// A person has the tab (`request_human`): the agent's calls there wait until they are done.
    HumanInControl,
    /// Several devices are connected and the session has not chosen one.
    DeviceNotSelected,
    /// No device with that ID is known to this hub (for this account).
    DeviceNotFound,
    /// The device is known but not connected (unplugged, offline, unauthorized, or its backend
    /// stopped); calls never fall back to another device.
    DeviceDisconnected,
    /// The device could not be read right now: its UI hierarchy dump failed (the screen never
    /// went idle, no window had a root, or another UI automation client holds the device).
    DeviceBusy,
    /// Another agent's MCP session holds the device's lease: changing calls are refused until
    /// it lapses (the message says who holds it and when); reads still work.
    DeviceLeased,
    /// adb or the device failed a command; the message says which and what it printed.
    DeviceError,
    /// No app with that package is installed (or it has no launcher activity).
    AppNotFound,
    /// The text holds characters the device's `input` command cannot type (outside ASCII).
    TextNotTypable,
    /// The policy does not let agents do this in the app in the foreground; the message names
    /// the rule.
    AppBlocked,
    /// A destructive option (clearing an app's data) was asked for and the device backend was
    /// not started with `--allow-destructive`.
    DestructiveNotAllowed,
    /// The MCP client cancelled the call (`notifications/cancelled`, or its session ended)
    /// before it finished: it stopped before it ran, or at its next checkpoint, and
    /// `actionMayHaveOccurred` says whether input had gone out. The client has stopped
    /// listening, so this is what the audit log and the peers see, not the agent.
    Cancelled,
    /// A fault inside tabwire; the message says what.
    Internal,
}

impl ErrorCode {
    /// The category this code belongs to.
    pub fn category(self) -> ErrorCategory {
        use ErrorCode::*;
        match self {
            InvalidArgument | InvalidSelector => ErrorCategory::Input,
            // The calling session withdrew the call: about the session, not the peer or page.
            BrowserNotSelected | DeviceNotSelected | Cancelled => ErrorCategory::Session,
            DeviceNotFound | DeviceDisconnected | DeviceBusy | DeviceLeased | DeviceError
            | AppNotFound => ErrorCategory::Device,
            TextNotTypable => ErrorCategory::Input,
            BrowserNotFound | BrowserDisconnected | ProtocolMismatch | DebuggerUnavailable => {
                ErrorCategory::Browser
            }
            TabNotFound | NoActiveTab | RestrictedPage | NavigationFailed | DialogOpen
            | NoDialog | TabBusy | AmbiguousMatch | DocumentChanged | TabHidden | TabLeased
            | TabLoading => ErrorCategory::Tab,
            StaleRef | SelectorNotFound | SelectorNotUnique | TargetNotVisible | TargetCovered
            | NotEditable | OptionNotFound => ErrorCategory::Target,
            BridgeTimeout | QueueTimeout | TabUnresponsive | NavigationTimeout | Superseded
            | WaitTimeout => ErrorCategory::Timeout,
            Unauthorized | Forbidden | NotPaired => ErrorCategory::Auth,
            LimitExceeded => ErrorCategory::Session,
            OriginBlocked
            | ApprovalDenied
            | ApprovalTimeout
            | HumanInControl
            | AppBlocked
            | DestructiveNotAllowed => ErrorCategory::Policy,
            Internal => ErrorCategory::Internal,
        }
    }

    /// Whether repeating the same call, unchanged, may succeed later (after the browser
    /// reconnects, the page settles, or an element appears). Codes that need different
    /// arguments or a different session state first are not retryable.
    pub fn retryable(self) -> bool {
        use ErrorCode::*;
        matches!(
            self,
            BrowserDisconnected
                | SelectorNotFound
                | TargetNotVisible
                | TargetCovered
                | DebuggerUnavailable
                | BridgeTimeout
                | QueueTimeout
                | TabUnresponsive
                | NavigationTimeout
                | Superseded
                | WaitTimeout
                | TabBusy
                | OptionNotFound
                | DocumentChanged
                | TabLoading
                | LimitExceeded
                | ApprovalTimeout
                | HumanInControl
                | DeviceDisconnected
                | DeviceBusy
                | Cancelled
        )
    }

    /// The code as it appears on the wire, e.g. `"STALE_REF"`.
    pub fn as_str(self) -> &'static str {
        use ErrorCode::*;
        match self {
            InvalidArgument => "INVALID_ARGUMENT",
            InvalidSelector => "INVALID_SELECTOR",
            BrowserNotSelected => "BROWSER_NOT_SELECTED",
            BrowserNotFound => "BROWSER_NOT_FOUND",
            BrowserDisconnected => "BROWSER_DISCONNECTED",
            ProtocolMismatch => "PROTOCOL_MISMATCH",
            TabNotFound => "TAB_NOT_FOUND",
            NoActiveTab => "NO_ACTIVE_TAB",
            RestrictedPage => "RESTRICTED_PAGE",
            NavigationFailed => "NAVIGATION_FAILED",
            StaleRef => "STALE_REF",
            SelectorNotFound => "SELECTOR_NOT_FOUND",
            SelectorNotUnique => "SELECTOR_NOT_UNIQUE",
            TargetNotVisible => "TARGET_NOT_VISIBLE",
            TargetCovered => "TARGET_COVERED",
            NotEditable => "NOT_EDITABLE",
            DebuggerUnavailable => "DEBUGGER_UNAVAILABLE",
            BridgeTimeout => "BRIDGE_TIMEOUT",
            QueueTimeout => "QUEUE_TIMEOUT",
            TabUnresponsive => "TAB_UNRESPONSIVE",
            NavigationTimeout => "NAVIGATION_TIMEOUT",
            Superseded => "SUPERSEDED",
            WaitTimeout => "WAIT_TIMEOUT",
            DialogOpen => "DIALOG_OPEN",
            NoDialog => "NO_DIALOG",
            OptionNotFound => "OPTION_NOT_FOUND",
            TabBusy => "TAB_BUSY",
            AmbiguousMatch => "AMBIGUOUS_MATCH",
            DocumentChanged => "DOCUMENT_CHANGED",
            TabHidden => "TAB_HIDDEN",
            TabLeased => "TAB_LEASED",
            TabLoading => "TAB_LOADING",
            OriginBlocked => "ORIGIN_BLOCKED",
            ApprovalDenied => "APPROVAL_DENIED",
            ApprovalTimeout => "APPROVAL_TIMEOUT",
            HumanInControl => "HUMAN_IN_CONTROL",
            Unauthorized => "UNAUTHORIZED",
            Forbidden => "FORBIDDEN",
            LimitExceeded => "LIMIT_EXCEEDED",
            NotPaired => "NOT_PAIRED",
            DeviceNotSelected => "DEVICE_NOT_SELECTED",
            DeviceNotFound => "DEVICE_NOT_FOUND",
            DeviceDisconnected => "DEVICE_DISCONNECTED",
            DeviceBusy => "DEVICE_BUSY",
            DeviceLeased => "DEVICE_LEASED",
            DeviceError => "DEVICE_ERROR",
            AppNotFound => "APP_NOT_FOUND",
            TextNotTypable => "TEXT_NOT_TYPABLE",
            AppBlocked => "APP_BLOCKED",
            DestructiveNotAllowed => "DESTRUCTIVE_NOT_ALLOWED",
            Cancelled => "CANCELLED",
            Internal => "INTERNAL",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed operation, as the extension reports it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpError {
    /// What went wrong, stably.
    pub code: ErrorCode,
    /// One or two sentences for the agent: what happened and what to do next.
    pub message: String,
    /// True when a click, keystroke or navigation may already have taken effect, so the agent
    /// must inspect the page before retrying.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub action_may_have_occurred: bool,
    /// Whether the error arrived over the wire (was deserialized): its message is then the
    /// sender's words whatever its code, even a code the hub reserves for its own errors
    /// (`DEVICE_NOT_FOUND`, `BRIDGE_TIMEOUT`…), and is fenced where an agent reads it. Never
    /// sent; errors made with [`OpError::new`] are the maker's own. Not part of equality.
    #[serde(skip, default = "arrived")]
    pub from_wire: bool,
}

fn arrived() -> bool {
    true
}

impl PartialEq for OpError {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && self.action_may_have_occurred == other.action_may_have_occurred
    }
}

impl Eq for OpError {}

impl OpError {
    /// An error that certainly changed nothing.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        OpError {
            code,
            message: message.into(),
            action_may_have_occurred: false,
            from_wire: false,
        }
    }

    /// Marks the error as one after which the action may have happened.
    pub fn action_may_have_occurred(mut self) -> Self {
        self.action_may_have_occurred = true;
        self
    }

    /// A peer's answer to a request the hub cancelled ([`crate::HubMessage::Cancel`]): it
    /// stopped before it ran or before any input (`input_sent` false: nothing was done), or
    /// after some input had gone out (the action may have happened). One wording for every
    /// kind of peer.
    pub fn cancelled(input_sent: bool) -> Self {
        if input_sent {
            OpError::new(
                ErrorCode::Cancelled,
                "The MCP client cancelled the call after its input had gone out: the action may \
                 have happened; nothing more was done.",
            )
            .action_may_have_occurred()
        } else {
            OpError::new(
                ErrorCode::Cancelled,
                "The MCP client cancelled the call before it sent any input; nothing was done.",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_read_off_the_wire_is_marked_as_the_senders() {
        let made = OpError::new(ErrorCode::DeviceNotFound, "no device");
        assert!(!made.from_wire);
        let sent = serde_json::to_value(&made).unwrap();
        assert!(sent.get("fromWire").is_none(), "{sent}");
        let read: OpError = serde_json::from_value(sent).unwrap();
        assert!(read.from_wire, "a peer may use a hub's code");
        assert_eq!(read, made);
        // A peer cannot claim the mark away.
        assert!(
            serde_json::from_value::<OpError>(serde_json::json!({
                "code": "DEVICE_NOT_FOUND", "message": "m", "fromWire": false
            }))
            .is_err()
        );
    }

    #[test]
    fn wire_names_match_serde() {
        for code in [
            ErrorCode::InvalidArgument,
            ErrorCode::BrowserNotSelected,
            ErrorCode::StaleRef,
            ErrorCode::BridgeTimeout,
            ErrorCode::Internal,
            ErrorCode::TabUnresponsive,
            ErrorCode::WaitTimeout,
            ErrorCode::DialogOpen,
            ErrorCode::NoDialog,
            ErrorCode::OptionNotFound,
            ErrorCode::TabBusy,
            ErrorCode::AmbiguousMatch,
            ErrorCode::DocumentChanged,
            ErrorCode::TabHidden,
            ErrorCode::TabLeased,
            ErrorCode::TabLoading,
            ErrorCode::Unauthorized,
            ErrorCode::Forbidden,
            ErrorCode::LimitExceeded,
            ErrorCode::NotPaired,
            ErrorCode::DeviceNotSelected,
            ErrorCode::DeviceNotFound,
            ErrorCode::DeviceDisconnected,
            ErrorCode::DeviceBusy,
            ErrorCode::DeviceLeased,
            ErrorCode::DeviceError,
            ErrorCode::AppNotFound,
            ErrorCode::TextNotTypable,
            ErrorCode::AppBlocked,
            ErrorCode::DestructiveNotAllowed,
            ErrorCode::Cancelled,
        ] {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
    }

    #[test]
    fn categories_follow_the_spec() {
        assert_eq!(ErrorCode::InvalidArgument.category(), ErrorCategory::Input);
        assert_eq!(
            ErrorCode::BrowserNotSelected.category(),
            ErrorCategory::Session
        );
        assert_eq!(
            ErrorCode::BrowserDisconnected.category(),
            ErrorCategory::Browser
        );
        assert_eq!(ErrorCode::StaleRef.category(), ErrorCategory::Target);
        assert_eq!(ErrorCode::QueueTimeout.category(), ErrorCategory::Timeout);
        assert!(ErrorCode::BrowserDisconnected.retryable());
        assert!(!ErrorCode::StaleRef.retryable());
        assert_eq!(ErrorCode::TabLeased.category(), ErrorCategory::Tab);
        assert!(
            !ErrorCode::TabLeased.retryable(),
            "the same call fails until the lease lapses"
        );
        assert_eq!(ErrorCode::TabLoading.category(), ErrorCategory::Tab);
        assert!(
            ErrorCode::TabLoading.retryable(),
            "the same call works once the page is there"
        );
        assert_eq!(ErrorCode::Cancelled.category(), ErrorCategory::Session);
        assert!(
            ErrorCode::Cancelled.retryable(),
            "only its caller stopped it"
        );
    }

    #[test]
    fn a_cancelled_request_says_whether_input_went_out() {
        let before = OpError::cancelled(false);
        assert_eq!(before.code, ErrorCode::Cancelled);
        assert!(!before.action_may_have_occurred);
        assert!(before.message.contains("nothing was done"), "{before:?}");
        let after = OpError::cancelled(true);
        assert!(after.action_may_have_occurred);
        assert!(after.message.contains("may have happened"), "{after:?}");
    }

    #[test]
    fn action_flag_is_omitted_when_false() {
        let e = OpError::new(ErrorCode::StaleRef, "take a new snapshot");
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"code":"STALE_REF","message":"take a new snapshot"}"#
        );
        let e = e.action_may_have_occurred();
        assert!(
            serde_json::to_string(&e)
                .unwrap()
                .contains(r#""actionMayHaveOccurred":true"#)
        );
    }
}
