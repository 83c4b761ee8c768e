//! [`Device`]'s operations against an in-process scripted phone: it records every adb
//! invocation's arguments and serves canned dumps, focus lines, screenshots and logs, and runs
//! guarded input only while the guard's package has the focus, as the phone's shell would
//! (the guard's shell itself is tested through a real `sh` in `shell.rs`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tabwire_protocol::devices::*;
use tabwire_protocol::policy::Policy;
use tabwire_protocol::refs::DeviceRef;
use tabwire_protocol::{ErrorCode, LeaseHolder, Observation, OpError, Point, Settling};

use crate::adb::{Adb, AdbError, AdbOutput};
use crate::device::{Device, DeviceFacts, DeviceOptions};
use crate::screen::tests::{dump, login_screen, node};
use base64::Engine as _;
use tabwire_device_kit::link::Served;

const SERIAL: &str = "192.168.1.5:5555";
const SHOP: &str = "com.example.shop";

#[derive(Default)]
struct Fake {
    calls: Vec<Vec<String>>,
    /// Served first, one per dump.
    dumps: VecDeque<String>,
    /// Served once `dumps` is empty.
    last_dump: String,
    keyboard: bool,
    /// The focused app's package (its activity window and `mFocusedApp`).
    focus: String,
    /// The focus state printed instead of `focus`'s, when set.
    focus_state: Option<String>,
    inputs: Vec<String>,
    /// Where the focus goes after the next input.
    focus_after_input: Option<String>,
    replies: Vec<(String, String)>,
    screencap: Vec<u8>,
    /// What `exec-out cat RECORDING` prints.
    video: Vec<u8>,
    /// `adb install`'s output, and the files it was given (read while it runs).
    install_reply: String,
    installed: Vec<(Vec<String>, Vec<u8>)>,
    gone: bool,
    /// Dumps wait for this before answering.
    hold: Option<Arc<tokio::sync::Semaphore>>,
    /// Input lines wait for this before their input lands.
    hold_inputs: Option<Arc<tokio::sync::Semaphore>>,
}

#[derive(Default)]
struct Phone(Mutex<Fake>);

impl Phone {
    fn with(f: impl FnOnce(&mut Fake)) -> Arc<Phone> {
        let phone = Phone::default();
        {
            let mut fake = phone.0.lock().unwrap();
            fake.focus = SHOP.into();
            fake.last_dump = login_screen("", "");
            f(&mut fake);
        }
        Arc::new(phone)
    }

    fn fake(&self) -> std::sync::MutexGuard<'_, Fake> {
        self.0.lock().unwrap()
    }

    fn calls(&self) -> usize {
        self.fake().calls.len()
    }

    fn inputs(&self) -> Vec<String> {
        self.fake().inputs.clone()
    }

    fn last_line(&self) -> String {
        self.fake().calls.last().unwrap().last().unwrap().clone()
    }
}

impl Fake {
    /// The focus state the device's shell would print.
    fn focus_state(&self) -> String {
        match &self.focus_state {
            Some(state) => state.clone(),
            None if self.focus.is_empty() => String::new(),
            None => format!("app u0 {0}/\nwindow u0 {0}/", self.focus),
        }
    }

    fn focus_section(&self) -> String {
        let state = self.focus_state();
        if state.is_empty() {
            "tabwire-focus\ntabwire-focus-end\n".to_owned()
        } else {
            format!("tabwire-focus\n{state}\ntabwire-focus-end\n")
        }
    }
}

/// Undoes `shell::quote`.
fn unquote(quoted: &str) -> String {
    quoted
        .strip_prefix('\'')
        .and_then(|q| q.strip_suffix('\''))
        .expect("a quoted word")
        .replace(r"'\''", "'")
}

fn ok(stdout: impl Into<Vec<u8>>) -> AdbOutput {
    AdbOutput {
        stdout: stdout.into(),
        stderr: String::new(),
        status: Some(0),
    }
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text.find(start).unwrap() + start.len();
    let to = text[from..].find(end).unwrap() + from;
    &text[from..to]
}

impl Adb for Phone {
    async fn run(&self, args: &[&str], _timeout: Duration) -> Result<AdbOutput, AdbError> {
        assert_eq!(&args[..2], ["-s", SERIAL], "every call names the serial");
        if args[2] == "install" {
            let mut fake = self.fake();
            fake.calls
                .push(args.iter().map(|a| (*a).to_owned()).collect());
            let file = std::fs::read(args[args.len() - 1]).unwrap_or_default();
            fake.installed
                .push((args[2..].iter().map(|a| (*a).to_owned()).collect(), file));
            let reply = fake.install_reply.clone();
            return Ok(AdbOutput {
                status: Some(if reply.contains("Success") { 0 } else { 1 }),
                ..ok(reply)
            });
        }
        assert_eq!(args.len(), 4, "one command line per call: {args:?}");
        let hold = {
            let mut fake = self.fake();
            fake.calls
                .push(args.iter().map(|a| (*a).to_owned()).collect());
            if fake.gone {
                return Ok(AdbOutput {
                    stdout: Vec::new(),
                    stderr: format!("adb: device '{SERIAL}' not found\n"),
                    status: Some(1),
                });
            }
            (fake.hold.clone(), fake.hold_inputs.clone())
        };
        let (verb, line) = (args[2], args[3]);
        let (hold, hold_inputs) = hold;
        if line.contains("uiautomator dump")
            && let Some(hold) = hold
        {
            let _permit = hold.acquire().await.unwrap();
        }
        if line.starts_with("n=0; g() {")
            && let Some(hold) = hold_inputs
        {
            let _permit = hold.acquire().await.unwrap();
        }
        let mut fake = self.fake();
        Ok(match verb {
            "exec-out" if line.starts_with("uiautomator dump /dev/tty;") => {
                let xml = match fake.dumps.pop_front() {
                    Some(next) => next,
                    None => fake.last_dump.clone(),
                };
                ok(format!(
                    "{xml}\ntabwire-ime\n    mInputShown={} mShowRequested=false\n{}",
                    fake.keyboard,
                    fake.focus_section()
                ))
            }
            "exec-out" if line == crate::shell::recording_fetch() => ok(fake.video.clone()),
            "exec-out" if line.ends_with("; screencap -p") => {
                let mut out = fake.focus_section().into_bytes();
                out.extend_from_slice(&fake.screencap);
                ok(out)
            }
            "shell" if line.starts_with("n=0; g() {") => {
                // The guard: each step runs only while the focus state is the expected one.
                let expected = unquote(between(line, "if [ \"$f\" = ", " ]; then"));
                let steps = between(line, "return 1; }; g && ", " && echo tabwire-done");
                for (done, step) in steps.split(" && g && ").enumerate() {
                    if fake.focus_state() != expected {
                        let state = fake.focus_state();
                        let state = if state.is_empty() {
                            String::new()
                        } else {
                            format!("{state}\n")
                        };
                        return Ok(ok(format!(
                            "tabwire-foreground:{done}\n{state}tabwire-focus-end\n"
                        )));
                    }
                    fake.inputs.push(step.to_owned());
                    if let Some(next) = fake.focus_after_input.take() {
                        fake.focus = next;
                    }
                }
                ok("tabwire-done\n")
            }
            "shell" if line.starts_with("echo tabwire-focus;") => ok(fake.focus_section()),
            "shell" => {
                let reply = fake
                    .replies
                    .iter()
                    .find(|(needle, _)| line.contains(needle.as_str()))
                    .map(|(_, reply)| reply.clone())
                    .unwrap_or_default();
                ok(reply)
            }
            other => panic!("unexpected adb verb {other}"),
        })
    }
}

fn facts() -> DeviceFacts {
    DeviceFacts::pixel("R58M12ABCDE")
}

fn device(phone: &Arc<Phone>, options: DeviceOptions) -> Device<Phone> {
    Device::new(phone.clone(), SERIAL.into(), facts(), options)
}

fn holder(session: &str) -> Option<LeaseHolder> {
    Some(LeaseHolder {
        session: session.into(),
        client: format!("Agent {session}"),
        idle_ms: 600_000,
    })
}

fn view() -> DeviceView {
    DeviceView {
        query: None,
        max_nodes: 30,
        max_chars: 1500,
        offset: 0,
        since: None,
    }
}

const SECONDS: Duration = Duration::from_secs(5);

/// A snapshot as session "a" (the session most tests act as) sees it: its later actions'
/// deltas are against it.
async fn snapshot(device: &Device<Phone>) -> Result<Observation<Foreground>, OpError> {
    match device
        .execute(
            DeviceOp::Snapshot(DeviceSnapshot { view: view() }),
            None,
            "a",
            SECONDS,
        )
        .await?
    {
        DeviceResult::Snapshot(observation) => Ok(observation),
        other => panic!("{other:?}"),
    }
}

fn tap(target: u32, observe: bool) -> DeviceOp {
    DeviceOp::Tap(DeviceTap {
        target: DeviceRef(target),
        observe: observe.then(view),
    })
}

/// A 300 ms swipe without an observation, within a node or from a point (or neither).
fn swipe(
    direction: SwipeDirection,
    within: Option<u32>,
    from: Option<(u32, u32)>,
    distance_percent: u8,
) -> DeviceOp {
    DeviceOp::Swipe(DeviceSwipe {
        direction,
        within: within.map(DeviceRef),
        from: from.map(|(x, y)| Point { x, y }),
        distance_percent,
        duration_ms: 300,
        observe: None,
    })
}

async fn acted(
    device: &Device<Phone>,
    op: DeviceOp,
    session: &str,
) -> Result<DeviceActed, OpError> {
    match device
        .execute(op, holder(session), session, SECONDS)
        .await?
    {
        DeviceResult::Acted(acted) => Ok(acted),
        other => panic!("{other:?}"),
    }
}

fn policy(json: &str) -> Policy {
    serde_json::from_str(json).unwrap()
}

/// The login screen with its button replaced by a progress bar (`busy`) or by a welcome
/// text (`done`).
fn after_login(busy: bool) -> String {
    let inner = if busy {
        node(
            &[
                ("class", "android.widget.ProgressBar"),
                ("resource-id", "com.example.shop:id/progress"),
                ("bounds", "[500,1100][580,1180]"),
            ],
            "",
        )
    } else {
        node(
            &[
                ("class", "android.widget.TextView"),
                ("text", "Hello, Ann"),
                ("bounds", "[40,100][1040,180]"),
            ],
            "",
        )
    };
    dump(0, &node(&[("class", "android.widget.FrameLayout")], &inner))
}

#[tokio::test]
async fn a_probe_is_one_invocation_and_the_override_size_wins() {
    let phone = Phone::with(|f| {
        f.replies.push((
            "getprop ro.serialno".into(),
            "R58M12ABCDE\r\nGoogle\r\nPixel 7\r\n14\r\n34\r\nPhysical size: 1080x2400\r\nOverride size: 720x1600\r\nandroid_id:9774D56D682E549C\r\n".into(),
        ))
    });
    let facts = Device::probe(&*phone, SERIAL).await.unwrap();
    assert_eq!(phone.calls(), 1);
    assert!(phone.last_line().contains("settings get secure android_id"));
    assert_eq!(facts.serialno, "R58M12ABCDE");
    assert_eq!(facts.android_id, "9774d56d682e549c");
    assert_eq!(facts.model, "Pixel 7");
    assert_eq!(facts.sdk, Some(34));
    assert_eq!(
        facts.screen,
        ScreenSize {
            width: 720,
            height: 1600
        }
    );
    let phone = Phone::with(|f| f.replies.push(("getprop".into(), "\n\n\n\n\n".into())));
    let error = Device::probe(&*phone, SERIAL).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::DeviceError);
}

#[tokio::test]
async fn a_snapshot_is_one_exec_out_with_the_keyboard_folded_in() {
    let phone = Phone::with(|f| f.keyboard = true);
    let device = device(&phone, DeviceOptions::default());
    let observation = snapshot(&device).await.unwrap();
    assert_eq!(phone.calls(), 1);
    assert_eq!(phone.fake().calls[0][2], "exec-out");
    assert!(observation.of.keyboard_shown);
    assert_eq!(observation.of.package, SHOP);
    assert_eq!(observation.nodes.len(), 11);
    assert_eq!(observation.nodes[5].text, r#"button "LOG IN""#);
}

#[tokio::test]
async fn a_tap_with_observation_costs_two_invocations_and_reports_a_delta() {
    let phone = Phone::with(|_| {});
    let device = device(&phone, DeviceOptions::default());
    let before = snapshot(&device).await.unwrap();
    phone
        .fake()
        .dumps
        .push_back(login_screen("", "ann@example.com"));
    let calls = phone.calls();
    let acted = acted(&device, tap(6, true), "a").await.unwrap();
    assert_eq!(phone.calls() - calls, 2, "the guarded tap and one dump");
    assert_eq!(phone.inputs(), ["input tap 540 570"]);
    assert_eq!(acted.at, Some(Point { x: 540, y: 570 }));
    assert_eq!(acted.package, SHOP);
    let observation = acted.observation.unwrap();
    assert_eq!(
        observation.settling,
        Some(Settling {
            dumps: 1,
            settled: true
        })
    );
    let delta = observation.delta.expect("a delta against the snapshot");
    assert_eq!(delta.since, before.version);
    assert_eq!(delta.changed.len(), 1);
    assert_eq!(delta.changed[0].node_ref, Some(DeviceRef(2)));
}

/// Issue 23 §4: a session's action is compared with what that session was shown, not with
/// another session's later look at the same screen; a session that ended keeps nothing.
#[tokio::test]
async fn an_action_is_compared_with_its_own_sessions_view_and_an_ended_one_keeps_none() {
    let phone = Phone::with(|_| {});
    let device = device(&phone, DeviceOptions::default());
    let mine = snapshot(&device).await.unwrap();
    // The screen changes, then session "b" looks at it.
    phone.fake().last_dump = login_screen("", "ann@example.com");
    let theirs = device
        .execute(
            DeviceOp::Snapshot(DeviceSnapshot { view: view() }),
            None,
            "b",
            SECONDS,
        )
        .await
        .unwrap();
    assert!(matches!(&theirs, DeviceResult::Snapshot(o) if o.delta.is_none()));
    phone
        .fake()
        .dumps
        .push_back(login_screen("", "ann@example.com"));
    let acted = acted(&device, tap(6, true), "a").await.unwrap();
    let delta = acted.observation.unwrap().delta.expect("against a's view");
    assert_eq!(delta.since, mine.version);
    assert_eq!(delta.changed.len(), 1, "{delta:?}");
    assert_eq!(
        delta.changed[0].text,
        r#"textbox "Email" = "ann@example.com""#
    );

    // Session "a" ends: its views are forgotten, so its old version is no baseline.
    device.session_ended("a");
    let since = DeviceView {
        since: Some(mine.version),
        ..view()
    };
    let again = device
        .execute(
            DeviceOp::Snapshot(DeviceSnapshot { view: since }),
            None,
            "a",
            SECONDS,
        )
        .await
        .unwrap();
    assert!(
        matches!(&again, DeviceResult::Snapshot(o) if o.reset),
        "{again:?}"
    );
}

#[tokio::test]
async fn the_first_action_learns_the_foreground_from_the_guard() {
    let phone = Phone::with(|_| {});
    let device = device(&phone, DeviceOptions::default());
    let op = DeviceOp::PressButton(PressButton {
        button: Button::Back,
        observe: None,
    });
    let acted = acted(&device, op, "a").await.unwrap();
    assert_eq!(
        phone.calls(),
        2,
        "the guard reports the app, then runs in it"
    );
    assert_eq!(phone.inputs(), ["input keyevent 4"]);
    assert_eq!(acted.package, SHOP);
}

#[tokio::test]
async fn refs_not_on_the_latest_screen_are_stale() {
    let phone = Phone::with(|_| {});
    let device = device(&phone, DeviceOptions::default());
    let error = acted(&device, tap(1, false), "a").await.unwrap_err();
    assert_eq!(error.code, ErrorCode::StaleRef, "no look yet");
    snapshot(&device).await.unwrap();
    assert_eq!(
        acted(&device, tap(99, false), "a").await.unwrap_err().code,
        ErrorCode::StaleRef
    );
    // An action that did not look afterwards keeps its refs: the next one that names a ref
    // looks first (one dump), and the ref resolves by its element's identity.
    acted(&device, tap(6, false), "a").await.unwrap();
    let calls = phone.calls();
    acted(&device, tap(6, false), "a").await.unwrap();
    assert_eq!(phone.calls() - calls, 2, "a look, then the guarded tap");
    assert_eq!(phone.inputs(), ["input tap 540 570", "input tap 540 570"]);
    // A ref the new look numbers but no look had issued before stays unknown.
    acted(&device, tap(6, false), "a").await.unwrap();
    assert_eq!(
        acted(&device, tap(12, false), "a").await.unwrap_err().code,
        ErrorCode::StaleRef
    );
    assert_eq!(phone.inputs().len(), 3);
    // When the element is gone from the new screen (the tap logged in), its ref is stale.
    acted(&device, tap(6, false), "a").await.unwrap();
    phone.fake().last_dump = after_login(false);
    assert_eq!(
        acted(&device, tap(6, false), "a").await.unwrap_err().code,
        ErrorCode::StaleRef
    );
    assert_eq!(phone.inputs().len(), 4);
}

#[tokio::test]
async fn dump_failures_that_exit_zero_are_retried_then_reported_with_advice() {
    let idle = "ERROR: could not get idle state.\n".to_owned();
    let phone = Phone::with(|f| {
        f.dumps = [idle.clone(), idle.clone()].into();
    });
    let device = device(&phone, DeviceOptions::default());
    let observation = snapshot(&device).await.unwrap();
    assert_eq!(phone.calls(), 3, "two failures, then the screen");
    assert_eq!(observation.nodes.len(), 11);

    for (failure, advice) in [
        (idle.as_str(), "animation"),
        (
            "ERROR: null root node returned by UiTestAutomationBridge.\n",
            "unlock",
        ),
        (
            "java.lang.IllegalStateException: UiAutomationService android.accessibilityservice.IAccessibilityServiceClient$Stub$Proxy@1 already registered!\n",
            "another UI automation tool",
        ),
        ("", "printed nothing"),
        (
            "<?xml version='1.0' ?><hierarchy rotation=\"0\"><node",
            "cut off",
        ),
    ] {
        let phone = Phone::with(|f| f.last_dump = failure.into());
        let device = self::device(&phone, DeviceOptions::default());
        let error = snapshot(&device).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::DeviceBusy, "{failure:?}");
        assert!(error.message.contains(advice), "{}", error.message);
        assert_eq!(phone.calls(), 3, "bounded retries");
    }
}

#[tokio::test]
async fn the_settle_loop_dumps_again_while_busy_and_until_two_dumps_agree() {
    let phone = Phone::with(|_| {});
    let device = device(&phone, DeviceOptions::default());
    snapshot(&device).await.unwrap();
    phone.fake().dumps = [after_login(true), after_login(true)].into();
    phone.fake().last_dump = after_login(false);
    let first = acted(&device, tap(6, true), "a").await.unwrap();
    let observation = first.observation.unwrap();
    assert_eq!(
        observation.settling,
        Some(Settling {
            dumps: 4,
            settled: true
        }),
        "busy, busy, changed, the same again"
    );
    assert_eq!(
        observation.delta.unwrap().changed[0].text,
        r#""Hello, Ann""#
    );

    // A screen that stays busy is observed after the bound, unsettled.
    let phone = Phone::with(|_| {});
    let device = self::device(&phone, DeviceOptions::default());
    snapshot(&device).await.unwrap();
    phone.fake().last_dump = after_login(true);
    let unsettled = acted(&device, tap(6, true), "a").await.unwrap();
    assert_eq!(
        unsettled.observation.unwrap().settling,
        Some(Settling {
            dumps: crate::run::MAX_SETTLE_DUMPS,
            settled: false
        })
    );
}

#[tokio::test]
async fn a_screen_not_redrawn_yet_is_dumped_once_more() {
    let phone = Phone::with(|_| {});
    let device = device(&phone, DeviceOptions::default());
    snapshot(&device).await.unwrap();
    // The first dump after the tap still shows the login screen; the next, the app's answer.
    let unchanged = phone.fake().last_dump.clone();
    phone.fake().dumps = [unchanged].into();
    phone.fake().last_dump = after_login(false);
    let calls = phone.calls();
    let first = acted(&device, tap(6, true), "a").await.unwrap();
    assert_eq!(phone.calls() - calls, 3, "the tap and two dumps");
    let observation = first.observation.unwrap();
    assert_eq!(
        observation.settling,
        Some(Settling {
            dumps: 2,
            settled: true
        })
    );
    assert_eq!(
        observation.delta.unwrap().changed[0].text,
        r#""Hello, Ann""#
    );
    // A tap that changes nothing costs that one dump more, and no more.
    let phone = Phone::with(|_| {});
    let device = self::device(&phone, DeviceOptions::default());
    snapshot(&device).await.unwrap();
    let calls = phone.calls();
    let nothing = acted(&device, tap(6, true), "a").await.unwrap();
    assert_eq!(phone.calls() - calls, 3, "the tap and two dumps");
    assert_eq!(
        nothing.observation.unwrap().settling,
        Some(Settling {
            dumps: 2,
            settled: true
        })
    );
}

#[tokio::test]
async fn typing_taps_the_field_types_the_text_and_submits() {
    let phone = Phone::with(|_| {});
    let device = device(&phone, DeviceOptions::default());
    snapshot(&device).await.unwrap();
    let op = DeviceOp::Type(DeviceType {
        target: Some(DeviceRef(2)),
        text: "a b'$(touch x)".into(),
        submit: true,
        observe: None,
    });
    let typed = acted(&device, op, "a").await.unwrap();
    assert_eq!(typed.at, Some(Point { x: 540, y: 250 }));
    assert_eq!(
        phone.inputs(),
        [
            "input tap 540 250",
            r"input text 'a%sb'\''$(touch%sx)'",
            "input keyevent 66"
        ],
        "each step behind its own check, in one line"
    );
    assert_eq!(phone.calls(), 2, "the snapshot and one guarded line");

    let calls = phone.calls();
    let op = DeviceOp::Type(DeviceType {
        target: None,
        text: "naïve".into(),
        submit: false,
        observe: None,
    });
    let error = acted(&device, op, "a").await.unwrap_err();
    assert_eq!(error.code, ErrorCode::TextNotTypable);
    assert_eq!(phone.calls(), calls, "refused before any adb call");
}

#[tokio::test]
async fn long_text_stops_if_another_app_takes_the_focus_part_way() {
    let phone = Phone::with(|f| f.focus_after_input = Some("com.other".into()));
    let device = device(&phone, DeviceOptions::default());
    snapshot(&device).await.unwrap();
    let op = DeviceOp::Type(DeviceType {
        target: None,
        text: "x".repeat(5000),
        submit: false,
        observe: None,
    });
    let error = acted(&device, op, "a").await.unwrap_err();
    assert_eq!(error.code, ErrorCode::DeviceBusy);
    assert!(error.action_may_have_occurred);
    assert!(error.message.contains("com.other"), "{}", error.message);
    assert_eq!(phone.inputs().len(), 1, "nothing typed into the other app");
}

/// Review finding 2: a tap on a field opens another app (or Enter does), and the text typed
/// after it in the same command line must not land there.
#[tokio::test]
async fn a_step_that_moves_the_focus_stops_the_rest_of_its_line() {
    let phone = Phone::with(|f| f.focus_after_input = Some("com.bank.app".into()));
    let device = device(&phone, DeviceOptions::default());
    device.set_operator_policy(policy(
        r#"{"apps":[{"package":"com.bank.*","access":"deny"}]}"#,
    ));
    snapshot(&device).await.unwrap();
    let op = DeviceOp::Type(DeviceType {
        target: Some(DeviceRef(2)),
        text: "123456".into(),
        submit: true,
        observe: None,
    });
    let error = acted(&device, op, "a").await.unwrap_err();
    assert_eq!(error.code, ErrorCode::DeviceBusy);
    assert!(error.action_may_have_occurred, "the tap ran");
    assert!(error.message.contains("com.bank.app"), "{}", error.message);
    assert_eq!(
        phone.inputs(),
        ["input tap 540 250"],
        "neither the code nor its Enter reached the bank"
    );
    // The next action judges the bank, which is denied, and sends nothing.
    let error = acted(&device, tap(2, false), "a").await.unwrap_err();
    assert_eq!(
        error.code,
        ErrorCode::StaleRef,
        "the screen changed: refs are gone"
    );
    let press = DeviceOp::PressButton(PressButton {
        button: Button::Enter,
        observe: None,
    });
    let error = acted(&device, press, "a").await.unwrap_err();
    assert_eq!(error.code, ErrorCode::AppBlocked);
    assert_eq!(phone.inputs().len(), 1);
}

/// Review finding 1: every focused package the live state names is judged, so two displays
/// (or a focused window and a focused app) that disagree cannot let one hide the other.
#[tokio::test]
async fn every_focused_package_is_judged() {
    let phone = Phone::with(|f| {
        f.focus_state = Some(format!(
            "app u0 {SHOP}/\napp u0 com.bank.app/\nwindow u0 {SHOP}/\nwindow u0 com.bank.app/"
        ))
    });
    let device = device(&phone, DeviceOptions::default());
    device.set_operator_policy(policy(
        r#"{"apps":[{"package":"com.bank.*","access":"read"}]}"#,
    ));
    let press = || {
        DeviceOp::PressButton(PressButton {
            button: Button::Back,
            observe: None,
        })
    };
    let error = acted(&device, press(), "a").await.unwrap_err();
    assert_eq!(error.code, ErrorCode::AppBlocked);
    assert!(phone.inputs().is_empty());
    // With nothing restricted, the same state is no obstacle.
    device.set_operator_policy(Policy::default());
    acted(&device, press(), "a").await.unwrap();
    assert_eq!(phone.inputs(), ["input keyevent 4"]);
}

/// Review finding 3: a focused window that is not an activity's (the notification shade, an
/// ANR dialog) is never judged by the app behind it.
#[tokio::test]
async fn a_window_with_no_readable_owner_is_refused_while_rules_apply() {
    for window in ["NotificationShade", "Application Not Responding: com.x.y"] {
        let phone =
            Phone::with(|f| f.focus_state = Some(format!("app u0 {SHOP}/\nwindow u0 {window}")));
        let device = device(&phone, DeviceOptions::default());
        device.set_operator_policy(policy(
            r#"{"apps":[{"package":"com.bank.*","access":"deny"}]}"#,
        ));
        let press = || {
            DeviceOp::PressButton(PressButton {
                button: Button::Enter,
                observe: None,
            })
        };
        let error = acted(&device, press(), "a").await.unwrap_err();
        assert_eq!(error.code, ErrorCode::AppBlocked, "{window}");
        assert!(error.message.contains("owns it"), "{}", error.message);
        assert!(phone.inputs().is_empty());
        // A screenshot of it is refused too.
        let shot = device
            .execute(
                DeviceOp::Screenshot(DeviceScreenshotRequest { max_width: 100 }),
                None,
                "",
                SECONDS,
            )
            .await
            .unwrap_err();
        assert_eq!(shot.code, ErrorCode::AppBlocked);
        // No rules: nothing to protect, and the key is sent.
        device.set_operator_policy(Policy::default());
        acted(&device, press(), "a").await.unwrap();
        assert_eq!(phone.inputs(), ["input keyevent 66"]);
    }
    // A window with no title is named by its package, which is judged.
    let phone =
        Phone::with(|f| f.focus_state = Some(format!("app u0 {SHOP}/\nwindow u0 com.bank.app")));
    let device = device(&phone, DeviceOptions::default());
    device.set_operator_policy(policy(
        r#"{"apps":[{"package":"com.bank.*","access":"deny"}]}"#,
    ));
    let error = acted(
        &device,
        DeviceOp::PressButton(PressButton {
            button: Button::Back,
            observe: None,
        }),
        "a",
    )
    .await
    .unwrap_err();
    assert_eq!(error.code, ErrorCode::AppBlocked);
    assert!(error.message.contains("com.bank"), "{}", error.message);
}

/// Review finding 3: a touch lands in the window under the point, not the focused one. An
/// overlay of a read-only app over the allowed app in front is judged by its own package.
#[tokio::test]
async fn a_touch_is_judged_by_the_app_under_it() {
    let screen = dump(
        0,
        &[
            node(
                &[
                    ("class", "android.widget.Button"),
                    ("text", "Buy"),
                    ("clickable", "true"),
                    ("bounds", "[0,0][1080,1000]"),
                ],
                "",
            ),
            node(
                &[
                    ("class", "android.widget.Button"),
                    ("text", "Pay now"),
                    ("clickable", "true"),
                    ("package", "com.bank.app"),
                    ("bounds", "[0,1800][1080,2400]"),
                ],
                "",
            ),
        ]
        .concat(),
    );
    let phone = Phone::with(|f| f.last_dump = screen);
    let device = device(&phone, DeviceOptions::default());
    device.set_operator_policy(policy(
        r#"{"apps":[{"package":"com.bank.*","access":"read"}]}"#,
    ));
    let observed = snapshot(&device).await.unwrap();
    let pay = observed
        .nodes
        .iter()
        .find(|n| n.text.contains("Pay now"))
        .unwrap();
    assert_eq!(pay.node_ref, Some(DeviceRef(2)));
    let refused = |result: Result<DeviceActed, OpError>| {
        let error = result.unwrap_err();
        assert_eq!(error.code, ErrorCode::AppBlocked, "{}", error.message);
        assert!(error.message.contains("com.bank"), "{}", error.message);
    };
    // By ref, by point, a long press there, and a swipe that starts on it.
    refused(acted(&device, tap(2, false), "a").await);
    snapshot(&device).await.unwrap();
    let at = |x, y| TapCoordinates {
        point: Point { x, y },
        observe: None,
    };
    refused(acted(&device, DeviceOp::TapCoordinates(at(540, 2000)), "a").await);
    refused(
        acted(
            &device,
            DeviceOp::LongPress(LongPress {
                target: PressTarget::Point(Point { x: 10, y: 2300 }),
                duration_ms: 600,
                observe: None,
            }),
            "a",
        )
        .await,
    );
    refused(acted(&device, swipe(SwipeDirection::Up, Some(2), None, 50), "a").await);
    assert!(phone.inputs().is_empty(), "nothing reached the bank");
    // Outside it, in the app in front, the tap goes.
    acted(&device, DeviceOp::TapCoordinates(at(540, 500)), "a")
        .await
        .unwrap();
    assert_eq!(phone.inputs(), ["input tap 540 500"]);
}

/// Review finding 4: a screenshot taken while the focus cannot be read is not returned when
/// a policy restricts any app.
#[tokio::test]
async fn a_screenshot_of_an_unknown_screen_is_refused_while_rules_apply() {
    let phone = Phone::with(|f| {
        f.focus = String::new();
        f.screencap = tabwire_device_kit::screenshot::png_of(4, 2);
    });
    let device = device(&phone, DeviceOptions::default());
    let shot = || {
        device.execute(
            DeviceOp::Screenshot(DeviceScreenshotRequest { max_width: 100 }),
            None,
            "",
            SECONDS,
        )
    };
    // No rules: the image is returned.
    assert!(matches!(shot().await.unwrap(), DeviceResult::Screenshot(_)));
    device.set_operator_policy(policy(
        r#"{"apps":[{"package":"com.bank.*","access":"deny"}]}"#,
    ));
    let error = shot().await.unwrap_err();
    assert_eq!(error.code, ErrorCode::AppBlocked);
    assert!(
        error.message.contains("could not be read"),
        "{}",
        error.message
    );
    // With the app in front known and allowed, it is returned again.
    phone.fake().focus = SHOP.into();
    assert!(matches!(shot().await.unwrap(), DeviceResult::Screenshot(_)));
}

#[tokio::test]
async fn coordinates_gestures_and_buttons_are_checked_and_sent() {
    let phone = Phone::with(|_| {});
    let device = device(&phone, DeviceOptions::default());
    snapshot(&device).await.unwrap();
    let off = DeviceOp::TapCoordinates(TapCoordinates {
        point: Point { x: 1080, y: 10 },
        observe: None,
    });
    assert_eq!(
        acted(&device, off, "a").await.unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    let on = DeviceOp::TapCoordinates(TapCoordinates {
        point: Point { x: 1079, y: 2399 },
        observe: None,
    });
    acted(&device, on, "a").await.unwrap();
    let press = DeviceOp::LongPress(LongPress {
        target: PressTarget::Point(Point { x: 10, y: 20 }),
        duration_ms: 800,
        observe: None,
    });
    acted(&device, press, "a").await.unwrap();
    let whole = swipe(SwipeDirection::Up, None, None, 50);
    acted(&device, whole, "a").await.unwrap();
    snapshot(&device).await.unwrap();
    let within = swipe(SwipeDirection::Left, Some(9), None, 80);
    acted(&device, within, "a").await.unwrap();
    // From a point: a drawer pulled from the left edge, 60% of the screen's width.
    let drawer = swipe(SwipeDirection::Right, None, Some((2, 1200)), 60);
    acted(&device, drawer, "a").await.unwrap();
    // Past the edge it stops there.
    let up = swipe(SwipeDirection::Up, None, Some((540, 300)), 50);
    acted(&device, up, "a").await.unwrap();
    for bad in [
        swipe(SwipeDirection::Up, None, Some((1080, 300)), 50),
        swipe(SwipeDirection::Up, Some(9), Some((10, 300)), 50),
    ] {
        assert_eq!(
            acted(&device, bad, "a").await.unwrap_err().code,
            ErrorCode::InvalidArgument
        );
    }
    let bad = swipe(SwipeDirection::Left, None, None, 100);
    assert_eq!(
        acted(&device, bad, "a").await.unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    let keyboard = DeviceOp::DismissKeyboard(DismissKeyboard { observe: None });
    acted(&device, keyboard, "a").await.unwrap();
    assert_eq!(
        phone.inputs(),
        [
            "input tap 1079 2399",
            "input swipe 10 20 10 20 800",
            "input swipe 540 1800 540 600 300",
            // The list is [0,700][1080,2400]: 80% of its width, through its centre.
            "input swipe 972 1550 108 1550 300",
            "input swipe 2 1200 650 1200 300",
            "input swipe 540 300 540 0 300",
            "if dumpsys input_method | grep -q mInputShown=true; then input keyevent 4; fi",
        ]
    );
}

#[tokio::test]
async fn a_denied_app_is_never_read_and_a_read_only_app_never_acted_in() {
    let bank = dump(
        0,
        &node(
            &[
                ("package", "com.bank.app"),
                ("class", "android.widget.TextView"),
                ("text", "Balance 1,234"),
                ("bounds", "[0,0][100,100]"),
            ],
            "",
        ),
    );
    let phone = Phone::with(|f| f.last_dump = bank.clone());
    let options = DeviceOptions {
        owner_policy: Some(policy(
            r#"{"apps":[{"package":"com.bank.*","access":"deny"}]}"#,
        )),
        ..DeviceOptions::default()
    };
    let device = device(&phone, options);
    let error = snapshot(&device).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::AppBlocked);
    assert!(error.message.contains("device owner"), "{}", error.message);
    assert!(!format!("{error:?}").contains("Balance"));

    // The operator makes the shop read-only: snapshots work, taps are refused unsent.
    let phone = Phone::with(|_| {});
    let device = self::device(&phone, DeviceOptions::default());
    device.set_operator_policy(policy(
        r#"{"apps":[{"package":"com.example.*","access":"read"}]}"#,
    ));
    snapshot(&device).await.unwrap();
    let error = acted(&device, tap(6, false), "a").await.unwrap_err();
    assert_eq!(error.code, ErrorCode::AppBlocked);
    assert!(error.message.contains("operator"), "{}", error.message);
    assert!(phone.inputs().is_empty());

    // The app in front changed since the look: the guard refuses, the new app is judged.
    let phone = Phone::with(|_| {});
    let device = self::device(&phone, DeviceOptions::default());
    device.set_operator_policy(policy(
        r#"{"apps":[{"package":"com.bank.*","access":"deny"}]}"#,
    ));
    snapshot(&device).await.unwrap();
    phone.fake().focus = "com.bank.app".into();
    let error = acted(&device, tap(6, false), "a").await.unwrap_err();
    assert_eq!(error.code, ErrorCode::AppBlocked);
    assert!(phone.inputs().is_empty(), "no input reached the bank app");

    // `ask` cannot be asked on a device.
    let phone = Phone::with(|_| {});
    let device = self::device(&phone, DeviceOptions::default());
    device.set_operator_policy(policy(
        r#"{"apps":[{"package":"com.example.shop","access":"ask"}]}"#,
    ));
    snapshot(&device).await.unwrap();
    let error = acted(&device, tap(6, false), "a").await.unwrap_err();
    assert!(
        error.message.contains("cannot be asked"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn another_session_is_refused_while_reads_go_on() {
    let phone = Phone::with(|_| {});
    let device = device(&phone, DeviceOptions::default());
    snapshot(&device).await.unwrap();
    acted(&device, tap(6, false), "a").await.unwrap();
    snapshot(&device).await.unwrap();
    let refused = acted(&device, tap(6, false), "b").await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::DeviceLeased);
    assert!(refused.message.contains("Agent a"), "{}", refused.message);
    snapshot(&device).await.unwrap();
    device.session_ended("a");
    acted(&device, tap(6, false), "b").await.unwrap();
    let released = device
        .execute(
            DeviceOp::Release(ReleaseDevice {}),
            holder("b"),
            "b",
            SECONDS,
        )
        .await
        .unwrap();
    assert_eq!(
        released,
        DeviceResult::Released(DeviceReleased { released: true })
    );
}

#[tokio::test]
async fn apps_open_by_launcher_intent_and_destructive_options_need_the_flag() {
    let phone = Phone::with(|f| {
        f.replies.push((
            "monkey -p com.missing".into(),
            "  bash arg: -p\n** No activities found to run, monkey aborted.\n".into(),
        ));
        f.replies.push((
            "monkey -p com.example.shop".into(),
            "Events injected: 1\n## Network stats: elapsed time=12ms\n".into(),
        ));
        f.replies
            .push(("pm path com.example.shop".into(), "tabwire-done\n".into()));
        f.replies
            .push(("pm path com.gone".into(), "tabwire-missing\n".into()));
    });
    let device = device(&phone, DeviceOptions::default());
    let open = |package: &str, clear_data: bool| {
        DeviceOp::OpenApp(OpenApp {
            package: package.into(),
            clear_data,
            observe: Some(view()),
        })
    };
    let error = acted(&device, open("com.missing", false), "a")
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::AppNotFound);
    assert_eq!(
        acted(&device, open("com.x; reboot", false), "a")
            .await
            .unwrap_err()
            .code,
        ErrorCode::InvalidArgument
    );
    let calls = phone.calls();
    let error = acted(&device, open(SHOP, true), "a").await.unwrap_err();
    assert_eq!(error.code, ErrorCode::DestructiveNotAllowed);
    assert_eq!(phone.calls(), calls, "refused before any adb call");

    let opened = acted(&device, open(SHOP, false), "a").await.unwrap();
    assert_eq!(opened.package, SHOP);
    assert_eq!(opened.observation.unwrap().nodes.len(), 11);
    assert!(
        phone.fake().calls[calls]
            .last()
            .unwrap()
            .starts_with("monkey -p com.example.shop -c android.intent.category.LAUNCHER 1")
    );

    let close = |package: &str, clear_data: bool| {
        DeviceOp::CloseApp(CloseApp {
            package: package.into(),
            clear_data,
        })
    };
    let closed = device
        .execute(close(SHOP, false), holder("a"), "a", SECONDS)
        .await
        .unwrap();
    assert_eq!(
        closed,
        DeviceResult::Closed(AppClosed {
            package: SHOP.into(),
            data_cleared: false
        })
    );
    assert!(phone.last_line().contains("am force-stop com.example.shop"));
    let error = device
        .execute(close("com.gone", false), holder("a"), "a", SECONDS)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::AppNotFound);

    // With --allow-destructive, data is cleared before the launch.
    let device = self::device(
        &phone,
        DeviceOptions {
            allow_destructive: true,
            ..DeviceOptions::default()
        },
    );
    phone.fake().replies.insert(
        0,
        (
            "pm clear com.example.shop".into(),
            "Success\nEvents injected: 1\n".into(),
        ),
    );
    acted(&device, open(SHOP, true), "a").await.unwrap();
    assert!(
        phone
            .fake()
            .calls
            .iter()
            .any(|c| c[3].starts_with("pm clear com.example.shop 2>&1 && monkey"))
    );
}

#[tokio::test]
async fn screenshots_are_scaled_and_a_denied_app_is_never_captured_out() {
    let phone = Phone::with(|f| f.screencap = tabwire_device_kit::screenshot::png_of(1080, 2400));
    let device = device(&phone, DeviceOptions::default());
    let shot = match device
        .execute(
            DeviceOp::Screenshot(DeviceScreenshotRequest { max_width: 540 }),
            None,
            "",
            SECONDS,
        )
        .await
        .unwrap()
    {
        DeviceResult::Screenshot(shot) => shot,
        other => panic!("{other:?}"),
    };
    assert_eq!((shot.width, shot.height), (540, 1200));
    assert_eq!(phone.calls(), 1);
    device.set_operator_policy(policy(
        r#"{"apps":[{"package":"com.example.shop","access":"deny"}]}"#,
    ));
    let error = device
        .execute(
            DeviceOp::Screenshot(DeviceScreenshotRequest { max_width: 540 }),
            None,
            "",
            SECONDS,
        )
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::AppBlocked);
}

#[tokio::test]
async fn logs_read_on_from_the_previous_call_and_filter_by_package() {
    let first = "01-02 03:04:05.100  1234  1250 I ActivityManager: Start proc\n01-02 03:04:05.200  4321  4321 E MyApp   : boom\n";
    let phone = Phone::with(|f| {
        f.replies.push((
            "pidof com.example.shop".into(),
            format!("4321\ntabwire-logcat\n{first}"),
        ));
        f.replies.push((
            "echo tabwire-logcat".into(),
            format!("tabwire-logcat\n{first}"),
        ));
    });
    let device = device(&phone, DeviceOptions::default());
    let request = |package: Option<&str>, since: LogsSince| {
        DeviceOp::Logs(DeviceLogsRequest {
            since,
            package: package.map(str::to_owned),
            tag: None,
            min_level: None,
            max_entries: 100,
            max_chars: 10_000,
        })
    };
    let logs = |result: DeviceResult| match result {
        DeviceResult::Logs(logs) => logs,
        other => panic!("{other:?}"),
    };
    let all = logs(
        device
            .execute(request(None, LogsSince::Previous), None, "", SECONDS)
            .await
            .unwrap(),
    );
    assert_eq!(all.entries.len(), 2);
    assert!(
        phone
            .last_line()
            .ends_with("logcat -d -v threadtime -t 2000")
    );
    let again = logs(
        device
            .execute(request(None, LogsSince::Previous), None, "", SECONDS)
            .await
            .unwrap(),
    );
    assert!(phone.last_line().ends_with("-t '01-02 03:04:05.200'"));
    assert!(again.entries.is_empty(), "nothing new since");
    // Another reader (a package filter) has its own cursor: the whole log's reads did not
    // move it past the app's entries.
    let shop = logs(
        device
            .execute(request(Some(SHOP), LogsSince::Previous), None, "", SECONDS)
            .await
            .unwrap(),
    );
    assert!(
        phone
            .last_line()
            .ends_with("logcat -d -v threadtime -t 2000"),
        "{}",
        phone.last_line()
    );
    assert_eq!(shop.entries.len(), 1, "the app's entry is not skipped");
    device
        .execute(request(Some(SHOP), LogsSince::Previous), None, "", SECONDS)
        .await
        .unwrap();
    assert!(phone.last_line().ends_with("-t '01-02 03:04:05.200'"));
    let app = logs(
        device
            .execute(
                request(Some(SHOP), LogsSince::Time("01-02 03:04:00.000".into())),
                None,
                "",
                SECONDS,
            )
            .await
            .unwrap(),
    );
    assert_eq!(app.entries.len(), 1);
    assert_eq!(app.entries[0].tag, "MyApp");
    let error = device
        .execute(
            request(None, LogsSince::Time("yesterday; reboot".into())),
            None,
            "",
            SECONDS,
        )
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidArgument);
    // A policy that restricts some app: the whole log is no longer readable.
    device.set_operator_policy(policy(
        r#"{"apps":[{"package":"com.bank.*","access":"deny"}]}"#,
    ));
    let error = device
        .execute(request(None, LogsSince::Previous), None, "", SECONDS)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::AppBlocked);
}

#[tokio::test]
async fn operations_queue_and_one_whose_deadline_passes_waiting_never_starts() {
    let hold = Arc::new(tokio::sync::Semaphore::new(0));
    let phone = Phone::with(|f| f.hold = Some(hold.clone()));
    let device = Arc::new(device(&phone, DeviceOptions::default()));
    let first = {
        let device = device.clone();
        tokio::spawn(async move { snapshot(&device).await })
    };
    // Wait until the first holds the queue (its dump was called).
    while phone.calls() == 0 {
        tokio::task::yield_now().await;
    }
    let waited = device
        .execute(tap(6, false), holder("a"), "a", Duration::from_millis(20))
        .await
        .unwrap_err();
    assert_eq!(waited.code, ErrorCode::QueueTimeout);
    hold.add_permits(1);
    first.await.unwrap().unwrap();
    assert_eq!(phone.calls(), 1, "the timed-out call never ran");
}

#[tokio::test]
async fn a_device_that_went_away_is_disconnected() {
    let phone = Phone::with(|f| f.gone = true);
    let device = device(&phone, DeviceOptions::default());
    let error = snapshot(&device).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::DeviceDisconnected);
    assert!(error.message.contains("not found"), "{}", error.message);
}

#[path = "device_cancel_tests.rs"]
mod cancel;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/../../tests/fixtures/android/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn answer(accept: bool, button: Option<&str>) -> DeviceOp {
    DeviceOp::DismissAlert(DismissAlert {
        accept,
        button: button.map(str::to_owned),
        observe: None,
    })
}

#[tokio::test]
async fn an_alert_dialog_is_answered_by_its_own_buttons_and_its_text_comes_back() {
    let phone = Phone::with(|f| {
        f.focus = "com.acme.shop".into();
        f.last_dump = fixture("remove_dialog.xml");
    });
    let device = device(&phone, DeviceOptions::default());
    let accepted = acted(&device, answer(true, None), "a").await.unwrap();
    assert_eq!(
        accepted.alert.as_deref(),
        Some("Remove from cart?\nTrail Runner 2 will be removed from your cart.")
    );
    assert_eq!(accepted.at, Some(Point { x: 854, y: 1371 }), "REMOVE");
    acted(&device, answer(false, None), "a").await.unwrap();
    acted(&device, answer(true, Some("CANCEL")), "a")
        .await
        .unwrap();
    assert_eq!(
        phone.inputs(),
        [
            "input tap 854 1371",
            "input tap 617 1371",
            "input tap 617 1371"
        ]
    );
    let missing = acted(&device, answer(true, Some("LATER")), "a")
        .await
        .unwrap_err();
    assert_eq!(missing.code, ErrorCode::OptionNotFound);
    assert!(
        missing.message.contains("CANCEL, REMOVE"),
        "{}",
        missing.message
    );
    // An app's own views named like a dialog's are not one: nothing is tapped.
    phone.fake().last_dump = fixture("remove_dialog.xml")
        .replace("android:id/button", "com.acme.shop:id/button")
        .replace("android:id/message", "com.acme.shop:id/message");
    let lookalike = acted(&device, answer(false, None), "a").await.unwrap_err();
    assert_eq!(lookalike.code, ErrorCode::NoDialog);
    // No dialog: nothing is tapped.
    phone.fake().last_dump = fixture("products.xml");
    let none = acted(&device, answer(true, None), "a").await.unwrap_err();
    assert_eq!(none.code, ErrorCode::NoDialog);
    assert_eq!(phone.inputs().len(), 3);
}

#[tokio::test]
async fn scrolling_to_a_row_swipes_until_it_shows() {
    let phone = Phone::with(|f| {
        f.focus = "com.acme.shop".into();
        f.last_dump = fixture("products.xml");
    });
    phone.fake().replies.clear();
    let device = device(&phone, DeviceOptions::default());
    snapshot(&device).await.unwrap();
    // The first look finds no headlamp; the swipe brings the scrolled list.
    phone.fake().dumps.push_back(fixture("products.xml"));
    phone.fake().last_dump = fixture("products_scrolled.xml");
    let scroll = DeviceOp::ScrollToElement(ScrollToElement {
        query: Some("headlamp".into()),
        target: None,
        direction: SwipeDirection::Up,
        within: None,
        max_swipes: 5,
        observe: None,
    });
    let scrolled = acted(&device, scroll, "a").await.unwrap();
    let found = scrolled.found.expect("the headlamp row");
    assert!(found.text.contains("Headlamp 300"), "{found:?}");
    assert_eq!(scrolled.swipes, Some(1));
    let inputs = phone.inputs();
    assert_eq!(inputs.len(), 1);
    assert!(inputs[0].starts_with("input swipe "), "{inputs:?}");
    // The list ends (the screen stops changing): the scroll stops before its maxSwipes.
    let scroll = DeviceOp::ScrollToElement(ScrollToElement {
        query: Some("kayak".into()),
        target: None,
        direction: SwipeDirection::Up,
        within: None,
        max_swipes: 20,
        observe: None,
    });
    let ended = acted(&device, scroll, "a").await.unwrap();
    assert_eq!(ended.found, None);
    assert_eq!(ended.swipes, Some(1));
}

fn recording(start: bool, seconds: u32) -> DeviceOp {
    DeviceOp::ScreenRecording(ScreenRecording {
        start,
        max_seconds: seconds,
    })
}

#[tokio::test]
async fn a_recording_runs_in_the_background_and_comes_back_whole_to_its_session() {
    let video = b"\x00\x00\x00\x18ftypmp42 a small video".to_vec();
    let phone = Phone::with(|f| {
        f.replies = vec![
            (
                "screenrecord --time-limit 20".into(),
                "tabwire-recording\n".into(),
            ),
            (
                "pkill -INT -x screenrecord".into(),
                format!("{}\n", video.len()),
            ),
        ];
        f.video = video.clone();
    });
    let device = device(&phone, DeviceOptions::default());
    let started = device
        .execute(recording(true, 20), holder("a"), "a", SECONDS)
        .await
        .unwrap();
    assert!(matches!(
        started,
        DeviceResult::Recording(Recording {
            max_seconds: Some(20),
            video: None
        })
    ));
    let again = device
        .execute(recording(true, 20), holder("a"), "a", SECONDS)
        .await
        .unwrap_err();
    assert_eq!(again.code, ErrorCode::DeviceBusy, "one at a time");
    // Another session may not stop it (it holds no lease either).
    let theirs = device
        .execute(recording(false, 0), holder("b"), "b", SECONDS)
        .await
        .unwrap_err();
    assert!(matches!(theirs.code, ErrorCode::DeviceLeased), "{theirs:?}");
    let stopped = device
        .execute(recording(false, 0), holder("a"), "a", SECONDS)
        .await
        .unwrap();
    let DeviceResult::Recording(Recording {
        video: Some(got), ..
    }) = stopped
    else {
        panic!("{stopped:?}");
    };
    assert_eq!(got.size, video.len() as u64);
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(&got.data)
            .unwrap(),
        video
    );
    assert_eq!(got.mime_type, "video/mp4");
    let none = device
        .execute(recording(false, 0), holder("a"), "a", SECONDS)
        .await
        .unwrap_err();
    assert_eq!(none.code, ErrorCode::InvalidArgument);
}

#[tokio::test]
async fn a_recording_is_refused_while_app_rules_restrict_any_app() {
    let phone = Phone::with(|_| {});
    let device = device(
        &phone,
        DeviceOptions {
            owner_policy: Some(policy(
                r#"{"default":"act","apps":[{"package":"com.bank.*","access":"deny"}]}"#,
            )),
            ..DeviceOptions::default()
        },
    );
    let refused = device
        .execute(recording(true, 10), holder("a"), "a", SECONDS)
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::AppBlocked);
    assert_eq!(phone.calls(), 0, "nothing reached the phone");
}

fn install(replace: bool) -> DeviceOp {
    DeviceOp::InstallApp(InstallApp {
        name: "shop.apk".into(),
        data_base64: base64::engine::general_purpose::STANDARD.encode(b"PK\x03\x04 an apk"),
        replace,
    })
}

#[tokio::test]
async fn an_app_is_installed_from_a_private_file_and_replacing_needs_allow_destructive() {
    let phone = Phone::with(|f| f.install_reply = "Performing Streamed Install\nSuccess\n".into());
    // Without --allow-install, nothing reaches adb.
    let refused = device(&phone, DeviceOptions::default())
        .execute(install(false), holder("a"), "a", SECONDS)
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::Forbidden);
    assert_eq!(phone.calls(), 0);
    let device = device(
        &phone,
        DeviceOptions {
            allow_install: true,
            ..DeviceOptions::default()
        },
    );
    let installed = device
        .execute(install(false), holder("a"), "a", SECONDS)
        .await
        .unwrap();
    assert!(matches!(
        installed,
        DeviceResult::Installed(AppInstalled {
            replaced: false,
            ..
        })
    ));
    let (args, bytes) = phone.fake().installed[0].clone();
    assert_eq!(args[0], "install");
    assert_eq!(
        args[1], "-R",
        "replacing is forbidden, as current Android would replace"
    );
    assert_eq!(bytes, b"PK\x03\x04 an apk");
    assert!(
        !std::path::Path::new(&args[1]).exists(),
        "the file is removed after the install"
    );
    let refused = device
        .execute(install(true), holder("a"), "a", SECONDS)
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::DestructiveNotAllowed);
    phone.fake().install_reply =
        "adb: failed to install shop.apk: Failure [INSTALL_FAILED_ALREADY_EXISTS: Attempt to re-install com.acme.shop without first uninstalling.]\n".into();
    let exists = device
        .execute(install(false), holder("a"), "a", SECONDS)
        .await
        .unwrap_err();
    assert!(
        exists.message.contains("replace: true"),
        "{}",
        exists.message
    );
    let destructive = self::device(
        &phone,
        DeviceOptions {
            allow_destructive: true,
            allow_install: true,
            ..DeviceOptions::default()
        },
    );
    phone.fake().install_reply = "Success\n".into();
    destructive
        .execute(install(true), holder("a"), "a", SECONDS)
        .await
        .unwrap();
    assert_eq!(phone.fake().installed.last().unwrap().0[1], "-r");
    let wrong = device
        .execute(
            DeviceOp::InstallApp(InstallApp {
                name: "shop.ipa".into(),
                data_base64: String::new(),
                replace: false,
            }),
            holder("a"),
            "a",
            SECONDS,
        )
        .await
        .unwrap_err();
    assert_eq!(wrong.code, ErrorCode::InvalidArgument);
}

/// Review findings (issue 27): a recording ends with its session, and one whose lease was
/// released or lapsed in between, or stopped while app rules now restrict apps, returns no
/// video.
#[tokio::test]
async fn a_recording_does_not_outlive_its_lease_its_session_or_the_rules() {
    let video = b"\x00\x00\x00\x18ftypmp42".to_vec();
    let phone = Phone::with(|f| {
        f.replies = vec![
            (
                "screenrecord --time-limit".into(),
                "tabwire-recording\n".into(),
            ),
            (
                "pkill -INT -x screenrecord".into(),
                format!("{}\n", video.len()),
            ),
        ];
        f.video = video.clone();
    });
    let device = device(&phone, DeviceOptions::default());
    let start = |session: &'static str| {
        device.execute(recording(true, 30), holder(session), session, SECONDS)
    };
    let stop = |session: &'static str| {
        device.execute(recording(false, 0), holder(session), session, SECONDS)
    };
    // Released in between: the video is deleted, never returned.
    start("a").await.unwrap();
    assert!(matches!(
        device
            .execute(
                DeviceOp::Release(ReleaseDevice {}),
                holder("a"),
                "a",
                SECONDS
            )
            .await
            .unwrap(),
        DeviceResult::Released(DeviceReleased { released: true })
    ));
    let dropped = stop("a").await.unwrap_err();
    assert_eq!(dropped.code, ErrorCode::DeviceLeased, "{}", dropped.message);
    assert!(
        phone
            .fake()
            .calls
            .iter()
            .any(|c| c[3].starts_with("rm -f /data/local/tmp/tabwire-recording"))
    );
    // Its session ended: another session may record.
    start("a").await.unwrap();
    device.session_ended("a");
    start("b").await.unwrap();
    // The rules changed to restrict an app: stopping returns nothing.
    device.set_operator_policy(policy(
        r#"{"default":"act","apps":[{"package":"com.bank.*","access":"deny"}]}"#,
    ));
    let blocked = stop("b").await.unwrap_err();
    assert_eq!(blocked.code, ErrorCode::AppBlocked);
    device.set_operator_policy(Policy::default());
    let none = stop("b").await.unwrap_err();
    assert_eq!(
        none.code,
        ErrorCode::InvalidArgument,
        "the recording is gone"
    );
}

/// A runtime permission dialog, as the permission controller draws it over the app.
fn permission_dialog() -> String {
    let pc = "com.android.permissioncontroller";
    let view = |id: &str, text: &str, bounds: &str, clickable: &str| {
        node(
            &[
                ("package", pc),
                ("resource-id", &format!("{pc}:id/{id}")),
                ("class", "android.widget.Button"),
                ("text", text),
                ("bounds", bounds),
                ("clickable", clickable),
            ],
            "",
        )
    };
    let body = node(
        &[
            ("package", pc),
            ("class", "android.widget.FrameLayout"),
            ("bounds", "[0,0][1080,2400]"),
        ],
        &[
            view(
                "permission_message",
                "Allow Acme Shop to access your location?",
                "[100,900][980,1000]",
                "false",
            ),
            view(
                "permission_allow_foreground_only_button",
                "While using the app",
                "[100,1100][980,1200]",
                "true",
            ),
            view(
                "permission_deny_button",
                "Don't allow",
                "[100,1300][980,1400]",
                "true",
            ),
        ]
        .concat(),
    );
    dump(0, &body)
}

/// Review finding (issue 27): a permission dialog is the permission controller's, but what it
/// grants is the app's beneath it, which must allow acting too.
#[tokio::test]
async fn a_permission_dialog_needs_the_app_beneath_to_allow_acting() {
    let phone = Phone::with(|f| {
        f.focus = "com.acme.shop".into();
        f.last_dump = fixture("products.xml");
    });
    let device = device(
        &phone,
        DeviceOptions {
            owner_policy: Some(policy(
                r#"{"default":"act","apps":[{"package":"com.acme.shop","access":"read"}]}"#,
            )),
            ..DeviceOptions::default()
        },
    );
    snapshot(&device).await.unwrap();
    {
        let mut fake = phone.fake();
        fake.last_dump = permission_dialog();
        fake.focus = "com.android.permissioncontroller".into();
    }
    let refused = acted(&device, answer(true, None), "a").await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::AppBlocked, "{}", refused.message);
    assert!(phone.inputs().is_empty(), "nothing was tapped");
    // Without the rule, the dialog is answered by its allowing button.
    device.set_operator_policy(Policy::default());
    let plain = self::device(&phone, DeviceOptions::default());
    let allowed = acted(&plain, answer(true, None), "a").await.unwrap();
    assert_eq!(
        allowed.alert.as_deref(),
        Some("Allow Acme Shop to access your location?")
    );
    assert_eq!(phone.inputs(), ["input tap 540 1150"]);
}
