//! The audit log with the real hub and a real browser: every call is recorded once with its
//! tool, outcome and tab, typed text by its length only, and `tabwire-hub audit` reads it back.

use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use serde_json::{Value, json};
use tabwire_e2e::scenario::{OneBrowser, loaded_tab, ref_of};
use tabwire_e2e::wait::eventually;

/// The records `tabwire-hub audit ARGS` prints.
fn records(setup: &OneBrowser, args: &[&str]) -> Vec<Value> {
    setup
        .hub
        .audit_command(args)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

#[tokio::test]
async fn calls_are_recorded_without_what_was_typed() {
    let setup = OneBrowser::on("Audit", "form.html").await;
    let tab = loaded_tab(&setup.client, json!({}), &setup.fixtures.url("form.html")).await;
    let snapshot = setup.snapshot(json!({"tabId": tab})).await;
    let name = ref_of(&snapshot, "textbox \"Full name\"");
    let create = ref_of(&snapshot, "button \"Create account\"");
    let secret = "Tr0ub4dor&3-horse";
    setup
        .call(
            "type_text",
            json!({"selector": name, "text": secret, "tabId": tab}),
        )
        .await
        .data();
    setup
        .call("click_element", json!({"selector": create, "tabId": tab}))
        .await
        .data();
    let refused = setup
        .call(
            "type_text",
            json!({"selector": name, "text": 42, "tabId": tab}),
        )
        .await;
    assert_eq!(refused.error_code(), "INVALID_ARGUMENT");

    // The writer is a thread of its own: the records land shortly after the calls return.
    // Before them come the calls that set the scene (list_browsers, list_tabs…), once each.
    let expected = [
        "get_page_snapshot",
        "type_text",
        "click_element",
        "type_text",
    ];
    let all = eventually("the audit records", Duration::from_secs(10), || async {
        let all = records(&setup, &[]);
        let tools: Vec<&str> = all.iter().map(|r| r["tool"].as_str().unwrap()).collect();
        tools.ends_with(&expected).then_some(all)
    })
    .await;
    let all = all[all.len() - 4..].to_vec();
    let (typed, clicked, bad) = (&all[1], &all[2], &all[3]);
    for record in [typed, clicked, bad] {
        assert_eq!(record["account"], "local");
        assert_eq!(record["tokenId"], "local");
        assert_eq!(record["tabId"], tab, "{record}");
        assert!(record["session"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(record["client"].as_str().is_some(), "{record}");
        assert!(record["durationMs"].as_f64().is_some());
        assert!(record["time"].as_str().unwrap().ends_with('Z'));
    }
    assert_eq!(typed["outcome"], "ok");
    assert_eq!(typed["textLength"], secret.chars().count());
    assert_eq!(typed["actionMayHaveOccurred"], false);
    assert!(typed["browserId"].as_str().is_some(), "{typed}");
    assert_eq!(clicked["outcome"], "ok");
    assert_eq!(clicked["browserId"], typed["browserId"]);
    assert!(clicked.get("textLength").is_none());
    assert_eq!(bad["outcome"], "INVALID_ARGUMENT");
    assert!(bad.get("browserId").is_none(), "refused before routing");

    let file = setup.hub.state_dir.join("audit").join("local.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains(secret), "{text}");
    assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o600);
    let dir = file.parent().unwrap();
    assert_eq!(std::fs::metadata(dir).unwrap().mode() & 0o777, 0o700);

    // --since the typing: the snapshot before it is left out.
    let since = typed["time"].as_str().unwrap();
    let later = records(&setup, &["--since", since, "--account", "local"]);
    assert_eq!(later, all[1..].to_vec());
    assert!(records(&setup, &["--since", "2999-01-01"]).is_empty());
    assert!(records(&setup, &["--account", "someone-else"]).is_empty());

    // --follow prints what is there, then each new call as it is recorded.
    let follower = setup.hub.audit_follow(&["--since", since]);
    let next = || {
        let line = follower
            .lines
            .recv_timeout(Duration::from_secs(10))
            .expect("audit --follow printed a line");
        serde_json::from_str::<Value>(&line).expect("a JSON line")
    };
    let printed: Vec<Value> = (0..3).map(|_| next()).collect();
    assert_eq!(printed, all[1..].to_vec());
    setup.call("list_tabs", json!({})).await.data();
    assert_eq!(next()["tool"], "list_tabs");
}
