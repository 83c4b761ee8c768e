//! The observation engine, end to end in real Chromium: accessible names, ref stability and
//! rebinding, deltas, budgets and paging, queries, frames (cross-origin included), content
//! formats, redaction of secret fields (password, PIN and one-time code fields, however shown)
//! in every output, and commit fencing.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::json;
use tabwire_e2e::Reply;
use tabwire_e2e::scenario::{OneBrowser, element_state, ref_of};
use tabwire_protocol::REDACTED;

/// The lines of a snapshot after its header.
fn lines(reply: &Reply) -> Vec<&str> {
    reply.text.lines().skip(1).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accessible_names_follow_the_name_computation() {
    let setup = OneBrowser::on("Work", "names.html").await;
    let snapshot = setup.snapshot(json!({})).await;
    for expected in [
        "heading[3] \"Level three heading\"",
        "textbox \"Billing address\"",      // aria-labelledby chain
        "textbox \"Search the catalogue\"", // labelledby a hidden element
        "textbox \"City\" [required]",      // <label for>
        "checkbox \"Subscribe to news\" [checked]", // wrapping label
        "button \"Save draft\"",            // name from content
        "button \"Close dialog\"",          // aria-label over content
        "link \"Home page\" -> /home",      // img alt inside a link
        "textbox \"Quantity\"",             // title
        "textbox \"Search products\"",      // placeholder
        "button \"Fake button\"",           // explicit role
        "\"Locked field\" = \"fixed\" [readonly]",
        "button \"Unavailable\" [disabled]",
        "combobox \"Size\" = \"Medium\"",
        "row \"Basic | 5 EUR\"",
        "textbox \"Shadow field\"", // open shadow root, label inside it
        "button \"Shadow action\"",
        "\"Plain prose that explains something.\"",
    ] {
        assert!(
            snapshot.text.contains(expected),
            "missing {expected:?} in:\n{}",
            snapshot.text
        );
    }
    let pin = lines(&snapshot)
        .into_iter()
        .find(|line| line.contains("\"PIN\""))
        .expect("the password field is listed");
    assert!(pin.contains("= \"••••\""), "{pin}");
    assert!(!snapshot.structured.to_string().contains("hunter2"));
    // A one-time code is a secret too, though its field is not a password field.
    assert!(
        snapshot.text.contains("\"Code\" = \"••••\""),
        "{}",
        snapshot.text
    );
    assert!(!snapshot.structured.to_string().contains("424242"));

    // Password values never leave the page, in any format.
    for format in ["text", "html", "aria"] {
        let content = setup
            .client
            .call("get_page_content", json!({ "format": format }))
            .await;
        let everything = format!("{}{}", content.text, content.structured);
        assert!(
            !everything.contains("hunter2"),
            "{format} leaked the password"
        );
        assert!(
            !everything.contains("424242"),
            "{format} leaked the one-time code"
        );
    }
}

/// The secret fields of secrets.html: a selector, the accessible name and the value, found
/// nowhere else on the page. Each is a secret by one mark alone, and all are text fields.
const SECRET_FIELDS: [(&str, &str, &str); 5] = [
    ("#shown", "Password", "Toggled-9f3k"), // a password field shown in clear before tabwire looked
    ("[name=login_pwd]", "Second field", "ByName-7q2w"), // its name
    ("#pinCode", "Third field", "ById-4821"), // its id
    ("#f4", "Verification code", "ByLabel-5531"), // its label
    ("#f5", "Texted digits", "661043"),     // autocomplete=one-time-code
];

/// Its ordinary fields, named with words that contain or resemble the marks.
const ORDINARY_FIELDS: [(&str, &str, &str); 5] = [
    ("#passport", "Passport number", "X1234567"),
    ("#heading", "Compass heading", "NNE 22"),
    ("#spinner", "Spinner speed", "1200 rpm"),
    ("#zip", "Postal code", "75001"),
    ("#boarding", "Boarding pass", "BP-22A"),
];

/// Fails when `output` holds any secret of secrets.html.
fn assert_no_secret(what: &str, output: &str) {
    for (_, _, secret) in SECRET_FIELDS {
        assert!(
            !output.contains(secret),
            "{what} leaked {secret:?}:\n{output}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fields_marked_as_secrets_stay_redacted_though_shown_in_clear_from_the_start() {
    let setup = OneBrowser::on("Work", "secrets.html").await;
    // The page's script showed the password before tabwire ever saw the field.
    assert_eq!(
        setup
            .evaluate("secrets.html", "document.getElementById('shown').type")
            .await,
        "text"
    );

    // Snapshots: the secrets as the marker, the ordinary fields as they are.
    let snapshot = setup.snapshot(json!({})).await;
    for (_, name, _) in SECRET_FIELDS {
        let listed = format!("textbox \"{name}\" = \"{REDACTED}\"");
        assert!(
            snapshot.text.contains(&listed),
            "{listed} in:\n{}",
            snapshot.text
        );
    }
    for (_, name, value) in ORDINARY_FIELDS {
        let listed = format!("textbox \"{name}\" = \"{value}\"");
        assert!(
            snapshot.text.contains(&listed),
            "{listed} in:\n{}",
            snapshot.text
        );
    }
    assert_no_secret(
        "the snapshot",
        &format!("{}{}", snapshot.text, snapshot.structured),
    );

    // Page content in every format; the markup keeps the ordinary fields' values.
    for format in ["text", "html", "aria"] {
        let content = setup
            .call("get_page_content", json!({ "format": format }))
            .await;
        let everything = format!("{}{}", content.text, content.structured);
        assert_no_secret(format, &everything);
        if format == "html" {
            assert!(everything.contains("value=\"X1234567\""), "{everything}");
        }
    }

    // Element state: the value and the value attribute.
    for (selector, _, _) in SECRET_FIELDS {
        let read = setup
            .call(
                "read_element_state",
                json!({"selector": selector, "attributes": ["value", "id"]}),
            )
            .await;
        let state = element_state(&read);
        assert_eq!(state["value"], REDACTED, "{selector}: {}", read.text);
        assert_eq!(
            state["attributes"]["value"], REDACTED,
            "{selector}: {}",
            read.text
        );
        assert_no_secret(selector, &format!("{}{}", read.text, read.structured));
    }
    for (selector, _, value) in ORDINARY_FIELDS {
        let read = setup
            .call(
                "read_element_state",
                json!({"selector": selector, "attributes": ["value"]}),
            )
            .await;
        let state = element_state(&read);
        assert_eq!(state["value"], value, "{selector}: {}", read.text);
        assert_eq!(
            state["attributes"]["value"], value,
            "{selector}: {}",
            read.text
        );
    }

    // The selection inside a focused field, as the user would make it.
    let select_all = |selector: &str| {
        format!(
            "(() => {{ const el = document.querySelector({selector:?}); el.focus(); el.select(); \
             return el.value.slice(el.selectionStart, el.selectionEnd); }})()"
        )
    };
    for (selector, _, secret) in SECRET_FIELDS {
        assert_eq!(
            setup.evaluate("secrets.html", &select_all(selector)).await,
            secret
        );
        let selected = setup.call("get_selected_text", json!({})).await;
        assert_eq!(selected.data()["text"], "", "{selector}: {}", selected.text);
    }
    setup
        .evaluate("secrets.html", &select_all("#passport"))
        .await;
    let selected = setup.call("get_selected_text", json!({})).await;
    assert_eq!(selected.data()["text"], "X1234567", "{}", selected.text);

    // What filling a form reports back.
    let filled = setup
        .call(
            "fill_form",
            json!({"fields": [
                {"selector": "#f4", "value": "Typed-8080"},
                {"selector": "#passport", "value": "Y7654321"},
            ]}),
        )
        .await;
    let fields = filled.data()["fields"]
        .as_array()
        .expect("per-field results");
    assert_eq!(fields[0]["value"], REDACTED, "{}", filled.text);
    assert_eq!(fields[1]["value"], "Y7654321", "{}", filled.text);
    let reported = format!("{}{}", filled.text, filled.structured);
    assert!(!reported.contains("Typed-8080"), "{reported}");
    // Only the reports are redacted: the page has the values.
    assert_eq!(
        setup
            .evaluate("secrets.html", "document.getElementById('f4').value")
            .await,
        "Typed-8080"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refs_survive_inserts_removals_and_reordering_and_rebind_only_when_unambiguous() {
    let setup = OneBrowser::on("Work", "dynamic.html").await;
    let first = setup.snapshot(json!({})).await;
    let items: Vec<String> = ["Item A", "Item B", "Item C"]
        .iter()
        .map(|name| ref_of(&first, &format!("button \"{name}\"")))
        .collect();
    let save = ref_of(&first, "button \"Save\"");
    let copy = ref_of(&first, "button \"Copy\"");

    // Inserted above, then removed above: the items keep their refs.
    setup.click("#insert").await.data();
    let inserted = setup.snapshot(json!({})).await;
    let new_item = ref_of(&inserted, "button \"New item 1\"");
    assert!(!items.contains(&new_item));
    for (name, r) in ["Item A", "Item B", "Item C"].iter().zip(&items) {
        assert_eq!(&ref_of(&inserted, &format!("button \"{name}\"")), r);
    }
    setup.click("#remove").await.data();
    let removed = setup.snapshot(json!({})).await;
    assert!(!removed.text.contains("New item 1"), "{}", removed.text);
    for (name, r) in ["Item A", "Item B", "Item C"].iter().zip(&items) {
        assert_eq!(&ref_of(&removed, &format!("button \"{name}\"")), r);
    }

    // Reordered: same refs, new order.
    setup.click("#reverse").await.data();
    let reversed = setup.snapshot(json!({})).await;
    let position = |needle: &str| reversed.text.find(needle).unwrap();
    assert!(position("Item C") < position("Item A"), "{}", reversed.text);
    assert_eq!(ref_of(&reversed, "button \"Item C\""), items[2]);

    // The Save button is replaced by an equal one with the same unique id: its ref follows it,
    // in the next snapshot and for actions.
    let twin = ref_of(&first, "button \"Twin\"");
    setup.click("#rerender").await.data();
    let rerendered = setup.snapshot(json!({})).await;
    assert_eq!(
        ref_of(&rerendered, "button \"Save\""),
        save,
        "{}",
        rerendered.text
    );
    setup.click(&save).await.data();
    let after = setup.snapshot(json!({})).await;
    assert!(after.text.contains("Saved 1 times"), "{}", after.text);
    assert_eq!(ref_of(&after, "button \"Save\""), save);

    // The Twin button is replaced by a lookalike beside a hidden element with the same
    // data-testid: the snapshot sees only one, but the page has two, so the ref is not given to
    // either.
    setup.click("#twin").await.data();
    let twins = setup.snapshot(json!({})).await;
    assert_ne!(ref_of(&twins, "button \"Twin\""), twin, "{}", twins.text);
    assert_eq!(setup.click(&twin).await.error_code(), "STALE_REF");

    // The Copy button is replaced by two with the same data-testid: no guessing.
    setup.click("#duplicate").await.data();
    let ambiguous = setup.click(&copy).await;
    assert_eq!(ambiguous.error_code(), "STALE_REF", "{}", ambiguous.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deltas_report_changes_and_reset_when_the_baseline_does_not_fit() {
    let setup = OneBrowser::on("Work", "dynamic.html").await;
    let base = setup.snapshot(json!({})).await;
    let version = base.data()["version"].as_u64().unwrap();

    // Unchanged page: an empty delta, a few hundred bytes at most.
    let same = setup.snapshot(json!({ "since": version })).await;
    let delta = &same.data()["delta"];
    assert_eq!(delta["changed"], json!([]));
    assert_eq!(delta["removed"], json!([]));
    assert!(delta.get("order").is_none());
    assert!(
        same.text.contains("no changes since version"),
        "{}",
        same.text
    );
    let bytes = same.text.len() + same.structured.to_string().len();
    assert!(bytes <= 700, "{bytes} bytes for an unchanged page");

    // An insertion at the top: the new node, and the new order since it is not at the end.
    let unchanged_version = same.data()["version"].as_u64().unwrap();
    setup.click("#insert").await.data();
    let changed = setup.snapshot(json!({ "since": unchanged_version })).await;
    let delta = &changed.data()["delta"];
    let changed_lines: Vec<&str> = delta["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["text"].as_str().unwrap())
        .collect();
    assert!(
        changed_lines.iter().any(|t| t.contains("New item 1")),
        "{changed_lines:?}"
    );
    assert!(
        changed_lines.len() <= 2,
        "only what changed: {changed_lines:?}"
    );
    assert!(delta["order"].is_array(), "{}", changed.text);

    // A removal: the ref is reported removed.
    let before_removal = changed.data()["version"].as_u64().unwrap();
    let new_item = delta["changed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["text"].as_str().unwrap().contains("New item 1"))
        .unwrap()["ref"]
        .clone();
    setup.click("#remove").await.data();
    let gone = setup.snapshot(json!({ "since": before_removal })).await;
    assert!(
        gone.data()["delta"]["removed"]
            .as_array()
            .unwrap()
            .contains(&new_item),
        "{}",
        gone.text
    );

    // Other arguments than the baseline's, or a version never issued: a full view with reset.
    let other = setup
        .snapshot(json!({ "since": before_removal, "query": "Item" }))
        .await;
    assert_eq!(other.data()["reset"], true);
    assert!(!other.data()["nodes"].as_array().unwrap().is_empty());
    let unknown = setup.snapshot(json!({ "since": 9999 })).await;
    assert_eq!(unknown.data()["reset"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_row_of_a_big_table_is_reachable_and_a_query_finds_one_in_a_call() {
    let setup = OneBrowser::on("Work", "table.html").await;
    let first = setup.snapshot(json!({})).await;
    let data = first.data();
    assert_eq!(data["truncated"], true);
    assert!(data["omittedNodes"].as_u64().unwrap() > 0);
    assert!(data["omittedChars"].as_u64().unwrap() > 0);
    assert!(first.text.contains("next: offset="), "{}", first.text);

    // Paging reaches every row's button, each with its own ref.
    let mut buttons: HashSet<String> = HashSet::new();
    let mut page = first;
    let mut calls = 1;
    loop {
        for line in lines(&page) {
            if line.contains(" button \"Open ") {
                buttons.insert(line.split_whitespace().next().unwrap().to_owned());
            }
        }
        let Some(next) = page.data()["nextOffset"].as_u64() else {
            break;
        };
        page = setup.snapshot(json!({ "offset": next })).await;
        calls += 1;
        assert!(calls < 100, "paging does not end");
    }
    assert_eq!(buttons.len(), 2000, "every row's button has a ref");

    // "The button in the row that says Row 1500": one query call.
    let found = setup.snapshot(json!({ "query": "Row 1500" })).await;
    assert!(found.text.contains("row \"Row 1500 |"), "{}", found.text);
    let open = ref_of(&found, "button \"Open 1500\"");
    assert!(
        buttons.contains(&open),
        "the query returns the same ref as paging"
    );
    setup.click(&open).await.data();
    let status = setup.snapshot(json!({ "query": "Opened row" })).await;
    assert!(
        status.text.contains("Opened row 1500 (trusted: true)"),
        "{}",
        status.text
    );

    // Scoping to one element gives just its subtree.
    let scoped = setup.snapshot(json!({ "selector": "#orders thead" })).await;
    assert!(
        scoped.text.contains("Order | Customer | Total | Action"),
        "{}",
        scoped.text
    );
    assert!(!scoped.text.contains("Row 1 |"), "{}", scoped.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frame_refs_type_and_click_inside_a_cross_origin_iframe() {
    let setup = OneBrowser::on("Work", "frames.html").await;
    let frames =
        tabwire_e2e::eventually("both iframes to load", Duration::from_secs(15), || async {
            let reply = setup.client.call("list_frames", json!({})).await;
            let frames = reply.data()["frames"].as_array()?.clone();
            (frames.len() == 3).then_some(frames)
        })
        .await;
    assert!(
        frames[0].get("parentFrameId").is_none(),
        "top document first"
    );
    let cross = frames
        .iter()
        .find(|f| f["url"].as_str().unwrap().contains("localhost"))
        .expect("the cross-origin frame is listed");
    let frame_id = cross["frameId"].as_u64().unwrap();

    let inside = setup.snapshot(json!({ "frameId": frame_id })).await;
    let email = ref_of(&inside, "textbox \"Email\"");
    let secret = ref_of(&inside, "\"Secret\"");
    let send = ref_of(&inside, "button \"Send\"");
    assert!(email.starts_with(&format!("@f{frame_id}e")), "{email}");

    setup
        .client
        .call(
            "type_text",
            json!({"selector": email, "text": "bob@example.com"}),
        )
        .await
        .data();
    let typed = setup
        .client
        .call("type_text", json!({"selector": secret, "text": "s3cret!"}))
        .await;
    assert!(!typed.structured.to_string().contains("s3cret!"));
    setup.click(&send).await.data();
    let after = setup.snapshot(json!({ "frameId": frame_id })).await;
    assert!(
        after
            .text
            .contains("Sent bob@example.com from the cross frame (trusted: true)"),
        "{}",
        after.text
    );
    assert!(!after.structured.to_string().contains("s3cret!"));

    // The open shadow root in the top document works the same way.
    let top = setup.snapshot(json!({})).await;
    let coupon = ref_of(&top, "textbox \"Coupon\"");
    setup
        .client
        .call("type_text", json!({"selector": coupon, "text": "SAVE10"}))
        .await
        .data();
    setup
        .click(&ref_of(&top, "button \"Apply coupon\""))
        .await
        .data();
    let applied = setup.snapshot(json!({})).await;
    assert!(
        applied
            .text
            .contains("Coupon SAVE10 applied (trusted: true)"),
        "{}",
        applied.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_formats_are_bounded_and_page_on() {
    let setup = OneBrowser::on("Work", "article.html").await;
    let first = setup
        .client
        .call("get_page_content", json!({ "maxChars": 2000 }))
        .await;
    let data = first.data();
    assert_eq!(data["truncated"], true);
    assert!(data["content"].as_str().unwrap().chars().count() <= 2000);
    assert!(data["totalChars"].as_u64().unwrap() > 20_000);
    assert!(first.text.contains("A long article"), "{}", first.text);
    let next = data["nextOffset"].as_u64().unwrap();
    let second = setup
        .client
        .call(
            "get_page_content",
            json!({ "maxChars": 2000, "offset": next }),
        )
        .await;
    assert_eq!(second.data()["offset"].as_u64().unwrap(), next);
    assert_ne!(second.data()["content"], data["content"]);

    let html = setup
        .client
        .call(
            "get_page_content",
            json!({ "format": "html", "selector": "h1", "maxChars": 500 }),
        )
        .await;
    assert_eq!(html.data()["content"], "<h1>A long article</h1>");

    let aria = setup
        .client
        .call(
            "get_page_content",
            json!({ "format": "aria", "maxChars": 500 }),
        )
        .await;
    assert!(
        aria.text.contains("heading[1] \"A long article\""),
        "{}",
        aria.text
    );
    assert_eq!(aria.data()["truncated"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_that_missed_its_deadline_commits_nothing() {
    let setup = OneBrowser::on("Work", "freeze.html").await;
    let before = setup.snapshot(json!({})).await;
    let version = before.data()["version"].as_u64().unwrap();
    let freeze = ref_of(&before, "button \"Freeze");

    // The page blocks its main thread for 22 s: this observation misses its 20 s deadline, and
    // its late answer must not be recorded when the page wakes up.
    // (No observation with the click: it would be the last committed one.)
    setup.quiet_click(&freeze).await.data();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let late = setup.snapshot(json!({})).await;
    assert_eq!(late.error_code(), "TAB_UNRESPONSIVE", "{}", late.text);

    // Once the page answers again, the next observation follows the last committed one.
    let after = tabwire_e2e::eventually("the page to answer", Duration::from_secs(15), || async {
        let reply = setup.snapshot(json!({})).await;
        (!reply.is_error).then_some(reply)
    })
    .await;
    assert_eq!(
        after.data()["version"].as_u64().unwrap(),
        version + 1,
        "the timed-out observation left no version behind"
    );
    assert_eq!(ref_of(&after, "button \"Freeze"), freeze);
    assert!(after.text.contains("Frozen once"), "{}", after.text);
}
