//! The action group (SPEC §5): actions, then an observation of the page; batches of steps;
//! reading an element's state, answering dialogs and a tab's health ([`inspect`]).
//!
//! - [`perform`]: one action with the dialog and navigation handling around it, and the
//!   observation after it; below it the actions themselves —
//! - [`pointer`]: click, hover, drag — trusted mouse input at an element's centre;
//! - [`keys`]: typing (native setter or trusted input) and key presses;
//! - [`forms`]: select options, fill forms, scroll;
//! - [`files`]: uploads, into a file input (or the one a click opens) or onto a drop zone;
//!   the session's downloads;
//! - [`clipboard`]: the browser's clipboard, read or written;
//! - [`waits`]: navigation and waiting for selectors, text, URLs and network quiet;
//! - and [`steps`], what they all share: retrying a target that is not there yet, and changing
//!   the page behind the checkpoint.
//! - [`batch`]: steps in order under one deadline, on top of [`perform`].
//!
//! Every action resolves its target first and checks its request's deadline immediately before
//! it dispatches input ([`Checkpoint::check`]).

mod batch;
mod clipboard;
mod files;
mod forms;
mod inspect;
mod keys;
mod perform;
mod pointer;
mod steps;
mod waits;

use tabwire_protocol::{ActOp, ActRequest, Acted, ErrorCode, OpError, OpResult, TabId, Target};

use crate::checkpoint::Checkpoint;
use crate::refs;
use perform::{After, DownloadsMark, observe_after, perform};

/// Runs one operation of the group for `viewer` (whose observations an action's is compared
/// with). Actions, batches and element reads run in the tab's queue, so `requests` resolved
/// their tab already; dialogs and health run beside it.
pub async fn run(
    tab_id: Option<TabId>,
    op: ActOp,
    viewer: &str,
    checkpoint: &Checkpoint,
) -> Result<OpResult, OpError> {
    Ok(match op {
        ActOp::Act(request) => act(queued(tab_id)?, request, viewer, checkpoint)
            .await?
            .into(),
        ActOp::Batch(request) => batch::batch(queued(tab_id)?, request, viewer, checkpoint)
            .await?
            .into(),
        ActOp::ReadState(request) => inspect::read_state(queued(tab_id)?, request).await?.into(),
        ActOp::HandleDialog(request) => inspect::handle_dialog(tab_id, request, checkpoint)
            .await?
            .into(),
        ActOp::Health(request) => inspect::health(tab_id, request.recover_debugger)
            .await?
            .into(),
        ActOp::UploadChunk(chunk) => crate::uploads::keep(viewer, chunk)?.into(),
        ActOp::Downloads(request) => files::downloads(request, viewer, checkpoint).await?.into(),
        ActOp::Clipboard(request) => clipboard::clipboard(request, checkpoint).await?.into(),
    })
}

/// The tab of a queued operation: `requests` resolved it before queueing.
fn queued(tab_id: Option<TabId>) -> Result<TabId, OpError> {
    tab_id.ok_or_else(|| {
        OpError::new(
            ErrorCode::Internal,
            "a queued operation reached its handler without its tab",
        )
    })
}

/// One action, then the observation after it.
async fn act(
    tab: TabId,
    request: ActRequest,
    viewer: &str,
    checkpoint: &Checkpoint,
) -> Result<Acted, OpError> {
    let downloads = DownloadsMark::of(tab, viewer, &request.action);
    let mut outcome = perform(tab, &request.action, viewer, checkpoint).await?;
    let blocked = outcome.dialog.is_some();
    // An action on an element inside a frame is followed by an observation of that frame.
    let frame = match request.action.target() {
        Some(Target::Ref(element_ref)) => refs::frame_of(*element_ref),
        _ => refs::TOP_FRAME,
    };
    let (observation, observation_error) = observe_after(
        tab,
        request.observe.as_ref(),
        After {
            acted_in: frame,
            blocked_by_dialog: blocked,
            viewer,
        },
        checkpoint,
    )
    .await;
    // After the observation: a download's announcement takes a few tens of milliseconds.
    downloads.add_to(&mut outcome).await;
    Ok(Acted {
        outcome,
        observation,
        observation_error,
    })
}
