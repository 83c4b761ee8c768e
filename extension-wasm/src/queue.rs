//! Per-tab serialization (SPEC §6): operations on one tab run one at a time, in arrival order;
//! different tabs run concurrently.
//!
//! A request waits for its turn with [`admit`], whose future the request races against its
//! deadline: when the deadline wins, the future is dropped, which takes the request out of the
//! line (it never runs: `QUEUE_TIMEOUT`). The [`Permit`] an admitted request holds frees the
//! tab when dropped, however the request ends. The lanes also answer `get_tab_health`: what
//! runs, since when, against which deadline, and how many wait.
//!
//! A request that stops (cancelled, out of time, its connection gone) frees its tab at once,
//! but input it had already handed to Chrome (`input`: a run of keys, a drag's path, a press
//! and its release) goes on being delivered. Such a run holds the tab too, through its
//! [`Delivering`]: the next request is admitted only once it has ended, so its own input
//! never lands in the middle of the stopped one's (issue 23).

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
    /// Input runs Chrome is still delivering on the tab, whether or not their request still
    /// runs: while any is, nothing is admitted.
    delivering: u32,
}

impl Lane {
    /// Whether the first in line may start: nothing runs and no input is still landing.
    fn is_free(&self) -> bool {
        self.running.is_none() && self.delivering == 0
    }

    /// Whether the lane holds nothing at all (and can be forgotten).
    fn is_empty(&self) -> bool {
        self.is_free() && self.waiting.is_empty()
    }

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
    /// When agents' requests and input ran in each tab.
    acted: HashMap<TabId, Acted>,
}

/// When agents' requests and input ran in a tab: since when it is busy, and its last spans.
#[derive(Default)]
struct Acted {
    since: Option<f64>,
    spans: VecDeque<(f64, f64)>,
}

/// How many ended spans of agent work a tab remembers.
const SPANS_KEPT: usize = 16;
/// The clocks of a page and of the worker may differ by this much.
const CLOCK_SLACK_MS: f64 = 30.0;

impl Lanes {
    /// The tab became busy (a request admitted, an input run handed to Chrome).
    fn busy(&mut self, tab: TabId) {
        self.acted
            .entry(tab)
            .or_default()
            .since
            .get_or_insert_with(now_ms);
    }

    /// The tab became free: its span of agent work ends.
    fn free(&mut self, tab: TabId) {
        let acted = self.acted.entry(tab).or_default();
        if let Some(since) = acted.since.take() {
            acted.spans.push_back((since, now_ms()));
            if acted.spans.len() > SPANS_KEPT {
                acted.spans.pop_front();
            }
        }
    }
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
            if first && lane.is_free() {
                lane.waiting.pop_front();
                lane.running = Some(Running {
                    ticket: this.ticket,
                    tool: this.tool.clone(),
                    started: now_ms(),
                    deadline_ms: this.deadline_ms,
                });
                this.admitted = true;
                lanes.busy(this.tab);
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
                if lane.is_free() {
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
            // Input of this request still landing keeps the next one waiting (`Delivering`).
            let free = lane.is_free();
            if free {
                lane.wake_first();
            }
            if lane.is_empty() {
                lanes.lanes.remove(&self.tab);
            }
            if free {
                lanes.free(self.tab);
            }
        });
    }
}

/// Records that an input run on `tab` was handed to Chrome: the tab admits nobody until the
/// returned guard, which goes with the run, is dropped at its end.
pub fn delivering(tab: TabId) -> Delivering {
    LANES.with(|lanes| {
        let mut lanes = lanes.borrow_mut();
        lanes.lanes.entry(tab).or_default().delivering += 1;
        lanes.busy(tab);
    });
    Delivering { tab }
}

/// An input run Chrome is still delivering on a tab; dropping it lets the next request in.
pub struct Delivering {
    tab: TabId,
}

impl Drop for Delivering {
    fn drop(&mut self) {
        LANES.with(|lanes| {
            let mut lanes = lanes.borrow_mut();
            let Some(lane) = lanes.lanes.get_mut(&self.tab) else {
                return;
            };
            lane.delivering = lane.delivering.saturating_sub(1);
            let free = lane.is_free();
            if free {
                lane.wake_first();
            }
            if lane.is_empty() {
                lanes.lanes.remove(&self.tab);
            }
            if free {
                lanes.free(self.tab);
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

/// Whether an agent's request or input ran in `tab` at `at` (ms since the epoch, a page's
/// clock): input a page reports from then may be the agent's own (`recording`).
pub fn agent_acted_at(tab: TabId, at: f64) -> bool {
    LANES.with(|lanes| {
        lanes.borrow().acted.get(&tab).is_some_and(|acted| {
            acted
                .since
                .is_some_and(|since| at >= since - CLOCK_SLACK_MS)
                || acted
                    .spans
                    .iter()
                    .any(|(from, to)| at >= from - CLOCK_SLACK_MS && at <= to + CLOCK_SLACK_MS)
        })
    })
}

/// Whether nothing runs, waits or still lands in `tab`.
pub fn is_idle(tab: TabId) -> bool {
    LANES.with(|lanes| lanes.borrow().lanes.get(&tab).is_none_or(Lane::is_empty))
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

    /// A waker that records being woken.
    struct Flag(std::sync::atomic::AtomicBool);

    impl std::task::Wake for Flag {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    impl Flag {
        fn new() -> std::sync::Arc<Flag> {
            std::sync::Arc::new(Flag(std::sync::atomic::AtomicBool::new(false)))
        }

        fn take(&self) -> bool {
            self.0.swap(false, std::sync::atomic::Ordering::SeqCst)
        }
    }

    /// The admission rule (issue 23): a request that stopped frees its place, but the input it
    /// handed to Chrome still holds the tab; the next request is let in when that run ends.
    #[test]
    fn input_from_while_an_agent_acted_is_told_from_a_persons_afterwards() {
        let before = now_ms() - 1000.0;
        assert!(!agent_acted_at(31, before), "nothing ran yet");
        let Poll::Ready(permit) = poll_once(admit(31, "click_element", 1000)) else {
            panic!("an idle tab admits at once");
        };
        let during = now_ms();
        assert!(agent_acted_at(31, during));
        // Input it handed to Chrome outlives the request; the span ends with it.
        let landing = delivering(31);
        drop(permit);
        assert!(agent_acted_at(31, now_ms()));
        drop(landing);
        let ended = now_ms();
        assert!(
            agent_acted_at(31, during),
            "reported late, still the agent's"
        );
        assert!(!agent_acted_at(31, before), "a person's, from before");
        assert!(
            !agent_acted_at(31, ended + 1000.0),
            "a person's, from after"
        );
        assert!(!agent_acted_at(32, during), "another tab's");
    }

    #[test]
    fn input_still_landing_keeps_the_next_request_out_until_it_ends() {
        let Poll::Ready(typing) = poll_once(admit(21, "type_text", 1000)) else {
            panic!("an idle tab admits at once");
        };
        // A run of keys handed to Chrome, and one more (a press, then its release).
        let keys = delivering(21);
        let press = delivering(21);
        let flag = Flag::new();
        let waker = Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        let mut next = Box::pin(admit(21, "type_text", 1000));
        assert!(next.as_mut().poll(&mut cx).is_pending());

        // The typing is cancelled: its permit goes at once, its runs do not.
        drop(typing);
        assert!(
            next.as_mut().poll(&mut cx).is_pending(),
            "the keys still land"
        );
        assert!(!is_idle(21));
        assert!(try_admit(21, "get_tab_health").is_none());
        let (active, queued) = status(21);
        assert!(active.is_none());
        assert_eq!(queued, 1);
        flag.take();
        drop(keys);
        assert!(
            !flag.take(),
            "one run still lands: nobody is woken for nothing"
        );
        assert!(next.as_mut().poll(&mut cx).is_pending());

        // The last run ends: the next request is woken and admitted.
        drop(press);
        assert!(
            flag.take(),
            "the end of the last run wakes the first in line"
        );
        let Poll::Ready(permit) = next.as_mut().poll(&mut cx) else {
            panic!("admitted once the input has landed");
        };
        assert_eq!(status(21).0.unwrap().tool, "type_text");
        drop(permit);
        assert!(is_idle(21));

        // A run that ends while its request still runs lets nobody overtake that request.
        let Poll::Ready(clicking) = poll_once(admit(22, "click_element", 1000)) else {
            panic!("an idle tab admits at once");
        };
        let mut behind = Box::pin(admit(22, "snapshot", 1000));
        assert!(behind.as_mut().poll(&mut cx).is_pending());
        drop(delivering(22));
        assert!(behind.as_mut().poll(&mut cx).is_pending());
        drop(clicking);
        assert!(behind.as_mut().poll(&mut cx).is_ready());
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
