//! The fake adb itself, run as the backend runs it: real adb's messages and exit statuses, a
//! shell that really parses the joined words again, hot-plugging seen by `track-devices`, the
//! dump failures that exit 0, devices lost or hanging mid-command, screenshots and logs. The
//! device tests lean on these behaviours, so they are pinned here first.

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use tabwire_e2e::device::{Phone, Phones, SHOP_RULES};
use tabwire_e2e::fake_adb::scenario::{CallKind, DIR_VAR, DumpFailure};

fn adb(phones: &Phones, args: &[&str]) -> Output {
    Command::new(phones.adb())
        .args(args)
        .env(DIR_VAR, phones.dir().root())
        .env_remove("ANDROID_SERIAL")
        .stdin(Stdio::null())
        .output()
        .expect("run the fake adb")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn lists_devices_and_refuses_missing_offline_and_unauthorized_ones_as_adb_does() {
    let phones = Phones::new();
    phones.attach(Phone::pixel("emulator-5554"));
    phones.attach(Phone::galaxy("R5CW30ABCDE"));
    phones.list("192.168.1.7:5555", "offline");
    phones.list("0A1B2C3D", "unauthorized");

    let listed = adb(&phones, &["devices"]);
    assert_eq!(
        text(&listed.stdout),
        "List of devices attached\nemulator-5554\tdevice\nR5CW30ABCDE\tdevice\n\
         192.168.1.7:5555\toffline\n0A1B2C3D\tunauthorized\n\n"
    );
    let long = text(&adb(&phones, &["devices", "-l"]).stdout);
    assert!(
        long.contains(
            "emulator-5554          device product:panther model:Pixel_7 device:panther transport_id:1"
        ),
        "{long}"
    );
    assert!(long.contains("0A1B2C3D               unauthorized usb:1-4 transport_id:4"));

    let missing = adb(&phones, &["-s", "nope", "shell", "getprop"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(text(&missing.stderr), "adb: device 'nope' not found\n");
    let offline = adb(&phones, &["-s", "192.168.1.7:5555", "shell", "getprop"]);
    assert_eq!(text(&offline.stderr), "adb: device offline\n");
    let unauthorized = adb(&phones, &["-s", "0A1B2C3D", "shell", "getprop"]);
    assert!(text(&unauthorized.stderr).starts_with("adb: device unauthorized.\n"));
    assert!(text(&unauthorized.stderr).contains("confirmation dialog"));
    let ambiguous = adb(&phones, &["shell", "getprop"]);
    assert_eq!(
        text(&ambiguous.stderr),
        "adb: more than one device/emulator\n"
    );

    let model = adb(
        &phones,
        &["-s", "R5CW30ABCDE", "shell", "getprop", "ro.product.model"],
    );
    assert_eq!(text(&model.stdout), "SM-S911B\n");
    let size = adb(&phones, &["-s", "R5CW30ABCDE", "shell", "wm", "size"]);
    assert_eq!(text(&size.stdout), "Physical size: 1080x2340\n");
}

#[test]
fn the_device_shell_parses_the_joined_words_again_so_only_quoting_keeps_text_inert() {
    let phones = Phones::new();
    phones.attach(Phone::pixel("emulator-5554").showing("login.xml"));
    // Unquoted, as a careless backend would send it: the device's shell runs the rest.
    let careless = adb(
        &phones,
        &[
            "-s",
            "emulator-5554",
            "shell",
            "input",
            "text",
            "hi;touch",
            "PWNED",
        ],
    );
    assert_eq!(careless.status.code(), Some(0));
    let stray = phones.stray_files("emulator-5554");
    assert!(
        stray.iter().any(|p| p.ends_with("PWNED")),
        "the fake's shell must really run what a device's would: {stray:?}"
    );
    assert_eq!(phones.state("emulator-5554").typed, ["hi"]);

    // Quoted for the device's shell: arrives as one argument, runs nothing.
    let phones = Phones::new();
    phones.attach(Phone::pixel("emulator-5554").showing("login.xml"));
    let quoted = adb(
        &phones,
        &[
            "-s",
            "emulator-5554",
            "shell",
            "input",
            "text",
            "'a;b%s$(touch%sPWNED)`id`'",
        ],
    );
    assert_eq!(quoted.status.code(), Some(0), "{}", text(&quoted.stderr));
    assert!(phones.stray_files("emulator-5554").is_empty());
    assert_eq!(
        phones.device_calls("emulator-5554", "input"),
        [["input", "text", "a;b%s$(touch%sPWNED)`id`"]]
    );
    assert_eq!(
        phones.state("emulator-5554").typed,
        ["a;b $(touch PWNED)`id`"]
    );

    let non_ascii = adb(
        &phones,
        &["-s", "emulator-5554", "shell", "input", "text", "'café'"],
    );
    assert_ne!(non_ascii.status.code(), Some(0));
    assert!(text(&non_ascii.stderr).contains("NullPointerException"));
}

#[test]
fn dumps_serve_the_screen_on_one_line_and_fail_with_exit_status_zero_when_told() {
    let phones = Phones::new();
    phones.attach(Phone::pixel("emulator-5554").showing("login.xml"));
    let dump = |args: &[&str]| {
        let mut all = vec!["-s", "emulator-5554"];
        all.extend_from_slice(args);
        adb(&phones, &all)
    };
    let ok = dump(&["exec-out", "uiautomator", "dump", "/dev/tty"]);
    let out = text(&ok.stdout);
    assert!(out.starts_with("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\"><node index=\"0\""));
    assert!(out.ends_with("</hierarchy>UI hierchary dumped to: /dev/tty\n"));
    assert_eq!(out.lines().count(), 1);

    phones.fail_dumps(
        "emulator-5554",
        &[
            DumpFailure::IdleState,
            DumpFailure::NullRoot,
            DumpFailure::AlreadyRegistered,
        ],
    );
    let idle = dump(&["exec-out", "uiautomator", "dump", "/dev/tty"]);
    assert_eq!(idle.status.code(), Some(0));
    assert_eq!(text(&idle.stdout), "ERROR: could not get idle state.\n");
    // Through `shell`, stderr stays apart and the status is still 0.
    let null_root = dump(&["shell", "uiautomator", "dump", "/dev/tty"]);
    assert_eq!(null_root.status.code(), Some(0));
    assert_eq!(
        text(&null_root.stderr),
        "ERROR: null root node returned by UiTestAutomationBridge.\n"
    );
    assert!(null_root.stdout.is_empty());
    let registered = dump(&["exec-out", "uiautomator", "dump", "/dev/tty"]);
    assert!(text(&registered.stdout).starts_with(
        "java.lang.IllegalStateException: UiAutomationService android.accessibilityservice.IAccessibilityServiceClient$Stub$Proxy@"
    ));
    assert!(
        text(&dump(&["exec-out", "uiautomator", "dump", "/dev/tty"]).stdout).starts_with("<?xml")
    );

    // To a file, then read back: the other way backends dump.
    let to_file = dump(&["shell", "uiautomator", "dump", "/sdcard/window_dump.xml"]);
    assert_eq!(
        text(&to_file.stdout),
        "UI hierchary dumped to: /sdcard/window_dump.xml\n"
    );
    let read = dump(&["exec-out", "cat", "/sdcard/window_dump.xml"]);
    assert!(text(&read.stdout).contains("resource-id=\"com.acme.shop:id/login_button\""));
}

#[test]
fn rules_move_screens_taps_on_fields_raise_the_keyboard_and_back_lowers_it_first() {
    let phones = Phones::new();
    phones.attach(
        Phone::pixel("emulator-5554")
            .showing("login.xml")
            .rules(SHOP_RULES),
    );
    let shell = |line: &str| {
        let mut args = vec!["-s", "emulator-5554", "shell"];
        args.extend(line.split(' '));
        adb(&phones, &args)
    };
    let keyboard = || text(&shell("dumpsys input_method").stdout);
    assert!(keyboard().contains("mInputShown=false"));
    shell("input tap 540 830");
    assert!(keyboard().contains("mInputShown=true"));
    shell("input text ada@example.com");
    assert_eq!(phones.state("emulator-5554").screen, "login_typed.xml");
    shell("input keyevent KEYCODE_BACK");
    let after_back = keyboard();
    assert!(after_back.contains("mInputShown=false"));
    // The IME's own flag stays true: a backend that trusts it is wrong.
    assert!(after_back.contains("mIsInputViewShown=true"));
    assert_eq!(phones.state("emulator-5554").screen, "login_typed.xml");
    shell("input tap 540 1330");
    assert_eq!(phones.state("emulator-5554").screen, "login_busy.xml");
    let focus = text(&shell("dumpsys window").stdout);
    assert!(
        focus
            .contains("mCurrentFocus=Window{8c1f2a7 u0 com.acme.shop/com.acme.shop.LoginActivity}")
    );
    // The busy screen settles on its first dump.
    let busy = text(&shell("uiautomator dump /dev/tty").stdout);
    assert!(busy.contains("android.widget.ProgressBar"));
    let settled = text(&shell("uiautomator dump /dev/tty").stdout);
    assert!(settled.contains("Welcome back, Ada"));

    let launched = shell("monkey -p com.acme.news -c android.intent.category.LAUNCHER 1");
    assert_eq!(launched.status.code(), Some(0));
    assert!(text(&launched.stderr).contains("bash arg: -p"));
    assert_eq!(phones.state("emulator-5554").screen, "feed_loading.xml");
    let missing = shell("monkey -p com.example.absent -c android.intent.category.LAUNCHER 1");
    assert_eq!(missing.status.code(), Some(251));
    assert!(text(&missing.stdout).contains("No activities found to run, monkey aborted."));
}

#[test]
fn track_devices_sends_a_framed_list_on_every_change() {
    let phones = Phones::new();
    phones.attach(Phone::pixel("emulator-5554"));
    let mut child = Command::new(phones.adb())
        .arg("track-devices")
        .env(DIR_VAR, phones.dir().root())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start track-devices");
    let mut stdout = child.stdout.take().unwrap();
    let mut frame = || {
        let mut len = [0u8; 4];
        stdout.read_exact(&mut len).unwrap();
        let len = usize::from_str_radix(std::str::from_utf8(&len).unwrap(), 16).unwrap();
        let mut body = vec![0u8; len];
        stdout.read_exact(&mut body).unwrap();
        String::from_utf8(body).unwrap()
    };
    assert_eq!(frame(), "emulator-5554\tdevice\n");
    phones.attach(Phone::galaxy("R5CW30ABCDE"));
    assert_eq!(frame(), "emulator-5554\tdevice\nR5CW30ABCDE\tdevice\n");
    phones.list("emulator-5554", "offline");
    assert_eq!(frame(), "emulator-5554\toffline\nR5CW30ABCDE\tdevice\n");
    phones.unplug("emulator-5554");
    phones.unplug("R5CW30ABCDE");
    assert_eq!(frame(), "");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_device_lost_mid_command_ends_it_with_255_and_partial_output() {
    let phones = Phones::new();
    phones.attach(Phone::pixel("emulator-5554").showing("products.xml"));
    phones.vanish_on("emulator-5554", "uiautomator");
    let cut = adb(
        &phones,
        &[
            "-s",
            "emulator-5554",
            "exec-out",
            "uiautomator",
            "dump",
            "/dev/tty",
        ],
    );
    assert_eq!(cut.status.code(), Some(255));
    let out = text(&cut.stdout);
    assert!(
        out.starts_with("<?xml") && !out.contains("</hierarchy>"),
        "{out}"
    );
    assert!(phones.dir().devices().is_empty());

    // A hanging command ends with 255 as soon as its device is unplugged.
    let phones = Phones::new();
    phones.attach(Phone::pixel("emulator-5554").showing("products.xml"));
    phones.hang_on("emulator-5554", "uiautomator");
    let mut hung = Command::new(phones.adb())
        .args([
            "-s",
            "emulator-5554",
            "exec-out",
            "uiautomator",
            "dump",
            "/dev/tty",
        ])
        .env(DIR_VAR, phones.dir().root())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(hung.try_wait().unwrap().is_none(), "it hangs while told to");
    phones.list("emulator-5554", "offline");
    let status = hung.wait().unwrap();
    assert_eq!(status.code(), Some(255));
    let records = phones.adb_calls("emulator-5554");
    assert_eq!(records.last().unwrap().status, Some(255));
}

#[test]
fn screenshots_are_pngs_of_the_screen_and_logs_honour_counts_times_and_filters() {
    let phones = Phones::new();
    phones.attach(
        Phone::galaxy("R5CW30ABCDE")
            .showing("login.xml")
            .log(concat!(
                "2026-03-14 10:00:00.100  1200  1200 I ActivityManager: Start proc 8123:com.acme.shop/u0a162\n",
                "2026-03-14 10:00:01.250  8123  8123 D ShopApp : onCreate\n",
                "2026-03-14 10:00:02.000  8123  8140 E ShopApp : login failed: 401\n",
            )),
    );
    let shot = adb(
        &phones,
        &["-s", "R5CW30ABCDE", "exec-out", "screencap", "-p"],
    );
    let header = tabwire_e2e::image::header(&shot.stdout).expect("a PNG");
    assert_eq!(
        (header.format, header.width, header.height),
        (tabwire_e2e::image::Format::Png, 1080, 2340)
    );
    let logs = adb(
        &phones,
        &["-s", "R5CW30ABCDE", "shell", "logcat", "-d", "-t", "2"],
    );
    assert_eq!(
        text(&logs.stdout),
        "--------- beginning of main\n\
         03-14 10:00:01.250  8123  8123 D ShopApp : onCreate\n\
         03-14 10:00:02.000  8123  8140 E ShopApp : login failed: 401\n"
    );
    let since = adb(
        &phones,
        &[
            "-s",
            "R5CW30ABCDE",
            "shell",
            "logcat",
            "-t",
            "'03-14 10:00:01.500'",
            "*:E",
        ],
    );
    assert_eq!(
        text(&since.stdout).lines().last(),
        Some("03-14 10:00:02.000  8123  8140 E ShopApp : login failed: 401")
    );
    assert_eq!(text(&since.stdout).lines().count(), 2);
    let calls = phones.calls();
    assert!(
        calls
            .iter()
            .all(|c| c.end_us.is_some_and(|end| end >= c.start_us))
    );
    assert_eq!(calls.iter().filter(|c| c.kind == CallKind::Adb).count(), 3);
}
