//! iOS end to end: the real `tabwire-ios` against `tabwire_ios::scripted::ScriptedWda`, the
//! scripted WebDriverAgent serving real XCUITest page sources (devices/ios/testdata/), in the
//! test process. No Mac, simulator or iPhone exists here: what this proves is everything
//! between the agent and WDA's HTTP API, with WDA's answers in WDA's shapes.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use tabwire_ios::scripted::{Script, ScriptedWda};

use crate::artifacts::artifacts;
use crate::hub::Hub;
use crate::scratch::Scratch;

/// The device ID `tabwire-ios` gives the scripted iPhone (its WDA's `uuid`).
pub const IPHONE_ID: &str = "ios-8c2e5b7a-1d34-4f6b-9a0e-3b5c7d9e1f20";

/// A running `tabwire-ios` serving one scripted WDA, killed when dropped.
pub struct Ios {
    child: Option<Child>,
    /// The scripted WDA it drives.
    pub wda: ScriptedWda,
    _state: Scratch,
}

impl Ios {
    /// Serves `script` to the local `hub`, pairing by itself (it runs the hub's `tabwire-hub
    /// pair --device`, as a backend on the hub's machine does), with `args` besides.
    pub async fn local(hub: &Hub, script: Script, args: &[&str]) -> Ios {
        let wda = ScriptedWda::start(script)
            .await
            .expect("start the scripted WDA");
        let state = Scratch::new("ios-state");
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(0o700))
                .expect("a private state directory");
        }
        let mut command = Command::new(&artifacts().ios);
        command
            .arg("--hub")
            .arg(format!("ws://{}/device", hub.http))
            .arg("--hub-bin")
            .arg(&artifacts().hub)
            .arg("--state-dir")
            .arg(state.path())
            .arg("--wda")
            .arg(wda.url())
            .args(args)
            .env("TABWIRE_STATE_DIR", &hub.state_dir)
            .env("TABWIRE_LOG", "info,tabwire_ios=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("start tabwire-ios");
        let stderr = child.stderr.take().expect("piped stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                crate::logs::forward_log("ios", &line);
            }
        });
        Ios {
            child: Some(child),
            wda,
            _state: state,
        }
    }
}

impl Drop for Ios {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
