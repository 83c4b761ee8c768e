//! Stopping an operation the hub cancelled (its MCP client cancelled the call, or went away).
//!
//! The link gives each running request a [`Cancel`] and keeps its [`Canceller`] by request ID;
//! the hub's `cancel` message raises it. The operation races it
//! ([`crate::queue`]): still waiting for the device's queue, it leaves
//! the queue and never runs; running, it is dropped at its next await (an adb invocation in
//! flight is killed with it), and every adb call checks it first. An input command marks the
//! [`Cancel`] right before it goes out, so the answer says whether the action may have
//! happened.
//!
//! An input command already under way is the exception: killing its adb mid-way could leave a
//! swipe's finger down, or let the device finish it after the answer, behind the next call's
//! back. It runs to its end (it is short, and bounded by its adb timeout) while holding the
//! device's queue, and only then is the operation dropped and answered
//! ([`Cancel::cancelled_between_inputs`]): at most the command already started completes after
//! a cancel, never interleaved with the next call's input (issue 23).
//!
//! The link registers each request's [`Canceller`] in its message loop before spawning the
//! request's task (`link::start`), so a cancel read right behind its request is never lost.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::watch;

/// The link's end: raises the cancel of one request.
pub struct Canceller(watch::Sender<bool>);

impl Canceller {
    /// Cancels the request.
    pub fn cancel(&self) {
        self.0.send_replace(true);
    }
}

/// The operation's end: whether it was cancelled, and whether its input went out.
pub struct Cancel {
    cancelled: watch::Receiver<bool>,
    input_sent: AtomicBool,
    /// How many input commands are under way (one at a time in practice).
    inputs: watch::Sender<u32>,
}

impl Cancel {
    /// A request's pair of ends.
    pub fn new() -> (Canceller, Cancel) {
        let (sender, receiver) = watch::channel(false);
        (
            Canceller(sender),
            Cancel {
                cancelled: receiver,
                input_sent: AtomicBool::new(false),
                inputs: watch::Sender::new(0),
            },
        )
    }

    /// One that is never cancelled (an operation nobody can cancel).
    pub fn never() -> Cancel {
        Cancel::new().1
    }

    /// Whether the request was cancelled.
    pub fn is_cancelled(&self) -> bool {
        *self.cancelled.borrow()
    }

    /// Completes once the request is cancelled; never, when its canceller is gone uncancelled.
    pub async fn cancelled(&self) {
        let mut cancelled = self.cancelled.clone();
        if cancelled.wait_for(|cancelled| *cancelled).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Completes once the request is cancelled and no input command is under way: what an
    /// operation races, so that a command already started finishes first.
    pub async fn cancelled_between_inputs(&self) {
        self.cancelled().await;
        let mut inputs = self.inputs.subscribe();
        // The sender is `self`'s own: it cannot close while this waits.
        let _ = inputs.wait_for(|under_way| *under_way == 0).await;
    }

    /// Records that an input command is about to go out; it is under way until the returned
    /// guard is dropped.
    pub fn input_going_out(&self) -> InputUnderWay<'_> {
        self.input_sent.store(true, Ordering::Relaxed);
        self.inputs.send_modify(|under_way| *under_way += 1);
        InputUnderWay(self)
    }

    /// Whether any input command went out (or may have).
    pub fn input_sent(&self) -> bool {
        self.input_sent.load(Ordering::Relaxed)
    }
}

/// An input command under way (see [`Cancel::input_going_out`]).
pub struct InputUnderWay<'a>(&'a Cancel);

impl Drop for InputUnderWay<'_> {
    fn drop(&mut self) {
        self.0
            .inputs
            .send_modify(|under_way| *under_way = under_way.saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cancel_reaches_its_request_only() {
        let (canceller, cancel) = Cancel::new();
        let (_other_canceller, other) = Cancel::new();
        assert!(!cancel.is_cancelled());
        canceller.cancel();
        assert!(cancel.is_cancelled());
        cancel.cancelled().await;
        assert!(!other.is_cancelled());
        assert!(!cancel.input_sent());
        let _under_way = cancel.input_going_out();
        assert!(cancel.input_sent());
    }

    #[tokio::test]
    async fn a_cancel_waits_for_the_input_command_under_way() {
        let (canceller, cancel) = Cancel::new();
        let under_way = cancel.input_going_out();
        canceller.cancel();
        assert!(cancel.is_cancelled());
        let mut stopped = Box::pin(cancel.cancelled_between_inputs());
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        for _ in 0..10 {
            assert!(
                stopped.as_mut().poll(&mut cx).is_pending(),
                "the command runs to its end first"
            );
            tokio::task::yield_now().await;
        }
        drop(under_way);
        stopped.await;
        assert!(cancel.input_sent());
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_nobody_can_cancel_is_never_cancelled() {
        let never = Cancel::never();
        let waited =
            tokio::time::timeout(std::time::Duration::from_secs(60), never.cancelled()).await;
        assert!(waited.is_err());
    }
}
