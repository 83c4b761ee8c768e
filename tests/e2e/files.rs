//! Files into pages (issue 26), with the real hub, the real extension and real Chromium on
//! tests/fixtures/files.html, whose own script computes each file's SHA-256 from the bytes it
//! got: a plain input, a `multiple` one with `accept`, a hidden input behind a styled button in a
//! framework's form, an input outside the document, a drop zone; the refusals (`accept`,
//! `multiple`, paths outside `--upload-dir`, links out of it, the caps, a denied origin), each
//! of which leaves the page as it was; and the audit log, which keeps names and sizes only.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tabwire_e2e::client::embedded;
use tabwire_e2e::scenario::{OneBrowser, ref_of};
use tabwire_e2e::scratch::Scratch;
use tabwire_e2e::wait::eventually;

const PAGE: &str = "files.html";

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `{name, dataBase64}` of a file holding `bytes`.
fn sent(name: &str, bytes: &[u8]) -> Value {
    json!({"name": name, "dataBase64": STANDARD.encode(bytes)})
}

/// What the page saw in its part `part` (`seen.plain`, …): each file's name, size, type and
/// SHA-256; `null` while it saw nothing.
async fn seen(setup: &OneBrowser, part: &str) -> Value {
    setup
        .evaluate(PAGE, &format!("Promise.resolve(seen.{part} || null)"))
        .await
}

/// Bytes no compression or coincidence makes up: a counter through a multiplicative hash.
fn noise(len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inputs_get_exactly_the_bytes_sent_and_refuse_what_they_would_not_take() {
    let setup = OneBrowser::on("Files", PAGE).await;

    // One file, more than two chunks: the page's digest is the digest of what was sent.
    let big = noise(2_500_000);
    let done = setup
        .call(
            "upload_file",
            json!({"selector": "#plain", "files": [sent("report.bin", &big)]}),
        )
        .await;
    let data = done.data();
    assert_eq!(data["files"][0]["name"], "report.bin");
    assert_eq!(data["files"][0]["size"], 2_500_000);
    assert!(
        done.text
            .starts_with("Gave \"report.bin\" (2500000 bytes) to"),
        "{}",
        done.text
    );
    assert_eq!(
        seen(&setup, "plain").await,
        json!([{"name": "report.bin", "size": 2_500_000, "type": "", "sha256": sha256(&big)}])
    );
    // The events a person's choice fires, in order.
    assert_eq!(
        setup.evaluate(PAGE, "seen.events").await,
        json!(["plain:input", "plain:change"])
    );

    // Two files on a `multiple` input that accepts .txt and images; the types are what a
    // browser gives such files.
    let png = noise(3000);
    setup
        .call(
            "upload_file",
            json!({"selector": "#many", "files": [sent("notes.txt", b"hello"), sent("photo.png", &png)]}),
        )
        .await
        .data();
    assert_eq!(
        seen(&setup, "many").await,
        json!([
            {"name": "notes.txt", "size": 5, "type": "text/plain", "sha256": sha256(b"hello")},
            {"name": "photo.png", "size": 3000, "type": "image/png", "sha256": sha256(&png)},
        ])
    );

    // What the inputs would not take is refused, and nothing is set.
    let exe = setup
        .call(
            "upload_file",
            json!({"selector": "#many", "files": [sent("a.txt", b"a"), sent("setup.exe", b"MZ")]}),
        )
        .await;
    assert_eq!(exe.error_code(), "INVALID_ARGUMENT");
    assert!(
        exe.error()["message"]
            .as_str()
            .unwrap()
            .contains("setup.exe"),
        "{}",
        exe.error()
    );
    let two = setup
        .call(
            "upload_file",
            json!({"selector": "#plain", "files": [sent("a.txt", b"a"), sent("b.txt", b"b")]}),
        )
        .await;
    assert_eq!(two.error_code(), "INVALID_ARGUMENT");
    assert!(
        two.error()["message"]
            .as_str()
            .unwrap()
            .contains("takes one file"),
        "{}",
        two.error()
    );
    let nothing = setup
        .call(
            "upload_file",
            json!({"selector": "#nothing", "files": [sent("a.txt", b"a")], "timeoutMs": 5000}),
        )
        .await;
    assert_eq!(nothing.error_code(), "INVALID_ARGUMENT");
    // The listener armed for that click is gone with the upload: a click on a file input
    // afterwards (here the page's own) keeps its default, the chooser. Within 5 s: the page's
    // own timer would disarm it after 10 s.
    eventually(
        "the chooser listener to be disarmed",
        Duration::from_secs(5),
        || async {
            let prevented = setup
                .evaluate(
                    PAGE,
                    "document.getElementById('plain').click(), seen.lastClickPrevented",
                )
                .await;
            (prevented == false).then_some(())
        },
    )
    .await;
    assert_eq!(seen(&setup, "many").await.as_array().unwrap().len(), 2);
    assert_eq!(seen(&setup, "plain").await[0]["name"], "report.bin");
    assert_eq!(setup.evaluate(PAGE, "seen.events.length").await, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_styled_button_opens_its_hidden_input_and_drop_zones_take_drops() {
    let setup = OneBrowser::on("Files", PAGE).await;
    // The agent names the button it sees; the input behind it is hidden.
    let snapshot = setup.snapshot(json!({})).await;
    let button = ref_of(&snapshot, "button \"Attach your CV\"");
    let done = setup
        .call(
            "upload_file",
            json!({"selector": button, "files": [sent("cv.pdf", b"%PDF-1.4 cv")]}),
        )
        .await;
    let data = done.data();
    assert!(
        data["openedBy"]
            .as_str()
            .unwrap()
            .contains("Attach your CV"),
        "{data}"
    );
    assert_eq!(
        seen(&setup, "cv").await,
        json!([{"name": "cv.pdf", "size": 11, "type": "application/pdf", "sha256": sha256(b"%PDF-1.4 cv")}])
    );
    // The framework's state took it, and the page renders from it.
    assert_eq!(
        setup.evaluate(PAGE, "app.cv").await,
        json!({"name": "cv.pdf", "size": 11})
    );
    assert!(
        done.text.contains("Attached: cv.pdf"),
        "the observation shows the page's update: {}",
        done.text
    );

    // An input the page never added to the document: its chooser is kept closed, and the
    // agent is told.
    let detached = setup
        .call(
            "upload_file",
            json!({"selector": "#detached", "files": [sent("a.txt", b"a")]}),
        )
        .await;
    assert_eq!(detached.error_code(), "INVALID_ARGUMENT");
    assert!(
        detached.error()["message"]
            .as_str()
            .unwrap()
            .contains("outside the page's document"),
        "{}",
        detached.error()
    );
    assert_eq!(seen(&setup, "detached").await, Value::Null);

    // A drop zone gets a drop carrying the files, after dragenter and dragover.
    let dropped = setup
        .call(
            "upload_file",
            json!({"selector": "#zone", "mode": "drop", "files": [sent("a.csv", b"x,y\n1,2\n")]}),
        )
        .await;
    assert!(
        dropped.text.starts_with("Dropped \"a.csv\""),
        "{}",
        dropped.text
    );
    assert_eq!(
        seen(&setup, "zone").await,
        json!([{"name": "a.csv", "size": 8, "type": "text/csv", "sha256": sha256(b"x,y\n1,2\n")}])
    );
    let events = setup.evaluate(PAGE, "seen.events").await;
    assert_eq!(
        events,
        json!(["zone:dragenter", "zone:dragover", "zone:drop"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_are_read_only_inside_the_upload_directories_and_caps_hold() {
    let dir = Scratch::new("uploads");
    let allowed = dir.path().join("allowed");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&allowed).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(allowed.join("invoice.txt"), b"invoice 42").unwrap();
    std::fs::write(outside.join("id_rsa"), b"secret key").unwrap();
    std::os::unix::fs::symlink(outside.join("id_rsa"), allowed.join("key.txt")).unwrap();
    std::fs::write(allowed.join("big.txt"), noise(1_500_000)).unwrap();
    let setup = OneBrowser::with_hub_args(
        "Files",
        PAGE,
        &[
            "--upload-dir",
            allowed.to_str().unwrap(),
            "--max-upload-mb",
            "2",
            "--max-upload-file-mb",
            "1",
        ],
    )
    .await;
    let path = |p: std::path::PathBuf| json!({"path": p.to_str().unwrap()});

    setup
        .call(
            "upload_file",
            json!({"selector": "#plain", "files": [path(allowed.join("invoice.txt"))]}),
        )
        .await
        .data();
    assert_eq!(
        seen(&setup, "plain").await,
        json!([{"name": "invoice.txt", "size": 10, "type": "text/plain", "sha256": sha256(b"invoice 42")}])
    );
    for (file, says) in [
        (outside.join("id_rsa"), "outside the directories"),
        (allowed.join("key.txt"), "outside the directories"),
        (allowed.join("../outside/id_rsa"), "outside the directories"),
        (allowed.join("big.txt"), "--max-upload-file-mb"),
    ] {
        let refused = setup
            .call(
                "upload_file",
                json!({"selector": "#plain", "files": [path(file.clone())]}),
            )
            .await;
        let message = refused.error()["message"].as_str().unwrap().to_owned();
        assert!(message.contains(says), "{file:?}: {message}");
    }
    // Over the per-call cap in bytes sent by the client.
    let over = setup
        .call(
            "upload_file",
            json!({"selector": "#many", "files": [
                sent("a.txt", &noise(900_000)), sent("b.txt", &noise(900_000)), sent("c.txt", &noise(900_000))
            ]}),
        )
        .await;
    assert_eq!(over.error_code(), "INVALID_ARGUMENT");
    assert!(
        over.error()["message"]
            .as_str()
            .unwrap()
            .contains("--max-upload-mb"),
        "{}",
        over.error()
    );
    // Nothing of the refused calls reached the page.
    assert_eq!(seen(&setup, "plain").await[0]["name"], "invoice.txt");
    assert_eq!(seen(&setup, "many").await, Value::Null);

    // The audit log names the files and their sizes, never their bytes.
    let log = eventually(
        "the upload's audit record",
        Duration::from_secs(10),
        || async {
            let log = setup.hub.audit_command(&[]);
            log.contains("invoice.txt").then_some(log)
        },
    )
    .await;
    let record: Value = log
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|r| r["tool"] == "upload_file" && r["outcome"] == "ok")
        .expect("the upload's record");
    assert_eq!(
        record["files"],
        json!([{"name": "invoice.txt", "size": 10}])
    );
    assert!(!log.contains(&STANDARD.encode(b"invoice 42")), "{log}");
    assert!(!log.contains("invoice 42"), "{log}");
}

/// The policy judges an upload like any action: on an `ask` origin the person is asked, and
/// the question names the files (as the agent named them) and their sizes; a denied answer
/// sets nothing; an origin agents may only read refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_origin_names_the_files_and_a_read_only_one_refuses() {
    use crate::policy::{Setup, answer_in_popup, origin, popup_questions};
    use tabwire_e2e::scenario::{CONNECT_LIMIT, POPUP, loaded_tab};

    let setup = Setup::start(PAGE, |here, other| {
        format!(
            "[[rules]]\norigin = \"{here}\"\naccess = \"ask\"\n\n\
             [[rules]]\norigin = \"{other}\"\naccess = \"read\"\n"
        )
    })
    .await;
    let here = format!("{}/{PAGE}", origin(&setup.fixtures));
    let tab = loaded_tab(&setup.client, json!({}), &here).await;
    let popup = setup.browser.open_tab(POPUP).await;
    let upload = || {
        setup.call(
            "upload_file",
            json!({"tabId": tab, "selector": "#plain", "observe": false, "timeoutMs": 30_000,
                   "files": [sent("payslip-2026.pdf", b"%PDF-1.4 pay")]}),
        )
    };
    let (reply, ()) = tokio::join!(upload(), async {
        let question = eventually("the question in the popup", CONNECT_LIMIT, || async {
            let text = popup_questions(&popup).await;
            (!text.is_empty()).then_some(text)
        })
        .await;
        assert!(question.contains("upload_file"), "{question}");
        assert!(question.contains("payslip-2026.pdf"), "{question}");
        assert!(question.contains("12 bytes"), "{question}");
        answer_in_popup(&popup, "deny").await;
    });
    assert_eq!(reply.error_code(), "APPROVAL_DENIED", "{}", reply.text);
    let page_saw = || {
        setup
            .browser
            .evaluate_in(&here, "Promise.resolve(seen.plain || null)")
    };
    assert_eq!(page_saw().await, Value::Null);
    let (reply, ()) = tokio::join!(upload(), answer_in_popup(&popup, "once"));
    assert!(!reply.is_error, "{}", reply.text);
    assert_eq!(page_saw().await[0]["name"], "payslip-2026.pdf");

    // Agents may read the other origin, not act there: no upload.
    let there = format!("{}/{PAGE}", origin(&setup.other));
    let other_tab = setup.open(&there).await;
    let refused = setup
        .call(
            "upload_file",
            json!({"tabId": other_tab, "selector": "#plain", "files": [sent("a.txt", b"a")]}),
        )
        .await;
    assert_eq!(refused.error_code(), "ORIGIN_BLOCKED", "{}", refused.text);
    assert_eq!(
        setup
            .browser
            .evaluate_in(&there, "Promise.resolve(seen.plain || null)")
            .await,
        Value::Null
    );
}

/// The pages of a PDF Chrome printed: its page objects (`/Type /Page`, not `/Pages`).
fn pdf_pages(pdf: &[u8]) -> usize {
    let text = String::from_utf8_lossy(pdf);
    text.match_indices("/Type /Page")
        .filter(|(at, _)| !text[at + 11..].starts_with('s'))
        .count()
}

/// `save_pdf` prints a background tab as it is, with the pages asked for; what it cannot print
/// is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_tab_prints_to_pdf_with_its_pages() {
    let setup = OneBrowser::on("Files", PAGE).await;
    let tab = setup.open_tab("print.html").await;
    // The first tab stays the one shown: printing needs no switch.
    setup.browser.activate_tab(PAGE).await;
    let whole = setup
        .client
        .call_raw("save_pdf", json!({"tabId": tab}))
        .await;
    assert_ne!(whole.is_error, Some(true), "{whole:?}");
    let (pdf, mime) = embedded(&whole);
    assert_eq!(mime, "application/pdf");
    assert!(pdf.starts_with(b"%PDF-"), "{:?}", &pdf[..16.min(pdf.len())]);
    assert_eq!(pdf_pages(&pdf), 3);
    let reply = setup
        .call(
            "save_pdf",
            json!({"tabId": tab, "pageRanges": "2-3", "landscape": true}),
        )
        .await;
    assert_eq!(reply.data()["title"], "Receipt 2026-12");
    let some = setup
        .client
        .call_raw("save_pdf", json!({"tabId": tab, "pageRanges": "2-3"}))
        .await;
    assert_eq!(pdf_pages(&embedded(&some).0), 2);
    assert_eq!(
        setup
            .call("save_pdf", json!({"pageRanges": "two"}))
            .await
            .error_code(),
        "INVALID_ARGUMENT"
    );
    let past = setup
        .call("save_pdf", json!({"tabId": tab, "pageRanges": "9"}))
        .await;
    assert_eq!(past.error_code(), "INVALID_ARGUMENT", "{}", past.text);
    let tabs = setup.call("list_tabs", json!({})).await;
    let active: Vec<_> = tabwire_e2e::scenario::active_tabs(&tabs);
    assert!(
        !active.contains(&tab),
        "the printed tab was not brought forward"
    );
}

/// A PDF cannot be painted over: a page showing a frame agents may not read is not printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_showing_a_denied_frame_is_not_printed() {
    use crate::policy::Setup;
    use tabwire_e2e::scenario::CONNECT_LIMIT;

    let setup = Setup::start("frames.html", |here, _| {
        let denied = here.replace("127.0.0.1", "localhost");
        format!("[[rules]]\norigin = \"{denied}\"\naccess = \"deny\"\n")
    })
    .await;
    eventually("the denied frame to load", CONNECT_LIMIT, || async {
        let frames = setup.call("list_frames", json!({})).await;
        (frames.data()["frames"].as_array()?.len() >= 2).then_some(())
    })
    .await;
    let refused = setup.call("save_pdf", json!({})).await;
    assert_eq!(refused.error_code(), "ORIGIN_BLOCKED", "{}", refused.text);
}

/// A call longer than rmcp's default line (16 MiB) still reaches the hub whole over the local
/// socket: a 17 MB upload (23 MB of base64) sets exactly its bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_longer_than_a_default_mcp_line_arrives_whole() {
    let setup = OneBrowser::on("Files", PAGE).await;
    let big = noise(17_000_000);
    let done = setup
        .call(
            "upload_file",
            json!({"selector": "#plain", "files": [sent("video.bin", &big)], "observe": false}),
        )
        .await;
    assert!(!done.is_error, "{}", done.text);
    assert_eq!(seen(&setup, "plain").await[0]["sha256"], sha256(&big));
}

/// Hosted mode, through nginx with TLS: a client far away sends the bytes, and they arrive
/// exactly; a path is never read, whatever it names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_client_uploads_bytes_through_the_proxy_and_never_a_path() {
    use tabwire_e2e::Fixtures;
    use tabwire_e2e::hosted::{Hosted, Role};
    use tabwire_e2e::scenario::{connected_browser, loaded_tab};

    let fixtures = Fixtures::serve().await;
    let hosted = Hosted::start();
    let page = fixtures.url(PAGE);
    let browser = hosted.launch_browser(&hosted.issue("alice", Role::Browser), "Alice", &page);
    let agent = hosted.session(&hosted.issue("alice", Role::Agent)).await;
    connected_browser(&agent, "Alice").await;
    let tab = loaded_tab(&agent, json!({}), &page).await;
    // Under the default 4 MiB body: about 3 MB of files per call.
    let bytes = noise(2_000_000);
    let done = agent
        .call(
            "upload_file",
            json!({"tabId": tab, "selector": "#plain", "files": [sent("scan.bin", &bytes)]}),
        )
        .await;
    assert!(!done.is_error, "{}", done.text);
    let seen = browser
        .evaluate_in(PAGE, "Promise.resolve(seen.plain || null)")
        .await;
    assert_eq!(seen[0]["sha256"], sha256(&bytes));
    let path = agent
        .call(
            "upload_file",
            json!({"tabId": tab, "selector": "#plain", "files": [{"path": "/etc/hostname"}]}),
        )
        .await;
    assert_eq!(path.error_code(), "FORBIDDEN", "{}", path.text);
    assert!(
        path.error()["message"]
            .as_str()
            .unwrap()
            .contains("dataBase64"),
        "{}",
        path.error()
    );
}

/// Downloads (issue 26): a link to a server's attachment and a file the page makes itself
/// download; the click says so; the session that clicked lists them and reads their bytes;
/// another session sees none of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downloads_belong_to_the_session_that_started_them() {
    use tabwire_e2e::McpClient;
    use tabwire_e2e::fixtures::big_body;

    let setup = OneBrowser::on("Files", "downloads.html").await;
    // A navigation to an attachment, first thing in the tab (before anything attached its
    // debugger): the tab stays on its page, and the answer says so.
    let went = setup
        .call(
            "navigate_to",
            json!({"url": setup.fixtures.url("attachment?name=again.csv&kb=1")}),
        )
        .await;
    assert_eq!(
        went.data()["download"]["name"],
        "again.csv",
        "{}",
        went.text
    );
    assert!(
        went.data()["url"]
            .as_str()
            .unwrap()
            .ends_with("downloads.html")
    );
    assert!(went.text.contains("started download"), "{}", went.text);

    // The link's navigation turns into a download: the click says so instead of failing.
    let clicked = setup.click("#statement").await;
    assert!(!clicked.is_error, "{}", clicked.text);
    assert!(
        clicked.text.contains("started download"),
        "{}",
        clicked.text
    );
    let id = clicked.data()["downloads"][0]["id"].as_u64().unwrap();
    assert!(
        clicked.data().get("navigation").is_none(),
        "{}",
        clicked.data()
    );

    let done = eventually(
        "the statement to complete",
        Duration::from_secs(15),
        || async {
            let reply = setup
                .call("get_downloads", json!({"id": id, "waitMs": 5000}))
                .await;
            let download = reply.data()["downloads"][0].clone();
            (download["state"] == "complete").then_some(download)
        },
    )
    .await;
    let body = big_body(40);
    assert_eq!(done["name"], "statement-2026-11.csv");
    assert_eq!(done["size"], body.len());
    assert_eq!(done["mimeType"], "text/csv");
    // Local mode: where the file is, and it is the file.
    let path = done["path"].as_str().expect("a local download's path");
    assert_eq!(std::fs::read(path).unwrap(), body.as_bytes());
    // Its bytes, on request.
    let raw = setup
        .client
        .call_raw("get_downloads", json!({"id": id, "bytes": true}))
        .await;
    let (bytes, mime) = embedded(&raw);
    assert_eq!(
        (bytes.as_slice(), mime.as_str()),
        (body.as_bytes(), "text/csv")
    );

    // A file the page makes: a blob, read while the page keeps it.
    setup.click("#export").await.data();
    let notes = eventually(
        "the notes to be listed",
        Duration::from_secs(15),
        || async {
            let list = setup.call("get_downloads", json!({})).await;
            list.data()["downloads"]
                .as_array()?
                .iter()
                .find(|d| d["name"] == "notes.txt" && d["state"] == "complete")
                .cloned()
        },
    )
    .await;
    let raw = setup
        .client
        .call_raw("get_downloads", json!({"id": notes["id"], "bytes": true}))
        .await;
    assert_eq!(embedded(&raw).0, b"note one\nnote two\n");

    // Another session sees none of this.
    let other = McpClient::connect(&setup.hub).await;
    let list = other.call("get_downloads", json!({})).await;
    assert_eq!(list.data()["downloads"], json!([]), "{}", list.text);
    let refused = other
        .call("get_downloads", json!({"id": id, "bytes": true}))
        .await;
    assert_eq!(refused.error_code(), "INVALID_ARGUMENT", "{}", refused.text);
}

/// The extension as a person who turned the clipboard on in its popup has it: Chrome shows its
/// own confirmation for optional permissions, which headless Chromium cannot show (the
/// request stays pending), so this browser's copy of the manifest grants them outright.
fn clipboard_granted(extension: &std::path::Path) {
    let path = extension.join("manifest.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let optional = manifest
        .as_object_mut()
        .unwrap()
        .remove("optional_permissions")
        .unwrap();
    assert_eq!(optional, json!(["clipboardRead", "clipboardWrite"]));
    let permissions = manifest["permissions"].as_array_mut().unwrap();
    permissions.extend(optional.as_array().unwrap().iter().cloned());
    std::fs::write(&path, manifest.to_string()).unwrap();
}

/// What the popup says of the clipboard.
async fn popup_clipboard(setup: &OneBrowser) -> String {
    use tabwire_e2e::scenario::POPUP;
    setup.browser.open_tab(POPUP).await;
    let state = "Promise.resolve(document.getElementById('clipboardState').textContent)";
    let shown = eventually("the clipboard's state", Duration::from_secs(10), || async {
        let text = setup.browser.evaluate_in(POPUP, state).await;
        text.as_str()
            .filter(|t| !t.starts_with('…'))
            .map(str::to_owned)
    })
    .await;
    // The agent's calls go to the page again.
    setup.browser.activate_tab("clipboard.html").await;
    shown
}

/// The clipboard (an opt-in tool): refused until the person turns it on in the popup; then text
/// written by the agent reaches a page's paste event as a person's Ctrl+V brings it, a page's
/// copied text is read back, a denied origin's tab reads nothing, and the audit log keeps
/// lengths only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clipboard_round_trips_once_the_person_allows_it() {
    let setup = OneBrowser::on("Files", "clipboard.html").await;
    let refused = setup.call("clipboard", json!({})).await;
    assert_eq!(refused.error_code(), "FORBIDDEN", "{}", refused.text);
    assert!(refused.text.contains("popup"), "{}", refused.text);
    let refused = setup.call("clipboard", json!({"write": "x"})).await;
    assert_eq!(refused.error_code(), "FORBIDDEN", "{}", refused.text);
    assert!(popup_clipboard(&setup).await.contains("may not"));
    drop(setup);

    let setup = OneBrowser::patched("Files", "clipboard.html", clipboard_granted).await;
    assert!(popup_clipboard(&setup).await.contains("may read and write"));
    let secret = "line one — ✓\nline two";
    let wrote = setup.call("clipboard", json!({"write": secret})).await;
    assert!(!wrote.is_error, "{}", wrote.text);
    assert_eq!(wrote.data()["length"], secret.chars().count());
    let read = setup.call("clipboard", json!({})).await;
    assert_eq!(read.data()["text"], secret, "{}", read.text);

    // The agent pastes into the page as a person does: a trusted paste event with the text.
    setup.click("#paste").await;
    let pasted = setup
        .call(
            "press_key",
            json!({"key": "v", "modifiers": 2, "observe": false}),
        )
        .await;
    assert!(!pasted.is_error, "{}", pasted.text);
    let pastes = setup
        .evaluate("clipboard.html", "Promise.resolve(window.pastes)")
        .await;
    assert_eq!(pastes, json!([{"text": secret, "trusted": true}]));

    // A page's text, selected and copied with Ctrl+C, is read back.
    setup.click("#code").await;
    for key in ["a", "c"] {
        let pressed = setup
            .call(
                "press_key",
                json!({"key": key, "modifiers": 2, "observe": false}),
            )
            .await;
        assert!(!pressed.is_error, "{}", pressed.text);
    }
    let copied = setup.call("clipboard", json!({})).await;
    assert_eq!(copied.data()["text"], "XK-42-Q7 ✓", "{}", copied.text);

    // The audit log has the lengths, never the text.
    let (log, records) = eventually(
        "the clipboard's audit records",
        Duration::from_secs(10),
        || async {
            let log = setup.hub.audit_command(&[]);
            let records: Vec<Value> = log
                .lines()
                .map(|line| serde_json::from_str::<Value>(line).unwrap())
                .filter(|r| r["tool"] == "clipboard" && r["outcome"] == "ok")
                .collect();
            (records.len() == 3).then_some((log, records))
        },
    )
    .await;
    assert_eq!(records[0]["clipboard"], json!({"written": 21}), "{log}");
    assert_eq!(records[1]["clipboard"], json!({"read": 21}), "{log}");
    assert_eq!(records[2]["clipboard"], json!({"read": 10}), "{log}");
    assert!(!log.contains("line one") && !log.contains("XK-42"), "{log}");
}

/// Reading the clipboard is a sensitive read of the tab's page: an origin whose sensitive reads
/// the policy closes reads nothing, and one agents may only read cannot be written for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clipboard_is_judged_on_the_tabs_page() {
    use crate::policy::{Setup, origin};
    use tabwire_e2e::scenario::loaded_tab;

    let setup = Setup::start("clipboard.html", |here, other| {
        format!(
            "[[rules]]\norigin = \"{here}\"\naccess = \"act\"\nsensitive = \"deny\"\n\n\
             [[rules]]\norigin = \"{other}\"\naccess = \"read\"\n"
        )
    })
    .await;
    let here = format!("{}/clipboard.html", origin(&setup.fixtures));
    let tab = loaded_tab(&setup.client, json!({}), &here).await;
    let refused = setup.call("clipboard", json!({"tabId": tab})).await;
    assert_eq!(refused.error_code(), "ORIGIN_BLOCKED", "{}", refused.text);
    let there = format!("{}/clipboard.html", origin(&setup.other));
    let other_tab = setup.open(&there).await;
    let refused = setup
        .call("clipboard", json!({"tabId": other_tab, "write": "x"}))
        .await;
    assert_eq!(refused.error_code(), "ORIGIN_BLOCKED", "{}", refused.text);
}
