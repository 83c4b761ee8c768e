//! What the model reads (issue 23 §2): a client that asks for nothing (as Claude Code, VS Code
//! and Cursor ask for nothing) gets each result's text alone, so under either client rule
//! (`tabwire_e2e::model`) the model reads page text between the fence lines and nothing bulkier
//! than the text: snapshots, page content, errors the browser wrote, and a device's screen. A
//! client that asks for the envelope (the CLI, the tests, SDK users) still gets it — and the
//! same check shows why no model should read it.

use serde_json::{Value, json};
use tabwire_e2e::client::{fence_id, text_and_images};
use tabwire_e2e::device::{Android, PIXEL_ID, Phone, Phones, listed_device};
use tabwire_e2e::model::{ClientRule, model_sees, only_inside_the_fence};
use tabwire_e2e::scenario::OneBrowser;
use tabwire_e2e::{Hub, Listener, McpClient};

/// `tool(args)` as a model's client receives it: under both rules the model reads exactly the
/// text, its page text (`needle`) inside the fence. Returns the text's size.
async fn model_reads_the_fenced_text(
    client: &McpClient,
    tool: &str,
    args: Value,
    needle: &str,
) -> usize {
    let result = client.call_raw(tool, args).await;
    assert!(
        result.structured_content.is_none(),
        "{tool}: no envelope for a client that did not ask: {result:?}"
    );
    let (text, _) = text_and_images(&result);
    assert!(
        fence_id(&text).is_some(),
        "{tool}: page text is fenced:\n{text}"
    );
    for rule in ClientRule::ALL {
        let seen = model_sees(&result, rule);
        assert!(
            only_inside_the_fence(&seen, needle),
            "{tool} under {rule:?}: {needle:?} outside the fence:\n{seen}"
        );
        assert_eq!(
            seen.len(),
            text.len(),
            "{tool} under {rule:?}: the text alone"
        );
    }
    text.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_models_client_reads_fenced_text_and_only_an_asking_client_gets_the_envelope() {
    let setup = OneBrowser::on("Reader", "article.html").await;
    let model = McpClient::connect_as(&setup.hub, Listener::model_client("claude-code")).await;

    let snapshot =
        model_reads_the_fenced_text(&model, "get_page_snapshot", json!({}), "A long article").await;
    let content = model_reads_the_fenced_text(
        &model,
        "get_page_content",
        json!({"format": "text", "maxChars": 4000}),
        "Section 1",
    )
    .await;
    // An error the browser wrote (it names the page's element): code first, readable, fenced.
    let covered = model
        .call_raw(
            "click_element",
            json!({"selector": "#no-such-element", "timeoutMs": 300}),
        )
        .await;
    assert_eq!(covered.is_error, Some(true));
    assert!(covered.structured_content.is_none(), "{covered:?}");
    for rule in ClientRule::ALL {
        let seen = model_sees(&covered, rule);
        assert_eq!(
            leading_code(&seen),
            "SELECTOR_NOT_FOUND",
            "{rule:?}: {seen}"
        );
        assert!(only_inside_the_fence(&seen, "#no-such-element"), "{seen}");
    }
    // A hub's own error has no page text and no fence: the code leads the text.
    let missing = model
        .call_raw("switch_tab", json!({"tabId": 999_999}))
        .await;
    for rule in ClientRule::ALL {
        let seen = model_sees(&missing, rule);
        assert_eq!(leading_code(&seen), "TAB_NOT_FOUND", "{rule:?}: {seen}");
    }

    // The same snapshot for a client that asked for the envelope: the machine contract is
    // there, and a structured-first client would hand its model the page text unfenced (the
    // reason nothing else gets it).
    let envelope = setup.client.call_raw("get_page_snapshot", json!({})).await;
    let structured = envelope
        .structured_content
        .as_ref()
        .expect("the envelope for a client that asked");
    assert_eq!(structured["ok"], true);
    let bulk = model_sees(&envelope, ClientRule::StructuredFirst);
    assert!(
        !only_inside_the_fence(&bulk, "A long article"),
        "an envelope read first shows page text outside any fence"
    );
    eprintln!(
        "what the model reads: snapshot {snapshot} B of text (the envelope's JSON: {} B), page \
         content {content} B",
        bulk.len()
    );
}

#[tokio::test]
async fn a_models_client_reads_a_devices_screen_fenced() {
    let phones = Phones::new();
    phones.attach(Phone::pixel("emulator-5554").showing("login.xml"));
    let hub = Hub::spawn();
    let _android = Android::local(&hub, &phones, &[]);
    let lister = McpClient::connect(&hub).await;
    listed_device(&lister, PIXEL_ID, true).await;
    let model = McpClient::connect_as(&hub, Listener::model_client("claude-code")).await;
    model_reads_the_fenced_text(&model, "device_snapshot", json!({}), "LOGIN").await;
    // A device's error: the code readable, no envelope.
    let stale = model.call_raw("device_tap", json!({"ref": "@d999"})).await;
    assert_eq!(stale.is_error, Some(true));
    assert!(stale.structured_content.is_none());
    for rule in ClientRule::ALL {
        let seen = model_sees(&stale, rule);
        assert_eq!(leading_code(&seen), "STALE_REF", "{rule:?}: {seen}");
    }
}

/// The error code an error's text starts with (after its fence line, if the browser or device
/// wrote the message).
fn leading_code(text: &str) -> &str {
    let first = text
        .lines()
        .find(|line| !line.starts_with(tabwire_e2e::client::FENCE_MARK))
        .unwrap_or_default();
    first.split(':').next().unwrap_or_default()
}
