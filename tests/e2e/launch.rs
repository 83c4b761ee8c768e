//! The launched profile (`tabwire-hub --launch-browser`) with the real hub, the real extension
//! and real headless Chromium: the browser connects with no other step, an agent lists it by
//! its name and reads a page, a second run on the same profile connects without a new pairing,
//! stopping the hub stops Chromium, a Chromium that exits is a doctor problem, a missing
//! browser stops the hub with the places looked at, and a profile another Chromium holds is
//! named instead of being started twice.

use serde_json::json;
use tabwire_e2e::artifacts::artifacts;
use tabwire_e2e::launched::{Home, running_in_group};
use tabwire_e2e::scenario::reads_the_login_page;
use tabwire_e2e::{Fixtures, Listener, McpClient, eventually};

#[tokio::test]
async fn the_launched_browser_connects_by_itself_and_again_on_its_profile() {
    artifacts();
    let fixtures = Fixtures::serve().await;
    let home = Home::new();

    // First run: the hub starts Chromium, pairs it with its own code, and says it is ready.
    let hub = home.launch(&[]);
    let first = hub.ready();
    assert!(
        first.text.contains(&format!(
            "tabwire is ready: the launched browser \"tabwire Chromium\" is connected (browser \
             ID {})",
            first.browser_id
        )),
        "{}",
        first.text
    );
    let shim = artifacts().shim.canonicalize().unwrap();
    assert!(
        first
            .text
            .contains(&format!("claude mcp add tabwire -- {}", shim.display())),
        "{}",
        first.text
    );
    assert!(
        first
            .text
            .contains(&format!("Server URL ws://{}/browser", hub.http)),
        "{}",
        first.text
    );
    let client = McpClient::connect_shim(&artifacts().shim, &hub.socket, Listener::default())
        .await
        .unwrap();
    let browsers = client.call("list_browsers", json!({})).await;
    let listed = &browsers.data()["browsers"];
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["name"], "tabwire Chromium");
    assert_eq!(listed[0]["browserId"], first.browser_id.as_str());
    assert_eq!(listed[0]["connected"], true);
    let tab = reads_the_login_page(&client, &fixtures).await;
    // The launched browser follows the hub's rule for file URLs like any other.
    let file = client
        .call(
            "navigate_to",
            json!({"tabId": tab, "url": "file:///etc/hostname"}),
        )
        .await;
    assert_eq!(file.error_code(), "FORBIDDEN", "{}", file.text);
    let (code, report) = home.doctor();
    assert_eq!(code, 0, "{report}");
    assert!(
        report.contains(&format!(
            "ok   launched browser: \"tabwire Chromium\" ({}) connected; Chromium PID {}",
            first.browser_id, first.pid
        )),
        "{report}"
    );
    drop(client);

    // Stopping the hub stops Chromium and its helpers.
    assert!(hub.stop().success());
    assert_eq!(running_in_group(first.pid), Vec::<u32>::new());
    assert_eq!(home.browser_pairings().len(), 1);

    // Second run on the same profile: the same browser, with the key it kept; no new pairing
    // and no code left open.
    let hub = home.launch(&[]);
    let second = hub.ready();
    assert_eq!(second.browser_id, first.browser_id);
    assert_ne!(second.pid, first.pid);
    assert_eq!(home.browser_pairings().len(), 1);
    let bundled =
        std::fs::read_to_string(home.profile().join("tabwire-extension/config.json")).unwrap();
    assert!(!bundled.contains("pairingCode"), "{bundled}");
    let (code, report) = home.doctor();
    assert_eq!(code, 0, "{report}");
    assert!(
        report.contains("ok   pairing: 1 browser and 0 device backends paired\n"),
        "{report}"
    );

    // Chromium exits (a person closed it): the hub says so, keeps serving, and doctor names
    // the problem with the way back.
    // SAFETY: signalling the Chromium this test's hub started, by the PID it printed.
    unsafe {
        libc::kill(second.pid as libc::pid_t, libc::SIGTERM);
    }
    hub.wait_for_line("tabwire-hub: the launched browser exited");
    let (code, report) = eventually(
        "doctor to see the exit",
        std::time::Duration::from_secs(10),
        || async {
            let (code, report) = home.doctor();
            report
                .contains("FAIL launched browser")
                .then_some((code, report))
        },
    )
    .await;
    assert_eq!(code, 1, "{report}");
    assert!(
        report.contains("FAIL launched browser: Chromium exited ("),
        "{report}"
    );
    assert!(
        report.contains("fix: start tabwire-hub --launch-browser again"),
        "{report}"
    );
    assert!(hub.stop().success());
}

#[tokio::test]
async fn a_missing_browser_is_named_with_the_places_looked_at() {
    artifacts();
    let home = Home::new();
    let missing = home.path().join("no-chrome-here");
    let missing = missing.to_str().unwrap();

    let found = home.command(&["find-chrome"], &[]).output().unwrap();
    assert!(found.status.success(), "{found:?}");
    let path = String::from_utf8(found.stdout).unwrap();
    assert!(std::path::Path::new(path.trim()).is_file(), "{path}");

    let found = home
        .command(&["find-chrome"], &[("TABWIRE_CHROME", missing)])
        .output()
        .unwrap();
    assert_eq!(found.status.code(), Some(1), "{found:?}");
    assert!(found.stdout.is_empty());
    let said = String::from_utf8(found.stderr).unwrap();
    assert!(
        said.starts_with(&format!(
            "TABWIRE_CHROME={missing} is not an executable file"
        )),
        "{said}"
    );

    // The hub stops before binding anything, with the same sentence.
    let run = home.launch_to_the_end(&[("TABWIRE_CHROME", missing)]);
    assert!(!run.status.success());
    let said = String::from_utf8(run.stderr).unwrap();
    assert!(
        said.contains(&format!(
            "tabwire-hub: --launch-browser: TABWIRE_CHROME={missing} is not an executable file"
        )),
        "{said}"
    );
    assert!(!said.contains("listening"), "{said}");
    assert!(!home.socket.exists());
}

#[tokio::test]
async fn a_profile_another_chromium_holds_is_named_not_started_twice() {
    artifacts();
    let home = Home::new();
    let profile = home.profile();
    std::fs::create_dir_all(profile.parent().unwrap()).unwrap();
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&profile)
            .unwrap();
    }
    // Chromium's lock names HOST-PID. A stand-in for a Chromium left behind by an earlier hub:
    // a shell of ours waiting on its stdin, whose command line names the profile as Chromium's
    // does (the hub looks for that, since after a reboot the PID in a lock may be anyone's).
    let left_behind = Killed(
        std::process::Command::new("bash")
            .args(["-c", "read -r -t 600", "chromium"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let holder = left_behind.0.id();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    std::os::unix::fs::symlink(
        format!("{}-{holder}", host.trim()),
        profile.join("SingletonLock"),
    )
    .unwrap();

    let hub = home.launch(&[]);
    let said = hub.wait_for_line("tabwire-hub: the browser profile ");
    let line = said.last().unwrap();
    assert!(
        line.contains(&format!(
            "is in use by Chromium (PID {holder}), which this hub did not start"
        )),
        "{line}"
    );
    assert!(line.contains(&format!("kill {holder}")), "{line}");
    assert!(
        !said
            .iter()
            .any(|line| line.starts_with("tabwire-hub: launched")),
        "{said:#?}"
    );
    let (code, report) = home.doctor();
    assert_eq!(code, 1, "{report}");
    assert!(
        report.contains(&format!(
            "FAIL launched browser: the profile {} is in use by a Chromium this hub did not start \
             (PID {holder})",
            profile.display()
        )),
        "{report}"
    );
    // Nothing was started in the profile: no extension copy was made.
    assert!(!profile.join("tabwire-extension").exists());
    assert!(hub.stop().success());
    drop(left_behind);
}

/// A process this test started, killed (by its PID) when dropped.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
