//! Network mocks (issue 28) in real Chromium through the extension's debugger session: a page's
//! fetch gets the mocked body while an unmatched one reaches the server, the requests the
//! mocks saw come back as records, a cleared mock lets a waiting request through, mocks end
//! with their session, and the policy is judged where a mock is added and where it answers.
//!
//! What a page got is read from `window.mocks`, which the fixture page keeps; what reached the
//! server, from the fixture server's counters.

use std::time::Duration;

use serde_json::{Value, json};
use tabwire_e2e::client::McpClient;
use tabwire_e2e::fixtures::json_body;
use tabwire_e2e::scenario::{CONNECT_LIMIT, OneBrowser};
use tabwire_e2e::wait::eventually;

use crate::policy::{Setup, origin};

const ITEMS: &str = r#"{"items":["mocked one","mocked two"]}"#;

/// Starts a fetch of `url` in the page and waits for the page's `done` counter to reach
/// `done`; returns the status and the body the page got.
async fn fetched(evaluate: impl AsyncFn(&str) -> Value, url: &str, done: u64) -> (u64, String) {
    evaluate(&format!("get({}), 0", json!(url))).await;
    eventually(
        &format!("the page's fetch of {url} to finish"),
        Duration::from_secs(60),
        || async {
            let state = evaluate("JSON.stringify(mocks)").await;
            let state: Value = serde_json::from_str(state.as_str()?).ok()?;
            (state["done"] == done).then(|| {
                (
                    state["status"].as_u64().unwrap_or(0),
                    state["last"].as_str().unwrap_or_default().to_owned(),
                )
            })
        },
    )
    .await
}

/// The records of a `mock_network {requests}` answer, as `outcome url` strings.
fn seen(data: &Value) -> Vec<String> {
    data["requests"]["records"]
        .as_array()
        .unwrap_or_else(|| panic!("no records in {data}"))
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["outcome"].as_str().unwrap(),
                r["url"].as_str().unwrap()
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fetch_gets_the_mocked_body_and_an_unmatched_one_reaches_the_server() {
    let setup = OneBrowser::on("Work", "mocks.html").await;
    let evaluate = async |expression: &str| setup.evaluate("mocks.html", expression).await;

    let added = setup
        .call(
            "mock_network",
            json!({"add": [{"urlPattern": "*/api/items*", "body": ITEMS}]}),
        )
        .await;
    let data = added.data();
    assert_eq!(data["added"], 1, "{data}");
    assert_eq!(data["active"], true, "{data}");
    assert_eq!(data["mocks"][0]["urlPattern"], "*/api/items*", "{data}");
    assert!(added.text.contains("*/api/items*"), "{}", added.text);

    // The page's fetch gets the mock's body (the server has no such route: it would be a 404).
    let (status, body) = fetched(evaluate, "/api/items?page=1", 1).await;
    assert_eq!((status, body.as_str()), (200, ITEMS));
    // An unmatched fetch goes to the server untouched.
    let (status, body) = fetched(evaluate, "/json?n=3", 2).await;
    assert_eq!((status, body), (200, json_body(3)));
    assert_eq!(setup.fixtures.json_hits(), 1);

    // What the mocks saw: the mocked request with its mock, the missed one.
    let read = setup.call("mock_network", json!({"requests": true})).await;
    let data = read.data();
    let records = seen(data);
    let api = setup.fixtures.url("api/items?page=1");
    let json = setup.fixtures.url("json?n=3");
    assert_eq!(
        records,
        [format!("mocked {api}"), format!("missed {json}")],
        "{data}"
    );
    assert_eq!(
        data["requests"]["records"][0]["mockId"],
        data["mocks"][0]["id"]
    );
    assert_eq!(data["requests"]["records"][0]["status"], 200);
    assert_eq!(data["mocks"][0]["hits"], 1, "{data}");
    assert!(
        read.text.contains(&format!("mocked GET {api}")),
        "{}",
        read.text
    );

    // A mock that waits, cleared while it waits: the request goes on to the server at once.
    let slow = setup
        .call(
            "mock_network",
            json!({"add": [{"urlPattern": "*/json?n=7", "body": "late", "delayMs": 30000}]}),
        )
        .await;
    assert_eq!(
        slow.data()["mocks"].as_array().unwrap().len(),
        2,
        "{}",
        slow.text
    );
    evaluate(&format!("get({}), 0", json!("/json?n=7"))).await;
    eventually(
        "the delayed request to be paused",
        CONNECT_LIMIT,
        || async {
            let read = setup
                .call("mock_network", json!({"requests": true, "filter": "n=7"}))
                .await;
            (!seen(read.data()).is_empty()).then_some(())
        },
    )
    .await;
    assert_eq!(setup.fixtures.json_hits(), 1, "the mock holds it");
    let cleared = setup.call("mock_network", json!({"clear": true})).await;
    assert_eq!(cleared.data()["cleared"], 2, "{}", cleared.text);
    assert_eq!(cleared.data()["mocks"], json!([]), "{}", cleared.text);
    let state = eventually(
        "the released request to finish",
        Duration::from_secs(20),
        || async {
            let state: Value =
                serde_json::from_str(evaluate("JSON.stringify(mocks)").await.as_str()?).ok()?;
            (state["done"] == 3).then_some(state)
        },
    )
    .await;
    assert_eq!(state["last"], json_body(7), "{state}");
    assert_eq!(setup.fixtures.json_hits(), 2);
    let read = setup
        .call("mock_network", json!({"requests": true, "filter": "n=7"}))
        .await;
    assert_eq!(
        seen(read.data()),
        [format!("passed {}", setup.fixtures.url("json?n=7"))]
    );

    // Bad mocks are refused before anything reaches the browser, with the reason.
    for (mock, reason) in [
        (json!({"urlPattern": "file:///etc/*"}), "must start with"),
        (json!({"urlPattern": "*", "status": 99}), "status 99"),
        (
            json!({"urlPattern": "*", "headers": {"Set-Cookie": "a=1"}}),
            "cannot be mocked",
        ),
        (
            json!({"urlPattern": "*", "body": "a", "bodyBase64": "YQ=="}),
            "more than one",
        ),
        (json!({"urlPattern": "*", "file": "/etc/passwd"}), "upload"),
    ] {
        let refused = setup.call("mock_network", json!({"add": [mock]})).await;
        assert!(refused.is_error, "{mock}: {}", refused.text);
        assert!(refused.text.contains(reason), "{mock}: {}", refused.text);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn mocks_end_with_the_session_that_added_them() {
    let setup = OneBrowser::on("Work", "mocks.html").await;
    let evaluate = async |expression: &str| setup.evaluate("mocks.html", expression).await;
    let other = McpClient::connect(&setup.hub).await;
    let added = other
        .call(
            "mock_network",
            json!({"add": [{"urlPattern": "*/json*", "body": "from the other session"}]}),
        )
        .await;
    assert_eq!(added.data()["added"], 1, "{}", added.text);
    // Another session's mocks are not this one's to list, but they answer the tab.
    let listed = setup.call("mock_network", json!({"list": true})).await;
    assert_eq!(listed.data()["mocks"], json!([]), "{}", listed.text);
    let (_, body) = fetched(evaluate, "/json?n=1", 1).await;
    assert_eq!(body, "from the other session");
    assert_eq!(setup.fixtures.json_hits(), 0);

    // The session ends: its mocks end with it, and the page's requests reach the server.
    drop(other);
    let mut done = 1;
    eventually(
        "the ended session's mock to stop answering",
        CONNECT_LIMIT,
        || {
            done += 1;
            let done = done;
            async move {
                let (_, body) = fetched(evaluate, "/json?n=2", done).await;
                (body == json_body(2)).then_some(())
            }
        },
    )
    .await;
    assert!(setup.fixtures.json_hits() >= 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_policy_is_judged_where_a_mock_is_added_and_where_it_answers() {
    // The other server's origin is denied by the operator.
    let setup = Setup::start("mocks.html", |_, other| {
        format!("[[rules]]\norigin = \"{other}\"\naccess = \"deny\"\n")
    })
    .await;
    let other = origin(&setup.other);
    let refused = setup
        .call(
            "mock_network",
            json!({"add": [{"urlPattern": format!("{other}/json*"), "body": "x"}]}),
        )
        .await;
    assert_eq!(refused.error_code(), "ORIGIN_BLOCKED", "{}", refused.text);

    // A wildcard mock answers only where agents may act: the denied origin's request goes to
    // its server untouched, and is recorded nowhere.
    let added = setup
        .call(
            "mock_network",
            json!({"add": [{"urlPattern": "*/json*", "body": "mocked"}]}),
        )
        .await;
    assert_eq!(added.data()["added"], 1, "{}", added.text);
    let evaluate = async |expression: &str| setup.evaluate("mocks.html", expression).await;
    let (_, body) = fetched(evaluate, "/json?n=1", 1).await;
    assert_eq!(body, "mocked");
    let denied_url = format!("{other}/json?n=2");
    fetched(evaluate, &denied_url, 2).await;
    assert_eq!(
        setup.other.json_hits(),
        1,
        "the denied origin's request reached its server"
    );
    let read = setup.call("mock_network", json!({"requests": true})).await;
    let records = seen(read.data());
    assert!(!records.iter().any(|r| r.contains(&other)), "{records:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_page_cannot_be_mocked() {
    let setup = Setup::start("mocks.html", |here, _| {
        format!("[[rules]]\norigin = \"{here}\"\naccess = \"read\"\n")
    })
    .await;
    let refused = setup
        .call(
            "mock_network",
            json!({"add": [{"urlPattern": "*/api/*", "body": "x"}]}),
        )
        .await;
    assert_eq!(refused.error_code(), "ORIGIN_BLOCKED", "{}", refused.text);
    // Reading what mocks saw is a read: allowed.
    let read = setup.call("mock_network", json!({"requests": true})).await;
    assert!(!read.is_error, "{}", read.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_agents_may_only_read_gets_no_mocked_answers() {
    // The other server's origin is read-only. A mock added on an allowed page answers a URL
    // agents may act on; once the tab shows the read-only page, that page's requests to the
    // same URL are not answered: a mock's answer is data that page acts on.
    let setup = Setup::start("mocks.html", |_, other| {
        format!("[[rules]]\norigin = \"{other}\"\naccess = \"read\"\n")
    })
    .await;
    let here = origin(&setup.fixtures);
    let added = setup
        .call(
            "mock_network",
            json!({"add": [{"urlPattern": format!("{here}/json*"), "body": "mocked"}]}),
        )
        .await;
    assert_eq!(added.data()["added"], 1, "{}", added.text);
    let evaluate = async |expression: &str| setup.evaluate("mocks.html", expression).await;
    let (_, body) = fetched(evaluate, "/json?n=1", 1).await;
    assert_eq!(body, "mocked");
    assert_eq!(setup.fixtures.json_hits(), 0);

    let read_only = setup.other.url("mocks.html");
    let navigated = setup.call("navigate_to", json!({"url": read_only})).await;
    assert!(!navigated.is_error, "{}", navigated.text);
    fetched(evaluate, &format!("{here}/json?n=2"), 1).await;
    assert_eq!(
        setup.fixtures.json_hits(),
        1,
        "the read-only page's request went to the server, unanswered by the mock"
    );
}
