//! Android devices end to end: the real hub, the real `tabwire-android`, the scripted fake adb
//! (`src/fake_adb/`) serving the screens of `fixtures/android/`, and a real MCP client through
//! the shim. No emulator runs here (README, "Devices"): what these prove is everything between
//! the agent and adb's command line, with adb's and the device's answers as real ones look.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};
use tabwire_e2e::device::{Android, GALAXY_ID, PIXEL_ID, Phone, Phones, SHOP_RULES, listed_device};
use tabwire_e2e::fake_adb::scenario::{CallKind, DumpFailure};
use tabwire_e2e::{Hub, McpClient, eventually};

/// The ref on the line of a snapshot's text that contains `needle`.
fn ref_on(text: &str, needle: &str) -> String {
    text.lines()
        .find(|line| line.contains(needle))
        .and_then(|line| line.split_whitespace().find(|w| w.starts_with("@d")))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"))
        .to_owned()
}

/// A hub, a Pixel showing `screen` with the shop's rules, the backend, and a session that sees
/// the device connected.
async fn one_phone(screen: &str) -> (Phones, Hub, Android, McpClient) {
    let phones = Phones::new();
    phones.attach(
        Phone::pixel("emulator-5554")
            .showing(screen)
            .rules(SHOP_RULES),
    );
    let hub = Hub::spawn();
    let android = Android::local(&hub, &phones, &[]);
    let client = McpClient::connect(&hub).await;
    listed_device(&client, PIXEL_ID, true).await;
    (phones, hub, android, client)
}

#[tokio::test]
async fn a_phone_pairs_by_itself_appears_with_its_tools_and_shows_its_screen() {
    let phones = Phones::new();
    let hub = Hub::spawn();
    let client = McpClient::connect(&hub).await;
    let before: Vec<String> = client
        .list_tools()
        .await
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(
        !before.iter().any(|name| name == "device_tap"),
        "{before:?}"
    );
    let _android = Android::local(&hub, &phones, &[]);

    // Hot-plug: the phone appears on adb, the backend pairs and connects it.
    phones.attach(Phone::pixel("emulator-5554").showing("login.xml"));
    let entry = listed_device(&client, PIXEL_ID, true).await;
    assert_eq!(entry["name"], "Pixel 7");
    eventually("tools/list_changed", Duration::from_secs(10), || async {
        (client.heard().tool_list_changed.load(Ordering::SeqCst) > 0).then_some(())
    })
    .await;
    let after: Vec<String> = client
        .list_tools()
        .await
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    for tool in [
        "device_snapshot",
        "device_tap",
        "device_type",
        "device_logs",
    ] {
        assert!(after.iter().any(|name| name == tool), "{tool} in {after:?}");
    }
    let pairings = hub.pair_command(&["--list"]);
    assert!(pairings.contains("device"), "{pairings}");

    let snapshot = client.call("device_snapshot", json!({})).await;
    let text = &snapshot.text;
    assert!(text.contains("textbox"), "{text}");
    assert!(text.contains("button \"LOGIN\""), "{text}");
    assert!(text.contains("checkbox \"Remember me\""), "{text}");
    assert_eq!(snapshot.data()["package"], "com.acme.shop");
    eprintln!("{text}");
}

#[tokio::test]
async fn a_phone_that_goes_offline_is_disconnected_with_its_reason_and_comes_back() {
    let (phones, _hub, _android, client) = one_phone("login.xml").await;
    client.call("device_snapshot", json!({})).await.data();
    phones.list("emulator-5554", "offline");
    let entry = listed_device(&client, PIXEL_ID, false).await;
    assert!(
        entry["reason"]
            .as_str()
            .is_some_and(|r| r.contains("offline")),
        "{entry}"
    );
    let gone = client.call("device_snapshot", json!({})).await;
    assert_eq!(gone.error_code(), "DEVICE_DISCONNECTED", "{}", gone.text);
    phones.list("emulator-5554", "unauthorized");
    phones.list("emulator-5554", "device");
    listed_device(&client, PIXEL_ID, true).await;
    client.call("device_snapshot", json!({})).await.data();
}

#[tokio::test]
async fn two_phones_need_a_choice_made_by_device_id_or_select_device() {
    let phones = Phones::new();
    phones.attach(Phone::pixel("emulator-5554").showing("login.xml"));
    phones.attach(Phone::galaxy("R5CW30ABCDE").showing("settings_network.xml"));
    let hub = Hub::spawn();
    let _android = Android::local(&hub, &phones, &[]);
    let client = McpClient::connect(&hub).await;
    listed_device(&client, PIXEL_ID, true).await;
    listed_device(&client, GALAXY_ID, true).await;

    let unchosen = client.call("device_snapshot", json!({})).await;
    assert_eq!(unchosen.error_code(), "DEVICE_NOT_SELECTED");
    let candidates = unchosen.error()["candidates"].to_string();
    assert!(
        candidates.contains(PIXEL_ID) && candidates.contains(GALAXY_ID),
        "{candidates}"
    );

    let galaxy = client
        .call("device_snapshot", json!({"deviceId": GALAXY_ID}))
        .await;
    assert_eq!(galaxy.data()["package"], "com.android.settings");
    assert!(galaxy.text.contains("\"Airplane mode\""), "{}", galaxy.text);
    client
        .call("select_device", json!({"deviceId": PIXEL_ID}))
        .await
        .data();
    let pixel = client.call("device_snapshot", json!({})).await;
    assert_eq!(pixel.data()["package"], "com.acme.shop");
    // Each phone got its own adb calls, always with -s.
    for call in phones.calls().iter().filter(|c| c.kind == CallKind::Adb) {
        let addressed = call.argv.first().map(String::as_str) == Some("-s");
        let listing = call.argv.iter().any(|a| a == "devices" || a == "version");
        assert!(addressed || listing, "{:?}", call.argv);
    }
}

#[tokio::test]
async fn the_login_flow_taps_types_settles_swipes_and_goes_back() {
    let (phones, _hub, _android, client) = one_phone("login.xml").await;
    let first = client.call("device_snapshot", json!({})).await;
    let username = ref_on(&first.text, "textbox \"Email or username\"");
    let password = ref_on(&first.text, "#password");

    let tapped = client.call("device_tap", json!({"ref": username})).await;
    assert_eq!(
        tapped.data()["observation"]["keyboardShown"],
        true,
        "{}",
        tapped.text
    );
    assert!(tapped.text.contains("keyboard shown"), "{}", tapped.text);
    let typed = client
        .call(
            "device_type",
            json!({"ref": password, "text": "correct horse"}),
        )
        .await;
    typed.data();
    assert!(!typed.text.contains("correct horse"), "{}", typed.text);
    assert_eq!(
        phones.state("emulator-5554").typed.last().unwrap(),
        "correct horse"
    );
    // login_typed.xml: LOGIN still there; tapping it shows the busy screen for one dump, and
    // the observation comes once the product list has settled.
    let typed_screen = client.call("device_snapshot", json!({})).await;
    let login = ref_on(&typed_screen.text, "button \"LOGIN\"");
    let before = phones.adb_calls("emulator-5554").len();
    let settled = client.call("device_tap", json!({"ref": login})).await;
    let observation = &settled.data()["observation"];
    assert_eq!(observation["settling"]["settled"], true, "{}", settled.text);
    assert!(observation["settling"]["dumps"].as_u64().unwrap() >= 2);
    let full = client.call("device_snapshot", json!({})).await;
    assert!(full.text.contains("Welcome back, Ada"), "{}", full.text);
    assert!(!full.text.contains("Signing in"), "{}", full.text);
    let settle_calls = phones.adb_calls("emulator-5554").len() - before;
    assert!(
        settle_calls >= 3,
        "a tap and at least two dumps: {settle_calls}"
    );

    let swiped = client
        .call("device_swipe", json!({"direction": "up"}))
        .await;
    swiped.data();
    assert_eq!(
        phones.state("emulator-5554").screen,
        "products_scrolled.xml"
    );
    let scrolled = client.call("device_snapshot", json!({})).await;
    assert!(scrolled.text.contains("Trek Poles"), "{}", scrolled.text);
    client
        .call("device_swipe", json!({"direction": "down"}))
        .await
        .data();
    let back = client.call("press_button", json!({"button": "back"})).await;
    back.data();
    assert_eq!(phones.state("emulator-5554").screen, "login.xml");
    assert!(
        phones
            .device_calls("emulator-5554", "input")
            .contains(&["input", "keyevent", "4"].map(str::to_owned).to_vec()),
        "{:?}",
        phones.device_calls("emulator-5554", "input")
    );
}

/// An action that changes the screen, with its observation, costs two adb invocations (the
/// guarded input, one dump); one that changes nothing costs one dump more, as the backend
/// looks again when the first dump still shows the screen from before (the app may not have
/// redrawn yet).
#[tokio::test]
async fn an_action_and_its_observation_cost_two_adb_invocations() {
    let (phones, _hub, _android, client) = one_phone("products.xml").await;
    client.call("device_snapshot", json!({})).await.data();
    // The first action reads the app in front once more (the guard's first look).
    client
        .call("device_swipe", json!({"direction": "up"}))
        .await
        .data();
    assert_eq!(
        phones.state("emulator-5554").screen,
        "products_scrolled.xml"
    );
    for direction in ["down", "up", "down", "up"] {
        let before = phones.adb_calls("emulator-5554").len();
        client
            .call("device_swipe", json!({"direction": direction}))
            .await
            .data();
        let spent = phones.adb_calls("emulator-5554").len() - before;
        assert!(
            spent <= 2,
            "a swipe and its observation took {spent} adb calls"
        );
    }
    // A key the app ignores (no rule answers Enter here).
    let before = phones.adb_calls("emulator-5554").len();
    let ignored = client
        .call("press_button", json!({"button": "enter"}))
        .await;
    assert_eq!(phones.adb_calls("emulator-5554").len() - before, 3);
    assert!(ignored.text.contains("settled"), "{}", ignored.text);
}

#[tokio::test]
async fn refs_stay_stable_across_snapshots_and_shared_identities_are_flagged() {
    let (_phones, _hub, _android, client) = one_phone("products.xml").await;
    let first = client.call("device_snapshot", json!({})).await;
    let second = client.call("device_snapshot", json!({})).await;
    let refs = |reply: &tabwire_e2e::Reply| -> Vec<(String, String)> {
        reply.data()["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                (
                    n["ref"].as_str().unwrap().to_owned(),
                    n["text"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    assert_eq!(refs(&first), refs(&second));
    let carts: Vec<&Value> = first.data()["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["text"].as_str().unwrap().contains("Add to cart"))
        .collect();
    assert!(carts.len() >= 5, "{}", first.text);
    assert!(
        carts.iter().all(|n| n["ambiguous"] == true),
        "{}",
        first.text
    );
    assert!(first.text.contains("(ambiguous"), "{}", first.text);
    let runner = ref_on(&first.text, "Trail Runner 2");

    client
        .call("device_swipe", json!({"direction": "up"}))
        .await
        .data();
    client
        .call("device_swipe", json!({"direction": "down"}))
        .await
        .data();
    let again = client.call("device_snapshot", json!({})).await;
    assert_eq!(ref_on(&again.text, "Trail Runner 2"), runner);
    // A delta since the first look: nothing changed.
    let version = again.data()["version"].as_u64().unwrap();
    let delta = client
        .call("device_snapshot", json!({"since": version}))
        .await;
    let changed = &delta.data()["delta"]["changed"];
    assert_eq!(changed.as_array().map(Vec::len), Some(0), "{}", delta.text);
}

#[tokio::test]
async fn every_dump_failure_is_retried_then_reported_busy_and_the_phone_recovers() {
    let (phones, _hub, _android, client) = one_phone("login.xml").await;
    for failure in [
        DumpFailure::IdleState,
        DumpFailure::NullRoot,
        DumpFailure::AlreadyRegistered,
    ] {
        // One failure: retried within the call, which succeeds.
        phones.fail_dumps("emulator-5554", &[failure]);
        client.call("device_snapshot", json!({})).await.data();
        assert!(phones.state("emulator-5554").pending_failures.is_empty());
        // Failing every time: a bounded number of tries, then DEVICE_BUSY with advice.
        phones.fail_dumps("emulator-5554", &[failure; 8]);
        let busy = client.call("device_snapshot", json!({})).await;
        assert_eq!(
            busy.error_code(),
            "DEVICE_BUSY",
            "{failure:?}: {}",
            busy.text
        );
        let left = phones.state("emulator-5554").pending_failures.len();
        assert!(
            left > 0 && left < 8,
            "{failure:?}: the tries are bounded ({left} left)"
        );
        phones.change("emulator-5554", |state| state.pending_failures.clear());
        client.call("device_snapshot", json!({})).await.data();
    }
}

#[tokio::test]
async fn the_keyboard_is_noticed_and_dismissed() {
    let (phones, _hub, _android, client) = one_phone("login.xml").await;
    let first = client.call("device_snapshot", json!({})).await;
    assert_eq!(first.data()["keyboardShown"], false);
    let username = ref_on(&first.text, "textbox \"Email or username\"");
    client
        .call("device_tap", json!({"ref": username}))
        .await
        .data();
    let shown = client.call("device_snapshot", json!({})).await;
    assert_eq!(shown.data()["keyboardShown"], true);
    let dismissed = client.call("dismiss_keyboard", json!({})).await;
    assert_eq!(
        dismissed.data()["observation"]["keyboardShown"],
        false,
        "{}",
        dismissed.text
    );
    assert!(!phones.state("emulator-5554").keyboard);
    // Dismissing it again presses nothing: back would leave the screen.
    let keyevents = phones.device_calls("emulator-5554", "input").len();
    client.call("dismiss_keyboard", json!({})).await.data();
    assert_eq!(
        phones.device_calls("emulator-5554", "input").len(),
        keyevents
    );
    assert_eq!(phones.state("emulator-5554").screen, "login.xml");
}

#[tokio::test]
async fn screenshots_are_pngs_scaled_to_the_width_asked_for() {
    let (_phones, _hub, _android, client) = one_phone("login.xml").await;
    let shot = client
        .call("device_screenshot", json!({"maxWidth": 540}))
        .await;
    let image = shot.image();
    assert_eq!(image.mime_type, "image/png");
    let header = tabwire_e2e::image::header(&tabwire_e2e::image::decode_base64(&image.data))
        .expect("a PNG header");
    assert_eq!((header.width, header.height), (540, 1200), "{}", shot.text);
}

const LOG: &str = "\
2026-03-14 10:00:00.100  1200  1200 I ActivityManager: Start proc 8123:com.acme.shop/u0a162
2026-03-14 10:00:01.250  8123  8123 D ShopApp : onCreate
2026-03-14 10:00:02.000  8123  8140 E ShopApp : login failed: 401
2026-03-14 10:00:02.500  8311  8311 W NewsFeed: slow frame 48 ms
";

#[tokio::test]
async fn logs_come_since_the_previous_call_or_a_time_filtered_and_bounded() {
    let phones = Phones::new();
    phones.attach(Phone::pixel("emulator-5554").showing("login.xml").log(LOG));
    let hub = Hub::spawn();
    let _android = Android::local(&hub, &phones, &[]);
    let client = McpClient::connect(&hub).await;
    listed_device(&client, PIXEL_ID, true).await;

    let first = client.call("device_logs", json!({})).await;
    assert!(first.text.contains("login failed: 401"), "{}", first.text);
    assert!(first.text.contains("slow frame"), "{}", first.text);
    phones.append_log(
        "emulator-5554",
        "2026-03-14 10:00:05.000  8123  8123 I ShopApp : cart opened\n",
    );
    let next = client.call("device_logs", json!({})).await;
    assert!(next.text.contains("cart opened"), "{}", next.text);
    assert!(
        !next.text.contains("login failed"),
        "only what is new: {}",
        next.text
    );

    let since = client
        .call("device_logs", json!({"since": "03-14 10:00:01.500"}))
        .await;
    assert!(
        since.text.contains("login failed") && !since.text.contains("onCreate"),
        "{}",
        since.text
    );
    let errors = client
        .call(
            "device_logs",
            json!({"since": "2026-03-14 10:00:00.000", "minLevel": "error"}),
        )
        .await;
    assert!(
        errors.text.contains("login failed") && !errors.text.contains("cart opened"),
        "{}",
        errors.text
    );
    let by_tag = client
        .call(
            "device_logs",
            json!({"since": "03-14 10:00:00.000", "tag": "NewsFeed"}),
        )
        .await;
    assert!(
        by_tag.text.contains("slow frame") && !by_tag.text.contains("ShopApp"),
        "{}",
        by_tag.text
    );
    let by_app = client
        .call(
            "device_logs",
            json!({"since": "03-14 10:00:00.000", "package": "com.acme.shop"}),
        )
        .await;
    assert!(
        by_app.text.contains("cart opened") && !by_app.text.contains("slow frame"),
        "{}",
        by_app.text
    );
    let bounded = client
        .call(
            "device_logs",
            json!({"since": "03-14 10:00:00.000", "maxEntries": 2}),
        )
        .await;
    assert_eq!(
        bounded.data()["entries"].as_array().map(Vec::len),
        Some(2),
        "{}",
        bounded.text
    );
    let bad = client
        .call("device_logs", json!({"since": "yesterday; rm -rf /"}))
        .await;
    assert_eq!(bad.error_code(), "INVALID_ARGUMENT");
}

#[tokio::test]
async fn clearing_app_data_is_refused_unless_the_backend_allows_destruction() {
    let (phones, hub, mut android, client) = one_phone("login.xml").await;
    let refused = client
        .call(
            "close_app",
            json!({"package": "com.acme.shop", "clearData": true}),
        )
        .await;
    assert_eq!(refused.error_code(), "DESTRUCTIVE_NOT_ALLOWED");
    assert!(
        phones
            .device_calls("emulator-5554", "pm")
            .iter()
            .all(|c| c[1] != "clear")
    );
    let opened = client
        .call(
            "open_app",
            json!({"package": "com.acme.shop", "clearData": true}),
        )
        .await;
    assert_eq!(opened.error_code(), "DESTRUCTIVE_NOT_ALLOWED");
    assert!(phones.state("emulator-5554").cleared.is_empty());

    android.kill();
    listed_device(&client, PIXEL_ID, false).await;
    let _allowed = Android::local(&hub, &phones, &["--allow-destructive"]);
    listed_device(&client, PIXEL_ID, true).await;
    client
        .call(
            "close_app",
            json!({"package": "com.acme.shop", "clearData": true}),
        )
        .await
        .data();
    assert_eq!(phones.state("emulator-5554").cleared, ["com.acme.shop"]);
    let missing = client
        .call("open_app", json!({"package": "com.example.absent"}))
        .await;
    assert_eq!(missing.error_code(), "APP_NOT_FOUND");
}

#[tokio::test]
async fn a_phone_unplugged_during_a_call_fails_that_call_at_once() {
    let (phones, _hub, _android, client) = one_phone("login.xml").await;
    client.call("device_snapshot", json!({})).await.data();
    phones.hang_on("emulator-5554", "uiautomator");
    let started = std::time::Instant::now();
    let call = client.call("device_snapshot", json!({}));
    let unplug = async {
        eventually("the dump to hang", Duration::from_secs(10), || async {
            (phones.state("emulator-5554").hanging > 0).then_some(())
        })
        .await;
        phones.unplug("emulator-5554");
    };
    let (reply, ()) = tokio::join!(call, unplug);
    assert_eq!(reply.error_code(), "DEVICE_DISCONNECTED", "{}", reply.text);
    // Not the 20 s deadline of a snapshot: the call ended when the phone went.
    assert!(started.elapsed() < Duration::from_secs(15));

    // The same for a phone lost half-way through the dump's output.
    phones.attach(
        Phone::pixel("emulator-5554")
            .showing("login.xml")
            .rules(SHOP_RULES),
    );
    listed_device(&client, PIXEL_ID, true).await;
    phones.vanish_on("emulator-5554", "uiautomator");
    let cut = client.call("device_snapshot", json!({})).await;
    assert_eq!(cut.error_code(), "DEVICE_DISCONNECTED", "{}", cut.text);
}

#[tokio::test]
async fn typed_text_that_attacks_the_device_shell_arrives_as_typed_and_runs_nothing() {
    let (phones, _hub, _android, client) = one_phone("login.xml").await;
    let first = client.call("device_snapshot", json!({})).await;
    let username = ref_on(&first.text, "textbox \"Email or username\"");
    let attack = "a'; touch PWNED; echo \"$(touch PWNED2)\" `touch PWNED3` && x|y >z <w (v) {u} #t ~s %s 100% \\n";
    client
        .call("device_type", json!({"ref": username, "text": attack}))
        .await
        .data();
    assert_eq!(phones.state("emulator-5554").typed.concat(), attack);
    assert!(
        phones.stray_files("emulator-5554").is_empty(),
        "{:?}",
        phones.stray_files("emulator-5554")
    );
    for call in phones.device_calls("emulator-5554", "input") {
        assert!(
            matches!(call[1].as_str(), "text" | "tap" | "keyevent"),
            "{call:?}"
        );
    }
    let touched: Vec<_> = phones
        .calls()
        .into_iter()
        .filter(|c| c.kind == CallKind::Device && c.argv[0] == "touch")
        .collect();
    assert!(touched.is_empty(), "{touched:?}");
    let emoji = client
        .call("device_type", json!({"ref": username, "text": "café 🔥"}))
        .await;
    assert_eq!(emoji.error_code(), "TEXT_NOT_TYPABLE");
}

#[tokio::test]
async fn an_app_the_owner_denies_is_neither_read_nor_driven() {
    let phones = Phones::new();
    phones.attach(
        Phone::pixel("emulator-5554")
            .showing("login.xml")
            .rules(SHOP_RULES),
    );
    let policy = tabwire_e2e::scratch::Scratch::new("owner-policy");
    let file = policy.path().join("policy.toml");
    std::fs::write(
        &file,
        "default = \"act\"\n[[apps]]\npackage = \"com.acme.bank\"\naccess = \"deny\"\n",
    )
    .unwrap();
    let hub = Hub::spawn();
    let _android = Android::local(&hub, &phones, &["--policy", file.to_str().unwrap()]);
    let client = McpClient::connect(&hub).await;
    listed_device(&client, PIXEL_ID, true).await;

    let opened = client
        .call("open_app", json!({"package": "com.acme.bank"}))
        .await;
    assert_eq!(opened.error_code(), "APP_BLOCKED", "{}", opened.text);
    assert!(phones.device_calls("emulator-5554", "monkey").is_empty());
    // The bank comes to the front by itself: its screen is not returned, no input reaches it.
    phones.show("emulator-5554", "bank.xml");
    let read = client.call("device_snapshot", json!({})).await;
    assert_eq!(read.error_code(), "APP_BLOCKED", "{}", read.text);
    assert!(!read.text.contains("2,431"), "{}", read.text);
    let tap = client
        .call("tap_coordinates", json!({"x": 280, "y": 670}))
        .await;
    assert_eq!(tap.error_code(), "APP_BLOCKED", "{}", tap.text);
    assert!(phones.device_calls("emulator-5554", "input").is_empty());
    // Other apps are unaffected.
    phones.show("emulator-5554", "login.xml");
    client.call("device_snapshot", json!({})).await.data();
}

#[tokio::test]
async fn a_second_session_may_look_but_not_act_while_the_first_holds_the_phone() {
    let (_phones, hub, _android, first) = one_phone("login.xml").await;
    let second = McpClient::connect_as(&hub, tabwire_e2e::Listener::named("other-agent")).await;
    listed_device(&second, PIXEL_ID, true).await;
    let look = first.call("device_snapshot", json!({})).await;
    let remember = ref_on(&look.text, "Remember me");
    first
        .call("device_tap", json!({"ref": remember}))
        .await
        .data();

    let seen = second.call("device_snapshot", json!({})).await;
    seen.data();
    let refused = second
        .call(
            "device_tap",
            json!({"ref": ref_on(&seen.text, "Remember me")}),
        )
        .await;
    assert_eq!(refused.error_code(), "DEVICE_LEASED", "{}", refused.text);
    first.call("release_device", json!({})).await.data();
    second
        .call(
            "device_tap",
            json!({"ref": ref_on(&seen.text, "Remember me")}),
        )
        .await
        .data();
}

#[tokio::test]
async fn the_audit_log_records_device_calls_and_typed_text_by_length_only() {
    let (_phones, hub, _android, client) = one_phone("login.xml").await;
    let look = client.call("device_snapshot", json!({})).await;
    let username = ref_on(&look.text, "textbox \"Email or username\"");
    client
        .call(
            "device_type",
            json!({"ref": username, "text": "hunter2-secret"}),
        )
        .await
        .data();
    let audit = eventually("the audit records", Duration::from_secs(10), || async {
        let log = hub.audit_command(&[]);
        log.contains("device_type").then_some(log)
    })
    .await;
    assert!(audit.contains(PIXEL_ID), "{audit}");
    assert!(audit.contains("device_snapshot"), "{audit}");
    assert!(audit.contains("\"textLength\":14"), "{audit}");
    assert!(!audit.contains("hunter2"), "{audit}");
}

#[tokio::test]
async fn hosted_accounts_see_only_their_own_phones() {
    use tabwire_e2e::hosted::{Hosted, Role};
    let hosted = Hosted::start();
    let ours = Phones::new();
    ours.attach(Phone::pixel("emulator-5554").showing("login.xml"));
    let theirs = Phones::new();
    theirs.attach(Phone::galaxy("R5CW30ABCDE").showing("bank.xml"));
    let _our_backend = Android::hosted(&hosted, &hosted.issue("acme", Role::Device), &ours);
    let _their_backend = Android::hosted(&hosted, &hosted.issue("globex", Role::Device), &theirs);
    let we = hosted.session(&hosted.issue("acme", Role::Agent)).await;
    let they = hosted.session(&hosted.issue("globex", Role::Agent)).await;
    listed_device(&we, PIXEL_ID, true).await;
    listed_device(&they, GALAXY_ID, true).await;

    let listed = we.call("list_devices", json!({})).await;
    assert!(!listed.text.contains(GALAXY_ID), "{}", listed.text);
    assert_eq!(listed.data()["devices"].as_array().map(Vec::len), Some(1));
    // Another account's device answers exactly as one that never existed.
    let foreign = we
        .call("device_snapshot", json!({"deviceId": GALAXY_ID}))
        .await;
    let unknown = we
        .call("device_snapshot", json!({"deviceId": "android-NEVER0000"}))
        .await;
    assert_eq!(foreign.error_code(), "DEVICE_NOT_FOUND");
    assert_eq!(unknown.error_code(), "DEVICE_NOT_FOUND");
    assert_eq!(
        foreign.error().to_string().replace(GALAXY_ID, "ID"),
        unknown
            .error()
            .to_string()
            .replace("android-NEVER0000", "ID")
    );
    let acted = we
        .call(
            "tap_coordinates",
            json!({"deviceId": GALAXY_ID, "x": 280, "y": 670}),
        )
        .await;
    assert_eq!(acted.error_code(), "DEVICE_NOT_FOUND");
    assert!(theirs.device_calls("R5CW30ABCDE", "input").is_empty());
    // Each account drives its own phone.
    assert_eq!(
        we.call("device_snapshot", json!({})).await.data()["package"],
        "com.acme.shop"
    );
    assert_eq!(
        they.call("device_snapshot", json!({})).await.data()["package"],
        "com.acme.bank"
    );
}

#[tokio::test]
async fn every_fixture_screen_is_read_whole_with_its_words_intact() {
    use tabwire_e2e::bench_mobile::screens::{SCREENS, actionable, missing};
    let (phones, _hub, _android, client) = one_phone("login.xml").await;
    for screen in SCREENS {
        phones.show("emulator-5554", screen);
        let reply = client.call("device_snapshot", json!({})).await;
        let nodes = reply.data()["nodes"].as_array().unwrap().clone();
        let entries: Vec<[i64; 4]> = nodes
            .iter()
            .map(|n| ["left", "top", "right", "bottom"].map(|k| n["bounds"][k].as_i64().unwrap()))
            .collect();
        let xml = phones.dir().screen_xml(screen).unwrap();
        let elements = actionable(&xml, 1080, 2400);
        let lost: Vec<_> = missing(&elements, &entries)
            .iter()
            .map(|e| e.label.clone())
            .collect();
        assert!(lost.is_empty(), "{screen}: {lost:?}\n{}", reply.text);
        for [l, t, r, b] in entries {
            assert!(
                l < r && t < b && r <= 1080 && b <= 2400,
                "{screen}: bounds {l},{t},{r},{b}"
            );
        }
    }
    phones.show("emulator-5554", "chat.xml");
    let chat = client.call("device_snapshot", json!({})).await.text;
    for words in [
        "Tom & Jerry <3",
        "She said \"hi\" & left",
        "🔥",
        "🎉",
        "مرحبا بالعالم",
        "שלום",
        "👩\u{200d}👩\u{200d}👧",
        "hot deals at 5 & 6 o'clock",
    ] {
        assert!(chat.contains(words), "{words} in:\n{chat}");
    }
    phones.show("emulator-5554", "offscreen.xml");
    let offscreen = client.call("device_snapshot", json!({})).await.text;
    for gone in ["Camp Mug", "Hidden peek", "Terms apply", "3 deals loaded"] {
        assert!(
            !offscreen.contains(gone),
            "{gone} is not on the screen:\n{offscreen}"
        );
    }
    assert!(offscreen.contains("SEE ALL DEALS"), "{offscreen}");
    phones.show("emulator-5554", "rn_signup.xml");
    let rn = client.call("device_snapshot", json!({})).await;
    for field in ["Full name", "Email", "Phone"] {
        assert!(
            rn.text
                .lines()
                .any(|l| l.contains("textbox") && l.contains(field)),
            "{field}:\n{}",
            rn.text
        );
    }
    assert!(rn.text.contains("button \"Create account\""), "{}", rn.text);
}

/// Stops the adb server a test started on its own port when the test ends, however it ends.
struct AdbServer {
    adb: std::path::PathBuf,
    port: String,
}

impl Drop for AdbServer {
    fn drop(&mut self) {
        let _ = std::process::Command::new(&self.adb)
            .args(["-P", &self.port, "kill-server"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// The one test with Debian's real `adb` (there is no phone on this machine): the backend runs
/// it, which starts adb's server (on a port of the test's own, on loopback), reads its empty
/// device list every second, serves nothing and keeps running; agents see no device and the
/// device tools stay out of the listing.
#[tokio::test]
async fn the_backend_drives_the_real_adb_program_with_no_phone_attached() {
    let adb = ["/usr/bin/adb", "/usr/local/bin/adb"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|path| path.exists())
        .expect(
            "this test runs the real adb program: install Debian's package `adb` (.ci/run does)",
        );
    let port = tabwire_e2e::proxy::free_port().to_string();
    let server = AdbServer {
        adb: adb.clone(),
        port: port.clone(),
    };
    let hub = Hub::spawn();
    let state = tabwire_e2e::scratch::Scratch::new("android-state");
    let state = state.path().display().to_string();
    let url = format!("ws://{}/device", hub.http);
    let mut android = Android::with_adb(
        &adb,
        &["--hub", url.as_str(), "--state-dir", state.as_str()],
        &[("ANDROID_ADB_SERVER_PORT", port.as_str())],
    );
    let client = McpClient::connect(&hub).await;

    // The backend's first `adb devices -l` starts adb's server on our port.
    eventually(
        "adb's server, started by the backend",
        Duration::from_secs(30),
        || async {
            std::net::TcpStream::connect(("127.0.0.1", server.port.parse::<u16>().unwrap()))
                .is_ok()
                .then_some(())
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let listed = client.call("list_devices", json!({})).await;
    assert_eq!(
        listed.data()["devices"].as_array().map(Vec::len),
        Some(0),
        "{}",
        listed.text
    );
    let tools: Vec<String> = client
        .list_tools()
        .await
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(!tools.iter().any(|name| name == "device_tap"), "{tools:?}");
    let snapshot = client.call("device_snapshot", json!({})).await;
    assert_eq!(
        snapshot.error_code(),
        "DEVICE_NOT_FOUND",
        "{}",
        snapshot.text
    );
    assert!(
        android.is_running(),
        "the backend keeps waiting for phones instead of exiting"
    );
    android.kill();
    drop(server);
}
