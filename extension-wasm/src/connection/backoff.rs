//! How long to wait before dialling the hub again after a connection fails.
//!
//! Exponential: 0.5 s doubling to a 10 s ceiling, with ±10 % jitter so that many browsers
//! behind one restarted hub do not reconnect in lockstep. Reset after a `Welcome`.
//!
//! A local hub whose handshake places were all taken ([`busy_retry_ms`]) is tried again within
//! a few seconds, whatever the backoff: the places are held by connections that say nothing
//! for 2 s at most, so a program that keeps taking them cannot keep the browser out for long.

/// The first delay.
pub const INITIAL_MS: f64 = 500.0;
/// The ceiling.
pub const MAX_MS: f64 = 10_000.0;
/// Jitter, as a fraction of the delay, either way.
const JITTER: f64 = 0.1;

/// Backoff state for one connection loop.
#[derive(Debug, Clone, Default)]
pub struct Backoff {
    failures: u32,
}

impl Backoff {
    /// Forgets past failures; the next delay is the initial one.
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// The delay before the next attempt. `random` is a number in `[0, 1)` (the caller passes
    /// `Math.random()`, so this stays a pure function).
    pub fn next_delay_ms(&mut self, random: f64) -> f64 {
        let base = (INITIAL_MS * 2f64.powi(self.failures.min(16) as i32)).min(MAX_MS);
        self.failures = self.failures.saturating_add(1);
        let jitter = (random.clamp(0.0, 1.0) * 2.0 - 1.0) * JITTER;
        (base * (1.0 + jitter)).round()
    }
}

/// The shortest wait after a busy hub, and how much longer a random draw may make it.
const BUSY_MIN_MS: f64 = 2_000.0;
const BUSY_SPREAD_MS: f64 = 3_000.0;

/// The wait after a local hub refused `LIMIT_EXCEEDED` before proving itself (its handshake
/// places were all taken): 2 to 5 s, spread by `random` (in `[0, 1)`) so that browsers turned
/// away together do not come back together.
pub fn busy_retry_ms(random: f64) -> f64 {
    (BUSY_MIN_MS + random.clamp(0.0, 1.0) * BUSY_SPREAD_MS).round()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_ceiling() {
        let mut backoff = Backoff::default();
        let delays: Vec<f64> = (0..8).map(|_| backoff.next_delay_ms(0.5)).collect();
        assert_eq!(
            delays,
            [
                500.0, 1000.0, 2000.0, 4000.0, 8000.0, 10000.0, 10000.0, 10000.0
            ]
        );
        backoff.reset();
        assert_eq!(backoff.next_delay_ms(0.5), 500.0);
    }

    #[test]
    fn jitter_stays_within_ten_percent() {
        let mut low = Backoff::default();
        let mut high = Backoff::default();
        assert_eq!(low.next_delay_ms(0.0), 450.0);
        assert_eq!(high.next_delay_ms(0.999_999), 550.0);
        let mut many = Backoff::default();
        for _ in 0..100 {
            assert!(many.next_delay_ms(1.0) <= MAX_MS * 1.1);
        }
    }

    #[test]
    fn a_busy_hub_is_tried_again_within_a_few_seconds() {
        assert_eq!(busy_retry_ms(0.0), 2_000.0);
        assert_eq!(busy_retry_ms(0.5), 3_500.0);
        assert!(busy_retry_ms(0.999_999) <= 5_000.0);
        assert_eq!(busy_retry_ms(7.0), 5_000.0);
    }
}
