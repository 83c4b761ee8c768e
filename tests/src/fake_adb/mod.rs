//! A scripted fake `adb` for the device backend's tests and benchmark: argv-compatible with the
//! real program (`[-s SERIAL] devices [-l] | track-devices | get-state | shell ARGS… |
//! exec-out ARGS…`), serving the scenario in `$FAKE_ADB_DIR` ([`scenario`] describes the
//! directory), which tests write and change while it runs.
//!
//! One binary plays both ends (`src/bin/fake_adb.rs`): started as `adb` or `fake-adb` it is the
//! host program ([`host`]); started through one of the links in the scenario's `bin/` (as
//! `input`, `uiautomator`, `dumpsys`, …) it is that command on the device ([`device`],
//! [`system`], [`logcat`], [`screencap`]). Between the two sits a real shell: `shell` and
//! `exec-out` join their arguments with spaces and run the string with `sh -c`, as a device
//! does, so a backend's quoting is tested by what actually runs.
//!
//! What it cannot show: the timing and flakiness of a real device (dumps here take
//! milliseconds, not seconds), Android's own shell (mksh) where it differs from the host's
//! POSIX `sh`, and any hierarchy nobody wrote down.

pub mod command;
pub mod device;
pub mod hierarchy;
pub mod host;
pub mod logcat;
pub mod scenario;
pub mod screencap;
pub mod system;

/// The fake's entry point: dispatches on the name it was started as.
pub fn main() -> i32 {
    let mut args = std::env::args();
    let program = args.next().unwrap_or_default();
    let name = std::path::Path::new(&program)
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(dir) = scenario::ScenarioDir::from_env() else {
        eprintln!(
            "{name}: {} is not set: the fake adb serves a scenario directory",
            scenario::DIR_VAR
        );
        return 1;
    };
    let args: Vec<String> = args.collect();
    if scenario::DEVICE_COMMANDS.contains(&name.as_str()) {
        device::run(&dir, &name, args)
    } else {
        host::run(&dir, args)
    }
}
