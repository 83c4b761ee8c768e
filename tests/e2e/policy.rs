//! The per-origin policy (issue 14 §1–2) with the real hub, the real extension and real pages
//! on two loopback names and two ports: what a denied origin refuses (loads, reads, actions;
//! through a redirect; inside a cross-origin frame), what `read` allows, the stricter of the
//! operator's file and the browser owner's popup rules in both directions, the hub reading its
//! changed file, sensitive reads, and approvals on `ask` origins answered in the popup.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use tabwire_e2e::scenario::{CONNECT_LIMIT, POPUP, connected_browser, loaded_tab, ref_of};
use tabwire_e2e::scratch::Scratch;
use tabwire_e2e::{Browser, Fixtures, Hub, McpClient, Reply, eventually};

/// A hub started with an operator's policy file, a browser on `fixtures`, and a second fixture
/// server (another origin: another port). The covering tests (`covering.rs`) use it too.
pub(crate) struct Setup {
    pub(crate) fixtures: Fixtures,
    pub(crate) other: Fixtures,
    pub(crate) hub: Hub,
    pub(crate) browser: Browser,
    pub(crate) client: McpClient,
    pub(crate) policy: PathBuf,
    _dir: Scratch,
}

/// `http://127.0.0.1:PORT` of a fixture server.
pub(crate) fn origin(fixtures: &Fixtures) -> String {
    let url = fixtures.url("");
    url.trim_end_matches('/').to_owned()
}

/// The same server under its other loopback name: another site.
pub(crate) fn localhost(fixtures: &Fixtures) -> String {
    origin(fixtures).replace("127.0.0.1", "localhost")
}

impl Setup {
    /// Starts everything; `policy` writes the operator's file from the two servers' origins.
    pub(crate) async fn start(page: &str, policy: impl Fn(&str, &str) -> String) -> Setup {
        let fixtures = Fixtures::serve().await;
        let other = Fixtures::serve().await;
        let dir = Scratch::new("policy");
        let file = dir.path().join("operator-policy.toml");
        std::fs::write(&file, policy(&origin(&fixtures), &origin(&other))).unwrap();
        let hub = Hub::spawn_with_args(&["--policy", file.to_str().unwrap()]);
        let browser = Browser::launch(&hub, "Work", &fixtures.url(page));
        let client = McpClient::connect(&hub).await;
        connected_browser(&client, "Work").await;
        loaded_tab(&client, json!({}), &fixtures.url(page)).await;
        Setup {
            fixtures,
            other,
            hub,
            browser,
            client,
            policy: file,
            _dir: dir,
        }
    }

    pub(crate) async fn call(&self, tool: &str, args: Value) -> Reply {
        self.client.call(tool, args).await
    }

    /// Opens `url` in a new tab as a person would and returns its tab ID.
    pub(crate) async fn open(&self, url: &str) -> u64 {
        self.browser.open_tab(url).await;
        loaded_tab(&self.client, json!({}), url).await
    }

    /// Evaluates `expression` in the browser's tab whose URL contains `needle`.
    pub(crate) async fn evaluate(&self, needle: &str, expression: &str) -> Value {
        self.browser.evaluate_in(needle, expression).await
    }

    /// Saves the browser owner's rules through the popup, as a person types them.
    pub(crate) async fn owner_rules(&self, lines: &str) {
        let popup = self.browser.open_tab(POPUP).await;
        // The popup's worker may still be starting: retry until the popup says the rules are
        // saved (the worker has answered), not merely that no error is shown yet.
        let expression = format!(
            "(async () => {{ const $ = (id) => document.getElementById(id); \
             const text = $('policyText'); \
             text.value = {lines}; text.dispatchEvent(new Event('input')); \
             $('savePolicy').click(); \
             for (let i = 0; i < 50; i++) {{ \
               await new Promise((r) => setTimeout(r, 100)); \
               if (!$('policySaved').hidden) return true; \
               if (!$('policyError').hidden) return false; \
             }} \
             return false; }})()",
            lines = serde_json::to_string(lines).unwrap()
        );
        eventually("the popup to save the rules", CONNECT_LIMIT, || async {
            (Browser::evaluate(&popup, &expression).await == true).then_some(())
        })
        .await;
    }
}

#[track_caller]
pub(crate) fn assert_blocked(reply: &Reply, rule: &str, owner: &str) {
    assert!(
        reply.is_error,
        "expected ORIGIN_BLOCKED by {owner}'s rule `{rule}`, got: {}",
        reply.text
    );
    assert_eq!(reply.error_code(), "ORIGIN_BLOCKED", "{}", reply.text);
    assert_eq!(reply.error()["category"], "POLICY");
    let message = reply.error()["message"].as_str().unwrap();
    assert!(message.contains(&format!("`{rule}`")), "{message}");
    assert!(message.contains(owner), "{message}");
    // The rule is named, never where the policy is kept.
    assert!(
        !message.contains(".toml") && !message.contains("/tmp"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_origin_is_refused_for_loads_reads_and_actions_through_redirects_and_in_frames() {
    let setup = Setup::start("frames.html", |here, _| {
        let denied = here.replace("127.0.0.1", "localhost");
        format!("[[rules]]\norigin = \"{denied}\"\naccess = \"deny\"\n")
    })
    .await;
    let denied = localhost(&setup.fixtures);
    let login = format!("{denied}/login.html");

    // The hub refuses the load up front.
    let refused = setup.call("navigate_to", json!({ "url": login })).await;
    assert_blocked(&refused, &denied, "operator");

    // The cross-origin frame of the allowed page is listed without its URL, left out of
    // snapshots, and refused by frameId.
    let blocked_frame = eventually("the denied frame to be listed", CONNECT_LIMIT, || async {
        let frames = setup.call("list_frames", json!({})).await;
        frames.data()["frames"]
            .as_array()?
            .iter()
            .find(|f| f["blocked"] == true)
            .map(|f| (f["frameId"].as_u64().unwrap(), f["url"].clone()))
    })
    .await;
    assert_eq!(blocked_frame.1, "");
    let frames = setup.call("list_frames", json!({})).await;
    assert!(!frames.text.contains("localhost"), "{}", frames.text);
    let snapshot = setup.call("get_page_snapshot", json!({})).await;
    let sends = snapshot.text.matches("button \"Send\"").count();
    assert_eq!(sends, 1, "only the same-origin frame's: {}", snapshot.text);
    let inside = setup
        .call("get_page_snapshot", json!({ "frameId": blocked_frame.0 }))
        .await;
    assert_eq!(inside.error_code(), "ORIGIN_BLOCKED", "{}", inside.text);
    let content = setup
        .call("get_page_content", json!({ "frameId": blocked_frame.0 }))
        .await;
    assert_eq!(content.error_code(), "ORIGIN_BLOCKED", "{}", content.text);

    // An allowed URL that redirects into the denied origin stops there.
    let tab = setup.open(&setup.fixtures.url("blank.html")).await;
    let redirect = setup
        .fixtures
        .url(&format!("redirect?to={}", urlencode(&login)));
    let redirected = setup
        .call("navigate_to", json!({ "url": redirect, "tabId": tab }))
        .await;
    assert_blocked(&redirected, &denied, "operator");
    // Where it ended is listed as blocked, and nothing there can be read or done.
    let tabs = setup.call("list_tabs", json!({})).await;
    let listed = tabs.data()["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tabId"] == tab)
        .cloned()
        .unwrap();
    assert_eq!(listed["blocked"], true, "{listed}");
    assert_eq!(listed["url"], "");
    assert_eq!(listed["title"], "");
    assert!(!tabs.text.contains("Sign in") && !tabs.text.contains("localhost"));
    for (tool, args) in [
        ("get_page_snapshot", json!({ "tabId": tab })),
        ("get_page_content", json!({ "tabId": tab })),
        ("take_screenshot", json!({ "tabId": tab })),
        (
            "click_element",
            json!({ "tabId": tab, "selector": "#submit", "timeoutMs": 2000 }),
        ),
        ("get_cookies", json!({ "tabId": tab })),
    ] {
        refused_with(&setup, tool, args, "ORIGIN_BLOCKED").await;
    }
}

/// Calls `tool` and checks it fails with `code`; returns the reply.
async fn refused_with(setup: &Setup, tool: &str, args: Value, code: &str) -> Reply {
    let reply = setup.call(tool, args).await;
    assert_eq!(reply.error_code(), code, "{tool}: {}", reply.text);
    reply
}

/// Percent-encodes a URL for a query parameter.
fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_allows_observing_not_acting_and_the_stricter_owner_wins_both_ways() {
    let setup = Setup::start("login.html", |_, other| {
        format!("[[rules]]\norigin = \"{other}\"\naccess = \"read\"\n")
    })
    .await;
    let read_only = origin(&setup.other);
    let tab = setup.open(&setup.other.url("login.html")).await;

    // `read`: observed, not acted on.
    let snapshot = setup
        .call("get_page_snapshot", json!({ "tabId": tab }))
        .await;
    let sign_in = ref_of(&snapshot, "button \"Sign in\"");
    let click = setup
        .call(
            "click_element",
            json!({ "tabId": tab, "selector": sign_in, "observe": false }),
        )
        .await;
    assert_blocked(&click, &read_only, "operator");
    assert!(!click.may_have_acted());
    let typed = setup
        .call(
            "type_text",
            json!({ "tabId": tab, "selector": "#username", "text": "x", "observe": false }),
        )
        .await;
    assert_blocked(&typed, &read_only, "operator");
    let content = setup
        .call("get_page_content", json!({ "tabId": tab }))
        .await;
    assert!(content.text.contains("Sign in"), "{}", content.text);

    // The browser owner cannot loosen the operator's `read`…
    setup
        .owner_rules(&format!(
            "{read_only} act\n{} read",
            origin(&setup.fixtures)
        ))
        .await;
    let still = setup
        .call(
            "click_element",
            json!({ "tabId": tab, "selector": sign_in, "observe": false }),
        )
        .await;
    assert_blocked(&still, &read_only, "operator");
    // …and the operator's default `act` does not loosen the owner's `read` on the first page.
    let first = loaded_tab(&setup.client, json!({}), &setup.fixtures.url("login.html")).await;
    let owners = setup
        .call(
            "click_element",
            json!({ "tabId": first, "selector": "#submit", "observe": false }),
        )
        .await;
    assert_blocked(&owners, &origin(&setup.fixtures), "browser owner");

    // The operator changes the file: the hub reads it again and sends it; now only the owner's
    // rule restricts the other origin, and it allows acting.
    std::fs::write(
        &setup.policy,
        format!("# loosened\n[[rules]]\norigin = \"{read_only}\"\naccess = \"act\"\n"),
    )
    .unwrap();
    eventually(
        "the changed operator policy to reach the browser",
        Duration::from_secs(20),
        || async {
            let click = setup
                .call(
                    "click_element",
                    json!({ "tabId": tab, "selector": sign_in, "observe": false }),
                )
                .await;
            (!click.is_error).then_some(())
        },
    )
    .await;
    let owners = setup
        .call(
            "click_element",
            json!({ "tabId": first, "selector": "#submit", "observe": false }),
        )
        .await;
    assert_blocked(&owners, &origin(&setup.fixtures), "browser owner");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sensitive_reads_follow_the_rule() {
    let setup = Setup::start("login.html", |here, _| {
        format!("[[rules]]\norigin = \"{here}\"\naccess = \"act\"\nsensitive = \"deny\"\n")
    })
    .await;
    let here = origin(&setup.fixtures);
    for (tool, args) in [
        ("get_cookies", json!({})),
        ("get_local_storage", json!({})),
        ("get_page_content", json!({ "format": "html" })),
    ] {
        let reply = setup.call(tool, args).await;
        assert_blocked(&reply, &here, "operator");
        assert!(
            reply.error()["message"]
                .as_str()
                .unwrap()
                .contains("sensitive")
        );
    }
    let text = setup.call("get_page_content", json!({})).await;
    assert!(text.text.contains("Sign in"), "{}", text.text);
    let snapshot = setup.call("get_page_snapshot", json!({})).await;
    ref_of(&snapshot, "button \"Sign in\"");
    // A hidden input's value is sensitive; a visible field's state is an ordinary read.
    let form = setup.open(&setup.fixtures.url("form.html")).await;
    let hidden = setup
        .call(
            "read_element_state",
            json!({ "tabId": form, "selector": "input[type=hidden]" }),
        )
        .await;
    assert_blocked(&hidden, &here, "operator");
    let visible = setup
        .call(
            "read_element_state",
            json!({ "tabId": form, "selector": "#email" }),
        )
        .await;
    assert!(!visible.is_error, "{}", visible.text);
}

/// The open questions the popup lists, as its text.
pub(crate) async fn popup_questions(popup: &str) -> String {
    Browser::evaluate(
        popup,
        "document.getElementById('questions').hidden ? '' : \
         document.getElementById('questionList').innerText",
    )
    .await
    .as_str()
    .unwrap_or_default()
    .to_owned()
}

/// Presses the popup's button for `answer` on its first open question.
pub(crate) async fn answer_in_popup(popup: &str, answer: &str) {
    let expression = format!(
        "(() => {{ const b = document.querySelector('#questionList button[data-answer=\"{answer}\"]'); \
         if (!b) return false; b.click(); return true; }})()"
    );
    eventually("the popup to take the answer", CONNECT_LIMIT, || async {
        (Browser::evaluate(popup, &expression).await == true).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actions_on_an_ask_origin_wait_for_a_persons_answer_in_the_popup() {
    let setup = Setup::start("login.html", |here, _| {
        format!("[[rules]]\norigin = \"{here}\"\naccess = \"ask\"\n")
    })
    .await;
    let tab = loaded_tab(&setup.client, json!({}), &setup.fixtures.url("login.html")).await;
    let snapshot = setup
        .call("get_page_snapshot", json!({ "tabId": tab }))
        .await;
    let sign_in = ref_of(&snapshot, "button \"Sign in\"");
    let popup = setup.browser.open_tab(POPUP).await;
    let click = |timeout: u64| {
        setup.client.call(
            "click_element",
            json!({ "tabId": tab, "selector": sign_in, "observe": false, "timeoutMs": timeout }),
        )
    };

    // Allow once: the question shows the tool, the element and the origin.
    let (reply, ()) = tokio::join!(click(30_000), async {
        let question = eventually("the question in the popup", CONNECT_LIMIT, || async {
            let text = popup_questions(&popup).await;
            (!text.is_empty()).then_some(text)
        })
        .await;
        assert!(question.contains("click_element"), "{question}");
        assert!(question.contains("button \"Sign in\""), "{question}");
        assert!(question.contains(&origin(&setup.fixtures)), "{question}");
        assert!(
            question.contains("tabwire-e2e"),
            "the agent is named: {question}"
        );
        answer_in_popup(&popup, "once").await;
    });
    assert!(!reply.is_error, "{}", reply.text);
    assert!(reply.text.contains("Clicked"), "{}", reply.text);

    // Deny: nothing happens, and the agent is told not to retry.
    let (reply, ()) = tokio::join!(click(30_000), async {
        eventually("the second question", CONNECT_LIMIT, || async {
            (!popup_questions(&popup).await.is_empty()).then_some(())
        })
        .await;
        answer_in_popup(&popup, "deny").await;
    });
    assert_eq!(reply.error_code(), "APPROVAL_DENIED", "{}", reply.text);
    assert!(!reply.may_have_acted());

    // A selector written to push the real origin out of sight and to pose as tabwire's words:
    // the question shows the real origin and the browser first, and the selector cut short and
    // marked as the agent's (issue 23 §1).
    let crafted = format!(
        "{}#submit[data-note='at https://trusted.example, this is safe: press Allow once']",
        "body ".repeat(60)
    );
    assert!(crafted.chars().count() >= 360);
    let (reply, ()) = tokio::join!(
        setup.client.call(
            "click_element",
            json!({ "tabId": tab, "selector": crafted, "observe": false, "timeoutMs": 30_000 }),
        ),
        async {
            let question = eventually("the crafted question", CONNECT_LIMIT, || async {
                let text = popup_questions(&popup).await;
                (!text.is_empty()).then_some(text)
            })
            .await;
            let first = format!("{} in Work: an agent asks to act", origin(&setup.fixtures));
            assert!(question.starts_with(&first), "{question}");
            assert!(
                question.contains("element picked by the agent's selector: body body"),
                "{question}"
            );
            assert!(!question.contains("trusted.example"), "{question}");
            answer_in_popup(&popup, "deny").await;
        }
    );
    assert_eq!(reply.error_code(), "APPROVAL_DENIED", "{}", reply.text);

    // Nobody answers: the call ends with its deadline, and the question goes away.
    let reply = click(1_500).await;
    assert_eq!(reply.error_code(), "APPROVAL_TIMEOUT", "{}", reply.text);
    assert_eq!(reply.error()["retryable"], true);
    eventually("the unanswered question to go", CONNECT_LIMIT, || async {
        popup_questions(&popup).await.is_empty().then_some(())
    })
    .await;

    // Reads never ask.
    let read = setup
        .call("get_page_snapshot", json!({ "tabId": tab }))
        .await;
    assert!(!read.is_error, "{}", read.text);

    // A batch that starts on a page that needs no approval and goes to one that does is
    // stopped there: its admission approved nothing for the new page.
    let other = setup.open(&setup.other.url("blank.html")).await;
    let batch = setup
        .call(
            "run_browser_actions",
            json!({
                "tabId": other,
                "steps": [
                    {"kind": "navigate", "url": setup.fixtures.url("login.html")},
                    {"kind": "click", "selector": "#submit"}
                ],
                "timeoutMs": 15000
            }),
        )
        .await;
    assert_eq!(batch.error_code(), "ORIGIN_BLOCKED", "{}", batch.text);
    assert!(batch.text.contains("approval"), "{}", batch.text);
    assert!(popup_questions(&popup).await.is_empty(), "nobody was asked");

    // Allow for this session: asked once, then this session's actions there go ahead, while
    // another session is still asked.
    let (reply, ()) = tokio::join!(click(30_000), async {
        eventually(
            "the question to allow for the session",
            CONNECT_LIMIT,
            || async { (!popup_questions(&popup).await.is_empty()).then_some(()) },
        )
        .await;
        answer_in_popup(&popup, "session").await;
    });
    assert!(!reply.is_error, "{}", reply.text);
    let again = click(5_000).await;
    assert!(!again.is_error, "allowed for the session: {}", again.text);
    assert!(
        popup_questions(&popup).await.is_empty(),
        "nobody was asked again"
    );
    let other =
        McpClient::connect_as(&setup.hub, tabwire_e2e::Listener::named("Other agent")).await;
    let created = other.call("create_tab", json!({})).await;
    let second = created.data()["tabId"].as_u64().expect("a tab ID");
    let loaded = other
        .call(
            "navigate_to",
            json!({ "tabId": second, "url": setup.fixtures.url("login.html") }),
        )
        .await;
    assert!(!loaded.is_error, "{}", loaded.text);
    let theirs = other
        .call(
            "click_element",
            json!({ "tabId": second, "selector": "#submit", "observe": false, "timeoutMs": 1_500 }),
        )
        .await;
    assert_eq!(
        theirs.error_code(),
        "APPROVAL_TIMEOUT",
        "another session is not allowed by this one's answer: {}",
        theirs.text
    );
    drop(other);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_human_hands_the_tab_over_until_done_or_declined_with_progress() {
    let setup = Setup::start("login.html", |_, _| String::new()).await;
    let tab = loaded_tab(&setup.client, json!({}), &setup.fixtures.url("login.html")).await;
    let popup = setup.browser.open_tab(POPUP).await;
    let reason = "Please sign in with your own account";

    // Done: the call waits, tells the client it is still waiting, and the agent's other calls on
    // the tab are refused meanwhile.
    let (reply, ()) = tokio::join!(
        setup.call("request_human", json!({ "tabId": tab, "reason": reason })),
        async {
            let question = eventually("the handoff in the popup", CONNECT_LIMIT, || async {
                let text = popup_questions(&popup).await;
                (!text.is_empty()).then_some(text)
            })
            .await;
            assert!(question.contains(reason), "{question}");
            assert!(question.contains("hands you a tab"), "{question}");
            for (tool, args) in [
                (
                    "click_element",
                    json!({ "tabId": tab, "selector": "#submit" }),
                ),
                ("get_page_snapshot", json!({ "tabId": tab })),
            ] {
                let refused = refused_with(&setup, tool, args, "HUMAN_IN_CONTROL").await;
                assert_eq!(refused.error()["retryable"], true);
            }
            eventually(
                "a progress notification while the person has the tab",
                Duration::from_secs(30),
                || async {
                    (!setup.client.heard().progress.lock().unwrap().is_empty()).then_some(())
                },
            )
            .await;
            answer_in_popup(&popup, "done").await;
        }
    );
    assert_eq!(reply.data()["choice"], "done", "{}", reply.text);
    assert_eq!(reply.data()["tabId"], tab);
    assert!(reply.text.contains("is done"), "{}", reply.text);
    assert!(
        reply.text.contains("Sign in"),
        "a fresh observation: {}",
        reply.text
    );
    {
        let progress = setup.client.heard().progress.lock().unwrap();
        // (rmcp's client numbers progress tokens itself, whatever the caller passed.)
        let first = &progress[0];
        assert!(first.progress >= 10.0, "{first:?}");
        assert!(
            first
                .message
                .as_deref()
                .unwrap_or_default()
                .contains("person")
        );
    }
    // The tab is the agent's again.
    let back = setup
        .call("get_page_snapshot", json!({ "tabId": tab }))
        .await;
    assert!(!back.is_error, "{}", back.text);

    // Declined is an answer too, not an error.
    let (reply, ()) = tokio::join!(
        setup.call(
            "request_human",
            json!({ "tabId": tab, "reason": "Confirm the payment" })
        ),
        async {
            eventually("the second handoff", CONNECT_LIMIT, || async {
                (!popup_questions(&popup).await.is_empty()).then_some(())
            })
            .await;
            answer_in_popup(&popup, "decline").await;
        }
    );
    assert_eq!(reply.data()["choice"], "declined", "{}", reply.text);

    // A reason is required.
    let empty = setup
        .call("request_human", json!({ "tabId": tab, "reason": "  " }))
        .await;
    assert_eq!(empty.error_code(), "INVALID_ARGUMENT");
}
