//! A denied frame's JavaScript dialogs (issue 23 §1): Chrome reports every dialog of a tab on
//! the tab's debugger session, whichever frame opened it; one opened by a frame agents may not
//! read reaches them only as its type, and may only be dismissed. The page's own dialogs, under
//! the same policy, are reported whole.

use std::time::Duration;

use serde_json::json;
use tabwire_e2e::scenario::loaded_tab;
use tabwire_e2e::{Reply, eventually};

use crate::covering::{blocked_frames, deny};
use crate::policy::Setup;

/// What the denied page's dialogs say (secret-dialog.html).
const SECRET_WORDS: [&str; 4] = ["SECRET", "4242", "5555", "hunter2"];

#[track_caller]
fn clean(what: &str, reply: &Reply) {
    let all = format!("{}{}", reply.text, reply.structured);
    for word in SECRET_WORDS {
        assert!(!all.contains(word), "{what} shows {word:?}: {all}");
    }
}

/// The page's status line (cover-dialog.html), read once no dialog blocks it.
async fn status(setup: &Setup, tab: u64) -> String {
    let content = setup
        .call(
            "get_page_content",
            json!({"tabId": tab, "selector": "#result"}),
        )
        .await;
    assert!(!content.is_error, "{}", content.text);
    content.data()["content"]
        .as_str()
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// `get_tab_health` once it reports a dialog (the frame opens it when its parent's message
/// arrives, which may be after the click's result).
async fn open_dialog(setup: &Setup, tab: u64) -> Reply {
    eventually("the frame's dialog", Duration::from_secs(20), || async {
        let health = setup.call("get_tab_health", json!({ "tabId": tab })).await;
        (!health.is_error && !health.data()["dialog"].is_null()).then_some(health)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_frames_dialog_is_withheld_and_can_only_be_dismissed() {
    let setup = Setup::start("cover-dialog.html", |here, _| {
        deny(&here.replace("127.0.0.1", "localhost"))
    })
    .await;
    let tab = loaded_tab(
        &setup.client,
        json!({}),
        &setup.fixtures.url("cover-dialog.html"),
    )
    .await;
    blocked_frames(&setup, tab, 1).await;
    let click = |selector: &'static str| {
        let setup = &setup;
        async move {
            setup
                .call("click_element", json!({"tabId": tab, "selector": selector}))
                .await
        }
    };

    // The page's own dialog, under the same policy: reported whole, and accepted.
    let own = click("#own").await;
    assert_eq!(
        own.data()["dialog"]["message"],
        "Top question?",
        "{}",
        own.structured
    );
    assert!(own.data()["dialog"].get("withheld").is_none());
    let accepted = setup
        .call("handle_dialog", json!({"tabId": tab, "accept": true}))
        .await;
    assert!(!accepted.is_error, "{}", accepted.text);
    assert_eq!(status(&setup, tab).await, "Own confirm returned true");

    // The denied frame's confirm: its type only, wherever the dialog shows up.
    let clicked = click("#frame-confirm").await;
    clean("the click", &clicked);
    let health = open_dialog(&setup, tab).await;
    clean("the tab's health", &health);
    assert_eq!(
        health.data()["dialog"]["type"],
        "confirm",
        "{}",
        health.text
    );
    assert_eq!(health.data()["dialog"]["withheld"], true, "{}", health.text);
    assert!(health.text.contains("withheld"), "{}", health.text);
    let blocked = setup
        .call("get_page_snapshot", json!({ "tabId": tab }))
        .await;
    assert_eq!(blocked.error_code(), "DIALOG_OPEN", "{}", blocked.text);
    clean("another tool's DIALOG_OPEN", &blocked);
    assert!(blocked.text.contains("accept false"), "{}", blocked.text);

    // Accepting it would act on the denied page: refused, and the dialog stays open.
    let accept = setup
        .call("handle_dialog", json!({"tabId": tab, "accept": true}))
        .await;
    assert_eq!(accept.error_code(), "ORIGIN_BLOCKED", "{}", accept.text);
    clean("the refused accept", &accept);
    let still = setup.call("get_tab_health", json!({ "tabId": tab })).await;
    assert_eq!(still.data()["dialog"]["type"], "confirm", "{}", still.text);

    // Dismissing it unblocks the tab, and the page saw it dismissed.
    let dismissed = setup
        .call("handle_dialog", json!({"tabId": tab, "accept": false}))
        .await;
    assert!(!dismissed.is_error, "{}", dismissed.text);
    clean("the dismissal", &dismissed);
    assert_eq!(dismissed.data()["dialog"]["withheld"], true);
    assert_eq!(
        status(&setup, tab).await,
        "Frame says confirm returned false"
    );

    // A prompt: its default text is withheld too.
    let prompted = click("#frame-prompt").await;
    clean("the prompt's click", &prompted);
    let health = open_dialog(&setup, tab).await;
    assert_eq!(health.data()["dialog"]["type"], "prompt", "{}", health.text);
    clean("the prompt in the tab's health", &health);
    let dismissed = setup
        .call("handle_dialog", json!({"tabId": tab, "accept": false}))
        .await;
    assert!(!dismissed.is_error, "{}", dismissed.text);
    clean("the prompt's dismissal", &dismissed);
    assert_eq!(status(&setup, tab).await, "Frame says prompt returned null");
}
