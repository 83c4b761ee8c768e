//! The running backend: one task per `--wda` URL, which probes its WebDriverAgent until it
//! answers, serves the device through a kit link, checks about every few seconds that WDA
//! still answers, and tells the hub the device is gone after three checks in a row fail (then
//! probes again: a simulator restarted, a cable plugged back). On shutdown every link tells the
//! hub its device is going.

use std::sync::Arc;
use std::time::Duration;

use tabwire_device_kit::endpoint::HubEndpoint;
use tabwire_device_kit::keys::Credentials;
use tabwire_device_kit::link::{Control, DeviceLink, stop_all};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::device::{IosDevice, IosFacts, IosOptions};
use crate::wda::{Wda, WdaUrl};

/// How often a served device's WDA is asked whether it is still there.
const CHECK_INTERVAL: Duration = Duration::from_secs(5);
/// Checks failed in a row before the device is gone.
const CHECKS_TO_GONE: u32 = 3;
/// Between probes of a WDA that does not answer: doubling between these.
const PROBE_BACKOFF: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(30));

/// One `--wda`.
#[derive(Debug, Clone)]
pub struct WdaTarget {
    wda: Wda,
}

impl WdaTarget {
    /// The WDA at `url`.
    pub fn new(url: WdaUrl) -> WdaTarget {
        WdaTarget { wda: Wda::new(url) }
    }
}

/// What the backend was started with.
pub struct Backend {
    /// The WebDriverAgents, one per device.
    pub targets: Vec<WdaTarget>,
    /// The hub.
    pub endpoint: Arc<HubEndpoint>,
    /// Local mode's pairing; `None` for a hosted hub.
    pub credentials: Option<Arc<Credentials>>,
    /// The owner's policy, for every device.
    pub options: IosOptions,
}

impl Backend {
    /// Runs until `shutdown` completes, then says goodbye for every device.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let mut watchers = JoinSet::new();
        let (controls_tx, mut controls_rx) = tokio::sync::mpsc::unbounded_channel();
        for target in self.targets {
            let endpoint = self.endpoint.clone();
            let credentials = self.credentials.clone();
            let options = self.options.clone();
            let controls = controls_tx.clone();
            watchers.spawn(watch_device(
                target,
                endpoint,
                credentials,
                options,
                controls,
            ));
        }
        drop(controls_tx);
        shutdown.await;
        watchers.abort_all();
        // The links run on in their own tasks: each one still registered is told to stop,
        // says goodbye to the hub, and is waited for.
        let mut links = JoinSet::new();
        let mut live = Vec::new();
        while let Ok((control, ended)) = controls_rx.try_recv() {
            links.spawn(async move {
                let _ = ended.await;
            });
            live.push(control);
        }
        stop_all(live, &mut links).await;
    }
}

/// A link's control and a signal that completes when the link has ended.
type Registered = (
    watch::Sender<Control<IosDevice>>,
    tokio::sync::oneshot::Receiver<()>,
);

/// Probes `target` until it answers, serves it while it does, and starts again when it stops.
async fn watch_device(
    target: WdaTarget,
    endpoint: Arc<HubEndpoint>,
    credentials: Option<Arc<Credentials>>,
    options: IosOptions,
    controls: tokio::sync::mpsc::UnboundedSender<Registered>,
) {
    let url = target.wda.url().display();
    let mut delay = PROBE_BACKOFF.0;
    let mut warned = false;
    loop {
        let facts = match IosFacts::probe(&target.wda).await {
            Ok(facts) => facts,
            Err(reason) => {
                if !warned {
                    tracing::warn!(wda = %url, %reason, "cannot reach WebDriverAgent; retrying with backoff");
                    warned = true;
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(PROBE_BACKOFF.1);
                continue;
            }
        };
        delay = PROBE_BACKOFF.0;
        warned = false;
        let hello = facts.hello();
        if let Err(refusal) = tabwire_protocol::devices::check_device_hello(&hello) {
            tracing::warn!(wda = %url, reason = %refusal.message, "the device's hello would be refused; not serving it");
            tokio::time::sleep(PROBE_BACKOFF.1).await;
            continue;
        }
        tracing::info!(device = %hello.device_id, name = %hello.device_name, wda = %url, "serving a device");
        let hello_id = hello.device_id.clone();
        let device = Arc::new(IosDevice::new(target.wda.clone(), facts, options.clone()));
        let (control, receiver) = watch::channel(Control::Serve(device));
        let (ended_tx, ended_rx) = tokio::sync::oneshot::channel();
        let link = DeviceLink {
            endpoint: endpoint.clone(),
            credentials: credentials.clone(),
            hello,
            control: receiver,
        };
        let running = tokio::spawn(async move {
            link.run().await;
            let _ = ended_tx.send(());
        });
        let _ = controls.send((control.clone(), ended_rx));
        let reason = gone(&target.wda, &hello_id).await;
        tracing::info!(wda = %url, %reason, "device gone");
        control.send_replace(Control::Stop(reason));
        let _ = running.await;
    }
}

/// Waits until WDA has failed [`CHECKS_TO_GONE`] checks in a row, or another device answers
/// at its address (a simulator replaced, another iPhone plugged into the forward); returns why.
async fn gone(wda: &Wda, device_id: &str) -> String {
    let mut failed = 0;
    loop {
        tokio::time::sleep(CHECK_INTERVAL).await;
        match IosFacts::probe(wda).await {
            Ok(facts) if facts.device_id == device_id => failed = 0,
            Ok(facts) => {
                return format!(
                    "another device ({}) now answers at this WebDriverAgent",
                    facts.device_id
                );
            }
            Err(reason) => {
                failed += 1;
                if failed >= CHECKS_TO_GONE {
                    return format!("WebDriverAgent stopped answering: {reason}");
                }
            }
        }
    }
}
