//! Runs a target's inputs: each under `catch_unwind` (a panic is a finding, with the input that
//! caused it), timed in the thread's CPU time, so a busy machine does not make an input look
//! slow (the slowest input is reported, and one past the per-input budget is a hang), on a thread with tokio's worker stack size (2 MiB), so a recursion that would overflow
//! a hub worker overflows here too. A watchdog thread ends the process with the input that
//! never finished, since a real infinite loop cannot be caught.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use crate::rng::Rng;

/// One decoder under test: makes inputs from its samples and feeds them to the real entry point.
pub trait Harness {
    /// The next input.
    fn generate(&mut self, rng: &mut Rng) -> String;
    /// Feeds `input` to the decoder and checks what must hold of any answer; panics otherwise.
    fn run(&mut self, input: &str);
}

/// A fuzz target: its name (what `--target` takes), what it feeds, and how to make it.
pub struct Target {
    /// The name, e.g. `peer-message-browser`.
    pub name: &'static str,
    /// The entry point it calls, for the docs and the bench's listing.
    pub entry: &'static str,
    /// Builds the harness (samples, keys, a runtime).
    pub build: fn() -> Box<dyn Harness>,
}

/// An input that panicked or ran past the budget.
#[derive(Debug, Clone)]
pub struct Finding {
    /// Which input of the run (0-based), replayed with the same seed.
    pub index: u64,
    /// The input itself.
    pub input: String,
    /// The panic's message, or how long it ran.
    pub what: String,
}

/// What a run of one target found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The target's name.
    pub name: &'static str,
    /// Inputs run.
    pub inputs: u64,
    /// Inputs that panicked (the first few are kept whole).
    pub panics: Vec<Finding>,
    /// How many panicked in all.
    pub panic_count: u64,
    /// Inputs that ran past the per-input budget (the first few are kept whole).
    pub hangs: Vec<Finding>,
    /// How many ran past it in all.
    pub hang_count: u64,
    /// The slowest input's time (the fuzzing thread's CPU time).
    pub slowest: Duration,
    /// The slowest input's length.
    pub slowest_len: usize,
    /// The whole run's time.
    pub elapsed: Duration,
}

impl Report {
    /// Inputs per second.
    pub fn rate(&self) -> f64 {
        self.inputs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// How a run goes.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Inputs to run.
    pub inputs: u64,
    /// The generator's seed.
    pub seed: u64,
    /// An input that takes more CPU time is a hang (reported, the run goes on).
    pub budget: Duration,
    /// An input still running after this ends the process (an infinite loop).
    pub stuck: Duration,
}

const KEPT_FINDINGS: usize = 5;

/// The calling thread's CPU time: what an input costs, without the time the thread waited for
/// a core on a shared machine (the watchdog, which looks for inputs that never end, uses the
/// wall clock).
fn thread_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec for the call to write.
    let result = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if result != 0 {
        return Duration::ZERO;
    }
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}
/// Tokio's default worker thread stack.
const STACK: usize = 2 * 1024 * 1024;

thread_local! {
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}
static QUIET: AtomicBool = AtomicBool::new(false);

/// Panics on fuzzing threads are recorded, not printed: the report shows them.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.load(Ordering::Relaxed)
                && std::thread::current()
                    .name()
                    .is_some_and(|name| name.starts_with("fuzz-"))
            {
                let at = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                let message = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".to_owned());
                LAST_PANIC.with(|last| *last.borrow_mut() = Some(format!("{message}{at}")));
            } else {
                previous(info);
            }
        }));
        QUIET.store(true, Ordering::Relaxed);
    });
}

/// Runs `target` for `settings.inputs` inputs.
pub fn run(target: &Target, settings: Settings) -> Report {
    install_hook();
    let build = target.build;
    let name = target.name;
    // The input running now and when it started (0: none), for the watchdog.
    let current = Arc::new(Mutex::new(String::new()));
    let started = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let epoch = Instant::now();
    let watchdog = {
        let (current, started, done) = (current.clone(), started.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let at = started.load(Ordering::Relaxed);
                if at != 0
                    && epoch.elapsed().as_nanos() as u64 - at > settings.stuck.as_nanos() as u64
                {
                    let input = current.lock().map(|i| i.clone()).unwrap_or_default();
                    eprintln!(
                        "HANG: {name}: an input ran past {:?}; the process stops. Input ({} bytes): {:?}",
                        settings.stuck,
                        input.len(),
                        input.chars().take(4000).collect::<String>()
                    );
                    std::process::exit(3);
                }
            }
        })
    };
    let worker = std::thread::Builder::new()
        .name(format!("fuzz-{name}"))
        .stack_size(STACK)
        .spawn(move || {
            let mut harness = build();
            let mut rng = Rng::new(settings.seed);
            let mut report = Report {
                name,
                inputs: 0,
                panics: Vec::new(),
                panic_count: 0,
                hangs: Vec::new(),
                hang_count: 0,
                slowest: Duration::ZERO,
                slowest_len: 0,
                elapsed: Duration::ZERO,
            };
            let begun = Instant::now();
            for index in 0..settings.inputs {
                let input = harness.generate(&mut rng);
                current.lock().unwrap().clone_from(&input);
                let at = Instant::now();
                started.store((at - epoch).as_nanos().max(1) as u64, Ordering::Relaxed);
                let cpu = thread_cpu();
                let outcome = catch_unwind(AssertUnwindSafe(|| harness.run(&input)));
                let took = thread_cpu().saturating_sub(cpu);
                started.store(0, Ordering::Relaxed);
                report.inputs += 1;
                if took > report.slowest {
                    report.slowest = took;
                    report.slowest_len = input.len();
                }
                if outcome.is_err() {
                    report.panic_count += 1;
                    if report.panics.len() < KEPT_FINDINGS {
                        let what = LAST_PANIC
                            .with(|last| last.borrow_mut().take())
                            .unwrap_or_default();
                        report.panics.push(Finding {
                            index,
                            input: input.clone(),
                            what,
                        });
                    }
                    // A harness may hold state a panic left half-changed: start afresh.
                    harness = build();
                }
                if took > settings.budget {
                    report.hang_count += 1;
                    if report.hangs.len() < KEPT_FINDINGS {
                        report.hangs.push(Finding {
                            index,
                            input,
                            what: format!("took {took:?}"),
                        });
                    }
                }
            }
            report.elapsed = begun.elapsed();
            report
        })
        .expect("a fuzzing thread");
    let report = worker
        .join()
        .expect("the fuzzing thread catches its panics");
    done.store(true, Ordering::Relaxed);
    let _ = watchdog.join();
    report
}

/// Feeds one `input` to `target` (on a thread like the run's): its CPU time, and "ok" or the
/// panic's message. For replaying a finding and for the regression tests.
pub fn replay(target: &Target, input: &str) -> (Duration, String) {
    install_hook();
    let build = target.build;
    let input = input.to_owned();
    std::thread::Builder::new()
        .name(format!("fuzz-{}", target.name))
        .stack_size(STACK)
        .spawn(move || {
            let mut harness = build();
            let cpu = thread_cpu();
            let outcome = catch_unwind(AssertUnwindSafe(|| harness.run(&input)));
            let took = thread_cpu().saturating_sub(cpu);
            let what = match outcome {
                Ok(()) => "ok".to_owned(),
                Err(_) => LAST_PANIC
                    .with(|last| last.borrow_mut().take())
                    .unwrap_or_else(|| "a panic".to_owned()),
            };
            (took, what)
        })
        .expect("a fuzzing thread")
        .join()
        .expect("the fuzzing thread catches its panics")
}
