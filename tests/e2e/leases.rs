//! Tab leases (issue 14 §3) with two real agents' sessions on one real browser: the first to
//! change a tab holds it, the other's changing calls get `TAB_LEASED` naming the holder while
//! its reads work, and the lease lapses when its session ends, with `release_tab`, after the
//! idle time, and when the person drags the tab out of its group. Tab groups are read (and,
//! standing in for the person, changed) through the extension's popup page over DevTools.

use serde_json::{Value, json};
use tabwire_e2e::browser::Browser;
use tabwire_e2e::client::{Listener, McpClient, Reply};
use tabwire_e2e::fixtures::Fixtures;
use tabwire_e2e::hosted::{Hosted, Role, claims_of};
use tabwire_e2e::hub::Hub;
use tabwire_e2e::scenario::{
    CONNECT_LIMIT, POPUP, active_tabs, connected_browser, loaded_tab, ref_of,
};
use tabwire_e2e::wait::eventually;

/// A hub started with `flags`, one browser on the board page, and the popup page to look at
/// tab groups through.
struct Board {
    fixtures: Fixtures,
    hub: Hub,
    browser: Browser,
    popup: String,
}

impl Board {
    async fn open(flags: &[&str]) -> Board {
        let fixtures = Fixtures::serve().await;
        let hub = Hub::spawn_with_args(flags);
        let browser = Browser::launch(&hub, "Shared", &fixtures.url("board.html"));
        let popup = browser.open_tab(POPUP).await;
        Board {
            fixtures,
            hub,
            browser,
            popup,
        }
    }

    /// A new agent session calling itself `name`, once it sees the browser and the board.
    async fn agent(&self, name: &str) -> McpClient {
        let client = McpClient::connect_as(&self.hub, Listener::named(name)).await;
        connected_browser(&client, "Shared").await;
        client
    }

    /// The board's tab.
    async fn board_tab(&self, client: &McpClient) -> u64 {
        loaded_tab(client, json!({}), &self.fixtures.url("board.html")).await
    }

    /// The title of the tab group `tab` is in, or `None` when it is in none.
    async fn group_of(&self, tab: u64) -> Option<String> {
        let title = Browser::evaluate(
            &self.popup,
            &format!(
                "chrome.tabs.get({tab}).then((tab) => tab.groupId === -1 ? null : \
                 chrome.tabGroups.get(tab.groupId).then((group) => group.title))"
            ),
        )
        .await;
        title.as_str().map(str::to_owned)
    }

    /// Waits until `tab` is in the group titled `title` (`None`: in no group).
    async fn grouped(&self, tab: u64, title: Option<&str>) {
        eventually(
            &format!("tab {tab} in group {title:?}"),
            CONNECT_LIMIT,
            || async { (self.group_of(tab).await.as_deref() == title).then_some(()) },
        )
        .await;
    }

    /// Every tab group's title.
    async fn group_titles(&self) -> Vec<String> {
        let titles = Browser::evaluate(
            &self.popup,
            "chrome.tabGroups.query({}).then((groups) => groups.map((g) => g.title).sort())",
        )
        .await;
        serde_json::from_value(titles).unwrap()
    }
}

/// Clicks the board's "Add note" button in `tab`, found by its role and name in a snapshot.
async fn add_note(client: &McpClient, tab: u64) -> Reply {
    let snapshot = client
        .call("get_page_snapshot", json!({"tabId": tab}))
        .await;
    let add = ref_of(&snapshot, "button \"Add note\"");
    client
        .call(
            "click_element",
            json!({"selector": add, "tabId": tab, "observe": false}),
        )
        .await
}

/// Asserts `reply` is `TAB_LEASED` naming `holder`, with a lapse time, saying reads work.
fn refused_for(reply: &Reply, holder: &str) {
    assert_eq!(reply.error_code(), "TAB_LEASED", "{}", reply.text);
    let message = reply.error()["message"].as_str().unwrap();
    assert!(message.contains(holder), "{message}");
    assert!(message.contains(" s more"), "{message}");
    assert!(message.contains("Reads"), "{message}");
    assert_eq!(reply.error()["retryable"], false, "{}", reply.structured);
    assert!(!reply.may_have_acted());
}

/// How many notes the board shows, read by the test's own eyes.
async fn notes(board: &Board) -> Value {
    board
        .browser
        .evaluate_in("board.html", "document.getElementById('notes').textContent")
        .await
}

#[tokio::test]
async fn a_second_agent_reads_but_cannot_change_the_first_agents_tab_until_it_lets_go() {
    let board = Board::open(&[]).await;
    let alpha = board.agent("Agent Alpha").await;
    let beta = board.agent("Agent Beta").await;
    let tab = board.board_tab(&alpha).await;

    let shown = active_tabs(&alpha.call("list_tabs", json!({})).await);
    add_note(&alpha, tab).await.data();
    board.grouped(tab, Some("Agent Alpha · 1")).await;
    assert_eq!(
        active_tabs(&alpha.call("list_tabs", json!({})).await),
        shown,
        "leasing and grouping a background tab selects nothing"
    );

    // Beta reads the tab, but cannot change it in any way.
    let snapshot = beta.call("get_page_snapshot", json!({"tabId": tab})).await;
    assert!(snapshot.text.contains("Notes: 1"), "{}", snapshot.text);
    refused_for(&add_note(&beta, tab).await, "Agent Alpha · 1");
    let navigate = beta
        .call(
            "navigate_to",
            json!({"url": board.fixtures.url("counter.html"), "tabId": tab}),
        )
        .await;
    refused_for(&navigate, "Agent Alpha · 1");
    refused_for(
        &beta.call("reload_tab", json!({"tabId": tab})).await,
        "Agent Alpha · 1",
    );
    refused_for(
        &beta.call("close_tab", json!({"tabId": tab})).await,
        "Agent Alpha · 1",
    );
    let release = beta.call("release_tab", json!({"tabId": tab})).await;
    assert_eq!(release.error_code(), "TAB_LEASED");
    assert_eq!(notes(&board).await, "Notes: 1", "nothing Beta did happened");

    // Alpha lets go: the tab leaves the group, and Beta's click goes through and leases it.
    let released = alpha.call("release_tab", json!({"tabId": tab})).await;
    assert_eq!(released.data(), &json!({"tabId": tab, "released": true}));
    board.grouped(tab, None).await;
    let again = alpha.call("release_tab", json!({"tabId": tab})).await;
    assert_eq!(again.data()["released"], false, "{}", again.text);
    add_note(&beta, tab).await.data();
    assert_eq!(notes(&board).await, "Notes: 2");
    board.grouped(tab, Some("Agent Beta · 1")).await;
    refused_for(&add_note(&alpha, tab).await, "Agent Beta · 1");

    // Beta's session ends: its lease lapses with it, and Alpha may change the tab again.
    drop(beta);
    board.grouped(tab, None).await;
    add_note(&alpha, tab).await.data();
    assert_eq!(notes(&board).await, "Notes: 3");
    assert_eq!(board.group_titles().await, ["Agent Alpha · 1"]);

    // The audit log records the refusals like any other outcome.
    eventually("TAB_LEASED in the audit log", CONNECT_LIMIT, || async {
        let log = board.hub.audit_command(&[]);
        log.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .any(|record| {
                record["tool"] == "click_element"
                    && record["outcome"] == "TAB_LEASED"
                    && record["tabId"] == tab
            })
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn tabs_an_agent_opens_are_its_own_until_the_person_drags_them_out() {
    let board = Board::open(&[]).await;
    let alpha = board.agent("Agent Alpha").await;
    let beta = board.agent("Agent Beta").await;
    let board_tab = board.board_tab(&alpha).await;

    // A tab made with create_tab is leased to its maker from the start, without being shown.
    let url = board.fixtures.url("counter.html?profile=made");
    let created = alpha.call("create_tab", json!({"url": url})).await;
    let made = created.data()["tabId"].as_u64().unwrap();
    assert_eq!(created.data()["active"], false, "{}", created.text);
    loaded_tab(&alpha, json!({}), &url).await;
    board.grouped(made, Some("Agent Alpha · 1")).await;
    let snapshot = beta.call("get_page_snapshot", json!({"tabId": made})).await;
    let increment = ref_of(&snapshot, "button \"Increment\"");
    let click = beta
        .call(
            "click_element",
            json!({"selector": increment, "tabId": made}),
        )
        .await;
    refused_for(&click, "Agent Alpha · 1");

    // A tab a click of Alpha's opened is Alpha's too. (The board is brought to the front first:
    // Chromium names the active tab as the opener of a tab that a click in a background tab
    // opens, and tabwire goes by the opener.)
    alpha
        .call("switch_tab", json!({"tabId": board_tab}))
        .await
        .data();
    let snapshot = alpha
        .call("get_page_snapshot", json!({"tabId": board_tab}))
        .await;
    let link = ref_of(&snapshot, "Open the help page");
    alpha
        .call(
            "click_element",
            json!({"selector": link, "tabId": board_tab}),
        )
        .await
        .data();
    let help_url = board.fixtures.url("counter.html?profile=help");
    let opened = loaded_tab(&alpha, json!({}), &help_url).await;
    board.grouped(opened, Some("Agent Alpha · 1")).await;
    let snapshot = beta
        .call("get_page_snapshot", json!({"tabId": opened}))
        .await;
    let help_button = ref_of(&snapshot, "button \"Increment\"");
    let click = beta
        .call(
            "click_element",
            json!({"selector": help_button, "tabId": opened}),
        )
        .await;
    refused_for(&click, "Agent Alpha · 1");
    board.grouped(board_tab, Some("Agent Alpha · 1")).await;
    assert_eq!(
        board.group_titles().await,
        ["Agent Alpha · 1"],
        "one group per holder and window"
    );

    // The person drags the made tab out of the group: Alpha's lease on it ends, Beta may act.
    Browser::evaluate(&board.popup, &format!("chrome.tabs.ungroup({made})")).await;
    eventually(
        "Beta's click once the tab left the group",
        CONNECT_LIMIT,
        || async {
            let click = beta
                .call(
                    "click_element",
                    json!({"selector": increment, "tabId": made, "observe": false}),
                )
                .await;
            (!click.is_error).then_some(())
        },
    )
    .await;
    board.grouped(made, Some("Agent Beta · 1")).await;
    // The tabs still in Alpha's group stay Alpha's.
    refused_for(&add_note(&beta, board_tab).await, "Agent Alpha · 1");
}

#[tokio::test]
async fn an_idle_lease_lapses_on_its_own() {
    let board = Board::open(&["--lease-idle", "2"]).await;
    let alpha = board.agent("Agent Alpha").await;
    let beta = board.agent("Agent Beta").await;
    let tab = board.board_tab(&alpha).await;

    add_note(&alpha, tab).await.data();
    let refused = add_note(&beta, tab).await;
    refused_for(&refused, "Agent Alpha · 1");
    // Alpha does nothing more: its lease lapses and the tab leaves its group.
    board.grouped(tab, None).await;
    add_note(&beta, tab).await.data();
    board.grouped(tab, Some("Agent Beta · 1")).await;
    assert_eq!(notes(&board).await, "Notes: 2");
    // Reads never lease: Alpha's snapshot does not take the tab back.
    alpha
        .call("get_page_snapshot", json!({"tabId": tab}))
        .await
        .data();
    refused_for(&add_note(&alpha, tab).await, "Agent Beta · 1");
}

/// Hosted mode: an HTTP session's leases lapse when the session is closed because its token was
/// revoked, and a client without a session (per-request MCP) is one holder across its requests.
#[tokio::test]
async fn hosted_sessions_and_sessionless_clients_hold_tabs_too() {
    let fixtures = Fixtures::serve().await;
    let hosted = Hosted::start();
    let url = fixtures.url("board.html");
    let _chrome = hosted.launch_browser(&hosted.issue("team", Role::Browser), "Shared", &url);
    let first_token = hosted.issue("team", Role::Agent);
    let first = hosted.session(&first_token).await;
    let second = hosted.session(&hosted.issue("team", Role::Agent)).await;
    connected_browser(&first, "Shared").await;
    let tab = loaded_tab(&first, json!({}), &url).await;

    add_note(&first, tab).await.data();
    let refused = add_note(&second, tab).await;
    assert_eq!(refused.error_code(), "TAB_LEASED", "{}", refused.text);
    let label = refused.error()["message"].as_str().unwrap().to_owned();
    assert!(label.contains("· 1"), "the first session's label: {label}");

    // The first token is revoked: the hub closes its session, and the session's lease ends.
    hosted.revoke(&claims_of(&first_token).jti);
    eventually("the second session's click", CONNECT_LIMIT, || async {
        (!add_note(&second, tab).await.is_error).then_some(())
    })
    .await;

    // A client without a session keeps what it leased from one request to the next.
    let sessionless_token = hosted.issue("team", Role::Agent);
    let sessionless = hosted.stateless_under_prefix(&sessionless_token).await;
    let other = board_tab_of(&sessionless, &fixtures).await;
    let created = sessionless
        .call("create_tab", json!({"url": fixtures.url("board.html?own")}))
        .await;
    let own = created.data()["tabId"].as_u64().unwrap();
    loaded_tab(&sessionless, json!({}), &fixtures.url("board.html?own")).await;
    add_note(&sessionless, own).await.data();
    add_note(&sessionless, own).await.data();
    assert_eq!(add_note(&second, own).await.error_code(), "TAB_LEASED");
    assert_eq!(
        add_note(&sessionless, other).await.error_code(),
        "TAB_LEASED",
        "the second session still holds the board"
    );
}

/// The board's tab as `client` lists it.
async fn board_tab_of(client: &McpClient, fixtures: &Fixtures) -> u64 {
    loaded_tab(client, json!({}), &fixtures.url("board.html")).await
}

/// The extension's worker stops (Chrome stopped or lost it): the leases die with it, and the
/// new worker takes the tabs out of the groups the old one left.
#[tokio::test]
async fn a_new_worker_ungroups_what_the_old_one_left() {
    let mut board = Board::open(&[]).await;
    let alpha = board.agent("Agent Alpha").await;
    let tab = board.board_tab(&alpha).await;
    add_note(&alpha, tab).await.data();
    board.grouped(tab, Some("Agent Alpha · 1")).await;

    board.browser.stop_service_worker().await;
    // The popup wakes a new worker.
    board.popup = board.browser.open_tab(POPUP).await;
    board.grouped(tab, None).await;
    // Once the extension is connected again, the tab is free, and Alpha's next change leases it
    // anew.
    eventually(
        "Alpha's click once the browser is back",
        CONNECT_LIMIT,
        || async {
            let snapshot = alpha.call("get_page_snapshot", json!({"tabId": tab})).await;
            if snapshot.is_error {
                return None;
            }
            let add = ref_of(&snapshot, "button \"Add note\"");
            let click = alpha
                .call(
                    "click_element",
                    json!({"selector": add, "tabId": tab, "observe": false}),
                )
                .await;
            (!click.is_error).then_some(())
        },
    )
    .await;
    board.grouped(tab, Some("Agent Alpha · 1")).await;
}
