//! Whether a request may still act: its connection is open, the hub has not cancelled it and
//! its deadline has not passed.
//!
//! Every request carries a [`Checkpoint`]. Operations call [`Checkpoint::check`] immediately
//! before they dispatch a click, a keystroke or a navigation, and [`Checkpoint::check_alive`]
//! before a step that only reads or waits; both fail once the request's connection has closed
//! (the hub has told the agent the outcome is unknown, so nothing may happen after that), the
//! hub cancelled it (its MCP client cancelled the call) or its deadline has passed. The
//! connection is known through a [`Liveness`] handle that the connection closes when it ends,
//! and the cancel through the request's own handle in its connection's [`Cancels`]: nothing
//! polls for either.
//!
//! Input that a check let through is handed to Chrome as a run (`input`) that Chrome delivers
//! whether or not the request still waits for it. [`Checkpoint::dispatch`] is the check for
//! such a run: its [`Dispatch`] lives as long as the run, and [`Checkpoint::delivered`] waits
//! for the request's runs to end, so a request that was stopped (cancelled, out of time) is
//! answered only once nothing of its input can land any more.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use tabwire_protocol::{ErrorCode, OpError};

use crate::timer::now_ms;

/// Whether one connection to the hub is still open, shared by the connection (which closes it)
/// and every request that came on it (which reads it, or waits for it to close).
#[derive(Clone, Default)]
pub struct Liveness {
    state: Rc<LivenessState>,
}

#[derive(Default)]
struct LivenessState {
    closed: Cell<bool>,
    /// The tasks waiting in [`Liveness::closed`], by waiter number.
    waiters: RefCell<HashMap<u64, Waker>>,
    next_waiter: Cell<u64>,
}

impl Liveness {
    /// An open connection's handle.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the connection is still open.
    pub fn is_open(&self) -> bool {
        !self.state.closed.get()
    }

    /// Marks the connection closed and wakes everything waiting for that. Idempotent.
    pub fn close(&self) {
        self.state.closed.set(true);
        let waiters: Vec<Waker> = self
            .state
            .waiters
            .borrow_mut()
            .drain()
            .map(|(_, w)| w)
            .collect();
        // Woken outside the borrow: a waker may poll a waiter synchronously.
        for waker in waiters {
            waker.wake();
        }
    }

    /// Completes once the connection is closed.
    pub fn closed(&self) -> Closed {
        let id = self.state.next_waiter.get();
        self.state.next_waiter.set(id + 1);
        Closed {
            liveness: self.clone(),
            id,
        }
    }
}

/// The future of [`Liveness::closed`]; dropping it forgets its waker, so a long-lived
/// connection does not collect the wakers of every request it served.
pub struct Closed {
    liveness: Liveness,
    id: u64,
}

impl Future for Closed {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let state = &self.liveness.state;
        if state.closed.get() {
            return Poll::Ready(());
        }
        state
            .waiters
            .borrow_mut()
            .insert(self.id, cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Closed {
    fn drop(&mut self) {
        self.liveness.state.waiters.borrow_mut().remove(&self.id);
    }
}

/// Whether the hub cancelled one request: raised once by [`Cancels::cancel`], read by the
/// request's checkpoint and awaited beside its work. The same one-way signal as a connection's
/// [`Liveness`].
#[derive(Clone, Default)]
pub struct Cancel {
    signal: Liveness,
}

impl Cancel {
    /// A request's handle, not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the hub cancelled the request.
    pub fn is_cancelled(&self) -> bool {
        !self.signal.is_open()
    }

    /// Completes once the hub cancelled the request.
    pub fn cancelled(&self) -> Closed {
        self.signal.closed()
    }

    fn raise(&self) {
        self.signal.close();
    }
}

/// The requests of one connection that may still be cancelled, by request ID (IDs are unique
/// per connection only, so each connection keeps its own).
#[derive(Clone, Default)]
pub struct Cancels {
    running: Rc<RefCell<HashMap<u64, Cancel>>>,
}

impl Cancels {
    /// An empty set, for a new connection.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers request `id`; it can be cancelled until the returned guard is dropped (when
    /// the request has been answered).
    pub fn register(&self, id: u64) -> Registered {
        let cancel = Cancel::new();
        self.running.borrow_mut().insert(id, cancel.clone());
        Registered {
            cancels: self.clone(),
            id,
            cancel,
        }
    }

    /// Cancels request `id`; false when no such request runs (it was already answered).
    pub fn cancel(&self, id: u64) -> bool {
        // Raised outside the borrow: raising wakes waiters, which may register or drop.
        let cancel = self.running.borrow().get(&id).cloned();
        cancel.inspect(Cancel::raise).is_some()
    }

    /// How many requests can be cancelled now.
    pub fn len(&self) -> usize {
        self.running.borrow().len()
    }

    /// Whether no request can be cancelled now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A request's place in its connection's [`Cancels`]; dropping it takes the request out.
pub struct Registered {
    cancels: Cancels,
    id: u64,
    cancel: Cancel,
}

impl Registered {
    /// The request's handle.
    pub fn cancel(&self) -> &Cancel {
        &self.cancel
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.cancels.running.borrow_mut().remove(&self.id);
    }
}

/// The input runs of one request that Chrome is still delivering, and the task waiting for
/// them to end (the request's answer: one waiter at most).
#[derive(Default)]
struct InFlight {
    runs: Cell<u32>,
    waiter: RefCell<Option<Waker>>,
}

/// One input run of a request, handed to Chrome: dropped when Chrome has delivered it (the run
/// holds it, not the request, so it outlives a request that stopped waiting).
pub struct Dispatch {
    in_flight: Rc<InFlight>,
}

impl Drop for Dispatch {
    fn drop(&mut self) {
        let runs = self.in_flight.runs.get().saturating_sub(1);
        self.in_flight.runs.set(runs);
        if runs == 0 {
            // Taken out of the cell before waking: a waker may poll its task synchronously.
            let waiter = self.in_flight.waiter.borrow_mut().take();
            if let Some(waker) = waiter {
                waker.wake();
            }
        }
    }
}

/// Whether a request may still act. Operations call [`Checkpoint::check`] immediately before a
/// click, a keystroke or a navigation is dispatched.
pub struct Checkpoint {
    liveness: Liveness,
    cancel: Cancel,
    deadline_at: f64,
    timeout: OpError,
    /// How many checks let input through: once any did, a timeout may come after the action.
    dispatched: Cell<u32>,
    /// Set once the request left its tab's queue.
    running: Cell<bool>,
    /// The request's input runs Chrome is still delivering.
    in_flight: Rc<InFlight>,
}

impl Checkpoint {
    /// Time kept back at the end of the deadline to report a precise error (or the
    /// observation's absence) instead of the generic timeout.
    pub const MARGIN_MS: f64 = 150.0;

    /// A request on the connection of `liveness`, due `deadline_ms` from now; `timeout` is the
    /// error for running out of time.
    pub fn new(liveness: Liveness, deadline_ms: u64, timeout: OpError) -> Self {
        Self::cancellable(liveness, Cancel::new(), deadline_ms, timeout)
    }

    /// [`Checkpoint::new`] for a request the hub may cancel through `cancel`.
    pub fn cancellable(
        liveness: Liveness,
        cancel: Cancel,
        deadline_ms: u64,
        timeout: OpError,
    ) -> Self {
        Checkpoint {
            liveness,
            cancel,
            deadline_at: now_ms() + deadline_ms as f64,
            timeout,
            dispatched: Cell::new(0),
            running: Cell::new(false),
            in_flight: Rc::default(),
        }
    }

    /// Milliseconds left before the deadline.
    pub fn remaining_ms(&self) -> f64 {
        (self.deadline_at - now_ms()).max(0.0)
    }

    /// Milliseconds a step may take and still leave [`Checkpoint::MARGIN_MS`] for a precise
    /// answer; negative when that time is gone.
    pub fn budget_ms(&self) -> f64 {
        self.remaining_ms() - Self::MARGIN_MS
    }

    /// How many checks let input through so far (a batch step compares before and after).
    pub fn dispatches(&self) -> u32 {
        self.dispatched.get()
    }

    /// Fails when the request must not act any more; otherwise records that the caller is about
    /// to dispatch input.
    pub fn check(&self) -> Result<(), OpError> {
        self.check_alive()?;
        self.dispatched.set(self.dispatched.get() + 1);
        Ok(())
    }

    /// [`Checkpoint::check`] for a run of input that Chrome delivers on its own once handed over
    /// (`input`): the returned [`Dispatch`] goes with the run and is dropped when it ends.
    pub fn dispatch(&self) -> Result<Dispatch, OpError> {
        self.check()?;
        self.in_flight.runs.set(self.in_flight.runs.get() + 1);
        Ok(Dispatch {
            in_flight: self.in_flight.clone(),
        })
    }

    /// Completes once none of the request's input runs is still being delivered: at once when
    /// none was handed over, or all have ended.
    pub fn delivered(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(|cx| {
            if self.in_flight.runs.get() == 0 {
                return Poll::Ready(());
            }
            *self.in_flight.waiter.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        })
    }

    /// Like [`Checkpoint::check`], for a step that only reads or waits.
    pub fn check_alive(&self) -> Result<(), OpError> {
        if !self.liveness.is_open() {
            return Err(OpError::new(
                ErrorCode::BrowserDisconnected,
                "the connection this request came on has closed; nothing was done",
            ));
        }
        if self.cancel.is_cancelled() {
            // Refused before acting: nothing happens at this step. The request's answer,
            // made by `requests`, says whether an earlier step's input went out.
            return Err(OpError::cancelled(false));
        }
        if now_ms() >= self.deadline_at {
            let mut error = self.timeout.clone();
            // Stopped before acting: nothing happened at this step.
            error.action_may_have_occurred = false;
            return Err(error);
        }
        Ok(())
    }

    /// Records that the request left its tab's queue and runs.
    pub fn start_running(&self) {
        self.running.set(true);
    }

    /// Whether the request left its tab's queue.
    pub fn is_running(&self) -> bool {
        self.running.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timer::tests::poll_once;

    #[test]
    fn closing_a_connection_stops_its_requests_and_wakes_their_waits() {
        let liveness = Liveness::new();
        let checkpoint = Checkpoint::new(
            liveness.clone(),
            60_000,
            OpError::new(ErrorCode::TabUnresponsive, "late"),
        );
        assert!(checkpoint.check().is_ok());
        assert_eq!(checkpoint.dispatches(), 1);
        let mut waiting = Box::pin(liveness.closed());
        assert!(poll_once(waiting.as_mut()).is_pending());
        liveness.close();
        assert!(poll_once(waiting.as_mut()).is_ready());
        let error = checkpoint.check().unwrap_err();
        assert_eq!(error.code, ErrorCode::BrowserDisconnected);
        assert_eq!(
            checkpoint.dispatches(),
            1,
            "a refused check lets nothing through"
        );
    }

    #[test]
    fn a_dropped_wait_leaves_nothing_behind() {
        let liveness = Liveness::new();
        for _ in 0..3 {
            let mut waiting = Box::pin(liveness.closed());
            assert!(poll_once(waiting.as_mut()).is_pending());
        }
        assert!(liveness.state.waiters.borrow().is_empty());
    }

    #[test]
    fn a_cancelled_request_stops_at_its_next_check_and_wakes_its_wait() {
        let cancels = Cancels::new();
        let registered = cancels.register(7);
        let other = cancels.register(8);
        let checkpoint = Checkpoint::cancellable(
            Liveness::new(),
            registered.cancel().clone(),
            60_000,
            OpError::new(ErrorCode::TabUnresponsive, "late"),
        );
        assert!(checkpoint.check().is_ok());
        let mut waiting = Box::pin(registered.cancel().cancelled());
        assert!(poll_once(waiting.as_mut()).is_pending());
        assert!(cancels.cancel(7));
        assert!(poll_once(waiting.as_mut()).is_ready(), "the wait is woken");
        let error = checkpoint.check().unwrap_err();
        assert_eq!(error.code, ErrorCode::Cancelled);
        assert_eq!(checkpoint.dispatches(), 1, "no input after the cancel");
        assert_eq!(
            checkpoint.check_alive().unwrap_err().code,
            ErrorCode::Cancelled
        );
        // Only that request: its neighbour goes on.
        assert!(!other.cancel().is_cancelled());
        // An answered request leaves the set; a cancel for it finds nothing.
        drop(registered);
        assert_eq!(cancels.len(), 1);
        assert!(!cancels.cancel(7));
        drop(other);
        assert!(cancels.is_empty());
        assert!(!cancels.cancel(99), "an unknown ID is ignored");
    }

    #[test]
    fn a_request_is_delivered_once_its_runs_end_and_no_run_starts_after_a_cancel() {
        let cancels = Cancels::new();
        let registered = cancels.register(3);
        let checkpoint = Checkpoint::cancellable(
            Liveness::new(),
            registered.cancel().clone(),
            60_000,
            OpError::new(ErrorCode::TabUnresponsive, "late"),
        );
        assert!(
            poll_once(checkpoint.delivered()).is_ready(),
            "nothing handed over"
        );
        let first = checkpoint.dispatch().unwrap();
        let second = checkpoint.dispatch().unwrap();
        assert_eq!(checkpoint.dispatches(), 2);
        let mut delivered = Box::pin(checkpoint.delivered());
        assert!(poll_once(delivered.as_mut()).is_pending());
        // Cancelled with both runs in Chrome: no third starts, and the answer waits for both.
        assert!(cancels.cancel(3));
        assert_eq!(
            checkpoint.dispatch().err().map(|e| e.code),
            Some(ErrorCode::Cancelled)
        );
        drop(first);
        assert!(
            poll_once(delivered.as_mut()).is_pending(),
            "one run still lands"
        );
        drop(second);
        assert!(poll_once(delivered.as_mut()).is_ready());
        assert_eq!(
            checkpoint.dispatches(),
            2,
            "the refused run counts for nothing"
        );
    }

    #[test]
    fn a_passed_deadline_says_nothing_happened_at_this_step() {
        let checkpoint = Checkpoint::new(
            Liveness::new(),
            0,
            OpError::new(ErrorCode::TabUnresponsive, "late").action_may_have_occurred(),
        );
        let error = checkpoint.check_alive().unwrap_err();
        assert_eq!(error.code, ErrorCode::TabUnresponsive);
        assert!(!error.action_may_have_occurred);
    }
}
