//! The arithmetic every figure shares: timing a call over rounds, percentiles by nearest rank,
//! milliseconds and the token estimate.

use std::time::Duration;

use anyhow::Result;

use super::session::Exchange;

/// A figure, or why it is missing.
pub type Outcome<T> = Result<T, String>;

/// Size and latency of a server's plain snapshot of one page.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotFigures {
    /// Response bytes (of the last timed call; the page does not change between calls).
    pub bytes: usize,
    /// Characters of its text content.
    pub text_chars: usize,
    /// Median round trip, milliseconds.
    pub p50_ms: f64,
    /// 90th percentile round trip, milliseconds.
    pub p90_ms: f64,
    /// Timed calls.
    pub rounds: usize,
}

/// The token estimate used throughout: characters / 4, rounded down.
pub fn tokens(chars: usize) -> usize {
    chars / 4
}

/// One warm-up call, then `rounds` timed ones; returns the figures and the last answer.
pub async fn time_calls<F, Fut>(rounds: usize, mut call: F) -> Result<(SnapshotFigures, Exchange)>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Exchange>>,
{
    call().await?;
    let mut samples = Vec::with_capacity(rounds);
    let mut last = None;
    for _ in 0..rounds {
        let answer = call().await?;
        samples.push(answer.elapsed);
        last = Some(answer);
    }
    let last = last.expect("at least one round");
    samples.sort();
    let figures = SnapshotFigures {
        bytes: last.bytes,
        text_chars: last.text_chars(),
        p50_ms: millis(nearest_rank(&samples, 50)),
        p90_ms: millis(nearest_rank(&samples, 90)),
        rounds,
    };
    Ok((figures, last))
}

/// The `percent`th percentile of sorted `samples` by nearest rank.
pub fn nearest_rank(samples: &[Duration], percent: usize) -> Duration {
    let rank = (samples.len() * percent).div_ceil(100).max(1);
    samples[rank - 1]
}

/// A duration in (fractional) milliseconds.
pub fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// A duration as `1.23 ms`.
pub fn ms(duration: Duration) -> String {
    format!("{:.2} ms", millis(duration))
}

/// The median and 90th percentile of `samples` (sorted here), by nearest rank.
pub fn p50_p90(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort();
    (nearest_rank(samples, 50), nearest_rank(samples, 90))
}

/// Times one tool call of `client`; panics when it fails (a failing call measures nothing).
pub async fn timed_tool_call(
    client: &crate::McpClient,
    tool: &str,
    args: &serde_json::Value,
) -> Duration {
    let started = std::time::Instant::now();
    let reply = client.call(tool, args.clone()).await;
    let elapsed = started.elapsed();
    assert!(!reply.is_error, "{tool} failed: {}", reply.text);
    elapsed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let samples: Vec<Duration> = (1..=20).map(Duration::from_millis).collect();
        assert_eq!(nearest_rank(&samples, 50), Duration::from_millis(10));
        assert_eq!(nearest_rank(&samples, 90), Duration::from_millis(18));
        let two = [Duration::from_millis(1), Duration::from_millis(5)];
        assert_eq!(nearest_rank(&two, 50), Duration::from_millis(1));
        assert_eq!(nearest_rank(&two, 90), Duration::from_millis(5));
    }
}
