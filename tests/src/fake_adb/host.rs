//! The fake's host side: the `adb` program's own commands (`devices`, `track-devices`,
//! `get-state`, …) and its transport to a device (`shell`, `exec-out`), answering with the
//! messages and exit statuses real adb gives.
//!
//! `shell` and `exec-out` do what real adb does with their arguments: join them with spaces
//! and hand the string to the device's shell, which parses it again. Here that shell is the
//! host's `sh -c`, with the device's commands first on its `PATH` and the device's file system
//! as its working directory, so quoting mistakes have the effects they would have on a phone.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::scenario::{CallKind, CallRecord, Listed, ScenarioDir, now_us};

/// How often a running `shell` checks that its device is still there, and `track-devices`
/// that the list has not changed.
const POLL: Duration = Duration::from_millis(20);

/// Runs `adb ARGS…` (without the program's name) and returns its exit status.
pub fn run(dir: &ScenarioDir, args: Vec<String>) -> i32 {
    let start_us = now_us();
    let mut selected = Selection::default();
    let mut rest = args.iter().cloned();
    let command = loop {
        match rest.next().as_deref() {
            Some("-s") => selected.serial = rest.next(),
            Some("-t") => selected.transport = rest.next().and_then(|id| id.parse().ok()),
            Some("-d") => selected.usb = true,
            Some("-e") => selected.emulator = true,
            Some("-H" | "-P" | "-L") => {
                rest.next();
            }
            Some("-a") => {}
            Some(other) => break Some(other.to_owned()),
            None => break None,
        }
    };
    let rest: Vec<String> = rest.collect();
    let record = |status: i32, end: bool, serial: Option<String>| CallRecord {
        kind: CallKind::Adb,
        argv: args.clone(),
        serial,
        pid: std::process::id(),
        start_us,
        end_us: end.then(now_us),
        status: end.then_some(status),
    };
    let Some(command) = command else {
        eprintln!("adb: usage: adb [-s SERIAL] COMMAND");
        dir.log_call(&record(1, true, None));
        return 1;
    };
    match command.as_str() {
        "devices" => {
            let status = devices(dir, rest.iter().any(|a| a == "-l"));
            dir.log_call(&record(status, true, None));
            status
        }
        "track-devices" => {
            // It never ends on its own: recorded as it starts.
            dir.log_call(&record(0, false, None));
            track_devices(dir, rest.iter().any(|a| a == "-l"))
        }
        "start-server" | "kill-server" | "reconnect" => {
            dir.log_call(&record(0, true, None));
            0
        }
        "version" => {
            println!("Android Debug Bridge version 1.0.41");
            println!("Version 29.0.6-debian (tabwire fake)");
            println!(
                "Installed as {}",
                std::env::args().next().unwrap_or_default()
            );
            dir.log_call(&record(0, true, None));
            0
        }
        "get-state" | "get-serialno" | "wait-for-device" | "shell" | "exec-out" => {
            let target = if command == "wait-for-device" {
                wait_for_device(dir, &selected)
            } else {
                selected.resolve(dir)
            };
            let serial = match target {
                Ok(serial) => serial,
                Err(message) => {
                    eprintln!("{message}");
                    dir.log_call(&record(1, true, selected.serial.clone()));
                    return 1;
                }
            };
            let status = match command.as_str() {
                "get-state" => {
                    println!("device");
                    0
                }
                "get-serialno" => {
                    println!("{serial}");
                    0
                }
                "wait-for-device" => 0,
                _ => transport(dir, &serial, &command, &rest, &|status| {
                    dir.log_call(&record(status, true, Some(serial.clone())))
                }),
            };
            dir.log_call(&record(status, true, Some(serial)));
            status
        }
        other => {
            eprintln!(
                "adb: the fake adb does not script `{other}` (it serves devices, \
                 track-devices, get-state, shell and exec-out)"
            );
            dir.log_call(&record(1, true, selected.serial.clone()));
            1
        }
    }
}

/// The device a command addresses: `-s`, `-t`, `-d`/`-e`, `$ANDROID_SERIAL`, else the only one.
#[derive(Debug, Default)]
struct Selection {
    serial: Option<String>,
    transport: Option<u32>,
    usb: bool,
    emulator: bool,
}

impl Selection {
    /// The usable device's serial, or real adb's message for why there is none.
    fn resolve(&self, dir: &ScenarioDir) -> Result<String, String> {
        let devices = dir.devices();
        let serial = self.serial.clone().or_else(|| {
            std::env::var("ANDROID_SERIAL")
                .ok()
                .filter(|s| !s.is_empty())
        });
        let listed = if let Some(serial) = &serial {
            devices.into_iter().find(|d| &d.serial == serial)
        } else if let Some(id) = self.transport {
            match devices.into_iter().find(|d| d.transport_id == id) {
                Some(device) => Some(device),
                None => return Err(format!("adb: no device with transport id '{id}'")),
            }
        } else {
            let candidates: Vec<Listed> = devices
                .into_iter()
                .filter(|d| {
                    let emulator = d.serial.starts_with("emulator-");
                    (!self.usb || !emulator) && (!self.emulator || emulator)
                })
                .collect();
            match candidates.len() {
                0 => return Err("adb: no devices/emulators found".into()),
                1 => candidates.into_iter().next(),
                _ => return Err("adb: more than one device/emulator".into()),
            }
        };
        let Some(listed) = listed else {
            return Err(format!(
                "adb: device '{}' not found",
                serial.unwrap_or_default()
            ));
        };
        usable(&listed).map(|()| listed.serial)
    }
}

/// Whether a listed device can take commands, or real adb's message for its state.
fn usable(listed: &Listed) -> Result<(), String> {
    match listed.state.as_str() {
        "device" => Ok(()),
        "offline" => Err("adb: device offline".into()),
        "unauthorized" => Err(concat!(
            "adb: device unauthorized.\n",
            "This adb server's $ADB_VENDOR_KEYS is not set\n",
            "Try 'adb kill-server' if that seems wrong.\n",
            "Otherwise check for a confirmation dialog on your device."
        )
        .into()),
        "authorizing" => Err("adb: device still authorizing".into()),
        "connecting" => Err("adb: device still connecting".into()),
        state if state.starts_with("no permissions") => Err(format!(
            "adb: insufficient permissions for device{}",
            state.strip_prefix("no permissions").unwrap_or_default()
        )),
        state => Err(format!(
            "adb: device '{}' is in state {state}",
            listed.serial
        )),
    }
}

/// `adb devices [-l]`.
fn devices(dir: &ScenarioDir, long: bool) -> i32 {
    let mut out = String::from("List of devices attached\n");
    for listed in dir.devices() {
        out.push_str(&device_line(dir, &listed, long));
    }
    out.push('\n');
    print!("{out}");
    0
}

/// One line of a devices list, as `devices` and `track-devices` print it.
fn device_line(dir: &ScenarioDir, listed: &Listed, long: bool) -> String {
    if !long {
        return format!("{}\t{}\n", listed.serial, listed.state);
    }
    let mut line = format!("{:<22} {}", listed.serial, listed.state);
    let tcp = listed.serial.contains(':');
    if !tcp && !listed.serial.starts_with("emulator-") {
        line.push_str(&format!(" usb:1-{}", listed.transport_id));
    }
    if listed.state == "device" {
        let config = dir.config(&listed.serial);
        let prop = |key: &str| {
            config
                .props
                .get(key)
                .map(|v| v.replace(' ', "_"))
                .unwrap_or_default()
        };
        line.push_str(&format!(
            " product:{} model:{} device:{}",
            prop("ro.product.name"),
            prop("ro.product.model"),
            prop("ro.product.device")
        ));
    }
    line.push_str(&format!(" transport_id:{}\n", listed.transport_id));
    line
}

/// `adb track-devices [-l]`: the whole list, framed by its length in four hex digits, now and
/// after every change, until the reader goes away.
fn track_devices(dir: &ScenarioDir, long: bool) -> i32 {
    let mut last: Option<String> = None;
    let mut stdout = std::io::stdout().lock();
    loop {
        if !dir.root().exists() {
            return 1;
        }
        let body: String = dir
            .devices()
            .iter()
            .map(|listed| device_line(dir, listed, long))
            .collect();
        if last.as_deref() != Some(body.as_str()) {
            let frame = format!("{:04x}{body}", body.len());
            if stdout
                .write_all(frame.as_bytes())
                .and_then(|()| stdout.flush())
                .is_err()
            {
                return 0;
            }
            last = Some(body);
        }
        std::thread::sleep(POLL);
    }
}

/// `adb wait-for-device`: until the selected device is usable.
fn wait_for_device(dir: &ScenarioDir, selected: &Selection) -> Result<String, String> {
    loop {
        if let Ok(serial) = selected.resolve(dir) {
            return Ok(serial);
        }
        if !dir.root().exists() {
            return Err("adb: the scenario is gone".into());
        }
        std::thread::sleep(POLL);
    }
}

/// `shell` / `exec-out` on `serial`: the joined arguments run by the device's shell. `shell`
/// answers the remote status and keeps stderr apart; `exec-out` is a raw stream (stderr mixed
/// into stdout, status 0). A device that goes away while it runs ends it at once with 255.
/// `record` writes this invocation's log line when the watcher ends the process itself.
fn transport(
    dir: &ScenarioDir,
    serial: &str,
    command: &str,
    args: &[String],
    record: &(dyn Fn(i32) + Sync),
) -> i32 {
    let raw = command == "exec-out";
    let mut words = args.iter().peekable();
    if !raw {
        // `shell -n -T -t -x` are options of adb's own, not of the remote command.
        while words
            .peek()
            .is_some_and(|w| matches!(w.as_str(), "-n" | "-T" | "-t" | "-tt" | "-x"))
        {
            words.next();
        }
    }
    let remote: Vec<&str> = words.map(String::as_str).collect();
    if remote.is_empty() {
        eprintln!("adb: the fake adb has no interactive shell");
        return 1;
    }
    let line = remote.join(" ");
    let fs = dir.fs_root(serial);
    let _ = std::fs::create_dir_all(fs.join("sdcard"));
    let _ = std::fs::create_dir_all(fs.join("data/local/tmp"));
    let path = format!("{}:/usr/bin:/bin", dir.bin_dir().display());
    let mut sh = Command::new("/bin/sh");
    sh.arg("-c")
        .arg(&line)
        .current_dir(&fs)
        .env("PATH", path)
        .env(super::scenario::DIR_VAR, dir.root())
        .env(super::scenario::SERIAL_VAR, serial)
        .stdin(Stdio::null())
        .process_group(0);
    if raw {
        // SAFETY: dup of our own stdout, handed to the child as its stderr.
        let stdout = unsafe { libc::dup(1) };
        if stdout >= 0 {
            use std::os::fd::FromRawFd;
            // SAFETY: a fresh descriptor we own.
            sh.stderr(unsafe { Stdio::from(std::os::fd::OwnedFd::from_raw_fd(stdout)) });
        }
    }
    let mut child = match sh.spawn() {
        Ok(child) => child,
        Err(error) => {
            eprintln!("adb: the fake device's shell did not start: {error}");
            return 1;
        }
    };
    let group = child.id() as i32;
    let (finished, wait_for_finish) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            // Wakes at once when the command finishes (the sender is dropped), else every POLL
            // to check that the device is still there.
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                wait_for_finish.recv_timeout(POLL)
            {
                if dir.state_of(serial).is_none_or(|state| state != "device") {
                    // The device went away under a running command: the transport closes.
                    // SAFETY: signalling the process group we started.
                    unsafe { libc::kill(-group, libc::SIGKILL) };
                    let _ = std::io::stdout().flush();
                    record(255);
                    std::process::exit(255);
                }
            }
        });
        let status = child.wait();
        drop(finished);
        let gone = dir.state_of(serial).is_none_or(|state| state != "device");
        match status {
            _ if gone => 255,
            _ if raw => 0,
            Ok(status) => status.code().unwrap_or(255),
            Err(_) => 255,
        }
    })
}
