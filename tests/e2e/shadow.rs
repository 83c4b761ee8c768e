//! Open shadow roots in every read, end to end in real Chromium, on a to-do list built from web
//! components (shadow-content.html): the app's open shadow root holds the list, each item's own
//! open shadow root its checkbox and title; two light children are slotted in the other order
//! than they are written, one is never slotted; a closed shadow root holds words no read may
//! show; a PIN field inside the shadow root has a value attribute no read may show.

use serde_json::json;
use tabwire_e2e::Reply;
use tabwire_e2e::scenario::{OneBrowser, ref_of};

const PAGE: &str = "shadow-content.html";
/// In reading order: the header slotted first though written second, the items inside nested
/// open shadow roots, the footer slotted last though written first.
const IN_ORDER: [&str; 5] = [
    "Things to buy this week",
    "Buy oat milk",
    "Return library books",
    "Water the basil",
    "2 items left",
];
/// What the page holds but never shows, or must never leave it: a light child no slot takes,
/// a filled slot's fallback, the closed root's words, the PIN.
const NEVER: [&str; 4] = [
    "Never slotted, never shown",
    "no count",
    "Closed root words stay hidden",
    "pin-4417-secret",
];

/// The text a read returned: the model's text and the structured data.
fn everything(reply: &Reply) -> String {
    format!("{}{}", reply.text, reply.structured)
}

/// Fails unless `text` shows each of `IN_ORDER` once, in that order, and nothing of `NEVER`.
fn assert_shown_in_order(what: &str, text: &str) {
    let mut from = 0;
    for shown in IN_ORDER {
        assert_eq!(
            text.matches(shown).count(),
            1,
            "{what}: {shown:?} once in:\n{text}"
        );
        let at = text.find(shown).unwrap();
        assert!(at >= from, "{what}: {shown:?} out of order in:\n{text}");
        from = at;
    }
    for hidden in NEVER {
        assert!(!text.contains(hidden), "{what} shows {hidden:?}:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_content_as_text_reads_open_shadow_roots_as_rendered() {
    let setup = OneBrowser::on("Work", PAGE).await;
    let content = setup.call("get_page_content", json!({})).await;
    let text = content.data()["content"].as_str().unwrap().to_string();
    assert_shown_in_order("text", &text);
    assert!(!everything(&content).contains("pin-4417-secret"));
    // A field's value is no text, in a shadow root as anywhere.
    assert!(!text.contains("draft item"), "{text}");
    assert!(text.starts_with("Groceries\n"), "{text}");
    assert!(text.ends_with("End of page."), "{text}");

    // Scoped to one item, found the way an agent finds it: by its title in a snapshot.
    let snapshot = setup
        .snapshot(json!({ "query": "Return library books" }))
        .await;
    let item = ref_of(&snapshot, "Return library books");
    let scoped = setup
        .call("get_page_content", json!({ "selector": item }))
        .await;
    assert_eq!(
        scoped.data()["content"].as_str().map(str::trim),
        Some("Return library books Delete"),
        "{}",
        scoped.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_content_as_aria_and_snapshot_queries_reach_into_nested_shadow_roots() {
    let setup = OneBrowser::on("Work", PAGE).await;
    let aria = setup
        .call("get_page_content", json!({ "format": "aria" }))
        .await;
    assert_shown_in_order("aria", &aria.text);
    assert!(!everything(&aria).contains("pin-4417-secret"));
    assert!(
        aria.text.contains("\"Sync PIN\" = \"••••\""),
        "the PIN is listed, redacted:\n{}",
        aria.text
    );

    // A title inside the inner shadow root is found by a query, with its item.
    let found = setup.snapshot(json!({ "query": "Water the basil" })).await;
    assert!(found.text.contains("Water the basil"), "{}", found.text);
    assert!(!found.text.contains("Buy oat milk"), "{}", found.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_content_as_html_writes_open_shadow_roots_as_declarative_templates() {
    let setup = OneBrowser::on("Work", PAGE).await;
    let html = setup
        .call("get_page_content", json!({ "format": "html" }))
        .await;
    let markup = html.data()["content"].as_str().unwrap().to_string();
    // Each open root, nested ones too, as the template Chrome's getHTML would write.
    assert_eq!(
        markup.matches("<template shadowrootmode=\"open\">").count(),
        4,
        "{markup}"
    );
    assert!(
        markup.contains("<span class=\"title\">Water the basil</span>"),
        "{markup}"
    );
    // Markup is the page as written: slotted children stay in their host's light DOM.
    assert!(
        markup.contains("<p>Never slotted, never shown</p>"),
        "{markup}"
    );
    // The PIN field is there without its value; an ordinary field keeps its own.
    assert!(
        markup.contains("<label>Sync PIN <input type=\"password\"></label>"),
        "{markup}"
    );
    assert!(markup.contains("value=\"draft item\""), "{markup}");
    assert!(!everything(&html).contains("pin-4417-secret"));
    // The closed root is not written (its words are in the page's script, which is markup).
    assert!(markup.contains("<closed-note></closed-note>"), "{markup}");
}
