//! The replica run behind `bench-cluster`: a `nats-server` and 3 hosted `tabwire-hub --cluster`
//! replicas on loopback ([`crate::cluster::Replicas`]), N simulated browsers spread over them
//! (each a roaming browser that dials the next replica when its own dies, [`peers::Roam`]), and
//! agent sessions on every replica calling `create_tab` with a URL unique to each call, which
//! the browsers write in a [`peers::Journal`]: a URL seen twice is a call executed twice.
//!
//! Three scenarios, in this order, one after the other on the same replicas and browsers:
//! (a) steady calls to browsers on the caller's own replica, then to browsers on the others;
//! (c) nats-server killed and restarted mid-run; (b) one replica killed with `kill -9` mid-run.
//! Their figures come out as rows of one table ([`super::cluster_report`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use super::agents::{Outcome, Session};
pub use super::cluster_report::{CROSS, SAME};
use super::cluster_report::{Call, Phase, Report};
use super::peers::{self, Behaviour, Counts, Moves, Roam, Target};
use crate::cluster::{Replicas, Setup};

/// What a run does.
#[derive(Debug, Clone)]
pub struct Config {
    /// The `tabwire-hub` binary.
    pub hub: std::path::PathBuf,
    /// Replicas (at least 2; the figures use 3).
    pub replicas: usize,
    /// Simulated browsers, spread over the replicas and the accounts.
    pub browsers: usize,
    /// Accounts.
    pub accounts: usize,
    /// Calls each session keeps in flight.
    pub in_flight: usize,
    /// Each steady phase's length (the failure scenarios run about three of these).
    pub phase: Duration,
    /// How long a browser takes to answer.
    pub delay: Duration,
}

impl Config {
    /// The figures' run: 3 replicas, 300 browsers over 10 accounts, a session per account on
    /// every replica with 2 calls in flight, 5 s phases, answers after 5 ms.
    pub fn figures(hub: std::path::PathBuf) -> Config {
        Config {
            hub,
            replicas: 3,
            browsers: 300,
            accounts: 10,
            in_flight: 2,
            phase: Duration::from_secs(5),
            delay: Duration::from_millis(5),
        }
    }

    /// The run in a sentence, for the report.
    fn describe(&self) -> String {
        format!(
            "{} replicas + nats-server; {} simulated browsers over {} accounts; a session per \
             account on each replica, {} calls in flight each; create_tab with a unique URL per \
             call, answered after {} ms; {} s phases.",
            self.replicas,
            self.browsers,
            self.accounts,
            self.in_flight,
            self.delay.as_millis(),
            self.phase.as_secs(),
        )
    }

    /// The hub's limit flags: room for every browser of an account on one replica (after a
    /// failover), every session's calls and the reachability probes at once.
    fn limit_flags(&self) -> Vec<String> {
        let per_account = self.browsers.div_ceil(self.accounts).max(8);
        let sessions = self.replicas.max(32);
        let requests = (per_account + self.replicas * self.in_flight + 16).max(32);
        vec![
            "--max-browsers-per-account".into(),
            per_account.to_string(),
            "--max-sessions-per-account".into(),
            sessions.to_string(),
            "--max-requests-per-account".into(),
            requests.to_string(),
        ]
    }
}

/// A session, where it is, and whose.
struct Agent {
    replica: usize,
    account: usize,
    session: Session,
}

/// Everything the scenarios share.
struct World {
    config: Config,
    replicas: Replicas,
    agents: Vec<Arc<Agent>>,
    /// `browsers[account][replica]`: the browser IDs that connected there first.
    browsers: Vec<Vec<Vec<String>>>,
    /// Replicas killed so far (their sessions call no more).
    dead: Vec<Arc<AtomicBool>>,
    journal: Arc<peers::Journal>,
    counts: Arc<Counts>,
    moves: Arc<Moves>,
    _peers: Vec<peers::Peer>,
    /// Numbers the calls' URLs.
    next_key: Arc<AtomicU64>,
}

/// Runs the three scenarios; stops everything it started.
pub async fn run(config: Config) -> anyhow::Result<Report> {
    anyhow::ensure!(
        config.replicas >= 2,
        "a cluster run needs 2 replicas or more"
    );
    super::raise_open_files();
    crate::hosted::install_crypto();
    let mut world = World::start(config).await?;
    let mut report = Report::new(world.config.describe());

    // (a) Steady: the same calls to browsers on the caller's replica, then on the others.
    for name in [SAME, CROSS] {
        let phase = world.phase(name, world.config.phase).await;
        report.phases.push(phase);
    }

    // (c) nats-server killed after one phase, restarted after two, calls for four.
    let (phase, stopped, restarted) = world.nats_outage().await?;
    report.phases.push(phase);
    report.nats_stop = Some(stopped);
    report.nats_restart = Some(restarted);

    // (b) kill -9 of the first replica a third of the way in; reachability probes from then.
    let kill_at = world.config.phase;
    let killed: Arc<Mutex<Option<Instant>>> = Arc::default();
    let (phase, probes) = world.failover(kill_at, killed.clone()).await;
    report.phases.push(phase);
    report.kill = *killed.lock().unwrap();
    report.reachable = probes;
    report.moves = world.moves.all();

    report.duplicates = world.journal.duplicates();
    report.distinct_keys = world.journal.len();
    report.hub_warnings = world
        .replicas
        .hubs
        .iter()
        .flat_map(|hub| hub.warning_samples())
        .collect();
    report.unexpected = world.counts.unexpected.load(Ordering::Relaxed);
    for agent in &world.agents {
        if !world.dead[agent.replica].load(Ordering::Relaxed) {
            agent.session.close().await;
        }
    }
    Ok(report)
}

impl World {
    async fn start(config: Config) -> anyhow::Result<World> {
        let origin = format!("http://localhost:{}", crate::proxy::free_port());
        let replicas = Replicas::start(Setup {
            hub: config.hub.clone(),
            replicas: config.replicas,
            origin,
            flags: config.limit_flags(),
            log: "warn,tabwire_hub::cluster=info".to_owned(),
            forward_logs: false,
        })?;
        let accounts = config.accounts.max(1);
        let account = |n: usize| format!("cluster-{n}");
        let browser_tokens =
            super::issue_many(&config.hub, &replicas.auth_dir, config.browsers, |n| {
                account(n % accounts)
            })?;
        let targets: Arc<Vec<Target>> = Arc::new(
            replicas
                .hubs
                .iter()
                .map(|hub| Target {
                    addr: hub.addr,
                    host: hub.host.clone(),
                })
                .collect(),
        );
        let behaviour = Behaviour::new(config.delay, 200);
        let journal = behaviour.journal.clone();
        let counts = Arc::new(Counts::default());
        let moves = Arc::new(Moves::default());
        let mut browsers = vec![vec![Vec::new(); config.replicas]; accounts];
        let mut peers = Vec::new();
        let dialing = Arc::new(tokio::sync::Semaphore::new(32));
        let mut dials = Vec::new();
        for (n, token) in browser_tokens.into_iter().enumerate() {
            let roam = Roam {
                targets: targets.clone(),
                first: n % config.replicas,
                token,
                browser_id: format!("cluster-browser-{n}"),
            };
            let (behaviour, counts, moves) = (behaviour.clone(), counts.clone(), moves.clone());
            let dialing = dialing.clone();
            dials.push(tokio::spawn(async move {
                let _permit = dialing.acquire_owned().await;
                let id = roam.browser_id.clone();
                let peer = peers::connect_roaming(roam, behaviour, counts, moves).await;
                (n, id, peer)
            }));
        }
        for dial in dials {
            let (n, id, peer) = dial.await?;
            let peer = peer.map_err(|error| anyhow::anyhow!("browser {n}: {error}"))?;
            browsers[n % accounts][n % config.replicas].push(id);
            peers.push(peer);
        }
        let mut agents = Vec::new();
        for replica in 0..config.replicas {
            for account_n in 0..accounts {
                let token = replicas.issue(&account(account_n), "agent")?;
                let hub = &replicas.hubs[replica];
                let session = Session::open(hub.addr, &hub.host, &token, config.in_flight + 8)
                    .await
                    .map_err(|error| anyhow::anyhow!("session on n{}: {error}", replica + 1))?;
                agents.push(Arc::new(Agent {
                    replica,
                    account: account_n,
                    session,
                }));
            }
        }
        // Presence reaches every replica within its refresh (1 s).
        tokio::time::sleep(Duration::from_millis(1500)).await;
        Ok(World {
            dead: (0..config.replicas)
                .map(|_| Arc::new(AtomicBool::new(false)))
                .collect(),
            config,
            replicas,
            agents,
            browsers,
            journal,
            counts,
            moves,
            _peers: peers,
            next_key: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Runs every session's callers for `length` ([`World::callers`]).
    async fn phase(&self, name: &'static str, length: Duration) -> Phase {
        let began = Instant::now();
        let calls = join_calls(self.callers(name, began + length)).await;
        Phase::new(name, began, Instant::now(), calls)
    }

    /// Scenario (c): every session calls every browser of its account for four phases;
    /// nats-server is killed after the first and started again on its port after the second.
    async fn nats_outage(&mut self) -> anyhow::Result<(Phase, Instant, Instant)> {
        let name = "c: nats-server stopped";
        let began = Instant::now();
        let length = self.config.phase * 4;
        let calls = self.callers(name, began + length);
        tokio::time::sleep(self.config.phase).await;
        self.replicas.nats.stop();
        let stopped = Instant::now();
        tokio::time::sleep(self.config.phase).await;
        let restart = self.replicas.nats.restart();
        let restarted = Instant::now();
        let calls = join_calls(calls).await;
        restart?;
        Ok((
            Phase::new(name, began, Instant::now(), calls),
            stopped,
            restarted,
        ))
    }

    /// Starts every live session's callers until `deadline`: in [`SAME`] each calls the
    /// browsers of its account on its own replica, in [`CROSS`] those on the others, otherwise
    /// all of them in turn. Each call opens a tab at a URL no other call uses.
    fn callers(
        &self,
        name: &'static str,
        deadline: Instant,
    ) -> Vec<tokio::task::JoinHandle<Vec<Call>>> {
        let mut callers = Vec::new();
        for (index, agent) in self.agents.iter().enumerate() {
            if self.dead[agent.replica].load(Ordering::Relaxed) {
                continue;
            }
            let mine = &self.browsers[agent.account];
            let targets: Vec<(usize, String)> = (0..self.config.replicas)
                .filter(|&replica| match name {
                    SAME => replica == agent.replica,
                    CROSS => replica != agent.replica,
                    _ => true,
                })
                .flat_map(|replica| mine[replica].iter().map(move |id| (replica, id.clone())))
                .collect();
            if targets.is_empty() {
                continue;
            }
            let targets = Arc::new(targets);
            for slot in 0..self.config.in_flight {
                let (agent, targets) = (agent.clone(), targets.clone());
                let (dead, next_key) = (self.dead[agent.replica].clone(), self.next_key.clone());
                let phase = name.split(':').next().unwrap_or(name).to_owned();
                callers.push(tokio::spawn(async move {
                    let mut calls = Vec::new();
                    let mut turn = index * 7 + slot;
                    while Instant::now() < deadline && !dead.load(Ordering::Relaxed) {
                        turn += 1;
                        let (home, browser) = &targets[turn % targets.len()];
                        let key = next_key.fetch_add(1, Ordering::Relaxed);
                        let url = format!("https://load.example/{phase}/{key}");
                        let began = Instant::now();
                        let outcome = agent
                            .session
                            .outcome("create_tab", json!({"browserId": browser, "url": url}))
                            .await;
                        let ended = Instant::now();
                        let failed = outcome != Outcome::Done;
                        calls.push(Call {
                            caller: agent.replica,
                            target: *home,
                            began,
                            ended,
                            outcome,
                        });
                        if failed {
                            // No spinning on a replica or a browser that is not there.
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    }
                    calls
                }));
            }
        }
        callers
    }

    /// Scenario (b): every session calls every browser of its account; at `kill_at` the first
    /// replica is killed, and from then on one probe per browser it held calls `list_tabs` on
    /// that browser through the second replica until it answers.
    async fn failover(
        &mut self,
        kill_at: Duration,
        killed: Arc<Mutex<Option<Instant>>>,
    ) -> (Phase, Vec<(String, Option<Duration>)>) {
        let length = kill_at * 3;
        let began = Instant::now();
        let deadline = began + length;
        let calls = self.callers("b: kill -9 n1", deadline);
        tokio::time::sleep(kill_at).await;
        self.dead[0].store(true, Ordering::Relaxed);
        self.replicas.kill(0);
        let at = Instant::now();
        *killed.lock().unwrap() = Some(at);
        let mut probes = Vec::new();
        for (account, by_replica) in self.browsers.iter().enumerate() {
            let prober = self
                .agents
                .iter()
                .find(|agent| agent.replica == 1 && agent.account == account)
                .expect("a session per account on every replica")
                .clone();
            for browser in &by_replica[0] {
                let (prober, browser) = (prober.clone(), browser.clone());
                probes.push(tokio::spawn(async move {
                    let give_up = at + Duration::from_secs(30);
                    while Instant::now() < give_up {
                        let outcome = prober
                            .session
                            .outcome("list_tabs", json!({"browserId": browser}))
                            .await;
                        if outcome == Outcome::Done {
                            return (browser, Some(at.elapsed()));
                        }
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    (browser, None)
                }));
            }
        }
        let calls = join_calls(calls).await;
        let mut reachable = Vec::new();
        for probe in probes {
            if let Ok(result) = probe.await {
                reachable.push(result);
            }
        }
        let phase = Phase::new("b: kill -9 n1", began, Instant::now(), calls);
        (phase, reachable)
    }
}

async fn join_calls(callers: Vec<tokio::task::JoinHandle<Vec<Call>>>) -> Vec<Call> {
    let mut calls = Vec::new();
    for caller in callers {
        if let Ok(mine) = caller.await {
            calls.extend(mine);
        }
    }
    calls.sort_by_key(|call| call.began);
    calls
}
