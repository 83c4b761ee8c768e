//! Stopping an operation the hub cancelled (its MCP client cancelled the call, or went away).
//!
//! The link gives each running request a [`Cancel`] and keeps its [`Canceller`] by request ID;
//! the hub's `cancel` message raises it. The operation races it
//! ([`crate::device::Device::execute_unless`]): still waiting for the device's queue, it leaves
//! the queue and never runs; running, it is dropped at its next await (an adb invocation in
//! flight is killed with it), and every adb call checks it first. An input command marks the
//! [`Cancel`] right before it goes out, so the answer says whether the action may have
//! happened.

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

    /// Records that an input command is about to go out.
    pub fn input_going_out(&self) {
        self.input_sent.store(true, Ordering::Relaxed);
    }

    /// Whether any input command went out (or may have).
    pub fn input_sent(&self) -> bool {
        self.input_sent.load(Ordering::Relaxed)
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
        cancel.input_going_out();
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
