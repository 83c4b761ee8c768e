//! Which attached devices are served, and through which adb serial: the decisions of device
//! tracking, apart from adb and the network so that they can be tested on their own.
//!
//! The backend feeds the [`Tracker`] every listing of `adb devices -l` and every probe's
//! outcome; it answers with [`Action`]s: probe this serial, serve this phone through that
//! serial, switch a served phone to another serial, tell the hub a phone is gone. A serial in
//! state `device` is probed once (and again with backoff while probing fails); the phone it
//! reaches is known by its identity (its serial number, see [`crate::identity`]), so a phone
//! listed twice — over USB and over Wi-Fi — is served once, through USB when it can be. A
//! served phone whose serial goes away or turns unusable moves to its other serial if it has
//! one, and is otherwise gone, with the reason adb's state gives.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use crate::device::DeviceFacts;
use crate::listing::{AdbState, Listed};

/// The first wait after a failed probe; it doubles up to [`PROBE_BACKOFF_MAX`].
pub const PROBE_BACKOFF_FIRST: Duration = Duration::from_secs(1);
/// The longest wait between probes of a serial that keeps failing.
pub const PROBE_BACKOFF_MAX: Duration = Duration::from_secs(30);

/// What the backend should do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Probe the device at this serial ([`crate::device::Device::probe`]) and report with
    /// [`Tracker::probed`].
    Probe {
        /// The adb serial.
        serial: String,
    },
    /// Start serving a phone: open its connection to the hub.
    Serve {
        /// The phone's identity.
        identity: String,
        /// The serial to reach it through.
        serial: String,
        /// What its probe found.
        facts: DeviceFacts,
    },
    /// Reach a served phone through another serial from now on: its connection is closed and
    /// the phone announced again on a fresh one (never swapped under the agent).
    Switch {
        /// The phone's identity.
        identity: String,
        /// The new serial.
        serial: String,
        /// What the probe of that serial found.
        facts: DeviceFacts,
    },
    /// The phone can no longer be served: tell the hub why and close its connection.
    Gone {
        /// The phone's identity.
        identity: String,
        /// Why, for the hub's `list_devices`.
        reason: String,
    },
}

/// Where a listed serial's probe stands.
#[derive(Debug, Clone)]
enum Probe {
    /// Not probed yet, or failed: probe at `next_at`.
    Pending { next_at: Instant, failures: u32 },
    /// Asked for; the outcome has not come back.
    InFlight { failures: u32 },
    /// Probed: the phone behind the serial.
    Done {
        identity: String,
        facts: DeviceFacts,
    },
}

/// One serial adb lists.
#[derive(Debug, Clone)]
struct Seen {
    listed: Listed,
    /// Only for serials in state `device`.
    probe: Option<Probe>,
}

/// The tracker's memory: the serials adb lists now and the phones being served.
#[derive(Debug, Default)]
pub struct Tracker {
    /// `--serial`: when given, only these adb serials are considered.
    only: Option<HashSet<String>>,
    /// Every considered serial of the latest listing, by serial.
    seen: BTreeMap<String, Seen>,
    /// Served phones: identity → the serial they are reached through.
    served: BTreeMap<String, String>,
}

impl Tracker {
    /// A tracker serving every serial (`only` empty) or only those named.
    pub fn new(only: &[String]) -> Self {
        Tracker {
            only: (!only.is_empty()).then(|| only.iter().cloned().collect()),
            ..Tracker::default()
        }
    }

    /// A new listing of `adb devices -l`.
    pub fn listing(&mut self, listed: Vec<Listed>, now: Instant) -> Vec<Action> {
        let mut next = BTreeMap::new();
        for listed in listed {
            if self
                .only
                .as_ref()
                .is_some_and(|only| !only.contains(&listed.serial))
            {
                continue;
            }
            let previous = self.seen.remove(&listed.serial);
            // A serial keeps its probe only while it stays usable; one that went offline and
            // came back is probed again (it may even be another phone: emulator serials are
            // reused).
            let probe = if listed.state.usable() {
                Some(
                    previous
                        .and_then(|seen| seen.probe)
                        .unwrap_or(Probe::Pending {
                            next_at: now,
                            failures: 0,
                        }),
                )
            } else {
                None
            };
            next.insert(listed.serial.clone(), Seen { listed, probe });
        }
        self.seen = next;
        self.reconcile(now)
    }

    /// A probe's outcome. Returns the actions, and whether this failure is the serial's first
    /// in a row (so it is logged once, not at every retry).
    pub fn probed(
        &mut self,
        serial: &str,
        outcome: Result<(String, DeviceFacts), String>,
        now: Instant,
    ) -> (Vec<Action>, bool) {
        let Some(seen) = self.seen.get_mut(serial) else {
            return (Vec::new(), false);
        };
        let Some(Probe::InFlight { failures }) = seen.probe else {
            // The serial went away (or away and back) while it was probed: the outcome is stale.
            return (Vec::new(), false);
        };
        let mut first_failure = false;
        seen.probe = Some(match outcome {
            Ok((identity, facts)) => Probe::Done { identity, facts },
            Err(_) => {
                first_failure = failures == 0;
                let failures = failures + 1;
                Probe::Pending {
                    next_at: now + probe_backoff(failures),
                    failures,
                }
            }
        });
        (self.reconcile(now), first_failure)
    }

    /// Serials to probe now (their time has come), each marked in flight.
    fn due_probes(&mut self, now: Instant) -> Vec<Action> {
        let mut actions = Vec::new();
        for (serial, seen) in &mut self.seen {
            if let Some(Probe::Pending { next_at, failures }) = seen.probe
                && next_at <= now
            {
                seen.probe = Some(Probe::InFlight { failures });
                actions.push(Action::Probe {
                    serial: serial.clone(),
                });
            }
        }
        actions
    }

    /// When the next probe retry is due, for the backend's timer.
    pub fn next_probe_at(&self) -> Option<Instant> {
        self.seen
            .values()
            .filter_map(|seen| match seen.probe {
                Some(Probe::Pending { next_at, .. }) => Some(next_at),
                _ => None,
            })
            .min()
    }

    /// Probes that are due, and which serial serves each phone.
    pub fn reconcile(&mut self, now: Instant) -> Vec<Action> {
        let mut actions = self.due_probes(now);
        // Every probed, usable serial, grouped by the phone behind it.
        let mut candidates: BTreeMap<&str, Vec<(&Listed, &DeviceFacts)>> = BTreeMap::new();
        for seen in self.seen.values() {
            if let Some(Probe::Done { identity, facts }) = &seen.probe {
                candidates
                    .entry(identity.as_str())
                    .or_default()
                    .push((&seen.listed, facts));
            }
        }
        let mut served = BTreeMap::new();
        for (identity, serial) in &self.served {
            match candidates.get(identity.as_str()) {
                Some(options) => {
                    let (best, facts) = best(options, Some(serial));
                    if best.serial != *serial {
                        actions.push(Action::Switch {
                            identity: identity.clone(),
                            serial: best.serial.clone(),
                            facts: facts.clone(),
                        });
                    }
                    served.insert(identity.clone(), best.serial.clone());
                }
                None => actions.push(Action::Gone {
                    identity: identity.clone(),
                    reason: self.gone_reason(serial),
                }),
            }
        }
        for (identity, options) in &candidates {
            if !served.contains_key(*identity) {
                let (best, facts) = best(options, None);
                actions.push(Action::Serve {
                    identity: (*identity).to_owned(),
                    serial: best.serial.clone(),
                    facts: facts.clone(),
                });
                served.insert((*identity).to_owned(), best.serial.clone());
            }
        }
        self.served = served;
        actions
    }

    fn gone_reason(&self, serial: &str) -> String {
        match self.seen.get(serial) {
            Some(seen) if !seen.listed.state.usable() => seen.listed.state.reason(),
            Some(_) => "its serial now reaches another phone".to_owned(),
            None => format!("disconnected: adb no longer lists {serial}"),
        }
    }

    /// The phones served now: identity → serial.
    pub fn served(&self) -> &BTreeMap<String, String> {
        &self.served
    }

    /// The state adb reports for a serial, if it is listed.
    pub fn state_of(&self, serial: &str) -> Option<&AdbState> {
        self.seen.get(serial).map(|seen| &seen.listed.state)
    }
}

/// The serial to serve a phone through: a USB (or emulator) transport over a network one, then
/// the one already in use, then the first by name, so the choice is stable.
fn best<'a>(
    options: &[(&'a Listed, &'a DeviceFacts)],
    current: Option<&String>,
) -> (&'a Listed, &'a DeviceFacts) {
    *options
        .iter()
        .min_by_key(|(listed, _)| {
            (
                listed.over_network(),
                Some(&listed.serial) != current,
                listed.serial.clone(),
            )
        })
        .expect("a phone with candidates has at least one")
}

/// The wait after `failures` failed probes in a row.
pub fn probe_backoff(failures: u32) -> Duration {
    let doubled = PROBE_BACKOFF_FIRST.saturating_mul(1u32 << failures.saturating_sub(1).min(16));
    doubled.min(PROBE_BACKOFF_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listing::parse;

    fn facts(serialno: &str) -> DeviceFacts {
        DeviceFacts::pixel(serialno)
    }

    fn probed(serialno: &str) -> Result<(String, DeviceFacts), String> {
        Ok((serialno.to_owned(), facts(serialno)))
    }

    fn probes(actions: &[Action]) -> Vec<&str> {
        actions
            .iter()
            .filter_map(|action| match action {
                Action::Probe { serial } => Some(serial.as_str()),
                _ => None,
            })
            .collect()
    }

    const USB: &str =
        "R58M12ABCDE            device usb:1-1 product:p model:Pixel_7 device:d transport_id:1";
    const TCP: &str =
        "192.168.1.5:5555       device product:p model:Pixel_7 device:d transport_id:2";

    #[test]
    fn a_device_is_probed_then_served() {
        let now = Instant::now();
        let mut tracker = Tracker::new(&[]);
        let actions = tracker.listing(parse(USB), now);
        assert_eq!(probes(&actions), ["R58M12ABCDE"]);
        // Listing again while the probe runs asks for nothing more.
        assert_eq!(tracker.listing(parse(USB), now), []);
        let (actions, _) = tracker.probed("R58M12ABCDE", probed("R58M12ABCDE"), now);
        assert_eq!(
            actions,
            [Action::Serve {
                identity: "R58M12ABCDE".into(),
                serial: "R58M12ABCDE".into(),
                facts: facts("R58M12ABCDE"),
            }]
        );
        // Steady state: nothing to do.
        assert_eq!(tracker.listing(parse(USB), now), []);
    }

    #[test]
    fn the_same_phone_listed_twice_is_served_once_through_usb() {
        let now = Instant::now();
        let mut tracker = Tracker::new(&[]);
        let both = format!("{TCP}\n{USB}\n");
        let actions = tracker.listing(parse(&both), now);
        assert_eq!(probes(&actions).len(), 2);
        // The Wi-Fi probe finishes first: that phone is served through it for now.
        let (actions, _) = tracker.probed("192.168.1.5:5555", probed("R58M12ABCDE"), now);
        assert!(
            matches!(&actions[..], [Action::Serve { serial, .. }] if serial == "192.168.1.5:5555")
        );
        // Then USB: the same phone, so it moves to USB; it is not served twice.
        let (actions, _) = tracker.probed("R58M12ABCDE", probed("R58M12ABCDE"), now);
        assert_eq!(
            actions,
            [Action::Switch {
                identity: "R58M12ABCDE".into(),
                serial: "R58M12ABCDE".into(),
                facts: facts("R58M12ABCDE"),
            }]
        );
        assert_eq!(tracker.served().len(), 1);

        // USB unplugged, Wi-Fi stays: switch, no gone.
        let actions = tracker.listing(parse(TCP), now);
        assert!(
            matches!(&actions[..], [Action::Switch { serial, .. }] if serial == "192.168.1.5:5555"),
            "{actions:?}"
        );
        // Wi-Fi goes too: now it is gone.
        let actions = tracker.listing(Vec::new(), now);
        assert_eq!(
            actions,
            [Action::Gone {
                identity: "R58M12ABCDE".into(),
                reason: "disconnected: adb no longer lists 192.168.1.5:5555".into(),
            }]
        );
        assert!(tracker.served().is_empty());
    }

    #[test]
    fn two_phones_are_served_apart() {
        let now = Instant::now();
        let mut tracker = Tracker::new(&[]);
        tracker.listing(parse("emulator-5554\tdevice\nemulator-5556\tdevice\n"), now);
        let (a, _) = tracker.probed("emulator-5554", probed("EMU1"), now);
        let (b, _) = tracker.probed("emulator-5556", probed("EMU2"), now);
        assert!(matches!(&a[..], [Action::Serve { identity, .. }] if identity == "EMU1"));
        assert!(matches!(&b[..], [Action::Serve { identity, .. }] if identity == "EMU2"));
        assert_eq!(tracker.served().len(), 2);
    }

    #[test]
    fn a_device_that_turns_unauthorized_is_gone_with_that_reason() {
        let now = Instant::now();
        let mut tracker = Tracker::new(&[]);
        tracker.listing(parse(USB), now);
        tracker.probed("R58M12ABCDE", probed("R58M12ABCDE"), now);
        let actions = tracker.listing(parse("R58M12ABCDE unauthorized usb:1-1"), now);
        assert_eq!(
            actions,
            [Action::Gone {
                identity: "R58M12ABCDE".into(),
                reason: "unauthorized: accept the USB debugging prompt on the phone".into(),
            }]
        );
        // Accepted: probed again and served again.
        let actions = tracker.listing(parse(USB), now);
        assert_eq!(probes(&actions), ["R58M12ABCDE"]);
        let offline = tracker.listing(parse("R58M12ABCDE offline"), now);
        assert_eq!(offline, []);
        assert_eq!(tracker.state_of("R58M12ABCDE"), Some(&AdbState::Offline));
    }

    #[test]
    fn a_failing_probe_is_retried_with_backoff_and_reported_once() {
        let start = Instant::now();
        let mut tracker = Tracker::new(&[]);
        tracker.listing(parse(USB), start);
        let (actions, first) = tracker.probed("R58M12ABCDE", Err("timeout".into()), start);
        assert_eq!((actions, first), (vec![], true));
        // Not due yet.
        assert_eq!(tracker.listing(parse(USB), start), []);
        assert_eq!(tracker.next_probe_at(), Some(start + PROBE_BACKOFF_FIRST));
        let later = start + PROBE_BACKOFF_FIRST;
        assert_eq!(probes(&tracker.reconcile(later)), ["R58M12ABCDE"]);
        let (_, first) = tracker.probed("R58M12ABCDE", Err("timeout".into()), later);
        assert!(!first, "only the first failure in a row is reported");
        assert_eq!(
            tracker.next_probe_at(),
            Some(later + 2 * PROBE_BACKOFF_FIRST)
        );
        assert_eq!(probe_backoff(30), PROBE_BACKOFF_MAX);
    }

    #[test]
    fn a_stale_probe_outcome_is_ignored() {
        let now = Instant::now();
        let mut tracker = Tracker::new(&[]);
        tracker.listing(parse(USB), now);
        tracker.listing(Vec::new(), now);
        let (actions, _) = tracker.probed("R58M12ABCDE", probed("R58M12ABCDE"), now);
        assert_eq!(actions, []);
        assert!(tracker.served().is_empty());
    }

    #[test]
    fn serial_filter_limits_what_is_served() {
        let now = Instant::now();
        let mut tracker = Tracker::new(&["emulator-5556".to_owned()]);
        let actions = tracker.listing(parse("emulator-5554\tdevice\nemulator-5556\tdevice\n"), now);
        assert_eq!(probes(&actions), ["emulator-5556"]);
        assert_eq!(tracker.state_of("emulator-5554"), None);
    }
}
