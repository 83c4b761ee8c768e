//! iPhones end to end: the real hub, the real `tabwire-ios`, the scripted WebDriverAgent
//! serving real XCUITest page sources (devices/ios/testdata/), and a real MCP client. No Mac or
//! iPhone exists here (devices/ios/README.md): what these prove is everything between the agent
//! and WDA's HTTP API — pairing, listing, observations, refs, policy and what is sent.

use serde_json::json;
use tabwire_e2e::device::listed_device;
use tabwire_e2e::ios::{IPHONE_ID, Ios};
use tabwire_e2e::{Hub, McpClient};
use tabwire_ios::scripted::demo_script;

/// The ref on the line of a reply's text that contains `needle`.
fn ref_on(text: &str, needle: &str) -> String {
    text.lines()
        .find(|line| line.contains(needle))
        .and_then(|line| line.split_whitespace().find(|w| w.starts_with("@d")))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"))
        .to_owned()
}

#[tokio::test]
async fn an_iphone_pairs_is_listed_as_ios_and_an_agent_taps_through_settings() {
    let hub = Hub::spawn();
    let client = McpClient::connect(&hub).await;
    let ios = Ios::local(&hub, demo_script(), &[]).await;
    let entry = listed_device(&client, IPHONE_ID, true).await;
    assert_eq!(entry["platform"], "ios", "{entry}");
    assert_eq!(entry["name"], "Test iPhone", "{entry}");
    let pairings = hub.pair_command(&["--list"]);
    assert!(pairings.contains("device"), "{pairings}");

    let snapshot = client.call("device_snapshot", json!({})).await;
    assert_eq!(snapshot.data()["package"], "com.apple.Preferences");
    let text = &snapshot.text;
    assert!(text.contains("button \"通用\""), "{text}");
    assert!(!text.contains("chevron"), "{text}");
    let general = ref_on(text, "\"通用\"");
    let tapped = client
        .call("device_tap", json!({"ref": general, "observe": {}}))
        .await;
    tapped.data();
    assert!(
        tapped.text.contains("Tapped") && tapped.text.contains("Accessibility"),
        "{}",
        tapped.text
    );
    let taps: Vec<_> = ios
        .wda
        .recorded()
        .into_iter()
        .filter(|r| r.path == "/session/:id/wda/tap")
        .collect();
    assert_eq!(taps.len(), 1);
    assert_eq!(taps[0].body, json!({"x": 207, "y": 327}));
    assert_eq!(ios.wda.screen(), "settings-en");
}

#[tokio::test]
async fn a_password_typed_on_an_iphone_never_comes_back_and_an_alert_is_answered() {
    let hub = Hub::spawn();
    let client = McpClient::connect(&hub).await;
    let ios = Ios::local(&hub, demo_script(), &[]).await;
    listed_device(&client, IPHONE_ID, true).await;
    let opened = client
        .call(
            "open_app",
            json!({"package": "io.cloudgrey.the-app", "observe": {}}),
        )
        .await;
    let text = &opened.text;
    assert!(text.contains("textbox \"password\""), "{text}");
    let password = ref_on(text, "textbox \"password\"");
    let typed = client
        .call(
            "device_type",
            json!({"ref": password, "text": "hunter2-secret"}),
        )
        .await;
    typed.data();
    assert!(!typed.text.contains("hunter2"), "{}", typed.text);
    let keys: Vec<_> = ios
        .wda
        .recorded()
        .into_iter()
        .filter(|r| r.path == "/session/:id/wda/keys")
        .collect();
    assert_eq!(keys[0].body, json!({"value": ["hunter2-secret"]}));

    let snapshot = client.call("device_snapshot", json!({})).await;
    let login = ref_on(&snapshot.text, "loginBtn");
    let failed = client
        .call("device_tap", json!({"ref": login, "observe": {}}))
        .await;
    assert!(
        failed.text.contains("dialog \"Invalid login"),
        "{}",
        failed.text
    );
    let answered = client.call("dismiss_alert", json!({})).await;
    assert_eq!(
        answered.data()["alert"],
        "Invalid login credentials, please try again"
    );
    assert!(
        answered.text.contains("Dismissed the alert"),
        "without accept, the alert is dismissed: {}",
        answered.text
    );
    assert_eq!(ios.wda.screen(), "login");
    let none = client.call("dismiss_alert", json!({})).await;
    assert_eq!(none.error_code(), "NO_DIALOG", "{}", none.text);
}

#[tokio::test]
async fn scroll_to_element_finds_a_row_far_down_a_real_settings_list() {
    let hub = Hub::spawn();
    let client = McpClient::connect(&hub).await;
    let _ios = Ios::local(&hub, demo_script(), &[]).await;
    listed_device(&client, IPHONE_ID, true).await;
    let scrolled = client
        .call("scroll_to_element", json!({"query": "开发者"}))
        .await;
    let data = scrolled.data();
    assert!(
        data["found"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("开发者")),
        "{data}"
    );
    let row = data["found"]["ref"].as_str().unwrap().to_owned();
    assert!(
        scrolled.text.contains(&format!("Found {row}")),
        "{}",
        scrolled.text
    );
    let tapped = client.call("device_tap", json!({"ref": row})).await;
    tapped.data();
}

#[tokio::test]
async fn the_owners_bundle_rules_hold_on_an_iphone() {
    let hub = Hub::spawn();
    let client = McpClient::connect(&hub).await;
    let policy = tabwire_e2e::scratch::Scratch::new("ios-policy");
    let file = policy.path().join("policy.toml");
    std::fs::write(
        &file,
        "default = \"act\"\n\n[[apps]]\npackage = \"com.apple.*\"\naccess = \"deny\"\n\n[[apps]]\npackage = \"io.cloudgrey.the-app\"\naccess = \"read\"\n",
    )
    .unwrap();
    let ios = Ios::local(&hub, demo_script(), &["--policy", file.to_str().unwrap()]).await;
    listed_device(&client, IPHONE_ID, true).await;
    // Settings is Apple's: not even read.
    let denied = client.call("device_snapshot", json!({})).await;
    assert_eq!(denied.error_code(), "APP_BLOCKED", "{}", denied.text);
    let opened = client
        .call("open_app", json!({"package": "com.apple.mobilecal"}))
        .await;
    assert_eq!(opened.error_code(), "APP_BLOCKED", "{}", opened.text);
    // The demo app may be read, not driven.
    ios.wda.show("login");
    let login = client.call("device_snapshot", json!({})).await;
    let button = ref_on(&login.text, "loginBtn");
    let refused = client.call("device_tap", json!({"ref": button})).await;
    assert_eq!(refused.error_code(), "APP_BLOCKED", "{}", refused.text);
    assert!(
        ios.wda
            .recorded()
            .iter()
            .all(|r| !r.path.ends_with("/wda/tap") && !r.path.ends_with("/apps/launch")),
        "nothing reached WDA"
    );
}
