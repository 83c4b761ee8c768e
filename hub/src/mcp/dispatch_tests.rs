//! Tool calls through the catalogue against a fake browser connection: what reaches the
//! browser (operation, tab, deadline), and that refused arguments send nothing.

use std::sync::Arc;

use serde_json::{Value, json};
use tabwire_protocol::{
    Acted, Action, BatchResult, ErrorCode, Hello, HubMessage, OpResult, Operation, Outcome,
    PROTOCOL_VERSION, Request, TabHealth,
};
use tokio::sync::mpsc::UnboundedReceiver;

use super::envelope::Phase;
use super::{ToolContext, ToolError, ToolOutput, dispatch};
use crate::HubState;
use crate::registry::Connection;
use crate::session::Session;

/// A session on a hub with one connected browser, and that browser's inbox.
fn setup() -> (
    Arc<ToolContext>,
    Arc<Connection>,
    UnboundedReceiver<HubMessage>,
) {
    let hub = Arc::new(HubState {
        registry: Default::default(),
        browser_url: "ws://127.0.0.1:1/browser".into(),
    });
    let (connection, inbox) = hub.registry.connect(Hello {
        browser_id: "b1".into(),
        browser_name: "Work".into(),
        extension_version: "0.1.0".into(),
        protocol_version: PROTOCOL_VERSION,
        chrome_version: "156".into(),
    });
    let session = Arc::new(Session::new("s1".into(), None, None));
    (Arc::new(ToolContext { hub, session }), connection, inbox)
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
    let (ctx, _connection, mut inbox) = setup();
    let error = dispatch(&ctx, tool, object(args))
        .await
        .expect("a catalogued tool")
        .err()
        .unwrap_or_else(|| panic!("{tool} accepted bad arguments"));
    assert!(inbox.try_recv().is_err(), "{tool} sent a request");
    error
}

fn acted(request: &Request) -> OpResult {
    let Operation::Act(act) = &request.op else {
        panic!("expected an action, got {:?}", request.op);
    };
    OpResult::Acted(Acted {
        outcome: Outcome {
            tab_id: request.tab_id.unwrap_or(1),
            summary: format!("did {}", act.action.name()),
            details: Default::default(),
        },
        observation: None,
        observation_error: None,
    })
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
        ("wait_for_text", json!({"text": "Saved"}), 13_000),
        (
            "wait_for_url",
            json!({"pattern": "*/home", "timeoutMs": 2000}),
            5000,
        ),
        ("wait_for_network_idle", json!({}), 13_000),
    ];
    for (tool, args, deadline) in cases {
        let (request, result) = call(tool, args, acted).await;
        assert_eq!(request.tool, tool);
        assert_eq!(request.deadline_ms, deadline, "{tool}");
        let output = result.unwrap_or_else(|error| panic!("{tool}: {error:?}"));
        assert!(output.text.starts_with("did "), "{tool}: {}", output.text);
    }
}

#[tokio::test]
async fn a_wait_reports_its_own_timeout_before_the_request_deadline() {
    let args = json!({"text": "Saved", "gone": true, "timeoutMs": 2500, "tabId": 7});
    let (request, _) = call("wait_for_text", args, acted).await;
    assert_eq!(request.tab_id, Some(7));
    assert_eq!(request.deadline_ms, 5500);
    let Operation::Act(act) = request.op else {
        panic!("an action");
    };
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
        "maxNodes": 12,
        "maxChars": 900,
        "observationSelector": "main",
        "since": 4
    });
    let (request, _) = call("click_element", args, acted).await;
    let Operation::Act(act) = request.op else {
        panic!("an action");
    };
    let observe = act.observe.expect("observe defaults to true");
    assert_eq!((observe.max_nodes, observe.max_chars), (12, 900));
    assert_eq!(observe.since, Some(4));
    let (request, _) = call(
        "click_element",
        json!({"selector": "#go", "observe": false}),
        acted,
    )
    .await;
    assert!(matches!(request.op, Operation::Act(act) if act.observe.is_none()));
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
        ("hover_element", json!({"selector": "#a", "maxNodes": 501})),
        ("type_text", json!({"selector": "#a"})),
        ("press_key", json!({"key": "Ctrl+A"})),
        ("select_option", json!({"selector": "#s"})),
        ("fill_form", json!({"fields": []})),
        ("scroll_page", json!({"to": "#a", "dy": 10})),
        ("drag_element", json!({"selector": "#a"})),
        ("navigate_and_wait", json!({"url": "chrome://settings"})),
        ("wait_for_network_idle", json!({"idleMs": 50})),
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
        {"kind": "waitFor", "for": "text", "text": "Done"},
    ], "timeoutMs": 8000, "observe": false});
    let (request, result) = call("run_browser_actions", args, |request| {
        OpResult::Batch(BatchResult {
            tab_id: request.tab_id.unwrap_or(3),
            steps: vec![],
            failure: None,
            observation: None,
            observation_error: None,
        })
    })
    .await;
    assert_eq!(request.deadline_ms, 8000);
    let Operation::Batch(batch) = request.op else {
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
            OpResult::Health(TabHealth {
                tab_id: request.tab_id.unwrap_or(5),
                url: "http://x/".into(),
                responsive: true,
                probe_ms: Some(3),
                active: None,
                queued: 0,
                debugger_attached: true,
                dialog: None,
                recovery: Some("reattached".into()),
            })
        },
    )
    .await;
    assert_eq!(request.deadline_ms, 10_000);
    assert_eq!(
        request.op,
        Operation::Health {
            recover_debugger: true
        }
    );
    assert!(result.unwrap().text.contains("recovery: reattached"));
    let (request, _) = call(
        "read_element_state",
        json!({"selector": "#a", "attributes": ["aria-expanded"]}),
        |_| {
            OpResult::ElementState(tabwire_protocol::ElementState {
                tab_id: 1,
                target: "textbox".into(),
                state: Default::default(),
            })
        },
    )
    .await;
    assert_eq!(request.deadline_ms, 10_000);
    assert!(matches!(request.op, Operation::ReadState(read) if read.max_chars == 500));
}

#[tokio::test]
async fn a_selected_browser_that_is_gone_is_reported_in_one_clean_sentence() {
    let (ctx, _connection, _inbox) = setup();
    ctx.session.select("elsewhere");
    let error = ctx.browser(None).err().expect("not connected");
    assert_eq!(error.code, ErrorCode::BrowserDisconnected);
    assert!(!error.message.contains("  "), "{}", error.message);
    assert!(
        error.message.contains("hub; tabwire never switches"),
        "{}",
        error.message
    );
}
