//! The wire contract between `tabwire-hub` and the tabwire browser extension.
//!
//! Both sides compile this crate (the extension as wasm32), so the messages cannot drift apart.
//! It holds data only: no I/O, no async runtime, no JavaScript bindings. Its one dependency
//! besides serde is serde_json, which every side already uses to put these types on the wire.
//!
//! # Layout
//! - [`messages`]: the envelopes on the `/browser` WebSocket — hello, welcome, refusal,
//!   request, response, heartbeat — and the [`PROTOCOL_VERSION`] handshake rule.
//! - [`ops`]: what a request asks the extension to do ([`Operation`]) and what comes back
//!   ([`OpResult`]).
//! - [`actions`]: actions, batches, element state, dialogs and tab health (SPEC §5, §6).
//! - [`capture`]: tabs, history, screenshots, network and console capture, storage.
//! - [`errors`]: stable error codes with their category, shared by hub and extension.
//! - [`refs`]: element references (`@e12`) and how they are parsed and printed.
//! - [`local`]: the control lines between the stdio shim and the hub on the local Unix socket,
//!   and the default socket path both agree on.
//!
//! Every JSON object uses camelCase field names and rejects unknown fields, so a message from a
//! mismatched build fails loudly instead of being half-understood.
#![deny(missing_docs)]

pub mod actions;
pub mod capture;
pub mod errors;
pub mod local;
pub mod messages;
pub mod ops;
pub mod refs;

pub use actions::{
    ActRequest, Acted, Action, ActiveWork, BatchRequest, BatchResult, ClickMode, DialogHandled,
    DialogInfo, DragTo, ElementState, FieldValue, FormField, InputMethod, MouseButton, ObserveSpec,
    Outcome, ReadStateRequest, Step, StepFailure, StepResult, TabHealth, TypeMode, WaitCondition,
    WaitUntil,
};
pub use capture::{
    HistoryDirection, ImageFormat, Records, RecordsRequest, ResponseBody, Screenshot,
    ScreenshotRequest, SnapshotBudget, StorageEntries, TabOp, TabResult,
};
pub use errors::{ErrorCategory, ErrorCode, OpError};
pub use local::{LocalControl, default_socket_path};
pub use messages::{
    ExtensionMessage, Hello, HubMessage, PROTOCOL_VERSION, Refusal, Request, Response, Welcome,
    check_hello,
};
pub use ops::{
    ContentFormat, ContentRequest, Delta, FrameInfo, Navigated, Observation, ObservedNode,
    OpResult, Operation, PageContent, SnapshotRequest, TabInfo, Target,
};
pub use refs::ElementRef;

/// Chrome's numeric tab ID. Unique only within one browser.
pub type TabId = u32;
