//! The operations the hub can ask for, one module per group, and the dispatch from an
//! [`Operation`] to its handler.
//!
//! Handlers return `Result<OpResult, OpError>` and never panic on what a page or Chrome sends:
//! every failure becomes an error code with a message an agent can act on. Deadlines are not
//! handled here but around [`execute`] (see `requests`), so a handler is simply dropped when
//! its time is up.

mod act;
mod batch;
pub mod capture;
mod content;
mod frames;
mod inspect;
mod navigate;
mod screenshot;
mod snapshot;
mod tab_ops;
pub mod tabs;
mod target;

use tabwire_protocol::{OpError, OpResult, Operation, TabId};

use crate::requests::Checkpoint;

pub use tabs::forget_tab_state;

/// Runs one operation against `tab_id` (or the active tab when it is `None`). Mutating
/// operations pass `checkpoint` right before they act.
pub async fn execute(
    tab_id: Option<TabId>,
    op: Operation,
    checkpoint: &Checkpoint,
) -> Result<OpResult, OpError> {
    match op {
        Operation::ListTabs => tabs::list_tabs().await,
        Operation::Navigate { url } => navigate::navigate(tab_id, &url, checkpoint).await,
        Operation::Snapshot(request) => snapshot::snapshot(tab_id, request, checkpoint).await,
        Operation::ListFrames => frames::list_frames(tab_id).await,
        Operation::Content(request) => content::content(tab_id, request).await,
        Operation::Act(request) => act::act(tab(tab_id)?, request, checkpoint).await,
        Operation::Batch(request) => batch::batch(tab(tab_id)?, request, checkpoint).await,
        Operation::ReadState(request) => inspect::read_state(tab(tab_id)?, request).await,
        Operation::HandleDialog {
            accept,
            prompt_text,
        } => inspect::handle_dialog(tab_id, accept, prompt_text).await,
        Operation::Health { recover_debugger } => inspect::health(tab_id, recover_debugger).await,
        Operation::Tab { op } => tab_ops::run(tab_id, op, checkpoint).await,
    }
}

/// The tab of a queued operation: `requests` resolved it before queueing.
fn tab(tab_id: Option<TabId>) -> Result<TabId, OpError> {
    tab_id.ok_or_else(|| {
        OpError::new(
            tabwire_protocol::ErrorCode::Internal,
            "a queued operation reached its handler without its tab",
        )
    })
}
