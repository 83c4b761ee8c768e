//! `Operation::Tab`: tabs, history, selected text, screenshots, local storage; capture and
//! cookies are in `capture`.

use tabwire_protocol::{OpError, OpResult, TabId, TabOp};

use super::capture;
use crate::requests::Checkpoint;

/// Runs one tab operation. `tab_id` is the request's tab (resolved already for queued ones).
pub async fn run(
    tab_id: Option<TabId>,
    op: TabOp,
    _checkpoint: &Checkpoint,
) -> Result<OpResult, OpError> {
    let tab = super::tabs::resolve_tab(tab_id).await?.id;
    capture::run(tab, op).await
}
