//! The hub the load run measures: started in hosted mode on a free loopback port, read through
//! `/proc/PID`, killed by its PID when dropped; and the tokens it is given, from its own
//! `tabwire-hub token issue`.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use anyhow::{Context, bail};

/// How [`HubProcess::start_with`] starts a hub, beyond its flags.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--public-origin` (default `http://localhost:PORT`, its own port): replicas behind one
    /// balancer share the balancer's.
    pub public_origin: Option<String>,
    /// `TABWIRE_LOG` (default `warn`).
    pub log: Option<String>,
    /// A piece of a log line to wait for after the ready line (a replica's `joined nats://`).
    pub wait_for: Option<String>,
    /// Forward every log line to the test's output under this name.
    pub forward_as: Option<String>,
}

/// A running hosted hub.
pub struct HubProcess {
    child: Child,
    killed: bool,
    /// Where it listens.
    pub addr: SocketAddr,
    /// The `Host` of its public origin, `localhost:PORT`.
    pub host: String,
    warnings: Arc<AtomicU64>,
    warning_samples: Arc<Mutex<Vec<String>>>,
}

impl HubProcess {
    /// `HUB --host 127.0.0.1 --port P --auth-dir DIR --public-origin http://localhost:P
    /// FLAGS…`, logging warnings only (a log line per connection or call would be part of
    /// what is measured); waits for its ready line.
    pub fn start(program: &Path, auth_dir: &Path, flags: &[String]) -> anyhow::Result<Self> {
        HubProcess::start_with(program, auth_dir, flags, Options::default())
    }

    /// The same with [`Options`]. `host` is the public origin's host (and port).
    pub fn start_with(
        program: &Path,
        auth_dir: &Path,
        flags: &[String],
        options: Options,
    ) -> anyhow::Result<Self> {
        let port = crate::proxy::free_port();
        let origin = options
            .public_origin
            .clone()
            .unwrap_or_else(|| format!("http://localhost:{port}"));
        let host = origin
            .split_once("://")
            .map(|(_, rest)| rest.split('/').next().unwrap_or(rest))
            .unwrap_or(&origin)
            .to_owned();
        let mut child = Command::new(program)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .arg("--auth-dir")
            .arg(auth_dir)
            .args(["--public-origin", &origin])
            .args(flags)
            .env("TABWIRE_LOG", options.log.as_deref().unwrap_or("warn"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("start {}", program.display()))?;
        let stderr = child.stderr.take().expect("piped stderr");
        let warnings = Arc::new(AtomicU64::new(0));
        let warning_samples = Arc::new(Mutex::new(Vec::new()));
        let (ready_tx, ready) = mpsc::channel();
        let (joined_tx, joined) = mpsc::channel();
        {
            let (warnings, samples) = (warnings.clone(), warning_samples.clone());
            let (wait_for, forward_as) = (options.wait_for.clone(), options.forward_as.clone());
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Some(name) = &forward_as {
                        crate::logs::forward_log(name, &line);
                    }
                    if let Some(piece) = &wait_for
                        && line.contains(piece.as_str())
                    {
                        let _ = joined_tx.send(());
                    }
                    if let Some(rest) = line.strip_prefix("tabwire-hub listening http=") {
                        let _ = ready_tx.send(rest.to_owned());
                    } else if line.contains("WARN") || line.contains("ERROR") {
                        warnings.fetch_add(1, Ordering::Relaxed);
                        let mut samples = samples.lock().unwrap();
                        if samples.len() < 5 {
                            samples.push(line);
                        }
                    }
                }
            });
        }
        let mut hub = HubProcess {
            child,
            killed: false,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            host,
            warnings,
            warning_samples,
        };
        match ready.recv_timeout(Duration::from_secs(20)) {
            Ok(line) => {
                let addr = line.split_whitespace().next().unwrap_or_default();
                hub.addr = addr
                    .parse()
                    .with_context(|| format!("ready line: {line}"))?;
                if let Some(piece) = &options.wait_for
                    && joined.recv_timeout(Duration::from_secs(20)).is_err()
                {
                    bail!(
                        "the hub never logged {piece:?}; its warnings: {:?}",
                        hub.warning_samples.lock().unwrap()
                    );
                }
                Ok(hub)
            }
            Err(_) => {
                let status = hub.child.try_wait().ok().flatten();
                bail!(
                    "the hub printed no ready line (exit status {status:?}); its warnings: {:?}",
                    hub.warning_samples.lock().unwrap()
                )
            }
        }
    }

    /// Its resident memory, KiB (`VmRSS`).
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .unwrap_or(0)
    }

    /// Its process ID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How many file descriptors it has open (the entries of `/proc/PID/fd`); 0 when they
    /// cannot be read.
    pub fn open_fds(&self) -> u64 {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .map(|entries| entries.count() as u64)
            .unwrap_or(0)
    }

    /// The CPU time it has used, user and system (`/proc/PID/stat`).
    pub fn cpu_time(&self) -> Duration {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // The command name in parentheses may hold spaces: count fields after its end.
        let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
        let fields: Vec<&str> = after.split_whitespace().collect();
        // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
        let ticks: u64 = [11, 12]
            .iter()
            .filter_map(|&i| fields.get(i)?.parse::<u64>().ok())
            .sum();
        ticks_to_duration(ticks)
    }

    /// Warning and error lines it logged, and the first few.
    pub fn warnings(&self) -> u64 {
        self.warnings.load(Ordering::Relaxed)
    }

    /// The first few warning lines.
    pub fn warning_samples(&self) -> Vec<String> {
        self.warning_samples.lock().unwrap().clone()
    }
}

impl HubProcess {
    /// `kill -9` by its PID, then reaps it: sockets close as the kernel tears the process
    /// down, nothing of the hub's own runs.
    pub fn kill(&mut self) {
        if !self.killed {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.killed = true;
        }
    }

    /// Whether [`HubProcess::kill`] was called.
    pub fn is_killed(&self) -> bool {
        self.killed
    }
}

impl Drop for HubProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

fn ticks_to_duration(ticks: u64) -> Duration {
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_micros(ticks * 1_000_000 / per_second)
}

/// The CPU time this process has used, user and system.
pub fn own_cpu_time() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

/// Raises this process's open-file limit to its hard limit (the hub it starts inherits it): a
/// thousand browsers are a thousand sockets on each side.
pub fn raise_open_files() {
    // SAFETY: getrlimit and setrlimit read and write the struct they are given.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// `HUB token issue --auth-dir DIR --account A --role ROLE --ttl 1h`: the token.
pub fn issue(program: &Path, auth_dir: &Path, account: &str, role: &str) -> anyhow::Result<String> {
    let output = Command::new(program)
        .args(["token", "issue", "--auth-dir"])
        .arg(auth_dir)
        .args(["--account", account, "--role", role, "--ttl", "1h"])
        .args(["--note", "bench-load"])
        .stdin(Stdio::null())
        .output()
        .context("run tabwire-hub token issue")?;
    if !output.status.success() {
        bail!(
            "tabwire-hub token issue failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let token = String::from_utf8(output.stdout)?.trim().to_owned();
    if token.is_empty() {
        bail!("tabwire-hub token issue printed no token");
    }
    Ok(token)
}

/// `count` browser tokens, the `n`th for `account(n)`, issued four at a time (`token issue`
/// appends under a lock).
pub fn issue_many(
    program: &Path,
    auth_dir: &Path,
    count: usize,
    account: impl Fn(usize) -> String + Sync,
) -> anyhow::Result<Vec<String>> {
    const AT_ONCE: usize = 4;
    let mut tokens: Vec<Option<String>> = vec![None; count];
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let workers: Vec<_> = (0..AT_ONCE)
            .map(|worker| {
                let account = &account;
                scope.spawn(move || -> anyhow::Result<Vec<(usize, String)>> {
                    (worker..count)
                        .step_by(AT_ONCE)
                        .map(|n| Ok((n, issue(program, auth_dir, &account(n), "browser")?)))
                        .collect()
                })
            })
            .collect();
        for worker in workers {
            for (n, token) in worker.join().expect("a token worker panicked")? {
                tokens[n] = Some(token);
            }
        }
        Ok(())
    })?;
    Ok(tokens
        .into_iter()
        .map(|t| t.expect("every token issued"))
        .collect())
}
