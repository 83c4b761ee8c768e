//! `run_browser_actions`: several steps in one tab, in one call (docs/actions.md, "Batches").
//!
//! The hub preflights the whole batch before anything reaches the browser: every step's kind,
//! arguments and selector syntax, with the same conversions the single-action tools use. The
//! first bad step fails the call with `phase: "preflight"` and its index. A step that fails in
//! the browser stops the batch; the error carries `phase: "run"`, the index and the results of
//! the steps that completed. Nothing is rolled back or replayed.
//!
//! Steps are parsed one by one from JSON values (not by serde as one list) so that an error can
//! name its step.

use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tabwire_protocol::{
    Action, BatchRequest, BatchResult, ContentFormat, ContentRequest, SnapshotRequest, Step,
    StepResult, WaitCondition,
};

use super::act::{ActionTool, observation_tail, outcome_facts};
use super::actions::{ClickAndWaitArgs, ClickArgs, DragArgs, HoverArgs, ScrollArgs};
use super::args::{ActionOptions, optional_selector, query};
use super::envelope::{Phase, Rendering, ToolError, ToolOutput};
use super::input::{FillFormArgs, PressKeyArgs, SelectOptionArgs, TypeArgs};
use super::observation::{observation_data, render_page};
use super::observe::{content_chars, render_content, snapshot_budget};
use super::routing::ToolContext;
use super::schema;
use super::waits::{NavigateAndWaitArgs, WaitForArgs};
use crate::state::Destinations;

/// `timeoutMs` of a batch when the caller gives none: the whole batch shares it.
const BATCH_TIMEOUT_MS: u32 = 30_000;
/// How many steps one batch takes (a recording longer than this replays in several).
pub(super) const MAX_STEPS: usize = 20;

/// Arguments of run_browser_actions.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunActionsArgs {
    // Parsed step by step in `preflight`, so that an error names its step; the schema is
    // `steps_schema`.
    #[schemars(schema_with = "steps_schema")]
    pub steps: Vec<Value>,
}

pub const RUN_BROWSER_ACTIONS: &str = "Steps in order in one tab, all checked first; the first \
failure stops it (completedSteps says what ran). Returns step results and one observation.";

/// The exact schema of one step: a closed object per kind, with its fields and the required ones
/// marked, generated from [`StepArgs`] so that it cannot drift from what `preflight` parses (the
/// tests hold the two together).
pub(super) fn step_union() -> Value {
    schema::tagged_union::<StepArgs>()
}

/// What `tools/list` says about `steps`: the union, compactly ([`schema::compact_union`]), so a
/// client can check every step's kind, required fields and field types before sending it; only a
/// field of another kind is left to the parser (the tests hold both to the parser).
fn steps_schema(_generator: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "minItems": 1,
        "maxItems": MAX_STEPS,
        "description": STEPS,
        "items": schema::compact_union(&step_union(), "kind")
    })
}

/// What the union does not say: whose arguments the tool kinds take.
const STEPS: &str = "A kind and its tool's arguments (navigate: navigate_and_wait's).";

/// One step as the agent writes it: `kind` plus the arguments of its tool. The payloads are the
/// tools' own argument structs, so a step obeys exactly its tool's rules.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum StepArgs {
    /// As click_element.
    Click(ClickArgs),
    /// As click_and_wait.
    ClickAndWait(ClickAndWaitArgs),
    /// As hover_element.
    Hover(HoverArgs),
    /// As drag_element.
    Drag(DragArgs),
    /// As type_text.
    Type(TypeArgs),
    /// As fill_form.
    Fill(FillFormArgs),
    /// As press_key.
    PressKey(PressKeyArgs),
    /// As select_option.
    SelectOption(SelectOptionArgs),
    /// As scroll_page.
    Scroll(ScrollArgs),
    /// As navigate_and_wait.
    Navigate(NavigateAndWaitArgs),
    /// A plain delay.
    Wait(WaitStep),
    /// As wait_for, bounded by the batch's timeout.
    WaitFor(WaitForArgs),
    /// An observation, as get_page_snapshot.
    Observe(ObserveStep),
    /// A content read, as get_page_content.
    Content(ContentStep),
}

/// `wait {ms}`: a plain delay.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WaitStep {
    /// Milliseconds.
    ms: u32,
}

/// `observe {selector?, query?, maxNodes?, maxChars?}`: as get_page_snapshot.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ObserveStep {
    /// Subtree only.
    selector: Option<String>,
    /// Lines containing this text.
    query: Option<String>,
    /// Budget in nodes.
    max_nodes: Option<u32>,
    /// Budget in characters.
    max_chars: Option<u32>,
}

/// `content {selector?, format?, maxChars?}`: as get_page_content, text or HTML.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ContentStep {
    /// This element only.
    selector: Option<String>,
    /// text (default) or html.
    format: Option<StepFormat>,
    /// Budget in characters.
    max_chars: Option<u32>,
}

/// The formats of a `content` step: get_page_content's but aria, which is an observation (an
/// `observe` step).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum StepFormat {
    /// Readable text.
    Text,
    /// Raw markup.
    Html,
}

/// A preflighted batch: the protocol steps, and each step's kind as the agent wrote it (for
/// messages and results).
#[derive(Debug)]
struct Plan {
    kinds: Vec<String>,
    steps: Vec<Step>,
}

pub async fn run_browser_actions(
    ctx: &ToolContext,
    args: RunActionsArgs,
    options: ActionOptions,
) -> Result<ToolOutput, ToolError> {
    let options = options
        .resolve(BATCH_TIMEOUT_MS)
        .map_err(|error| ToolError {
            phase: Some(Phase::Preflight),
            ..error
        })?;
    let plan = preflight(args.steps, options.timeout_ms, &ctx.destinations())?;
    let request = BatchRequest {
        steps: plan.steps,
        observe: options.observe,
    };
    let deadline = Duration::from_millis(u64::from(options.timeout_ms));
    batch_output(&plan.kinds, ctx.call(request, deadline).await?)
}

/// Checks every step and converts it into a protocol [`Step`]; the first bad step fails the
/// batch with `phase: "preflight"` and its index, before anything is sent. `navigate` steps
/// follow the hub's rule for file URLs, as navigate_and_wait does.
fn preflight(
    steps: Vec<Value>,
    timeout_ms: u32,
    destinations: &Destinations,
) -> Result<Plan, ToolError> {
    if steps.is_empty() || steps.len() > MAX_STEPS {
        return Err(ToolError {
            phase: Some(Phase::Preflight),
            ..ToolError::invalid(format!(
                "steps must hold 1 to {MAX_STEPS} steps; got {}",
                steps.len()
            ))
        });
    }
    let mut plan = Plan {
        kinds: Vec::with_capacity(steps.len()),
        steps: Vec::with_capacity(steps.len()),
    };
    for (index, value) in steps.into_iter().enumerate() {
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .map(|kind| kind.chars().take(40).collect::<String>());
        let step = serde_json::from_value::<StepArgs>(value)
            .map_err(|error| ToolError::invalid(error.to_string()))
            .and_then(|args| into_step(args, timeout_ms, destinations))
            .map_err(|error| ToolError {
                message: format!("{}: {}", label(index, kind.as_deref()), error.message),
                phase: Some(Phase::Preflight),
                failed_step: Some(index),
                action_may_have_occurred: false,
                ..error
            })?;
        plan.kinds.push(kind.unwrap_or_default());
        plan.steps.push(step);
    }
    Ok(plan)
}

/// How messages name a step: `steps[2] (click)`, the index being `failedStep`'s.
fn label(index: usize, kind: Option<&str>) -> String {
    match kind {
        Some(kind) => format!("steps[{index}] ({kind})"),
        None => format!("steps[{index}]"),
    }
}

/// One step's conversion, with the same rules as its tool; waits are bounded by the batch's
/// `timeoutMs`.
fn into_step(
    args: StepArgs,
    timeout_ms: u32,
    destinations: &Destinations,
) -> Result<Step, ToolError> {
    let action = match args {
        StepArgs::Click(args) => args.into_action(timeout_ms)?,
        StepArgs::ClickAndWait(args) => args.into_action(timeout_ms)?,
        StepArgs::Hover(args) => args.into_action(timeout_ms)?,
        StepArgs::Drag(args) => args.into_action(timeout_ms)?,
        StepArgs::Type(args) => args.into_action(timeout_ms)?,
        StepArgs::Fill(args) => args.into_action(timeout_ms)?,
        StepArgs::PressKey(args) => args.into_action(timeout_ms)?,
        StepArgs::SelectOption(args) => args.into_action(timeout_ms)?,
        StepArgs::Scroll(args) => args.into_action(timeout_ms)?,
        StepArgs::Navigate(args) => args.under(destinations.clone()).into_action(timeout_ms)?,
        StepArgs::Wait(WaitStep { ms }) => {
            if ms == 0 || ms >= timeout_ms {
                return Err(ToolError::invalid(format!(
                    "ms must be between 1 and the batch's timeoutMs ({timeout_ms}); got {ms}"
                )));
            }
            Action::Wait {
                condition: WaitCondition::Delay { ms },
                timeout_ms,
            }
        }
        StepArgs::WaitFor(args) => args.into_action(timeout_ms)?,
        StepArgs::Observe(step) => {
            let (max_nodes, max_chars) = snapshot_budget(step.max_nodes, step.max_chars)?;
            return Ok(Step::Observe {
                request: SnapshotRequest {
                    frame_id: None,
                    scope: optional_selector(step.selector.as_deref(), "selector")?,
                    query: query(step.query)?,
                    max_nodes,
                    max_chars,
                    offset: 0,
                    since: None,
                    include_hidden: false,
                },
            });
        }
        StepArgs::Content(step) => {
            let format = match step.format.unwrap_or(StepFormat::Text) {
                StepFormat::Text => ContentFormat::Text,
                StepFormat::Html => ContentFormat::Html,
            };
            return Ok(Step::Content {
                request: ContentRequest {
                    frame_id: None,
                    scope: optional_selector(step.selector.as_deref(), "selector")?,
                    format,
                    max_chars: content_chars(step.max_chars)?,
                    offset: 0,
                },
            });
        }
    };
    Ok(Step::Act { action })
}

/// The batch's answer: every step's result and the final observation, or the failure that
/// stopped it with the steps completed before.
fn batch_output(kinds: &[String], batch: BatchResult) -> Result<ToolOutput, ToolError> {
    let kind = |index: usize| kinds.get(index).map(String::as_str).unwrap_or("step");
    let steps: Vec<Value> = batch
        .steps
        .iter()
        .enumerate()
        .map(|(index, result)| step_data(kind(index), result))
        .collect();
    if let Some(failure) = batch.failure {
        let index = failure.step as usize;
        let error = ToolError::from(failure.error);
        // actionMayHaveOccurred stays the failed step's own: completedSteps says what was done.
        return Err(ToolError {
            message: format!("{}: {}", label(index, Some(kind(index))), error.message),
            phase: Some(Phase::Run),
            failed_step: Some(index),
            completed_steps: Some(steps),
            ..error
        });
    }
    let mut text = Rendering::lines(batch.steps.iter().enumerate().map(|(index, result)| {
        let mut line = Rendering::hub(format!("[{index}] "));
        line.append(step_text(result));
        line
    }));
    let mut data = Map::new();
    data.insert("tabId".into(), json!(batch.tab_id));
    data.insert("steps".into(), Value::Array(steps));
    observation_tail(
        &mut data,
        &mut text,
        batch.observation.as_ref(),
        batch.observation_error.as_ref(),
    );
    Ok(ToolOutput::new(Value::Object(data), text))
}

/// One step's result as compact JSON: its kind, a summary, and its facts.
fn step_data(kind: &str, result: &StepResult) -> Value {
    let mut data = Map::new();
    data.insert("kind".into(), json!(kind));
    match result {
        StepResult::Acted { outcome } => {
            data.insert("summary".into(), json!(outcome.summary));
            for (key, value) in outcome_facts(outcome) {
                data.entry(key).or_insert(value);
            }
        }
        StepResult::Observed { observation } => {
            data.insert(
                "summary".into(),
                json!(format!("Observed version {}", observation.version)),
            );
            data.insert("observation".into(), observation_data(observation));
        }
        StepResult::Content { content } => {
            data.insert(
                "summary".into(),
                json!(format!(
                    "Read {} of {} characters",
                    content.content.chars().count(),
                    content.total_chars
                )),
            );
            data.insert("content".into(), json!(content));
        }
    }
    Value::Object(data)
}

/// One step's text: the summary of an action, the rendering of an observation or content.
fn step_text(result: &StepResult) -> Rendering {
    match result {
        StepResult::Acted { outcome } => Rendering::page(outcome.summary.as_str()),
        StepResult::Observed { observation } => render_page(observation),
        StepResult::Content { content } => render_content(content),
    }
}

#[cfg(test)]
#[path = "batch_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "batch_schema_tests.rs"]
mod schema_tests;
