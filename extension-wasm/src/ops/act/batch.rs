//! `Batch` (SPEC §5): steps run in order in one tab, under the request's one deadline, holding
//! the tab's queue throughout (the request was admitted once).
//!
//! The hub has already checked every step's arguments and selector syntax (the preflight); refs
//! are checked as each step runs. The URLs of navigation steps are checked here again before the
//! first step runs, as the hub did (see `ops::load::check_navigable`). The first failing step
//! stops the batch: the answer carries the completed steps' results and the failure. Nothing is
//! rolled back or replayed.

use tabwire_protocol::{
    Action, BatchRequest, BatchResult, ErrorCode, OpError, Step, StepFailure, StepResult, TabId,
};

use super::perform::{After, observe_after, perform};
use crate::checkpoint::Checkpoint;
use crate::debugger;
use crate::ops::load::check_navigable;
use crate::ops::observe::{content, snapshot};
use crate::refs::TOP_FRAME;
use crate::timer::{Either, select, sleep};

/// Runs the batch.
pub async fn batch(
    tab: TabId,
    request: BatchRequest,
    viewer: &str,
    checkpoint: &Checkpoint,
) -> Result<BatchResult, OpError> {
    // A URL no tab may be pointed at refuses the whole batch, not just its step: the steps
    // before it must not run either.
    for (index, step) in request.steps.iter().enumerate() {
        if let Step::Act {
            action: Action::Navigate { url, .. },
        } = step
        {
            check_navigable(url).map_err(|refused| OpError {
                message: format!("steps[{index}] (navigate): {}", refused.message),
                ..refused
            })?;
        }
    }
    let mut steps = Vec::with_capacity(request.steps.len());
    let mut failure = None;
    let mut blocked = false;
    let count = request.steps.len();
    for (index, step) in request.steps.into_iter().enumerate() {
        let mutation = matches!(&step, Step::Act { action } if action.is_mutation());
        let before = checkpoint.dispatches();
        // The step stops a little before the request's deadline, so the batch can still
        // answer with the steps it completed.
        let budget = checkpoint.budget_ms();
        let outcome = match select(run_step(tab, step, viewer, checkpoint), sleep(budget)).await {
            Either::Left(outcome) => outcome,
            Either::Right(()) => {
                let error = OpError::new(
                    ErrorCode::TabUnresponsive,
                    "The batch's deadline passed during this step.",
                );
                Err(if mutation && checkpoint.dispatches() > before {
                    OpError {
                        message: format!(
                            "{} Its action may already have happened: take a snapshot to check.",
                            error.message
                        ),
                        ..error
                    }
                    .action_may_have_occurred()
                } else {
                    OpError {
                        message: format!("{} Nothing was done in it.", error.message),
                        ..error
                    }
                })
            }
        };
        match outcome {
            Ok(result) => {
                if let StepResult::Acted { outcome } = &result {
                    blocked = outcome.dialog.is_some();
                }
                steps.push(result);
                // A dialog the step opened blocks the page: later steps cannot run.
                if blocked {
                    if index + 1 < count {
                        failure = Some(StepFailure {
                            step: (index + 1) as u32,
                            error: debugger::blocking_dialog_error(tab),
                        });
                    }
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
        After {
            acted_in: TOP_FRAME,
            blocked_by_dialog: blocked,
            viewer,
        },
        checkpoint,
    )
    .await;
    Ok(BatchResult {
        tab_id: tab,
        steps,
        failure,
        observation,
        observation_error,
    })
}

async fn run_step(
    tab: TabId,
    step: Step,
    viewer: &str,
    checkpoint: &Checkpoint,
) -> Result<StepResult, OpError> {
    checkpoint.check_alive()?;
    match step {
        Step::Act { action } => {
            let downloads = super::perform::DownloadsMark::of(tab, viewer, &action);
            let mut outcome = perform(tab, &action, viewer, checkpoint).await?;
            downloads.add_to(&mut outcome).await;
            Ok(StepResult::Acted { outcome })
        }
        // Reads are stopped by a dialog the page opens meanwhile (actions handle their own).
        Step::Observe { request } => {
            let observation = debugger::unless_dialog(
                tab,
                snapshot::snapshot(Some(tab), request, viewer, checkpoint),
            )
            .await?;
            Ok(StepResult::Observed { observation })
        }
        Step::Content { request } => {
            let content =
                debugger::unless_dialog(tab, content::content(Some(tab), request)).await?;
            Ok(StepResult::Content { content })
        }
    }
}
