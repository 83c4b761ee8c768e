//! What `bench-cluster` measured ([`super::cluster`]), and its one table: a row per scenario
//! and part — calls, calls/s, p50/p99, the p50 added by crossing replicas, errors, failover and
//! recovery times, calls executed twice.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::agents::Outcome;
use super::peers::Moved;

/// Scenario (a)'s two phases: calls to browsers on the caller's own replica…
pub const SAME: &str = "a: same replica";
/// …and to browsers on the other replicas.
pub const CROSS: &str = "a: across replicas";

/// One call of a run.
#[derive(Debug, Clone)]
pub struct Call {
    /// The replica the agent's session is on.
    pub caller: usize,
    /// The replica the browser connected to first.
    pub target: usize,
    /// When it was sent.
    pub began: Instant,
    /// When its answer (or failure) came.
    pub ended: Instant,
    /// How it ended.
    pub outcome: Outcome,
}

impl Call {
    fn ok(&self) -> bool {
        self.outcome == Outcome::Done
    }

    fn took(&self) -> Duration {
        self.ended - self.began
    }

    fn crosses(&self) -> bool {
        self.caller != self.target
    }

    /// A line saying how it failed: the tool's code, or why there was no tool answer.
    fn failure(&self) -> String {
        match &self.outcome {
            Outcome::Done => "ok".to_owned(),
            Outcome::Refused {
                code,
                may_have_acted,
                text,
            } => {
                let acted = if *may_have_acted {
                    " (actionMayHaveOccurred)"
                } else {
                    ""
                };
                let text: String = text.chars().take(140).collect();
                format!("{code}{acted}: {}", any_browser(&text.replace('\n', " ")))
            }
            Outcome::Failed(why) => why.chars().take(140).collect(),
        }
    }
}

/// `text` with the number of every simulated browser's ID replaced by `N`, so that failures
/// that differ only by browser count as one.
fn any_browser(text: &str) -> String {
    const ID: &str = "cluster-browser-";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(ID) {
        out.push_str(&rest[..at + ID.len()]);
        out.push('N');
        rest = rest[at + ID.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

/// A phase of a run: its calls, sorted by when they began.
#[derive(Debug, Clone)]
pub struct Phase {
    /// Its name (`a: same replica`, …).
    pub name: &'static str,
    /// When it began and ended.
    pub began: Instant,
    /// See `began`.
    pub ended: Instant,
    /// Its calls.
    pub calls: Vec<Call>,
}

impl Phase {
    /// A phase of `calls`.
    pub fn new(name: &'static str, began: Instant, ended: Instant, calls: Vec<Call>) -> Phase {
        Phase {
            name,
            began,
            ended,
            calls,
        }
    }
}

/// Figures of a set of calls.
struct Figures {
    calls: usize,
    ok: usize,
    per_second: f64,
    p50: Duration,
    p99: Duration,
    failures: BTreeMap<String, usize>,
}

impl Figures {
    /// Of `calls`, over `span` (calls/s counts the successful ones).
    fn of<'a>(calls: impl IntoIterator<Item = &'a Call>, span: Duration) -> Figures {
        let mut latencies = Vec::new();
        let mut failures = BTreeMap::new();
        let mut count = 0;
        for call in calls {
            count += 1;
            if call.ok() {
                latencies.push(call.took());
            } else {
                *failures.entry(call.failure()).or_insert(0) += 1;
            }
        }
        latencies.sort();
        Figures {
            calls: count,
            ok: latencies.len(),
            per_second: latencies.len() as f64 / span.as_secs_f64().max(1e-9),
            p50: quantile(&latencies, 0.5),
            p99: quantile(&latencies, 0.99),
            failures,
        }
    }

    fn errors(&self) -> usize {
        self.calls - self.ok
    }
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// Everything a run measured.
#[derive(Debug, Clone)]
pub struct Report {
    /// What was run, in a sentence.
    pub setup: String,
    /// The phases, in the order they ran.
    pub phases: Vec<Phase>,
    /// When nats-server was killed, and started again.
    pub nats_stop: Option<Instant>,
    /// See `nats_stop`.
    pub nats_restart: Option<Instant>,
    /// When the first replica was killed.
    pub kill: Option<Instant>,
    /// For each browser the killed replica held: how long after the kill a call through
    /// another replica reached it (`None`: not within 30 s).
    pub reachable: Vec<(String, Option<Duration>)>,
    /// Every reconnection of a browser.
    pub moves: Vec<Moved>,
    /// URLs the browsers ran more than once.
    pub duplicates: Vec<(String, u32)>,
    /// Distinct URLs the browsers ran.
    pub distinct_keys: usize,
    /// The replicas' first warning lines.
    pub hub_warnings: Vec<String>,
    /// Messages the simulated browsers did not expect.
    pub unexpected: u64,
}

impl Report {
    /// An empty report of a run described by `setup`.
    pub fn new(setup: String) -> Report {
        Report {
            setup,
            phases: Vec::new(),
            nats_stop: None,
            nats_restart: None,
            kill: None,
            reachable: Vec::new(),
            moves: Vec::new(),
            duplicates: Vec::new(),
            distinct_keys: 0,
            hub_warnings: Vec::new(),
            unexpected: 0,
        }
    }

    fn phase(&self, prefix: &str) -> Option<&Phase> {
        self.phases.iter().find(|p| p.name.starts_with(prefix))
    }

    /// Calls of phase `letter` that ran twice.
    fn duplicates_of(&self, letter: &str) -> usize {
        let mark = format!("/{letter}/");
        self.duplicates
            .iter()
            .filter(|(url, _)| url.contains(&mark))
            .count()
    }

    /// The table and the notes under it.
    pub fn table(&self) -> String {
        let mut rows: Vec<[String; 9]> = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        let row = |name: &str, f: &Figures, added: String, failover: String, dups: String| {
            let latency = |d: Duration| if f.ok == 0 { "—".to_owned() } else { ms(d) };
            [
                name.to_owned(),
                f.calls.to_string(),
                format!("{:.0}", f.per_second),
                latency(f.p50),
                latency(f.p99),
                added,
                f.errors().to_string(),
                failover,
                dups,
            ]
        };
        let mut note_failures = |name: &str, f: &Figures| {
            for (failure, count) in f.failures.iter().take(4) {
                notes.push(format!("{name}: {count} × {failure}"));
            }
        };

        // (a)
        let same = self
            .phase(SAME)
            .map(|p| Figures::of(&p.calls, p.ended - p.began));
        if let Some(f) = &same {
            rows.push(row(
                SAME,
                f,
                "—".into(),
                "—".into(),
                self.duplicates_of("a").to_string(),
            ));
            note_failures(SAME, f);
        }
        if let Some(p) = self.phase(CROSS) {
            let f = Figures::of(&p.calls, p.ended - p.began);
            let added = same
                .as_ref()
                .map(|s| {
                    let delta = f.p50.as_secs_f64() - s.p50.as_secs_f64();
                    format!("{:+.2} ms", delta * 1e3)
                })
                .unwrap_or_default();
            rows.push(row(CROSS, &f, added, "—".into(), "(above)".into()));
            note_failures(CROSS, &f);
        }

        // (c)
        if let (Some(p), Some(stop), Some(restart)) =
            (self.phase("c:"), self.nats_stop, self.nats_restart)
        {
            let down = |call: &&Call| call.began >= stop && call.began < restart;
            let same_down = Figures::of(
                p.calls.iter().filter(down).filter(|c| !c.crosses()),
                restart - stop,
            );
            let name = "c: same replica, NATS down";
            rows.push(row(
                name,
                &same_down,
                "—".into(),
                "—".into(),
                self.duplicates_of("c").to_string(),
            ));
            note_failures(name, &same_down);
            let cross_down: Vec<&Call> = p
                .calls
                .iter()
                .filter(down)
                .filter(|c| c.crosses())
                .collect();
            let cross_f = Figures::of(cross_down.iter().copied(), restart - stop);
            let mut failed_after: Vec<Duration> = cross_down
                .iter()
                .filter(|c| !c.ok())
                .map(|c| c.took())
                .collect();
            failed_after.sort();
            let in_flight: Vec<&Call> = p
                .calls
                .iter()
                .filter(|c| c.crosses() && c.began < stop && c.ended > stop)
                .collect();
            let in_flight_failed = in_flight
                .iter()
                .filter(|c| !c.ok())
                .map(|c| c.ended - stop)
                .max();
            let failover = format!(
                "each failed after p50 {} / max {}; {} in flight at the stop: {} failed, the last {} after it",
                ms(quantile(&failed_after, 0.5)),
                ms(failed_after.last().copied().unwrap_or_default()),
                in_flight.len(),
                in_flight.iter().filter(|c| !c.ok()).count(),
                in_flight_failed.map(ms).unwrap_or_else(|| "—".into()),
            );
            let name = "c: across replicas, NATS down";
            rows.push(row(name, &cross_f, "—".into(), failover, "(above)".into()));
            note_failures(name, &cross_f);
            let after: Vec<&Call> = p.calls.iter().filter(|c| c.began >= restart).collect();
            let after_f = Figures::of(after.iter().copied(), p.ended - restart);
            let cross_after: Vec<&&Call> = after.iter().filter(|c| c.crosses()).collect();
            let first_ok = cross_after
                .iter()
                .find(|c| c.ok())
                .map(|c| c.ended - restart);
            let last_failure = cross_after
                .iter()
                .filter(|c| !c.ok())
                .map(|c| c.ended - restart)
                .max();
            let recovery = format!(
                "across replicas: first success {} after the restart, last failure {}",
                first_ok.map(secs).unwrap_or_else(|| "never".into()),
                last_failure
                    .map(|d| format!("{} after it", secs(d)))
                    .unwrap_or_else(|| "none".into()),
            );
            let name = "c: all, after the restart";
            rows.push(row(name, &after_f, "—".into(), recovery, "(above)".into()));
            note_failures(name, &after_f);
        }

        // (b)
        if let (Some(p), Some(kill)) = (self.phase("b:"), self.kill) {
            let in_flight: Vec<&Call> = p
                .calls
                .iter()
                .filter(|c| c.caller != 0 && c.target == 0 && c.began < kill && c.ended > kill)
                .collect();
            let f = Figures::of(in_flight.iter().copied(), p.ended - p.began);
            let mut failed_after: Vec<Duration> = in_flight
                .iter()
                .filter(|c| !c.ok())
                .map(|c| c.ended - kill)
                .collect();
            failed_after.sort();
            let failover = format!(
                "{} failed, p50 {} / max {} after the kill",
                failed_after.len(),
                ms(quantile(&failed_after, 0.5)),
                ms(failed_after.last().copied().unwrap_or_default()),
            );
            let name = "b: in flight to n1's browsers at the kill";
            rows.push(row(
                name,
                &f,
                "—".into(),
                failover,
                self.duplicates_of("b").to_string(),
            ));
            note_failures(name, &f);

            let moved: Vec<Duration> = self
                .moves
                .iter()
                .filter(|m| m.from == 0 && m.welcomed >= kill)
                .map(|m| m.welcomed - kill)
                .collect();
            let reached: Vec<Duration> = self.reachable.iter().filter_map(|(_, d)| *d).collect();
            let unreached = self.reachable.len() - reached.len();
            let to_n1 = Figures::of(
                p.calls
                    .iter()
                    .filter(|c| c.caller != 0 && c.target == 0 && c.began >= kill),
                p.ended - kill,
            );
            let reconnect = format!(
                "{} browsers reconnected within {}; a call reached each within {}{}",
                moved.len(),
                secs(moved.iter().max().copied().unwrap_or_default()),
                secs(reached.iter().max().copied().unwrap_or_default()),
                if unreached > 0 {
                    format!("; {unreached} NOT reached in 30 s")
                } else {
                    String::new()
                },
            );
            let name = "b: to n1's browsers after the kill";
            rows.push(row(name, &to_n1, "—".into(), reconnect, "(above)".into()));
            note_failures(name, &to_n1);

            let untouched = Figures::of(
                p.calls.iter().filter(|c| c.caller != 0 && c.target != 0),
                p.ended - p.began,
            );
            let name = "b: between the other replicas";
            rows.push(row(
                name,
                &untouched,
                "—".into(),
                "—".into(),
                "(above)".into(),
            ));
            note_failures(name, &untouched);
            let cut = p
                .calls
                .iter()
                .filter(|c| c.caller == 0 && c.ended >= kill && !c.ok())
                .count();
            notes.push(format!(
                "b: sessions on n1 itself: {cut} calls cut by the kill (a client opens a new \
                 session on another replica)"
            ));
        }

        let mut out = String::from(
            "| scenario | calls | calls/s | p50 | p99 | added p50 | errors | failover / recovery | run twice |\n\
             | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
        );
        for row in rows {
            out.push_str(&format!("| {} |\n", row.join(" | ")));
        }
        out.push_str(&format!(
            "\n{} {} distinct URLs run, {} run more than once; {} unexpected messages at the \
             browsers.\n",
            self.setup,
            self.distinct_keys,
            self.duplicates.len(),
            self.unexpected,
        ));
        for (url, times) in self.duplicates.iter().take(10) {
            out.push_str(&format!("RUN TWICE: {url} ran {times} times\n"));
        }
        for note in notes {
            out.push_str(&format!("{note}\n"));
        }
        for warning in self.hub_warnings.iter().take(6) {
            out.push_str(&format!("hub: {warning}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_that_differ_by_browser_only_read_the_same() {
        assert_eq!(
            any_browser("browser cluster-browser-12 (n1) and cluster-browser-3"),
            "browser cluster-browser-N (n1) and cluster-browser-N"
        );
        assert_eq!(any_browser("no browser here"), "no browser here");
    }
}
