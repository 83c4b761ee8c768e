//! Reading pages: `get_page_snapshot`, `get_page_content`, `list_frames`,
//! `get_selected_text`.
//!
//! The extension builds observations (refs, budgets, paging, deltas); the hub validates the
//! arguments and shows the result as it shows every peer's observation (`observation.rs`).
//!
//! `tabId` and `browserId` carry no description in the schemas: the server instructions
//! explain them once instead of in every tool (every word of `tools/list` costs tokens).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::{
    ContentFormat, ContentRequest, GetSelectedText, ListFrames, PageContent, SelectedText,
    SnapshotRequest, TabId,
};

use super::args::{NoArgs, in_range, optional_selector, query};
use super::envelope::{Rendering, ToolError, ToolOutput};
use super::observation::{observation_data, page_header, render_page};
use super::routing::ToolContext;

const READ_DEADLINE: Duration = Duration::from_secs(20);
const FRAMES_DEADLINE: Duration = Duration::from_secs(10);
/// The standalone snapshot budget. Small on purpose: every node stays reachable through
/// `query`, `selector` and `offset`, so there is no reason to make every read expensive.
const DEFAULT_MAX_NODES: u32 = 200;
const DEFAULT_MAX_CHARS: u32 = 10_000;
const DEFAULT_CONTENT_CHARS: u32 = 12_000;
const SELECTION_DEADLINE: Duration = Duration::from_secs(10);
const DEFAULT_SELECTION_CHARS: u32 = 2000;
const MAX_SELECTION_CHARS: u32 = 20_000;

/// Arguments of get_page_snapshot.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SnapshotArgs {
    pub frame_id: Option<u32>,
    /// Subtree only.
    pub selector: Option<String>,
    /// Lines with this text, and their row or list item.
    pub query: Option<String>,
    #[schemars(extend("default" = 200))]
    pub max_nodes: Option<u32>,
    #[schemars(extend("default" = 10000))]
    pub max_chars: Option<u32>,
    pub offset: Option<u32>,
    /// Only changes since this version.
    pub since: Option<u64>,
    /// Keep text people cannot see (opacity 0, clipped, off-screen, tiny).
    pub include_hidden: Option<bool>,
}

pub const GET_PAGE_SNAPSHOT: &str = "The page as `@e3 button \"Sign in\"` lines, bounded; refs \
work in action tools until it navigates.";

pub async fn get_page_snapshot(
    ctx: &ToolContext,
    args: SnapshotArgs,
) -> Result<ToolOutput, ToolError> {
    let (max_nodes, max_chars) = snapshot_budget(args.max_nodes, args.max_chars)?;
    let request = SnapshotRequest {
        frame_id: args.frame_id,
        scope: optional_selector(args.selector.as_deref(), "selector")?,
        query: query(args.query)?,
        max_nodes,
        max_chars,
        offset: args.offset.unwrap_or(0),
        since: args.since,
        include_hidden: args.include_hidden.unwrap_or(false),
    };
    observe(ctx, request).await
}

async fn observe(ctx: &ToolContext, request: SnapshotRequest) -> Result<ToolOutput, ToolError> {
    let observation = ctx.call(request, READ_DEADLINE).await?;
    Ok(ToolOutput::new(
        observation_data(&observation),
        render_page(&observation),
    ))
}

/// A standalone observation's budget (`get_page_snapshot`, a batch's `observe` step): nodes,
/// then characters.
pub(super) fn snapshot_budget(
    max_nodes: Option<u32>,
    max_chars: Option<u32>,
) -> Result<(u32, u32), ToolError> {
    Ok((
        in_range(max_nodes, DEFAULT_MAX_NODES, 1, 5000, "maxNodes")?,
        in_range(max_chars, DEFAULT_MAX_CHARS, 100, 200_000, "maxChars")?,
    ))
}

/// A content read's budget (`get_page_content`, a batch's `content` step).
pub(super) fn content_chars(max_chars: Option<u32>) -> Result<u32, ToolError> {
    in_range(max_chars, DEFAULT_CONTENT_CHARS, 100, 200_000, "maxChars")
}

/// Arguments of get_page_content.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContentArgs {
    #[schemars(extend("default" = "text"))]
    pub format: Option<Format>,
    pub frame_id: Option<u32>,
    /// This element only.
    pub selector: Option<String>,
    #[schemars(extend("default" = 12000))]
    pub max_chars: Option<u32>,
    pub offset: Option<u32>,
}

// The formats of get_page_content. A plain comment: a doc comment would be the schema's
// description of `format`, which get_page_content's description already covers.
#[derive(Debug, Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Readable text.
    Text,
    /// An observation.
    Aria,
    /// Raw markup.
    Html,
}

pub const GET_PAGE_CONTENT: &str = "A page's content, bounded: text, aria (an observation) or \
html. Passwords never appear.";

pub async fn get_page_content(
    ctx: &ToolContext,
    args: ContentArgs,
) -> Result<ToolOutput, ToolError> {
    let max_chars = content_chars(args.max_chars)?;
    let scope = optional_selector(args.selector.as_deref(), "selector")?;
    let offset = args.offset.unwrap_or(0);
    let format = match args.format.unwrap_or(Format::Text) {
        Format::Aria => {
            let request = SnapshotRequest {
                frame_id: args.frame_id,
                scope,
                query: None,
                max_nodes: DEFAULT_MAX_NODES,
                max_chars,
                offset,
                since: None,
                include_hidden: false,
            };
            return observe(ctx, request).await;
        }
        Format::Text => ContentFormat::Text,
        Format::Html => ContentFormat::Html,
    };
    let request = ContentRequest {
        frame_id: args.frame_id,
        scope,
        format,
        max_chars,
        offset,
    };
    let content = ctx.call(request, READ_DEADLINE).await?;
    Ok(ToolOutput::new(json!(content), render_content(&content)))
}

pub const LIST_FRAMES: &str = "A tab's frames (cross-origin too) and frameIds; refs in frame 3 \
look like @f3e5.";

pub async fn list_frames(ctx: &ToolContext, _args: NoArgs) -> Result<ToolOutput, ToolError> {
    let list = ctx.call(ListFrames {}, FRAMES_DEADLINE).await?;
    let (tab_id, frames) = (list.tab_id, list.frames);
    let lines = frames.iter().map(|frame| {
        let mut line = Rendering::hub(match frame.parent_frame_id {
            Some(parent) => format!("frame {} in {parent} ", frame.frame_id),
            None => format!("frame {} (top) ", frame.frame_id),
        });
        if frame.blocked {
            line.push("(blocked by policy)");
        } else {
            line.push_page(&frame.url);
        }
        line
    });
    let text =
        Rendering::lines(std::iter::once(Rendering::hub(format!("tab {tab_id}"))).chain(lines));
    Ok(ToolOutput::new(
        json!({"tabId": tab_id, "frames": frames}),
        text,
    ))
}

/// Arguments of get_selected_text.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelectedTextArgs {
    #[schemars(extend("default" = 2000))]
    pub max_chars: Option<u32>,
}

pub const GET_SELECTED_TEXT: &str = "The text selected in a tab (any frame).";

pub async fn get_selected_text(
    ctx: &ToolContext,
    args: SelectedTextArgs,
) -> Result<ToolOutput, ToolError> {
    let max_chars = in_range(
        args.max_chars,
        DEFAULT_SELECTION_CHARS,
        1,
        MAX_SELECTION_CHARS,
        "maxChars",
    )?;
    let SelectedText {
        tab_id,
        text,
        total_chars,
    } = ctx
        .call(GetSelectedText { max_chars }, SELECTION_DEADLINE)
        .await?;
    Ok(selection_output(tab_id, text, total_chars))
}

fn selection_output(tab_id: TabId, text: String, total_chars: u32) -> ToolOutput {
    let shown = text.chars().count() as u32;
    let truncated = shown < total_chars;
    let mut rendered = Rendering::hub(if total_chars == 0 {
        format!("tab {tab_id}: nothing is selected")
    } else if truncated {
        format!(
            "tab {tab_id} selection ({shown} of {total_chars} chars; raise maxChars for more):\n"
        )
    } else {
        format!("tab {tab_id} selection ({total_chars} chars):\n")
    });
    rendered.push_page(&text);
    let mut data = json!({"tabId": tab_id, "text": text, "totalChars": total_chars});
    if truncated {
        data["truncated"] = json!(true);
    }
    ToolOutput::new(data, rendered)
}

/// The model's view of a content read.
pub(super) fn render_content(content: &PageContent) -> Rendering {
    let mut text = page_header(
        content.tab_id,
        content.frame_id,
        &content.title,
        &content.url,
    );
    text.push("\n");
    text.push_page(&content.content);
    if content.truncated {
        let end = content.offset as usize + content.content.chars().count();
        let mut footer = format!(
            "\n[characters {}-{end} of {}",
            content.offset, content.total_chars
        );
        if let Some(next) = content.next_offset {
            footer.push_str(&format!("; next: offset={next}"));
        }
        footer.push(']');
        text.push(&footer);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_says_when_it_was_cut() {
        let output = selection_output(3, "Hello".into(), 12);
        assert_eq!(
            output.text,
            "tab 3 selection (5 of 12 chars; raise maxChars for more):\nHello"
        );
        assert_eq!(
            output.data,
            json!({"tabId": 3, "text": "Hello", "totalChars": 12, "truncated": true})
        );
        let whole = selection_output(3, "Hi".into(), 2);
        assert_eq!(whole.text, "tab 3 selection (2 chars):\nHi");
        assert!(whole.data.get("truncated").is_none());
        let none = selection_output(3, String::new(), 0);
        assert_eq!(none.text, "tab 3: nothing is selected");
    }

    #[test]
    fn content_footer_says_where_to_continue() {
        let content = PageContent {
            tab_id: 1,
            frame_id: None,
            url: "http://x/".into(),
            title: "X".into(),
            format: ContentFormat::Text,
            content: "abc".into(),
            offset: 10,
            total_chars: 20,
            truncated: true,
            next_offset: Some(13),
        };
        assert_eq!(
            render_content(&content),
            "tab 1 \"X\" http://x/\nabc\n[characters 10-13 of 20; next: offset=13]"
        );
    }
}
