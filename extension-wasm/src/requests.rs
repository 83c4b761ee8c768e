//! Serving one hub request: run the operation under its deadline, answer exactly once, record
//! the call for the popup.
//!
//! Requests run concurrently (each in its own task). When the deadline passes first, the
//! operation's future is dropped — its late result can no longer be sent or written anywhere —
//! and the hub gets a timeout error that says whether the action may already have happened.
//! When the connection the request came on closes, the operation is dropped too: the hub has
//! already told the agent the outcome is unknown, so nothing may happen after that. Dropping
//! the future stops it at its next await; a [`Checkpoint`] checked right before each mutating
//! step closes the remaining gap. The connection is known only through the [`Liveness`] the
//! connection hands over with the request and closes when it ends.
//!
//! The hub may cancel a request (its MCP client cancelled the call, or went away): the
//! operation is dropped the same way — still queued, it leaves the line and never runs;
//! running, it stops at its next await, and its checkpoint refuses any input after the cancel
//! — and the hub is answered `CANCELLED`, with `actionMayHaveOccurred` when a checkpoint had
//! let input through. The request is registered for cancels by the connection's message loop
//! ([`accept`]), before its task exists, so a cancel right behind it is never lost. The tab is
//! free for the next request as soon as the cancel is read, unless input the request had
//! already handed to Chrome is still landing: then the next request, and the cancelled one's
//! answer, wait for that run to end (milliseconds; see `input`).
//!
//! Operations on a tab wait for their turn in the tab's queue (`queue`); one whose deadline
//! passes there never starts and gets `QUEUE_TIMEOUT`. Listing tabs, a tab's health and
//! answering a dialog run beside the queues. An operation on a tab with an open JavaScript
//! dialog fails at once with `DIALOG_OPEN`, and one that a dialog blocks midway stops with it
//! (actions handle a dialog their own input opened themselves: for them it is a result).
//!
//! Leases (`leases`) are checked once the request holds its place in the tab's queue, before
//! the dialog check: a changing call on a tab another session holds fails there with
//! `TAB_LEASED`. The lease is taken once the policy let the call through, and tabs an
//! operation opens are leased to its caller afterwards.

use tabwire_protocol::{
    ActOp, Action, ErrorCode, ExtensionMessage, LeaseHolder, MAX_VIEWER_LEN, OpError, OpResult,
    Operation, Request, Response, TabId, TabsOp, Target,
};

use crate::calllog::{self, CallRecord};
use crate::checkpoint::{Cancels, Checkpoint, Liveness, Registered};
use crate::chrome_tabs::resolve_tab;
use crate::ops;
use crate::timer::{Either, now_ms, select, sleep};
use crate::{approvals, policy, recording};
use crate::{debugger, leases, queue};

/// Requests slower than this are logged even when they succeed.
const SLOW_REQUEST_MS: u32 = 1000;

/// A request the connection took in: cancellable from the moment it was read.
pub struct Accepted {
    request: Request,
    registered: Registered,
}

/// Takes `request` in, registering it with its connection's `cancels` at once, in the
/// connection's message loop before its task is spawned: a cancel the loop reads before the
/// task first runs finds the request, and it never starts (issue 23).
pub fn accept(request: Request, cancels: &Cancels) -> Accepted {
    let registered = cancels.register(request.id);
    Accepted {
        request,
        registered,
    }
}

impl Accepted {
    /// Runs the request, which came on the connection of `liveness`, and answers it with
    /// `send` (which refuses once that connection is gone: the answer is then only recorded).
    /// The hub may cancel it until it is answered.
    pub async fn serve(
        self,
        liveness: Liveness,
        send: impl FnOnce(&str) -> Result<(), &'static str>,
    ) {
        let Accepted {
            request,
            registered,
        } = self;
        serve(request, registered, liveness, send).await;
    }
}

/// [`Accepted::serve`], with the request's registration in its connection's cancels, dropped
/// once it is answered.
async fn serve(
    request: Request,
    registered: Registered,
    liveness: Liveness,
    send: impl FnOnce(&str) -> Result<(), &'static str>,
) {
    let started = now_ms();
    let Request {
        id,
        tab_id,
        deadline_ms,
        tool,
        holder,
        viewer,
        op,
    } = request;
    let cancel = registered.cancel();
    // An upload's bytes are forgotten when its request ends, however it ends (refused by the
    // policy or a person, cancelled, failed): only a running upload may hold them.
    let upload = match &op {
        Operation::Act(ActOp::Act(request)) => match &request.action {
            Action::Upload { upload, .. } => {
                Some((viewer.clone().unwrap_or_default(), upload.clone()))
            }
            _ => None,
        },
        _ => None,
    };
    let timeout = deadline_error(&op, deadline_ms);
    let checkpoint = Checkpoint::cancellable(
        liveness.clone(),
        cancel.clone(),
        deadline_ms,
        timeout.clone(),
    );
    let outcome = if cancel.is_cancelled() {
        // Cancelled before its task first ran: it never starts.
        Err(cancelled_error(&checkpoint))
    } else {
        let stop = select(
            sleep(deadline_ms as f64),
            select(liveness.closed(), cancel.cancelled()),
        );
        // A request that names no viewer (none does from this hub) is a viewer of its own, "".
        let viewer = viewer.unwrap_or_default();
        let caller = Caller {
            holder: holder.as_ref(),
            viewer: &viewer,
        };
        let work = async {
            if viewer.chars().count() > MAX_VIEWER_LEN {
                return Err(OpError::new(
                    ErrorCode::InvalidArgument,
                    format!("the request's viewer is longer than {MAX_VIEWER_LEN} characters"),
                ));
            }
            run(tab_id, caller, op, &tool, deadline_ms, &checkpoint).await
        };
        // The work is dropped when `select` returns: a queued request leaves its tab's line, a
        // running one frees its place in it. Input it had handed to Chrome still lands, and
        // holds the tab meanwhile (`input`); the answer waits for it too, so nothing of a
        // stopped request happens after its answer.
        match select(work, stop).await {
            Either::Left(outcome) => outcome,
            Either::Right(Either::Left(())) => {
                checkpoint.delivered().await;
                Err(timeout_error(timeout, &checkpoint, deadline_ms))
            }
            Either::Right(Either::Right(Either::Left(()))) => {
                crate::chrome::log!("request {id} {tool}: stopped, its connection closed");
                return;
            }
            Either::Right(Either::Right(Either::Right(()))) => {
                checkpoint.delivered().await;
                Err(cancelled_error(&checkpoint))
            }
        }
    };
    drop(registered);
    if let Some((viewer, id)) = upload {
        crate::uploads::discard(&viewer, &id);
    }
    let error_code = outcome.as_ref().err().map(|e| e.code.as_str().to_owned());
    let message = ExtensionMessage::Response(Response::new(id, outcome));
    let text = serde_json::to_string(&message).unwrap_or_else(|e| {
        // Cannot happen with these types; answer anyway so the hub is not left waiting.
        let error = OpError::new(ErrorCode::Internal, format!("encoding the response: {e}"));
        serde_json::to_string(&ExtensionMessage::Response(Response::new(id, Err(error))))
            .unwrap_or_default()
    });
    let sent = send(&text);
    let ms = (now_ms() - started).max(0.0).round() as u32;
    let ok = error_code.is_none();
    // Successful, ordinary calls are in the popup's call log; the console gets what deserves
    // a look (a line per call costs time of its own on every call).
    match &sent {
        Ok(()) if error_code.is_none() && ms < SLOW_REQUEST_MS => {}
        Ok(()) => crate::chrome::log!(
            "request {id} {tool}: {} in {ms} ms",
            error_code.as_deref().unwrap_or("ok")
        ),
        Err(why) => crate::chrome::log!("request {id} {tool}: result discarded ({why})"),
    }
    let record = CallRecord {
        tool,
        at: started,
        ms,
        bytes: if sent.is_ok() { text.len() as u32 } else { 0 },
        ok: ok && sent.is_ok(),
        error: match sent {
            Ok(()) => error_code,
            Err(why) => Some(why.to_owned()),
        },
    };
    calllog::record(record);
}

/// Who a request is from, as the hub named it: the lease holder (on requests that change
/// something) and the viewer (on every request: whose observations it compares with).
#[derive(Clone, Copy)]
struct Caller<'a> {
    holder: Option<&'a LeaseHolder>,
    viewer: &'a str,
}

/// Runs `op`: in its tab's queue unless it bypasses the queues, with the open-dialog checks.
async fn run(
    tab_id: Option<TabId>,
    caller: Caller<'_>,
    op: Operation,
    tool: &str,
    deadline_ms: u64,
    checkpoint: &Checkpoint,
) -> Result<OpResult, OpError> {
    let Caller { holder, viewer } = caller;
    let opens_tab = matches!(op, Operation::Tabs(TabsOp::Create(_)));
    if op.bypasses_queue() {
        checkpoint.start_running();
        leases::gate_unqueued(tab_id, holder, &op).await?;
        // What the policy restricts is checked on its tab, the active one when none is named.
        let tab = match tab_id {
            Some(tab) => Some(tab),
            None if op.page_need().is_some() && !policy::allows_everything() => {
                resolve_tab(None).await.ok().map(|tab| tab.id)
            }
            None => None,
        };
        if let Operation::Tabs(TabsOp::Handoff(_) | TabsOp::Record(_)) = op {
            let tab = match tab_id {
                Some(tab) => tab,
                None => resolve_tab(None).await?.id,
            };
            if approvals::person_has(tab) {
                return Err(approvals::person_has_error(tab));
            }
            let budget = checkpoint.budget_ms();
            let asker = asker_of(holder);
            return match op {
                Operation::Tabs(TabsOp::Handoff(handoff)) => {
                    recording::hand_over(tab, asker, handoff.reason, budget)
                        .await
                        .map(Into::into)
                }
                Operation::Tabs(TabsOp::Record(record)) if record.start => {
                    recording::start(tab, asker, budget).await.map(Into::into)
                }
                _ => recording::stop(tab, &asker.session.unwrap_or_default()).map(Into::into),
            };
        }
        let _approved = match tab {
            Some(tab) => admit(tab, &op, tool, holder, checkpoint).await?,
            None => None,
        };
        let outcome = ops::execute(tab_id, op, viewer, checkpoint).await;
        return leases::adopt(holder, opens_tab, outcome);
    }
    // A named tab takes its place in line at once (arrival order); the handler checks it
    // exists. Only "the active tab" must be looked up first.
    let tab = match tab_id {
        Some(tab) => tab,
        None => resolve_tab(None).await?.id,
    };
    // Dropped at the deadline while still waiting, this leaves the line (`QUEUE_TIMEOUT`).
    let _permit = queue::admit(tab, tool, deadline_ms).await;
    checkpoint.start_running();
    // A release is answered, and a change to a tab another session holds refused, before a
    // dialog, the policy or a person's approval is considered; the lease is taken once the
    // call may go ahead (the queue keeps the tab to this request meanwhile).
    if let Some(answer) = leases::gate(tab, holder, &op).await? {
        return Ok(answer);
    }
    if let Some(dialog) = debugger::judged_dialog(tab).await {
        return Err(debugger::dialog_error(&dialog));
    }
    // A person's approval holds while this request runs, for the origin it was given for.
    let _approved = admit(tab, &op, tool, holder, checkpoint).await?;
    leases::take(tab, holder, &op)?;
    let handles_dialogs = matches!(op, Operation::Act(ActOp::Act(_) | ActOp::Batch(_)));
    let mutation = op.is_mutation();
    let work = ops::execute(Some(tab), op, viewer, checkpoint);
    let outcome = if handles_dialogs {
        work.await
    } else {
        debugger::unless_dialog(tab, work).await.map_err(|error| {
            if mutation && error.code == ErrorCode::DialogOpen {
                error.action_may_have_occurred()
            } else {
                error
            }
        })
    };
    leases::adopt(holder, opens_tab, outcome)
}

/// Whether `op` may run on `tab` now: not while a person has the tab (`request_human`), and
/// only as far as the policy of the tab's page allows (an `ask` origin waits for a person's
/// approval, within the request's deadline, which then holds while the request runs).
/// Frames and navigations are checked again where the operation reaches them (`page.rs`,
/// `ops::act`, `ops::load`).
async fn admit(
    tab: TabId,
    op: &Operation,
    tool: &str,
    holder: Option<&LeaseHolder>,
    checkpoint: &Checkpoint,
) -> Result<Option<approvals::Admitted>, OpError> {
    if approvals::person_has(tab) {
        return Err(approvals::person_has_error(tab));
    }
    let Some((need, url)) = op.page_need() else {
        return Ok(None);
    };
    // The usual case, no policy restricting anything, looks nothing up.
    if policy::allows_everything() {
        return Ok(None);
    }
    let url = match url {
        Some(url) => url.to_owned(),
        None => top_url(tab, checkpoint).await?,
    };
    if policy::check_url(&url, need)? {
        return Ok(None);
    }
    let origin = tabwire_protocol::policy::origin_of(&url).unwrap_or(url);
    // The hub names the caller on every changing request, which are the ones that ask.
    let asker = asker_of(holder);
    let budget = checkpoint.budget_ms();
    approvals::approve(tab, &origin, asker, tool, subject_of(tab, op), budget)
        .await
        .map(Some)
}

/// How often a tab without a document yet is looked at again.
const LOADING_POLL_MS: f64 = 50.0;

/// The URL of the tab's top document. A tab that has none yet (a call right after
/// `create_tab`: its first page has not been committed) is waited for within the request's
/// deadline, leaving time to answer `TAB_LOADING` rather than run out of it.
async fn top_url(tab: TabId, checkpoint: &Checkpoint) -> Result<String, OpError> {
    loop {
        match policy::frame_url(tab, 0).await {
            Err(error)
                if error.code == ErrorCode::TabLoading
                    && checkpoint.budget_ms() > 3.0 * LOADING_POLL_MS =>
            {
                sleep(LOADING_POLL_MS).await;
            }
            outcome => return outcome,
        }
    }
}

/// Who asks a person, as the hub named the caller (the hub names it on every request that
/// can ask: changing ones and handoffs).
fn asker_of(holder: Option<&LeaseHolder>) -> approvals::Asker {
    approvals::Asker {
        session: holder.map(|holder| holder.session.clone()),
        client: holder.map_or_else(|| "an agent".to_owned(), |holder| holder.client.clone()),
    }
}

/// What an approval shows a person an operation is about: an element by its role and name
/// when the agent named it by a ref this extension issued, else the selector as given; a
/// batch's steps one by one.
fn subject_of(tab: TabId, op: &Operation) -> approvals::Subject {
    match op {
        Operation::Act(ActOp::Act(request)) => action_subject(tab, &request.action),
        Operation::Act(ActOp::Batch(batch)) => approvals::Subject::Steps {
            steps: batch
                .steps
                .iter()
                .map(|step| match step {
                    tabwire_protocol::Step::Act { action } => {
                        (action.name().to_owned(), action_subject(tab, action))
                    }
                    tabwire_protocol::Step::Observe { .. } => {
                        ("observe".to_owned(), approvals::Subject::Page)
                    }
                    tabwire_protocol::Step::Content { .. } => {
                        ("content".to_owned(), approvals::Subject::Page)
                    }
                })
                .collect(),
        },
        _ => approvals::Subject::Page,
    }
}

/// What one action is about: an upload names its files besides its element.
fn action_subject(tab: TabId, action: &Action) -> approvals::Subject {
    match action {
        Action::Navigate { url, .. } => approvals::Subject::Address { url: url.clone() },
        Action::Upload { target, files, .. } => approvals::Subject::Files {
            element: Box::new(element_subject(tab, Some(target))),
            files: files.iter().map(|f| (f.name.clone(), f.size)).collect(),
        },
        action => element_subject(tab, action.target()),
    }
}

/// What an action's element is, as a person is shown it.
fn element_subject(tab: TabId, target: Option<&Target>) -> approvals::Subject {
    match target {
        Some(Target::Ref(element_ref)) => {
            crate::refs::with_tables(|tables| tables.resolve(tab, *element_ref))
                .ok()
                .and_then(|resolved| resolved.identity)
                .map_or_else(
                    || approvals::Subject::Selector {
                        selector: element_ref.to_string(),
                    },
                    |identity| approvals::Subject::Named {
                        role: identity.role,
                        name: identity.name,
                    },
                )
        }
        Some(target) => approvals::Subject::Selector {
            selector: target.to_string(),
        },
        None => approvals::Subject::Page,
    }
}

/// The answer to a request the hub cancelled: input had gone out only if a check let some
/// through (a request cancelled in its tab's queue never ran).
fn cancelled_error(checkpoint: &Checkpoint) -> OpError {
    OpError::cancelled(checkpoint.is_running() && checkpoint.dispatches() > 0)
}

/// The error for an operation that never left its tab's queue.
fn queue_timeout(deadline_ms: u64) -> OpError {
    OpError::new(
        ErrorCode::QueueTimeout,
        format!(
            "The tab was busy with earlier operations for the whole {deadline_ms} ms deadline, so \
             this one never started; nothing was done. Retry, or call get_tab_health to see what \
             the tab is running."
        ),
    )
}

/// The deadline error: `QUEUE_TIMEOUT` for a request that never left its queue; otherwise the
/// operation's timeout, knowing whether input was dispatched (a mutation stopped before its
/// input went out certainly did nothing).
fn timeout_error(mut timeout: OpError, checkpoint: &Checkpoint, deadline_ms: u64) -> OpError {
    if !checkpoint.is_running() {
        return queue_timeout(deadline_ms);
    }
    if checkpoint.dispatches() == 0 {
        timeout.action_may_have_occurred = false;
    }
    timeout
}

/// The error for an operation that ran out of time.
pub fn deadline_error(op: &Operation, deadline_ms: u64) -> OpError {
    let error = match op {
        Operation::Tabs(TabsOp::Navigate(_)) => OpError::new(
            ErrorCode::NavigationTimeout,
            format!(
                "The page did not finish loading within {deadline_ms} ms. It may still be \
                 loading: take a snapshot to see where the tab is before retrying."
            ),
        ),
        _ if op.is_mutation() => OpError::new(
            ErrorCode::TabUnresponsive,
            format!(
                "The page did not respond within {deadline_ms} ms. The action may already have \
                 happened: take a snapshot to check before retrying."
            ),
        ),
        _ => OpError::new(
            ErrorCode::TabUnresponsive,
            format!("The page did not respond within {deadline_ms} ms; it may be busy or hung."),
        ),
    };
    if op.is_mutation() {
        error.action_may_have_occurred()
    } else {
        error
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tabwire_protocol::Target;

    #[test]
    fn the_queue_timeout_reads_as_one_sentence() {
        let error = queue_timeout(5000);
        assert_eq!(error.code, ErrorCode::QueueTimeout);
        assert!(!error.message.contains("  "), "{}", error.message);
        assert!(
            error
                .message
                .contains("5000 ms deadline, so this one never started")
        );
    }

    /// Issue 23: the connection's loop reads a request, spawns its task, and may read the
    /// hub's cancel for it before that task first runs. The cancel must find the request.
    #[test]
    fn a_cancel_read_before_the_task_first_runs_still_cancels_it() {
        let cancels = Cancels::new();
        let click = tabwire_protocol::ActRequest {
            action: Action::Hover {
                target: Target::Css("#menu".into()),
            },
            observe: None,
        };
        let request = Request {
            id: 41,
            tab_id: Some(5),
            deadline_ms: 30_000,
            tool: "hover".into(),
            holder: None,
            viewer: Some("s".into()),
            op: click.into(),
        };
        // What the loop does on the request: the task is spawned, not run yet.
        let accepted = accept(request, &cancels);
        // The next message the loop reads: the hub's cancel.
        assert!(cancels.cancel(41), "the cancel finds the request");
        // The task's first poll answers without running anything (running would call Chrome,
        // which a native test has not got).
        let answer = std::cell::RefCell::new(None);
        let served = crate::timer::tests::poll_once(accepted.serve(Liveness::new(), |text| {
            *answer.borrow_mut() = Some(text.to_owned());
            Ok(())
        }));
        assert!(served.is_ready(), "answered at its first poll");
        let text = answer.take().expect("an answer was sent");
        let ExtensionMessage::Response(response) = serde_json::from_str(&text).unwrap() else {
            panic!("not a response: {text}");
        };
        assert_eq!(response.id, 41);
        let error = response.error.expect("an error");
        assert_eq!(error.code, ErrorCode::Cancelled);
        assert!(!error.action_may_have_occurred, "it never ran");
        assert!(
            cancels.is_empty(),
            "answered, it can no longer be cancelled"
        );
    }

    #[test]
    fn a_cancel_says_input_went_out_only_when_a_check_let_some_through() {
        let checkpoint = || {
            Checkpoint::cancellable(
                Liveness::new(),
                crate::checkpoint::Cancel::new(),
                60_000,
                OpError::new(ErrorCode::TabUnresponsive, "late"),
            )
        };
        let queued = checkpoint();
        let error = cancelled_error(&queued);
        assert_eq!(error.code, ErrorCode::Cancelled);
        assert!(!error.action_may_have_occurred, "it never ran");
        let waiting = checkpoint();
        waiting.start_running();
        waiting.check_alive().unwrap();
        assert!(!cancelled_error(&waiting).action_may_have_occurred);
        let clicked = checkpoint();
        clicked.start_running();
        clicked.check().unwrap();
        assert!(cancelled_error(&clicked).action_may_have_occurred);
    }

    #[test]
    fn timeouts_say_whether_the_action_may_have_happened() {
        let nav = deadline_error(
            &tabwire_protocol::Navigate {
                url: "http://x/".into(),
            }
            .into(),
            500,
        );
        assert_eq!(nav.code, ErrorCode::NavigationTimeout);
        assert!(nav.action_may_have_occurred);

        let click = deadline_error(
            &tabwire_protocol::ActRequest {
                action: tabwire_protocol::Action::Hover {
                    target: Target::Css("#a".into()),
                },
                observe: None,
            }
            .into(),
            500,
        );
        assert_eq!(click.code, ErrorCode::TabUnresponsive);
        assert!(click.action_may_have_occurred);

        let read = deadline_error(
            &tabwire_protocol::SnapshotRequest {
                frame_id: None,
                scope: None,
                query: None,
                max_nodes: 1,
                max_chars: 1,
                offset: 0,
                since: None,
                include_hidden: false,
            }
            .into(),
            500,
        );
        assert_eq!(read.code, ErrorCode::TabUnresponsive);
        assert!(!read.action_may_have_occurred);
        assert!(read.message.contains("500 ms"));
    }
}
