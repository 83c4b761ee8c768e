//! Recording a person's actions (`record_actions`, and the steps a `request_human` handoff
//! returns) in real Chromium: the person's trusted input, simulated through the page's own
//! DevTools socket (which Chrome marks as trusted, as it does a person's), comes back as
//! `run_browser_actions` steps that replay to the same end state — a login with its password
//! kept out as a placeholder, a form across two pages with a wait for the second, a custom
//! dropdown and a mouse drag, a form the page renders again — only with the person's consent
//! in the popup, shown while it runs (badge, popup list), stoppable by the person, refused
//! where the policy denies sensitive reads; the agent's own input is never recorded.
//!
//! What a page shows is read through DevTools, so a test cannot pass on what a tool says.

use std::time::Duration;

use serde_json::{Value, json};
use tabwire_e2e::browser::DevToolsPage;
use tabwire_e2e::scenario::{CONNECT_LIMIT, OneBrowser, POPUP, loaded_tab};
use tabwire_e2e::{Browser, McpClient, Reply, eventually};

use crate::policy::{Setup, answer_in_popup, popup_questions};

/// The password record-login.html accepts; typed by the person, never in a reply.
const SECRET: &str = "S3cret-horse!";

/// The value of `expression` in the page behind `page_ws`, on a fresh DevTools session; `None`
/// when the page cannot answer now (it is navigating).
async fn try_evaluate(page_ws: &str, expression: &str) -> Option<Value> {
    let mut page = DevToolsPage::connect(page_ws).await.ok()?;
    page.evaluate(expression).await.ok()
}

/// The person at the browser: trusted input through the tab's own DevTools session.
struct Person {
    /// The tab's DevTools WebSocket URL (the same across the tab's navigations).
    ws: String,
    input: DevToolsPage,
}

impl Person {
    /// Brings the tab whose URL contains `needle` to the front, as the person switching to it.
    async fn at(browser: &Browser, needle: &str) -> Person {
        browser.activate_tab(needle).await;
        let ws = browser.page_ws(needle).await;
        let input = DevToolsPage::connect(&ws)
            .await
            .expect("the page's DevTools session");
        Person { ws, input }
    }

    /// The centre of the element `selector` picks, once it is there and has a box (scrolled
    /// into view if it is not).
    async fn centre(&self, selector: &str) -> (f64, f64) {
        let expression = format!(
            "(() => {{ const el = document.querySelector({selector}); if (!el) return null; \
             el.scrollIntoView({{block: 'nearest', inline: 'nearest'}}); \
             const box = el.getBoundingClientRect(); \
             if (box.width === 0 || box.height === 0) return null; \
             return [box.x + box.width / 2, box.y + box.height / 2]; }})()",
            selector = json!(selector)
        );
        eventually(
            &format!("{selector} to be on the page with a box"),
            CONNECT_LIMIT,
            || async {
                let centre = try_evaluate(&self.ws, &expression).await?;
                Some((centre[0].as_f64()?, centre[1].as_f64()?))
            },
        )
        .await
    }

    /// One `Input.dispatchMouseEvent`.
    async fn mouse(
        &mut self,
        kind: &str,
        (x, y): (f64, f64),
        button: &str,
        buttons: u8,
        clicks: u8,
    ) {
        let event = json!({"type": kind, "x": x, "y": y, "button": button,
            "buttons": buttons, "clickCount": clicks});
        self.input
            .call("Input.dispatchMouseEvent", event)
            .await
            .unwrap_or_else(|error| panic!("{kind} at ({x}, {y}): {error}"));
    }

    /// Clicks the element `selector` picks, at its centre: move, press, release.
    async fn click(&mut self, selector: &str) {
        let at = self.centre(selector).await;
        self.mouse("mouseMoved", at, "none", 0, 0).await;
        self.mouse("mousePressed", at, "left", 1, 1).await;
        self.mouse("mouseReleased", at, "left", 0, 1).await;
    }

    /// Waits as a person between two things does: longer than the queue's clock slack around
    /// an agent's request, within which a person's input counts as the agent's.
    async fn pause(&self) {
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }

    /// Types `text` into the focused field, one character at a time (one input event each).
    async fn type_text(&mut self, text: &str) {
        for character in text.chars() {
            self.input
                .call("Input.insertText", json!({"text": character.to_string()}))
                .await
                .unwrap_or_else(|error| panic!("typing {character:?}: {error}"));
        }
    }

    /// Presses and releases `key` (`Enter`, `Tab`, `Escape`, or a lowercase letter) on the
    /// focused element.
    async fn press(&mut self, key: &str) {
        let (code, virtual_code, text) = match key {
            "Enter" => ("Enter".to_owned(), 13, Some("\r".to_owned())),
            "Tab" => ("Tab".to_owned(), 9, None),
            "Escape" => ("Escape".to_owned(), 27, None),
            letter if letter.len() == 1 && letter.chars().all(|c| c.is_ascii_lowercase()) => {
                let upper = letter.to_ascii_uppercase();
                let virtual_code = upper.chars().next().unwrap() as u32;
                (format!("Key{upper}"), virtual_code, Some(letter.to_owned()))
            }
            other => panic!("no key codes for {other:?}"),
        };
        let mut down = json!({"type": "rawKeyDown", "key": key, "code": code,
            "windowsVirtualKeyCode": virtual_code, "nativeVirtualKeyCode": virtual_code});
        if let Some(text) = &text {
            down["type"] = "keyDown".into();
            down["text"] = text.as_str().into();
            down["unmodifiedText"] = text.as_str().into();
        }
        let up = json!({"type": "keyUp", "key": key, "code": code,
            "windowsVirtualKeyCode": virtual_code, "nativeVirtualKeyCode": virtual_code});
        for event in [down, up] {
            self.input
                .call("Input.dispatchKeyEvent", event)
                .await
                .unwrap_or_else(|error| panic!("pressing {key}: {error}"));
        }
    }

    /// Drags from the centre of `from` to the centre of `to` with the left button held,
    /// moving in small steps as a hand does.
    async fn drag(&mut self, from: &str, to: &str) {
        let start = self.centre(from).await;
        let end = self.centre(to).await;
        self.mouse("mouseMoved", start, "none", 0, 0).await;
        self.mouse("mousePressed", start, "left", 1, 1).await;
        for step in 1..=10 {
            let t = f64::from(step) / 10.0;
            let at = (
                start.0 + (end.0 - start.0) * t,
                start.1 + (end.1 - start.1) * t,
            );
            self.mouse("mouseMoved", at, "left", 1, 0).await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.mouse("mouseReleased", end, "left", 0, 1).await;
    }

    /// Waits until the element `selector` picks shows exactly `expected` (its text content),
    /// in whatever document the tab shows by then.
    async fn sees(&self, selector: &str, expected: &str) {
        let expression = format!(
            "document.querySelector({})?.textContent ?? null",
            json!(selector)
        );
        let give_up = tokio::time::Instant::now() + CONNECT_LIMIT;
        loop {
            let shown = try_evaluate(&self.ws, &expression)
                .await
                .unwrap_or(Value::Null);
            if shown == expected {
                return;
            }
            assert!(
                tokio::time::Instant::now() < give_up,
                "timed out after {CONNECT_LIMIT:?} waiting for {selector} to show {expected:?}; \
                 it shows {shown}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The value of `expression` in the tab's page now.
    async fn evaluate(&self, expression: &str) -> Value {
        Browser::evaluate(&self.ws, expression).await
    }
}

/// Calls `record_actions {start}` on `tab` and answers the popup's question with `answer`
/// (`once` or `deny`); returns the reply.
async fn start_recording(client: &McpClient, popup: &str, tab: u64, answer: &str) -> Reply {
    let (reply, ()) = tokio::join!(
        client.call(
            "record_actions",
            json!({"tabId": tab, "start": true, "timeoutMs": 30_000}),
        ),
        async {
            let question = eventually(
                "the recording question in the popup",
                CONNECT_LIMIT,
                || async {
                    let text = popup_questions(popup).await;
                    (!text.is_empty()).then_some(text)
                },
            )
            .await;
            assert!(
                question.to_lowercase().contains("record"),
                "the question says the person's input is recorded: {question}"
            );
            answer_in_popup(popup, answer).await;
        }
    );
    reply
}

/// Starts recording `tab` with the person's consent; checks the reply.
/// A browser on `page` in a tab the person allowed to record (in the popup, which stays open):
/// the setup, the page's URL and the tab.
async fn recorded_tab(page: &str) -> (OneBrowser, String, u64) {
    let setup = OneBrowser::on("Work", page).await;
    let url = setup.fixtures.url(page);
    let tab = loaded_tab(&setup.client, json!({}), &url).await;
    let popup = setup.browser.open_tab(POPUP).await;
    recording_allowed(&setup.client, &popup, tab).await;
    (setup, url, tab)
}

async fn recording_allowed(client: &McpClient, popup: &str, tab: u64) {
    let started = start_recording(client, popup, tab, "once").await;
    assert!(!started.is_error, "start: {}", started.text);
    assert_eq!(started.data()["recording"], true, "{}", started.text);
    assert_eq!(started.data()["tabId"], tab, "{}", started.text);
}

/// Calls `record_actions {stop}` on `tab`; checks it ended as `ended_by` says and returns the
/// reply.
async fn stop_recording(client: &McpClient, tab: u64, ended_by: &str) -> Reply {
    let stopped = client
        .call("record_actions", json!({"tabId": tab, "stop": true}))
        .await;
    assert!(!stopped.is_error, "stop: {}", stopped.text);
    let data = stopped.data();
    assert_eq!(data["recording"], false, "{}", stopped.text);
    assert_eq!(data["tabId"], tab, "{}", stopped.text);
    assert_eq!(data["endedBy"], ended_by, "{}", stopped.text);
    assert_eq!(data["omitted"], 0, "{}", stopped.text);
    assert!(data["notes"].is_array(), "{}", stopped.text);
    stopped
}

/// The steps of a reply (`data.steps`).
fn steps_of(reply: &Reply) -> Vec<Value> {
    reply.data()["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("no steps in the reply: {}", reply.text))
        .clone()
}

/// The index of the first step of `kind` on `selector`.
fn position(steps: &[Value], kind: &str, selector: &str) -> Option<usize> {
    steps
        .iter()
        .position(|step| step["kind"] == kind && step["selector"] == selector)
}

/// The `type` steps on `selector`.
fn typed<'a>(steps: &'a [Value], selector: &str) -> Vec<&'a Value> {
    steps
        .iter()
        .filter(|step| step["kind"] == "type" && step["selector"] == selector)
        .collect()
}

/// Checks the steps hold exactly one `type` step on `selector` and returns it.
#[track_caller]
fn one_type_step<'a>(steps: &'a [Value], selector: &str, reply: &Reply) -> &'a Value {
    let typed = typed(steps, selector);
    assert_eq!(
        typed.len(),
        1,
        "one type step on {selector} (keystrokes in one field are one step): {}",
        reply.text
    );
    typed[0]
}

/// Checks `secret` is nowhere in the reply: not in its text (fenced or not), not in its data.
#[track_caller]
fn assert_kept_out(reply: &Reply, secret: &str) {
    assert!(
        !reply.fenced.contains(secret),
        "the secret is in the text: {}",
        reply.text
    );
    assert!(
        !reply.structured.to_string().contains(secret),
        "the secret is in the data: {}",
        reply.structured
    );
}

/// Checks no step names an element by ref: recorded selectors are kept, not refs.
#[track_caller]
fn assert_no_refs(steps: &[Value], reply: &Reply) {
    for step in steps {
        for field in ["selector", "to"] {
            assert!(
                !step[field].as_str().is_some_and(|s| s.starts_with('@')),
                "a step names a ref: {step}; {}",
                reply.text
            );
        }
    }
}

/// The steps with every `{"secret": …}` text replaced by `secret`.
fn with_secret(steps: &[Value], secret: &str) -> Vec<Value> {
    steps
        .iter()
        .map(|step| {
            let mut step = step.clone();
            if step["text"].get("secret").is_some() {
                step["text"] = secret.into();
            }
            step
        })
        .collect()
}

/// Loads `url` in `tab` afresh through the agent.
async fn fresh_load(client: &McpClient, tab: u64, url: &str) {
    let loaded = client
        .call("navigate_to", json!({"tabId": tab, "url": url}))
        .await;
    assert!(!loaded.is_error, "loading {url}: {}", loaded.text);
}

/// Replays `steps` in `tab` as one batch; checks it succeeded.
async fn replay(client: &McpClient, tab: u64, steps: &[Value]) -> Reply {
    let replayed = client
        .call("run_browser_actions", json!({"tabId": tab, "steps": steps}))
        .await;
    assert!(
        !replayed.is_error,
        "the replay of {} failed: {}",
        Value::from(steps.to_vec()),
        replayed.text
    );
    replayed
}

/// The popup's answer to `expression` about `tab` (`{tab}` in it is replaced).
async fn in_popup(popup: &str, tab: u64, expression: &str) -> Value {
    Browser::evaluate(popup, &expression.replace("{tab}", &tab.to_string())).await
}

/// The extension's badge text on `tab`, read in the popup page.
async fn badge(popup: &str, tab: u64) -> Value {
    in_popup(popup, tab, "chrome.action.getBadgeText({tabId: {tab}})").await
}

/// Whether the popup lists `tab` among the tabs being recorded (a visible Stop button).
async fn listed_as_recording(popup: &str, tab: u64) -> bool {
    in_popup(
        popup,
        tab,
        "(() => { const b = document.querySelector('#recordings button[data-tab=\"{tab}\"]'); \
         return !!b && b.getClientRects().length > 0; })()",
    )
    .await
        == true
}

/// Waits until the badge and the popup's list show `tab` recorded (`true`) or not.
async fn shown_as_recording(popup: &str, tab: u64, recording: bool) {
    eventually(
        &format!("the badge and the popup to show tab {tab} recording: {recording}"),
        CONNECT_LIMIT,
        || async {
            let rec = badge(popup, tab).await == "REC";
            let listed = listed_as_recording(popup, tab).await;
            (rec == recording && listed == recording).then_some(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_login_replays_to_the_same_end_with_the_password_kept_out() {
    let (setup, login, tab) = recorded_tab("record-login.html").await;
    let mut person = Person::at(&setup.browser, "record-login.html").await;

    person.click("#user").await;
    person.type_text("ann").await;
    // The agent acts in the recorded tab meanwhile: its click is not the person's. A person's
    // input within the queue's clock slack (30 ms) of an agent's request in the tab counts as
    // the agent's (docs/recording.md), so the person and the agent take turns at a person's
    // pace here, not within milliseconds of each other.
    person.pause().await;
    let hint = setup
        .call(
            "click_element",
            json!({"tabId": tab, "selector": "#hint", "observe": false}),
        )
        .await;
    assert!(!hint.is_error, "{}", hint.text);
    assert_eq!(
        person
            .evaluate("document.getElementById('hint-text').hidden")
            .await,
        false,
        "the agent's click worked"
    );
    person.pause().await;
    person.click("#password").await;
    person.type_text(SECRET).await;
    person.press("Enter").await;
    person.sees("#greeting", "Welcome, ann").await;

    let stopped = stop_recording(&setup.client, tab, "agent").await;
    assert_kept_out(&stopped, SECRET);
    let steps = steps_of(&stopped);

    // The audit log keeps the start, and the stop with its number of steps: never what the
    // steps hold.
    let (audit, recorded) = eventually("the recording's audit records", CONNECT_LIMIT, || async {
        let audit = setup.hub.audit_command(&[]);
        let recorded: Vec<Value> = audit
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).expect("a JSON line"))
            .filter(|record| record["tool"] == "record_actions")
            .map(|record| record["recording"].clone())
            .collect();
        (recorded.len() >= 2).then_some((audit, recorded))
    })
    .await;
    assert_eq!(recorded[0], json!({"started": 0}), "{audit}");
    assert_eq!(recorded[1], json!({"stopped": steps.len()}), "{audit}");
    assert!(!audit.contains(SECRET), "{audit}");

    let user = one_type_step(&steps, "#user", &stopped);
    assert_eq!(user["text"], "ann", "{}", stopped.text);
    let password = one_type_step(&steps, "#password", &stopped);
    assert!(
        password["text"].get("secret").is_some(),
        "the password is a placeholder: {}",
        stopped.text
    );
    let enter = steps
        .iter()
        .position(|step| step["kind"] == "pressKey" && step["key"] == "Enter")
        .unwrap_or_else(|| panic!("no Enter step: {}", stopped.text));
    let user_at = position(&steps, "type", "#user").unwrap();
    let password_at = position(&steps, "type", "#password").unwrap();
    assert!(
        user_at < password_at && password_at < enter,
        "the steps in the person's order: {}",
        stopped.text
    );
    assert!(
        !steps.iter().any(|step| step["selector"] == "#hint"),
        "the agent's own click is not recorded: {}",
        stopped.text
    );
    assert_no_refs(&steps, &stopped);

    // What each step's element was, for the model: the user field by its label, in the top
    // frame; the login page is gone, so its elements have no refs.
    let elements = stopped.data()["elements"]
        .as_array()
        .unwrap_or_else(|| panic!("no elements: {}", stopped.text));
    let field = elements
        .iter()
        .find(|element| element["step"] == user_at)
        .unwrap_or_else(|| panic!("no element for step {user_at}: {}", stopped.text));
    assert!(
        field["line"]
            .as_str()
            .is_some_and(|line| line.contains("\"User\"")),
        "{field}"
    );
    for element in elements {
        assert!(
            element["step"]
                .as_u64()
                .is_some_and(|step| (step as usize) < steps.len()),
            "{element}"
        );
        assert_eq!(element["frameId"], 0, "{element}");
        if element["step"]
            .as_u64()
            .is_some_and(|step| step as usize <= enter)
        {
            assert!(
                element.get("ref").is_none(),
                "an element of a page that is gone has no ref: {element}"
            );
        }
    }

    // As it is, the replay holds a placeholder where the password goes: refused before any
    // step runs.
    fresh_load(&setup.client, tab, &login).await;
    let refused = setup
        .call("run_browser_actions", json!({"tabId": tab, "steps": steps}))
        .await;
    assert!(refused.is_error, "{}", refused.text);
    assert_eq!(refused.error()["phase"], "preflight", "{}", refused.text);
    assert_eq!(
        person
            .evaluate("document.getElementById('user').value")
            .await,
        "",
        "nothing ran"
    );

    // With the secret put back, the replay logs in as the person did.
    let replayed = replay(&setup.client, tab, &with_secret(&steps, SECRET)).await;
    assert_kept_out(&replayed, SECRET);
    person.sees("#greeting", "Welcome, ann").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_across_two_pages_is_recorded_with_a_wait_for_the_second_page_and_replays() {
    let (setup, first, tab) = recorded_tab("record-step1.html").await;
    let mut person = Person::at(&setup.browser, "record-step1.html").await;

    // Page one: the name, Tab to the plan, "p" picks Pro (a closed select's type-ahead
    // changes it at once), Next.
    person.click("#name").await;
    person.type_text("Ann Lee").await;
    person.press("Tab").await;
    person.press("p").await;
    assert_eq!(
        person
            .evaluate("document.getElementById('plan').value")
            .await,
        "pro",
        "the person picked Pro"
    );
    person.click("#next").await;
    // Page two: the email, the terms, Submit.
    person.sees("#carried", "Name: Ann Lee; plan: pro").await;
    person.click("#email").await;
    person.type_text("ann@example.com").await;
    person.click("#terms").await;
    person.click("#submit").await;
    let summary = "Ann Lee <ann@example.com>, plan pro, terms accepted";
    person.sees("#summary", summary).await;

    let stopped = stop_recording(&setup.client, tab, "agent").await;
    let steps = steps_of(&stopped);
    assert_eq!(
        one_type_step(&steps, "#name", &stopped)["text"],
        "Ann Lee",
        "{}",
        stopped.text
    );
    assert_eq!(
        one_type_step(&steps, "#email", &stopped)["text"],
        "ann@example.com",
        "{}",
        stopped.text
    );
    let plan = steps
        .iter()
        .position(|step| step["kind"] == "selectOption" && step["selector"] == "#plan")
        .unwrap_or_else(|| panic!("no selectOption step on #plan: {}", stopped.text));
    assert!(
        steps[plan]["value"] == "pro" || steps[plan]["text"] == "Pro",
        "the option picked: {}",
        steps[plan]
    );
    let next = position(&steps, "click", "#next")
        .unwrap_or_else(|| panic!("no click on Next: {}", stopped.text));
    let terms = position(&steps, "click", "#terms")
        .unwrap_or_else(|| panic!("no click on the terms: {}", stopped.text));
    let submit = position(&steps, "click", "#submit")
        .unwrap_or_else(|| panic!("no click on Submit: {}", stopped.text));
    // The first step on page two waits for its element first: a new document.
    let email = steps
        .iter()
        .position(|step| step["selector"] == "#email" && step["kind"] != "waitFor")
        .unwrap();
    assert!(email > 0, "{}", stopped.text);
    assert_eq!(
        (&steps[email - 1]["kind"], &steps[email - 1]["selector"]),
        (&json!("waitFor"), &json!("#email")),
        "a wait for page two's first element before it: {}",
        stopped.text
    );
    assert!(
        plan < next && next < email && email < terms && terms < submit,
        "the steps in the person's order: {}",
        stopped.text
    );
    assert_no_refs(&steps, &stopped);

    // On a fresh load, the replay goes through both pages to the same summary.
    fresh_load(&setup.client, tab, &first).await;
    replay(&setup.client, tab, &steps).await;
    person.sees("#summary", summary).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_dropdown_and_a_mouse_drag_are_recorded_as_clicks_and_a_drag_and_replay() {
    let (setup, page, tab) = recorded_tab("record-widgets.html").await;
    let mut person = Person::at(&setup.browser, "record-widgets.html").await;

    person.click("#flavour").await;
    person
        .click("#flavour-list [role=option]:nth-child(3)")
        .await;
    person.sees("#flavour-chosen", "Flavour: Pistachio").await;
    person.drag("#card", "#done").await;
    person.sees("#card-place", "Card in: Done").await;
    person.pause().await;

    // An observation now gives the elements refs: a step whose element still lives names it.
    let snapshot = setup.call("get_page_snapshot", json!({"tabId": tab})).await;
    assert!(!snapshot.is_error, "{}", snapshot.text);
    let stopped = stop_recording(&setup.client, tab, "agent").await;
    let combobox_ref = stopped.data()["elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|element| {
            element["line"]
                .as_str()
                .is_some_and(|l| l.contains("Flavour"))
        })
        .and_then(|element| element["ref"].as_str())
        .map(str::to_owned);
    assert!(
        combobox_ref.as_deref().is_some_and(|r| r.starts_with("@e")),
        "the combobox still lives and has a ref: {}",
        stopped.text
    );
    let steps = steps_of(&stopped);
    let kinds: Vec<&Value> = steps
        .iter()
        .map(|step| &step["kind"])
        .filter(|kind| *kind != "waitFor")
        .collect();
    assert_eq!(
        kinds,
        [&json!("click"), &json!("click"), &json!("drag")],
        "two clicks and a drag, no click for the drag's press and release: {}",
        stopped.text
    );
    let combobox = position(&steps, "click", "#flavour")
        .unwrap_or_else(|| panic!("no click on the combobox: {}", stopped.text));
    let option = steps
        .iter()
        .skip(combobox + 1)
        .find(|step| step["kind"] == "click")
        .unwrap_or_else(|| panic!("no click on the option: {}", stopped.text));
    // The option has no ID: whatever selector was kept picks Pistachio on the page.
    let picked = person
        .evaluate(&format!(
            "document.querySelector({})?.textContent ?? null",
            option["selector"]
        ))
        .await;
    assert_eq!(picked, "Pistachio", "the option's selector: {option}");
    let drag = steps.iter().find(|step| step["kind"] == "drag").unwrap();
    assert_eq!(
        (&drag["selector"], &drag["to"]),
        (&json!("#card"), &json!("#done")),
        "{}",
        stopped.text
    );
    assert_no_refs(&steps, &stopped);

    fresh_load(&setup.client, tab, &page).await;
    person.sees("#card-place", "Card in: To do").await;
    replay(&setup.client, tab, &steps).await;
    person.sees("#flavour-chosen", "Flavour: Pistachio").await;
    person.sees("#card-place", "Card in: Done").await;
    assert_eq!(
        person.evaluate("[widgets.flavour, widgets.place]").await,
        json!(["Pistachio", "done"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_selectors_still_find_the_elements_after_the_page_renders_them_again() {
    let (setup, _, tab) = recorded_tab("record-widgets.html").await;
    let mut person = Person::at(&setup.browser, "record-widgets.html").await;

    let title = "input[name=\"title\"]";
    let body = "textarea[aria-label=\"Note body\"]";
    let save = "[data-testid=\"save-note\"]";
    person.click(title).await;
    person.type_text("Groceries").await;
    person.click("#note-form textarea").await;
    person.type_text("milk, eggs").await;
    person.click(save).await;
    person.sees("#saved", "Saved: Groceries (milk, eggs)").await;

    // The page renders the form again (a script's click: not input, not recorded): every
    // element the person used is replaced by a new, empty one.
    person
        .evaluate(
            "window.before = document.querySelector('#note-form input'); \
             document.getElementById('rerender').click(); widgets.renders",
        )
        .await;
    person.sees("#saved", "Saved: nothing").await;

    let stopped = stop_recording(&setup.client, tab, "agent").await;
    let steps = steps_of(&stopped);
    // Named as the rule prefers: by name, by label, by test ID; never by ref.
    assert_eq!(
        one_type_step(&steps, title, &stopped)["text"],
        "Groceries",
        "{}",
        stopped.text
    );
    assert_eq!(
        one_type_step(&steps, body, &stopped)["text"],
        "milk, eggs",
        "{}",
        stopped.text
    );
    let saved = position(&steps, "click", save)
        .unwrap_or_else(|| panic!("no click on Save note: {}", stopped.text));
    assert!(
        !steps.iter().any(|step| step["selector"] == "#rerender"),
        "the script's click is not recorded: {}",
        stopped.text
    );
    assert_no_refs(&steps, &stopped);
    let elements = stopped.data()["elements"].as_array().unwrap();
    assert!(
        elements.iter().any(|element| element["step"] == saved
            && element["line"]
                .as_str()
                .is_some_and(|line| line.contains("Save note"))),
        "the Save note button among the elements: {}",
        stopped.text
    );

    // The replay finds the new elements by the kept selectors.
    replay(&setup.client, tab, &steps).await;
    person.sees("#saved", "Saved: Groceries (milk, eggs)").await;
    assert_eq!(
        person
            .evaluate(
                "[document.querySelector('#note-form input') !== window.before, \
                 widgets.renders, widgets.saves]"
            )
            .await,
        json!([true, 2, 2]),
        "saved on the re-rendered form"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recording_needs_consent_shows_while_it_runs_and_the_person_can_stop_it() {
    // The other server's origin allows acting but not sensitive reads: no recording there.
    let setup = Setup::start("record-login.html", |_, other| {
        format!("[[rules]]\norigin = \"{other}\"\naccess = \"act\"\nsensitive = \"deny\"\n")
    })
    .await;
    let login = setup.fixtures.url("record-login.html");
    let tab = loaded_tab(&setup.client, json!({}), &login).await;
    let popup = setup.browser.open_tab(POPUP).await;

    // Denied: nothing is recorded, nothing shows.
    let denied = start_recording(&setup.client, &popup, tab, "deny").await;
    assert_eq!(denied.error_code(), "APPROVAL_DENIED", "{}", denied.text);
    let mut person = Person::at(&setup.browser, "record-login.html").await;
    person.click("#hint").await;
    person
        .sees(
            "#hint-text",
            "Hint: the password is on the card in your drawer.",
        )
        .await;
    assert_ne!(badge(&popup, tab).await, "REC");
    assert!(!listed_as_recording(&popup, tab).await);
    let stopped = setup
        .call("record_actions", json!({"tabId": tab, "stop": true}))
        .await;
    if !stopped.is_error {
        assert_eq!(
            stopped.data()["steps"],
            json!([]),
            "nothing was recorded: {}",
            stopped.text
        );
    }

    // Allowed: the badge says REC and the popup lists the tab while it records.
    recording_allowed(&setup.client, &popup, tab).await;
    shown_as_recording(&popup, tab, true).await;
    person.click("#user").await;
    person.type_text("bob").await;
    person.click("#hint").await;

    // The person presses Stop in the popup: it ends, and their input after it is theirs.
    let pressed = format!(
        "(() => {{ const b = document.querySelector('#recordings button[data-tab=\"{tab}\"]'); \
         if (!b) return false; b.click(); return true; }})()"
    );
    eventually("the popup's Stop to be pressed", CONNECT_LIMIT, || async {
        (Browser::evaluate(&popup, &pressed).await == true).then_some(())
    })
    .await;
    shown_as_recording(&popup, tab, false).await;
    person.click("#user").await;
    person.type_text("zzz").await;
    assert_eq!(
        person
            .evaluate("document.getElementById('user').value")
            .await,
        "bobzzz"
    );

    // The agent's stop still gets what was recorded, and who ended it.
    let stopped = stop_recording(&setup.client, tab, "person").await;
    let steps = steps_of(&stopped);
    assert_eq!(
        one_type_step(&steps, "#user", &stopped)["text"],
        "bob",
        "only what was typed before Stop: {}",
        stopped.text
    );
    assert!(
        !stopped.structured.to_string().contains("zzz"),
        "{}",
        stopped.text
    );

    // Where the policy denies sensitive reads, recording is refused without asking anyone.
    let other = setup.open(&setup.other.url("record-login.html")).await;
    let blocked = setup
        .call(
            "record_actions",
            json!({"tabId": other, "start": true, "timeoutMs": 5_000}),
        )
        .await;
    assert_eq!(blocked.error_code(), "ORIGIN_BLOCKED", "{}", blocked.text);
    assert_eq!(popup_questions(&popup).await, "", "nobody was asked");
    assert_ne!(badge(&popup, other).await, "REC");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handoff_returns_what_the_person_did_as_steps() {
    let setup = OneBrowser::on("Work", "record-login.html").await;
    let login = setup.fixtures.url("record-login.html");
    let tab = loaded_tab(&setup.client, json!({}), &login).await;
    let popup = setup.browser.open_tab(POPUP).await;
    let reason = "Please log in with your own account";

    let (reply, ()) = tokio::join!(
        setup.call("request_human", json!({"tabId": tab, "reason": reason})),
        async {
            let question = eventually("the handoff in the popup", CONNECT_LIMIT, || async {
                let text = popup_questions(&popup).await;
                (!text.is_empty()).then_some(text)
            })
            .await;
            assert!(question.contains(reason), "{question}");
            assert!(
                question.to_lowercase().contains("record"),
                "the handoff says the person's input is recorded: {question}"
            );
            let mut person = Person::at(&setup.browser, "record-login.html").await;
            person.click("#user").await;
            person.type_text("ann").await;
            person.click("#password").await;
            person.type_text(SECRET).await;
            person.click("#login").await;
            person.sees("#greeting", "Welcome, ann").await;
            answer_in_popup(&popup, "done").await;
        }
    );
    assert_eq!(reply.data()["choice"], "done", "{}", reply.text);
    assert_kept_out(&reply, SECRET);
    let steps = steps_of(&reply);
    assert_eq!(
        one_type_step(&steps, "#user", &reply)["text"],
        "ann",
        "{}",
        reply.text
    );
    assert!(
        one_type_step(&steps, "#password", &reply)["text"]
            .get("secret")
            .is_some(),
        "the password is a placeholder: {}",
        reply.text
    );
    let login_at = position(&steps, "click", "#login")
        .unwrap_or_else(|| panic!("no click on Log in: {}", reply.text));
    assert!(
        position(&steps, "type", "#password").unwrap() < login_at,
        "{}",
        reply.text
    );
    assert!(reply.data()["elements"].is_array(), "{}", reply.text);
    assert!(reply.data()["notes"].is_array(), "{}", reply.text);
    assert_no_refs(&steps, &reply);

    // The steps replay, with the secret put back, to the same end.
    fresh_load(&setup.client, tab, &login).await;
    let person = Person::at(&setup.browser, "record-login.html").await;
    replay(&setup.client, tab, &with_secret(&steps, SECRET)).await;
    person.sees("#greeting", "Welcome, ann").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_cannot_forge_the_persons_steps() {
    let (setup, _, tab) = recorded_tab("record-login.html").await;
    let mut person = Person::at(&setup.browser, "record-login.html").await;

    // The page's own script: text put into a field with execCommand (whose input event is
    // trusted), a scripted click, then a reload of an address it chose with pushState, which
    // Chrome reports as a reload the person made.
    person
        .evaluate(
            "(() => { const user = document.querySelector('#user'); user.focus(); \
             document.execCommand('insertText', false, 'forged'); \
             document.querySelector('#hint').click(); return user.value; })()",
        )
        .await;
    person
        .evaluate("history.pushState({}, '', '?next=evil-path'); location.reload(); true")
        .await;
    let reloaded = eventually("the page to load again", CONNECT_LIMIT, || async {
        let href = try_evaluate(
            &person.ws,
            "document.readyState === 'complete' && location.href",
        )
        .await?;
        href.as_str().filter(|href| href.contains("evil-path"))?;
        Some(())
    });
    reloaded.await;

    // The person then types for real, in the same tab (its DevTools session outlives the
    // reload): that alone is recorded.
    person.click("#user").await;
    person.type_text("bob").await;
    let stopped = stop_recording(&setup.client, tab, "agent").await;
    let steps = steps_of(&stopped);
    assert_eq!(
        steps,
        vec![json!({"kind": "type", "selector": "#user", "text": "bob", "clear": true})],
        "only the person's typing: {}",
        stopped.text
    );
    assert!(!stopped.text.contains("evil-path"), "{}", stopped.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialog_the_person_answers_is_a_note_after_the_click_that_opened_it() {
    let (setup, _, tab) = recorded_tab("record-widgets.html").await;
    let mut person = Person::at(&setup.browser, "record-widgets.html").await;
    // The person's answer to the dialog, from a second DevTools session of the tab: the click
    // that opened it is only delivered once the dialog is answered.
    let ws = setup.browser.page_ws("record-widgets.html").await;
    let mut answering = DevToolsPage::connect(&ws)
        .await
        .expect("a DevTools session");
    answering
        .call("Page.enable", json!({}))
        .await
        .expect("Page.enable");
    let ((), ()) = tokio::join!(person.click("#forget"), async {
        let give_up = tokio::time::Instant::now() + CONNECT_LIMIT;
        let answer = json!({"accept": true});
        while answering
            .call("Page.handleJavaScriptDialog", answer.clone())
            .await
            .is_err()
        {
            assert!(
                tokio::time::Instant::now() < give_up,
                "no dialog to answer within {CONNECT_LIMIT:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    person.sees("#forgot", "Forgotten: yes").await;
    let stopped = stop_recording(&setup.client, tab, "agent").await;
    let steps = steps_of(&stopped);
    assert_eq!(
        steps,
        vec![json!({"kind": "click", "selector": "#forget"})],
        "{}",
        stopped.text
    );
    let notes = stopped.data()["notes"].clone();
    assert_eq!(notes[0]["afterStep"], 1, "{}", stopped.text);
    let note = notes[0]["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("confirm dialog, accepted"),
        "the dialog and the person's answer: {}",
        stopped.text
    );
}
