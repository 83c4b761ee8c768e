//! One attached device, as the hub's operations see it: [`Device::execute`] runs a
//! [`DeviceOp`] against it through adb and answers with its [`DeviceResult`].
//!
//! Operations on one device run one at a time, in the order they arrive, through the kit's
//! [`Queue`] (see [`tabwire_device_kit::queue`]).
//! The device keeps its leases (which MCP session may change it) and its policy (the
//! operator's, from the hub, and the device owner's `--policy`), and judges every action
//! against the foreground app it reads right before acting; each operation's arm is in
//! [`crate::run`].

use std::sync::Arc;
use std::time::Duration;

use tabwire_protocol::devices::{DeviceOp, DeviceResult, ScreenSize};
use tabwire_protocol::policy::Policy;
use tabwire_protocol::{ErrorCode, LeaseHolder, OpError};
use tokio::time::Instant;

use tabwire_device_kit::cancel::Cancel;
use tabwire_device_kit::link::Served;
use tabwire_device_kit::queue::{Queue, unless_cancelled};
use tabwire_device_kit::safety::Safety;

use crate::adb::Adb;
use crate::run::{Run, State, what_it_said};
use crate::shell;

/// What the backend learns about a device before announcing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceFacts {
    /// The device's own serial number (`ro.serialno`), the same over USB and Wi-Fi; the adb
    /// serial when the device reports none.
    pub serialno: String,
    /// `settings get secure android_id` (lowercase hex), read in the same probe: a second
    /// identifier, so that two phones reporting the same serial number are not taken for one.
    /// Empty when the device did not give one.
    pub android_id: String,
    /// `ro.product.manufacturer`.
    pub manufacturer: String,
    /// `ro.product.model`.
    pub model: String,
    /// `ro.build.version.release`.
    pub os_version: String,
    /// `ro.build.version.sdk`.
    pub sdk: Option<u32>,
    /// The screen's size (`wm size`, the override when there is one).
    pub screen: ScreenSize,
}

#[cfg(test)]
impl DeviceFacts {
    /// A Pixel 7 on Android 14 with the serial number `serialno`, for tests.
    pub fn pixel(serialno: &str) -> DeviceFacts {
        DeviceFacts {
            serialno: serialno.into(),
            android_id: String::new(),
            manufacturer: "Google".into(),
            model: "Pixel 7".into(),
            os_version: "14".into(),
            sdk: Some(34),
            screen: ScreenSize {
                width: 1080,
                height: 2400,
            },
        }
    }
}

/// How the backend was started, as far as a device's operations care.
#[derive(Debug, Clone, Default)]
pub struct DeviceOptions {
    /// `--allow-destructive`: clearing app data, and replacing an installed app, is allowed.
    pub allow_destructive: bool,
    /// `--allow-install`: agents may install apps.
    pub allow_install: bool,
    /// The device owner's policy (`--policy FILE`); the stricter of it and the operator's
    /// applies.
    pub owner_policy: Option<Policy>,
}

/// The longest a probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// One attached device.
pub struct Device<A: Adb> {
    adb: Arc<A>,
    serial: String,
    facts: DeviceFacts,
    options: DeviceOptions,
    safety: Safety,
    queue: Queue<State>,
}

impl<A: Adb> Device<A> {
    /// Reads the facts a hello needs from the device at `serial`, in one adb invocation.
    pub async fn probe(adb: &A, serial: &str) -> Result<DeviceFacts, OpError> {
        let out = adb
            .run(&["-s", serial, "shell", shell::PROBE], PROBE_TIMEOUT)
            .await
            .map_err(|e| OpError::new(ErrorCode::DeviceError, e.to_string()))?;
        let text = out.text().replace("\r\n", "\n");
        if !out.success() {
            return Err(OpError::new(
                ErrorCode::DeviceError,
                format!(
                    "Reading the device {serial}'s properties failed: {}",
                    what_it_said(&text, &out)
                ),
            ));
        }
        parse_probe(&text, serial)
    }

    /// The device at `serial` (an adb serial: `emulator-5554`, `192.168.1.5:5555`).
    pub fn new(adb: Arc<A>, serial: String, facts: DeviceFacts, options: DeviceOptions) -> Self {
        let safety = Safety::new(options.owner_policy.clone());
        Device {
            adb,
            serial,
            facts,
            options,
            safety,
            queue: Queue::default(),
        }
    }

    /// The adb serial it is reached through.
    pub fn serial(&self) -> &str {
        &self.serial
    }

    /// What was learnt when it was probed.
    pub fn facts(&self) -> &DeviceFacts {
        &self.facts
    }

    /// Runs one operation for `holder` (sent with every changing operation) within `deadline`;
    /// its observation is `viewer`'s (the hub's name for the calling session: deltas are
    /// against what that session was shown).
    pub async fn execute(
        &self,
        op: DeviceOp,
        holder: Option<LeaseHolder>,
        viewer: &str,
        deadline: Duration,
    ) -> Result<DeviceResult, OpError> {
        self.execute_unless(op, holder, viewer, deadline, &Cancel::never())
            .await
    }
}

impl<A: Adb> Served for Device<A> {
    /// [`Device::execute`] for an operation the hub may cancel through `cancel`: waiting for
    /// its turn, it leaves the queue and never runs; running, it stops at its next await (an
    /// input command under way first runs to its end), and the answer is `CANCELLED`, saying
    /// whether input had gone out.
    async fn execute_unless(
        &self,
        op: DeviceOp,
        holder: Option<LeaseHolder>,
        viewer: &str,
        deadline: Duration,
        cancel: &Cancel,
    ) -> Result<DeviceResult, OpError> {
        let deadline = Instant::now() + deadline;
        let mut state = self.queue.turn(deadline, cancel).await?;
        if op.is_mutation() {
            self.safety.check(holder.as_ref())?;
        }
        let mut run = Run {
            adb: &*self.adb,
            serial: &self.serial,
            screen_size: self.facts.screen,
            sdk: self.facts.sdk,
            safety: &self.safety,
            allow_destructive: self.options.allow_destructive,
            allow_install: self.options.allow_install,
            state: &mut state,
            deadline,
            holder: holder.as_ref(),
            viewer,
            cancel,
        };
        let outcome = unless_cancelled(run.execute(op), cancel).await;
        if outcome.is_err() && cancel.is_cancelled() && cancel.input_sent() {
            // Stopped after its input, before the look that would have followed: refs must
            // resolve against a look taken after it.
            state.screen = None;
        }
        outcome
    }

    /// An MCP session of the hub ended: its lease on this device lapses, and what it was shown
    /// is forgotten (now, or when the operation running now is done).
    fn session_ended(&self, session: &str) {
        self.safety.session_ended(session);
        self.queue.session_ended(session);
    }

    /// The operator's policy arrived (in the welcome) or changed.
    fn set_operator_policy(&self, policy: Policy) {
        self.safety.set_operator_policy(policy);
    }

    fn reached_through(&self) -> &str {
        &self.serial
    }
}

/// The probe's output: five property lines, then `wm size`'s.
fn parse_probe(text: &str, serial: &str) -> Result<DeviceFacts, OpError> {
    let lines: Vec<&str> = text.split('\n').collect();
    let prop = |i: usize| lines.get(i).map_or("", |l| l.trim()).to_owned();
    let size_of = |label: &str| {
        lines.iter().find_map(|line| {
            let (w, h) = line.trim().strip_prefix(label)?.trim().split_once('x')?;
            Some(ScreenSize {
                width: w.trim().parse().ok()?,
                height: h.trim().parse().ok()?,
            })
        })
    };
    let screen = size_of("Override size:")
        .or_else(|| size_of("Physical size:"))
        .filter(|s| s.width > 0 && s.height > 0)
        .ok_or_else(|| {
            OpError::new(
                ErrorCode::DeviceError,
                format!(
                    "The device {serial} did not report its screen size (`wm size` printed \
                     nothing usable)."
                ),
            )
        })?;
    let serialno = prop(0);
    let android_id = lines
        .iter()
        .find_map(|line| line.trim().strip_prefix("android_id:"))
        .map(|id| id.trim().to_ascii_lowercase())
        .filter(|id| {
            (1..=64).contains(&id.len())
                && id.bytes().all(|b| b.is_ascii_hexdigit())
                && id.bytes().any(|b| b != b'0')
        })
        .unwrap_or_default();
    Ok(DeviceFacts {
        android_id,
        serialno: if serialno.is_empty() {
            serial.to_owned()
        } else {
            serialno
        },
        manufacturer: prop(1),
        model: prop(2),
        os_version: prop(3),
        sdk: prop(4).parse().ok(),
        screen,
    })
}
