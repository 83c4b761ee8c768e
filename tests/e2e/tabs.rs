//! Tab tools end to end in real Chromium (SPEC §3, §7): the active tab, switching and closing
//! by ID, URL or title (exactly one match, or the candidates), opening tabs, history, reloads and
//! the selected text.
//!
//! Extra tabs are opened and brought forward through DevTools, the way a person would; what
//! the pages did is read through DevTools too, independent of the tools under test.

use std::collections::BTreeSet;

use serde_json::json;
use tabwire_e2e::scenario::{
    CONNECT_LIMIT, OneBrowser, active_tabs, connected_browser, listed_tab, lists_tab, tab_of,
    tab_with,
};
use tabwire_e2e::scratch::Scratch;
use tabwire_e2e::{Browser, Fixtures, Hub, McpClient, eventually};

/// The ID of the tab `get_active_tab` reports.
async fn active_tab(setup: &OneBrowser) -> u64 {
    let reply = setup.call("get_active_tab", json!({})).await;
    tab_of(&reply)["tabId"]
        .as_u64()
        .unwrap_or_else(|| panic!("no tabId: {}", reply.structured))
}

/// The tab `id` as `list_tabs` shows it once it has loaded with `title`.
async fn tab_loaded(setup: &OneBrowser, id: u64, title: &str) -> serde_json::Value {
    listed_tab(
        &setup.client,
        json!({}),
        &format!("{title} to load"),
        |tab| tab["tabId"] == id && tab["status"] == "complete" && tab["title"] == title,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_active_tab_follows_switch_tab_by_url_title_and_id() {
    let setup = OneBrowser::on("Work", "tabs.html?name=One").await;
    let one = tab_with(&setup.call("list_tabs", json!({})).await, "name=One");
    let two = setup.open_tab("tabs.html?name=Two").await;
    setup.browser.activate_tab("name=One").await;
    eventually("tab One to be in front", CONNECT_LIMIT, || async {
        let active = active_tabs(&setup.call("list_tabs", json!({})).await);
        (active == [one]).then_some(())
    })
    .await;

    let front = setup.call("get_active_tab", json!({})).await;
    let tab = tab_of(&front);
    assert_eq!(tab["tabId"], one, "{tab}");
    assert_eq!(
        tab["url"],
        setup.fixtures.url("tabs.html?name=One"),
        "{tab}"
    );
    assert_eq!(tab["title"], "Tab One", "{tab}");
    assert_eq!(tab["active"], true, "{tab}");

    // By URL (a part of it).
    let switched = setup.call("switch_tab", json!({"url": "name=Two"})).await;
    let tab = tab_of(&switched);
    assert_eq!(tab["tabId"], two, "{tab}");
    assert_eq!(tab["active"], true, "{tab}");
    assert_eq!(active_tab(&setup).await, two);
    let tabs = setup.call("list_tabs", json!({})).await;
    assert_eq!(active_tabs(&tabs), [two], "{}", tabs.text);

    // By title, ignoring case.
    let switched = setup.call("switch_tab", json!({"title": "tab one"})).await;
    assert_eq!(tab_of(&switched)["tabId"], one, "{}", switched.structured);
    assert_eq!(active_tab(&setup).await, one);

    // By ID.
    setup.call("switch_tab", json!({"tabId": two})).await.data();
    assert_eq!(active_tab(&setup).await, two);
    let tabs = setup.call("list_tabs", json!({})).await;
    assert_eq!(active_tabs(&tabs), [two], "{}", tabs.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ambiguous_match_is_refused_with_the_candidates_and_changes_nothing() {
    let setup = OneBrowser::on("Work", "counter.html?profile=Alpha").await;
    let alpha = tab_with(&setup.call("list_tabs", json!({})).await, "profile=Alpha");
    let beta = setup.open_tab("counter.html?profile=Beta").await;
    let before = setup.call("list_tabs", json!({})).await;
    let active_before = active_tabs(&before);

    // "Counter Alpha" and "Counter Beta" both contain "counter"; both URLs contain
    // "counter.html".
    for (tool, by) in [
        ("switch_tab", json!({"title": "COUNTER"})),
        ("close_tab", json!({"title": "counter"})),
        ("switch_tab", json!({"url": "counter.html"})),
        ("close_tab", json!({"url": "counter.html"})),
    ] {
        let refused = setup.call(tool, by.clone()).await;
        assert_eq!(
            refused.error_code(),
            "AMBIGUOUS_MATCH",
            "{tool} {by}: {}",
            refused.text
        );
        let candidates = refused.error()["candidates"]
            .as_array()
            .unwrap_or_else(|| panic!("{tool} {by}: no candidates in {}", refused.structured));
        let ids: BTreeSet<u64> = candidates
            .iter()
            .map(|candidate| candidate["tabId"].as_u64().unwrap())
            .collect();
        assert_eq!(ids, BTreeSet::from([alpha, beta]), "{tool} {by}");
        for candidate in candidates {
            let title = candidate["title"].as_str().unwrap();
            let url = candidate["url"].as_str().unwrap();
            assert!(title.starts_with("Counter "), "{candidate}");
            assert!(url.contains("counter.html?profile="), "{candidate}");
        }
    }
    // Nothing was switched or closed.
    let after = setup.call("list_tabs", json!({})).await;
    assert!(
        lists_tab(&after, alpha) && lists_tab(&after, beta),
        "{}",
        after.text
    );
    assert_eq!(active_tabs(&after), active_before, "{}", after.text);

    // No match at all.
    for (tool, by) in [
        ("switch_tab", json!({"title": "No such title"})),
        ("close_tab", json!({"url": "nowhere.example"})),
    ] {
        let missing = setup.call(tool, by.clone()).await;
        assert_eq!(missing.error_code(), "TAB_NOT_FOUND", "{tool} {by}");
    }
    // Exactly one way of naming the tab.
    for by in [json!({}), json!({"tabId": alpha, "title": "Alpha"})] {
        let refused = setup.call("switch_tab", by.clone()).await;
        assert_eq!(refused.error_code(), "INVALID_ARGUMENT", "{by}");
    }
    let after = setup.call("list_tabs", json!({})).await;
    assert_eq!(active_tabs(&after), active_before, "{}", after.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_tab_closes_the_one_tab_named() {
    let setup = OneBrowser::on("Work", "tabs.html?name=Keep").await;
    let keep = tab_with(&setup.call("list_tabs", json!({})).await, "name=Keep");
    let doomed = setup.open_tab("counter.html?profile=Doomed").await;
    let other = setup.open_tab("counter.html?profile=Other").await;

    // By title, ignoring case.
    setup
        .call("close_tab", json!({"title": "counter doomed"}))
        .await
        .data();
    let tabs = setup.call("list_tabs", json!({})).await;
    assert!(!lists_tab(&tabs, doomed), "{}", tabs.text);
    assert!(
        lists_tab(&tabs, keep) && lists_tab(&tabs, other),
        "{}",
        tabs.text
    );

    // By ID.
    setup
        .call("close_tab", json!({"tabId": other}))
        .await
        .data();
    let tabs = setup.call("list_tabs", json!({})).await;
    assert!(!lists_tab(&tabs, other), "{}", tabs.text);
    assert!(lists_tab(&tabs, keep), "{}", tabs.text);

    // A closed tab is gone for every tool.
    let gone = setup.call("switch_tab", json!({"tabId": doomed})).await;
    assert_eq!(gone.error_code(), "TAB_NOT_FOUND", "{}", gone.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_tab_opens_a_fixture_page_in_front_or_behind() {
    let setup = OneBrowser::on("Work", "tabs.html?name=Start").await;
    let start = tab_with(&setup.call("list_tabs", json!({})).await, "name=Start");
    assert_eq!(active_tab(&setup).await, start);

    let url = setup.fixtures.url("counter.html?profile=New");
    let created = setup
        .call("create_tab", json!({"url": url, "active": true}))
        .await;
    let new = tab_of(&created)["tabId"]
        .as_u64()
        .unwrap_or_else(|| panic!("{}", created.structured));
    assert_ne!(new, start);
    let listed = tab_loaded(&setup, new, "Counter New").await;
    assert_eq!(listed["url"], url.as_str(), "{listed}");
    assert_eq!(active_tab(&setup).await, new);
    // The page really is there.
    assert_eq!(
        setup.evaluate("profile=New", "document.title").await,
        "Counter New"
    );

    // Behind: the tab in front stays in front.
    let url = setup.fixtures.url("counter.html?profile=Behind");
    let created = setup
        .call("create_tab", json!({"url": url, "active": false}))
        .await;
    let behind = tab_of(&created)["tabId"].as_u64().unwrap();
    let listed = tab_loaded(&setup, behind, "Counter Behind").await;
    assert_eq!(listed["active"], false, "{listed}");
    assert_eq!(active_tab(&setup).await, new);

    // URLs are checked before anything opens.
    let before = setup.call("list_tabs", json!({})).await.data()["tabs"]
        .as_array()
        .unwrap()
        .len();
    let refused = setup
        .call("create_tab", json!({"url": "javascript:alert(1)"}))
        .await;
    assert_eq!(refused.error_code(), "INVALID_ARGUMENT", "{}", refused.text);
    let after = setup.call("list_tabs", json!({})).await;
    assert_eq!(after.data()["tabs"].as_array().unwrap().len(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_back_and_go_forward_move_through_the_tabs_history() {
    let setup = OneBrowser::on("Work", "tabs.html?name=One").await;
    let (one, two) = (
        setup.fixtures.url("tabs.html?name=One"),
        setup.fixtures.url("tabs.html?name=Two"),
    );
    setup.call("navigate_to", json!({"url": two})).await.data();
    let search = || setup.evaluate("tabs.html", "location.search");
    assert_eq!(search().await, "?name=Two");

    let back = setup.call("go_back", json!({})).await;
    let tab = tab_of(&back);
    assert_eq!(tab["url"], one.as_str(), "{tab}");
    assert_eq!(search().await, "?name=One");
    assert_eq!(
        setup.evaluate("tabs.html", "document.title").await,
        "Tab One"
    );

    let forward = setup.call("go_forward", json!({})).await;
    let tab = tab_of(&forward);
    assert_eq!(tab["url"], two.as_str(), "{tab}");
    assert_eq!(search().await, "?name=Two");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_tab_loads_the_page_again() {
    let setup = OneBrowser::on("Work", "tabs.html").await;
    // The page counts its loads in the tab's sessionStorage; a mark on `window` is gone once a
    // new document replaced the old one.
    let loads = || {
        setup.evaluate(
            "tabs.html",
            "[Number(sessionStorage.getItem('loads')), typeof window.mark]",
        )
    };
    let mark = || setup.evaluate("tabs.html", "window.mark = 'old document'");
    mark().await;
    assert_eq!(loads().await, json!([1, "string"]));

    let reloaded = setup.call("reload_tab", json!({})).await;
    assert_eq!(
        tab_of(&reloaded)["url"],
        setup.fixtures.url("tabs.html"),
        "{}",
        reloaded.structured
    );
    assert_eq!(loads().await, json!([2, "undefined"]));

    mark().await;
    setup
        .call("reload_tab", json!({"bypassCache": true}))
        .await
        .data();
    assert_eq!(loads().await, json!([3, "undefined"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_selected_text_returns_the_selection_within_its_budget() {
    let setup = OneBrowser::on("Work", "tabs.html").await;
    let nothing = setup.call("get_selected_text", json!({})).await;
    assert_eq!(nothing.data()["text"], "", "{}", nothing.structured);

    // The user selects the paragraph.
    let selected = setup
        .evaluate(
            "tabs.html",
            "(() => { const range = document.createRange(); \
             range.selectNodeContents(document.getElementById('quote')); \
             const selection = getSelection(); selection.removeAllRanges(); \
             selection.addRange(range); return selection.toString(); })()",
        )
        .await;
    let selected = selected.as_str().unwrap().to_owned();
    assert!(selected.starts_with("The quick brown fox"), "{selected}");

    let read = setup.call("get_selected_text", json!({})).await;
    let data = read.data();
    assert_eq!(data["text"], selected.as_str(), "{data}");
    assert_eq!(
        data["totalChars"],
        selected.chars().count() as u64,
        "{data}"
    );

    let cut = setup
        .call("get_selected_text", json!({"maxChars": 10}))
        .await;
    let data = cut.data();
    let text = data["text"].as_str().unwrap();
    assert!(text.chars().count() <= 10, "{data}");
    assert!(selected.starts_with(text), "a prefix: {data}");
    assert_eq!(
        data["totalChars"],
        selected.chars().count() as u64,
        "{data}"
    );
}

/// Issue 23 §5: right after `create_tab {url}`, a snapshot or a click of the new tab (named by
/// its ID, no frame) answered `INVALID_ARGUMENT: Tab … has no frame 0` whenever a policy was in
/// force (it looks up the tab's page before anything runs, and a tab whose first page has not
/// been committed has no top frame). A tab that is still loading is no argument error: the call
/// waits for the tab's document within its deadline, and says `TAB_LOADING` (retryable) when
/// the deadline comes first. Repeated, on a page that arrives at once and on slow ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tab_still_loading_is_waited_for_not_an_invalid_argument() {
    let fixtures = Fixtures::serve().await;
    let dir = Scratch::new("loading");
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[[rules]]\norigin = \"https://bank.example\"\naccess = \"deny\"\n",
    )
    .unwrap();
    let hub = Hub::spawn_with_args(&["--policy", policy.to_str().unwrap()]);
    let _browser = Browser::launch(&hub, "Work", &fixtures.url("tabs.html?name=Start"));
    let client = McpClient::connect(&hub).await;
    connected_browser(&client, "Work").await;
    let new_tab = |page: String| {
        let client = &client;
        let url = fixtures.url(&page);
        async move {
            let created = client.call("create_tab", json!({ "url": url })).await;
            tab_of(&created)["tabId"]
                .as_u64()
                .unwrap_or_else(|| panic!("{}", created.structured))
        }
    };
    for round in 0..6 {
        let (page, heading) = if round % 2 == 0 {
            (format!("tabs.html?name=R{round}"), format!("Tab R{round}"))
        } else {
            (
                format!("slow?ms={}", 200 + round * 100),
                "Finally here".into(),
            )
        };
        let tab = new_tab(page.clone()).await;
        let snapshot = client
            .call("get_page_snapshot", json!({"tabId": tab}))
            .await;
        assert!(!snapshot.is_error, "round {round}: {}", snapshot.text);
        assert!(snapshot.text.contains(&heading), "{}", snapshot.text);

        let tab = new_tab(format!("{page}&click")).await;
        let click = client
            .call(
                "click_element",
                json!({"tabId": tab, "selector": "h1", "observe": false}),
            )
            .await;
        assert!(!click.is_error, "round {round}: {}", click.text);
        assert!(click.text.contains(&heading), "{}", click.text);
    }

    // A page that takes longer than the call may wait: a TAB error saying so, to retry.
    let tab = new_tab("slow?ms=5000".into()).await;
    let early = client
        .call(
            "click_element",
            json!({"tabId": tab, "selector": "h1", "timeoutMs": 600}),
        )
        .await;
    assert_eq!(early.error_code(), "TAB_LOADING", "{}", early.text);
    assert_eq!(early.error()["category"], "TAB", "{}", early.structured);
    assert_eq!(early.error()["retryable"], true, "{}", early.structured);
    assert!(!early.may_have_acted());
    let later = eventually("the slow page to arrive", CONNECT_LIMIT, || async {
        let click = client
            .call("click_element", json!({"tabId": tab, "selector": "h1"}))
            .await;
        (!click.is_error).then_some(click)
    })
    .await;
    assert!(later.text.contains("Finally here"), "{}", later.text);
}
