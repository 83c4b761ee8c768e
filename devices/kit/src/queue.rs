//! One device's queue: its operations run one at a time, in the order they arrive (a fair
//! lock is the queue). One whose deadline passes while it waits gets `QUEUE_TIMEOUT` and never
//! starts; one the hub cancels leaves the queue at once, or stops where it runs (see
//! [`crate::cancel`]). What the device remembers between operations lives behind the lock,
//! and sessions that end while an operation holds it are forgotten by the next one.

use std::future::Future;

use tabwire_protocol::{ErrorCode, OpError};
use tokio::sync::{Mutex, MutexGuard};
use tokio::time::Instant;

use crate::cancel::Cancel;

/// At most this many ended sessions wait to be forgotten.
const MAX_ENDED: usize = 64;

/// What a device remembers per MCP session, which it forgets when the session ends.
pub trait Forgets {
    /// Forgets what `session` was shown.
    fn forget(&mut self, session: &str);
}

/// A device's state behind its queue.
#[derive(Debug, Default)]
pub struct Queue<S> {
    state: Mutex<S>,
    /// Sessions that ended while an operation held `state`.
    ended: std::sync::Mutex<Vec<String>>,
}

impl<S: Forgets> Queue<S> {
    /// A queue in front of `state`.
    pub fn new(state: S) -> Self {
        Queue {
            state: Mutex::new(state),
            ended: std::sync::Mutex::default(),
        }
    }

    /// Waits for the operation's turn until `deadline`, or until the hub cancels it.
    pub async fn turn(
        &self,
        deadline: Instant,
        cancel: &Cancel,
    ) -> Result<MutexGuard<'_, S>, OpError> {
        let mut state = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(OpError::cancelled(false)),
            state = tokio::time::timeout_at(deadline, self.state.lock()) => state.map_err(|_| {
                OpError::new(
                    ErrorCode::QueueTimeout,
                    "The device was busy with earlier calls until the deadline; this one never \
                     started.",
                )
            })?,
        };
        for ended in std::mem::take(&mut *self.ended.lock().unwrap()) {
            state.forget(&ended);
        }
        Ok(state)
    }

    /// An MCP session ended: what it was shown is forgotten now, or by the next operation
    /// when one runs now.
    pub fn session_ended(&self, session: &str) {
        match self.state.try_lock() {
            Ok(mut state) => state.forget(session),
            Err(_) => {
                let mut ended = self.ended.lock().unwrap();
                // Bounded: beyond it the views' own limit on viewers still holds.
                if ended.len() < MAX_ENDED {
                    ended.push(session.to_owned());
                }
            }
        }
    }
}

/// Runs an operation against its cancel. An operation that finished wins over a cancel that
/// came with its end. An input command under way when the cancel comes runs to its end first
/// ([`Cancel::cancelled_between_inputs`]): the device stays this operation's, and its answer
/// waits, until nothing of it can land any more. However the operation noticed a cancel, the
/// answer is the cancel's, saying whether input had gone out.
pub async fn unless_cancelled<T>(
    run: impl Future<Output = Result<T, OpError>>,
    cancel: &Cancel,
) -> Result<T, OpError> {
    let outcome = tokio::select! {
        biased;
        outcome = run => outcome,
        () = cancel.cancelled_between_inputs() => Err(OpError::cancelled(cancel.input_sent())),
    };
    match outcome {
        Err(_) if cancel.is_cancelled() => Err(OpError::cancelled(cancel.input_sent())),
        outcome => outcome,
    }
}
