//! Whether a request may still act: its connection is open and its deadline has not passed.
//!
//! Every request carries a [`Checkpoint`]. Operations call [`Checkpoint::check`] immediately
//! before they dispatch a click, a keystroke or a navigation, and [`Checkpoint::check_alive`]
//! before a step that only reads or waits; both fail once the request's connection has closed
//! (the hub has told the agent the outcome is unknown, so nothing may happen after that) or its
//! deadline has passed. The connection is known through a [`Liveness`] handle that the
//! connection closes when it ends: nothing polls for it.

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

/// Whether a request may still act. Operations call [`Checkpoint::check`] immediately before a
/// click, a keystroke or a navigation is dispatched.
pub struct Checkpoint {
    liveness: Liveness,
    deadline_at: f64,
    timeout: OpError,
    /// How many checks let input through: once any did, a timeout may come after the action.
    dispatched: Cell<u32>,
    /// Set once the request left its tab's queue.
    running: Cell<bool>,
}

impl Checkpoint {
    /// Time kept back at the end of the deadline to report a precise error (or the
    /// observation's absence) instead of the generic timeout.
    pub const MARGIN_MS: f64 = 150.0;

    /// A request on the connection of `liveness`, due `deadline_ms` from now; `timeout` is the
    /// error for running out of time.
    pub fn new(liveness: Liveness, deadline_ms: u64, timeout: OpError) -> Self {
        Checkpoint {
            liveness,
            deadline_at: now_ms() + deadline_ms as f64,
            timeout,
            dispatched: Cell::new(0),
            running: Cell::new(false),
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

    /// Like [`Checkpoint::check`], for a step that only reads or waits.
    pub fn check_alive(&self) -> Result<(), OpError> {
        if !self.liveness.is_open() {
            return Err(OpError::new(
                ErrorCode::BrowserDisconnected,
                "the connection this request came on has closed; nothing was done",
            ));
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
