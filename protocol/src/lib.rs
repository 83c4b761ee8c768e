//! The wire contract between `tabwire-hub` and the tabwire browser extension.
//!
//! Both sides compile this crate (the extension as wasm32), so the messages cannot drift apart.
//! It holds data and pure rules only: no I/O, no async runtime, no JavaScript bindings. Besides
//! serde it depends on serde_json, which every side already uses to put these types on the
//! wire, and on hmac and sha2 for the pairing proofs both sides must compute alike; no message
//! or result carries untyped JSON.
//!
//! # Layout
//! - [`messages`]: the envelopes on the `/browser` WebSocket — hello, welcome, refusal,
//!   request, response, heartbeat — and the [`PROTOCOL_VERSION`] handshake rule.
//! - [`pairing`]: the proofs of the pairing handshake and the one-time pairing codes.
//! - [`ops`]: what a request asks the extension to do ([`Operation`]) and what comes back
//!   ([`OpResult`]), put together from the groups below; [`Ask`] ties each request type to its
//!   answer's type.
//! - [`observation`]: the one observation every peer answers with (a page's or a device's
//!   lines with refs, their window and deltas), generic over what was observed.
//! - The groups, each with its requests and results, the way the tools are grouped:
//!   [`observe`] (snapshots, content, frames, selected text, screenshots), [`tabs`] (tabs and
//!   navigation), [`actions`] (actions, batches, element state, dialogs, tab health),
//!   [`capture`] (network and console capture) and [`storage`] (cookies, local storage).
//! - [`mocks`]: network mocks, their rules and what they saw.
//! - [`records`]: pages of kept records (capture's, mocks'): the read and the page.
//! - [`files`]: uploads' files and the chunks their bytes travel in.
//! - [`devices`]: a device backend's hello, messages, operations and results (mobile).
//! - [`policy`]: per-origin rules (what agents may do where), the stricter of two owners'
//!   verdicts, and the gate an operation passes.
//! - [`errors`]: stable error codes with their category, shared by hub and extension.
//! - [`leases`]: who holds a tab (or, later, a device): the caller the hub names and the
//!   table the peer keeps, pure and generic over the unit.
//! - [`refs`]: element references (`@e12`) and how tools name an element ([`Target`]).
//! - [`local`]: the control lines between the stdio shim and the hub on the local Unix socket,
//!   and the default socket path both agree on.
//!
//! Every JSON object uses camelCase field names and rejects unknown fields, so a message from a
//! mismatched build fails loudly instead of being half-understood.
#![deny(missing_docs)]

pub mod actions;
mod actions_de;
pub mod capture;
pub mod devices;
pub mod errors;
pub mod files;
pub mod kinds;
pub mod leases;
pub mod local;
pub mod messages;
pub mod mocks;
pub mod observation;
pub mod observe;
pub mod ops;
pub mod pairing;
pub mod policy;
pub mod recording;
pub mod records;
pub mod refs;
pub mod storage;
pub mod tabs;
mod tagged;

pub use actions::{
    ActOp, ActRequest, ActResult, Acted, Action, ActionFacts, ActiveWork, BatchRequest,
    BatchResult, ClickMode, DialogHandled, DialogInfo, DragTo, ElementFacts, ElementState,
    FieldValue, FilledField, FormField, GetTabHealth, HandleDialog, InputMethod, MouseButton,
    NavigationState, ObserveSpec, Outcome, ReadStateRequest, Step, StepFailure, StepResult,
    TabHealth, TypeMode, WaitCondition, WaitUntil,
};
pub use actions::{DropPosition, ElementBox};
pub use capture::{
    CaptureOp, CaptureResult, CaptureState, ConsoleRecord, GetConsole, GetRequests,
    GetResponseBody, NetworkRecord, ResponseBody, SetConsoleCapture, SetNetworkCapture,
};
pub use devices::{
    DeviceActed, DeviceHello, DeviceMessage, DeviceOp, DeviceResult, Foreground, check_device_hello,
};
pub use errors::{ErrorCategory, ErrorCode, OpError};
pub use kinds::{KINDS, Kind, KindSet, KindSpec, Listing};
pub use leases::{LeaseHolder, LeaseTable};
pub use local::{Attached, LocalControl, Selections, ShimDialect, default_socket_path};
pub use messages::{
    Challenge, ExtensionMessage, Hello, HubMessage, HubProof, MAX_VIEWER_LEN, PROTOCOL_VERSION,
    Refusal, Request, Response, Welcome, check_challenge, check_hello, has_visible_char,
    is_hidden_char, shown_name, terminal_safe,
};
pub use observation::{Delta, Node, Observation, Outside, Point, Rect, Settling, Subject};
pub use observe::{
    ContentFormat, ContentRequest, CoveredFrame, FrameInfo, FrameList, GetSelectedText,
    ImageFormat, ListFrames, ObserveOp, ObserveResult, Page, PageContent, Screenshot,
    ScreenshotRequest, SelectedText, SnapshotBudget, SnapshotRequest,
};
pub use ops::{Ask, OpResult, Operation};
pub use recording::{RecordActions, RecordedStep};
pub use records::{Records, RecordsRequest};
pub use refs::{DeviceRef, ElementRef, Target};
pub use storage::{
    Cookie, GetCookies, GetLocalStorage, StorageEntries, StorageEntry, StorageOp, StorageResult,
};
pub use tabs::{
    CloseTab, ClosedTab, CreateTab, GetActiveTab, HandedBack, Handoff, HandoffChoice,
    HistoryDirection, HistoryStep, ListTabs, Navigate, Navigated, ReleaseTab, ReloadTab, SwitchTab,
    TabInfo, TabList, TabReleased, TabsOp, TabsResult,
};

/// Chrome's numeric tab ID. Unique only within one browser.
pub type TabId = u32;

/// What a password's value is replaced with wherever tabwire would show it.
pub const REDACTED: &str = "••••";
