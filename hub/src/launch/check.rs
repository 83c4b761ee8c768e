//! The launched browser's verdict on itself, which `doctor` reports as its "launched browser"
//! check (`tabwire-hub doctor`, the `doctor` tool): fine while its extension is connected;
//! otherwise what is known — Chromium exited, never started, runs without its extension
//! connecting, or another Chromium holds the profile — with the fix in one line. A hub without
//! `--launch-browser` has no such check.

use super::{Launched, Phase};
use crate::accounts::Account;
use crate::peer::Browser;

/// The launched browser's state for `doctor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// What was found, in one line.
    pub detail: String,
    /// What to do about it, when something is wrong.
    pub fix: Option<String>,
}

impl Verdict {
    fn fine(detail: String) -> Verdict {
        Verdict { detail, fix: None }
    }

    fn problem(detail: String, fix: String) -> Verdict {
        Verdict {
            detail,
            fix: Some(fix),
        }
    }
}

/// The browser the hub launched: connected, or why not and what to do.
pub fn judge(launched: &Launched, account: &Account) -> Verdict {
    let status = launched.status();
    let profile = status.profile.display();
    let peer = status
        .browser_id
        .as_deref()
        .and_then(|id| account.registry::<Browser>().get(id));
    if let Some(peer) = peer.as_ref().filter(|peer| peer.connected) {
        let process = match (&status.phase, status.pid) {
            (Phase::InUse, Some(pid)) => format!("Chromium PID {pid}, not started by this hub"),
            (_, Some(pid)) => format!("Chromium PID {pid}"),
            _ => "Chromium".to_owned(),
        };
        return Verdict::fine(format!(
            "{} ({}) connected; {process}; profile {profile}",
            serde_json::Value::String(peer.name().to_owned()),
            peer.id()
        ));
    }
    let chrome = status
        .browser
        .as_ref()
        .filter(|browser| browser.kind == crate::chrome::Kind::GoogleChrome)
        .map(|_| format!(" {}", super::chrome_hint()))
        .unwrap_or_default();
    let restart = "start tabwire-hub --launch-browser again (the hub does not relaunch a browser \
                   that exited)";
    let (detail, fix) = match (&status.phase, status.pid) {
        (Phase::Starting, _) => (
            "not started yet".to_owned(),
            "wait a moment; the hub starts it once it listens".to_owned(),
        ),
        (Phase::Failed(why), _) => (format!("could not be started: {why}"), restart.to_owned()),
        (Phase::Exited { how, had_connected }, _) => (
            format!(
                "Chromium exited ({how}){}; profile {profile}",
                if *had_connected {
                    ""
                } else {
                    " before its extension connected"
                }
            ),
            format!("{restart}; the hub's log shows Chromium's last lines.{chrome}"),
        ),
        (Phase::InUse, pid) => (
            format!(
                "the profile {profile} is in use by a Chromium this hub did not start (PID {}), \
                 and its extension is not connected",
                pid.map_or("unknown".to_owned(), |pid| pid.to_string())
            ),
            format!(
                "stop that Chromium ({}) and start tabwire-hub --launch-browser again",
                pid.map_or("close its windows".to_owned(), |pid| format!("kill {pid}"))
            ),
        ),
        (Phase::Running, pid) => {
            let process = pid.map_or(String::new(), |pid| format!(" (PID {pid})"));
            let detail = match (&status.browser_id, &peer) {
                (Some(id), Some(_)) => {
                    format!("Chromium{process} runs, but its extension ({id}) is disconnected")
                }
                _ => format!("Chromium{process} runs, but its extension has not connected"),
            };
            (
                format!("{detail}; profile {profile}"),
                format!(
                    "look at the \"refused browsers\" check and the hub's log (TABWIRE_LOG=debug \
                     shows Chromium's own lines); the extension retries by itself.{chrome}"
                ),
            )
        }
    };
    Verdict::problem(detail, fix)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use tabwire_protocol::{Hello, PROTOCOL_VERSION};

    use super::*;
    use crate::chrome::{Found, Kind};
    use crate::launch::{Headless, LaunchSettings};
    use crate::registry::Owner;

    fn launched() -> Launched {
        Launched::new(LaunchSettings {
            name: "tabwire Chromium".into(),
            profile: PathBuf::from("/home/a/.local/share/tabwire/chromium"),
            profile_given: false,
            extension: PathBuf::from("/repo/extension"),
            headless: Headless::Auto,
        })
    }

    fn hello(id: &str) -> Hello {
        Hello {
            browser_id: id.into(),
            browser_name: "tabwire Chromium".into(),
            extension_version: "0.1.0".into(),
            protocol_version: PROTOCOL_VERSION,
            chrome_version: "156".into(),
            proof: None,
            managed_code: false,
        }
    }

    #[test]
    fn connected_is_ok_and_names_the_browser_and_process() {
        let account = crate::accounts::Accounts::local().local_account();
        let launched = launched();
        launched.update(|status| {
            status.phase = Phase::Running;
            status.pid = Some(4242);
            status.browser_id = Some("b1".into());
        });
        let (_connection, _outbox) = account
            .registry::<Browser>()
            .connect(hello("b1"), Owner::fixed("test"))
            .unwrap();
        let check = judge(&launched, &account);
        assert_eq!(check.fix, None, "{check:?}");
        assert_eq!(
            check.detail,
            "\"tabwire Chromium\" (b1) connected; Chromium PID 4242; profile \
             /home/a/.local/share/tabwire/chromium"
        );
    }

    #[test]
    fn an_exited_browser_is_a_problem_with_the_way_back() {
        let account = crate::accounts::Accounts::local().local_account();
        let launched = launched();
        launched.update(|status| {
            status.phase = Phase::Exited {
                how: "exit code 3".into(),
                had_connected: false,
            };
            status.browser = Some(Found {
                path: "/opt/google/chrome/chrome".into(),
                kind: Kind::GoogleChrome,
            });
        });
        let check = judge(&launched, &account);
        assert!(check.fix.is_some());
        assert!(
            check
                .detail
                .starts_with("Chromium exited (exit code 3) before its extension connected"),
            "{}",
            check.detail
        );
        let fix = check.fix.unwrap();
        assert!(
            fix.starts_with("start tabwire-hub --launch-browser again"),
            "{fix}"
        );
        assert!(
            fix.contains("Google Chrome 137 and later ignore --load-extension"),
            "{fix}"
        );
    }

    #[test]
    fn a_browser_whose_extension_does_not_connect_and_a_held_profile_are_problems() {
        let account = crate::accounts::Accounts::local().local_account();
        let launched = launched();
        launched.update(|status| {
            status.phase = Phase::Running;
            status.pid = Some(7);
        });
        let check = judge(&launched, &account);
        assert!(check.fix.is_some());
        assert!(
            check
                .detail
                .starts_with("Chromium (PID 7) runs, but its extension has not connected"),
            "{}",
            check.detail
        );
        launched.update(|status| {
            status.phase = Phase::InUse;
            status.pid = Some(9);
        });
        let check = judge(&launched, &account);
        assert!(
            check
                .detail
                .contains("in use by a Chromium this hub did not start (PID 9)")
        );
        assert!(
            check
                .fix
                .unwrap()
                .starts_with("stop that Chromium (kill 9)")
        );
    }
}
