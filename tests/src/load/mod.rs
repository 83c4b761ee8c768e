//! The single-hub load run behind `bench-load` (and its short run in the end-to-end tests): the
//! real `tabwire-hub` in hosted mode on loopback, with tokens from its own `token issue`; N
//! simulated browsers ([`peers`]) spread over accounts, welcomed by the real handshake; M agent
//! sessions over MCP streamable HTTP ([`agents`]) calling `list_tabs` — the cheapest tool that
//! reaches a browser: one request, one answer, no tab queue — on the browsers of their own
//! account in turn, each session with a few calls in flight. Bounded in time and count;
//! everything it starts it stops (the hub by its PID, when [`HubProcess`] drops).
//!
//! What it reads of the hub comes from `/proc/PID`: resident memory (`VmRSS`) after start, with
//! the browsers connected and idle, and after the calls; and the CPU time the hub spent during
//! the calls (`utime + stime`), which says what a call costs the hub whatever else the machine
//! was doing.

pub mod agents;
pub mod cluster;
pub mod cluster_report;
mod hub;
pub mod pages;
pub mod peers;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

pub use hub::{HubProcess, Options, issue, issue_many, own_cpu_time, raise_open_files};

/// What a run does.
#[derive(Debug, Clone)]
pub struct Config {
    /// The `tabwire-hub` binary.
    pub hub: PathBuf,
    /// Simulated browsers.
    pub browsers: usize,
    /// Accounts they (and the sessions) are spread over.
    pub accounts: usize,
    /// Agent sessions.
    pub sessions: usize,
    /// Calls each session keeps in flight.
    pub in_flight: usize,
    /// How long the calls go on.
    pub duration: Duration,
    /// How long a browser takes to answer.
    pub delay: Duration,
    /// About how many bytes of JSON each answer carries.
    pub answer_bytes: usize,
}

impl Config {
    /// The figures' run: 1,000 browsers over 10 accounts, 20 sessions with 4 calls in flight
    /// each, 10 s, immediate answers of about 200 bytes.
    pub fn figures(hub: PathBuf) -> Config {
        Config {
            hub,
            browsers: 1000,
            accounts: 10,
            sessions: 20,
            in_flight: 4,
            duration: Duration::from_secs(10),
            delay: Duration::ZERO,
            answer_bytes: 200,
        }
    }

    /// The hub's limit flags this run needs: each account's browsers, sessions and calls at
    /// once, never below the defaults (8, 32, 32).
    pub fn limit_flags(&self) -> Vec<String> {
        let accounts = self.accounts.max(1);
        let browsers = self.browsers.div_ceil(accounts).max(8);
        let sessions = self.sessions.div_ceil(accounts).max(32);
        let requests = (self.sessions.div_ceil(accounts) * self.in_flight + 8).max(32);
        vec![
            "--max-browsers-per-account".into(),
            browsers.to_string(),
            "--max-sessions-per-account".into(),
            sessions.to_string(),
            "--max-requests-per-account".into(),
            requests.to_string(),
        ]
    }
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct Report {
    /// What was run.
    pub config: Config,
    /// The limit flags the hub was given.
    pub limit_flags: Vec<String>,
    /// Calls that succeeded during the timed phase.
    pub calls: u64,
    /// The timed phase's length.
    pub elapsed: Duration,
    /// Latency of each successful call, sorted.
    pub latencies: Vec<Duration>,
    /// The hub's `VmRSS` (KiB) after start, with every browser connected and idle, and after
    /// the calls.
    pub rss_kib: [u64; 3],
    /// CPU time the hub spent during the timed phase.
    pub hub_cpu: Duration,
    /// CPU time this process (the browsers and the agents) spent during it.
    pub own_cpu: Duration,
    /// Requests the simulated browsers answered (warm-up included).
    pub served: u64,
    /// Failed calls, refused or dropped connections, unexpected messages.
    pub errors: u64,
    /// The first few errors, one line each.
    pub error_samples: Vec<String>,
    /// Warnings the hub logged, and the first few.
    pub hub_warnings: u64,
    /// The first few of the hub's warnings.
    pub hub_warning_samples: Vec<String>,
    /// How long connecting the browsers took.
    pub connect_time: Duration,
    /// The share of a core the hub used with every browser connected and idle (heartbeats,
    /// each connection's credential check every second).
    pub idle_cores: f64,
}

impl Report {
    /// Successful calls per second of the timed phase.
    pub fn calls_per_second(&self) -> f64 {
        self.calls as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The `q` quantile of the latencies (0 when there were none).
    pub fn quantile(&self, q: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let index = ((self.latencies.len() - 1) as f64 * q).round() as usize;
        self.latencies[index]
    }

    /// Hub memory per idle browser connection, in KiB.
    pub fn kib_per_connection(&self) -> f64 {
        self.rss_kib[1].saturating_sub(self.rss_kib[0]) as f64 / self.config.browsers.max(1) as f64
    }

    /// The hub's CPU time per call, in microseconds.
    pub fn hub_cpu_per_call_us(&self) -> f64 {
        self.hub_cpu.as_secs_f64() * 1e6 / self.calls.max(1) as f64
    }

    /// This process's CPU time per call, in microseconds.
    pub fn own_cpu_per_call_us(&self) -> f64 {
        self.own_cpu.as_secs_f64() * 1e6 / self.calls.max(1) as f64
    }

    /// The figures as one Markdown table, with a few lines under it.
    pub fn table(&self) -> String {
        let c = &self.config;
        let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1e3);
        let mut out = String::new();
        out.push_str(
            "| browsers (accounts) | sessions × in flight | calls/s | p50 | p99 | hub CPU per call \
             | hub RSS start → connected → after calls | per idle browser connection | errors |\n",
        );
        out.push_str("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
        out.push_str(&format!(
            "| {} ({}) | {} × {} | {:.0} | {} | {} | {:.0} µs | {:.1} → {:.1} → {:.1} MiB | {:.1} KiB | {} |\n",
            c.browsers,
            c.accounts,
            c.sessions,
            c.in_flight,
            self.calls_per_second(),
            ms(self.quantile(0.5)),
            ms(self.quantile(0.99)),
            self.hub_cpu_per_call_us(),
            self.rss_kib[0] as f64 / 1024.0,
            self.rss_kib[1] as f64 / 1024.0,
            self.rss_kib[2] as f64 / 1024.0,
            self.kib_per_connection(),
            self.errors,
        ));
        out.push_str(&format!(
            "\n{} calls in {:.1} s (list_tabs, answers of {} bytes after {} ms); hub flags: {}\n",
            self.calls,
            self.elapsed.as_secs_f64(),
            peers::answer_result(c.answer_bytes).len(),
            c.delay.as_millis(),
            self.limit_flags.join(" "),
        ));
        out.push_str(&format!(
            "hub CPU {:.2} s = {:.2} cores busy, i.e. {:.0} calls/s per hub core; load tool CPU \
             {:.0} µs per call; {} browsers connected in {:.1} s, then idle the hub used {:.1} % \
             of a core; {} requests served; {} hub warnings\n",
            self.hub_cpu.as_secs_f64(),
            self.hub_cpu.as_secs_f64() / self.elapsed.as_secs_f64().max(1e-9),
            1e6 / self.hub_cpu_per_call_us().max(1e-9),
            self.own_cpu_per_call_us(),
            c.browsers,
            self.connect_time.as_secs_f64(),
            self.idle_cores * 100.0,
            self.served,
            self.hub_warnings,
        ));
        for sample in &self.error_samples {
            out.push_str(&format!("error: {sample}\n"));
        }
        for sample in &self.hub_warning_samples {
            out.push_str(&format!("hub: {sample}\n"));
        }
        out
    }
}

/// Errors kept with their first few lines.
#[derive(Default)]
struct Errors {
    count: u64,
    samples: Vec<String>,
}

impl Errors {
    fn note(&mut self, error: String) {
        self.count += 1;
        if self.samples.len() < 5 {
            self.samples.push(error);
        }
    }
}

/// Runs the whole thing: tokens, hub, browsers, sessions, calls; stops all it started.
pub async fn run(config: Config) -> anyhow::Result<Report> {
    hub::raise_open_files();
    // reqwest is built without a crypto provider (no aws-lc); plain HTTP needs none, but its
    // client builder asks for one.
    crate::hosted::install_crypto();
    let accounts = config.accounts.max(1);
    let dir = crate::scratch::Scratch::new("load");
    let auth_dir = dir.path().join("auth");
    let account = |n: usize| format!("load-{n}");
    // The secret is made by the first `token issue`; the others may then run side by side.
    let agent_tokens: Vec<String> = (0..accounts)
        .map(|n| hub::issue(&config.hub, &auth_dir, &account(n), "agent"))
        .collect::<Result<_, _>>()?;
    let browser_tokens = hub::issue_many(&config.hub, &auth_dir, config.browsers, |n| {
        account(n % accounts)
    })?;
    let limit_flags = config.limit_flags();
    let hub = HubProcess::start(&config.hub, &auth_dir, &limit_flags)?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_start = hub.rss_kib();

    // The browsers, a bounded number dialing at once.
    let behaviour = peers::Behaviour::new(config.delay, config.answer_bytes);
    let counts = Arc::new(peers::Counts::default());
    let errors = Arc::new(Mutex::new(Errors::default()));
    let started = Instant::now();
    let dialing = Arc::new(tokio::sync::Semaphore::new(64));
    let mut dials = Vec::new();
    for (n, token) in browser_tokens.into_iter().enumerate() {
        let (addr, host) = (hub.addr, hub.host.clone());
        let (behaviour, counts, dialing) = (behaviour.clone(), counts.clone(), dialing.clone());
        dials.push(tokio::spawn(async move {
            let _permit = dialing.acquire_owned().await;
            let browser_id = format!("load-browser-{n}");
            let dial = peers::Dial {
                addr,
                host: &host,
                token: &token,
                browser_id: &browser_id,
            };
            peers::connect(dial, behaviour, counts)
                .await
                .map(|peer| (n % accounts, browser_id, peer))
                .map_err(|error| format!("browser {n}: {error}"))
        }));
    }
    let mut peers = Vec::new();
    let mut by_account: Vec<Vec<String>> = vec![Vec::new(); accounts];
    for dial in dials {
        match dial.await? {
            Ok((account, id, peer)) => {
                by_account[account].push(id);
                peers.push(peer);
            }
            Err(error) => errors.lock().unwrap().note(error),
        }
    }
    let connect_time = started.elapsed();
    // Idle: only heartbeats and credential checks from here until the calls.
    let idle_cpu_before = hub.cpu_time();
    let idle_began = Instant::now();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle_cores = hub.cpu_time().saturating_sub(idle_cpu_before).as_secs_f64()
        / idle_began.elapsed().as_secs_f64();
    let rss_connected = hub.rss_kib();

    // The sessions, then one warm-up call from each caller, then the timed phase.
    let mut sessions = Vec::new();
    for n in 0..config.sessions {
        let account = n % accounts;
        match agents::Session::open(
            hub.addr,
            &hub.host,
            &agent_tokens[account],
            config.in_flight,
        )
        .await
        {
            Ok(session) => sessions.push((account, Arc::new(session))),
            Err(error) => errors.lock().unwrap().note(format!("session {n}: {error}")),
        }
    }
    let by_account = Arc::new(by_account);
    let deadline = Arc::new(Mutex::new(None::<Instant>));
    let barrier = Arc::new(tokio::sync::Barrier::new(
        sessions.len() * config.in_flight + 1,
    ));
    let mut callers = Vec::new();
    for (index, (account, session)) in sessions.iter().enumerate() {
        for slot in 0..config.in_flight {
            let (session, by_account) = (session.clone(), by_account.clone());
            let (deadline, barrier, errors) = (deadline.clone(), barrier.clone(), errors.clone());
            let account = *account;
            let offset = index * config.in_flight + slot;
            callers.push(tokio::spawn(async move {
                let browsers = &by_account[account];
                let mut latencies = Vec::new();
                let mut turn = offset;
                let mut next_browser = || {
                    turn += 1;
                    browsers.get(turn % browsers.len().max(1)).cloned()
                };
                if let Some(browser) = next_browser()
                    && let Err(error) = session
                        .call("list_tabs", json!({"browserId": browser}))
                        .await
                {
                    errors.lock().unwrap().note(format!("warm-up: {error}"));
                }
                barrier.wait().await;
                let Some(deadline) = *deadline.lock().unwrap() else {
                    return latencies;
                };
                while let Some(browser) = next_browser() {
                    let began = Instant::now();
                    if began >= deadline {
                        break;
                    }
                    match session
                        .call("list_tabs", json!({"browserId": browser}))
                        .await
                    {
                        Ok(()) => latencies.push(began.elapsed()),
                        Err(error) => errors.lock().unwrap().note(error),
                    }
                }
                latencies
            }));
        }
    }
    // Everyone warmed up: the clock starts.
    let hub_cpu_before = hub.cpu_time();
    let own_cpu_before = hub::own_cpu_time();
    let began = Instant::now();
    *deadline.lock().unwrap() = Some(began + config.duration);
    barrier.wait().await;
    let mut latencies = Vec::new();
    for caller in callers {
        latencies.extend(caller.await?);
    }
    let elapsed = began.elapsed();
    let hub_cpu = hub.cpu_time().saturating_sub(hub_cpu_before);
    let own_cpu = hub::own_cpu_time().saturating_sub(own_cpu_before);
    let rss_after = hub.rss_kib();
    for (_, session) in &sessions {
        session.close().await;
    }
    // Browsers that went away during the run are errors; those stopped now are not.
    let dropped = counts.dropped.load(Ordering::Relaxed);
    let unexpected = counts.unexpected.load(Ordering::Relaxed);
    for peer in &peers {
        peer.stop();
    }
    let hub_warnings = hub.warnings();
    let hub_warning_samples = hub.warning_samples();
    drop(hub);
    latencies.sort();
    let mut errors = std::mem::take(&mut *errors.lock().unwrap());
    if dropped > 0 {
        errors.note(format!(
            "{dropped} browser connections ended during the run"
        ));
        errors.count += dropped - 1;
    }
    if unexpected > 0 {
        errors.note(format!("{unexpected} unexpected messages to the browsers"));
        errors.count += unexpected - 1;
    }
    Ok(Report {
        calls: latencies.len() as u64,
        limit_flags,
        elapsed,
        latencies,
        rss_kib: [rss_start, rss_connected, rss_after],
        hub_cpu,
        own_cpu,
        served: counts.served.load(Ordering::Relaxed),
        errors: errors.count,
        error_samples: errors.samples,
        hub_warnings,
        hub_warning_samples,
        connect_time,
        idle_cores,
        config,
    })
}
