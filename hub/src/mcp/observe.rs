//! Reading pages: `get_page_snapshot`, `get_page_content`, `list_frames`,
//! `get_selected_text`.
//!
//! The extension builds observations (refs, budgets, paging, deltas); the hub validates the
//! arguments and renders the result for the model: a header line, then one `@ref text` line per
//! node, then a footer that says what was left out and how to get it.
//!
//! `tabId` and `browserId` carry no description in the schemas: the server instructions
//! explain them once instead of in every tool (every word of `tools/list` costs tokens).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::{
    ContentFormat, ContentRequest, GetSelectedText, ListFrames, Observation, ObservedNode,
    PageContent, SelectedText, SnapshotRequest, TabId,
};

use super::args::{NoArgs, in_range, optional_selector, query};
use super::envelope::{Rendering, ToolError, ToolOutput, quoted};
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
        render_observation(&observation),
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

/// The structured result. A delta leaves out what the caller already has from its baseline
/// (URL, title, document, the list around the window), so an unchanged page costs a few hundred
/// bytes; the list's figures come back whenever they changed, since a delta can grow the view
/// past its budget.
pub(super) fn observation_data(observation: &Observation) -> serde_json::Value {
    match &observation.delta {
        Some(delta) => {
            let mut data = json!({
                "tabId": observation.tab_id,
                "version": observation.version,
                "delta": delta,
            });
            if let Some(frame) = observation.frame_id {
                data["frameId"] = json!(frame);
            }
            if !observation.outside.is_empty() {
                data["outside"] = json!(observation.outside);
            }
            if delta.view_changed {
                data["truncated"] = json!(observation.truncated);
                data["totalNodes"] = json!(observation.total_nodes);
                if let Some(next) = observation.next_offset {
                    data["nextOffset"] = json!(next);
                }
            }
            data
        }
        None => json!(observation),
    }
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

/// The header line shared by observations and content: where it comes from (the title and
/// URL are the page's).
fn header(tab_id: TabId, frame_id: Option<u32>, title: &str, url: &str) -> Rendering {
    let mut line = Rendering::hub(match frame_id {
        Some(frame) => format!("tab {tab_id} frame {frame} "),
        None => format!("tab {tab_id} "),
    });
    line.push_page(&format!("{} {url}", quoted(title)));
    line
}

/// `@e5 button "Save"`, indented two spaces for each boundary around the node: page text (the
/// role and states are the browser's words, but the name is the page's).
fn node_line(node: &ObservedNode) -> Rendering {
    let indent = "  ".repeat(usize::from(node.depth));
    Rendering::page(match node.element_ref {
        Some(element_ref) => format!("{indent}{element_ref} {}", node.text),
        None => format!("{indent}{}", node.text),
    })
}

/// Refs on one line (`removed: @e5 @e6`), whatever the peer's kind of ref.
fn refs_line<R: std::fmt::Display>(refs: &[R]) -> String {
    refs.iter().map(R::to_string).collect::<Vec<_>>().join(" ")
}

/// Where an observation's window lies in its (filtered) list of nodes, for any peer.
pub(super) struct Window {
    /// The list's length.
    pub total_nodes: u32,
    /// The position of the first node shown.
    pub offset: u32,
    /// Whether nodes of the list are not shown.
    pub truncated: bool,
    /// How many are not shown, and the characters they hold.
    pub omitted_nodes: u32,
    pub omitted_chars: u32,
    /// The `offset` that shows the next nodes.
    pub next_offset: Option<u32>,
    /// What narrows the list (`query/selector`), for the footer.
    pub narrow: &'static str,
    /// Whether the counts are estimates (the page was not read to its end yet).
    pub estimated: bool,
}

/// A full observation's lines, for any peer: the header, a note when a delta's baseline was
/// gone, the node lines, what lies outside the window (browsers' popups), and a footer saying
/// what was left out and how to page on.
pub(super) fn render_full(
    head: Rendering,
    reset: bool,
    nodes: Vec<Rendering>,
    outside: Vec<Rendering>,
    window: &Window,
) -> Rendering {
    let mut lines = vec![head];
    if reset {
        lines.push("(that version is no longer a baseline for these arguments; full view)".into());
    }
    let empty = nodes.is_empty();
    lines.extend(nodes);
    if empty && window.total_nodes == 0 {
        lines.push("(no nodes: nothing in this view matches)".into());
    }
    lines.extend(outside);
    if window.truncated {
        let shown_from = window.offset + 1;
        // Lines of this list only: a browser's inlined frames' lines are not positions of it.
        let shown_to = window.offset + (window.total_nodes - window.omitted_nodes);
        let about = if window.estimated { "about " } else { "" };
        let mut footer = format!(
            "[nodes {shown_from}-{shown_to} of {about}{}; {about}{} not shown ({about}{} chars)",
            window.total_nodes, window.omitted_nodes, window.omitted_chars
        );
        if let Some(next) = window.next_offset {
            footer.push_str(&format!("; next: offset={next}"));
        }
        footer.push_str(&format!("; or narrow with {}]", window.narrow));
        lines.push(footer.into());
    }
    Rendering::lines(lines)
}

/// What a delta says, for any peer.
pub(super) struct Changes<'a, R> {
    /// The version compared against.
    pub since: u64,
    /// Lines of nodes new or changed.
    pub changed: Vec<Rendering>,
    /// Refs no longer in the window.
    pub removed: &'a [R],
    /// The window's new order, when nodes moved.
    pub order: Option<&'a [R]>,
    /// Whether the list around the window changed.
    pub view_changed: bool,
}

/// A delta: a short header (the caller has the rest from its baseline), then the changes and
/// what lies outside the window.
pub(super) fn render_changes<R: std::fmt::Display>(
    head: String,
    changes: Changes<'_, R>,
    outside: Vec<Rendering>,
    window: &Window,
) -> Rendering {
    let more = match (changes.view_changed, window.truncated) {
        (false, _) => String::new(),
        (true, true) => {
            let next = window
                .next_offset
                .map(|next| format!(", next: offset={next}"))
                .unwrap_or_default();
            let about = if window.estimated { "about " } else { "" };
            format!(
                " [the view now has {about}{} nodes and is truncated{next}]",
                window.total_nodes
            )
        }
        (true, false) => format!(
            " [the view now has {} nodes, all shown]",
            window.total_nodes
        ),
    };
    let since = changes.since;
    let mut lines = Vec::new();
    if changes.changed.is_empty() && changes.removed.is_empty() && changes.order.is_none() {
        let nothing = if outside.is_empty() {
            "no changes"
        } else {
            "no changes in this view"
        };
        lines.push(format!("{head}: {nothing} since version {since}{more}").into());
        lines.extend(outside);
        return Rendering::lines(lines);
    }
    lines.push(format!("{head}: changes since version {since}{more}:").into());
    lines.extend(changes.changed);
    if !changes.removed.is_empty() {
        lines.push(format!("removed: {}", refs_line(changes.removed)).into());
    }
    if let Some(order) = changes.order {
        lines.push(format!("order: {}", refs_line(order)).into());
    }
    lines.extend(outside);
    Rendering::lines(lines)
}

/// A browser observation's window.
fn window(observation: &Observation) -> Window {
    Window {
        total_nodes: observation.total_nodes,
        offset: observation.offset,
        truncated: observation.truncated,
        omitted_nodes: observation.omitted_nodes,
        omitted_chars: observation.omitted_chars,
        next_offset: observation.next_offset,
        narrow: "query/selector",
        estimated: observation.estimated,
    }
}

/// The model's view of an observation: a header, `@ref text` lines (or the delta), and a
/// footer saying what was left out and how to page on.
pub fn render_observation(observation: &Observation) -> Rendering {
    let mut outside = Vec::new();
    outside_lines(observation, &mut outside);
    if let Some(delta) = &observation.delta {
        // The tab is in the data and was in the baseline's header: not repeated here.
        let head = match observation.frame_id {
            Some(frame) => format!("frame {frame} version {}", observation.version),
            None => format!("version {}", observation.version),
        };
        let changes = Changes {
            since: delta.since,
            changed: delta.changed.iter().map(node_line).collect(),
            removed: &delta.removed,
            order: delta.order.as_deref(),
            view_changed: delta.view_changed,
        };
        return render_changes(head, changes, outside, &window(observation));
    }
    let mut head = header(
        observation.tab_id,
        observation.frame_id,
        &observation.title,
        &observation.url,
    );
    head.push(&format!(" (version {})", observation.version));
    let nodes = observation.nodes.iter().map(node_line).collect();
    render_full(
        head,
        observation.reset,
        nodes,
        outside,
        &window(observation),
    )
}

/// Popups outside the window: a line saying what opened (with its lines) or closed.
/// Their notes name the popups, so they are page text.
fn outside_lines(observation: &Observation, lines: &mut Vec<Rendering>) {
    for outside in &observation.outside {
        if outside.nodes.is_empty() {
            lines.push(Rendering::page(outside.note.as_str()));
        } else {
            lines.push(Rendering::page(format!("{}:", outside.note)));
            lines.extend(outside.nodes.iter().map(node_line));
        }
    }
}

/// The model's view of a content read.
pub(super) fn render_content(content: &PageContent) -> Rendering {
    let mut text = header(
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
    use tabwire_protocol::{Delta, ElementRef};

    fn observation() -> Observation {
        Observation {
            tab_id: 4,
            frame_id: None,
            url: "http://127.0.0.1/login".into(),
            title: "Log in".into(),
            document_id: "D".into(),
            version: 3,
            nodes: vec![
                ObservedNode {
                    element_ref: Some(ElementRef::top(1)),
                    text: "heading[1] \"Welcome\"".into(),
                    depth: 0,
                },
                ObservedNode {
                    element_ref: Some(ElementRef::top(2)),
                    text: "textbox \"Username\"".into(),
                    depth: 0,
                },
            ],
            total_nodes: 5,
            offset: 0,
            truncated: true,
            omitted_nodes: 3,
            omitted_chars: 61,
            next_offset: Some(2),
            delta: None,
            reset: false,
            estimated: false,
            outside: Vec::new(),
        }
    }

    #[test]
    fn observation_renders_as_ref_lines_with_a_paging_footer() {
        assert_eq!(
            render_observation(&observation()),
            "tab 4 \"Log in\" http://127.0.0.1/login (version 3)\n\
             @e1 heading[1] \"Welcome\"\n\
             @e2 textbox \"Username\"\n\
             [nodes 1-2 of 5; 3 not shown (61 chars); next: offset=2; or narrow with query/selector]"
        );
    }

    #[test]
    fn estimated_counts_say_about() {
        // A first snapshot of a big page counts what it has not read yet by an estimate.
        let mut estimated = observation();
        estimated.estimated = true;
        assert_eq!(
            render_observation(&estimated),
            "tab 4 \"Log in\" http://127.0.0.1/login (version 3)\n\
             @e1 heading[1] \"Welcome\"\n\
             @e2 textbox \"Username\"\n\
             [nodes 1-2 of about 5; about 3 not shown (about 61 chars); next: offset=2; or narrow with query/selector]"
        );
        assert_eq!(observation_data(&estimated)["estimated"], true);
        assert!(observation_data(&observation()).get("estimated").is_none());
    }

    #[test]
    fn deltas_render_only_what_changed() {
        // The window stays truncated (5 nodes, 2 shown); nothing in it changed.
        let mut empty = observation();
        empty.nodes.clear();
        empty.delta = Some(Delta {
            since: 2,
            changed: vec![],
            removed: vec![],
            order: None,
            view_changed: true,
        });
        let text = render_observation(&empty);
        assert_eq!(
            text,
            "version 3: no changes since version 2 [the view now has 5 nodes and is truncated, next: offset=2]"
        );
        assert_eq!(
            observation_data(&empty).to_string(),
            r#"{"delta":{"changed":[],"removed":[],"since":2,"viewChanged":true},"nextOffset":2,"tabId":4,"totalNodes":5,"truncated":true,"version":3}"#
        );
        let mut whole = empty.clone();
        if let Some(delta) = whole.delta.as_mut() {
            delta.view_changed = false;
        }
        assert_eq!(
            render_observation(&whole),
            "version 3: no changes since version 2"
        );
        assert_eq!(
            observation_data(&whole).to_string(),
            r#"{"delta":{"changed":[],"removed":[],"since":2},"tabId":4,"version":3}"#
        );

        // A popup opened below the window: the delta says so, with its lines, indented.
        let mut popup = whole.clone();
        popup.outside = vec![
            tabwire_protocol::Outside {
                note: "listbox \"States\" opened outside this view (2 lines inside)".into(),
                nodes: vec![
                    ObservedNode {
                        element_ref: Some(ElementRef::top(9)),
                        text: "listbox \"States\"".into(),
                        depth: 0,
                    },
                    ObservedNode {
                        element_ref: Some(ElementRef::top(10)),
                        text: "option \"Texas\"".into(),
                        depth: 1,
                    },
                ],
            },
            tabwire_protocol::Outside {
                note: "menu \"File\" closed".into(),
                nodes: vec![],
            },
        ];
        assert_eq!(
            render_observation(&popup),
            "version 3: no changes in this view since version 2\n\
             listbox \"States\" opened outside this view (2 lines inside):\n\
             @e9 listbox \"States\"\n  @e10 option \"Texas\"\nmenu \"File\" closed"
        );
        assert!(observation_data(&popup)["outside"][0]["nodes"][1]["depth"] == 1);

        let mut changed = empty.clone();
        changed.delta = Some(Delta {
            since: 2,
            changed: vec![ObservedNode {
                element_ref: Some(ElementRef::top(7)),
                text: "button \"Save\"".into(),
                depth: 0,
            }],
            removed: vec![ElementRef::top(5), ElementRef::top(6)],
            order: Some(vec![ElementRef::top(7), ElementRef::top(1)]),
            view_changed: true,
        });
        let text = render_observation(&changed);
        assert_eq!(
            text,
            "version 3: changes since version 2 [the view now has 5 nodes and is truncated, next: offset=2]:\n@e7 button \"Save\"\nremoved: @e5 @e6\norder: @e7 @e1"
        );
    }

    #[test]
    fn frames_are_named_in_the_header() {
        let mut framed = observation();
        framed.frame_id = Some(9);
        framed.truncated = false;
        assert!(
            render_observation(&framed)
                .as_str()
                .starts_with("tab 4 frame 9 \"Log in\"")
        );
    }

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
