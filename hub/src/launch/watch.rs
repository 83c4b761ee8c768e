//! The task that watches the launched browser until the hub stops — its extension connecting
//! (the browser ID learnt from the hub's own pairing code, or recorded by an earlier start), or
//! Chromium exiting — and reports [`Event`]s for the binary to print; at the end it stops
//! Chromium's process group.
//!
//! The hub never relaunches a browser that exited: a person closing its window meant it.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tabwire_protocol::pairing::PairingCode;
use tokio::process::Child;
use tokio::sync::{mpsc, oneshot};

use super::profile;
use super::{Launched, Phase, chrome_hint};
use crate::chrome::{self, Kind};
use crate::peer::Browser;
use crate::state::HubState;

/// How long the hub waits for the launched browser to connect before saying what it knows.
pub const CONNECT_WAIT: Duration = Duration::from_secs(60);
/// How long Chromium has to exit after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// How long the processes of Chromium's group have to be gone after SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(5);
/// How often the watcher looks at the registry and the pairings.
const TICK: Duration = Duration::from_millis(250);
/// How many of Chromium's last stderr lines are kept for a report.
pub(super) const KEPT_LINES: usize = 8;

/// What happened to the launched browser, for the binary to tell the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Chromium started.
    Launched {
        /// Its process ID.
        pid: u32,
        /// What runs.
        browser: chrome::Found,
        /// Whether headless.
        headless: bool,
        /// The profile directory.
        profile: PathBuf,
        /// The extension copy it loads.
        extension: PathBuf,
    },
    /// Another Chromium holds the profile; the hub waits for its extension instead.
    InUse {
        /// That process.
        pid: u32,
        /// The profile directory.
        profile: PathBuf,
    },
    /// Its extension connected (the first time).
    Connected {
        /// The profile's browser ID.
        browser_id: String,
        /// The name it connected under.
        name: String,
    },
    /// It did not connect: Chromium exited first, or [`CONNECT_WAIT`] passed. The hub keeps
    /// serving.
    NotConnected {
        /// What is known, in sentences.
        reason: String,
    },
    /// Chromium exited after its extension had connected.
    Exited {
        /// How (`exit code 0`, `signal 9`).
        how: String,
    },
}

/// Sends `signal` to the process group `group` (nothing for 0).
pub(super) fn signal_group(group: u32, signal: libc::c_int) {
    let Ok(group) = libc::pid_t::try_from(group) else {
        return;
    };
    if group > 0 {
        // SAFETY: killpg has no memory preconditions; a group that is gone is ESRCH.
        unsafe {
            libc::killpg(group, signal);
        }
    }
}

/// How a process ended, for a person.
fn describe(status: &ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => "an unknown status".to_owned(),
    }
}

/// What the watching task holds.
pub(super) struct Watch {
    pub(super) state: Arc<HubState>,
    pub(super) launched: Arc<Launched>,
    pub(super) profile: PathBuf,
    pub(super) events: mpsc::UnboundedSender<Event>,
    /// The code minted for this start, when one was.
    pub(super) code: Option<PairingCode>,
    /// The profile's browser ID, once known.
    pub(super) browser_id: Option<String>,
    pub(super) kind: Kind,
    /// Chromium's last stderr lines.
    pub(super) stderr: Arc<Mutex<VecDeque<String>>>,
    pub(super) group: Arc<AtomicU32>,
}

impl Watch {
    /// Watches until `stop` fires (or the hub is gone), then stops `child` if it still runs.
    pub(super) async fn run(mut self, mut child: Option<Child>, mut stop: oneshot::Receiver<()>) {
        let account = self.state.accounts.local_account();
        let give_up = tokio::time::Instant::now() + CONNECT_WAIT;
        let mut tick = tokio::time::interval(TICK);
        let mut connected = false;
        let mut reported = false;
        loop {
            tokio::select! {
                _ = &mut stop => break,
                status = wait(child.as_mut()) => {
                    child = None;
                    let group = self.group.swap(0, Ordering::SeqCst);
                    // Its helpers, if any outlived it.
                    signal_group(group, libc::SIGKILL);
                    self.close_unused_code();
                    self.exited(&status, connected, reported);
                    reported = true;
                }
                _ = tick.tick() => {
                    if connected {
                        continue;
                    }
                    self.learn_browser_id();
                    let peer = self
                        .browser_id
                        .as_deref()
                        .and_then(|id| account.registry::<Browser>().get(id))
                        .filter(|peer| peer.connected);
                    if let Some(peer) = peer {
                        connected = true;
                        self.connected(peer.id(), peer.name());
                    } else if !reported && tokio::time::Instant::now() >= give_up {
                        reported = true;
                        let reason = self.still_waiting(child.is_some());
                        tracing::warn!("{reason}");
                        let _ = self.events.send(Event::NotConnected { reason });
                    }
                }
            }
        }
        self.close_unused_code();
        if let Some(child) = child {
            self.stop_child(child, connected).await;
        }
    }

    /// Closes this start's code unless a browser paired with it: once Chromium is gone (or the
    /// hub stops), nothing should be able to use it until it expires.
    fn close_unused_code(&self) {
        if let (Some(code), Some(pairings)) = (&self.code, &self.state.pairings)
            && pairings.paired_with(code).is_none()
            && let Err(error) = crate::pairing::discard_code(pairings.dir(), code)
        {
            tracing::warn!(%error, "cannot close the launched browser's unused pairing code; it expires by itself");
        }
    }

    /// The browser ID that paired with this start's code, once it did; recorded in the profile.
    fn learn_browser_id(&mut self) {
        if self.browser_id.is_some() {
            return;
        }
        let (Some(code), Some(pairings)) = (&self.code, &self.state.pairings) else {
            return;
        };
        let Some(id) = pairings.paired_with(code) else {
            return;
        };
        if let Err(error) = profile::write_record(&self.profile, &id) {
            tracing::warn!(%error, "cannot record the launched browser's ID; the next start pairs it again");
        }
        self.launched
            .update(|status| status.browser_id = Some(id.clone()));
        self.browser_id = Some(id);
    }

    fn connected(&mut self, id: &str, name: &str) {
        tracing::info!(browser = id, name, "the launched browser is connected");
        // A code the profile did not need (it connected with its key) is closed at once.
        self.close_unused_code();
        let _ = self.events.send(Event::Connected {
            browser_id: id.to_owned(),
            name: name.to_owned(),
        });
    }

    fn exited(&self, status: &std::io::Result<ExitStatus>, connected: bool, reported: bool) {
        let how = match status {
            Ok(status) => describe(status),
            Err(error) => format!("an unknown status ({error})"),
        };
        self.launched.update(|status| {
            status.pid = None;
            status.phase = Phase::Exited {
                how: how.clone(),
                had_connected: connected,
            };
        });
        if connected {
            tracing::warn!(%how, "the launched browser exited; the hub does not start it again");
            let _ = self.events.send(Event::Exited { how });
            return;
        }
        let mut reason = format!("Chromium exited ({how}) before its extension connected.");
        let lines = self.stderr.lock().unwrap().clone();
        if !lines.is_empty() {
            reason.push_str(" Its last words:");
            for line in lines {
                reason.push_str("\n    ");
                reason.push_str(&line);
            }
        }
        if self.kind == Kind::GoogleChrome {
            reason.push_str(&format!("\n{}", chrome_hint()));
        }
        tracing::warn!("{reason}");
        if !reported {
            let _ = self.events.send(Event::NotConnected { reason });
        }
    }

    fn still_waiting(&self, running: bool) -> String {
        let waited = CONNECT_WAIT.as_secs();
        let status = self.launched.status();
        let mut reason = match (status.phase, status.pid) {
            (Phase::InUse, Some(pid)) => format!(
                "the browser profile {} is in use by Chromium (PID {pid}), which this hub did not \
                 start, and its extension has not connected within {waited} s (it may point at \
                 another hub or port). Stop that Chromium (kill {pid}) and start tabwire-hub \
                 again.",
                self.profile.display()
            ),
            _ if running => format!(
                "Chromium is running, but its extension has not connected within {waited} s."
            ),
            _ => format!("the launched browser has not connected within {waited} s."),
        };
        if self.browser_id.is_none() && self.code.is_none() {
            reason.push_str(&format!(
                " The hub does not know this profile's browser ID ({} is missing).",
                self.profile.join(profile::RECORD).display()
            ));
        }
        if self.kind == Kind::GoogleChrome {
            reason.push_str(&format!(" {}", chrome_hint()));
        }
        reason
    }

    /// SIGTERM to the group, SIGKILL after [`STOP_GRACE`], then SIGKILL to whatever is left of
    /// the group, and a wait until every process of the group is gone: when the hub says it
    /// stopped its browser, no helper of it runs any more.
    async fn stop_child(&self, mut child: Child, connected: bool) {
        let group = self.group.load(Ordering::SeqCst);
        signal_group(group, libc::SIGTERM);
        if tokio::time::timeout(STOP_GRACE, child.wait())
            .await
            .is_err()
        {
            tracing::warn!("the launched browser did not stop within {STOP_GRACE:?}; killing it");
            signal_group(group, libc::SIGKILL);
            let _ = child.wait().await;
        }
        let group = self.group.swap(0, Ordering::SeqCst);
        signal_group(group, libc::SIGKILL);
        if !group_gone_within(group, KILL_GRACE).await {
            tracing::warn!(
                group,
                "processes of the launched browser's group outlived SIGKILL"
            );
        }
        self.launched.update(|status| {
            status.pid = None;
            status.phase = Phase::Exited {
                how: "stopped with the hub".to_owned(),
                had_connected: connected,
            };
        });
        tracing::info!("stopped the launched browser");
    }
}

/// Waits until no live process is left in the process group `group` (zombies awaiting their
/// reaper do not count: they run nothing), at most `within`; whether it is gone.
pub(super) async fn group_gone_within(group: u32, within: Duration) -> bool {
    let until = tokio::time::Instant::now() + within;
    loop {
        if !group_alive(group) {
            return true;
        }
        if tokio::time::Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether a process of group `group` still runs. Linux: read from `/proc`, so that helpers
/// already dead but not yet reaped (by an init that reaps slowly, in a container) count as
/// gone. Elsewhere: whether the group can be signalled at all.
fn group_alive(group: u32) -> bool {
    let Ok(pgid) = libc::pid_t::try_from(group) else {
        return false;
    };
    if pgid <= 0 {
        return false;
    }
    #[cfg(target_os = "linux")]
    if let Ok(entries) = std::fs::read_dir("/proc") {
        return entries.flatten().any(|entry| {
            let is_pid = entry
                .file_name()
                .to_str()
                .is_some_and(|name| name.bytes().all(|b| b.is_ascii_digit()));
            is_pid
                && std::fs::read_to_string(entry.path().join("stat"))
                    .ok()
                    .and_then(|stat| running_in_group(&stat))
                    == Some(pgid)
        });
    }
    // SAFETY: kill with signal 0 sends nothing; it says whether the group has a process.
    unsafe { libc::killpg(pgid, 0) == 0 }
}

/// The process group of a `/proc/PID/stat` line whose process is not a zombie.
fn running_in_group(stat: &str) -> Option<libc::pid_t> {
    // The command name is in parentheses and may hold anything, spaces and parentheses too:
    // the fields are read after its last ')'.
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?;
    let _parent = fields.next()?;
    let group = fields.next()?.parse().ok()?;
    (state != "Z" && state != "X").then_some(group)
}

/// `child`'s exit, or never when there is no child.
async fn wait(child: Option<&mut Child>) -> std::io::Result<ExitStatus> {
    match child {
        Some(child) => child.wait().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_group_is_read_from_proc_stat_and_zombies_do_not_count() {
        assert_eq!(
            running_in_group("4242 (chromium) S 1 4200 4200 0 -1 4194560 0"),
            Some(4200)
        );
        assert_eq!(
            running_in_group("4243 (a (b) c) R 1 4200 4200 0 -1"),
            Some(4200),
            "a name with spaces and parentheses"
        );
        assert_eq!(running_in_group("4244 (chromium) Z 1 4200 4200 0"), None);
        assert_eq!(running_in_group("garbage"), None);
    }

    /// A real group: a shell and its child, killed; the wait ends once both are gone.
    #[tokio::test]
    async fn the_wait_ends_when_the_whole_group_is_gone() {
        use std::os::unix::process::CommandExt;
        let mut shell = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30"])
            .process_group(0)
            .spawn()
            .unwrap();
        let group = shell.id();
        assert!(group_alive(group));
        assert!(!group_gone_within(group, Duration::from_millis(100)).await);
        signal_group(group, libc::SIGKILL);
        // The shell is our child: reaped here; its `sleep` goes to init.
        shell.wait().unwrap();
        assert!(group_gone_within(group, Duration::from_secs(5)).await);
    }

    #[test]
    fn exits_are_described_for_a_person() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(describe(&ExitStatus::from_raw(3 << 8)), "exit code 3");
        assert_eq!(describe(&ExitStatus::from_raw(9)), "signal 9");
    }
}
