//! Tool calls through the catalogue against a fake browser connection: what reaches the
//! browser (operation, tab, deadline), and that refused arguments send nothing.

use std::sync::Arc;

use serde_json::{Value, json};
use tabwire_protocol::{
    ActOp, Acted, Action, ActionFacts, BatchResult, CaptureOp, CaptureState, ClosedTab,
    ConsoleRecord, Cookie, CreateTab, ErrorCode, GetActiveTab, GetConsole, GetCookies,
    GetLocalStorage, GetRequests, GetResponseBody, GetSelectedText, GetTabHealth, Hello,
    HistoryDirection, HistoryStep, HubMessage, ImageFormat, ListTabs, ObserveOp, OpResult,
    Operation, Outcome, PROTOCOL_VERSION, Records, RecordsRequest, ReloadTab, Request,
    ResponseBody, Screenshot, ScreenshotRequest, SelectedText, SetConsoleCapture,
    SetNetworkCapture, StorageEntries, StorageEntry, StorageOp, TabHealth, TabInfo, TabList,
    TabsOp,
};
use tokio::sync::mpsc::UnboundedReceiver;

use super::catalogue::dispatch;
use super::envelope::Phase;
use super::routing::Group;
use super::{Caller, ToolError, ToolOutput};
use crate::peer::Browser;
use crate::registry::Connection;
use crate::session::Session;
use crate::state::{FileUrls, HubState};

/// A session on a hub with one connected browser, and that browser's inbox.
fn setup() -> (Arc<Caller>, Arc<Connection>, UnboundedReceiver<HubMessage>) {
    setup_under(FileUrls::Allowed)
}

/// [`setup`] on a hub with the given rule for file URLs (hosted mode's default is
/// [`FileUrls::Refused`]).
fn setup_under(
    file_urls: FileUrls,
) -> (Arc<Caller>, Arc<Connection>, UnboundedReceiver<HubMessage>) {
    let hub = Arc::new(HubState {
        file_urls,
        policies: Arc::new(
            crate::policy::Policies::local(None)
                .unwrap()
                .with_file_urls(file_urls),
        ),
        ..HubState::local(
            "ws://127.0.0.1:1/browser".into(),
            crate::pairing::Pairings::for_tests(),
        )
    });
    let account = hub.accounts.local_account();
    let (connection, inbox) = account
        .registry::<Browser>()
        .connect(
            Hello {
                browser_id: "b1".into(),
                browser_name: "Work".into(),
                extension_version: "0.1.0".into(),
                protocol_version: PROTOCOL_VERSION,
                chrome_version: "156".into(),
                proof: None,
                managed_code: false,
            },
            crate::registry::Owner::fixed("test"),
        )
        .unwrap();
    let session = Arc::new(Session::new("s1".into(), Default::default(), None));
    (
        Arc::new(Caller {
            hub,
            session,
            account,
            holder: tabwire_protocol::LeaseHolder {
                session: "s1".into(),
                client: "Test · 1".into(),
                idle_ms: 600_000,
            },
            trace: Default::default(),
            progress: None,
            cancel: Default::default(),
        }),
        connection,
        inbox,
    )
}

/// The action a request carries.
fn action_of(request: &Request) -> &tabwire_protocol::ActRequest {
    match &request.op {
        Operation::Act(ActOp::Act(act)) => act,
        other => panic!("expected an action, got {other:?}"),
    }
}

fn object(args: Value) -> rmcp::model::JsonObject {
    match args {
        Value::Object(args) => args,
        _ => unreachable!("tests pass objects"),
    }
}

/// Calls `tool`, answers its one request with `answer`, and returns the request and the
/// tool's result.
async fn call(
    tool: &'static str,
    args: Value,
    answer: impl FnOnce(&Request) -> OpResult,
) -> (Request, Result<ToolOutput, ToolError>) {
    let (ctx, connection, mut inbox) = setup();
    let args = object(args);
    let running =
        tokio::spawn(async move { dispatch(&ctx, tool, args).await.expect("a catalogued tool") });
    let Some(HubMessage::Request(request)) = inbox.recv().await else {
        panic!("{tool} sent no request");
    };
    connection.complete(request.id, Ok(answer(&request)));
    let result = running.await.expect("the call finishes");
    (request, result)
}

/// Calls `tool` with arguments the hub must refuse, and checks nothing was sent.
async fn refused(tool: &'static str, args: Value) -> ToolError {
    refused_under(FileUrls::Allowed, tool, args).await
}

/// [`refused`] on a hub with the given rule for file URLs.
async fn refused_under(file_urls: FileUrls, tool: &'static str, args: Value) -> ToolError {
    let (ctx, _connection, mut inbox) = setup_under(file_urls);
    let error = dispatch(&ctx, tool, object(args))
        .await
        .expect("a catalogued tool")
        .err()
        .unwrap_or_else(|| panic!("{tool} accepted bad arguments"));
    assert!(inbox.try_recv().is_err(), "{tool} sent a request");
    error
}

fn acted(request: &Request) -> OpResult {
    let act = action_of(request);
    Acted {
        outcome: Outcome::new(
            request.tab_id.unwrap_or(1),
            format!("did {}", act.action.name()),
            ActionFacts::Wait {
                waited_ms: 1.0,
                element: None,
                url: None,
            },
        ),
        observation: None,
        observation_error: None,
    }
    .into()
}

#[tokio::test]
async fn action_tools_send_one_act_with_their_deadline() {
    let cases = [
        ("click_element", json!({"selector": "#go"}), 5000),
        (
            "click_element",
            json!({"selector": "#go", "timeoutMs": 700}),
            700,
        ),
        ("click_and_wait", json!({"selector": "#go"}), 20_000),
        ("hover_element", json!({"selector": "@e2"}), 5000),
        ("drag_element", json!({"selector": "#a", "to": "#b"}), 5000),
        ("type_text", json!({"selector": "#a", "text": "hi"}), 5000),
        ("press_key", json!({"key": "Enter"}), 5000),
        ("select_option", json!({"text": "France"}), 5000),
        (
            "fill_form",
            json!({"fields": [{"selector": "#a", "value": "x"}]}),
            5000,
        ),
        ("scroll_page", json!({}), 5000),
        (
            "navigate_and_wait",
            json!({"url": "http://127.0.0.1/"}),
            30_000,
        ),
        ("wait_for", json!({"text": "Saved"}), 13_000),
        (
            "wait_for",
            json!({"url": "*/home", "timeoutMs": 2000}),
            5000,
        ),
        ("wait_for", json!({"networkIdle": true}), 13_000),
    ];
    for (tool, args, deadline) in cases {
        let (request, result) = call(tool, args, acted).await;
        assert_eq!(request.tool, tool);
        assert_eq!(request.deadline_ms, deadline, "{tool}");
        let output = result.unwrap_or_else(|error| panic!("{tool}: {error:?}"));
        assert!(
            output.text.as_str().starts_with("did "),
            "{tool}: {}",
            output.text
        );
    }
}

#[tokio::test]
async fn a_wait_reports_its_own_timeout_before_the_request_deadline() {
    let args = json!({"text": "Saved", "gone": true, "timeoutMs": 2500, "tabId": 7});
    let (request, _) = call("wait_for", args, acted).await;
    assert_eq!(request.tab_id, Some(7));
    assert_eq!(request.deadline_ms, 5500);
    let act = action_of(&request);
    assert!(matches!(
        act.action,
        Action::Wait {
            timeout_ms: 2500,
            ..
        }
    ));
}

#[tokio::test]
async fn common_options_become_the_observation_request() {
    let args = json!({
        "selector": "#go",
        "observe": {"maxNodes": 12, "maxChars": 900, "selector": "main", "since": 4}
    });
    let (request, _) = call("click_element", args, acted).await;
    let observe = action_of(&request)
        .observe
        .clone()
        .expect("observe defaults to true");
    assert_eq!((observe.max_nodes, observe.max_chars), (12, 900));
    assert_eq!(observe.since, Some(4));
    let (request, _) = call(
        "click_element",
        json!({"selector": "#go", "observe": false}),
        acted,
    )
    .await;
    assert!(action_of(&request).observe.is_none());
}

#[tokio::test]
async fn bad_arguments_never_reach_the_browser() {
    let cases = [
        ("click_element", json!({"selector": "#go", "bogus": 1})),
        (
            "click_element",
            json!({"selector": "#go", "timeoutMs": 60_001}),
        ),
        ("click_element", json!({"selector": "#go", "clickCount": 4})),
        ("click_element", json!({"selector": "text=Go"})),
        (
            "hover_element",
            json!({"selector": "#a", "observe": {"maxNodes": 501}}),
        ),
        ("hover_element", json!({"selector": "#a", "maxNodes": 30})),
        ("type_text", json!({"selector": "#a"})),
        ("press_key", json!({"key": "Ctrl+A"})),
        ("select_option", json!({"selector": "#s"})),
        ("fill_form", json!({"fields": []})),
        ("scroll_page", json!({"to": "#a", "dy": 10})),
        ("drag_element", json!({"selector": "#a"})),
        ("navigate_and_wait", json!({"url": "chrome://settings"})),
        ("wait_for", json!({"networkIdle": 50})),
        ("wait_for", json!({"networkIdle": true, "gone": true})),
        ("wait_for", json!({"text": "Saved", "selector": "#a"})),
        (
            "read_element_state",
            json!({"selector": "#a", "maxChars": 0}),
        ),
        ("handle_dialog", json!({"accept": false, "promptText": "x"})),
        ("get_tab_health", json!({"recover": true})),
    ];
    for (tool, args) in cases {
        let error = refused(tool, args.clone()).await;
        assert!(
            matches!(
                error.code,
                ErrorCode::InvalidArgument | ErrorCode::InvalidSelector
            ),
            "{tool} {args}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_batch_with_a_bad_third_step_sends_nothing() {
    let error = refused(
        "run_browser_actions",
        json!({"steps": [
            {"kind": "type", "selector": "#user", "text": "alice"},
            {"kind": "type", "selector": "#pass", "text": "secret"},
            {"kind": "click", "selector": "@nope"},
        ]}),
    )
    .await;
    assert_eq!(error.code, ErrorCode::InvalidSelector);
    assert_eq!(error.phase, Some(Phase::Preflight));
    assert_eq!(error.failed_step, Some(2));
}

#[tokio::test]
async fn a_batch_is_one_request_under_one_deadline() {
    let args = json!({"steps": [
        {"kind": "click", "selector": "#a"},
        {"kind": "waitFor", "text": "Done"},
    ], "timeoutMs": 8000, "observe": false});
    let (request, result) = call("run_browser_actions", args, |request| {
        BatchResult {
            tab_id: request.tab_id.unwrap_or(3),
            steps: vec![],
            failure: None,
            observation: None,
            observation_error: None,
        }
        .into()
    })
    .await;
    assert_eq!(request.deadline_ms, 8000);
    let Operation::Act(ActOp::Batch(batch)) = request.op else {
        panic!("a batch");
    };
    assert_eq!(batch.steps.len(), 2);
    assert!(batch.observe.is_none());
    assert_eq!(result.unwrap().data["tabId"], 3);
}

#[tokio::test]
async fn tab_tools_have_a_fixed_deadline() {
    let (request, result) = call(
        "get_tab_health",
        json!({"recoverDebugger": true}),
        |request| {
            TabHealth {
                tab_id: request.tab_id.unwrap_or(5),
                url: "http://x/".into(),
                responsive: true,
                probe_ms: Some(3),
                active: None,
                queued: 0,
                debugger_attached: true,
                dialog: None,
                recovery: Some("reattached".into()),
            }
            .into()
        },
    )
    .await;
    assert_eq!(request.deadline_ms, 10_000);
    assert_eq!(
        request.op,
        GetTabHealth {
            recover_debugger: true
        }
        .into()
    );
    assert!(
        result
            .unwrap()
            .text
            .as_str()
            .contains("recovery: reattached")
    );
    let (request, _) = call(
        "read_element_state",
        json!({"selector": "#a", "attributes": ["aria-expanded"]}),
        |_| {
            tabwire_protocol::ElementState {
                tab_id: 1,
                target: "textbox".into(),
                state: serde_json::from_value(
                    json!({"tag": "input", "visible": true, "focused": false}),
                )
                .unwrap(),
            }
            .into()
        },
    )
    .await;
    assert_eq!(request.deadline_ms, 10_000);
    assert!(matches!(request.op, Operation::Act(ActOp::ReadState(read)) if read.max_chars == 500));
}

#[tokio::test]
async fn a_selected_browser_that_is_gone_is_reported_in_one_clean_sentence() {
    let (caller, _connection, _inbox) = setup();
    caller.session.select::<Browser>("elsewhere");
    let ctx = caller.context(
        "list_tabs",
        Group::Peer(tabwire_protocol::Kind::Browser),
        Default::default(),
    );
    let error = ctx.connection().err().expect("not connected");
    assert_eq!(error.code, ErrorCode::BrowserDisconnected);
    assert!(!error.message.contains("  "), "{}", error.message);
    assert!(
        error.message.contains("hub; tabwire never switches"),
        "{}",
        error.message
    );
}

/// Calls `tool` and answers every request it sends with `answer`, until the call finishes;
/// returns the requests and the result.
async fn converse(
    tool: &'static str,
    args: Value,
    answer: impl FnMut(&Request) -> OpResult,
) -> (Vec<Request>, Result<ToolOutput, ToolError>) {
    converse_under(FileUrls::Allowed, tool, args, answer).await
}

/// [`converse`] on a hub with the given rule for file URLs.
async fn converse_under(
    file_urls: FileUrls,
    tool: &'static str,
    args: Value,
    mut answer: impl FnMut(&Request) -> OpResult,
) -> (Vec<Request>, Result<ToolOutput, ToolError>) {
    let (ctx, connection, mut inbox) = setup_under(file_urls);
    let args = object(args);
    let mut running =
        tokio::spawn(async move { dispatch(&ctx, tool, args).await.expect("a catalogued tool") });
    let mut requests = Vec::new();
    loop {
        tokio::select! {
            result = &mut running => return (requests, result.expect("the call finishes")),
            Some(message) = inbox.recv() => {
                if let HubMessage::Request(request) = message {
                    connection.complete(request.id, Ok(answer(&request)));
                    requests.push(request);
                }
            }
        }
    }
}

fn tab_info(tab_id: u32, title: &str, url: &str) -> TabInfo {
    TabInfo {
        tab_id,
        window_id: 1,
        active: tab_id == 1,
        url: url.into(),
        title: title.into(),
        status: "complete".into(),
        blocked: false,
    }
}

/// A browser with three tabs that answers every tab, capture and storage operation plausibly.
fn browser(request: &Request) -> OpResult {
    let tab_id = request.tab_id.unwrap_or(1);
    let tab = || tab_info(tab_id, "Docs: plan", "https://docs.test/d/plan").into();
    fn records<R>(tab_id: u32, records: Vec<R>) -> Records<R> {
        Records {
            tab_id,
            capturing: true,
            records,
            total: 1,
            offset: 0,
            next_offset: None,
            evicted: 0,
            truncated: false,
        }
    }
    fn entries<E>(tab_id: u32, entries: Vec<E>) -> StorageEntries<E> {
        StorageEntries {
            tab_id,
            origin: "https://docs.test".into(),
            entries,
            total: 1,
            truncated: false,
        }
    }
    match &request.op {
        Operation::Tabs(TabsOp::ListTabs(_)) => TabList {
            tabs: vec![
                tab_info(1, "Inbox - Mail", "https://mail.test/inbox"),
                tab_info(2, "Docs: plan", "https://docs.test/d/plan"),
                tab_info(3, "Docs: budget", "https://docs.test/d/budget"),
            ],
        }
        .into(),
        Operation::Tabs(TabsOp::Close(_)) => ClosedTab { tab_id }.into(),
        Operation::Tabs(TabsOp::Release(_)) => tabwire_protocol::TabReleased {
            tab_id,
            was_leased: tab_id == 2,
        }
        .into(),
        Operation::Tabs(_) => tab(),
        Operation::Observe(ObserveOp::SelectedText(_)) => SelectedText {
            tab_id,
            text: "picked".into(),
            total_chars: 6,
        }
        .into(),
        Operation::Observe(ObserveOp::Screenshot(shot)) => Screenshot {
            tab_id,
            format: shot.format,
            data: "iVBORw0KGgo=".into(),
            width: 800,
            height: 600,
            css_width: 1280,
            css_height: 960,
            document_id: "D9".into(),
            observation: None,
            covered_frames: Vec::new(),
        }
        .into(),
        Operation::Capture(
            CaptureOp::NetworkCapture(SetNetworkCapture { on })
            | CaptureOp::ConsoleCapture(SetConsoleCapture { on }),
        ) => CaptureState {
            tab_id,
            capturing: *on,
            kept: 0,
        }
        .into(),
        Operation::Capture(CaptureOp::GetRequests(_)) => {
            records::<tabwire_protocol::NetworkRecord>(tab_id, vec![Default::default()]).into()
        }
        Operation::Capture(CaptureOp::GetConsole(_)) => records(
            tab_id,
            vec![ConsoleRecord {
                seq: 1,
                level: "warning".into(),
                text: "careful".into(),
                ..Default::default()
            }],
        )
        .into(),
        Operation::Capture(CaptureOp::GetResponseBody(body)) => ResponseBody {
            tab_id,
            request_id: body.request_id.clone(),
            mime_type: "text/plain".into(),
            body: "ok".into(),
            total_chars: 2,
            truncated: false,
            note: None,
        }
        .into(),
        Operation::Storage(StorageOp::Cookies(_)) => entries(
            tab_id,
            vec![Cookie {
                name: "sid".into(),
                value: "x".into(),
                value_truncated: false,
                domain: "docs.test".into(),
                path: "/".into(),
                expires: None,
                session: true,
                http_only: true,
                secure: true,
                same_site: None,
            }],
        )
        .into(),
        Operation::Storage(StorageOp::LocalStorage(_)) => entries(
            tab_id,
            vec![StorageEntry {
                key: "theme".into(),
                value: "dark".into(),
                value_truncated: false,
            }],
        )
        .into(),
        other => panic!("not a tab, capture or storage operation: {other:?}"),
    }
}

#[tokio::test]
async fn a_tab_matched_by_title_is_switched_to_by_its_id() {
    let (requests, result) = converse("switch_tab", json!({"title": "PLAN"}), browser).await;
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].op, ListTabs {}.into());
    assert_eq!(requests[0].tab_id, None);
    assert_eq!(requests[1].tab_id, Some(2));
    assert_eq!(requests[1].op, tabwire_protocol::SwitchTab {}.into());
    assert_eq!(requests[1].deadline_ms, 10_000);
    let output = result.unwrap();
    assert_eq!(
        output.text,
        "Switched to tab 2 \"Docs: plan\" https://docs.test/d/plan"
    );
    assert_eq!(output.data["tabId"], 2);
}

#[tokio::test]
async fn an_ambiguous_match_closes_nothing_and_lists_the_candidates() {
    let (requests, result) = converse("close_tab", json!({"url": "docs.test"}), browser).await;
    assert_eq!(requests.len(), 1, "only the tab list was asked for");
    let error = result.unwrap_err();
    assert_eq!(error.code, ErrorCode::AmbiguousMatch);
    let envelope = super::envelope::failure(error);
    let body = &envelope.structured_content.as_ref().unwrap()["error"];
    assert_eq!(body["code"], "AMBIGUOUS_MATCH");
    assert_eq!(body["category"], "TAB");
    assert_eq!(
        body["candidates"],
        json!([
            {"tabId": 2, "title": "Docs: plan", "url": "https://docs.test/d/plan"},
            {"tabId": 3, "title": "Docs: budget", "url": "https://docs.test/d/budget"}
        ])
    );
    let text = envelope.content[0].as_text().unwrap().text.clone();
    assert!(
        text.contains("\n- tabId=3 title=\"Docs: budget\" url=https://docs.test/d/budget"),
        "{text}"
    );

    let (requests, result) = converse("close_tab", json!({"title": "calendar"}), browser).await;
    assert_eq!(requests.len(), 1);
    let error = result.unwrap_err();
    assert_eq!(error.code, ErrorCode::TabNotFound);
    assert!(error.message.contains("calendar"), "{}", error.message);
}

#[tokio::test]
async fn changing_calls_name_the_caller_and_reads_do_not() {
    for (tool, args, named) in [
        ("go_back", json!({"tabId": 2}), true),
        ("switch_tab", json!({"tabId": 2}), true),
        ("reload_tab", json!({"tabId": 2}), true),
        ("create_tab", json!({}), true),
        ("close_tab", json!({"tabId": 2}), true),
        ("release_tab", json!({"tabId": 2}), true),
        ("get_selected_text", json!({"tabId": 2}), false),
        ("list_tabs", json!({}), false),
        ("get_cookies", json!({"tabId": 2}), false),
    ] {
        let (requests, result) = converse(tool, args, browser).await;
        result.unwrap_or_else(|error| panic!("{tool}: {error:?}"));
        let request = requests.last().unwrap();
        let holder = request.holder.as_ref();
        assert_eq!(holder.is_some(), named, "{tool}");
        if let Some(holder) = holder {
            assert_eq!(holder.session, "s1", "{tool}");
            assert_eq!(holder.client, "Test · 1", "{tool}");
        }
        // Whose view it is goes with every request, reads too (issue 23 §4): the peer keeps
        // each session's baselines apart.
        assert_eq!(request.viewer.as_deref(), Some("s1"), "{tool}");
    }
}

#[tokio::test]
async fn release_tab_says_whether_it_held_the_tab() {
    let (requests, result) = converse("release_tab", json!({"tabId": 2}), browser).await;
    assert_eq!(requests[0].op, tabwire_protocol::ReleaseTab {}.into());
    let output = result.unwrap();
    assert_eq!(output.data, json!({"tabId": 2, "released": true}));
    assert_eq!(
        output.text,
        "Released tab 2: other agents may change it now."
    );
    let (_, result) = converse("release_tab", json!({"tabId": 3}), browser).await;
    let output = result.unwrap();
    assert_eq!(output.data, json!({"tabId": 3, "released": false}));
    assert_eq!(output.text, "Tab 3 was not leased; nothing changed.");
}

#[tokio::test]
async fn a_tab_named_by_id_is_closed_without_listing() {
    let (requests, result) = converse("close_tab", json!({"tabId": 7}), browser).await;
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].tab_id, Some(7));
    assert_eq!(requests[0].op, tabwire_protocol::CloseTab {}.into());
    let output = result.unwrap();
    assert_eq!(output.text, "Closed tab 7.");
    assert_eq!(output.data, json!({"tabId": 7}));
}

#[tokio::test]
async fn tab_and_capture_tools_send_their_operation_with_their_deadline() {
    let cases: Vec<(&str, Value, Operation, u64)> = vec![
        ("get_active_tab", json!({}), GetActiveTab {}.into(), 10_000),
        (
            "create_tab",
            json!({"url": "https://docs.test/"}),
            CreateTab {
                url: Some("https://docs.test/".into()),
                active: false,
                new_window: false,
            }
            .into(),
            10_000,
        ),
        (
            "create_tab",
            json!({"active": false, "newWindow": true}),
            CreateTab {
                url: None,
                active: false,
                new_window: true,
            }
            .into(),
            10_000,
        ),
        (
            "go_back",
            json!({"tabId": 2}),
            HistoryStep {
                direction: HistoryDirection::Back,
            }
            .into(),
            30_000,
        ),
        (
            "go_forward",
            json!({}),
            HistoryStep {
                direction: HistoryDirection::Forward,
            }
            .into(),
            30_000,
        ),
        (
            "reload_tab",
            json!({"bypassCache": true}),
            ReloadTab { bypass_cache: true }.into(),
            30_000,
        ),
        (
            "get_selected_text",
            json!({}),
            GetSelectedText { max_chars: 2000 }.into(),
            10_000,
        ),
        (
            "take_screenshot",
            json!({"format": "png", "fullPage": true}),
            ScreenshotRequest {
                format: ImageFormat::Png,
                quality: None,
                max_width: 800,
                full_page: true,
                target: None,
                with_snapshot: None,
            }
            .into(),
            15_000,
        ),
        (
            "start_network_capture",
            json!({}),
            SetNetworkCapture { on: true }.into(),
            10_000,
        ),
        (
            "stop_network_capture",
            json!({}),
            SetNetworkCapture { on: false }.into(),
            10_000,
        ),
        (
            "get_captured_requests",
            json!({"filter": "/api/", "limit": 10, "offset": 20, "clearAfter": true}),
            GetRequests(RecordsRequest {
                limit: 10,
                offset: 20,
                filter: Some("/api/".into()),
                levels: vec![],
                max_chars: 12_000,
                clear_after: true,
            })
            .into(),
            10_000,
        ),
        (
            "get_response_body",
            json!({"requestId": "77.3"}),
            GetResponseBody {
                request_id: "77.3".into(),
                max_chars: 10_000,
            }
            .into(),
            10_000,
        ),
        (
            "start_console_capture",
            json!({}),
            SetConsoleCapture { on: true }.into(),
            10_000,
        ),
        (
            "stop_console_capture",
            json!({}),
            SetConsoleCapture { on: false }.into(),
            10_000,
        ),
        (
            "get_console_logs",
            json!({"levels": ["error", "warning"], "maxChars": 500}),
            GetConsole(RecordsRequest {
                limit: 50,
                offset: 0,
                filter: None,
                levels: vec!["error".into(), "warning".into()],
                max_chars: 500,
                clear_after: false,
            })
            .into(),
            10_000,
        ),
        (
            "get_cookies",
            json!({"url": "https://docs.test/", "name": "sid"}),
            GetCookies {
                url: Some("https://docs.test/".into()),
                name: Some("sid".into()),
                max_chars: 4000,
            }
            .into(),
            10_000,
        ),
        (
            "get_local_storage",
            json!({"filter": "theme"}),
            GetLocalStorage {
                filter: Some("theme".into()),
                max_chars: 4000,
            }
            .into(),
            10_000,
        ),
    ];
    for (tool, args, op, deadline) in cases {
        let (requests, result) = converse(tool, args, browser).await;
        assert_eq!(requests.len(), 1, "{tool}");
        assert_eq!(requests[0].tool, tool);
        assert_eq!(requests[0].op, op, "{tool}");
        assert_eq!(requests[0].deadline_ms, deadline, "{tool}");
        let output = result.unwrap_or_else(|error| panic!("{tool}: {error:?}"));
        assert!(!output.text.as_str().is_empty(), "{tool}");
        assert_eq!(output.image.is_some(), tool == "take_screenshot", "{tool}");
    }
    let (requests, _) = converse("go_back", json!({"tabId": 2}), browser).await;
    assert_eq!(requests[0].tab_id, Some(2));
    let (requests, _) = converse("create_tab", json!({}), browser).await;
    assert_eq!(requests[0].tab_id, None);
}

#[tokio::test]
async fn a_screenshot_is_image_content_beside_its_facts() {
    let (_, result) = converse("take_screenshot", json!({"format": "png"}), browser).await;
    let value = serde_json::to_value(super::envelope::success(result.unwrap())).unwrap();
    assert_eq!(value["content"][0]["type"], "text");
    assert_eq!(
        value["content"][1],
        json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})
    );
    let data = &value["structuredContent"]["data"];
    assert_eq!(data["format"], "png");
    assert_eq!(data["bytes"], 8);
    assert!(data.get("data").is_none());
    assert!(!value["structuredContent"].to_string().contains("iVBOR"));
}

#[tokio::test]
async fn bad_tab_and_capture_arguments_never_reach_the_browser() {
    let cases = [
        ("get_active_tab", json!({"tabId": 1})),
        ("switch_tab", json!({})),
        ("switch_tab", json!({"tabId": 1, "title": "Mail"})),
        ("close_tab", json!({"url": ""})),
        ("close_tab", json!({"url": "a", "title": "b"})),
        ("create_tab", json!({"url": "javascript:alert(1)"})),
        ("create_tab", json!({"tabId": 3})),
        ("reload_tab", json!({"bypassCache": "yes"})),
        ("get_selected_text", json!({"maxChars": 20_001})),
        ("take_screenshot", json!({"format": "gif"})),
        ("take_screenshot", json!({"format": "png", "quality": 50})),
        ("take_screenshot", json!({"quality": 101})),
        ("take_screenshot", json!({"maxWidth": 4000})),
        (
            "take_screenshot",
            json!({"fullPage": true, "selector": "#a"}),
        ),
        ("take_screenshot", json!({"selector": "text=Go"})),
        ("start_network_capture", json!({"filter": "x"})),
        ("get_captured_requests", json!({"limit": 0})),
        ("get_captured_requests", json!({"limit": 501})),
        ("get_captured_requests", json!({"maxChars": 12_001})),
        ("get_captured_requests", json!({"filter": "  "})),
        ("get_captured_requests", json!({"levels": ["error"]})),
        ("get_response_body", json!({})),
        ("get_response_body", json!({"requestId": ""})),
        (
            "get_response_body",
            json!({"requestId": "1", "maxChars": 50_001}),
        ),
        ("get_console_logs", json!({"levels": []})),
        ("get_console_logs", json!({"levels": ["verbose"]})),
        ("get_cookies", json!({"url": "file:///etc/passwd"})),
        ("get_cookies", json!({"maxChars": 20_001})),
        ("get_local_storage", json!({"filter": ""})),
    ];
    for (tool, args) in cases {
        let error = refused(tool, args.clone()).await;
        assert!(
            matches!(
                error.code,
                ErrorCode::InvalidArgument | ErrorCode::InvalidSelector
            ),
            "{tool} {args}: {error:?}"
        );
    }
}

/// Every way a tool opens a URL, each with a file URL (in various spellings).
fn file_url_openers() -> Vec<(&'static str, Value)> {
    vec![
        ("navigate_to", json!({"url": "file:///etc/passwd"})),
        ("create_tab", json!({"url": "FILE:///etc/passwd"})),
        ("navigate_and_wait", json!({"url": "File:///etc/passwd"})),
        (
            "run_browser_actions",
            json!({"steps": [
                {"kind": "click", "selector": "#a"},
                {"kind": "navigate", "url": "file:///etc/passwd"},
            ]}),
        ),
    ]
}

#[tokio::test]
async fn a_hub_that_refuses_file_urls_sends_none_to_the_browser() {
    for (tool, args) in file_url_openers() {
        let error = refused_under(FileUrls::Refused, tool, args.clone()).await;
        assert_eq!(error.code, ErrorCode::Forbidden, "{tool}: {error:?}");
        assert!(
            error.message.contains("file:// URLs") && error.message.contains("--allow-file-urls"),
            "{tool}: {}",
            error.message
        );
        if tool == "run_browser_actions" {
            assert_eq!(error.phase, Some(Phase::Preflight));
            assert_eq!(error.failed_step, Some(1));
        }
    }
    // Refusing file URLs refuses nothing else.
    let (requests, _) = converse_under(
        FileUrls::Refused,
        "navigate_to",
        json!({"url": "https://docs.test/"}),
        browser,
    )
    .await;
    assert_eq!(requests.len(), 1);
}

#[tokio::test]
async fn a_hub_that_allows_file_urls_sends_them_on() {
    for (tool, args) in file_url_openers() {
        let (requests, _) =
            converse_under(FileUrls::Allowed, tool, args, |request| match &request.op {
                Operation::Act(ActOp::Act(_)) => acted(request),
                Operation::Act(ActOp::Batch(_)) => BatchResult {
                    tab_id: 1,
                    steps: vec![],
                    failure: None,
                    observation: None,
                    observation_error: None,
                }
                .into(),
                _ => browser(request),
            })
            .await;
        assert_eq!(requests.len(), 1, "{tool}");
        let sent = serde_json::to_string(&requests[0].op).unwrap();
        assert!(
            sent.to_ascii_lowercase().contains("file:///etc/passwd"),
            "{tool}: {sent}"
        );
    }
}

/// What the audit log learns of a call: the peer it reached (whatever its kind) and the tab.
#[tokio::test]
async fn a_call_leaves_a_trace_of_its_peer_and_tab() {
    let (ctx, connection, mut inbox) = setup();
    let trace = ctx.trace.clone();
    let running = tokio::spawn(async move {
        let args = object(json!({"selector": "#a", "text": "secret", "tabId": 9}));
        dispatch(&ctx, "type_text", args).await.unwrap()
    });
    let Some(HubMessage::Request(request)) = inbox.recv().await else {
        panic!("type_text sent no request");
    };
    connection.complete(request.id, Ok(acted(&request)));
    running.await.unwrap().unwrap();
    assert_eq!(
        *trace.lock().unwrap(),
        super::Trace {
            peer: Some(("browser", "b1".into())),
            tab_id: Some(9),
            acted: true,
            owner: None,
            files: Vec::new(),
            clipboard: None,
            recording: None,
        }
    );
    // A refused call reaches no peer.
    let (ctx, _connection, _inbox) = setup();
    let args = object(json!({"selector": "#a", "text": 5}));
    assert!(dispatch(&ctx, "type_text", args).await.unwrap().is_err());
    assert_eq!(*ctx.trace.lock().unwrap(), super::Trace::default());
}

#[path = "device_dispatch_tests.rs"]
mod devices;

#[path = "cancel_tests.rs"]
mod cancel;

/// Issue 26: an upload's bytes go as chunks of at most 512 KiB, each its own request, then one
/// action names them; the trace (for the audit log) keeps names and sizes only.
#[tokio::test]
async fn an_upload_sends_its_bytes_in_chunks_before_the_action() {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use tabwire_protocol::files::{CHUNK_BYTES, ChunkKept, UploadMode};

    let (ctx, connection, mut inbox) = setup();
    let trace = ctx.trace.clone();
    let big: Vec<u8> = (0..CHUNK_BYTES * 2 + 7).map(|i| (i % 251) as u8).collect();
    let args = object(json!({
        "selector": "#cv",
        "tabId": 4,
        "files": [
            {"name": "big.bin", "dataBase64": STANDARD.encode(&big)},
            {"name": "note.txt", "dataBase64": "aGVsbG8="},
            {"name": "empty.txt", "dataBase64": ""},
        ],
    }));
    let running = tokio::spawn(async move { dispatch(&ctx, "upload_file", args).await.unwrap() });
    let mut received: Vec<Vec<u8>> = vec![Vec::new(), Vec::new()];
    let act = loop {
        let Some(HubMessage::Request(request)) = inbox.recv().await else {
            panic!("upload_file stopped sending");
        };
        assert_eq!(request.tab_id, Some(4));
        match &request.op {
            Operation::Act(ActOp::UploadChunk(chunk)) => {
                let bytes = STANDARD.decode(&chunk.data).unwrap();
                assert!(bytes.len() <= CHUNK_BYTES);
                let file = &mut received[chunk.file as usize];
                assert_eq!(chunk.offset, file.len() as u64, "chunks come in order");
                file.extend(bytes);
                let kept = ChunkKept { kept: 0 };
                connection.complete(request.id, Ok(kept.into()));
            }
            Operation::Act(ActOp::Act(_)) => break request,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(received[0], big);
    assert_eq!(received[1], b"hello");
    let Action::Upload {
        files,
        mode,
        upload,
        ..
    } = &action_of(&act).action
    else {
        panic!("not an upload: {:?}", action_of(&act).action);
    };
    assert_eq!(*mode, UploadMode::Input);
    assert_eq!(upload.len(), 32);
    let sizes: Vec<_> = files.iter().map(|f| (f.name.as_str(), f.size)).collect();
    assert_eq!(
        sizes,
        [
            ("big.bin", big.len() as u64),
            ("note.txt", 5),
            ("empty.txt", 0)
        ]
    );
    // The type a browser would give a .txt file picked from the disk.
    assert_eq!(files[1].mime_type, "text/plain");
    connection.complete(act.id, Ok(acted(&act)));
    running.await.unwrap().unwrap();
    assert_eq!(
        trace.lock().unwrap().files,
        [
            ("big.bin".to_owned(), big.len() as u64),
            ("note.txt".to_owned(), 5),
            ("empty.txt".to_owned(), 0)
        ]
    );
}

#[tokio::test]
async fn bad_uploads_send_nothing() {
    let hello = json!({"name": "a.txt", "dataBase64": "aGVsbG8="});
    let cases = [
        (json!({"selector": "#f", "files": []}), "1 to 20"),
        (
            json!({"selector": "#f", "files": vec![hello.clone(); 21]}),
            "1 to 20",
        ),
        (
            json!({"selector": "#f", "files": [{"dataBase64": "aGVsbG8="}]}),
            "needs name",
        ),
        (
            json!({"selector": "#f", "files": [{"name": "a", "dataBase64": "%%%"}]}),
            "not base64",
        ),
        (
            json!({"selector": "#f", "files": [{"name": "../a", "dataBase64": "aGk="}]}),
            "slash",
        ),
        (
            json!({"selector": "#f", "files": [{"name": "a", "mimeType": "nope", "dataBase64": "aGk="}]}),
            "not a MIME type",
        ),
        (
            json!({"selector": "#f", "files": [{"name": "a", "path": "/etc/passwd", "dataBase64": "aGk="}]}),
            "not both",
        ),
        (json!({"selector": "#f", "files": [{}]}), "give path"),
        (
            json!({"selector": "#f", "files": [{"path": "/tmp/a", "name": "cat.jpg"}]}),
            "keeps its own name",
        ),
        (
            json!({"selector": "#f", "files": [hello.clone()], "mode": "paste"}),
            "unknown variant",
        ),
    ];
    for (args, says) in cases {
        let error = refused("upload_file", args.clone()).await;
        assert_eq!(error.code, ErrorCode::InvalidArgument, "{args}");
        assert!(error.message.contains(says), "{args}: {}", error.message);
    }
    // A path, on a hub that allows no directory: refused, saying how to allow one.
    let error = refused(
        "upload_file",
        json!({"selector": "#f", "files": [{"path": "/etc/passwd"}]}),
    )
    .await;
    assert_eq!(error.code, ErrorCode::Forbidden);
    assert!(error.message.contains("--upload-dir"), "{}", error.message);
    // Over the per-file cap (25 MB by default), before anything is decoded or sent.
    let huge = "A".repeat(34_000_000);
    let error = refused(
        "upload_file",
        json!({"selector": "#f", "files": [{"name": "huge.bin", "dataBase64": huge}]}),
    )
    .await;
    assert_eq!(error.code, ErrorCode::InvalidArgument);
    assert!(
        error.message.contains("--max-upload-file-mb"),
        "{}",
        error.message
    );
}
