//! Whether anyone uses the hub, for `--idle-exit`: a hub the `tabwire` CLI started for one
//! command must not run (with its launched browser) for ever after the last command, while a
//! hub a person started keeps running (its default is never to stop).
//!
//! Use is an open MCP session on the Unix socket: every tool call runs inside one, and an
//! agent's MCP client keeps its session open between calls, so a session that sits idle still
//! counts. Browsers and devices connecting do not: they wait for agents, they are not agents.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// The hub's sessions, counted, and when the count last changed.
#[derive(Debug)]
pub struct Usage {
    state: watch::Sender<Seen>,
}

#[derive(Debug, Clone, Copy)]
struct Seen {
    /// Sessions open now.
    open: usize,
    /// When a session last opened or closed (or the hub started).
    since: Instant,
}

impl Default for Usage {
    fn default() -> Self {
        Usage {
            state: watch::Sender::new(Seen {
                open: 0,
                since: Instant::now(),
            }),
        }
    }
}

impl Usage {
    /// Counts a session as open until the returned guard is dropped.
    pub fn enter(self: &Arc<Self>) -> InUse {
        self.state.send_modify(|seen| {
            seen.open += 1;
            seen.since = Instant::now();
        });
        InUse {
            usage: self.clone(),
        }
    }

    /// Completes once no session has been open for `after` (counted from the hub's start or
    /// the last session's end).
    pub async fn unused_for(&self, after: Duration) {
        let mut seen = self.state.subscribe();
        loop {
            let now = *seen.borrow_and_update();
            if now.open == 0 {
                tokio::select! {
                    () = tokio::time::sleep_until(now.since + after) => return,
                    changed = seen.changed() => if changed.is_err() { return },
                }
            } else if seen.changed().await.is_err() {
                return;
            }
        }
    }
}

/// An open session, counted while it lives.
#[derive(Debug)]
pub struct InUse {
    usage: Arc<Usage>,
}

impl Drop for InUse {
    fn drop(&mut self) {
        self.usage.state.send_modify(|seen| {
            seen.open -= 1;
            seen.since = Instant::now();
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Paused time: the waits below take no real time and cannot race.
    #[tokio::test(start_paused = true)]
    async fn unused_means_no_session_for_the_whole_time() {
        let usage = Arc::new(Usage::default());
        let idle = Duration::from_secs(1800);
        let started = Instant::now();
        usage.unused_for(idle).await;
        assert_eq!(started.elapsed(), idle, "no session since the start");

        // A session open for an hour holds the hub; the time counts from its end.
        let session = usage.enter();
        let waiting = usage.unused_for(idle);
        tokio::pin!(waiting);
        let held = tokio::time::timeout(Duration::from_secs(3600), &mut waiting).await;
        assert!(held.is_err(), "an open session, however idle, is use");
        let closed_at = Instant::now();
        drop(session);
        waiting.await;
        assert_eq!(closed_at.elapsed(), idle);

        // A session that comes and goes restarts the count.
        tokio::time::sleep(Duration::from_secs(600)).await;
        drop(usage.enter());
        let visited_at = Instant::now();
        let waiting = usage.unused_for(idle);
        tokio::pin!(waiting);
        assert!(
            tokio::time::timeout(idle - Duration::from_secs(1), &mut waiting)
                .await
                .is_err()
        );
        waiting.await;
        assert_eq!(visited_at.elapsed(), idle);
    }
}
