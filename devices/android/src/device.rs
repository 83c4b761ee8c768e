//! One attached device, as the hub's operations see it: [`Device::execute`] runs a
//! [`DeviceOp`] against it through adb and answers with its [`DeviceResult`].
//!
//! Operations on one device run one at a time, in the order they arrive. The device keeps its
//! leases (which MCP session may change it) and its policy (the operator's, from the hub, and
//! the device owner's `--policy`), and judges every action against the foreground app it reads
//! right before acting.

use std::sync::Arc;
use std::time::Duration;

use tabwire_protocol::devices::{DeviceOp, DeviceResult, ScreenSize};
use tabwire_protocol::policy::Policy;
use tabwire_protocol::{ErrorCode, LeaseHolder, OpError};

use crate::adb::Adb;

/// What the backend learns about a device before announcing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceFacts {
    /// The device's own serial number (`ro.serialno`), the same over USB and Wi-Fi.
    pub serialno: String,
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

/// How the backend was started, as far as a device's operations care.
#[derive(Debug, Clone, Default)]
pub struct DeviceOptions {
    /// `--allow-destructive`: clearing app data is allowed.
    pub allow_destructive: bool,
    /// The device owner's policy (`--policy FILE`); the stricter of it and the operator's
    /// applies.
    pub owner_policy: Option<Policy>,
}

/// One attached device.
pub struct Device<A: Adb> {
    adb: Arc<A>,
    serial: String,
    facts: DeviceFacts,
    options: DeviceOptions,
}

impl<A: Adb> Device<A> {
    /// Reads the facts a hello needs from the device at `serial`.
    pub async fn probe(adb: &A, serial: &str) -> Result<DeviceFacts, OpError> {
        let _ = (adb, serial);
        Err(not_yet())
    }

    /// The device at `serial` (an adb serial: `emulator-5554`, `192.168.1.5:5555`).
    pub fn new(adb: Arc<A>, serial: String, facts: DeviceFacts, options: DeviceOptions) -> Self {
        Device {
            adb,
            serial,
            facts,
            options,
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

    /// Runs one operation for `holder` (sent with every changing operation) within `deadline`.
    pub async fn execute(
        &self,
        op: DeviceOp,
        holder: Option<LeaseHolder>,
        deadline: Duration,
    ) -> Result<DeviceResult, OpError> {
        let _ = (&self.adb, &self.options, op, holder, deadline);
        Err(not_yet())
    }

    /// An MCP session of the hub ended: its lease on this device lapses.
    pub fn session_ended(&self, session: &str) {
        let _ = session;
    }

    /// The operator's policy arrived (in the welcome) or changed.
    pub fn set_operator_policy(&self, policy: Policy) {
        let _ = policy;
    }
}

fn not_yet() -> OpError {
    OpError::new(ErrorCode::Internal, "device operations are not built yet")
}
