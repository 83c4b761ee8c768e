//! Time for a single-threaded wasm worker: the clock, sleeping, and racing two futures.
//!
//! The service worker has no async runtime beyond the browser's event loop, so deadlines are
//! built from `setTimeout` promises and a tiny [`select`]. [`select`] is plain Rust and is
//! unit-tested natively; [`sleep`] and [`now_ms`] need the browser.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;

use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

use crate::chrome;

/// Milliseconds since the Unix epoch (`Date.now()`: whole milliseconds in the worker).
pub fn now_ms() -> f64 {
    #[cfg(target_arch = "wasm32")]
    {
        js_sys::Date::now()
    }
    // Native unit tests have no JavaScript clock.
    #[cfg(not(target_arch = "wasm32"))]
    {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    }
}

/// The longest delay `setTimeout` honours; a longer one overflows and fires at once.
const MAX_TIMEOUT_MS: f64 = 2_147_483_647.0;

/// Completes after `ms` milliseconds (at most about 24.8 days). Dropping it early is fine: the
/// timer still fires, but nothing waits on it any more.
pub async fn sleep(ms: f64) {
    let ms = if ms.is_nan() {
        0.0
    } else {
        ms.clamp(0.0, MAX_TIMEOUT_MS)
    };
    let promise = js_sys::Promise::new(&mut |resolve, _reject| {
        chrome::set_timeout(&resolve, ms);
    });
    // A timer promise never rejects, so its result carries no information.
    let _: Result<JsValue, JsValue> = JsFuture::from(promise).await;
}

/// Which of two raced futures finished first.
#[derive(Debug, PartialEq, Eq)]
pub enum Either<A, B> {
    /// The first future.
    Left(A),
    /// The second future.
    Right(B),
}

/// Runs two futures until one of them finishes, then drops the other. When both are ready
/// in the same poll the first wins, so callers put the outcome they prefer first (a finished
/// result before a just-expired deadline).
pub async fn select<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let mut a = pin!(a);
    let mut b = pin!(b);
    poll_fn(|cx| {
        if let Poll::Ready(value) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(value));
        }
        if let Poll::Ready(value) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::Right(value));
        }
        Poll::Pending
    })
    .await
}

/// Runs two futures at once and completes with both outputs once both have finished: two
/// answers awaited together cost the slower one, not their sum.
pub async fn join<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let mut a = pin!(a);
    let mut b = pin!(b);
    let (mut left, mut right) = (None, None);
    poll_fn(|cx| {
        if left.is_none()
            && let Poll::Ready(value) = a.as_mut().poll(cx)
        {
            left = Some(value);
        }
        if right.is_none()
            && let Poll::Ready(value) = b.as_mut().poll(cx)
        {
            right = Some(value);
        }
        match (left.take(), right.take()) {
            (Some(l), Some(r)) => Poll::Ready((l, r)),
            (l, r) => {
                (left, right) = (l, r);
                Poll::Pending
            }
        }
    })
    .await
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::future::{pending, ready};
    use std::task::{Context, Waker};

    /// Polls a future once with a no-op waker; enough for futures that never wait on I/O.
    pub(crate) fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
        let mut future = pin!(future);
        future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn the_first_ready_future_wins() {
        assert_eq!(
            poll_once(select(ready(1), ready("b"))),
            Poll::Ready(Either::Left(1))
        );
        assert_eq!(
            poll_once(select(pending::<u8>(), ready("b"))),
            Poll::Ready(Either::Right("b"))
        );
        assert!(poll_once(select(pending::<u8>(), pending::<u8>())).is_pending());
    }

    #[test]
    fn a_join_waits_for_both_and_polls_each_to_its_end_once() {
        assert_eq!(poll_once(join(ready(1), ready("b"))), Poll::Ready((1, "b")));
        assert!(poll_once(join(pending::<u8>(), ready("b"))).is_pending());
        assert!(poll_once(join(ready(1), pending::<u8>())).is_pending());
        // A future that needs two polls: the finished one is not polled again meanwhile.
        let mut polls = 0;
        let mut twice = std::future::poll_fn(|cx| {
            polls += 1;
            if polls == 2 {
                Poll::Ready(polls)
            } else {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        });
        let mut joined = pin!(join(ready("a"), &mut twice));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(joined.as_mut().poll(&mut cx).is_pending());
        assert_eq!(joined.as_mut().poll(&mut cx), Poll::Ready(("a", 2)));
    }
}
