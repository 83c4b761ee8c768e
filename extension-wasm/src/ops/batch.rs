//! `Batch` (SPEC §5): steps run in order in one tab, under the request's one deadline, holding
//! the tab's queue throughout (the request was admitted once).
//!
//! The hub has already checked every step's arguments and selector syntax (the preflight); refs
//! are checked as each step runs. The first failing step stops the batch: the answer carries
//! the completed steps' results and the failure. Nothing is rolled back or replayed.

use tabwire_protocol::{
    BatchRequest, BatchResult, OpError, OpResult, Step, StepFailure, StepResult, TabId,
};

use super::act::{observe_after, perform};
use super::{content, snapshot};
use crate::refs::TOP_FRAME;
use crate::requests::Checkpoint;

/// Runs the batch.
pub async fn batch(
    tab: TabId,
    request: BatchRequest,
    checkpoint: &Checkpoint,
) -> Result<OpResult, OpError> {
    let mut steps = Vec::with_capacity(request.steps.len());
    let mut failure = None;
    let mut blocked = false;
    for (index, step) in request.steps.into_iter().enumerate() {
        match run_step(tab, step, checkpoint).await {
            Ok(result) => {
                if let StepResult::Acted { outcome } = &result {
                    blocked = outcome.details.contains_key("dialog");
                }
                steps.push(result);
                // A dialog the step opened blocks the page: later steps could not run.
                if blocked {
                    break;
                }
            }
            Err(error) => {
                failure = Some(StepFailure {
                    step: index as u32,
                    error,
                });
                break;
            }
        }
    }
    let (observation, observation_error) = observe_after(
        tab,
        request.observe.as_ref(),
        TOP_FRAME,
        blocked,
        checkpoint,
    )
    .await;
    Ok(OpResult::Batch(BatchResult {
        tab_id: tab,
        steps,
        failure,
        observation,
        observation_error,
    }))
}

async fn run_step(tab: TabId, step: Step, checkpoint: &Checkpoint) -> Result<StepResult, OpError> {
    checkpoint.check_alive()?;
    match step {
        Step::Act { action } => Ok(StepResult::Acted {
            outcome: perform(tab, &action, checkpoint).await?,
        }),
        Step::Observe { request } => {
            match snapshot::snapshot(Some(tab), request, checkpoint).await? {
                OpResult::Snapshot(observation) => Ok(StepResult::Observed { observation }),
                _ => Err(unexpected()),
            }
        }
        Step::Content { request } => match content::content(Some(tab), request).await? {
            OpResult::Content(content) => Ok(StepResult::Content { content }),
            _ => Err(unexpected()),
        },
    }
}

fn unexpected() -> OpError {
    OpError::new(
        tabwire_protocol::ErrorCode::Internal,
        "a batch step produced the wrong kind of result",
    )
}
