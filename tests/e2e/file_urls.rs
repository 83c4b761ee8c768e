//! `file://` in local mode (issue 23 §1): a file URL reads the disk of the computer the browser
//! runs on — the user's own, `~/.ssh` included — so a local hub refuses them too unless its
//! operator passes `--allow-file-urls`: an agent cannot open one (`FORBIDDEN`, naming the flag)
//! nor read a file a person opened (`ORIGIN_BLOCKED`, judged by the browser at the point of
//! effect); with the flag, it can.

use serde_json::json;
use tabwire_e2e::scenario::{connected_browser, loaded_tab};
use tabwire_e2e::scratch::Scratch;
use tabwire_e2e::{Browser, Fixtures, Hub, McpClient};

/// A file standing in for a private key, and its `file://` URL.
fn secret_file(dir: &Scratch) -> String {
    let path = dir.path().join("id_rsa.txt");
    std::fs::write(&path, "PRIVATE KEY 7f3a9c do not leak\n").unwrap();
    format!("file://{}", path.display())
}

/// A hub started with `args`, a browser on the login page, and a session that sees it.
async fn start(args: &[&str]) -> (Fixtures, Hub, Browser, McpClient) {
    let fixtures = Fixtures::serve().await;
    let hub = Hub::spawn_with_args(args);
    let browser = Browser::launch(&hub, "Files", &fixtures.url("login.html"));
    let client = McpClient::connect(&hub).await;
    connected_browser(&client, "Files").await;
    loaded_tab(&client, json!({}), &fixtures.url("login.html")).await;
    (fixtures, hub, browser, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_hub_refuses_file_urls_to_agents_unless_its_operator_opens_them() {
    let dir = Scratch::new("file-urls");
    let url = secret_file(&dir);
    let (_fixtures, _hub, browser, client) = start(&[]).await;
    for (tool, args) in [
        ("navigate_to", json!({ "url": url })),
        ("create_tab", json!({ "url": url })),
        (
            "run_browser_actions",
            json!({"steps": [{"kind": "navigate", "url": url}]}),
        ),
    ] {
        let refused = client.call(tool, args).await;
        assert_eq!(
            refused.error_code(),
            "FORBIDDEN",
            "{tool}: {}",
            refused.text
        );
        assert!(
            refused.text.contains("--allow-file-urls"),
            "{}",
            refused.text
        );
    }
    // A file a person opened is there, but nothing of it reaches the agent.
    browser.open_tab(&url).await;
    let tab = tabwire_e2e::eventually(
        "the person's file tab to be listed",
        std::time::Duration::from_secs(20),
        || async {
            let tabs = client.call("list_tabs", json!({})).await;
            let listed = tabs.data()["tabs"].as_array()?.clone();
            (listed.len() == 2).then(|| {
                listed
                    .iter()
                    .find(|tab| !tab["url"].as_str().is_some_and(|u| u.starts_with("http")))
                    .cloned()
            })?
        },
    )
    .await;
    assert!(
        !tab.to_string().contains("id_rsa"),
        "the tab's URL and title are hidden: {tab}"
    );
    let tab_id = tab["tabId"].as_u64().unwrap();
    for (tool, args) in [
        (
            "get_page_content",
            json!({"tabId": tab_id, "format": "text"}),
        ),
        ("get_page_snapshot", json!({"tabId": tab_id})),
        ("take_screenshot", json!({"tabId": tab_id})),
    ] {
        let read = client.call(tool, args).await;
        assert_eq!(read.error_code(), "ORIGIN_BLOCKED", "{tool}: {}", read.text);
        assert!(!read.text.contains("PRIVATE KEY"), "{tool}: {}", read.text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_allow_file_urls_a_local_agent_opens_and_reads_files() {
    let dir = Scratch::new("file-urls-open");
    let url = secret_file(&dir);
    let (_fixtures, _hub, _browser, client) = start(&["--allow-file-urls"]).await;
    client
        .call("navigate_to", json!({ "url": url }))
        .await
        .data();
    let content = client
        .call("get_page_content", json!({"format": "text"}))
        .await;
    assert!(
        content.text.contains("PRIVATE KEY 7f3a9c"),
        "{}",
        content.text
    );
}
