//! Actions (SPEC §5): one [`Action`] performed on a tab, then an observation of the page.
//!
//! - [`pointer`]: click, hover, drag — trusted mouse input at an element's centre.
//! - [`keys`]: typing (native setter or trusted input) and key presses.
//! - [`forms`]: select options, fill forms, scroll.
//! - [`waits`]: navigation and waiting for selectors, text, URLs and network quiet.
//!
//! Every action resolves its target first and checks its request's deadline immediately before
//! it dispatches input ([`Checkpoint::check`]). A CSS target that is not there yet (missing, not
//! rendered, covered) is looked up again until the deadline, so an element that renders a
//! moment late still gets its click; at the deadline the last target error is reported, and
//! nothing was done. A JavaScript dialog that opens while the action's input is dispatched is
//! part of the result (the click happened; the page now waits for an answer). When the input
//! started a top-frame navigation, the observation waits for the new document to be parsed.

mod forms;
mod keys;
mod pointer;
pub mod waits;

use std::future::Future;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tabwire_protocol::{
    ActRequest, Acted, Action, ErrorCode, Observation, ObserveSpec, OpError, OpResult, Outcome,
    SnapshotRequest, TabId, Target, WaitUntil,
};

use crate::observation::delta::Params;
use crate::ops::{snapshot, target};
use crate::page::{self, InPage, MissingFrame, PageCommand};
use crate::requests::Checkpoint;
use crate::timer::{Either, now_ms, select, sleep};
use crate::{activity, debugger, refs};

/// How often a target that is not there yet is looked up again.
const RETRY_MS: f64 = 100.0;

/// Time kept back at the end of the deadline to report a precise error (or the observation's
/// absence) instead of the generic timeout.
pub const MARGIN_MS: f64 = 150.0;

/// Runs `Operation::Act`.
pub async fn act(
    tab: TabId,
    request: ActRequest,
    checkpoint: &Checkpoint,
) -> Result<OpResult, OpError> {
    let outcome = perform(tab, &request.action, checkpoint).await?;
    let blocked = outcome.details.contains_key("dialog");
    // An action on an element inside a frame is followed by an observation of that frame.
    let frame = match request.action.target() {
        Some(Target::Ref(element_ref)) => refs::frame_of(*element_ref),
        _ => refs::TOP_FRAME,
    };
    let (observation, observation_error) =
        observe_after(tab, request.observe.as_ref(), frame, blocked, checkpoint).await;
    Ok(OpResult::Acted(Acted {
        outcome,
        observation,
        observation_error,
    }))
}

/// Performs one action (no observation): the dialog and navigation handling around
/// [`dispatch`].
pub async fn perform(
    tab: TabId,
    action: &Action,
    checkpoint: &Checkpoint,
) -> Result<Outcome, OpError> {
    if action.is_mutation()
        && let Err(error) = debugger::ensure_attached(tab).await
    {
        // Attached, tabwire sees dialogs open (`Page.javascriptDialogOpening`) instead of
        // waiting for a page that cannot answer. Without it (chrome:// pages refuse debuggers,
        // DevTools may own the tab) untrusted actions still work; trusted input reports the
        // attach error itself.
        crate::log!("tab {tab}: acting without the debugger ({})", error.message);
    }
    let before = checkpoint.dispatches();
    let mark = activity::load_mark(tab);
    let opened_mark = activity::opened_mark(tab);
    let outcome = match select(
        dispatch(tab, action, checkpoint),
        debugger::dialog_opened(tab),
    )
    .await
    {
        Either::Left(outcome) => outcome?,
        Either::Right(dialog) if checkpoint.dispatches() > before => {
            let mut details = Map::new();
            details.insert("dialog".into(), json!(dialog));
            return Ok(Outcome {
                tab_id: tab,
                summary: format!(
                    "{} done; it opened a {} dialog: \"{}\". Answer it with handle_dialog.",
                    action.name(),
                    dialog.kind,
                    crate::observation::cap(&dialog.message, 200)
                ),
                details,
            });
        }
        Either::Right(dialog) => return Err(debugger::dialog_error(&dialog)),
    };
    let mut outcome = outcome;
    let opened = activity::opened_since(tab, opened_mark);
    if !opened.is_empty() {
        outcome.summary.push_str(&format!(
            "; it opened tab {} (list_tabs shows it)",
            opened
                .iter()
                .map(TabId::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
        outcome.details.insert("openedTabs".into(), json!(opened));
    }
    // Input that started a navigation: observe the new document, once it is parsed.
    let navigates_itself = matches!(action, Action::Navigate { .. } | Action::Wait { .. })
        || matches!(
            action,
            Action::Click {
                wait_until: Some(_),
                ..
            }
        );
    if !navigates_itself && action.is_mutation() && activity::load_started_since(tab, mark) {
        let budget = checkpoint.remaining_ms() - MARGIN_MS;
        let parsed = select(
            activity::wait_load(tab, WaitUntil::Domcontentloaded),
            sleep(budget),
        )
        .await;
        let note = match parsed {
            Either::Left(Ok(())) => "navigated",
            Either::Left(Err(_)) => "navigation failed",
            Either::Right(()) => "navigation still loading",
        };
        outcome.details.insert("navigation".into(), json!(note));
    }
    Ok(outcome)
}

/// The action itself.
async fn dispatch(
    tab: TabId,
    action: &Action,
    checkpoint: &Checkpoint,
) -> Result<Outcome, OpError> {
    match action {
        Action::Click {
            target,
            mode,
            button,
            click_count,
            wait_until,
            wait_for,
        } => {
            let mark = activity::load_mark(tab);
            let mut outcome =
                pointer::click(tab, target, *mode, *button, *click_count, checkpoint).await?;
            if wait_until.is_some() || wait_for.is_some() {
                waits::after_click(tab, mark, *wait_until, wait_for.as_deref(), checkpoint).await?;
                outcome.details.insert(
                    "navigated".into(),
                    json!(activity::load_started_since(tab, mark)),
                );
                let landed = crate::ops::tabs::get_tab(tab).await?;
                outcome.details.insert("url".into(), json!(landed.url));
            }
            Ok(outcome)
        }
        Action::Hover { target } => pointer::hover(tab, target, checkpoint).await,
        Action::Drag { from, to } => pointer::drag(tab, from, to, checkpoint).await,
        Action::Type {
            target,
            text,
            clear,
            mode,
            input_method,
            allow_readonly,
        } => {
            let typing = keys::Typing {
                text,
                clear: *clear,
                mode: *mode,
                input_method: *input_method,
                allow_readonly: *allow_readonly,
            };
            keys::type_text(tab, target, &typing, checkpoint).await
        }
        Action::PressKey {
            key,
            modifiers,
            target,
        } => keys::press_key(tab, key, *modifiers, target.as_ref(), checkpoint).await,
        Action::SelectOption {
            target,
            value,
            text,
        } => {
            forms::select_option(
                tab,
                target.as_ref(),
                value.as_deref(),
                text.as_deref(),
                checkpoint,
            )
            .await
        }
        Action::FillForm { fields, submit } => {
            forms::fill_form(tab, fields, *submit, checkpoint).await
        }
        Action::Scroll { target, dx, dy, to } => {
            forms::scroll(tab, target.as_ref(), *dx, *dy, to.as_ref(), checkpoint).await
        }
        Action::Navigate {
            url,
            wait_until,
            wait_for,
        } => waits::navigate(tab, url, *wait_until, wait_for.as_deref(), checkpoint).await,
        Action::Wait {
            condition,
            timeout_ms,
        } => waits::wait(tab, condition, *timeout_ms, checkpoint).await,
    }
}

/// An outcome with details.
pub fn outcome(tab: TabId, summary: String, details: Value) -> Outcome {
    Outcome {
        tab_id: tab,
        summary,
        details: match details {
            Value::Object(map) => map,
            _ => Map::new(),
        },
    }
}

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
                    && checkpoint.remaining_ms() > RETRY_MS + MARGIN_MS =>
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

/// The observation after an action, or why there is none. Without `since`, it is a delta
/// against the latest observation of the same view of the same document, when there is one.
pub async fn observe_after(
    tab: TabId,
    spec: Option<&ObserveSpec>,
    acted_in: u32,
    blocked_by_dialog: bool,
    checkpoint: &Checkpoint,
) -> (Option<Observation>, Option<OpError>) {
    let Some(spec) = spec else {
        return (None, None);
    };
    if blocked_by_dialog {
        return (None, Some(debugger::blocking_dialog_error(tab)));
    }
    // The scope's frame, else the frame acted in.
    let frame = match (&spec.scope, target::frame_for(None, spec.scope.as_ref())) {
        (_, Err(error)) => return (None, Some(error)),
        (Some(_), Ok(frame)) => frame,
        (None, Ok(_)) => acted_in,
    };
    let automatic = spec.since.is_none();
    let since = spec.since.or_else(|| {
        let params = Params {
            scope: spec.scope.clone(),
            query: None,
            offset: 0,
            max_nodes: spec.max_nodes,
            max_chars: spec.max_chars,
        };
        refs::with_tables(|tables| {
            tables
                .get(tab, frame)
                .and_then(|state| state.doc.as_ref())
                .and_then(|doc| doc.baselines.latest(&params))
        })
    });
    let request = SnapshotRequest {
        frame_id: (frame != refs::TOP_FRAME).then_some(frame),
        scope: spec.scope.clone(),
        query: None,
        max_nodes: spec.max_nodes,
        max_chars: spec.max_chars,
        offset: 0,
        since,
    };
    let budget = checkpoint.remaining_ms() - MARGIN_MS;
    if budget <= 0.0 {
        return (None, Some(no_time_left()));
    }
    // A dialog the page opens meanwhile would hold the snapshot until the deadline.
    let stopped = select(sleep(budget), debugger::dialog_opened(tab));
    match select(snapshot::snapshot(Some(tab), request, checkpoint), stopped).await {
        Either::Left(Ok(OpResult::Snapshot(mut observation))) => {
            if automatic {
                // A new document simply gets a full window: not a reset the agent asked about.
                observation.reset = false;
            }
            (Some(observation), None)
        }
        Either::Left(Ok(_)) => (
            None,
            Some(OpError::new(
                ErrorCode::Internal,
                "unexpected snapshot result",
            )),
        ),
        Either::Left(Err(error)) => (None, Some(error)),
        Either::Right(Either::Left(())) => (None, Some(no_time_left())),
        Either::Right(Either::Right(dialog)) => (None, Some(debugger::dialog_error(&dialog))),
    }
}

fn no_time_left() -> OpError {
    OpError::new(
        ErrorCode::TabUnresponsive,
        "The action is done, but no time was left to observe the page; take a snapshot.",
    )
}
