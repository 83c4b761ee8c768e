//! Screenshots, network and console capture, cookies and storage, end to end in real Chromium
//! (SPEC §6): images that decode and travel once, background tabs captured side by side without
//! taking the focus, capture buffers that keep the newest 500 records and say what they dropped,
//! and every read cut to its character budget with the cut reported.
//!
//! No assertion depends on timing figures: what happened while something else was running is
//! shown by which call finished first, and what the page did by counters it keeps.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};
use tabwire_e2e::fixtures::{big_body, json_body};
use tabwire_e2e::image::{Format, Header, decode_base64, header};
use tabwire_e2e::scenario::{CONNECT_LIMIT, OneBrowser, active_tabs, listed_tab, tab_of, tab_with};
use tabwire_e2e::{Reply, eventually};

/// The records' page budget when none is given (SPEC §6).
const DEFAULT_PAGE_BUDGET: usize = 12_000;

/// Checks what every screenshot must be: one image block in `format` whose bytes are a
/// complete image header of the size the data reports, and no copy of the image anywhere
/// else in the result (the model would pay for it twice). Returns the decoded header.
fn check_screenshot(reply: &Reply, format: Format) -> Header {
    let data = reply.data();
    let image = reply.image();
    assert_eq!(image.mime_type, format.mime_type(), "{}", reply.structured);
    let bytes = decode_base64(&image.data);
    let decoded = header(&bytes).unwrap_or_else(|| {
        panic!(
            "not a PNG, JPEG or WebP image: {:02x?}",
            &bytes[..bytes.len().min(32)]
        )
    });
    assert_eq!(decoded.format, format);
    assert_eq!(data["format"], format.name(), "{data}");
    assert_eq!(data["width"], decoded.width, "{data}");
    assert_eq!(data["height"], decoded.height, "{data}");
    assert_eq!(data["bytes"], bytes.len() as u64, "{data}");
    assert!(
        data["documentId"].as_str().is_some_and(|id| !id.is_empty()),
        "{data}"
    );
    let sample = &image.data[..image.data.len().min(64)];
    assert!(
        !reply.structured.to_string().contains(sample),
        "the image is in the structured content too"
    );
    assert!(!reply.text.contains(sample), "the image is in the text too");
    decoded
}

/// A number in a tool's data.
fn number(data: &Value, field: &str) -> u64 {
    data[field]
        .as_u64()
        .unwrap_or_else(|| panic!("no number {field:?} in {data}"))
}

/// The records of a records page, and how long they are serialized (what the budget bounds).
fn records_of(data: &Value) -> (&Vec<Value>, usize) {
    let records = data["records"]
        .as_array()
        .unwrap_or_else(|| panic!("no records in {data}"));
    (records, serde_json::to_string(records).unwrap().len())
}

/// Checks that a page of records is consistent with its bounds: within `budget`, cut short by
/// the budget exactly when it says `truncated`, and pointing at the next page exactly when there
/// is one. Returns the next offset.
fn check_page(data: &Value, offset: u64, limit: u64, budget: usize) -> Option<u64> {
    let (records, size) = records_of(data);
    assert!(size <= budget, "{size} characters over a {budget} budget");
    assert_eq!(data["offset"], offset, "{data}");
    let total = number(data, "total");
    let end = offset + records.len() as u64;
    let room = limit.min(total.saturating_sub(offset));
    assert_eq!(
        data["truncated"] == true,
        (records.len() as u64) < room,
        "truncated says whether the budget cut the page: {} of {room} records, {data}",
        records.len()
    );
    let next = data["nextOffset"].as_u64();
    if end < total {
        assert_eq!(next, Some(end), "{data}");
    } else {
        assert_eq!(next, None, "no next page after the last record: {data}");
    }
    next
}

/// The first record of a read of captured requests filtered by `url`, once its response has
/// arrived (status 200).
async fn answered_request(setup: &OneBrowser, url: &str) -> Value {
    eventually(
        &format!("the response to {url} to be captured"),
        CONNECT_LIMIT,
        || async {
            let reply = setup
                .call("get_captured_requests", json!({"filter": url}))
                .await;
            let record = reply.data()["records"].get(0)?.clone();
            (record["status"] == 200).then_some(record)
        },
    )
    .await
}

/// A page counter kept in `window.capture` reaching `value`.
async fn page_counter(setup: &OneBrowser, counter: &str, value: u64) {
    eventually(
        &format!("capture.{counter} to reach {value}"),
        Duration::from_secs(60),
        || async {
            let now = setup
                .evaluate("capture.html", &format!("capture.{counter}"))
                .await;
            (now == value).then_some(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenshots_come_as_one_image_block_in_each_format() {
    let setup = OneBrowser::on("Work", "tabs.html").await;

    // The default: WebP of the viewport, at most 800 pixels wide.
    let shot = setup.call("take_screenshot", json!({})).await;
    let webp = check_screenshot(&shot, Format::Webp);
    assert!(webp.width <= 800, "{}", shot.structured);
    let data = shot.data();
    assert!(
        number(data, "cssWidth") > 800,
        "the viewport, wider than 800 pixels, was scaled down: {data}"
    );
    assert!(
        number(data, "cssHeight") <= 800,
        "the viewport only: {data}"
    );
    assert!(data["observation"].is_null(), "not asked for: {data}");

    let png = setup
        .call("take_screenshot", json!({"format": "png", "maxWidth": 300}))
        .await;
    assert!(check_screenshot(&png, Format::Png).width <= 300);
    let jpeg = setup
        .call("take_screenshot", json!({"format": "jpeg", "quality": 60}))
        .await;
    check_screenshot(&jpeg, Format::Jpeg);

    // One element: the captured area is the 200×100 box, not the page.
    let element = setup
        .call(
            "take_screenshot",
            json!({"selector": "#box", "format": "png"}),
        )
        .await;
    let boxed = check_screenshot(&element, Format::Png);
    let data = element.data();
    assert_eq!(data["cssWidth"], 200, "{data}");
    assert_eq!(data["cssHeight"], 100, "{data}");
    assert!(boxed.width <= 200, "{data}");

    // With an observation of the same document.
    let both = setup
        .call("take_screenshot", json!({"withSnapshot": true}))
        .await;
    check_screenshot(&both, Format::Webp);
    let data = both.data();
    assert!(data["observation"].is_object(), "{data}");
    assert!(
        both.text.contains("The quick brown fox"),
        "the observation's lines are in the text: {}",
        both.text
    );
    assert_eq!(
        data["documentId"],
        shot.data()["documentId"],
        "the same document as the first screenshot"
    );

    // A selector that matches nothing is a target error, not an image of something else.
    let missing = setup
        .call("take_screenshot", json!({"selector": "#nothing-here"}))
        .await;
    assert_eq!(
        missing.error_code(),
        "SELECTOR_NOT_FOUND",
        "{}",
        missing.text
    );
    assert!(missing.images.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_page_screenshot_of_a_long_page_is_scaled_under_max_width() {
    let setup = OneBrowser::on("Work", "long.html").await;
    let scrolled = || setup.evaluate("long.html", "window.scrollY");
    assert_eq!(scrolled().await, 0);

    let full = setup
        .call(
            "take_screenshot",
            json!({"fullPage": true, "maxWidth": 400}),
        )
        .await;
    let image = check_screenshot(&full, Format::Webp);
    let data = full.data();
    let (css_width, css_height) = (number(data, "cssWidth"), number(data, "cssHeight"));
    // The page is 30 sections of 200 pixels, far taller than the 800-pixel window.
    assert!(css_height >= 6000, "the whole page: {data}");
    assert!(css_width > 400, "{data}");
    // Scaled to fit the width, and no further.
    assert!(image.width <= 400, "{data}");
    assert!(image.width >= 380, "{data}");
    // The image keeps the page's shape: tall and narrow, in the page's proportions.
    let expected = f64::from(image.width) * css_height as f64 / css_width as f64;
    assert!(
        (f64::from(image.height) - expected).abs() <= 2.0 + expected * 0.01,
        "a {}×{} image of a {css_width}×{css_height} page",
        image.width,
        image.height
    );
    assert!(image.height > 4 * image.width, "{data}");
    // Capturing the whole page did not scroll it.
    assert_eq!(scrolled().await, 0);

    // The viewport alone, for comparison: one screen of the page.
    let viewport = setup
        .call("take_screenshot", json!({"maxWidth": 400}))
        .await;
    let shown = check_screenshot(&viewport, Format::Webp);
    assert!(number(viewport.data(), "cssHeight") <= 800);
    assert!(shown.height < image.height / 4, "{}", viewport.structured);
}

/// Opens `path` with create_tab in a new window that does not take the focus, and waits for
/// it to load; returns its tab ID.
async fn open_in_new_window(setup: &OneBrowser, path: &str) -> u64 {
    let url = setup.fixtures.url(path);
    let created = setup
        .call("create_tab", json!({"url": url, "newWindow": true}))
        .await;
    let tab = tab_of(&created)["tabId"]
        .as_u64()
        .unwrap_or_else(|| panic!("a tab ID: {}", created.structured));
    listed_tab(
        &setup.client,
        json!({}),
        "the new window's tab to load",
        |t| t["tabId"] == tab && t["status"] == "complete",
    )
    .await;
    tab
}

/// Two tabs in the background — one behind the front tab in its window, one in a window opened
/// with `newWindow` (which takes no focus) — are captured side by side while a third tab is
/// busy, and nobody's view changes: the background tab still reports itself hidden.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_tabs_are_captured_side_by_side_while_a_third_tab_waits() {
    let setup = OneBrowser::on("Work", "waits.html").await;
    let waiting = tab_with(&setup.call("list_tabs", json!({})).await, "waits.html");
    let counter = setup.open_tab("counter.html?profile=B").await;
    setup.browser.activate_tab("waits.html").await;
    let long = open_in_new_window(&setup, "long.html").await;
    let front_before = tab_of(&setup.call("get_active_tab", json!({})).await)["tabId"].clone();
    let active_before = active_tabs(&setup.call("list_tabs", json!({})).await);
    assert!(!active_before.contains(&counter), "{active_before:?}");

    // The order in which the two sides finished.
    let finished = Mutex::new(Vec::new());
    let wait = async {
        let reply = setup
            .call(
                "wait_for",
                json!({"tabId": waiting, "text": "This never appears", "timeoutMs": 6000}),
            )
            .await;
        finished.lock().unwrap().push("wait");
        reply
    };
    let screenshots = async {
        setup
            .running("the wait to hold its tab", json!({"tabId": waiting}))
            .await;
        let shots = tokio::join!(
            setup.call("take_screenshot", json!({"tabId": counter})),
            setup.call("take_screenshot", json!({"tabId": long, "format": "png"})),
        );
        finished.lock().unwrap().push("screenshots");
        shots
    };
    let (waited, (counter_shot, long_shot)) = tokio::join!(wait, screenshots);
    assert_eq!(waited.error_code(), "WAIT_TIMEOUT", "{}", waited.text);
    assert_eq!(
        *finished.lock().unwrap(),
        ["screenshots", "wait"],
        "both background tabs were captured while the third tab was still waiting"
    );
    check_screenshot(&counter_shot, Format::Webp);
    check_screenshot(&long_shot, Format::Png);
    assert_eq!(
        counter_shot.data()["tabId"],
        counter,
        "{}",
        counter_shot.text
    );
    assert_eq!(long_shot.data()["tabId"], long, "{}", long_shot.text);
    assert_ne!(
        counter_shot.data()["documentId"],
        long_shot.data()["documentId"],
        "two tabs, two documents"
    );

    // Nobody's view moved: the same tabs are in front, and the captured background tab was
    // never shown.
    let after = setup.call("get_active_tab", json!({})).await;
    assert_eq!(
        tab_of(&after)["tabId"],
        front_before,
        "{}",
        after.structured
    );
    let tabs = setup.call("list_tabs", json!({})).await;
    assert_eq!(active_tabs(&tabs), active_before, "{}", tabs.text);
    assert_eq!(
        setup
            .evaluate("counter.html", "document.visibilityState")
            .await,
        "hidden"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_hundred_requests_keep_the_newest_500_and_every_page_fits_its_budget() {
    let setup = OneBrowser::on("Work", "capture.html").await;
    let started = setup.call("start_network_capture", json!({})).await;
    assert_eq!(started.data()["capturing"], true, "{}", started.text);

    // The page fetches /json?n=0 … /json?n=599 one after the other, after capture started: the
    // only requests the tab makes.
    setup.quiet_click("#fire").await.data();
    page_counter(&setup, "fired", 600).await;
    let last = answered_request(&setup, "/json?n=599").await;
    assert_eq!(last["method"], "GET", "{last}");

    // Paging through everything kept with a small budget.
    const BUDGET: usize = 4000;
    const LIMIT: u64 = 100;
    let mut kept = Vec::new();
    let mut offset = 0;
    let mut cut_pages = 0;
    loop {
        let page = setup
            .call(
                "get_captured_requests",
                json!({"offset": offset, "limit": LIMIT, "maxChars": BUDGET}),
            )
            .await;
        let data = page.data();
        assert_eq!(data["total"], 500, "the newest 500 are kept: {data}");
        assert_eq!(data["evicted"], 100, "and the 100 dropped are reported");
        assert_eq!(data["capturing"], true, "{data}");
        let next = check_page(data, offset, LIMIT, BUDGET);
        let (records, _) = records_of(data);
        assert!(!records.is_empty(), "a page makes progress: {data}");
        if data["truncated"] == true {
            cut_pages += 1;
        }
        kept.extend(records.iter().cloned());
        match next {
            Some(next) => offset = next,
            None => break,
        }
    }
    assert!(
        cut_pages > 0,
        "a 4,000-character budget cuts 100 records short"
    );
    assert_eq!(kept.len(), 500);
    // Oldest first, and exactly the newest 500: n = 100 … 599, each once.
    for (index, record) in kept.iter().enumerate() {
        let url = record["url"].as_str().unwrap_or_else(|| panic!("{record}"));
        assert!(
            url.ends_with(&format!("/json?n={}", index + 100)),
            "record {index}: {record}"
        );
        assert_eq!(record["method"], "GET", "{record}");
        assert!(
            record["type"]
                .as_str()
                .is_some_and(|kind| kind.eq_ignore_ascii_case("fetch")),
            "{record}"
        );
        assert!(
            record["requestId"]
                .as_str()
                .is_some_and(|id| !id.is_empty()),
            "{record}"
        );
    }
    let seqs: Vec<u64> = kept.iter().map(|record| number(record, "seq")).collect();
    assert!(
        seqs.windows(2).all(|pair| pair[0] < pair[1]),
        "seq increases: {seqs:?}"
    );
    // The last ones have their responses.
    let newest = &kept[499];
    assert_eq!(newest["status"], 200, "{newest}");
    assert_eq!(newest["mimeType"], "application/json", "{newest}");

    // Without a budget given, a page stays within the default one.
    let default = setup
        .call("get_captured_requests", json!({"limit": LIMIT}))
        .await;
    check_page(default.data(), 0, LIMIT, DEFAULT_PAGE_BUDGET);
    // A small limit is a short page that is not cut.
    let few = setup
        .call("get_captured_requests", json!({"limit": 10}))
        .await;
    let data = few.data();
    check_page(data, 0, 10, DEFAULT_PAGE_BUDGET);
    assert_eq!(records_of(data).0.len(), 10, "{data}");
    assert_ne!(data["truncated"], true, "{data}");

    // Reading with clearAfter forgets what it returned, and only that.
    let cleared = setup
        .call(
            "get_captured_requests",
            json!({"limit": 20, "clearAfter": true}),
        )
        .await;
    let returned = records_of(cleared.data()).0.len();
    assert!(returned > 0, "{}", cleared.structured);
    let rest = setup
        .call("get_captured_requests", json!({"limit": 1}))
        .await;
    let data = rest.data();
    assert_eq!(number(data, "total"), 500 - returned as u64, "{data}");
    assert!(
        data["records"][0]["url"]
            .as_str()
            .is_some_and(|url| url.ends_with(&format!("/json?n={}", 100 + returned))),
        "{data}"
    );

    // Stopping keeps what was captured readable.
    let stopped = setup.call("stop_network_capture", json!({})).await;
    assert_eq!(stopped.data()["capturing"], false, "{}", stopped.text);
    let after = setup
        .call("get_captured_requests", json!({"limit": 1}))
        .await;
    assert_eq!(after.data()["capturing"], false, "{}", after.structured);
    assert_eq!(number(after.data(), "total"), 500 - returned as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_body_is_read_back_exactly_and_a_large_body_is_cut() {
    let setup = OneBrowser::on("Work", "capture.html").await;
    setup.call("start_network_capture", json!({})).await.data();

    setup.quiet_click("#fetch-json").await.data();
    let record = answered_request(&setup, "/json?n=7").await;
    assert_eq!(record["mimeType"], "application/json", "{record}");
    let id = record["requestId"].as_str().unwrap().to_owned();
    let body = setup
        .call("get_response_body", json!({"requestId": id}))
        .await;
    let data = body.data();
    let expected = json_body(7);
    assert_eq!(
        data["body"],
        expected.as_str(),
        "byte for byte, UTF-8 included"
    );
    assert_eq!(data["mimeType"], "application/json", "{data}");
    assert_eq!(
        number(data, "totalChars"),
        expected.chars().count() as u64,
        "{data}"
    );
    assert_ne!(data["truncated"], true, "{data}");

    // 200 KiB read with a 5,000-character budget: a cut prefix, and it says so.
    setup.quiet_click("#fetch-big").await.data();
    let record = answered_request(&setup, "/big?kb=200").await;
    let id = record["requestId"].as_str().unwrap().to_owned();
    let big = setup
        .call(
            "get_response_body",
            json!({"requestId": id, "maxChars": 5000}),
        )
        .await;
    let data = big.data();
    assert_eq!(data["truncated"], true, "{}", big.text);
    assert_eq!(number(data, "totalChars"), 200 * 1024, "{}", big.text);
    let text = data["body"].as_str().expect("a body");
    assert!(!text.is_empty(), "cut, not left out: {}", big.text);
    assert!(text.chars().count() <= 5000, "{} characters", text.len());
    assert!(big_body(200).starts_with(text), "a prefix of the body");
    assert!(
        data["note"].is_null() || data["note"].is_string(),
        "a note, if any, is text: {data}"
    );
    assert!(big.text.len() < 8000, "the text rendering is bounded too");

    // Stopped, the tab's requests are no longer recorded.
    setup.call("stop_network_capture", json!({})).await.data();
    setup.quiet_click("#fetch-json").await.data();
    page_counter(&setup, "json", 2).await;
    let after = setup
        .call("get_captured_requests", json!({"filter": "/json?n=7"}))
        .await;
    assert_eq!(after.data()["total"], 1, "{}", after.structured);
    assert_eq!(after.data()["capturing"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_errors_and_uncaught_exceptions_are_captured() {
    let setup = OneBrowser::on("Work", "capture.html").await;
    let started = setup.call("start_console_capture", json!({})).await;
    assert_eq!(started.data()["capturing"], true, "{}", started.text);

    setup.quiet_click("#log").await.data();
    let logs = eventually(
        "the uncaught exception to be captured",
        CONNECT_LIMIT,
        || async {
            let logs = setup
                .call("get_console_logs", json!({"filter": "capture:"}))
                .await;
            let data = logs.data().clone();
            data["records"]
                .as_array()?
                .iter()
                .any(|record| record["exception"] == true)
                .then_some(data)
        },
    )
    .await;
    let records = logs["records"].as_array().unwrap();
    let find = |needle: &str| {
        records
            .iter()
            .find(|record| {
                record["text"]
                    .as_str()
                    .is_some_and(|text| text.contains(needle))
            })
            .unwrap_or_else(|| panic!("no record with {needle:?}: {logs}"))
    };
    let hello = find("capture: hello");
    let careful = find("capture: careful");
    let failed = find("capture: something failed");
    let boom = find("capture: uncaught boom");
    assert_eq!(hello["level"], "log", "{hello}");
    assert_eq!(careful["level"], "warning", "{careful}");
    assert_eq!(failed["level"], "error", "{failed}");
    assert_ne!(
        failed["exception"], true,
        "console.error is a message: {failed}"
    );
    assert_eq!(boom["level"], "error", "{boom}");
    assert_eq!(boom["exception"], true, "{boom}");
    // In the order they happened.
    let seq = |record: &Value| number(record, "seq");
    assert!(seq(hello) < seq(careful) && seq(careful) < seq(failed) && seq(failed) < seq(boom));

    // Only errors: the console.error and the exception.
    let errors = setup
        .call(
            "get_console_logs",
            json!({"filter": "capture:", "levels": ["error"]}),
        )
        .await;
    let data = errors.data();
    let (records, _) = records_of(data);
    assert_eq!(records.len(), 2, "{data}");
    assert!(records.iter().all(|record| record["level"] == "error"));
    assert_eq!(data["total"], 2, "{data}");

    // A 5,000-character message is kept cut (each argument at 500 characters, marked with
    // `…`), and a 300-character budget cuts it further.
    let long = setup
        .call(
            "get_console_logs",
            json!({"filter": "long:", "maxChars": 300}),
        )
        .await;
    let data = long.data();
    let (records, size) = records_of(data);
    assert!(size <= 300, "{size} characters");
    assert_eq!(data["truncated"], true, "{data}");
    assert!(
        records[0]["text"]
            .as_str()
            .is_some_and(|t| t.ends_with('…')),
        "{data}"
    );

    // Stopped, the records stay readable; started again, they are cleared.
    let stopped = setup.call("stop_console_capture", json!({})).await;
    assert_eq!(stopped.data()["capturing"], false, "{}", stopped.text);
    let kept = setup.call("get_console_logs", json!({})).await;
    assert_eq!(kept.data()["capturing"], false);
    assert!(number(kept.data(), "total") >= 5, "{}", kept.structured);
    setup.call("start_console_capture", json!({})).await.data();
    let fresh = setup.call("get_console_logs", json!({})).await;
    assert_eq!(fresh.data()["total"], 0, "{}", fresh.structured);

    // 600 lines: the newest 500 kept, 100 evicted, oldest first.
    setup.quiet_click("#log-many").await.data();
    let data = eventually("600 lines to be captured", CONNECT_LIMIT, || async {
        let logs = setup
            .call("get_console_logs", json!({"limit": 1, "filter": "many "}))
            .await;
        let data = logs.data().clone();
        (data["evicted"] == 100).then_some(data)
    })
    .await;
    assert_eq!(data["total"], 500, "{data}");
    assert_eq!(data["records"][0]["text"], "many 100", "{data}");
    assert_eq!(data["records"][0]["level"], "log", "{data}");
    let newest = setup
        .call("get_console_logs", json!({"offset": 499, "limit": 1}))
        .await;
    assert_eq!(
        newest.data()["records"][0]["text"],
        "many 599",
        "{}",
        newest.structured
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cookies_and_local_storage_of_the_page_are_read_within_bounds() {
    let setup = OneBrowser::on("Work", "storage.html").await;
    eventually("the page to set its cookies", CONNECT_LIMIT, || async {
        (setup.evaluate("storage.html", "window.storageReady").await == true).then_some(())
    })
    .await;
    // The server's cookie is HttpOnly: the page's script cannot see it; the tool can.
    let visible = setup.evaluate("storage.html", "document.cookie").await;
    assert!(!visible.as_str().unwrap().contains("session"), "{visible}");

    let cookies = setup.call("get_cookies", json!({})).await;
    let data = cookies.data();
    let entries = data["entries"].as_array().expect("cookie entries");
    let cookie = |name: &str| {
        entries
            .iter()
            .find(|entry| entry["name"] == name)
            .unwrap_or_else(|| panic!("no cookie {name:?}: {data}"))
    };
    for (name, value, http_only) in [
        ("theme", "dark", false),
        ("lang", "en", false),
        ("session", "abc123", true),
    ] {
        let entry = cookie(name);
        assert_eq!(entry["value"], value, "{entry}");
        assert_eq!(entry["httpOnly"], http_only, "{entry}");
        assert_eq!(entry["domain"], "127.0.0.1", "{entry}");
        assert_eq!(entry["path"], "/", "{entry}");
        assert_eq!(entry["secure"], false, "{entry}");
    }
    assert_eq!(data["total"], 3, "{data}");

    let named = setup.call("get_cookies", json!({"name": "session"})).await;
    let data = named.data();
    assert_eq!(data["total"], 1, "{data}");
    assert_eq!(data["entries"][0]["value"], "abc123", "{data}");

    let storage = setup.call("get_local_storage", json!({})).await;
    let data = storage.data();
    let entries = data["entries"].as_array().expect("storage entries");
    let value = |key: &str| {
        entries
            .iter()
            .find(|entry| entry["key"] == key)
            .map(|entry| entry["value"].clone())
            .unwrap_or_else(|| panic!("no key {key:?}: {data}"))
    };
    assert_eq!(value("tabwire.greeting"), "hello");
    assert_eq!(value("tabwire.count"), "3");
    assert_eq!(value("other"), "x");
    assert_eq!(data["total"], 4, "{data}");

    let filtered = setup
        .call("get_local_storage", json!({"filter": "tabwire."}))
        .await;
    let data = filtered.data();
    let mut keys: Vec<_> = data["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["key"].as_str().unwrap().to_owned())
        .collect();
    keys.sort();
    assert_eq!(keys, ["tabwire.count", "tabwire.greeting"], "{data}");
    assert_eq!(data["total"], 2, "{data}");

    // The 2,000-character value does not fit 500 characters: cut, and said so.
    let small = setup
        .call("get_local_storage", json!({"maxChars": 500}))
        .await;
    let data = small.data();
    assert_eq!(data["truncated"], true, "{data}");
    let size = serde_json::to_string(&data["entries"]).unwrap().len();
    assert!(size <= 500, "{size} characters");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_page_is_refused_as_restricted() {
    let setup = OneBrowser::on("Work", "tabs.html").await;
    // Chromium opens its own pages through DevTools (checked with this Chromium); no extension
    // may script or capture them.
    setup.browser.open_tab("chrome://version").await;
    let listed = listed_tab(
        &setup.client,
        json!({}),
        "chrome://version to be listed",
        |tab| {
            tab["url"]
                .as_str()
                .is_some_and(|url| url.starts_with("chrome://version"))
        },
    )
    .await;
    let restricted = listed["tabId"].as_u64().unwrap();

    let shot = setup
        .call("take_screenshot", json!({"tabId": restricted}))
        .await;
    assert_eq!(shot.error_code(), "RESTRICTED_PAGE", "{}", shot.text);
    assert!(shot.images.is_empty());
    let storage = setup
        .call("get_local_storage", json!({"tabId": restricted}))
        .await;
    assert_eq!(storage.error_code(), "RESTRICTED_PAGE", "{}", storage.text);

    // The fixture tab, brought back in front, is captured as usual.
    setup.browser.activate_tab("tabs.html").await;
    let tab = tab_with(&setup.call("list_tabs", json!({})).await, "tabs.html");
    let fine = setup.call("take_screenshot", json!({"tabId": tab})).await;
    check_screenshot(&fine, Format::Webp);
}
