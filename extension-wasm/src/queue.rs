//! Per-tab serialization (SPEC §6): operations on one tab run one at a time, in arrival order;
//! different tabs run concurrently.
//!
//! A request waits for its turn with [`admit`], whose future the request races against its
//! deadline: when the deadline wins, the future is dropped, which takes the request out of the
//! line (it never runs: `QUEUE_TIMEOUT`). The [`Permit`] an admitted request holds frees the
//! tab when dropped, however the request ends. The lanes also answer `get_tab_health`: what
//! runs, since when, against which deadline, and how many wait.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use tabwire_protocol::{ActiveWork, TabId};

use crate::timer::now_ms;

/// What a tab is running.
#[derive(Debug, Clone)]
struct Running {
    ticket: u64,
    tool: String,
    started: f64,
    deadline_ms: u64,
}

/// One tab's line.
#[derive(Default)]
struct Lane {
    running: Option<Running>,
    waiting: VecDeque<(u64, Option<Waker>)>,
}

impl Lane {
    fn wake_first(&mut self) {
        if let Some((_, Some(waker))) = self.waiting.front_mut() {
            waker.wake_by_ref();
        }
    }
}

#[derive(Default)]
struct Lanes {
    next_ticket: u64,
    lanes: HashMap<TabId, Lane>,
}

thread_local! {
    static LANES: RefCell<Lanes> = RefCell::new(Lanes::default());
}

/// Waits for `tab` to be free and takes it for `tool`.
pub fn admit(tab: TabId, tool: &str, deadline_ms: u64) -> Admission {
    let ticket = LANES.with(|lanes| {
        let mut lanes = lanes.borrow_mut();
        lanes.next_ticket += 1;
        let ticket = lanes.next_ticket;
        lanes
            .lanes
            .entry(tab)
            .or_default()
            .waiting
            .push_back((ticket, None));
        ticket
    });
    Admission {
        tab,
        ticket,
        tool: tool.to_owned(),
        deadline_ms,
        admitted: false,
    }
}

/// A request waiting in a tab's line; dropping it leaves the line.
pub struct Admission {
    tab: TabId,
    ticket: u64,
    tool: String,
    deadline_ms: u64,
    admitted: bool,
}

impl Future for Admission {
    type Output = Permit;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Permit> {
        let this = self.get_mut();
        LANES.with(|lanes| {
            let mut lanes = lanes.borrow_mut();
            let lane = lanes.lanes.entry(this.tab).or_default();
            let first = lane.waiting.front().map(|(ticket, _)| *ticket) == Some(this.ticket);
            if first && lane.running.is_none() {
                lane.waiting.pop_front();
                lane.running = Some(Running {
                    ticket: this.ticket,
                    tool: this.tool.clone(),
                    started: now_ms(),
                    deadline_ms: this.deadline_ms,
                });
                this.admitted = true;
                return Poll::Ready(Permit {
                    tab: this.tab,
                    ticket: this.ticket,
                });
            }
            if let Some(entry) = lane.waiting.iter_mut().find(|(t, _)| *t == this.ticket) {
                entry.1 = Some(cx.waker().clone());
            }
            Poll::Pending
        })
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        if self.admitted {
            return;
        }
        LANES.with(|lanes| {
            let mut lanes = lanes.borrow_mut();
            if let Some(lane) = lanes.lanes.get_mut(&self.tab) {
                lane.waiting.retain(|(ticket, _)| *ticket != self.ticket);
                // The one behind may now be first.
                if lane.running.is_none() {
                    lane.wake_first();
                }
            }
        });
    }
}

/// The right to run on a tab; frees it when dropped.
pub struct Permit {
    tab: TabId,
    ticket: u64,
}

impl Drop for Permit {
    fn drop(&mut self) {
        LANES.with(|lanes| {
            let mut lanes = lanes.borrow_mut();
            let Some(lane) = lanes.lanes.get_mut(&self.tab) else {
                return;
            };
            if lane.running.as_ref().map(|r| r.ticket) == Some(self.ticket) {
                lane.running = None;
            }
            lane.wake_first();
            if lane.running.is_none() && lane.waiting.is_empty() {
                lanes.lanes.remove(&self.tab);
            }
        });
    }
}

/// What runs in `tab` and how many operations wait behind it.
pub fn status(tab: TabId) -> (Option<ActiveWork>, u32) {
    LANES.with(|lanes| {
        let lanes = lanes.borrow();
        let Some(lane) = lanes.lanes.get(&tab) else {
            return (None, 0);
        };
        let active = lane.running.as_ref().map(|r| ActiveWork {
            tool: r.tool.clone(),
            elapsed_ms: (now_ms() - r.started).max(0.0) as u64,
            deadline_ms: r.deadline_ms,
        });
        (active, lane.waiting.len() as u32)
    })
}

/// Takes `tab` for `tool` if nothing runs or waits there; `None` otherwise.
pub fn try_admit(tab: TabId, tool: &str) -> Option<Permit> {
    if !is_idle(tab) {
        return None;
    }
    let mut admission = admit(tab, tool, 0);
    let waker = std::task::Waker::noop();
    match Pin::new(&mut admission).poll(&mut Context::from_waker(waker)) {
        Poll::Ready(permit) => Some(permit),
        Poll::Pending => None,
    }
}

/// Whether nothing runs or waits in `tab`.
pub fn is_idle(tab: TabId) -> bool {
    matches!(status(tab), (None, 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timer::tests::poll_once;

    #[test]
    fn one_at_a_time_in_arrival_order_per_tab() {
        let first = poll_once(admit(1, "a", 1000));
        let Poll::Ready(first) = first else {
            panic!("an idle tab admits at once");
        };
        let mut second = Box::pin(admit(1, "b", 1000));
        let mut third = Box::pin(admit(1, "c", 1000));
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert!(second.as_mut().poll(&mut cx).is_pending());
        assert!(third.as_mut().poll(&mut cx).is_pending());
        // Another tab is not held up.
        assert!(poll_once(admit(2, "d", 1000)).is_ready());
        let (active, queued) = status(1);
        assert_eq!(active.unwrap().tool, "a");
        assert_eq!(queued, 2);

        drop(first);
        // The third cannot overtake the second.
        assert!(third.as_mut().poll(&mut cx).is_pending());
        let Poll::Ready(second_permit) = second.as_mut().poll(&mut cx) else {
            panic!("the second is admitted once the first is done");
        };
        drop(second_permit);
        assert!(third.as_mut().poll(&mut cx).is_ready());
    }

    /// The shape `requests` gives a request: its turn and its work raced against the hub's
    /// cancel. A cancel takes a queued request out of the line, and frees the tab of a running
    /// one for the next in line, with nothing else to wait for.
    #[test]
    fn a_cancel_takes_a_request_out_of_the_line_or_frees_its_tab() {
        use crate::checkpoint::Cancels;
        use crate::timer::{Either, select};
        let cancels = Cancels::new();
        let request = |id: u64, tool: &'static str| {
            let registered = cancels.register(id);
            let cancel = registered.cancel().clone();
            let work = async move {
                let _permit = admit(11, tool, 60_000).await;
                std::future::pending::<()>().await;
            };
            (
                registered,
                Box::pin(select(work, async move { cancel.cancelled().await })),
            )
        };
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        let (_a, mut running) = request(1, "wait");
        let (_b, mut queued) = request(2, "click");
        let (_c, mut next) = request(3, "snapshot");
        assert!(running.as_mut().poll(&mut cx).is_pending());
        assert!(queued.as_mut().poll(&mut cx).is_pending());
        assert!(next.as_mut().poll(&mut cx).is_pending());
        assert_eq!(status(11).0.unwrap().tool, "wait");
        assert_eq!(status(11).1, 2);

        // The queued click is cancelled: it leaves the line and never runs.
        assert!(cancels.cancel(2));
        assert!(matches!(
            queued.as_mut().poll(&mut cx),
            Poll::Ready(Either::Right(()))
        ));
        drop(queued);
        assert_eq!(status(11).1, 1);
        assert_eq!(status(11).0.unwrap().tool, "wait", "the wait still runs");

        // The running wait is cancelled: the snapshot behind it runs at once.
        assert!(cancels.cancel(1));
        assert!(matches!(
            running.as_mut().poll(&mut cx),
            Poll::Ready(Either::Right(()))
        ));
        drop(running);
        assert!(next.as_mut().poll(&mut cx).is_pending());
        assert_eq!(status(11).0.unwrap().tool, "snapshot");
        assert_eq!(status(11).1, 0);
        drop(next);
        assert!(is_idle(11));
    }

    #[test]
    fn a_request_that_gives_up_leaves_the_line() {
        let Poll::Ready(first) = poll_once(admit(7, "a", 1000)) else {
            panic!("an idle tab admits at once");
        };
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut gives_up = Box::pin(admit(7, "b", 10));
        let mut patient = Box::pin(admit(7, "c", 1000));
        assert!(gives_up.as_mut().poll(&mut cx).is_pending());
        assert!(patient.as_mut().poll(&mut cx).is_pending());
        drop(gives_up);
        assert_eq!(status(7).1, 1);
        drop(first);
        assert!(patient.as_mut().poll(&mut cx).is_ready());
    }
}
