//! Tests of `batch.rs`: preflight, and the shapes of a batch's success and failure.

use super::*;
use crate::mcp::catalogue::ToolArgs;
use crate::mcp::envelope::failure;
use crate::mcp::routing::TabRoute;
use crate::mcp::schema::{input_schema, parse_args};
use crate::state::FileUrls;
use tabwire_protocol::{ActionFacts, ErrorCode, OpError, Outcome, StepFailure, Target};

/// run_browser_actions' arguments as the catalogue puts them together.
type BatchArgs = ToolArgs<RunActionsArgs, TabRoute, ActionOptions>;

fn steps(json: Value) -> Vec<Value> {
    match json {
        Value::Array(steps) => steps,
        _ => unreachable!("tests pass arrays"),
    }
}

#[test]
fn preflight_converts_every_kind_of_step() {
    let plan = preflight(
        steps(json!([
            {"kind": "type", "selector": "#user", "text": "alice", "clear": true},
            {"kind": "fill", "fields": [{"selector": "#remember", "value": true}]},
            {"kind": "click", "selector": "@e4"},
            {"kind": "waitFor", "url": "*/home"},
            {"kind": "wait", "ms": 200},
            {"kind": "observe", "query": "Welcome"},
            {"kind": "content", "selector": "main", "format": "html"},
            {"kind": "navigate", "url": "https://example.com/"},
            {"kind": "pressKey", "key": "Enter"},
        ])),
        9000,
        &FileUrls::Allowed.into(),
    )
    .unwrap();
    assert_eq!(
        plan.kinds,
        [
            "type", "fill", "click", "waitFor", "wait", "observe", "content", "navigate",
            "pressKey"
        ]
    );
    assert!(
        matches!(&plan.steps[2], Step::Act { action: Action::Click { target, .. } }
        if *target == Target::Ref(tabwire_protocol::ElementRef::top(4)))
    );
    assert_eq!(
        plan.steps[3],
        Step::Act {
            action: Action::Wait {
                condition: WaitCondition::Url {
                    pattern: "*/home".into(),
                    gone: false
                },
                timeout_ms: 9000
            }
        }
    );
    assert!(matches!(&plan.steps[5], Step::Observe { request }
        if request.query.as_deref() == Some("Welcome") && request.max_nodes == 200));
    assert!(matches!(&plan.steps[6], Step::Content { request }
        if request.format == ContentFormat::Html && request.scope == Some(Target::Css("main".into()))));
}

#[test]
fn a_bad_selector_in_the_third_step_fails_the_preflight() {
    let error = preflight(
        steps(json!([
            {"kind": "type", "selector": "#user", "text": "alice"},
            {"kind": "click", "selector": "#next"},
            {"kind": "click", "selector": "button:has-text(\"Go\")"},
            {"kind": "click", "selector": "#never-checked-as-it-is-fine"},
        ])),
        30_000,
        &FileUrls::Allowed.into(),
    )
    .unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidSelector);
    assert_eq!(error.phase, Some(Phase::Preflight));
    assert_eq!(error.failed_step, Some(2));
    assert!(!error.action_may_have_occurred);
    assert!(error.completed_steps.is_none());
    assert!(
        error.message.starts_with("steps[2] (click): "),
        "{}",
        error.message
    );
    let body = failure(error).structured_content.unwrap()["error"].clone();
    assert_eq!(body["phase"], "preflight");
    assert_eq!(body["failedStep"], 2);
    assert!(body.get("actionMayHaveOccurred").is_none());
}

#[test]
fn steps_that_span_frames_fail_the_preflight() {
    for (bad, why) in [
        (
            json!({"kind": "fill", "fields": [
                {"selector": "@e2", "value": "a"}, {"selector": "@f3e4", "value": "b"}
            ]}),
            "different frames",
        ),
        (
            json!({"kind": "drag", "selector": "@e2", "to": "@f3e4"}),
            "inside a frame",
        ),
    ] {
        let error = preflight(
            steps(json!([{"kind": "click", "selector": "#ok"}, bad])),
            30_000,
            &FileUrls::Allowed.into(),
        )
        .unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidArgument);
        assert_eq!(error.failed_step, Some(1));
        assert!(error.message.contains(why), "{}", error.message);
    }
    // One frame's fields are fine.
    assert!(
        preflight(
            steps(json!([{"kind": "fill", "fields": [
                {"selector": "@f3e2", "value": "a"}, {"selector": "@f3e4", "value": true}
            ]}])),
            30_000,
            &FileUrls::Allowed.into(),
        )
        .is_ok()
    );
}

#[test]
fn preflight_names_bad_kinds_fields_and_values() {
    let cases = [
        (
            json!({"kind": "tap", "selector": "#a"}),
            "steps[0] (tap): unknown variant",
        ),
        (json!({"selector": "#a"}), "steps[0]: missing field `kind`"),
        (json!("click #a"), "steps[0]: "),
        (
            json!({"kind": "click", "selector": "#a", "timeoutMs": 100}),
            "steps[0] (click): unknown field `timeoutMs`",
        ),
        (
            json!({"kind": "pressKey", "key": "Ctrl+A"}),
            "steps[0] (pressKey): key must be",
        ),
        (
            json!({"kind": "wait", "ms": 30_000}),
            "steps[0] (wait): ms must be between 1 and the batch's timeoutMs (30000)",
        ),
        (
            json!({"kind": "content", "format": "aria"}),
            "steps[0] (content): unknown variant `aria`, expected `text` or `html`",
        ),
        (
            json!({"kind": "navigate", "url": "javascript:alert(1)"}),
            "steps[0] (navigate): url must be",
        ),
        (
            json!({"kind": "click", "selector": "div["}),
            "steps[0] (click): \"div[\" is not a valid CSS selector: expected an attribute name",
        ),
    ];
    for (step, expected) in cases {
        let error = preflight(vec![step.clone()], 30_000, &FileUrls::Allowed.into()).unwrap_err();
        assert_eq!(error.failed_step, Some(0), "{step}");
        assert!(
            error.message.starts_with(expected),
            "{step}: {}",
            error.message
        );
    }
}

#[test]
fn batches_hold_one_to_twenty_steps() {
    for count in [0, 21] {
        let many = vec![json!({"kind": "hover", "selector": "#a"}); count];
        let error = preflight(many, 30_000, &FileUrls::Allowed.into()).unwrap_err();
        assert_eq!(error.phase, Some(Phase::Preflight));
        assert_eq!(error.failed_step, None);
        assert!(error.message.contains("1 to 20"), "{}", error.message);
    }
    let twenty = vec![json!({"kind": "hover", "selector": "#a"}); 20];
    assert_eq!(
        preflight(twenty, 30_000, &FileUrls::Allowed.into())
            .unwrap()
            .steps
            .len(),
        20
    );
}

#[test]
fn batch_arguments_are_strict_and_listed_compactly() {
    let parse = |json: Value| match json {
        Value::Object(args) => parse_args::<BatchArgs>(args),
        _ => unreachable!("tests pass objects"),
    };
    let args =
        parse(json!({"steps": [{"kind": "hover", "selector": "#a"}], "timeoutMs": 1000})).unwrap();
    assert_eq!(args.options.timeout_ms, Some(1000));
    let error = parse(json!({"steps": [], "deadline": 5})).unwrap_err();
    assert!(error.message.contains("deadline"), "{}", error.message);
    let schema = Value::Object((*input_schema::<BatchArgs>()).clone());
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["required"], json!(["steps"]));
    assert_eq!(schema["properties"]["steps"]["maxItems"], 20);
    assert!(schema["properties"]["timeoutMs"].is_object());
}

fn outcome(summary: &str) -> StepResult {
    StepResult::Acted {
        outcome: Outcome::new(
            4,
            summary,
            ActionFacts::Click {
                target: "textbox \"User\"".into(),
                navigated: None,
                url: None,
            },
        ),
    }
}

#[test]
fn a_successful_batch_lists_its_steps() {
    let kinds = ["type".to_string(), "click".to_string()];
    let output = batch_output(
        &kinds,
        BatchResult {
            tab_id: 4,
            steps: vec![outcome("Typed into textbox"), outcome("Clicked button")],
            failure: None,
            observation: None,
            observation_error: Some(OpError::new(ErrorCode::DialogOpen, "an alert is open")),
        },
    )
    .unwrap();
    assert_eq!(
        output.data,
        json!({
            "tabId": 4,
            "steps": [
                {"kind": "type", "summary": "Typed into textbox", "target": "textbox \"User\""},
                {"kind": "click", "summary": "Clicked button", "target": "textbox \"User\""}
            ],
            "observationError": {"code": "DIALOG_OPEN", "message": "an alert is open"}
        })
    );
    assert_eq!(
        output.text,
        "[0] Typed into textbox\n[1] Clicked button\nNo observation (DIALOG_OPEN): an alert is open"
    );
}

#[test]
fn a_failed_step_reports_the_run_phase_and_what_completed() {
    let kinds = ["type".to_string(), "click".to_string(), "type".to_string()];
    let error = batch_output(
        &kinds,
        BatchResult {
            tab_id: 4,
            steps: vec![outcome("Typed into textbox")],
            failure: Some(StepFailure {
                step: 1,
                error: OpError::new(ErrorCode::StaleRef, "@e4 is gone"),
            }),
            observation: None,
            observation_error: None,
        },
    )
    .unwrap_err();
    assert_eq!(error.code, ErrorCode::StaleRef);
    assert_eq!(error.message, "steps[1] (click): @e4 is gone");
    assert_eq!(error.phase, Some(Phase::Run));
    assert_eq!(error.failed_step, Some(1));
    // A completed mutation does not make the failed step's action "may have occurred".
    assert!(!error.action_may_have_occurred);
    let result = failure(error);
    let body = result.structured_content.unwrap()["error"].clone();
    assert_eq!(body["phase"], "run");
    assert_eq!(body["failedStep"], 1);
    assert_eq!(body["completedSteps"][0]["summary"], "Typed into textbox");
    let text = result.content[0].as_text().unwrap().text.clone();
    // The summaries are the browser's, and the fence holds them.
    assert!(text.contains("⟦page "), "{text}");
    assert_eq!(
        crate::mcp::fence::unfenced(&text),
        "STALE_REF: steps[1] (click): @e4 is gone\nCompleted steps:\n[0] Typed into textbox"
    );

    let cut_off = batch_output(
        &kinds,
        BatchResult {
            tab_id: 4,
            steps: vec![],
            failure: Some(StepFailure {
                step: 0,
                error: OpError::new(ErrorCode::TabUnresponsive, "hung").action_may_have_occurred(),
            }),
            observation: None,
            observation_error: None,
        },
    )
    .unwrap_err();
    assert!(cut_off.action_may_have_occurred);
    assert_eq!(cut_off.completed_steps, Some(vec![]));
}
