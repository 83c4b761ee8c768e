//! What every fake device command shares: its output, paths on the device, and advancing the
//! device's state under its lock with its rules.

use super::scenario::{DeviceState, ScenarioDir, apply_rules};

/// What a device command printed and how it ended.
#[derive(Debug, Default)]
pub struct Output {
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error.
    pub stderr: Vec<u8>,
    /// The exit status.
    pub status: i32,
}

impl Output {
    /// Success printing `text`.
    pub fn text(text: impl Into<String>) -> Output {
        Output {
            stdout: text.into().into_bytes(),
            ..Output::default()
        }
    }

    /// Failure `status` with `message` on stderr.
    pub fn error(status: i32, message: impl Into<String>) -> Output {
        let mut message = message.into();
        if !message.ends_with('\n') {
            message.push('\n');
        }
        Output {
            stderr: message.into_bytes(),
            status,
            ..Output::default()
        }
    }
}

/// A path on the device, in the scenario's copy of its file system.
pub fn device_path(dir: &ScenarioDir, serial: &str, path: &str) -> std::path::PathBuf {
    if path.starts_with('/') {
        dir.fs_root(serial).join(path.trim_start_matches('/'))
    } else {
        std::path::PathBuf::from(path)
    }
}

/// Applies the device's rules to `event` (and `extra`, a built-in effect tried first, which
/// returns true when it consumed the event); returns the state after.
pub fn advance(
    dir: &ScenarioDir,
    serial: &str,
    event: &[String],
    extra: impl FnOnce(&mut DeviceState) -> bool,
) -> Option<DeviceState> {
    let rules = dir.rules(serial);
    dir.update_state(serial, |state| {
        if !extra(state) {
            apply_rules(&rules, state, event);
        }
    })
    .map(|(state, ())| state)
}

/// The current screen's hierarchy, compacted; `None` when there is no screen.
pub fn current_xml(dir: &ScenarioDir, serial: &str) -> Option<String> {
    dir.screen_xml(&dir.state(serial).screen)
}
