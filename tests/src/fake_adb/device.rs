//! The fake device's side: the commands `adb shell` and `adb exec-out` run there, each a link
//! to the fake adb binary started under the command's name. Every command is recorded, reads
//! and advances its device's state (the screen, the keyboard, pending dump failures) under the
//! device's lock, and may be told to hang or to lose its device half-way (`DeviceState`).
//!
//! This module holds the dispatch, `input` and `uiautomator`; [`super::system`] the other
//! system commands, [`super::logcat`] the log and [`super::screencap`] screenshots.

use std::io::Write;
use std::time::Duration;

use super::command::{Output, advance, current_xml, device_path};
use super::hierarchy;
use super::scenario::{CallKind, CallRecord, ScenarioDir, apply_rules, now_us};

/// How long a command told to hang waits at most for the test to release it.
const HANG_LIMIT: Duration = Duration::from_secs(120);

/// Runs the device command `name ARGS…` on the device `$FAKE_ADB_SERIAL`; returns its status.
pub fn run(dir: &ScenarioDir, name: &str, args: Vec<String>) -> i32 {
    let start_us = now_us();
    let serial = std::env::var(super::scenario::SERIAL_VAR).unwrap_or_default();
    let mut argv = vec![name.to_owned()];
    argv.extend(args.iter().cloned());
    let record = |status: i32| CallRecord {
        kind: CallKind::Device,
        argv: argv.clone(),
        serial: Some(serial.clone()),
        pid: std::process::id(),
        start_us,
        end_us: Some(now_us()),
        status: Some(status),
    };
    if !wait_while_hung(dir, &serial, name) {
        // The device went away while the command hung: the transport is gone, nothing printed.
        dir.log_call(&record(255));
        return 255;
    }
    let vanish = dir
        .update_state(&serial, |state| {
            (state.vanish_on.as_deref() == Some(name)).then(|| state.vanish_on = None)
        })
        .and_then(|(_, vanish)| vanish)
        .is_some();
    if name == "logcat" && super::logcat::follows(&args) {
        let status = super::logcat::follow(dir, &serial, &args);
        dir.log_call(&record(status));
        return status;
    }
    let output = dispatch(dir, &serial, name, &args);
    let mut stdout = std::io::stdout().lock();
    if vanish {
        // Half of the output, then the device is gone: unplugged mid-command.
        let half = output.stdout.len().div_ceil(2).min(output.stdout.len());
        let _ = stdout.write_all(&output.stdout[..half]);
        let _ = stdout.flush();
        let remaining: Vec<_> = dir
            .devices()
            .into_iter()
            .filter(|listed| listed.serial != serial)
            .collect();
        dir.set_devices(&remaining);
        dir.log_call(&record(255));
        return 255;
    }
    let _ = stdout.write_all(&output.stdout);
    let _ = stdout.flush();
    let _ = std::io::stderr().write_all(&output.stderr);
    dir.log_call(&record(output.status));
    output.status
}

/// Waits while the state says this command hangs; false when the device went away meanwhile.
/// While it waits, the state counts it in `hanging`.
fn wait_while_hung(dir: &ScenarioDir, serial: &str, name: &str) -> bool {
    let hangs = |state: &super::scenario::DeviceState| state.hang_on.as_deref() == Some(name);
    let marked = dir
        .update_state(serial, |state| {
            let hang = hangs(state);
            state.hanging += u32::from(hang);
            hang
        })
        .is_some_and(|(_, hang)| hang);
    if !marked {
        return true;
    }
    let give_up = std::time::Instant::now() + HANG_LIMIT;
    let released = loop {
        if !hangs(&dir.state(serial)) {
            break true;
        }
        let present = dir.state_of(serial).is_some_and(|state| state == "device");
        if !present || !dir.root().exists() || std::time::Instant::now() > give_up {
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    dir.update_state(serial, |state| {
        state.hanging = state.hanging.saturating_sub(1)
    });
    released
}

fn dispatch(dir: &ScenarioDir, serial: &str, name: &str, args: &[String]) -> Output {
    match name {
        "input" => input(dir, serial, args),
        "uiautomator" => uiautomator(dir, serial, args),
        "screencap" => super::screencap::screencap(dir, serial, args),
        "logcat" => super::logcat::dump(dir, serial, args),
        other => super::system::run(dir, serial, other, args),
    }
}

/// The input sources `input` accepts before its command.
const SOURCES: &[&str] = &[
    "keyboard",
    "mouse",
    "joystick",
    "touchnavigation",
    "touchpad",
    "trackball",
    "dpad",
    "stylus",
    "gamepad",
    "touchscreen",
    "rotaryencoder",
];

const INPUT_USAGE: &str = "Usage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]\n\
The commands and default sources are:\n\
      text <string> (Default: touchscreen)\n\
      keyevent [--longpress|--doubletap] <key code number or name> ... (Default: keyboard)\n\
      tap <x> <y> (Default: touchscreen)\n\
      swipe <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)\n\
      draganddrop <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)\n";

/// `input`: taps, swipes, text and key events, normalised into the event the rules match.
fn input(dir: &ScenarioDir, serial: &str, args: &[String]) -> Output {
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    if args.first().is_some_and(|first| SOURCES.contains(first)) {
        args.remove(0);
    }
    if args.first() == Some(&"-d") && args.len() >= 2 {
        args.drain(..2);
    }
    let Some((&command, rest)) = args.split_first() else {
        return Output::error(1, INPUT_USAGE);
    };
    let bad = |what: &str| Output::error(1, format!("Error: {what}\n{INPUT_USAGE}"));
    let mut event = vec!["input".to_owned(), command.to_owned()];
    match command {
        "tap" => {
            let Some([x, y]) = numbers::<2>(rest) else {
                return bad("Invalid arguments for command: tap");
            };
            event.extend([coordinate(x), coordinate(y)]);
            let screen_xml = current_xml(dir, serial);
            let on_field = screen_xml
                .and_then(|xml| hierarchy::node_at(&xml, x, y))
                .is_some_and(|node| node.get("class").ends_with("EditText"));
            advance(dir, serial, &event, |state| {
                if on_field {
                    state.keyboard = true;
                    state.input_view_ever_shown = true;
                }
                false
            });
        }
        "swipe" | "draganddrop" => {
            let (points, duration) = match rest.len() {
                4 => (numbers::<4>(rest), None),
                5 => (numbers::<4>(&rest[..4]), rest[4].parse::<u64>().ok()),
                _ => (None, None),
            };
            let Some(points) = points else {
                return bad(&format!("Invalid arguments for command: {command}"));
            };
            if rest.len() == 5 && duration.is_none() {
                return bad(&format!("Invalid arguments for command: {command}"));
            }
            event.extend(points.iter().map(|n| coordinate(*n)));
            event.extend(duration.map(|d| d.to_string()));
            advance(dir, serial, &event, |_| false);
        }
        "text" => {
            // Real `input text` takes its next argument and ignores any others.
            let Some(raw) = rest.first() else {
                return bad("Invalid arguments for command: text");
            };
            if let Some(bad_char) = raw
                .chars()
                .find(|c| !(c.is_ascii_graphic() || matches!(c, ' ' | '\n' | '\t')))
            {
                return Output::error(
                    1,
                    format!(
                        "Exception occurred while executing 'text':\n\
                         java.lang.NullPointerException: Attempt to get length of null array \
                         (no key events for {bad_char:?})\n\
                         \tat com.android.server.input.InputShellCommand.sendText(\
                         InputShellCommand.java:219)"
                    ),
                );
            }
            let typed = raw.replace("%s", " ");
            event.push((*raw).to_owned());
            advance(dir, serial, &event, |state| {
                state.typed.push(typed);
                false
            });
        }
        "keyevent" => {
            let mut codes = Vec::new();
            let mut flags = rest.iter().peekable();
            while let Some(flag) = flags.peek() {
                match **flag {
                    "--longpress" | "--doubletap" => {
                        flags.next();
                    }
                    "--duration" => {
                        flags.next();
                        flags.next();
                    }
                    _ => break,
                }
            }
            for name in flags {
                match keycode(name) {
                    Some(code) => codes.push(code),
                    None => return bad(&format!("Unknown keycode: {name}")),
                }
            }
            if codes.is_empty() {
                return bad("Invalid arguments for command: keyevent");
            }
            for code in codes {
                let mut event = event.clone();
                event.push(code.to_string());
                advance(dir, serial, &event, |state| {
                    // Back while the keyboard shows hides the keyboard and nothing else.
                    if code == 4 && state.keyboard {
                        state.keyboard = false;
                        return true;
                    }
                    false
                });
            }
        }
        other => return bad(&format!("Unknown command: {other}")),
    }
    Output::default()
}

/// Parses exactly `N` numbers (Android's `input` takes floats).
fn numbers<const N: usize>(words: &[&str]) -> Option<[f64; N]> {
    if words.len() != N {
        return None;
    }
    let parsed: Vec<f64> = words
        .iter()
        .map(|w| w.parse::<f64>().ok().filter(|n| n.is_finite()))
        .collect::<Option<_>>()?;
    parsed.try_into().ok()
}

/// A coordinate as the rules write it: an integer when it is one.
fn coordinate(n: f64) -> String {
    if n.fract() == 0.0 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

/// A key code by number or name (`KEYCODE_BACK`, `BACK`, `4`).
fn keycode(name: &str) -> Option<u32> {
    if let Ok(code) = name.parse() {
        return Some(code);
    }
    let name = name.strip_prefix("KEYCODE_").unwrap_or(name);
    if name.len() == 1 {
        let c = name.as_bytes()[0];
        if c.is_ascii_uppercase() {
            return Some(29 + u32::from(c - b'A'));
        }
        if c.is_ascii_digit() {
            return Some(7 + u32::from(c - b'0'));
        }
    }
    Some(match name {
        "HOME" => 3,
        "BACK" => 4,
        "DPAD_UP" => 19,
        "DPAD_DOWN" => 20,
        "DPAD_LEFT" => 21,
        "DPAD_RIGHT" => 22,
        "DPAD_CENTER" => 23,
        "VOLUME_UP" => 24,
        "VOLUME_DOWN" => 25,
        "POWER" => 26,
        "TAB" => 61,
        "SPACE" => 62,
        "ENTER" => 66,
        "DEL" => 67,
        "MENU" => 82,
        "SEARCH" => 84,
        "ESCAPE" => 111,
        "FORWARD_DEL" => 112,
        "MOVE_HOME" => 122,
        "MOVE_END" => 123,
        "APP_SWITCH" => 187,
        "WAKEUP" => 224,
        "PASTE" => 279,
        _ => return None,
    })
}

/// `uiautomator dump [--compressed] [FILE]`: the screen's hierarchy, or one of the failures
/// that exit 0, counted by the rules as `dump N`.
fn uiautomator(dir: &ScenarioDir, serial: &str, args: &[String]) -> Output {
    let usage = "Usage: uiautomator <subcommand> [options]\n\nAvailable subcommands:\n\n\
                 help: displays help message\n\n\
                 dump: creates an XML dump of current UI hierarchy\n\
                 \tdump [--verbose][--compressed][file]\n";
    let mut words = args.iter().map(String::as_str);
    if words.next() != Some("dump") {
        return Output::error(1, usage);
    }
    let file = words
        .rfind(|w| !w.starts_with("--"))
        .unwrap_or("/sdcard/window_dump.xml")
        .to_owned();
    let rules = dir.rules(serial);
    let outcome = dir.update_state(serial, |state| {
        if !state.pending_failures.is_empty() {
            return Err(state.pending_failures.remove(0).message().to_owned());
        }
        let Some(xml) = dir.screen_xml(&state.screen) else {
            return Err(super::scenario::DumpFailure::NullRoot.message().to_owned());
        };
        state.dumps_on_screen += 1;
        let event = vec!["dump".to_owned(), state.dumps_on_screen.to_string()];
        apply_rules(&rules, state, &event);
        Ok(xml)
    });
    let xml = match outcome {
        Some((_, Ok(xml))) => xml,
        // Every one of these exits 0: only the text says the dump failed.
        Some((_, Err(message))) => return Output::error(0, message),
        None => return Output::error(255, "device gone"),
    };
    let trailer = format!("UI hierchary dumped to: {file}\n");
    if file == "/dev/tty" {
        return Output::text(format!("{xml}{trailer}"));
    }
    let path = device_path(dir, serial, &file);
    if let Err(error) = std::fs::write(&path, xml) {
        return Output::error(
            1,
            format!("java.io.FileNotFoundException: {file}: open failed: {error}"),
        );
    }
    Output::text(trailer)
}
