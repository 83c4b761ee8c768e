//! Acting on elements: `click_element` and `type_text`.
//!
//! `tabId` and `browserId` carry no description in the schemas: the server instructions
//! explain them once instead of in every tool (every word of `tools/list` costs tokens).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::{OpResult, Operation, TabId};

use super::envelope::{ToolError, ToolOutput, quoted};
use super::routing::{ToolContext, unexpected};
use super::selector;

const ACTION_DEADLINE: Duration = Duration::from_secs(20);
const MAX_TEXT_LEN: usize = 100_000;

/// Arguments of click_element.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClickArgs {
    /// An @ref from a snapshot (frame refs like @f3e5 too), or a CSS selector matching exactly
    /// one element.
    pub selector: String,
    pub tab_id: Option<TabId>,
    pub browser_id: Option<String>,
}

pub const CLICK_ELEMENT: &str = "Click an element with trusted mouse input at its centre, after \
scrolling it into view; works inside cross-origin frames. TARGET_COVERED if something else is on \
top of it.";

pub async fn click_element(ctx: &ToolContext, args: ClickArgs) -> Result<ToolOutput, ToolError> {
    let target = selector::parse(&args.selector)?;
    let result = ctx
        .call(
            "click_element",
            args.browser_id.as_deref(),
            args.tab_id,
            Operation::Click { target },
            ACTION_DEADLINE,
        )
        .await?;
    let OpResult::Clicked(clicked) = result else {
        return Err(unexpected("click_element"));
    };
    Ok(ToolOutput {
        text: format!("Clicked {} in tab {}.", clicked.target, clicked.tab_id),
        data: json!(clicked),
    })
}

/// Arguments of type_text.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TypeArgs {
    /// An @ref from a snapshot, or a CSS selector matching exactly one element.
    pub selector: String,
    /// Text to enter.
    pub text: String,
    /// Replace the current value instead of appending (default false).
    #[serde(default)]
    pub clear: bool,
    pub tab_id: Option<TabId>,
    pub browser_id: Option<String>,
}

pub const TYPE_TEXT: &str = "Enter text into a text field or editable element. Sets the value \
natively and fires input/change events, so framework-controlled fields notice.";

pub async fn type_text(ctx: &ToolContext, args: TypeArgs) -> Result<ToolOutput, ToolError> {
    let target = selector::parse(&args.selector)?;
    if args.text.chars().count() > MAX_TEXT_LEN {
        return Err(ToolError::invalid(format!(
            "text is longer than {MAX_TEXT_LEN} characters"
        )));
    }
    let result = ctx
        .call(
            "type_text",
            args.browser_id.as_deref(),
            args.tab_id,
            Operation::TypeText {
                target,
                text: args.text,
                clear: args.clear,
            },
            ACTION_DEADLINE,
        )
        .await?;
    let OpResult::Typed(typed) = result else {
        return Err(unexpected("type_text"));
    };
    Ok(ToolOutput {
        text: format!(
            "Typed into {}; value is now {}.",
            typed.target,
            quoted(&typed.value)
        ),
        data: json!(typed),
    })
}
