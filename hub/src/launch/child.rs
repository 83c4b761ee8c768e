//! Chromium as the hub's child: its command line, and the process (in a process group of its
//! own, so stopping it takes its helper processes along) handed to the [`super::watch`] task,
//! which stops it with the hub.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use tokio::io::AsyncBufReadExt;
use tokio::process::Command;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::profile::{self, ProfileError};
use super::watch::{Event, KEPT_LINES, Watch, signal_group};
use super::{Launched, Phase};
use crate::chrome::{self, Kind};
use crate::state::HubState;

/// Why Chromium could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The profile could not be prepared.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// The hub has no pairing state (hosted mode, which configuration refuses).
    #[error("--launch-browser needs a local hub (its pairing state)")]
    NotLocal,
    /// The process could not be started.
    #[error("cannot start {}: {source}", path.display())]
    Spawn {
        /// The executable.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
}

/// The launched browser while the hub runs: stop it with [`Running::stop`]. Dropped without
/// being stopped (an early return, a panic), it kills Chromium's process group at once.
pub struct Running {
    /// What happened, as it happens, until [`Running::take_events`] takes it.
    events: Option<mpsc::UnboundedReceiver<Event>>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    /// Chromium's process group while the child is not reaped; 0 otherwise.
    group: Arc<AtomicU32>,
}

impl Running {
    /// What happens to the browser, as it happens (once).
    pub fn take_events(&mut self) -> Option<mpsc::UnboundedReceiver<Event>> {
        self.events.take()
    }

    /// Stops Chromium (SIGTERM to its process group, SIGKILL after a grace period) and waits
    /// until it is gone.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.stop.is_some() {
            signal_group(self.group.load(Ordering::SeqCst), libc::SIGKILL);
        }
    }
}

/// Chromium's arguments: the profile, the extension, no first-run questions, headless or not,
/// and a blank start page.
pub fn arguments(
    browser: &chrome::Found,
    profile: &Path,
    extension: &Path,
    headless: bool,
    as_root: bool,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    let mut flag = |name: &str, value: &Path| {
        let mut arg = OsString::from(name);
        arg.push(value);
        args.push(arg);
    };
    flag("--user-data-dir=", profile);
    flag("--load-extension=", extension);
    args.push("--no-first-run".into());
    args.push("--no-default-browser-check".into());
    if headless {
        args.push("--headless=new".into());
    }
    if as_root {
        // Chromium refuses to run as root with its sandbox on ("Running as root without
        // --no-sandbox is not supported"): its sandbox needs an unprivileged user. Containers
        // and CI machines often run as root; a desktop user never does.
        args.push("--no-sandbox".into());
    }
    if browser.kind == Kind::GoogleChrome {
        // Google Chrome 137 to about 141 still honour --load-extension with this feature
        // switched off (reported by Selenium, wxt and others); later versions ignore it too,
        // and the hub's output says to use Chromium if the browser does not connect.
        args.push("--disable-features=DisableLoadExtensionCommandLineSwitch".into());
    }
    // Headless Chromium takes one start URL at most.
    args.push("about:blank".into());
    args
}

/// Starts the launched browser of `state` (its [`Launched`] settings) with `browser`: prepares
/// the profile, starts Chromium unless another one holds the profile, and watches it.
///
/// On Linux Chromium is also told to stop when the thread that started it ends (so a hub
/// killed with SIGKILL does not leave it running): call this from the thread that lives as
/// long as the hub — the main thread, where `#[tokio::main]` runs its future.
pub fn start(
    state: &Arc<HubState>,
    launched: &Arc<Launched>,
    browser: chrome::Found,
) -> Result<Running, LaunchError> {
    let pairings = state.pairings.clone().ok_or(LaunchError::NotLocal)?;
    let settings = &launched.settings;
    let home = super::Places::here().home;
    let profile = settings.profile_for(&browser, home.as_deref());
    launched.update(|status| {
        status.browser = Some(browser.clone());
        status.profile = profile.clone();
    });
    let fail = |error: LaunchError| {
        launched.update(|status| status.phase = Phase::Failed(error.to_string()));
        error
    };
    profile::ensure_private(&profile).map_err(|error| fail(error.into()))?;
    let recorded = profile::read_record(&profile);
    let (events_tx, events) = mpsc::unbounded_channel();
    let (stop, stop_rx) = oneshot::channel();
    let group = Arc::new(AtomicU32::new(0));
    let mut watch = Watch {
        state: state.clone(),
        launched: launched.clone(),
        profile: profile.clone(),
        events: events_tx,
        code: None,
        browser_id: None,
        kind: browser.kind,
        stderr: Arc::default(),
        group: group.clone(),
    };
    if let Some(pid) = profile::holder(&profile) {
        // Chromium would hand the command line to that process and exit: start nothing, and
        // take that browser for the launched one if its extension connects (a hub killed
        // with SIGKILL on macOS leaves its Chromium running, still pointed at the same port).
        tracing::warn!(
            pid,
            profile = %profile.display(),
            "the launched browser's profile is in use by another Chromium; not starting one"
        );
        launched.update(|status| {
            status.phase = Phase::InUse;
            status.pid = Some(pid);
            status.browser_id = recorded.clone();
        });
        watch.browser_id = recorded;
        let _ = watch.events.send(Event::InUse { pid, profile });
        let task = tokio::spawn(watch.run(None, stop_rx));
        return Ok(Running {
            events: Some(events),
            stop: Some(stop),
            task: Some(task),
            group,
        });
    }
    let prepared = profile::prepare(
        &profile,
        &settings.extension,
        &state.browser_url,
        &settings.name,
        &pairings,
    )
    .map_err(|error| fail(error.into()))?;
    let headless = settings
        .headless
        .resolve(chrome::Os::current(), super::display_here());
    let as_root = tabwire_protocol::local::current_uid() == 0;
    let mut command = Command::new(&browser.path);
    command
        .args(arguments(
            &browser,
            &profile,
            &prepared.extension,
            headless,
            as_root,
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        // Its own process group: stopping the group stops Chromium's helper processes too.
        .process_group(0);
    stop_with_this_thread(&mut command);
    let mut child = command.spawn().map_err(|source| {
        fail(LaunchError::Spawn {
            path: browser.path.clone(),
            source,
        })
    })?;
    let pid = child.id().expect("a child just started has an ID");
    group.store(pid, Ordering::SeqCst);
    tracing::info!(
        pid,
        browser = %browser.path.display(),
        kind = %browser.kind,
        headless,
        profile = %profile.display(),
        "launched the browser"
    );
    if let Some(stderr) = child.stderr.take() {
        let kept = watch.stderr.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(target: "chromium", "{line}");
                let mut kept = kept.lock().unwrap();
                if kept.len() == KEPT_LINES {
                    kept.pop_front();
                }
                kept.push_back(line);
            }
        });
    }
    launched.update(|status| {
        status.phase = Phase::Running;
        status.pid = Some(pid);
        status.browser_id = prepared.known_id.clone();
    });
    watch.code = prepared.code;
    watch.browser_id = prepared.known_id;
    let _ = watch.events.send(Event::Launched {
        pid,
        browser,
        headless,
        profile,
        extension: prepared.extension,
    });
    let task = tokio::spawn(watch.run(Some(child), stop_rx));
    Ok(Running {
        events: Some(events),
        stop: Some(stop),
        task: Some(task),
        group,
    })
}

/// On Linux, asks the kernel to send Chromium SIGTERM when the thread that started it ends, and
/// refuses to start when the hub is already gone by then.
#[cfg(target_os = "linux")]
fn stop_with_this_thread(command: &mut Command) {
    // SAFETY: getpid is async-signal-safe; taken here, before the fork.
    let hub = unsafe { libc::getpid() };
    // SAFETY: the closure runs between fork and exec and calls only prctl and getppid, which
    // are async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The hub died between the fork and the prctl: its death signal was missed.
            if libc::getppid() != hub {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn stop_with_this_thread(_command: &mut Command) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(path: &str, kind: Kind) -> chrome::Found {
        chrome::Found {
            path: path.into(),
            kind,
        }
    }

    fn strings(args: Vec<OsString>) -> Vec<String> {
        args.into_iter()
            .map(|arg| arg.into_string().unwrap())
            .collect()
    }

    #[test]
    fn chromium_gets_the_profile_the_extension_and_a_blank_page() {
        let args = strings(arguments(
            &found("/usr/lib/chromium/chromium", Kind::Chromium),
            Path::new("/home/a/.local/share/tabwire/chromium"),
            Path::new("/home/a/.local/share/tabwire/chromium/tabwire-extension"),
            true,
            false,
        ));
        assert_eq!(
            args,
            [
                "--user-data-dir=/home/a/.local/share/tabwire/chromium",
                "--load-extension=/home/a/.local/share/tabwire/chromium/tabwire-extension",
                "--no-first-run",
                "--no-default-browser-check",
                "--headless=new",
                "about:blank",
            ]
        );
    }

    #[test]
    fn root_turns_the_sandbox_off_and_chrome_gets_the_extension_switch_back() {
        let args = strings(arguments(
            &found("/opt/google/chrome/chrome", Kind::GoogleChrome),
            Path::new("/p"),
            Path::new("/p/tabwire-extension"),
            false,
            true,
        ));
        assert!(!args.iter().any(|arg| arg.starts_with("--headless")));
        assert!(args.contains(&"--no-sandbox".to_owned()));
        assert!(
            args.contains(&"--disable-features=DisableLoadExtensionCommandLineSwitch".to_owned())
        );
        assert_eq!(args.last().unwrap(), "about:blank");
        let chromium = strings(arguments(
            &found("/usr/bin/chromium", Kind::Chromium),
            Path::new("/p"),
            Path::new("/e"),
            false,
            false,
        ));
        assert!(!chromium.iter().any(|arg| arg.contains("no-sandbox")));
        assert!(!chromium.iter().any(|arg| arg.contains("disable-features")));
    }
}
