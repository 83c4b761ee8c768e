//! What the soak measured: one sample of the hub every few seconds (its memory, its open file
//! descriptors, the calls of the interval), and the verdict read from them — memory and
//! descriptors from the first sample after warm-up to the last, calls past their deadline,
//! failures the run did not cause.

use std::collections::BTreeMap;
use std::time::Duration;

/// How much the hub's descriptors may grow from the first sample after warm-up to the last.
/// A sample is taken under load, so it sees whatever is open at that moment: sessions between
/// closing and reopening (each with one or two HTTP connections), a cancel's extra connection,
/// a browser reconnecting. A leak of one descriptor per call, per session or per reconnect
/// passes this within seconds.
pub const FD_BOUND: u64 = 16;

/// How much the hub's resident memory may grow after warm-up: 16 MiB, or 25 % of the memory
/// it had then, whichever is more. Why so loose: the allocator keeps freed memory (glibc's
/// arenas, one per worker thread, hold the 150 KB answers' buffers), so RSS moves by megabytes
/// with the mix of answers in flight at the moment of a sample, and never returns to a floor.
/// What it catches is growth without end: a leak of 100 bytes per call at the 1-hour run's
/// rate grows hundreds of MiB, and the table shows its slope long before.
pub const RSS_FLOOR_KIB: u64 = 16 * 1024;
/// The share of the warm-up RSS the growth may reach when that is more than the floor.
pub const RSS_SHARE: f64 = 0.25;

/// The calls of one interval, summed.
#[derive(Debug, Default, Clone)]
pub struct Interval {
    /// Calls that ended (answered, failed or cancelled).
    pub calls: u64,
    /// Their latencies, cancelled waits left out (they end when the soak cancels them).
    pub latencies: Vec<Duration>,
    /// Failures by code.
    pub errors: BTreeMap<String, u64>,
    /// Failures the run did not cause.
    pub unexpected: u64,
    /// Calls that took longer than their deadline plus the hub's grace.
    pub past_deadline: u64,
    /// Answer bytes received.
    pub bytes: u64,
}

/// One sample of the hub.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Since the calls began.
    pub at: Duration,
    /// `VmRSS`, KiB.
    pub rss_kib: u64,
    /// Entries of `/proc/PID/fd`.
    pub fds: u64,
    /// The calls since the sample before.
    pub interval: Interval,
}

/// The soak's outcome.
#[derive(Debug, Clone)]
pub struct Report {
    /// The run's description, one line.
    pub setup: String,
    /// Every sample, in time order.
    pub samples: Vec<Sample>,
    /// How long the warm-up was.
    pub warmup: Duration,
    /// Failures by code over the run, and how many of each the run caused itself.
    pub errors: BTreeMap<String, (u64, u64)>,
    /// The first few unexpected failures, one line each.
    pub unexpected_samples: Vec<String>,
    /// Failures of the run's own machinery (a browser that could not reconnect, a session
    /// that could not reopen).
    pub run_errors: Vec<String>,
    /// Cancels that reached a browser while it held the request.
    pub cancels_at_browsers: u64,
    /// Browser disconnections the run made.
    pub flaps: u64,
    /// Sessions closed and opened again.
    pub reopened: u64,
    /// Warning lines the hub logged, and the first few.
    pub hub_warnings: (u64, Vec<String>),
}

/// One line of the verdict.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// What is judged.
    pub name: &'static str,
    /// Whether it held.
    pub ok: bool,
    /// The figures.
    pub line: String,
}

impl Report {
    /// Calls over the whole run.
    pub fn calls(&self) -> u64 {
        self.samples.iter().map(|s| s.interval.calls).sum()
    }

    /// Calls past their deadline plus the grace over the whole run.
    pub fn past_deadline(&self) -> u64 {
        self.samples.iter().map(|s| s.interval.past_deadline).sum()
    }

    /// Failures the run did not cause, over the whole run.
    pub fn unexpected(&self) -> u64 {
        self.samples.iter().map(|s| s.interval.unexpected).sum()
    }

    /// The first sample at or after the warm-up (the last one when the run was shorter), and
    /// the last.
    fn bounds(&self) -> Option<(&Sample, &Sample)> {
        let last = self.samples.last()?;
        let first = self
            .samples
            .iter()
            .find(|s| s.at >= self.warmup)
            .unwrap_or(last);
        Some((first, last))
    }

    /// Descriptor growth after warm-up, and whether it is within [`FD_BOUND`].
    pub fn fd_growth(&self) -> (i64, bool) {
        match self.bounds() {
            Some((first, last)) => {
                let growth = last.fds as i64 - first.fds as i64;
                (growth, growth <= FD_BOUND as i64)
            }
            None => (0, false),
        }
    }

    /// RSS growth after warm-up (KiB), its bound, and whether it held.
    pub fn rss_growth(&self) -> (i64, u64, bool) {
        match self.bounds() {
            Some((first, last)) => {
                let bound = RSS_FLOOR_KIB.max((first.rss_kib as f64 * RSS_SHARE) as u64);
                let growth = last.rss_kib as i64 - first.rss_kib as i64;
                (growth, bound, growth <= bound as i64)
            }
            None => (0, 0, false),
        }
    }

    /// Every verdict, in order.
    pub fn verdicts(&self) -> Vec<Verdict> {
        let mut verdicts = Vec::new();
        let Some((first, last)) = self.bounds() else {
            verdicts.push(Verdict {
                name: "samples",
                ok: false,
                line: "no sample was taken".into(),
            });
            return verdicts;
        };
        let (rss, rss_bound, rss_ok) = self.rss_growth();
        verdicts.push(Verdict {
            name: "RSS",
            ok: rss_ok,
            line: format!(
                "{:.1} MiB at {} s → {:.1} MiB at {} s: {rss:+} KiB ({:+.1} %), bound +{rss_bound} KiB",
                first.rss_kib as f64 / 1024.0,
                first.at.as_secs(),
                last.rss_kib as f64 / 1024.0,
                last.at.as_secs(),
                rss as f64 * 100.0 / first.rss_kib.max(1) as f64,
            ),
        });
        let (fds, fds_ok) = self.fd_growth();
        verdicts.push(Verdict {
            name: "fds",
            ok: fds_ok,
            line: format!("{} → {}: {fds:+}, bound +{FD_BOUND}", first.fds, last.fds),
        });
        let past = self.past_deadline();
        verdicts.push(Verdict {
            name: "calls past deadline + grace",
            ok: past == 0,
            line: format!("{past} of {}", self.calls()),
        });
        let unexpected = self.unexpected();
        verdicts.push(Verdict {
            name: "unexpected errors",
            ok: unexpected == 0,
            line: unexpected.to_string(),
        });
        verdicts.push(Verdict {
            name: "the run's own machinery",
            ok: self.run_errors.is_empty() && self.calls() > 0,
            line: if self.calls() == 0 {
                "no call completed".into()
            } else {
                format!("{} problems", self.run_errors.len())
            },
        });
        verdicts
    }

    /// The verdicts that failed, one line each.
    pub fn failures(&self) -> Vec<String> {
        self.verdicts()
            .into_iter()
            .filter(|v| !v.ok)
            .map(|v| format!("{}: {}", v.name, v.line))
            .collect()
    }

    /// The samples as a Markdown table, then the verdict block.
    pub fn text(&self) -> String {
        let ms = |d: Duration| format!("{:.1}", d.as_secs_f64() * 1e3);
        let mut out = format!("{}\n\n", self.setup);
        out.push_str(
            "| time | RSS MiB | fds | calls | calls/s | p50 ms | p99 ms | MB answered | errors (unexpected) | past deadline |\n",
        );
        out.push_str("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
        let mut before = Duration::ZERO;
        for sample in &self.samples {
            let i = &sample.interval;
            let mut latencies = i.latencies.clone();
            latencies.sort();
            let q = |q: f64| match latencies.len() {
                0 => Duration::ZERO,
                n => latencies[((n - 1) as f64 * q).round() as usize],
            };
            let seconds = sample.at.saturating_sub(before).as_secs_f64().max(1e-9);
            before = sample.at;
            let errors: u64 = i.errors.values().sum();
            out.push_str(&format!(
                "| {} s{} | {:.1} | {} | {} | {:.0} | {} | {} | {:.1} | {} ({}) | {} |\n",
                sample.at.as_secs(),
                if sample.at < self.warmup {
                    " (warm-up)"
                } else {
                    ""
                },
                sample.rss_kib as f64 / 1024.0,
                sample.fds,
                i.calls,
                i.calls as f64 / seconds,
                ms(q(0.5)),
                ms(q(0.99)),
                i.bytes as f64 / 1e6,
                errors,
                i.unexpected,
                i.past_deadline,
            ));
        }
        out.push_str("\nverdict (from the first sample after warm-up to the last):\n");
        for verdict in self.verdicts() {
            out.push_str(&format!(
                "  {:<4} {}: {}\n",
                if verdict.ok { "ok" } else { "FAIL" },
                verdict.name,
                verdict.line
            ));
        }
        let codes: Vec<String> = self
            .errors
            .iter()
            .map(|(code, (all, expected))| format!("{code} {all} ({expected} expected)"))
            .collect();
        out.push_str(&format!(
            "  errors by code: {}\n",
            if codes.is_empty() {
                "none".to_owned()
            } else {
                codes.join(", ")
            }
        ));
        out.push_str(&format!(
            "  {} browser reconnections, {} sessions closed and reopened, {} cancels reached a \
             browser holding the request, {} hub warnings\n",
            self.flaps, self.reopened, self.cancels_at_browsers, self.hub_warnings.0
        ));
        for line in &self.unexpected_samples {
            out.push_str(&format!("  unexpected: {line}\n"));
        }
        for line in &self.run_errors {
            out.push_str(&format!("  run: {line}\n"));
        }
        for line in &self.hub_warnings.1 {
            out.push_str(&format!("  hub: {line}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at: u64, rss_kib: u64, fds: u64) -> Sample {
        Sample {
            at: Duration::from_secs(at),
            rss_kib,
            fds,
            interval: Interval {
                calls: 10,
                ..Interval::default()
            },
        }
    }

    fn report(samples: Vec<Sample>) -> Report {
        Report {
            setup: String::new(),
            samples,
            warmup: Duration::from_secs(10),
            errors: BTreeMap::new(),
            unexpected_samples: Vec::new(),
            run_errors: Vec::new(),
            cancels_at_browsers: 0,
            flaps: 0,
            reopened: 0,
            hub_warnings: (0, Vec::new()),
        }
    }

    #[test]
    fn growth_is_read_from_the_first_sample_after_warm_up() {
        // The warm-up's own growth (10 → 40 MiB, 50 → 100 fds) does not count.
        let flat = report(vec![
            sample(5, 10 * 1024, 50),
            sample(10, 40 * 1024, 100),
            sample(20, 41 * 1024, 103),
        ]);
        assert!(flat.failures().is_empty(), "{:?}", flat.failures());
        assert_eq!(flat.fd_growth(), (3, true));
        let leaking = report(vec![
            sample(10, 40 * 1024, 100),
            sample(20, 60 * 1024, 100 + FD_BOUND + 1),
        ]);
        let failures = leaking.failures();
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(failures[0].starts_with("RSS"), "{failures:?}");
        assert!(failures[1].starts_with("fds"), "{failures:?}");
    }

    #[test]
    fn a_call_past_its_deadline_or_an_unexpected_error_fails_the_run() {
        let mut late = report(vec![sample(10, 1024, 10), sample(20, 1024, 10)]);
        late.samples[1].interval.past_deadline = 1;
        late.samples[1].interval.unexpected = 2;
        let failures = late.failures();
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(late.text().contains("FAIL calls past deadline"));
        assert!(report(Vec::new()).failures()[0].contains("no sample"));
    }
}
