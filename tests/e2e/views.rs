//! Each session's view is its own (issue 23 §4): two MCP sessions on one tab (and on one
//! phone) each get their deltas against what they themselves were shown. An action's automatic
//! delta never leaves out a change because another session saw it meanwhile, and a `since`
//! naming a version another session received is answered with a full window (`reset`).

use serde_json::{Value, json};
use tabwire_e2e::client::{Listener, Reply};
use tabwire_e2e::device::{Android, PIXEL_ID, Phone, Phones, listed_device};
use tabwire_e2e::scenario::{connected_browser, loaded_tab, ref_of};
use tabwire_e2e::{Browser, Fixtures, Hub, McpClient};

/// An action's budget: a snapshot with it is the same view an action observes afterwards.
const VIEW: (u64, u64) = (30, 1500);

/// The observation's version in a snapshot's or an action's data.
fn version(reply: &Reply) -> u64 {
    let data = reply.data();
    let observation = if data["observation"].is_object() {
        &data["observation"]
    } else {
        data
    };
    observation["version"]
        .as_u64()
        .unwrap_or_else(|| panic!("no version: {}", reply.structured))
}

/// The lines an observation in `reply` shows (a full window's, or a delta's changes).
fn observed(reply: &Reply) -> Value {
    let data = reply.data();
    let observation = if data["observation"].is_object() {
        &data["observation"]
    } else {
        data
    };
    json!({"nodes": observation["nodes"], "delta": observation["delta"]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_on_one_tab_each_get_the_changes_since_their_own_view() {
    let fixtures = Fixtures::serve().await;
    let hub = Hub::spawn();
    let browser = Browser::launch(&hub, "Shared", &fixtures.url("board.html"));
    let alpha = McpClient::connect_as(&hub, Listener::named("Alpha")).await;
    let beta = McpClient::connect_as(&hub, Listener::named("Beta")).await;
    connected_browser(&alpha, "Shared").await;
    connected_browser(&beta, "Shared").await;
    let tab = loaded_tab(&alpha, json!({}), &fixtures.url("board.html")).await;
    let view = json!({"tabId": tab, "maxNodes": VIEW.0, "maxChars": VIEW.1});

    // Alpha looks; then the page changes (the person writes on the board); then Beta looks.
    let alphas = alpha.call("get_page_snapshot", view.clone()).await;
    assert!(
        !alphas.text.contains("Pinned by the person"),
        "{}",
        alphas.text
    );
    browser
        .evaluate_in(
            "board.html",
            "document.body.insertAdjacentHTML('beforeend', '<p>Pinned by the person</p>')",
        )
        .await;
    let betas = beta.call("get_page_snapshot", view.clone()).await;
    assert!(
        betas.text.contains("Pinned by the person"),
        "{}",
        betas.text
    );
    assert!(
        version(&betas) > version(&alphas),
        "versions count per page"
    );

    // Alpha acts. Its observation is the changes since Alpha's view, so the person's note is
    // in it although Beta has seen it since (against Beta's view it would be "unchanged").
    let add = ref_of(&alphas, "button \"Add note\"");
    let acted = alpha
        .call("click_element", json!({"tabId": tab, "selector": add}))
        .await;
    let delta = &acted.data()["observation"]["delta"];
    assert_eq!(delta["since"], version(&alphas), "{}", acted.structured);
    let changes = observed(&acted).to_string();
    assert!(changes.contains("Pinned by the person"), "{}", acted.text);
    assert!(changes.contains("Notes: 1"), "{}", acted.text);

    // Beta's own delta since its view: the click only, not the note it already saw.
    let since_beta = beta
        .call(
            "get_page_snapshot",
            json!({"tabId": tab, "maxNodes": VIEW.0, "maxChars": VIEW.1, "since": version(&betas)}),
        )
        .await;
    let changes = observed(&since_beta).to_string();
    assert_eq!(
        since_beta.data()["delta"]["since"],
        version(&betas),
        "{}",
        since_beta.structured
    );
    assert!(changes.contains("Notes: 1"), "{}", since_beta.text);
    assert!(
        !changes.contains("Pinned by the person"),
        "{}",
        since_beta.text
    );

    // A version Alpha received is nothing Beta was shown: a full window with reset, not a
    // delta against a view Beta never saw.
    let borrowed = beta
        .call(
            "get_page_snapshot",
            json!({"tabId": tab, "maxNodes": VIEW.0, "maxChars": VIEW.1, "since": version(&alphas)}),
        )
        .await;
    assert_eq!(borrowed.data()["reset"], true, "{}", borrowed.structured);
    assert!(
        borrowed.data()["delta"].is_null(),
        "{}",
        borrowed.structured
    );
    assert!(borrowed.text.contains("Shared board"), "{}", borrowed.text);
    // Alpha's own version still serves Alpha.
    let own = alpha
        .call(
            "get_page_snapshot",
            json!({"tabId": tab, "maxNodes": VIEW.0, "maxChars": VIEW.1, "since": version(&acted)}),
        )
        .await;
    assert_eq!(
        own.data()["delta"]["since"],
        version(&acted),
        "{}",
        own.structured
    );
}

#[tokio::test]
async fn two_sessions_on_one_phone_each_get_the_changes_since_their_own_view() {
    let phones = Phones::new();
    phones.attach(Phone::pixel("emulator-5554").showing("login.xml"));
    let hub = Hub::spawn();
    let _android = Android::local(&hub, &phones, &[]);
    let alpha = McpClient::connect_as(&hub, Listener::named("Alpha")).await;
    let beta = McpClient::connect_as(&hub, Listener::named("Beta")).await;
    listed_device(&alpha, PIXEL_ID, true).await;
    listed_device(&beta, PIXEL_ID, true).await;
    let view = json!({"maxNodes": VIEW.0, "maxChars": VIEW.1});

    // Alpha looks; the phone moves on by itself (the typed login); then Beta looks.
    let alphas = alpha.call("device_snapshot", view.clone()).await;
    phones.show("emulator-5554", "login_typed.xml");
    let betas = beta.call("device_snapshot", view.clone()).await;
    assert!(betas.data()["delta"].is_null(), "{}", betas.structured);
    assert_ne!(observed(&alphas), observed(&betas), "the screen changed");

    // Alpha acts: its delta is against Alpha's view, so it holds what changed before Beta
    // looked. The tap changes nothing on the fake phone, so against Beta's view it would
    // be empty.
    let field = alphas
        .text
        .lines()
        .find(|line| line.contains("textbox"))
        .and_then(|line| line.split_whitespace().find(|w| w.starts_with("@d")))
        .unwrap_or_else(|| panic!("no textbox in {}", alphas.text))
        .to_owned();
    let acted = alpha.call("device_tap", json!({"ref": field})).await;
    let delta = &acted.data()["observation"]["delta"];
    assert_eq!(delta["since"], version(&alphas), "{}", acted.structured);
    assert!(
        delta["changed"].as_array().is_some_and(|c| !c.is_empty()),
        "the typed login is news to Alpha: {}",
        acted.text
    );

    // Beta's since its own version: nothing changed for it.
    let since_beta = beta
        .call(
            "device_snapshot",
            json!({"maxNodes": VIEW.0, "maxChars": VIEW.1, "since": version(&betas)}),
        )
        .await;
    let delta = &since_beta.data()["delta"];
    assert_eq!(delta["since"], version(&betas), "{}", since_beta.structured);
    assert!(
        delta["changed"].as_array().is_none_or(Vec::is_empty),
        "{}",
        since_beta.text
    );
    // Alpha's version is not Beta's to use.
    let borrowed = beta
        .call(
            "device_snapshot",
            json!({"maxNodes": VIEW.0, "maxChars": VIEW.1, "since": version(&alphas)}),
        )
        .await;
    assert_eq!(borrowed.data()["reset"], true, "{}", borrowed.structured);
}
