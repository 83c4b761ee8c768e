//! The few places an account keeps for connections of one kind between their upgrade and their
//! hello. Anyone on the machine can open a local hub's `/browser`, so the places bound what
//! unproven connections hold; and since anyone can also take them, a place held by a connection
//! that has not finished its first message can be taken over by a newcomer. A real peer sends
//! its first message as soon as its socket opens (a challenge or a hello, within milliseconds)
//! and is then never evicted; a silent or dribbling one is, oldest first, once it has been
//! silent for [`GRACE`], which is ample time to say it. So a few silent sockets cannot keep a
//! browser out.
//!
//! A crowd can: a process reopening many sockets the moment each is closed takes every place
//! that comes free before a browser's one connection does, whatever the order. What tells the
//! browser from such a process is who runs it: in local mode the hub's own user runs the
//! browser, and another user's process is no peer of this hub (it holds no pairing). So where
//! the hub can tell (`crate::loopback_user`, Linux), a connection of its own user takes the place
//! of the oldest connection of another user, spoken or not, and another user's connections never
//! take a place from the hub's user.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// How long a new connection keeps its place, spoken or not. Without it, a crowd of silent
/// sockets reopened as soon as they are evicted would evict each other in turn, and the
/// browser's connection with them before it could speak.
pub const GRACE: Duration = Duration::from_millis(500);

/// Who opened a connection, as far as the hub can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// The hub's own user (local mode, told by the kernel).
    Own,
    /// Another user of the machine.
    Stranger,
    /// Not told (hosted mode, or a system without the kernel's tables).
    Unknown,
}

/// An account's places of one kind.
pub struct HandshakePlaces {
    capacity: usize,
    grace: Duration,
    held: Arc<Mutex<Held>>,
}

#[derive(Default)]
struct Held {
    /// Numbers the places handed out, oldest first.
    next: u64,
    /// The places taken, in the order they were (so the first silent one is the oldest).
    places: Vec<Holder>,
}

struct Holder {
    number: u64,
    standing: Standing,
    /// When the place was taken.
    since: Instant,
    /// Whether the connection sent its first message whole (it can then no longer be evicted).
    spoke: bool,
    /// Tells the connection it was evicted.
    evict: Option<oneshot::Sender<()>>,
}

/// A place taken: given back when dropped.
pub struct Place {
    number: u64,
    held: Arc<Mutex<Held>>,
    evicted: Option<oneshot::Receiver<()>>,
}

/// Resolves when a newcomer took the place it came from ([`Place::eviction`]).
pub struct Eviction(oneshot::Receiver<()>);

impl Eviction {
    /// Waits for the eviction; forever if it never comes.
    pub async fn wait(self) {
        if self.0.await.is_err() {
            // The place was given back without an eviction.
            std::future::pending::<()>().await;
        }
    }
}

impl HandshakePlaces {
    /// `capacity` places.
    pub fn new(capacity: usize) -> HandshakePlaces {
        HandshakePlaces::with_grace(capacity, GRACE)
    }

    fn with_grace(capacity: usize, grace: Duration) -> HandshakePlaces {
        HandshakePlaces {
            capacity,
            grace,
            held: Arc::default(),
        }
    }

    /// A place for a connection of `standing`. When all are held: for the hub's own user, the
    /// place of the oldest connection of another user; otherwise (or when there is none) the
    /// place of the oldest connection silent past the grace that the newcomer may take (never
    /// one of the hub's own user's for another user's); none when there is no such place.
    pub fn take(&self, standing: Standing) -> Option<Place> {
        let mut held = self.held.lock().unwrap();
        let now = Instant::now();
        if held.places.len() >= self.capacity {
            let stranger = (standing == Standing::Own)
                .then(|| {
                    held.places
                        .iter()
                        .position(|holder| holder.standing == Standing::Stranger)
                })
                .flatten();
            let silent = || {
                held.places.iter().position(|holder| {
                    !holder.spoke
                        && now.duration_since(holder.since) >= self.grace
                        && (standing == Standing::Own || holder.standing != Standing::Own)
                })
            };
            let at = stranger.or_else(silent)?;
            let holder = held.places.remove(at);
            if let Some(evict) = holder.evict {
                let _ = evict.send(());
            }
        }
        let (evict, evicted) = oneshot::channel();
        let number = held.next;
        held.next += 1;
        held.places.push(Holder {
            number,
            standing,
            since: now,
            spoke: false,
            evict: Some(evict),
        });
        Some(Place {
            number,
            held: self.held.clone(),
            evicted: Some(evicted),
        })
    }

    /// How many places are held now.
    #[cfg(test)]
    fn taken(&self) -> usize {
        self.held.lock().unwrap().places.len()
    }
}

impl Place {
    /// The connection sent its first message whole: it keeps its place until its handshake
    /// ends (which its own deadline bounds).
    pub fn spoke(&self) {
        let mut held = self.held.lock().unwrap();
        if let Some(holder) = held.places.iter_mut().find(|h| h.number == self.number) {
            holder.spoke = true;
        }
    }

    /// What tells the connection it lost this place to a newcomer (taken once).
    pub fn eviction(&mut self) -> Option<Eviction> {
        self.evicted.take().map(Eviction)
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut held = self.held.lock().unwrap();
        held.places.retain(|holder| holder.number != self.number);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    fn is_evicted(place: &mut Place) -> bool {
        let receiver = place.evicted.as_mut().unwrap();
        let mut future = pin!(receiver);
        matches!(
            future
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop())),
            Poll::Ready(Ok(()))
        )
    }

    #[test]
    fn a_newcomer_takes_the_place_of_the_oldest_silent_connection_never_of_one_that_spoke() {
        let places = HandshakePlaces::with_grace(2, Duration::ZERO);
        let mut browser = places.take(Standing::Unknown).unwrap();
        let mut silent = places.take(Standing::Unknown).unwrap();
        browser.spoke();
        // Full: the newcomer takes the silent connection's place, not the browser's.
        let mut newcomer = places.take(Standing::Unknown).unwrap();
        assert!(is_evicted(&mut silent));
        assert!(!is_evicted(&mut browser));
        assert_eq!(places.taken(), 2);
        // The evicted connection going away frees nothing twice.
        drop(silent);
        assert_eq!(places.taken(), 2);
        // Once everyone spoke, a newcomer is refused.
        newcomer.spoke();
        assert!(places.take(Standing::Unknown).is_none());
        assert!(!is_evicted(&mut newcomer));
        // A place is given back when its connection ends.
        drop(browser);
        assert!(places.take(Standing::Unknown).is_some());
    }

    #[test]
    fn silent_connections_are_evicted_oldest_first() {
        let places = HandshakePlaces::with_grace(3, Duration::ZERO);
        let mut held: Vec<Place> = (0..3)
            .map(|_| places.take(Standing::Unknown).unwrap())
            .collect();
        let _first = places.take(Standing::Unknown).unwrap();
        assert!(is_evicted(&mut held[0]));
        assert!(!is_evicted(&mut held[1]));
        let _second = places.take(Standing::Unknown).unwrap();
        assert!(is_evicted(&mut held[1]));
        assert!(!is_evicted(&mut held[2]));
    }

    #[test]
    fn a_new_connection_keeps_its_place_for_the_grace_even_silent() {
        let places = HandshakePlaces::with_grace(1, Duration::from_secs(3600));
        let mut young = places.take(Standing::Unknown).unwrap();
        assert!(places.take(Standing::Unknown).is_none());
        assert!(!is_evicted(&mut young));
    }

    #[test]
    fn the_hubs_own_user_takes_places_from_other_users_and_never_the_reverse() {
        let places = HandshakePlaces::with_grace(2, Duration::from_secs(3600));
        let mut speaker = places.take(Standing::Stranger).unwrap();
        speaker.spoke();
        let mut young = places.take(Standing::Stranger).unwrap();
        // Full of another user's connections, one spoken, one in its grace: the hub's user
        // takes the oldest's place all the same, then the other's.
        let mut browser = places.take(Standing::Own).unwrap();
        assert!(is_evicted(&mut speaker));
        let mut second = places.take(Standing::Own).unwrap();
        assert!(is_evicted(&mut young));
        // Now another user's newcomer finds nothing it may take, even past the grace.
        assert!(places.take(Standing::Stranger).is_none());
        assert!(places.take(Standing::Unknown).is_none());
        let places = HandshakePlaces::with_grace(1, Duration::ZERO);
        let mut own = places.take(Standing::Own).unwrap();
        assert!(places.take(Standing::Stranger).is_none());
        assert!(!is_evicted(&mut own));
        assert!(!is_evicted(&mut browser));
        assert!(!is_evicted(&mut second));
    }
}
