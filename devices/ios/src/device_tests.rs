//! The device's operations against the scripted WebDriverAgent serving real page sources: what
//! it asks WDA (routes, bodies, how many calls), what it shows, and what the policy stops
//! before any input goes out.

use std::time::Duration;

use serde_json::{Value, json};
use tabwire_device_kit::cancel::Cancel;
use tabwire_device_kit::link::Served;
use tabwire_protocol::devices::*;
use tabwire_protocol::policy::Policy;
use tabwire_protocol::refs::DeviceRef;
use tabwire_protocol::{ErrorCode, LeaseHolder, Observation, OpError, Point};

use crate::device::{IosDevice, IosFacts, IosOptions};
use crate::scripted::{Recorded, ScriptedWda, demo_script};
use crate::wda::{Wda, WdaUrl};

const SECONDS: Duration = Duration::from_secs(10);

fn holder() -> Option<LeaseHolder> {
    Some(LeaseHolder {
        session: "s1".into(),
        client: "Agent s1".into(),
        idle_ms: 600_000,
    })
}

fn view() -> DeviceView {
    DeviceView {
        query: None,
        max_nodes: 40,
        max_chars: 3000,
        offset: 0,
        since: None,
    }
}

async fn device_with(policy: Option<&str>) -> (ScriptedWda, IosDevice) {
    let wda = ScriptedWda::start(demo_script()).await.unwrap();
    let client = Wda::new(WdaUrl::parse(wda.url(), false).unwrap());
    let facts = IosFacts::probe(&client).await.unwrap();
    let options = IosOptions {
        owner_policy: policy.map(|json| serde_json::from_str::<Policy>(json).unwrap()),
    };
    (wda, IosDevice::new(client, facts, options))
}

async fn run(device: &IosDevice, op: DeviceOp) -> Result<DeviceResult, OpError> {
    let holder = if op.is_mutation() { holder() } else { None };
    device
        .execute_unless(op, holder, "s1", SECONDS, &Cancel::never())
        .await
}

async fn snapshot(device: &IosDevice) -> Observation<Foreground> {
    match run(device, DeviceOp::Snapshot(DeviceSnapshot { view: view() }))
        .await
        .unwrap()
    {
        DeviceResult::Snapshot(observation) => observation,
        other => panic!("{other:?}"),
    }
}

fn acted(result: Result<DeviceResult, OpError>) -> DeviceActed {
    match result.unwrap() {
        DeviceResult::Acted(acted) => acted,
        other => panic!("{other:?}"),
    }
}

/// Whether an observation (whole, or the changes of a delta) has a line with `text`.
fn shows(observation: &Observation<Foreground>, text: &str) -> bool {
    let changed = observation.delta.iter().flat_map(|d| &d.changed);
    observation
        .nodes
        .iter()
        .chain(changed)
        .any(|n| n.text.contains(text))
}

fn ref_of(observation: &Observation<Foreground>, text: &str) -> DeviceRef {
    observation
        .nodes
        .iter()
        .find(|n| n.text.contains(text))
        .unwrap_or_else(|| panic!("no {text:?} in {:#?}", observation.nodes))
        .node_ref
        .expect("device lines have refs")
}

/// The requests after the session was made, as `METHOD path`.
fn calls(recorded: &[Recorded]) -> Vec<String> {
    recorded
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

fn body_of<'a>(recorded: &'a [Recorded], path: &str) -> &'a Value {
    &recorded
        .iter()
        .find(|r| r.path == path)
        .unwrap_or_else(|| panic!("no {path} in {:#?}", calls(recorded)))
        .body
}

#[tokio::test]
async fn a_device_is_announced_from_what_its_wda_reports() {
    let (_wda, device) = device_with(None).await;
    let hello = device.facts().hello();
    assert_eq!(hello.platform, Platform::Ios);
    assert_eq!(hello.device_id, "ios-8c2e5b7a-1d34-4f6b-9a0e-3b5c7d9e1f20");
    assert_eq!(hello.device_name, "Test iPhone");
    assert_eq!(hello.model, "iPhone (simulator)");
    assert_eq!(hello.os_version, "iOS 17.5");
    assert_eq!(
        hello.screen,
        ScreenSize {
            width: 414,
            height: 896
        }
    );
    check_device_hello(&hello).unwrap();
}

#[tokio::test]
async fn a_tap_with_its_observation_is_two_wda_calls_and_lands_at_the_rows_centre() {
    let (wda, device) = device_with(None).await;
    let settings = snapshot(&device).await;
    assert_eq!(settings.of.package, "com.apple.Preferences");
    assert!(
        settings.nodes.iter().any(|n| n.text.contains("电池")),
        "{settings:#?}"
    );
    let general = ref_of(&settings, "\"通用\"");
    wda.clear_recorded();
    let acted = acted(
        run(
            &device,
            DeviceOp::Tap(DeviceTap {
                target: general,
                observe: Some(view()),
            }),
        )
        .await,
    );
    let recorded = wda.recorded();
    // The tap, and one look at the new screen. (This WDA's sources name no bundle ID, so
    // each look also asks which app is in front: one more call than a current WDA needs.)
    assert_eq!(
        calls(&recorded),
        [
            "POST /session/:id/wda/tap",
            "GET /session/:id/source",
            "GET /wda/activeAppInfo"
        ]
    );
    assert_eq!(
        body_of(&recorded, "/session/:id/wda/tap"),
        &json!({"x": 207, "y": 327})
    );
    assert_eq!(acted.at, Some(Point { x: 207, y: 327 }));
    let observation = acted.observation.unwrap();
    assert!(
        shows(&observation, "Accessibility"),
        "the English settings screen now: {observation:#?}"
    );
    assert_eq!(wda.screen(), "settings-en");
}

#[tokio::test]
async fn typing_sends_the_text_once_and_a_password_never_comes_back() {
    let (wda, device) = device_with(None).await;
    run(
        &device,
        DeviceOp::OpenApp(OpenApp {
            package: "io.cloudgrey.the-app".into(),
            clear_data: false,
            observe: None,
        }),
    )
    .await
    .unwrap();
    let login = snapshot(&device).await;
    let password = ref_of(&login, "password");
    assert!(
        login.nodes.iter().all(|n| !n.text.contains("•••••••••")),
        "{login:#?}"
    );
    wda.clear_recorded();
    let acted = acted(
        run(
            &device,
            DeviceOp::Type(DeviceType {
                target: Some(password),
                text: "s3cret pass".into(),
                submit: true,
                observe: None,
            }),
        )
        .await,
    );
    assert_eq!(acted.package, "io.cloudgrey.the-app");
    let recorded = wda.recorded();
    assert_eq!(
        body_of(&recorded, "/session/:id/wda/keys"),
        &json!({"value": ["s3cret pass\n"]})
    );
    assert!(
        calls(&recorded).contains(&"POST /session/:id/wda/tap".to_owned()),
        "the field is tapped first: {:?}",
        calls(&recorded)
    );
}

#[tokio::test]
async fn an_alert_is_read_and_answered_and_its_text_comes_back() {
    let (wda, device) = device_with(None).await;
    wda.show("login");
    let login = snapshot(&device).await;
    let button = ref_of(&login, "loginBtn");
    let after = acted(
        run(
            &device,
            DeviceOp::Tap(DeviceTap {
                target: button,
                observe: Some(view()),
            }),
        )
        .await,
    );
    let shown = after.observation.unwrap();
    assert!(
        shows(&shown, "dialog \"Invalid login"),
        "the alert shows in the observation: {shown:#?}"
    );
    wda.clear_recorded();
    let answered = acted(
        run(
            &device,
            DeviceOp::DismissAlert(DismissAlert {
                accept: true,
                button: None,
                observe: Some(view()),
            }),
        )
        .await,
    );
    assert_eq!(
        answered.alert.as_deref(),
        Some("Invalid login credentials, please try again")
    );
    assert_eq!(
        calls(&wda.recorded())[..3],
        [
            "GET /session/:id/alert/text",
            "GET /session/:id/wda/alert/buttons",
            "POST /session/:id/alert/accept"
        ]
    );
    assert_eq!(wda.screen(), "login");
    // With no alert, nothing is pressed and the error says so.
    let none = run(
        &device,
        DeviceOp::DismissAlert(DismissAlert {
            accept: false,
            button: None,
            observe: None,
        }),
    )
    .await
    .unwrap_err();
    assert_eq!(none.code, ErrorCode::NoDialog);
}

#[tokio::test]
async fn scrolling_to_a_row_swipes_until_it_shows_and_returns_its_ref() {
    let (wda, device) = device_with(None).await;
    snapshot(&device).await;
    wda.clear_recorded();
    let scrolled = acted(
        run(
            &device,
            DeviceOp::ScrollToElement(ScrollToElement {
                query: Some("开发者".into()),
                target: None,
                direction: SwipeDirection::Up,
                within: None,
                max_swipes: 10,
                observe: None,
            }),
        )
        .await,
    );
    let found = scrolled
        .found
        .expect("the developer row, far down the list");
    assert!(found.text.contains("开发者"), "{found:?}");
    let swipes = scrolled.swipes.unwrap();
    // The row sits 1,470 points below the screen's bottom; each swipe moves 60% of 896.
    assert!((2..=4).contains(&swipes), "{swipes} swipes");
    let touches: Vec<Recorded> = wda
        .recorded()
        .into_iter()
        .filter(|r| r.path == "/session/:id/actions")
        .collect();
    assert_eq!(touches.len() as u32, swipes);
    assert_eq!(
        touches[0].body["actions"][0]["parameters"]["pointerType"],
        "touch"
    );
    // Its ref acts: a tap lands inside its bounds.
    let row = acted(
        run(
            &device,
            DeviceOp::Tap(DeviceTap {
                target: found.node_ref.unwrap(),
                observe: None,
            }),
        )
        .await,
    );
    let at = row.at.unwrap();
    let bounds = found.bounds.unwrap();
    assert!(bounds.top <= at.y && at.y < bounds.bottom);
    // A row that is not there ends the scroll when the list stops moving.
    let missing = acted(
        run(
            &device,
            DeviceOp::ScrollToElement(ScrollToElement {
                query: Some("no such row".into()),
                target: None,
                direction: SwipeDirection::Up,
                within: None,
                max_swipes: 30,
                observe: None,
            }),
        )
        .await,
    );
    assert!(missing.found.is_none());
    assert!(missing.swipes.unwrap() < 30, "stopped at the list's end");
}

#[tokio::test]
async fn the_owners_app_rules_stop_reads_and_input_before_wda_sees_them() {
    let (wda, device) = device_with(Some(
        r#"{"default":"act","apps":[{"package":"com.apple.Preferences","access":"deny"},
            {"package":"io.cloudgrey.the-app","access":"read"}]}"#,
    ))
    .await;
    let denied = run(&device, DeviceOp::Snapshot(DeviceSnapshot { view: view() }))
        .await
        .unwrap_err();
    assert_eq!(denied.code, ErrorCode::AppBlocked);
    wda.show("login");
    let login = snapshot(&device).await;
    wda.clear_recorded();
    let refused = run(
        &device,
        DeviceOp::Tap(DeviceTap {
            target: ref_of(&login, "loginBtn"),
            observe: None,
        }),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.code, ErrorCode::AppBlocked);
    assert!(!refused.action_may_have_occurred);
    // While app rules restrict anything, the app in front is read right before input too:
    // the person switched to Settings, and a tap by coordinates is refused there.
    wda.show("settings");
    let refused = run(
        &device,
        DeviceOp::TapCoordinates(TapCoordinates {
            point: Point { x: 100, y: 100 },
            observe: None,
        }),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.code, ErrorCode::AppBlocked);
    assert!(
        wda.recorded()
            .iter()
            .all(|r| !r.path.ends_with("/wda/tap") && !r.path.ends_with("/actions")),
        "no input reached WDA: {:?}",
        calls(&wda.recorded())
    );
    let screenshot = run(
        &device,
        DeviceOp::Screenshot(DeviceScreenshotRequest { max_width: 200 }),
    )
    .await
    .unwrap_err();
    assert_eq!(screenshot.code, ErrorCode::AppBlocked);
    assert!(
        wda.recorded().iter().all(|r| r.path != "/screenshot"),
        "a denied app's screen is never fetched"
    );
}

#[tokio::test]
async fn a_lost_wda_session_is_made_again_once() {
    let (wda, device) = device_with(None).await;
    snapshot(&device).await;
    assert_eq!(wda.sessions_made(), 1);
    wda.end_session();
    snapshot(&device).await;
    assert_eq!(wda.sessions_made(), 2);
}

#[tokio::test]
async fn apps_buttons_screenshots_and_logs_answer_as_ios_can() {
    let (wda, device) = device_with(None).await;
    let missing = run(
        &device,
        DeviceOp::OpenApp(OpenApp {
            package: "com.example.absent".into(),
            clear_data: false,
            observe: None,
        }),
    )
    .await
    .unwrap_err();
    assert_eq!(missing.code, ErrorCode::AppNotFound);
    let clear = run(
        &device,
        DeviceOp::OpenApp(OpenApp {
            package: "com.apple.mobilecal".into(),
            clear_data: true,
            observe: None,
        }),
    )
    .await
    .unwrap_err();
    assert_eq!(clear.code, ErrorCode::InvalidArgument);
    let opened = acted(
        run(
            &device,
            DeviceOp::OpenApp(OpenApp {
                package: "com.apple.mobilecal".into(),
                clear_data: false,
                observe: Some(view()),
            }),
        )
        .await,
    );
    assert!(shows(&opened.observation.unwrap(), "カレンダー"));
    let back = run(
        &device,
        DeviceOp::PressButton(PressButton {
            button: Button::Back,
            observe: None,
        }),
    )
    .await
    .unwrap_err();
    assert_eq!(back.code, ErrorCode::InvalidArgument);
    wda.clear_recorded();
    acted(
        run(
            &device,
            DeviceOp::PressButton(PressButton {
                button: Button::Home,
                observe: None,
            }),
        )
        .await,
    );
    assert_eq!(
        body_of(&wda.recorded(), "/session/:id/wda/pressButton"),
        &json!({"name": "home"})
    );
    let shot = match run(
        &device,
        DeviceOp::Screenshot(DeviceScreenshotRequest { max_width: 207 }),
    )
    .await
    .unwrap()
    {
        DeviceResult::Screenshot(shot) => shot,
        other => panic!("{other:?}"),
    };
    // The screen as the latest look showed it: the calendar's source is of a 390-point-wide
    // phone.
    assert_eq!((shot.width, shot.screen_width), (207, 390));
    let logs = run(
        &device,
        DeviceOp::Logs(DeviceLogsRequest {
            since: LogsSince::Previous,
            package: None,
            tag: None,
            min_level: None,
            max_entries: 10,
            max_chars: 1000,
        }),
    )
    .await
    .unwrap_err();
    assert!(logs.message.contains("no device log"), "{}", logs.message);
}

#[tokio::test]
async fn a_wda_that_went_away_is_a_disconnected_device() {
    let (wda, device) = device_with(None).await;
    drop(wda);
    let gone = run(&device, DeviceOp::Snapshot(DeviceSnapshot { view: view() }))
        .await
        .unwrap_err();
    assert_eq!(gone.code, ErrorCode::DeviceDisconnected, "{}", gone.message);
}

fn answer(accept: bool, button: Option<&str>) -> DeviceOp {
    DeviceOp::DismissAlert(DismissAlert {
        accept,
        button: button.map(str::to_owned),
        observe: None,
    })
}

/// Review finding (issue 27): WDA picks an alert's buttons by position, and a three-button
/// permission prompt puts "Allow Once" first, where "dismiss" would press it.
#[tokio::test]
async fn a_three_button_prompt_is_answered_only_by_the_button_named() {
    let (wda, device) = device_with(None).await;
    wda.show("location-prompt");
    let unnamed = run(&device, answer(false, None)).await.unwrap_err();
    assert_eq!(unnamed.code, ErrorCode::InvalidArgument);
    assert!(
        unnamed
            .message
            .contains("Allow Once, Allow While Using App, Don’t Allow")
    );
    let unknown = run(&device, answer(false, Some("Allow Always")))
        .await
        .unwrap_err();
    assert_eq!(unknown.code, ErrorCode::OptionNotFound);
    assert!(
        wda.recorded()
            .iter()
            .all(|r| r.method != "POST" || !r.path.contains("/alert/")),
        "nothing was pressed"
    );
    let denied = acted(run(&device, answer(false, Some("Don’t Allow"))).await);
    assert_eq!(
        denied.alert.as_deref(),
        Some("Allow “TheApp” to use your location?")
    );
    assert_eq!(
        body_of(&wda.recorded(), "/session/:id/alert/dismiss"),
        &json!({"name": "Don’t Allow"})
    );
}

/// Review finding (issue 27): a system prompt is SpringBoard's, but its answer is about the app
/// beneath, which must allow acting too; and nothing of a denied app's alert is read.
#[tokio::test]
async fn a_system_prompt_needs_the_app_beneath_to_allow_acting() {
    let (wda, device) = device_with(Some(
        r#"{"default":"act","apps":[{"package":"io.cloudgrey.the-app","access":"read"}]}"#,
    ))
    .await;
    wda.show("login");
    snapshot(&device).await;
    wda.show("location-prompt");
    wda.clear_recorded();
    let refused = run(&device, answer(true, Some("Allow Once")))
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::AppBlocked, "{}", refused.message);
    assert!(
        wda.recorded().iter().all(|r| !r.path.contains("/alert")),
        "the alert was neither read nor answered: {:?}",
        calls(&wda.recorded())
    );
}

/// Review finding (issue 27): WDA's "active app" is the one in the middle of the screen; while
/// app rules restrict anything, every app WDA is showing is judged (an iPad's Split View).
#[tokio::test]
async fn an_app_shown_beside_is_judged_too() {
    let (wda, device) = device_with(Some(
        r#"{"default":"act","apps":[{"package":"com.example.bank","access":"deny"}]}"#,
    ))
    .await;
    wda.show("login");
    let login = snapshot(&device).await;
    wda.show("split");
    let look = run(&device, DeviceOp::Snapshot(DeviceSnapshot { view: view() }))
        .await
        .unwrap_err();
    assert_eq!(look.code, ErrorCode::AppBlocked, "{}", look.message);
    // The refused look left no refs: a tap where the login button was is judged by every app
    // shown.
    let button = login
        .nodes
        .iter()
        .find(|n| n.text.contains("loginBtn"))
        .unwrap()
        .bounds
        .unwrap()
        .centre();
    let tap = run(
        &device,
        DeviceOp::TapCoordinates(TapCoordinates {
            point: button,
            observe: None,
        }),
    )
    .await
    .unwrap_err();
    assert_eq!(tap.code, ErrorCode::AppBlocked);
    let shot = run(
        &device,
        DeviceOp::Screenshot(DeviceScreenshotRequest { max_width: 200 }),
    )
    .await
    .unwrap_err();
    assert_eq!(shot.code, ErrorCode::AppBlocked);
    assert!(
        wda.recorded()
            .iter()
            .all(|r| !r.path.ends_with("/wda/tap") && r.path != "/screenshot"),
        "{:?}",
        calls(&wda.recorded())
    );
}

/// Review finding (issue 27): the screen's size follows the latest look (a rotated device), not
/// the size read at the probe.
#[tokio::test]
async fn a_rotated_screen_takes_its_own_coordinates() {
    let (wda, device) = device_with(None).await;
    wda.show("landscape");
    snapshot(&device).await;
    let tap = |x, y| {
        DeviceOp::TapCoordinates(TapCoordinates {
            point: Point { x, y },
            observe: None,
        })
    };
    acted(run(&device, tap(800, 300)).await);
    let off = run(&device, tap(300, 500)).await.unwrap_err();
    assert_eq!(off.code, ErrorCode::InvalidArgument, "{}", off.message);
}
