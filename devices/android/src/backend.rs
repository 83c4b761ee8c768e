//! The running backend: lists adb's devices about once a second, feeds the [`Tracker`], probes
//! new serials, and starts, steers and stops one [`DeviceLink`] per served phone. On shutdown
//! every link tells the hub its device is going (`backend stopped`) before the process exits.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::MissedTickBehavior;

use crate::adb::{Adb, AdbError};
use crate::device::{Device, DeviceFacts, DeviceOptions};
use crate::identity;
use crate::listing::{self, Listed};
use crate::track::{Action, Tracker};
use tabwire_device_kit::endpoint::HubEndpoint;
use tabwire_device_kit::keys::Credentials;
use tabwire_device_kit::link::{Control, DeviceLink, stop_all};

/// How often adb is asked for its devices.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// How long `adb devices -l` may take (the first call may start adb's server).
const LIST_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a probe may take in all.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// What the backend was started with.
pub struct Backend<A: Adb> {
    /// The adb transport.
    pub adb: Arc<A>,
    /// The hub.
    pub endpoint: Arc<HubEndpoint>,
    /// Local mode's pairing; `None` for a hosted hub.
    pub credentials: Option<Arc<Credentials>>,
    /// `--allow-destructive` and the owner's `--policy`, for every device.
    pub options: DeviceOptions,
    /// `--serial`: the only adb serials served, when given.
    pub serials: Vec<String>,
}

/// A probe's outcome, back from its task: the phone's identity and facts, or why not.
type Probed = (String, Result<(String, DeviceFacts), String>);

/// One served phone's link.
struct Linked<A: Adb> {
    control: watch::Sender<Control<Device<A>>>,
}

/// Checks that adb can be run at all; the message says what was tried and what to install.
pub async fn check_adb<A: Adb>(adb: &A, program: &str) -> Result<String, String> {
    match adb.run(&["version"], Duration::from_secs(10)).await {
        Ok(output) if output.success() => Ok(output
            .text()
            .lines()
            .next()
            .unwrap_or("adb")
            .trim()
            .to_owned()),
        Ok(output) => Err(format!(
            "`{program} version` failed ({}): {}",
            output
                .status
                .map_or("killed".to_owned(), |code| format!("exit {code}")),
            output.stderr.trim()
        )),
        Err(AdbError::Spawn { source, .. }) => Err(format!(
            "cannot run adb: tried `{program}` ({source}). Install the Debian package `adb` \
             (`sudo apt-get install adb`), or give its path with --adb PATH or $ADB"
        )),
        Err(error) => Err(format!("`{program} version` did not work: {error}")),
    }
}

impl<A: Adb> Backend<A> {
    /// Runs until `shutdown` completes, then says goodbye for every device.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let mut tracker = Tracker::new(&self.serials);
        let (probed_tx, mut probed_rx) = mpsc::unbounded_channel::<Probed>();
        let mut served: HashMap<String, Linked<A>> = HashMap::new();
        let mut links = JoinSet::new();
        let mut poll = tokio::time::interval(POLL_INTERVAL);
        poll.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut listing_failed = false;
        tokio::pin!(shutdown);
        loop {
            let retry_at = tracker.next_probe_at();
            let actions = tokio::select! {
                () = &mut shutdown => break,
                _ = poll.tick() => match list(&*self.adb).await {
                    Ok(listed) => {
                        if listing_failed {
                            tracing::info!("adb lists devices again");
                            listing_failed = false;
                        }
                        tracker.listing(listed, now())
                    }
                    Err(reason) => {
                        if !listing_failed {
                            tracing::warn!(%reason, "cannot list adb's devices; trying again every second");
                            listing_failed = true;
                        }
                        Vec::new()
                    }
                },
                Some((serial, outcome)) = probed_rx.recv() => {
                    let failure = outcome.as_ref().err().cloned();
                    let (actions, first) = tracker.probed(&serial, outcome, now());
                    if let Some(reason) = failure {
                        if first {
                            tracing::warn!(%serial, %reason, "cannot probe the device; retrying with backoff");
                        } else {
                            tracing::debug!(%serial, %reason, "probe failed again");
                        }
                    }
                    actions
                }
                () = sleep_until(retry_at), if retry_at.is_some() => tracker.reconcile(now()),
                Some(_) = links.join_next(), if !links.is_empty() => Vec::new(),
            };
            for action in actions {
                self.apply(action, &probed_tx, &mut served, &mut links);
            }
        }
        tracing::info!(
            devices = served.len(),
            "stopping: telling the hub each device is going"
        );
        stop_all(served.drain().map(|(_, link)| link.control), &mut links).await;
    }

    fn apply(
        &self,
        action: Action,
        probed: &mpsc::UnboundedSender<Probed>,
        served: &mut HashMap<String, Linked<A>>,
        links: &mut JoinSet<()>,
    ) {
        match action {
            Action::Probe { serial } => {
                let adb = self.adb.clone();
                let probed = probed.clone();
                tokio::spawn(async move {
                    let outcome = probe(&*adb, &serial).await;
                    let _ = probed.send((serial, outcome));
                });
            }
            Action::Serve {
                identity,
                serial,
                facts,
            } => {
                let device_id = identity::device_id(&identity);
                let hello = match identity::hello(&device_id, &facts) {
                    Ok(hello) => hello,
                    // The probe checked this already; a failure here is a bug, said plainly.
                    Err(refusal) => {
                        tracing::error!(%serial, reason = %refusal.message, "cannot introduce the device");
                        return;
                    }
                };
                tracing::info!(device = %device_id, name = %hello.device_name, %serial, "serving a device");
                let device = Device::new(self.adb.clone(), serial, facts, self.options.clone());
                let (control, receiver) = watch::channel(Control::Serve(Arc::new(device)));
                links.spawn(
                    DeviceLink {
                        endpoint: self.endpoint.clone(),
                        credentials: self.credentials.clone(),
                        hello,
                        control: receiver,
                    }
                    .run(),
                );
                if let Some(old) = served.insert(identity, Linked { control }) {
                    old.control
                        .send_replace(Control::Stop("replaced".to_owned()));
                }
            }
            Action::Switch {
                identity,
                serial,
                facts,
            } => {
                if let Some(link) = served.get(&identity) {
                    tracing::info!(device = %identity::device_id(&identity), %serial, "switching the device to another adb serial");
                    let device = Device::new(self.adb.clone(), serial, facts, self.options.clone());
                    link.control.send_replace(Control::Serve(Arc::new(device)));
                }
            }
            Action::Gone { identity, reason } => {
                if let Some(link) = served.remove(&identity) {
                    tracing::info!(device = %identity::device_id(&identity), %reason, "device gone");
                    link.control.send_replace(Control::Stop(reason));
                }
            }
        }
    }
}

/// `adb devices -l`, parsed.
async fn list<A: Adb>(adb: &A) -> Result<Vec<Listed>, String> {
    let output = adb
        .run(&["devices", "-l"], LIST_TIMEOUT)
        .await
        .map_err(|error| error.to_string())?;
    if !output.success() {
        return Err(format!(
            "`adb devices -l` failed ({:?}): {}",
            output.status,
            output.stderr.trim()
        ));
    }
    Ok(listing::parse(&output.text()))
}

/// Probes a serial: the phone's facts and identity, with a hello the hub will take.
async fn probe<A: Adb>(adb: &A, serial: &str) -> Result<(String, DeviceFacts), String> {
    let facts = match tokio::time::timeout(PROBE_TIMEOUT, Device::probe(adb, serial)).await {
        Err(_) => {
            return Err(format!(
                "the probe did not finish within {} s",
                PROBE_TIMEOUT.as_secs()
            ));
        }
        Ok(Err(error)) => return Err(format!("{}: {}", error.code.as_str(), error.message)),
        Ok(Ok(facts)) => facts,
    };
    let identity = identity::identity(&facts, serial);
    identity::hello(&identity::device_id(&identity), &facts)
        .map_err(|refusal| format!("the hub would refuse this device: {}", refusal.message))?;
    Ok((identity, facts))
}

fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

async fn sleep_until(at: Option<std::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adb::AdbProgram;

    #[tokio::test]
    async fn an_adb_that_cannot_run_is_named_with_what_to_install() {
        let missing = AdbProgram::new("/nonexistent/adb");
        let message = check_adb(&missing, "/nonexistent/adb").await.unwrap_err();
        assert!(message.contains("tried `/nonexistent/adb`"), "{message}");
        assert!(message.contains("Debian package `adb`"), "{message}");

        // `false` runs but fails: its status is reported.
        let failing = AdbProgram::new("false");
        let message = check_adb(&failing, "false").await.unwrap_err();
        assert!(message.contains("exit 1"), "{message}");

        // `echo version` stands in for an adb that works: its first line is its version.
        let echo = AdbProgram::new("echo");
        assert_eq!(check_adb(&echo, "echo").await.unwrap(), "version");
    }

    #[tokio::test]
    async fn a_failing_listing_is_an_error_not_an_empty_list() {
        // `false devices -l` exits 1, as adb does when it cannot reach its server.
        let failing = AdbProgram::new("false");
        assert!(list(&failing).await.is_err());
        // `true devices -l` succeeds and prints nothing: no devices.
        let quiet = AdbProgram::new("true");
        assert_eq!(list(&quiet).await.unwrap(), []);
    }
}
