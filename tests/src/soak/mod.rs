//! The soak behind `bench-soak` (and its short run in the end-to-end tests): the load kit's
//! hosted hub ([`crate::load::HubProcess`], tokens from its own `token issue`), simulated
//! browsers spread over accounts ([`crate::load::peers`], answering snapshots, clicks, typing
//! and waits from [`crate::load::pages`]), and agent sessions over MCP streamable HTTP
//! ([`crate::load::agents`]) making a mixed workload ([`workload`]) for a set time, while one
//! browser after another disconnects and reconnects and sessions close and reopen. Every few
//! seconds it samples the hub: `VmRSS` and the count of `/proc/PID/fd`, with the interval's
//! calls, latencies and errors ([`report`]).
//!
//! Streamable HTTP only: the hosted hub has no Unix-socket MCP path for remote agents, and the
//! load kit has none.

pub mod report;
pub mod workload;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::load::agents::{Called, Session};
use crate::load::{HubProcess, peers};
use report::Interval;
pub use report::{Report, Sample};
use workload::{Kind, Rng};

/// What a soak does.
#[derive(Debug, Clone)]
pub struct Config {
    /// The `tabwire-hub` binary.
    pub hub: PathBuf,
    /// Agent sessions at once.
    pub sessions: usize,
    /// Simulated browsers.
    pub browsers: usize,
    /// Accounts the browsers and sessions are spread over.
    pub accounts: usize,
    /// How long the calls go on.
    pub duration: Duration,
    /// Time between samples.
    pub sample_every: Duration,
    /// Samples before this are warm-up: growth is counted from the first one after it.
    pub warmup: Duration,
    /// Time between two browsers' disconnections (one at a time, each back after a moment).
    pub flap_every: Duration,
    /// A session's pause between calls: random, up to twice this.
    pub think: Duration,
    /// How long a browser takes to answer.
    pub delay: Duration,
    /// One in this many calls a session closes its session and opens a new one first.
    pub reopen_one_in: u64,
}

impl Config {
    /// A run of `duration`: 50 sessions, 20 browsers over 5 accounts, a sample every 5 s (every
    /// 60 s from 10 minutes on), warm-up a sixth of the run (5 s to 60 s), a browser reconnecting
    /// every 10 s, sessions pausing 10 ms on average between calls, browsers answering in 1 ms,
    /// one call in 300 reopening its session.
    pub fn new(hub: PathBuf, duration: Duration) -> Config {
        let sample_every = if duration >= Duration::from_secs(600) {
            Duration::from_secs(60)
        } else {
            Duration::from_secs(5)
        };
        Config {
            hub,
            sessions: 50,
            browsers: 20,
            accounts: 5,
            duration,
            sample_every,
            warmup: (duration / 6).clamp(Duration::from_secs(5), Duration::from_secs(60)),
            flap_every: Duration::from_secs(10),
            think: Duration::from_millis(10),
            delay: Duration::from_millis(1),
            reopen_one_in: 300,
        }
    }

    /// The hub's limit flags: each account's browsers, and room for its sessions (with the
    /// ones being reopened) and their calls and cancels at once; never below the defaults.
    pub fn limit_flags(&self) -> Vec<String> {
        let accounts = self.accounts.max(1);
        let sessions = self.sessions.div_ceil(accounts);
        vec![
            "--max-browsers-per-account".into(),
            self.browsers.div_ceil(accounts).max(8).to_string(),
            "--max-sessions-per-account".into(),
            (sessions * 2 + 8).max(32).to_string(),
            "--max-requests-per-account".into(),
            (sessions * 3 + 8).max(32).to_string(),
        ]
    }
}

/// One simulated browser the run keeps connected (and disconnects now and then).
struct Slot {
    account: usize,
    id: String,
    token: String,
    peer: Mutex<Option<peers::Peer>>,
    /// Odd while the run has it disconnected; a call that sees it change or odd may find the
    /// browser gone.
    flaps: AtomicU64,
}

/// What every task of the run shares.
struct Shared {
    hub_addr: std::net::SocketAddr,
    hub_host: String,
    agent_tokens: Vec<String>,
    by_account: Vec<Vec<Arc<Slot>>>,
    config: Config,
    end: Instant,
    interval: Mutex<Interval>,
    errors: Mutex<BTreeMap<String, (u64, u64)>>,
    unexpected_samples: Mutex<Vec<String>>,
    run_errors: Mutex<Vec<String>>,
    reopened: AtomicU64,
    stopping: AtomicBool,
}

impl Shared {
    fn run_error(&self, error: String) {
        let mut errors = self.run_errors.lock().unwrap();
        if errors.len() < 20 {
            errors.push(error);
        }
    }

    /// Counts one call's end.
    fn note(&self, kind: Kind, called: &Called, flapped: bool) {
        let past = called.no_answer || called.took > kind.limit();
        let mut interval = self.interval.lock().unwrap();
        interval.calls += 1;
        interval.bytes += called.bytes as u64;
        if kind != Kind::CancelledWait {
            interval.latencies.push(called.took);
        }
        if past {
            interval.past_deadline += 1;
        }
        let Some(code) = &called.error else {
            if past {
                drop(interval);
                self.unexpected_line(kind, called, "answered past its deadline + grace");
            }
            return;
        };
        let expected = workload::expected(kind, code, flapped);
        *interval.errors.entry(code.clone()).or_default() += 1;
        if !expected {
            interval.unexpected += 1;
        }
        drop(interval);
        let mut errors = self.errors.lock().unwrap();
        let entry = errors.entry(code.clone()).or_default();
        entry.0 += 1;
        entry.1 += u64::from(expected);
        drop(errors);
        if !expected || past {
            self.unexpected_line(kind, called, code);
        }
    }

    fn unexpected_line(&self, kind: Kind, called: &Called, what: &str) {
        let mut samples = self.unexpected_samples.lock().unwrap();
        if samples.len() < 10 {
            samples.push(format!(
                "{} after {} ms (limit {} ms): {what} {}",
                kind.tool(),
                called.took.as_millis(),
                kind.limit().as_millis(),
                called.detail
            ));
        }
    }
}

/// Runs the soak: tokens, hub, browsers, sessions, the workload, the samples; stops everything
/// it started.
pub async fn run(config: Config) -> anyhow::Result<Report> {
    crate::load::raise_open_files();
    crate::hosted::install_crypto();
    let accounts = config.accounts.max(1);
    let dir = crate::scratch::Scratch::new("soak");
    let auth_dir = dir.path().join("auth");
    let account = |n: usize| format!("soak-{n}");
    let agent_tokens: Vec<String> = (0..accounts)
        .map(|n| crate::load::issue(&config.hub, &auth_dir, &account(n), "agent"))
        .collect::<Result<_, _>>()?;
    let browser_tokens = crate::load::issue_many(&config.hub, &auth_dir, config.browsers, |n| {
        account(n % accounts)
    })?;
    let hub = HubProcess::start(&config.hub, &auth_dir, &config.limit_flags())?;

    let behaviour = peers::Behaviour::new(config.delay, 600);
    let counts = Arc::new(peers::Counts::default());
    let mut by_account: Vec<Vec<Arc<Slot>>> = vec![Vec::new(); accounts];
    let mut slots = Vec::new();
    for (n, token) in browser_tokens.into_iter().enumerate() {
        let slot = Arc::new(Slot {
            account: n % accounts,
            id: format!("soak-browser-{n}"),
            token,
            peer: Mutex::new(None),
            flaps: AtomicU64::new(0),
        });
        let peer = connect(&hub.addr, &hub.host, &slot, &behaviour, &counts)
            .await
            .map_err(|error| anyhow::anyhow!("browser {n}: {error}"))?;
        *slot.peer.lock().unwrap() = Some(peer);
        by_account[slot.account].push(slot.clone());
        slots.push(slot);
    }

    let began = Instant::now();
    let shared = Arc::new(Shared {
        hub_addr: hub.addr,
        hub_host: hub.host.clone(),
        agent_tokens,
        by_account,
        end: began + config.duration,
        config: config.clone(),
        interval: Mutex::new(Interval::default()),
        errors: Mutex::new(BTreeMap::new()),
        unexpected_samples: Mutex::new(Vec::new()),
        run_errors: Mutex::new(Vec::new()),
        reopened: AtomicU64::new(0),
        stopping: AtomicBool::new(false),
    });
    let agents: Vec<_> = (0..config.sessions)
        .map(|n| tokio::spawn(agent(shared.clone(), n)))
        .collect();
    let flapper = tokio::spawn(flap(
        shared.clone(),
        slots.clone(),
        behaviour.clone(),
        counts.clone(),
    ));

    // The samples, until the end.
    let mut samples = Vec::new();
    let mut next = began + config.sample_every;
    loop {
        let at = next.min(shared.end);
        tokio::time::sleep_until(at.into()).await;
        let interval = std::mem::take(&mut *shared.interval.lock().unwrap());
        samples.push(Sample {
            at: at.duration_since(began),
            rss_kib: hub.rss_kib(),
            fds: hub.open_fds(),
            interval,
        });
        if at >= shared.end {
            break;
        }
        next += config.sample_every;
    }
    shared.stopping.store(true, Ordering::Relaxed);
    let flaps = flapper.await?;
    for agent in agents {
        agent.await?;
    }
    // Calls that ended after the last sample count in it.
    let rest = std::mem::take(&mut *shared.interval.lock().unwrap());
    if let Some(last) = samples.last_mut() {
        let i = &mut last.interval;
        i.calls += rest.calls;
        i.latencies.extend(rest.latencies);
        i.unexpected += rest.unexpected;
        i.past_deadline += rest.past_deadline;
        i.bytes += rest.bytes;
        for (code, n) in rest.errors {
            *i.errors.entry(code).or_default() += n;
        }
    }
    // Browsers that went away when the run did not take them are errors.
    let dropped = counts.dropped.load(Ordering::Relaxed);
    if dropped > 0 {
        shared.run_error(format!("{dropped} browser connections ended by the hub"));
    }
    let unexpected_messages = counts.unexpected.load(Ordering::Relaxed);
    if unexpected_messages > 0 {
        shared.run_error(format!(
            "{unexpected_messages} messages the simulated browsers did not expect"
        ));
    }
    for slot in &slots {
        slot.peer.lock().unwrap().take();
    }
    let hub_warnings = (hub.warnings(), hub.warning_samples());
    let setup = format!(
        "bench-soak: one hosted tabwire-hub on loopback (pid {}), {} simulated browsers over {} \
         accounts answering in {} ms, {} MCP sessions (streamable HTTP) pausing ~{} ms between \
         calls, {} s, a sample every {} s, warm-up {} s; hub flags: {}",
        hub.pid(),
        config.browsers,
        accounts,
        config.delay.as_millis(),
        config.sessions,
        config.think.as_millis(),
        config.duration.as_secs(),
        config.sample_every.as_secs(),
        config.warmup.as_secs(),
        config.limit_flags().join(" "),
    );
    drop(hub);
    Ok(Report {
        setup,
        samples,
        warmup: config.warmup,
        errors: std::mem::take(&mut *shared.errors.lock().unwrap()),
        unexpected_samples: std::mem::take(&mut *shared.unexpected_samples.lock().unwrap()),
        run_errors: std::mem::take(&mut *shared.run_errors.lock().unwrap()),
        cancels_at_browsers: counts.cancels.load(Ordering::Relaxed),
        flaps,
        reopened: shared.reopened.load(Ordering::Relaxed),
        hub_warnings,
    })
}

/// Connects `slot`'s browser (its token, its ID).
async fn connect(
    addr: &std::net::SocketAddr,
    host: &str,
    slot: &Slot,
    behaviour: &peers::Behaviour,
    counts: &Arc<peers::Counts>,
) -> Result<peers::Peer, String> {
    let dial = peers::Dial {
        addr: *addr,
        host,
        token: &slot.token,
        browser_id: &slot.id,
    };
    peers::connect(dial, behaviour.clone(), counts.clone()).await
}

/// One agent: opens its session, calls until the end, reopening now and then; closes it.
async fn agent(shared: Arc<Shared>, n: usize) {
    let config = &shared.config;
    let account = n % shared.agent_tokens.len();
    let browsers = &shared.by_account[account];
    let mut rng = Rng::new(n as u64 + 1);
    let open = || {
        Session::open_with_envelope(
            shared.hub_addr,
            &shared.hub_host,
            &shared.agent_tokens[account],
            // One idle connection kept: a cancel's second connection closes once it is idle,
            // so the hub's descriptors do not creep up as sessions make their first cancels.
            1,
        )
    };
    let mut session = None;
    let mut turn = 0u64;
    while Instant::now() < shared.end {
        if session.is_some() && rng.below(config.reopen_one_in) == 0 {
            if let Some(old) = session.take() {
                Session::close(&old).await;
            }
            shared.reopened.fetch_add(1, Ordering::Relaxed);
        }
        let current = match session.take() {
            Some(current) => current,
            None => match open().await {
                Ok(opened) => opened,
                Err(error) => {
                    shared.run_error(format!("session {n}: {error}"));
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            },
        };
        turn += 1;
        let kind = Kind::pick(rng.below(1000));
        let Some(slot) = browsers.get(rng.below(browsers.len() as u64) as usize) else {
            shared.run_error(format!("session {n}: its account has no browser"));
            session = Some(current);
            break;
        };
        let arguments = kind.arguments(&slot.id, turn);
        let flaps = slot.flaps.load(Ordering::Relaxed);
        let called = if kind == Kind::CancelledWait {
            let after = Duration::from_millis(100 + rng.below(200));
            current
                .call_and_cancel(kind.tool(), arguments, after, kind.limit())
                .await
        } else {
            // Past the limit the call is counted late whatever it brings; a few seconds more
            // tell a late answer from none.
            let wait = kind.limit() + Duration::from_secs(5);
            current.call_timed(kind.tool(), arguments, wait).await
        };
        let after = slot.flaps.load(Ordering::Relaxed);
        let flapped = flaps % 2 == 1 || after != flaps;
        shared.note(kind, &called, flapped && kind.reaches_browser());
        session = Some(current);
        let pause = config.think.mul_f64(rng.below(2000) as f64 / 1000.0);
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
    if let Some(session) = session {
        session.close().await;
    }
}

/// Every `flap_every`, the next browser disconnects (its socket dropped, as a killed browser's
/// would be) and connects again half a second later with the same token and ID. Returns how
/// many times it did.
async fn flap(
    shared: Arc<Shared>,
    slots: Vec<Arc<Slot>>,
    behaviour: peers::Behaviour,
    counts: Arc<peers::Counts>,
) -> u64 {
    let every = shared.config.flap_every;
    let mut flaps = 0u64;
    let mut next = Instant::now() + every;
    while !slots.is_empty() {
        tokio::time::sleep_until(next.into()).await;
        next += every;
        if shared.stopping.load(Ordering::Relaxed) || Instant::now() >= shared.end {
            return flaps;
        }
        let slot = &slots[flaps as usize % slots.len()];
        flaps += 1;
        slot.flaps.fetch_add(1, Ordering::Relaxed);
        if let Some(peer) = slot.peer.lock().unwrap().take() {
            peer.stop();
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut tries = 0;
        let peer = loop {
            match connect(
                &shared.hub_addr,
                &shared.hub_host,
                slot,
                &behaviour,
                &counts,
            )
            .await
            {
                Ok(peer) => break Some(peer),
                Err(error) if tries >= 20 => {
                    shared.run_error(format!("{} did not reconnect: {error}", slot.id));
                    break None;
                }
                Err(_) => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
        };
        *slot.peer.lock().unwrap() = peer;
        slot.flaps.fetch_add(1, Ordering::Relaxed);
    }
    flaps
}
