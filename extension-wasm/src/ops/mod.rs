//! The operations the hub can ask for, one module per group the way the protocol and the tools
//! are grouped, and the dispatch from an [`Operation`] to its group.
//!
//! - [`observe`]: snapshots (and the engine behind them), content, frames, selected text,
//!   screenshots.
//! - [`tabs`]: listing, switching, opening and closing tabs; navigation, history, reloads.
//! - [`act`]: actions, batches, element state, dialogs, tab health.
//! - [`capture`]: network and console capture, response bodies.
//! - [`storage`]: cookies and local storage.
//!
//! Below the groups: [`target`] (a request's element, in the right frame), [`load`] (loading
//! a URL and waiting for loads) and [`budget`] (fitting records into a byte budget), which
//! several groups share.
//!
//! Handlers return `Result<Answer, OpError>` and never panic on what a page or Chrome sends:
//! every failure becomes an error code with a message an agent can act on. Deadlines are not
//! handled here but around [`execute`] (see `requests`), so a handler is simply dropped when
//! its time is up.

pub mod act;
pub mod budget;
pub mod capture;
pub mod load;
pub mod observe;
pub mod storage;
pub mod tabs;
pub mod target;

use tabwire_protocol::{OpError, OpResult, Operation, TabId};

use crate::checkpoint::Checkpoint;

/// Runs one operation against `tab_id` (or the active tab when it is `None`) for `viewer` (whose
/// observations its own are compared with). Mutating operations pass `checkpoint` right before
/// they act.
pub async fn execute(
    tab_id: Option<TabId>,
    op: Operation,
    viewer: &str,
    checkpoint: &Checkpoint,
) -> Result<OpResult, OpError> {
    match op {
        Operation::Observe(op) => observe::run(tab_id, op, viewer, checkpoint).await,
        Operation::Tabs(op) => tabs::run(tab_id, op, viewer, checkpoint).await,
        Operation::Act(op) => act::run(tab_id, op, viewer, checkpoint).await,
        Operation::Capture(op) => capture::run(tab_id, op, viewer).await,
        Operation::Storage(op) => storage::run(tab_id, op).await,
        // Only when a workspace build turns the protocol's `device` feature on; the extension's
        // own build leaves the variant out, and a device request does not parse.
        #[allow(unreachable_patterns)]
        _ => Err(OpError::new(
            tabwire_protocol::ErrorCode::InvalidArgument,
            "a browser serves no device operations: this request was meant for a device",
        )),
    }
}
