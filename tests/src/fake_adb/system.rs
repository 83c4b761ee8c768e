//! The fake device's system commands: `dumpsys` (keyboard, focused window, displays), `wm`,
//! `getprop`, `pm`, `cmd`, `am`, `monkey`, `pidof`, `ps`, `settings`, and the file commands
//! `cat`, `rm`, `touch` on the device's file system. Their output follows what Android 13 and
//! 14 print, down to the lines a careless parser trips on (the IME's stale
//! `mIsInputViewShown`, monkey's noise on stderr).

use super::command::{Output, advance, current_xml, device_path};
use super::hierarchy;
use super::scenario::{DeviceConfig, DeviceState, ScenarioDir};

/// The display's unique ID, as emulators report it.
const DISPLAY_ID: &str = "4619827259835644672";

/// Runs one of the commands above.
pub fn run(dir: &ScenarioDir, serial: &str, name: &str, args: &[String]) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let config = dir.config(serial);
    match name {
        "dumpsys" => dumpsys(dir, serial, &config, &args),
        "wm" => wm(&config, &args),
        "getprop" => getprop(&config, &args),
        "pm" => pm(dir, serial, &config, &args),
        "cmd" => cmd(dir, serial, &config, &args),
        "am" => am(dir, serial, &config, &args),
        "monkey" => monkey(dir, serial, &config, &args),
        "pidof" => pidof(&config, &args),
        "ps" => ps(&config),
        "settings" => settings(&args),
        "cat" => cat(dir, serial, &args),
        "rm" => rm(dir, serial, &args),
        "touch" => touch(dir, serial, &args),
        other => Output::error(
            127,
            format!("/system/bin/sh: {other}: inaccessible or not found"),
        ),
    }
}

/// The focused window as `package/full.ActivityName`, or `None` when nothing is focused.
fn focus(
    dir: &ScenarioDir,
    serial: &str,
    config: &DeviceConfig,
    state: &DeviceState,
) -> Option<String> {
    if let Some(focus) = &state.focus {
        return Some(focus.clone());
    }
    let xml = current_xml(dir, serial)?;
    let package = hierarchy::nodes(&xml).first()?.get("package").to_owned();
    let activity = config
        .activities
        .get(&package)
        .cloned()
        .unwrap_or_else(|| ".MainActivity".into());
    Some(format!("{package}/{}", full_activity(&package, &activity)))
}

fn full_activity(package: &str, activity: &str) -> String {
    match activity.strip_prefix('.') {
        Some(short) => format!("{package}.{short}"),
        None => activity.to_owned(),
    }
}

fn dumpsys(dir: &ScenarioDir, serial: &str, config: &DeviceConfig, args: &[&str]) -> Output {
    let state = dir.state(serial);
    match args.first().copied() {
        Some("input_method") => {
            let shown = state.keyboard;
            let view = state.input_view_ever_shown;
            Output::text(format!(
                "Current method state:\n\
                 \x20 mSystemReady=true mInteractive=true\n\
                 \x20 mSettingsObserver=SettingsObserver{{mUserId=0 mRegistered=true mLastEnabled=com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME}}\n\
                 \x20 mMethodMapUpdateCount=3\n\
                 \x20 mCurMethodId=com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME\n\
                 \x20 mCurSeq=12 mCurClient=ClientState{{c3a91e0 mUid=10162 mPid=8123 mSelfReportedDisplayId=0}}\n\
                 \x20 mCurFocusedWindowSoftInputMode=STATE_UNSPECIFIED|ADJUST_RESIZE|IS_FORWARD_NAVIGATION\n\
                 \x20 mCurId=com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME mHaveConnection=true mBoundToMethod=true mVisibleBound=true\n\
                 \x20 mCurToken=android.os.Binder@8f2e6d1\n\
                 \x20 mCurHostInputToken=null\n\
                 \x20 mCurIntent=Intent {{ act=android.view.InputMethod cmp=com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME }}\n\
                 \x20 mCurMethod=com.android.internal.inputmethod.IInputMethod$Stub$Proxy@1d7f3a2\n\
                 \x20 mEnabledSession=SessionState{{uid 10109 pid 3411 method 4c2b9e1 session 7a1d0c3 channel ClientToIme}}\n\
                 \x20 mShowRequested={shown} mShowExplicitlyRequested=false mShowForced=false mInputShown={shown}\n\
                 \x20 mInFullscreenMode=false\n\
                 \x20 mSystemReady=true mScreenOn=true\n\
                 Input method service state:\n\
                 \x20 mWindowVisible={shown} mWindowWasVisible={view} mInShowWindow=false\n\
                 \x20 mIsInputViewShown={view} mInputViewStarted={view}\n\
                 \x20 mCandidatesVisibility=4 mFullscreenApplied=false\n"
            ))
        }
        Some("window") => {
            let focus = focus(dir, serial, config, &state);
            let mut out = String::from("WINDOW MANAGER WINDOWS (dumpsys window windows)\n");
            out.push_str("  Window #0 Window{2b4a1f3 u0 NavigationBar0}:\n    mDisplayId=0 rootTaskId=1 mSession=Session{d0e1f2a 1342:u0a10078} mClient=android.os.BinderProxy@9c8b7a6\n");
            if state.keyboard {
                out.push_str("  Window #1 Window{5e6f7a8 u0 InputMethod}:\n    mDisplayId=0 rootTaskId=1 mHasSurface=true isReadyForDisplay()=true\n");
            }
            match &focus {
                Some(focus) => {
                    let (package, activity) = focus.split_once('/').unwrap_or((focus, ""));
                    let short = activity
                        .strip_prefix(package)
                        .map(|rest| rest.to_owned())
                        .unwrap_or_else(|| activity.to_owned());
                    out.push_str(&format!(
                        "  Window #2 Window{{8c1f2a7 u0 {focus}}}:\n    mDisplayId=0 rootTaskId=42 mHasSurface=true\n\n\
                         \x20 mGlobalConfiguration={{1.0 ?mcc?mnc [en_US] ldltr sw411dp w411dp h914dp 420dpi nrml long port finger -keyb/v/h -nav/h winConfig={{ mBounds=Rect(0, 0 - {w}, {h}) }} s.6}}\n\
                         \x20 mHasPermanentDpad=false\n\
                         \x20 mTopFocusedDisplayId=0\n\
                         \x20 mInputMethodWindow={ime}\n\
                         \x20 mCurrentFocus=Window{{8c1f2a7 u0 {focus}}}\n\
                         \x20 mFocusedApp=ActivityRecord{{9d1a3b2 u0 {package}/{short} t42}}\n",
                        w = config.screen_size()[0],
                        h = config.screen_size()[1],
                        ime = if state.keyboard { "Window{5e6f7a8 u0 InputMethod}" } else { "null" },
                    ));
                }
                None => out.push_str("\n  mCurrentFocus=null\n  mFocusedApp=null\n"),
            }
            Output::text(out)
        }
        Some("activity") => {
            let focus = focus(dir, serial, config, &state).unwrap_or_default();
            Output::text(format!(
                "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\n\
                 Display #0 (activities from top to bottom):\n\
                 \x20 * Task{{e3d2c1b #42 type=standard A=10162:{focus} U=0 visible=true mode=fullscreen}}\n\
                 \x20   mResumedActivity: ActivityRecord{{9d1a3b2 u0 {focus} t42}}\n\
                 \x20 ResumedActivity: ActivityRecord{{9d1a3b2 u0 {focus} t42}}\n"
            ))
        }
        Some("SurfaceFlinger") if args.contains(&"--display-id") => Output::text(format!(
            "Display {DISPLAY_ID} (HWC display 0): port=0 pnpId=GGL displayName=\"EMU_display_0\"\n"
        )),
        Some("display") => Output::text(format!(
            "DISPLAY MANAGER (dumpsys display)\n  mViewports=[DisplayViewport{{type=INTERNAL, valid=true, isActive=true, displayId=0, uniqueId='local:{DISPLAY_ID}', physicalPort=0, orientation=0, logicalFrame=Rect(0, 0 - {w}, {h})}}]\n",
            w = config.screen_size()[0],
            h = config.screen_size()[1],
        )),
        Some(service) => Output::text(format!("Can't find service: {service}\n")),
        None => Output::text(
            "Currently running services:\n  activity\n  display\n  input_method\n  window\n",
        ),
    }
}

fn wm(config: &DeviceConfig, args: &[&str]) -> Output {
    match args {
        ["size"] => {
            let [w, h] = config.physical_size;
            let mut out = format!("Physical size: {w}x{h}\n");
            if let Some([ow, oh]) = config.override_size {
                out.push_str(&format!("Override size: {ow}x{oh}\n"));
            }
            Output::text(out)
        }
        ["density"] => Output::text(format!("Physical density: {}\n", config.density)),
        _ => Output::error(1, format!("Error: unknown command '{}'", args.join(" "))),
    }
}

fn getprop(config: &DeviceConfig, args: &[&str]) -> Output {
    match args {
        [] => Output::text(
            config
                .props
                .iter()
                .map(|(k, v)| format!("[{k}]: [{v}]\n"))
                .collect::<String>(),
        ),
        [key, rest @ ..] => {
            let value = config
                .props
                .get(*key)
                .map(String::as_str)
                .or(rest.first().copied())
                .unwrap_or("");
            Output::text(format!("{value}\n"))
        }
    }
}

fn launchable(config: &DeviceConfig, package: &str) -> Option<String> {
    config
        .packages
        .iter()
        .any(|p| p == package)
        .then(|| config.activities.get(package).cloned())
        .flatten()
}

fn pm(dir: &ScenarioDir, serial: &str, config: &DeviceConfig, args: &[&str]) -> Output {
    match args {
        ["list", "packages", rest @ ..] => {
            let filter = rest
                .iter()
                .find(|w| !w.starts_with('-'))
                .copied()
                .unwrap_or("");
            Output::text(
                config
                    .packages
                    .iter()
                    .filter(|p| p.contains(filter))
                    .map(|p| format!("package:{p}\n"))
                    .collect::<String>(),
            )
        }
        ["list", "features"] => Output::text(
            "feature:android.hardware.touchscreen\nfeature:android.hardware.wifi\n\
             feature:android.software.home_screen\nfeature:reqGlEsVersion=0x30002\n",
        ),
        ["path", package] => match config.packages.iter().any(|p| p == package) {
            true => Output::text(format!(
                "package:/data/app/~~q3ZxW1bB9fVnA==/{package}-k2Lr8s==/base.apk\n"
            )),
            false => Output::error(1, ""),
        },
        ["clear", rest @ ..] => {
            let Some(package) = rest
                .iter()
                .rev()
                .find(|w| !w.starts_with('-') && w.contains('.'))
            else {
                return Output::error(1, "Error: no package specified");
            };
            if !config.packages.iter().any(|p| p == package) {
                return Output::text("Failed\n");
            }
            let event: Vec<String> = ["pm", "clear", package].map(str::to_owned).into();
            advance(dir, serial, &event, |state| {
                state.cleared.push((*package).to_owned());
                false
            });
            Output::text("Success\n")
        }
        _ => Output::error(
            1,
            format!("Unknown command: {}", args.first().unwrap_or(&"")),
        ),
    }
}

fn cmd(dir: &ScenarioDir, serial: &str, config: &DeviceConfig, args: &[&str]) -> Output {
    match args {
        ["package", "resolve-activity", rest @ ..] => {
            let package = rest.last().copied().unwrap_or("");
            match launchable(config, package) {
                Some(activity) => Output::text(format!(
                    "priority=0 preferredOrder=0 match=0x108000 specialized=false isDefault=false\n{package}/{}\n",
                    full_activity(package, &activity)
                )),
                None => Output::text("No activity found\n"),
            }
        }
        ["package", "query-activities", ..] => {
            let mut out = String::new();
            for (index, package) in config.packages.iter().enumerate() {
                if let Some(activity) = launchable(config, package) {
                    out.push_str(&format!(
                        "Activity #{index}:\n  priority=0 preferredOrder=0 match=0x108000 specialized=false isDefault=false\n  ActivityInfo:\n    name={}\n    packageName={package}\n    enabled=true exported=true directBootAware=false\n",
                        full_activity(package, &activity)
                    ));
                }
            }
            Output::text(out)
        }
        ["package", "list", "packages", rest @ ..] => {
            let mut pm_args = vec!["list", "packages"];
            pm_args.extend_from_slice(rest);
            pm(dir, serial, config, &pm_args)
        }
        ["display", "get-displays"] => {
            let [w, h] = config.screen_size();
            Output::text(format!(
                "Displays:\n  Display id 0: DisplayInfo{{\"Built-in Screen\", displayId 0, displayGroupId 0, FLAG_SECURE, FLAG_SUPPORTS_PROTECTED_BUFFERS, FLAG_TRUSTED, real {w} x {h}, largest app {w} x {h}, smallest app {w} x {h}, appVsyncOff 0, presDeadline 16666666, mode 1, state ON, committedState ON, uniqueId \"local:{DISPLAY_ID}\", type INTERNAL}}\n"
            ))
        }
        [service, ..] => Output::error(20, format!("cmd: Can't find service: {service}")),
        [] => Output::error(1, "cmd: no service specified"),
    }
}

fn am(dir: &ScenarioDir, serial: &str, config: &DeviceConfig, args: &[&str]) -> Output {
    let event: Vec<String> = std::iter::once("am")
        .chain(args.iter().copied())
        .map(str::to_owned)
        .collect();
    match args.first().copied() {
        Some("start" | "start-activity") => {
            let component = args
                .windows(2)
                .find(|pair| pair[0] == "-n")
                .map(|pair| pair[1]);
            let Some(component) = component else {
                return Output::error(1, "Error: the fake device starts activities by -n only");
            };
            let package = component.split('/').next().unwrap_or_default();
            if !config.packages.iter().any(|p| p == package) {
                return Output::error(
                    1,
                    format!(
                        "Starting: Intent {{ cmp={component} }}\nError type 3\nError: Activity class {{{component}}} does not exist."
                    ),
                );
            }
            let focus = format!(
                "{package}/{}",
                full_activity(
                    package,
                    component.split('/').nth(1).unwrap_or(".MainActivity")
                )
            );
            launched(dir, serial, &event, focus);
            Output::text(format!("Starting: Intent {{ cmp={component} }}\n"))
        }
        Some("force-stop" | "kill") => {
            advance(dir, serial, &event, |_| false);
            Output::default()
        }
        Some("broadcast") => {
            advance(dir, serial, &event, |_| false);
            Output::text("Broadcasting: Intent { flg=0x400000 }\nBroadcast completed: result=0\n")
        }
        _ => Output::error(
            1,
            format!("Error: Unknown command: {}", args.first().unwrap_or(&"")),
        ),
    }
}

/// An app came to the front: the rules may move to its screen; if none does, the focused
/// window is the app's even though the screen's hierarchy did not change.
fn launched(dir: &ScenarioDir, serial: &str, event: &[String], focus: String) {
    let rules = dir.rules(serial);
    dir.update_state(serial, |state| {
        if super::scenario::apply_rules(&rules, state, event) {
            state.focus = None;
        } else {
            state.focus = Some(focus);
        }
    });
}

fn monkey(dir: &ScenarioDir, serial: &str, config: &DeviceConfig, args: &[&str]) -> Output {
    let package = args
        .windows(2)
        .find(|pair| pair[0] == "-p")
        .map(|pair| pair[1]);
    let mut noise: String = args
        .iter()
        .map(|arg| format!("  bash arg: {arg}\n"))
        .collect();
    noise.push_str(&format!("args: [{}]\n", args.join(", ")));
    let activity = package.and_then(|package| launchable(config, package));
    let (Some(package), Some(activity)) = (package, activity) else {
        return Output {
            stdout: b"** No activities found to run, monkey aborted.\n".to_vec(),
            stderr: noise.into_bytes(),
            status: 251,
        };
    };
    let event: Vec<String> = std::iter::once("monkey")
        .chain(args.iter().copied())
        .map(str::to_owned)
        .collect();
    launched(
        dir,
        serial,
        &event,
        format!("{package}/{}", full_activity(package, &activity)),
    );
    Output {
        stdout: b"Events injected: 1\n## Network stats: elapsed time=11ms (0ms mobile, 0ms wifi, 11ms not connected)\n".to_vec(),
        stderr: noise.into_bytes(),
        status: 0,
    }
}

fn pidof(config: &DeviceConfig, args: &[&str]) -> Output {
    let pids: Vec<String> = args
        .iter()
        .filter_map(|name| config.pids.get(*name))
        .map(u32::to_string)
        .collect();
    if pids.is_empty() {
        return Output {
            status: 1,
            ..Output::default()
        };
    }
    Output::text(format!("{}\n", pids.join(" ")))
}

fn ps(config: &DeviceConfig) -> Output {
    let mut out =
        String::from("USER            PID   PPID        VSZ    RSS WCHAN            ADDR S NAME\n");
    out.push_str("root              1      0   10932248  12044 do_epoll_wait       0 S init\n");
    for (index, (name, pid)) in config.pids.iter().enumerate() {
        out.push_str(&format!(
            "u0_a{:<3}      {pid:>5}    312   14958280 132412 do_epoll_wait       0 S {name}\n",
            160 + index
        ));
    }
    Output::text(out)
}

fn settings(args: &[&str]) -> Output {
    match args {
        ["get", _, "user_rotation"] => Output::text("0\n"),
        ["get", ..] => Output::text("null\n"),
        ["put", ..] => Output::default(),
        _ => Output::error(
            1,
            "usage: settings [--user <USER_ID> | current] get namespace key",
        ),
    }
}

fn cat(dir: &ScenarioDir, serial: &str, args: &[&str]) -> Output {
    let mut out = Output::default();
    for path in args.iter().filter(|a| !a.starts_with('-')) {
        match std::fs::read(device_path(dir, serial, path)) {
            Ok(bytes) => out.stdout.extend(bytes),
            Err(_) => {
                out.stderr
                    .extend(format!("cat: {path}: No such file or directory\n").bytes());
                out.status = 1;
            }
        }
    }
    out
}

fn rm(dir: &ScenarioDir, serial: &str, args: &[&str]) -> Output {
    let force = args.iter().any(|a| a.starts_with('-') && a.contains('f'));
    let mut out = Output::default();
    for path in args.iter().filter(|a| !a.starts_with('-')) {
        if std::fs::remove_file(device_path(dir, serial, path)).is_err() && !force {
            out.stderr
                .extend(format!("rm: {path}: No such file or directory\n").bytes());
            out.status = 1;
        }
    }
    out
}

fn touch(dir: &ScenarioDir, serial: &str, args: &[&str]) -> Output {
    for path in args.iter().filter(|a| !a.starts_with('-')) {
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(device_path(dir, serial, path));
    }
    Output::default()
}
