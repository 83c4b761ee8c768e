//! Devices for the end-to-end tests and `bench-mobile`: a [`Phones`] scenario served by the
//! fake adb (`src/fake_adb/`), with the screens of `fixtures/android/`, and the real
//! `tabwire-android` backend run against it ([`Android`]).
//!
//! A test builds the phones it needs (`Phones::new()`, `.attach(Phone::pixel("emulator-5554")
//! .showing("login.xml"))`), starts the backend, and changes the phones while it runs: plug
//! and unplug them, make the next dumps fail, make a command hang or lose its device. What the
//! backend ran is in [`Phones::calls`].

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::artifacts::{artifacts, repo_root};
use crate::client::McpClient;
use crate::fake_adb::scenario::{
    CallKind, CallRecord, DEVICE_COMMANDS, DeviceConfig, DeviceState, DumpFailure, Listed,
    ScenarioDir,
};
use crate::hub::Hub;
use crate::scratch::Scratch;

/// The screens every scenario starts with: `tests/fixtures/android/`.
pub fn fixtures_dir() -> PathBuf {
    repo_root().join("tests/fixtures/android")
}

/// A phone to attach: its serial, what it is, what it shows, its rules and log.
#[derive(Debug, Clone)]
pub struct Phone {
    /// The adb serial.
    pub serial: String,
    /// What it is.
    pub config: DeviceConfig,
    /// The screen it shows.
    pub screen: String,
    /// Its transition rules, in the rules file's format.
    pub rules: String,
    /// Its log: threadtime lines with the year.
    pub log: String,
}

/// Every app the fixtures show, with its launcher activity.
const APPS: &[(&str, &str)] = &[
    ("com.acme.shop", ".LoginActivity"),
    ("com.acme.news", ".FeedActivity"),
    ("com.acme.chat", ".ChatActivity"),
    ("com.acme.bank", ".HomeActivity"),
    ("com.acme.rn", ".MainActivity"),
    ("com.android.settings", ".Settings"),
    (
        "com.google.android.apps.nexuslauncher",
        ".NexusLauncherActivity",
    ),
];

impl Phone {
    /// A Pixel 7 on Android 14 (1080×2400), at `serial`, showing the launcher.
    pub fn pixel(serial: &str) -> Phone {
        Phone::new(
            serial,
            &[
                ("ro.serialno", "28161FDH2001SZ"),
                ("ro.product.manufacturer", "Google"),
                ("ro.product.brand", "google"),
                ("ro.product.model", "Pixel 7"),
                ("ro.product.name", "panther"),
                ("ro.product.device", "panther"),
                ("ro.build.version.release", "14"),
                ("ro.build.version.sdk", "34"),
            ],
            [1080, 2400],
            420,
        )
    }

    /// A Galaxy S23 on Android 13 (1080×2340), at `serial`, showing the launcher.
    pub fn galaxy(serial: &str) -> Phone {
        Phone::new(
            serial,
            &[
                ("ro.serialno", "R5CW30ABCDE"),
                ("ro.product.manufacturer", "samsung"),
                ("ro.product.brand", "samsung"),
                ("ro.product.model", "SM-S911B"),
                ("ro.product.name", "dm1qxxx"),
                ("ro.product.device", "dm1q"),
                ("ro.build.version.release", "13"),
                ("ro.build.version.sdk", "33"),
            ],
            [1080, 2340],
            480,
        )
    }

    fn new(serial: &str, props: &[(&str, &str)], size: [u32; 2], density: u32) -> Phone {
        let config = DeviceConfig {
            props: props
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            physical_size: size,
            override_size: None,
            density,
            packages: APPS.iter().map(|(p, _)| (*p).to_owned()).collect(),
            activities: APPS
                .iter()
                .map(|(p, a)| ((*p).to_owned(), (*a).to_owned()))
                .collect(),
            pids: [
                ("com.acme.shop", 8123),
                ("com.acme.news", 8311),
                ("com.google.android.apps.nexuslauncher", 2210),
            ]
            .iter()
            .map(|(p, pid)| ((*p).to_owned(), *pid))
            .collect(),
        };
        Phone {
            serial: serial.to_owned(),
            config,
            screen: "launcher.xml".into(),
            rules: String::new(),
            log: String::new(),
        }
    }

    /// The same, showing `screen` (a file of `fixtures/android/`).
    pub fn showing(mut self, screen: &str) -> Phone {
        self.screen = screen.to_owned();
        self
    }

    /// The same, with these transition rules (see `fake_adb::scenario::Rule`).
    pub fn rules(mut self, rules: &str) -> Phone {
        self.rules = rules.to_owned();
        self
    }

    /// The same, with this log (threadtime lines with the year).
    pub fn log(mut self, log: &str) -> Phone {
        self.log = log.to_owned();
        self
    }

    /// The same, with its own serial number (`ro.serialno`, from which the device ID comes).
    pub fn serialno(mut self, serialno: &str) -> Phone {
        self.config
            .props
            .insert("ro.serialno".into(), serialno.to_owned());
        self
    }
}

/// The rules of the login flow on `login.xml`: typing fills the form, LOGIN shows a busy screen
/// for one dump, then the product list; swiping it up scrolls it; the dialog comes from the
/// first "Add to cart" long press (CANCEL and REMOVE close it); back goes back; home
/// goes to the launcher; launching an app shows its first screen (the news feed loads for two
/// dumps); force-stopping any app shows the launcher.
pub const SHOP_RULES: &str = "\
@login.xml input text * -> login_typed.xml
@login_typed.xml input tap 540 1330 -> login_busy.xml keyboard=off
@login_busy.xml dump 1 -> products.xml
@products.xml input swipe 964 630 964 630 * -> remove_dialog.xml
@products.xml input swipe ... -> products_scrolled.xml
@products_scrolled.xml input swipe ... -> products.xml
@remove_dialog.xml input tap 617 1371 -> products.xml
@remove_dialog.xml input tap 854 1371 -> products.xml
@remove_dialog.xml input keyevent 4 -> products.xml
@products.xml input keyevent 4 -> login.xml
input keyevent 3 -> launcher.xml keyboard=off
monkey -p com.acme.shop ... -> login.xml
monkey -p com.acme.news ... -> feed_loading.xml
monkey -p com.acme.bank ... -> bank.xml
monkey -p com.acme.chat ... -> chat.xml
@feed_loading.xml dump 2 -> feed.xml
am force-stop * -> launcher.xml keyboard=off
";

/// A scenario of phones attached to the fake adb, in a scratch directory.
pub struct Phones {
    dir: ScenarioDir,
    next_transport: std::cell::Cell<u32>,
    _scratch: Scratch,
}

impl Default for Phones {
    fn default() -> Self {
        Phones::new()
    }
}

impl Phones {
    /// No phones yet; the fixtures copied in as its screens and the device commands linked.
    pub fn new() -> Phones {
        let scratch = Scratch::new("phones");
        let dir = ScenarioDir::new(scratch.path());
        std::fs::create_dir_all(dir.bin_dir()).expect("create bin/");
        std::fs::create_dir_all(dir.screens_dir()).expect("create screens/");
        for command in DEVICE_COMMANDS {
            std::os::unix::fs::symlink(&artifacts().fake_adb, dir.bin_dir().join(command))
                .expect("link a device command");
        }
        for entry in std::fs::read_dir(fixtures_dir()).expect("read fixtures/android") {
            let path = entry.expect("fixture entry").path();
            if path.extension().is_some_and(|ext| ext == "xml") {
                std::fs::copy(&path, dir.screens_dir().join(path.file_name().unwrap()))
                    .expect("copy a screen");
            }
        }
        dir.set_devices(&[]);
        Phones {
            dir,
            next_transport: std::cell::Cell::new(1),
            _scratch: scratch,
        }
    }

    /// The scenario directory (`$FAKE_ADB_DIR`).
    pub fn dir(&self) -> &ScenarioDir {
        &self.dir
    }

    /// The fake adb to run with `$FAKE_ADB_DIR` set to [`Phones::dir`].
    pub fn adb(&self) -> &Path {
        &artifacts().fake_adb
    }

    /// Writes `phone`'s files and lists it as `device`: hot-plugged.
    pub fn attach(&self, phone: Phone) -> &Phones {
        self.prepare(&phone);
        self.list(&phone.serial, "device");
        self
    }

    /// Writes `phone`'s files without listing it (for a later [`Phones::list`]).
    pub fn prepare(&self, phone: &Phone) {
        let device_dir = self.dir.device_dir(&phone.serial);
        std::fs::create_dir_all(device_dir.join("fs/sdcard")).expect("create the device");
        self.dir.set_config(&phone.serial, &phone.config);
        self.dir.set_rules(&phone.serial, &phone.rules);
        std::fs::write(self.dir.logcat_path(&phone.serial), &phone.log).expect("write logcat");
        self.dir.update_state(&phone.serial, |state| {
            *state = DeviceState {
                screen: phone.screen.clone(),
                ..DeviceState::default()
            };
        });
    }

    /// The same phone reached through a second serial (USB and `192.168.1.5:5555`): both
    /// serials share one device directory, so one state and one serial number.
    pub fn alias(&self, serial: &str, also: &str) {
        std::os::unix::fs::symlink(self.dir.device_dir(serial), self.dir.device_dir(also))
            .expect("link the second serial");
        self.list(also, "device");
    }

    /// Lists `serial` in `state` (`device`, `offline`, `unauthorized`), adding it if absent.
    pub fn list(&self, serial: &str, state: &str) {
        let mut devices = self.dir.devices();
        match devices.iter_mut().find(|d| d.serial == serial) {
            Some(listed) => listed.state = state.to_owned(),
            None => {
                let id = self.next_transport.get();
                self.next_transport.set(id + 1);
                devices.push(Listed {
                    serial: serial.to_owned(),
                    state: state.to_owned(),
                    transport_id: id,
                });
            }
        }
        self.dir.set_devices(&devices);
    }

    /// Removes `serial` from the list: unplugged.
    pub fn unplug(&self, serial: &str) {
        let devices: Vec<Listed> = self
            .dir
            .devices()
            .into_iter()
            .filter(|d| d.serial != serial)
            .collect();
        self.dir.set_devices(&devices);
    }

    /// Shows `screen` now (as if the app moved on by itself).
    pub fn show(&self, serial: &str, screen: &str) {
        self.change(serial, |state| {
            state.screen = screen.to_owned();
            state.dumps_on_screen = 0;
        });
    }

    /// Changes a phone's state under its lock.
    pub fn change(&self, serial: &str, change: impl FnOnce(&mut DeviceState)) {
        self.dir
            .update_state(serial, change)
            .expect("the phone has a directory");
    }

    /// The next dumps fail this way, one each.
    pub fn fail_dumps(&self, serial: &str, failures: &[DumpFailure]) {
        self.change(serial, |state| {
            state.pending_failures.extend_from_slice(failures)
        });
    }

    /// The next time `command` runs on the phone it loses its device half-way.
    pub fn vanish_on(&self, serial: &str, command: &str) {
        self.change(serial, |state| state.vanish_on = Some(command.to_owned()));
    }

    /// `command` hangs on the phone until [`Phones::release`] (or the phone goes away).
    pub fn hang_on(&self, serial: &str, command: &str) {
        self.change(serial, |state| state.hang_on = Some(command.to_owned()));
    }

    /// Ends a hang.
    pub fn release(&self, serial: &str) {
        self.change(serial, |state| state.hang_on = None);
    }

    /// Appends entries to a phone's log.
    pub fn append_log(&self, serial: &str, lines: &str) {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(self.dir.logcat_path(serial))
            .expect("open logcat");
        file.write_all(lines.as_bytes()).expect("append to logcat");
    }

    /// A phone's state now.
    pub fn state(&self, serial: &str) -> DeviceState {
        self.dir.state(serial)
    }

    /// Every invocation so far.
    pub fn calls(&self) -> Vec<CallRecord> {
        self.dir.calls()
    }

    /// The device commands named `name` run on `serial` so far, as argv (name first).
    pub fn device_calls(&self, serial: &str, name: &str) -> Vec<Vec<String>> {
        self.calls()
            .into_iter()
            .filter(|call| {
                call.kind == CallKind::Device
                    && call.serial.as_deref() == Some(serial)
                    && call.argv.first().is_some_and(|first| first == name)
            })
            .map(|call| call.argv)
            .collect()
    }

    /// The adb invocations addressed to `serial` so far.
    pub fn adb_calls(&self, serial: &str) -> Vec<CallRecord> {
        self.calls()
            .into_iter()
            .filter(|call| call.kind == CallKind::Adb && call.serial.as_deref() == Some(serial))
            .collect()
    }

    /// Every file in the phone's file system and the scenario's top level that no fixture or
    /// the fake itself made: what an injected command would leave behind.
    pub fn stray_files(&self, serial: &str) -> Vec<PathBuf> {
        let mut stray = Vec::new();
        let mut pending = vec![self.dir.fs_root(serial)];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    pending.push(path);
                } else if path.file_name().is_some_and(|n| n != "window_dump.xml") {
                    stray.push(path);
                }
            }
        }
        stray
    }
}

/// A running `tabwire-android` against a [`Phones`] scenario, killed when dropped.
pub struct Android {
    child: Option<Child>,
}

impl Android {
    /// Serves `phones` to the local `hub`, pairing by itself: it runs the hub's own `tabwire-hub
    /// pair --device` on the hub's state directory, as it does for a hub on this machine. Its
    /// key is kept in the scenario (`android-state/`), so a backend started again for the same
    /// phones is the same paired backend.
    pub fn local(hub: &Hub, phones: &Phones, args: &[&str]) -> Android {
        let state = phones.dir().root().join("android-state");
        {
            use std::os::unix::fs::DirBuilderExt;
            let _ = std::fs::DirBuilder::new().mode(0o700).create(&state);
        }
        let url = format!("ws://{}/device", hub.http);
        let hub_bin = artifacts().hub.display().to_string();
        let state_dir = state.display().to_string();
        let mut all = vec![
            "--hub",
            url.as_str(),
            "--hub-bin",
            hub_bin.as_str(),
            "--state-dir",
            state_dir.as_str(),
        ];
        all.extend_from_slice(args);
        let hub_state = hub.state_dir.display().to_string();
        Android::spawn_with_env(phones, &all, &[("TABWIRE_STATE_DIR", hub_state.as_str())])
    }

    /// Starts `tabwire-android --adb FAKE ARGS…` with the scenario's `$FAKE_ADB_DIR`; its log
    /// is forwarded to the test's output as `[android]`.
    pub fn spawn(phones: &Phones, args: &[&str]) -> Android {
        Android::spawn_with_env(phones, args, &[])
    }

    /// Serves `phones` to the hosted hub behind `hosted`'s proxy (`wss://…/device`, trusting
    /// the test CA) with a device `token`, passed in `TABWIRE_TOKEN` as operators should.
    pub fn hosted(hosted: &crate::hosted::Hosted, token: &str, phones: &Phones) -> Android {
        let ca = phones.dir().root().join("proxy-ca.pem");
        std::fs::write(&ca, &hosted.proxy.certs.ca_pem).expect("write the test CA");
        let url = hosted.device_url();
        let ca = ca.display().to_string();
        Android::spawn_with_env(
            phones,
            &["--hub", url.as_str(), "--ca-cert", ca.as_str()],
            &[("TABWIRE_TOKEN", token)],
        )
    }

    /// [`Android::spawn`] with more environment variables.
    pub fn spawn_with_env(phones: &Phones, args: &[&str], env: &[(&str, &str)]) -> Android {
        let mut command = Command::new(&artifacts().android);
        command
            .arg("--adb")
            .arg(phones.adb())
            .args(args)
            .env(crate::fake_adb::scenario::DIR_VAR, phones.dir().root())
            .env("TABWIRE_LOG", "info,tabwire_android=debug")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("start tabwire-android");
        let stderr = child.stderr.take().expect("piped stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                crate::logs::forward_log("android", &line);
            }
        });
        Android { child: Some(child) }
    }

    /// Kills it abruptly.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Android {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The device ID the backend gives a phone: `android-` and its serial number.
pub fn device_id_of(phone_serialno: &str) -> String {
    format!("android-{phone_serialno}")
}

/// The Pixel's device ID ([`Phone::pixel`]'s serial number).
pub const PIXEL_ID: &str = "android-28161FDH2001SZ";
/// The Galaxy's device ID ([`Phone::galaxy`]'s serial number).
pub const GALAXY_ID: &str = "android-R5CW30ABCDE";

/// Waits until `list_devices` shows `device_id` connected (or, with `connected: false`, known
/// but disconnected); returns its entry.
pub async fn listed_device(
    client: &McpClient,
    device_id: &str,
    connected: bool,
) -> serde_json::Value {
    crate::wait::eventually(
        &format!("{device_id} listed with connected={connected}"),
        std::time::Duration::from_secs(20),
        || async {
            let reply = client.call("list_devices", serde_json::json!({})).await;
            reply.data()["devices"]
                .as_array()?
                .iter()
                .find(|d| d["deviceId"] == device_id && d["connected"] == connected)
                .cloned()
        },
    )
    .await
}
