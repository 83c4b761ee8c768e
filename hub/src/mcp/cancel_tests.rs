//! Cancelled calls against fake peers: the peer is told which request to stop, nothing more is
//! sent for the call, and the trace says whether input may have gone out.

use std::sync::Arc;

use serde_json::json;
use tabwire_protocol::{
    ErrorCode, HandedBack, HandoffChoice, HubMessage, OpError, OpResult, Operation, TabsOp,
};

use super::{acted, object, setup};
use crate::mcp::catalogue::dispatch;
use crate::mcp::{Caller, ToolError, ToolOutput};
use crate::peer::Device;
use crate::registry::Owner;
use crate::session::Session;

/// The next request the peer receives.
async fn next_request(
    inbox: &mut tokio::sync::mpsc::UnboundedReceiver<HubMessage>,
) -> tabwire_protocol::Request {
    match inbox.recv().await {
        Some(HubMessage::Request(request)) => request,
        other => panic!("expected a request, got {other:?}"),
    }
}

/// Starts `tool` on `caller` in a task of its own.
fn start(
    caller: &Arc<Caller>,
    tool: &'static str,
    args: serde_json::Value,
) -> tokio::task::JoinHandle<Result<ToolOutput, ToolError>> {
    let caller = caller.clone();
    let args = object(args);
    tokio::spawn(async move { dispatch(&caller, tool, args).await.expect("catalogued") })
}

#[tokio::test]
async fn a_cancelled_wait_is_withdrawn_at_the_browser() {
    let (caller, connection, mut inbox) = setup();
    let running = start(
        &caller,
        "wait_for",
        json!({"text": "never", "timeoutMs": 60_000, "tabId": 4}),
    );
    let request = next_request(&mut inbox).await;
    caller.cancel.cancel();
    assert_eq!(
        inbox.recv().await,
        Some(HubMessage::Cancel { id: request.id })
    );
    // The browser stopped it before any input.
    connection.complete(request.id, Err(OpError::cancelled(false)));
    let error = running.await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Cancelled);
    assert!(!error.action_may_have_occurred);
    assert!(!caller.trace.lock().unwrap().acted);
    assert!(inbox.try_recv().is_err(), "nothing more was sent");
}

#[tokio::test]
async fn a_click_cancelled_after_its_input_is_traced_as_acted() {
    let (caller, connection, mut inbox) = setup();
    let running = start(&caller, "click_element", json!({"selector": "#go"}));
    let request = next_request(&mut inbox).await;
    caller.cancel.cancel();
    assert_eq!(
        inbox.recv().await,
        Some(HubMessage::Cancel { id: request.id })
    );
    connection.complete(request.id, Err(OpError::cancelled(true)));
    let error = running.await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Cancelled);
    assert!(error.action_may_have_occurred);
    assert!(caller.trace.lock().unwrap().acted, "the audit says so");
}

/// `request_human` makes two requests: the handoff, then a look at the page. Cancelled while
/// the person has the tab, it sends no second one, even when the person's answer crossed the
/// cancel on the way.
#[tokio::test]
async fn a_cancelled_handoff_sends_nothing_after_it() {
    let (caller, connection, mut inbox) = setup();
    let running = start(&caller, "request_human", json!({"reason": "Log in"}));
    let handoff = next_request(&mut inbox).await;
    assert!(matches!(handoff.op, Operation::Tabs(TabsOp::Handoff(_))));
    caller.cancel.cancel();
    assert_eq!(
        inbox.recv().await,
        Some(HubMessage::Cancel { id: handoff.id })
    );
    let handed: OpResult = HandedBack {
        tab_id: 1,
        choice: HandoffChoice::Done,
        steps: Vec::new(),
        omitted: 0,
    }
    .into();
    connection.complete(handoff.id, Ok(handed));
    let finished = running.await.unwrap();
    // The result goes nowhere (rmcp drops it); what matters is what reached the browser.
    assert!(finished.is_ok(), "{finished:?}");
    assert!(
        inbox.try_recv().is_err(),
        "no observation was asked for after the cancel"
    );
}

/// A call cancelled before it sent anything (the client cancelled while the hub was still
/// routing it) reaches no peer at all.
#[tokio::test]
async fn a_call_cancelled_before_it_is_sent_reaches_no_browser() {
    let (caller, _connection, mut inbox) = setup();
    caller.cancel.cancel();
    let error = start(&caller, "click_element", json!({"selector": "#go"}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Cancelled);
    assert!(!error.action_may_have_occurred);
    assert!(inbox.try_recv().is_err());
    // What a plain success looks like, for contrast: an answered click is traced as acted.
    let (caller, connection, mut inbox) = setup();
    let running = start(&caller, "click_element", json!({"selector": "#go"}));
    let request = next_request(&mut inbox).await;
    connection.complete(request.id, Ok(acted(&request)));
    running.await.unwrap().unwrap();
    assert!(caller.trace.lock().unwrap().acted);
}

/// The session's client going away cancels the calls it has running, through the same path.
#[tokio::test]
async fn a_client_that_goes_away_cancels_its_running_calls() {
    let (caller, connection, mut inbox) = setup();
    let session = caller.session.clone();
    let token = caller.cancel.clone();
    let running = {
        let caller = caller.clone();
        tokio::spawn(async move {
            let args = object(json!({"text": "never", "timeoutMs": 60_000}));
            session
                .unless_hung_up(&token, dispatch(&caller, "wait_for", args))
                .await
                .expect("catalogued")
        })
    };
    let request = next_request(&mut inbox).await;
    caller.session.hang_up();
    assert_eq!(
        inbox.recv().await,
        Some(HubMessage::Cancel { id: request.id })
    );
    connection.complete(request.id, Err(OpError::cancelled(false)));
    assert_eq!(
        running.await.unwrap().unwrap_err().code,
        ErrorCode::Cancelled
    );
    assert!(caller.cancel.is_cancelled());
}

/// Devices likewise: a tap cancelled at the backend after its input went out says so.
#[tokio::test]
async fn a_cancelled_device_call_is_withdrawn_at_its_backend() {
    let hub = Arc::new(crate::state::HubState::local(
        "ws://127.0.0.1:1/browser".into(),
        crate::pairing::Pairings::for_tests(),
    ));
    let account = hub.accounts.local_account();
    let (connection, mut inbox) = account
        .registry::<Device>()
        .connect(
            crate::mcp::device_hello("d1", "Phone"),
            Owner::fixed("backend"),
        )
        .unwrap();
    let caller = Arc::new(Caller {
        hub,
        session: Arc::new(Session::new("s1".into(), Default::default(), None)),
        account,
        holder: tabwire_protocol::LeaseHolder {
            session: "s1".into(),
            client: "Test · 1".into(),
            idle_ms: 600_000,
        },
        trace: Default::default(),
        progress: None,
        cancel: Default::default(),
    });
    let running = start(&caller, "device_tap", json!({"ref": "@d3"}));
    let request = next_request(&mut inbox).await;
    caller.cancel.cancel();
    assert_eq!(
        inbox.recv().await,
        Some(HubMessage::Cancel { id: request.id })
    );
    connection.complete(request.id, Err(OpError::cancelled(true)));
    let error = running.await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Cancelled);
    assert!(error.action_may_have_occurred);
    assert!(caller.trace.lock().unwrap().acted);
}
