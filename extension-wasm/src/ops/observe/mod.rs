//! The observe group (SPEC §4, §6): snapshots ([`snapshot`], with the [`engine`] behind them),
//! a document's [`content`], the tab's [`frames`], the selected text ([`selection`]),
//! screenshots ([`screenshot`]), the page as a PDF ([`pdf`]), and what a wait [`found`] as a
//! line with its ref.

pub mod content;
pub mod engine;
pub mod found;
pub mod frames;
pub mod pdf;
pub mod screenshot;
pub mod snapshot;

mod selection;

use tabwire_protocol::{ObserveOp, OpError, OpResult, TabId};

use crate::checkpoint::Checkpoint;
use crate::chrome_tabs::resolve_tab;

/// Runs one operation of the group for `viewer`. `tab_id` is the request's tab (resolved
/// already for queued ones).
pub async fn run(
    tab_id: Option<TabId>,
    op: ObserveOp,
    viewer: &str,
    checkpoint: &Checkpoint,
) -> Result<OpResult, OpError> {
    Ok(match op {
        ObserveOp::Snapshot(request) => snapshot::snapshot(tab_id, request, viewer, checkpoint)
            .await?
            .into(),
        ObserveOp::ListFrames(_) => frames::list_frames(tab_id).await?.into(),
        ObserveOp::Content(request) => content::content(tab_id, request).await?.into(),
        ObserveOp::SelectedText(request) => selection::selected_text(tab_id, request.max_chars)
            .await?
            .into(),
        ObserveOp::Pdf(request) => {
            let tab = resolve_tab(tab_id).await?.id;
            pdf::print(tab, request, checkpoint).await?.into()
        }
        ObserveOp::Screenshot(request) => {
            let tab = resolve_tab(tab_id).await?.id;
            screenshot::take(tab, request, viewer, checkpoint)
                .await?
                .into()
        }
    })
}
