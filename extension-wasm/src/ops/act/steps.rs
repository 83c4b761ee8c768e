//! The steps every action shares, below the actions themselves: looking a target up again
//! until it can be acted on, and running a page command that changes the page behind the
//! request's checkpoint.
//!
//! A CSS target that is not there yet (missing, not rendered, covered) is looked up again until
//! the deadline, so an element that renders a moment late still gets its click; at the deadline
//! the last target error is reported, and nothing was done.

use std::future::Future;

use serde::de::DeserializeOwned;
use tabwire_protocol::{ErrorCode, OpError, TabId};

use crate::checkpoint::Checkpoint;
use crate::ops::target::PreparedTarget;
use crate::page::{self, InPage, MissingFrame, PageCommand};
use crate::timer::{now_ms, sleep};

/// How often a target that is not there yet is looked up again.
const RETRY_MS: f64 = 100.0;

/// Whether looking the target up again may find it: it is missing, not rendered or covered —
/// states a page leaves by itself. A stale ref never comes back.
fn target_may_appear(error: &OpError) -> bool {
    matches!(
        error.code,
        ErrorCode::SelectorNotFound | ErrorCode::TargetNotVisible | ErrorCode::TargetCovered
    )
}

/// Runs `attempt` until it succeeds, fails for good, or the deadline is near; then reports the
/// last error, saying how long the target was waited for.
pub async fn retrying<T, F, Fut>(checkpoint: &Checkpoint, mut attempt: F) -> Result<T, OpError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, OpError>>,
{
    let started = now_ms();
    loop {
        match attempt().await {
            Err(error)
                if target_may_appear(&error)
                    && checkpoint.remaining_ms() > RETRY_MS + Checkpoint::MARGIN_MS =>
            {
                sleep(RETRY_MS).await;
            }
            Err(mut error) if target_may_appear(&error) => {
                let waited = now_ms() - started;
                if waited >= RETRY_MS {
                    error.message = format!(
                        "{} (tabwire kept looking for {:.0} ms, until the deadline)",
                        error.message, waited
                    );
                }
                return Err(error);
            }
            other => return other,
        }
    }
}

/// A page's answer about a target, which says when it acted on the replacement of a ref's
/// removed element.
pub trait Rebinds {
    /// The replacement's key, if any.
    fn rebound(&self) -> Option<u32>;
}

/// [`change_page`] on a prepared target: the answer must come from the target's document (a
/// mismatch, seen after the fact, means the change may already have happened), and a ref the
/// page rebound is recorded.
pub async fn change_target<T: DeserializeOwned + Rebinds>(
    tab: TabId,
    prepared: &PreparedTarget,
    command: &PageCommand,
    checkpoint: &Checkpoint,
) -> Result<T, OpError> {
    let reply = change_page::<T>(
        tab,
        prepared.frame,
        command,
        prepared.missing_frame(),
        checkpoint,
    )
    .await?;
    prepared
        .check_document(&reply.document_id)
        .map_err(OpError::action_may_have_occurred)?;
    prepared.rebound(tab, reply.value.rebound());
    Ok(reply.value)
}

/// Runs `command`, which changes the page, in `frame`: the checkpoint is passed right before
/// each attempt, and a target that is not there yet is looked up again (see [`retrying`]).
pub async fn change_page<T: DeserializeOwned>(
    tab: TabId,
    frame: u32,
    command: &PageCommand,
    missing: MissingFrame<'_>,
    checkpoint: &Checkpoint,
) -> Result<InPage<T>, OpError> {
    retrying(checkpoint, || async {
        checkpoint.check()?;
        page::run::<T>(tab, frame, command, missing).await
    })
    .await
}
