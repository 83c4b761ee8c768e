//! A single-consumer message queue for the single-threaded worker.
//!
//! WebSocket callbacks and popup requests arrive as JS events; the connection is written as
//! one async loop. A [`Mailbox`] connects the two: callbacks [`Mailbox::post`], the loop awaits
//! [`Mailbox::recv`]. Waiting on a `recv` and dropping it before it completes loses nothing,
//! which lets the loop race a mailbox against timers with [`crate::timer::select`].

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Poll, Waker};

/// A cloneable handle to one queue. All clones share it.
pub struct Mailbox<T> {
    inner: Rc<RefCell<Inner<T>>>,
}

struct Inner<T> {
    queue: VecDeque<T>,
    /// The waker of the one pending `recv`, woken by the next `post`.
    waker: Option<Waker>,
}

impl<T> Clone for Mailbox<T> {
    fn clone(&self) -> Self {
        Mailbox {
            inner: Rc::clone(&self.inner),
        }
    }
}

impl<T> Default for Mailbox<T> {
    fn default() -> Self {
        Mailbox {
            inner: Rc::new(RefCell::new(Inner {
                queue: VecDeque::new(),
                waker: None,
            })),
        }
    }
}

impl<T> Mailbox<T> {
    /// An empty mailbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues a message and wakes the receiver.
    pub fn post(&self, message: T) {
        let waker = {
            let mut inner = self.inner.borrow_mut();
            inner.queue.push_back(message);
            inner.waker.take()
        };
        // Woken outside the borrow: a waker may poll the receiver synchronously.
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Takes a message if one is queued, without waiting.
    pub fn try_recv(&self) -> Option<T> {
        self.inner.borrow_mut().queue.pop_front()
    }

    /// Waits for the next message.
    pub async fn recv(&self) -> T {
        poll_fn(|cx| {
            let mut inner = self.inner.borrow_mut();
            match inner.queue.pop_front() {
                Some(message) => Poll::Ready(message),
                None => {
                    inner.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timer::tests::poll_once;

    #[test]
    fn messages_arrive_in_order() {
        let mailbox = Mailbox::new();
        assert!(poll_once(mailbox.recv()).is_pending());
        mailbox.post(1);
        mailbox.clone().post(2);
        assert_eq!(poll_once(mailbox.recv()), Poll::Ready(1));
        assert_eq!(mailbox.try_recv(), Some(2));
        assert_eq!(mailbox.try_recv(), None);
    }
}
