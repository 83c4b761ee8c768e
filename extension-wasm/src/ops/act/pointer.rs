//! Click, hover and drag: trusted mouse input at the centre of an element, in the top
//! document or in a frame (same-origin or not); a drag may end on another point of an element
//! of the top document.
//!
//! The page scrolls the element into view, checks it has a box and that its centre is not
//! covered, and reports the point; the input itself goes through `chrome.debugger`
//! (`Input.dispatchMouseEvent`), so the page sees `event.isTrusted === true` — the same as a
//! person's click, which many sites require. `mode: "dom"` is the explicit exception: the
//! page's own `element.click()`.
//!
//! For an element in a frame, the point is carried up to the top viewport: from the top down,
//! each ancestor scrolls the `<iframe>` on the way into view; the frame scrolls the element and
//! measures it; then from the bottom up, each parent adds the origin of its frame element's
//! content box and checks that the frame element is what is hit there. A child frame's element
//! is found through `window.frames`, which works across origins: the child reports its index
//! `i` (`window.parent.frames[i] === window`), the parent finds the element whose
//! `contentWindow` is `window.frames[i]`. Chrome routes the top-level mouse event into the
//! frame's process.

use serde::Deserialize;
use tabwire_protocol::{
    ActionFacts, ClickMode, DragTo, DropPosition, ErrorCode, MouseButton, OpError, Outcome, TabId,
    Target,
};

use super::steps::{Rebinds, change_target, retrying};
use crate::checkpoint::Checkpoint;
use crate::chrome_tabs::{get_tab, resolve_tab, select_in_window};
use crate::ops::observe::frames;
use crate::ops::target;
use crate::page::{self, PageCommand};
use crate::refs::TOP_FRAME;
use crate::timer::join;
use crate::{debugger, input};
use tabwire_observation::{Detail, PageNode, render_node};

#[derive(Deserialize)]
struct ClickPoint {
    x: f64,
    y: f64,
    node: PageNode,
    rebound: Option<u32>,
    /// The pointer already rests on the element at the point (`underPointer` in
    /// 40-pointer.js); only the click command reports it.
    #[serde(default, rename = "underPointer")]
    under_pointer: bool,
}

#[derive(Deserialize)]
struct FrameIndex {
    index: i64,
}

#[derive(Deserialize)]
struct Point {
    x: f64,
    y: f64,
}

#[derive(Deserialize)]
struct Clicked {
    node: PageNode,
    rebound: Option<u32>,
}

impl Rebinds for Clicked {
    fn rebound(&self) -> Option<u32> {
        self.rebound
    }
}

/// An element's centre in the top viewport, and the element as a line.
pub struct Located {
    /// CSS pixels from the viewport's left.
    pub x: f64,
    /// CSS pixels from the viewport's top.
    pub y: f64,
    /// The element, rendered like an observation line.
    pub line: String,
    /// Whether the tab is the selected tab of its window (mouse moves reach only those).
    pub shown: bool,
    /// Whether the pointer already rests on the element at the point, in the top document,
    /// and nothing was scrolled to bring it there: a move would enter nothing.
    pub under_pointer: bool,
}

/// Scrolls the target into view (through its frames), checks its centre is not covered, and
/// returns the point in the top viewport.
pub async fn locate(tab: TabId, target: &Target) -> Result<Located, OpError> {
    // One read of the tab gives the URL (for link lines) and whether it is shown; it travels
    // beside the page's work rather than before it.
    let (chrome_tab, point) = join(get_tab(tab), point_in_top(tab, target)).await;
    let chrome_tab = chrome_tab?;
    let (x, y, node, under_pointer) = point?;
    // A tenth of a pixel is precise enough to say where the click landed, and shorter.
    let round = |v: f64| (v * 10.0).round() / 10.0;
    Ok(Located {
        x: round(x),
        y: round(y),
        line: render_node(&node, chrome_tab.url.as_deref(), Detail::Full),
        shown: chrome_tab.active,
        under_pointer,
    })
}

/// The target's centre in the top viewport, the target as the page describes it, and whether
/// the pointer already rests there (see [`Located::under_pointer`]).
async fn point_in_top(tab: TabId, target: &Target) -> Result<(f64, f64, PageNode, bool), OpError> {
    let prepared = target::prepare(tab, target, TOP_FRAME)?;
    let missing = prepared.missing_frame();
    let chain = frames::chain(tab, prepared.frame)
        .await?
        .ok_or_else(|| page::missing_frame_error(tab, prepared.frame, missing))?;
    // Each frame's index among its parent's frames: chain[k] is frames[indexes[k]] of chain[k+1].
    let mut indexes = Vec::with_capacity(chain.len() - 1);
    for &frame in &chain[..chain.len() - 1] {
        let reply = page::run::<FrameIndex>(tab, frame, &PageCommand::FrameIndex, missing).await?;
        let index = u32::try_from(reply.value.index)
            .map_err(|_| page::missing_frame_error(tab, frame, missing))?;
        indexes.push(index);
    }
    // From the top down, bring each frame element on the way into view.
    for k in (0..indexes.len()).rev() {
        page::run::<serde_json::Value>(
            tab,
            chain[k + 1],
            &PageCommand::ScrollFrame { index: indexes[k] },
            missing,
        )
        .await?;
    }
    let reply = page::run::<ClickPoint>(
        tab,
        prepared.frame,
        &PageCommand::Click {
            target: prepared.page.clone(),
        },
        missing,
    )
    .await?;
    prepared.check_document(&reply.document_id)?;
    let point = reply.value;
    prepared.rebound(tab, point.rebound);
    // From the bottom up, carry the point into each parent's viewport.
    let (mut x, mut y) = (point.x, point.y);
    for (k, &index) in indexes.iter().enumerate() {
        let hit = page::run::<Point>(
            tab,
            chain[k + 1],
            &PageCommand::FrameHit { index, x, y },
            missing,
        )
        .await?;
        (x, y) = (hit.value.x, hit.value.y);
    }
    // In a frame, scrolling its ancestors may have moved it under a pointer that stood still.
    let under_pointer = point.under_pointer && indexes.is_empty();
    Ok((x, y, point.node, under_pointer))
}

/// Clicks the target: trusted mouse input (`count` presses of `button`), or `element.click()`.
pub async fn click(
    tab: TabId,
    target: &Target,
    mode: ClickMode,
    button: MouseButton,
    count: u32,
    checkpoint: &Checkpoint,
) -> Result<Outcome, OpError> {
    if mode == ClickMode::Dom {
        return dom_click(tab, target, checkpoint).await;
    }
    let at = retrying(checkpoint, || locate(tab, target)).await?;
    debugger::ensure_attached(tab).await?;
    // A hand already resting on the element presses without moving (and without the pause
    // a move is given): no widget is armed by a move that enters nothing.
    let with_move = at.shown && !at.under_pointer;
    input::click(tab, (at.x, at.y), button, count, with_move, checkpoint).await?;
    let what = match (button, count) {
        (MouseButton::Left, 1) => "Clicked".to_string(),
        (MouseButton::Left, 2) => "Double-clicked".to_string(),
        (button, count) => format!("Clicked ({:?} button, {count}×)", button).to_lowercase(),
    };
    let summary = format!("{what} {}", at.line);
    // The point itself is no news to an agent (a covered one is reported as an error).
    let facts = ActionFacts::Click {
        target: at.line,
        navigated: None,
        url: None,
    };
    Ok(Outcome::new(tab, summary, facts))
}

/// `mode: "dom"`: the page's own `element.click()`, untrusted, without a hit test.
async fn dom_click(
    tab: TabId,
    target: &Target,
    checkpoint: &Checkpoint,
) -> Result<Outcome, OpError> {
    let url = resolve_tab(Some(tab)).await?.url;
    let prepared = target::prepare(tab, target, TOP_FRAME)?;
    let command = PageCommand::DomClick {
        target: prepared.page.clone(),
    };
    let clicked = change_target::<Clicked>(tab, &prepared, &command, checkpoint).await?;
    let line = render_node(&clicked.node, Some(&url), Detail::Full);
    let summary = format!("Clicked (DOM click) {line}");
    let facts = ActionFacts::DomClick {
        target: line,
        mode: ClickMode::Dom,
    };
    Ok(Outcome::new(tab, summary, facts))
}

/// Makes `tab` the selected tab of its window, if it is not: mouse moves reach only a tab that
/// is shown (see `input::click`), and hovering or dragging is nothing but moves. Returns
/// whether the tab had to be brought forward.
async fn bring_forward(tab: TabId, at: &Located) -> Result<bool, OpError> {
    if at.shown {
        return Ok(false);
    }
    select_in_window(tab).await?;
    Ok(true)
}

/// Moves the mouse over the target.
pub async fn hover(
    tab: TabId,
    target: &Target,
    checkpoint: &Checkpoint,
) -> Result<Outcome, OpError> {
    let at = retrying(checkpoint, || locate(tab, target)).await?;
    let brought = bring_forward(tab, &at).await?;
    debugger::ensure_attached(tab).await?;
    input::move_to(tab, at.x, at.y, checkpoint).await?;
    let summary = format!("Hovering over {}", at.line);
    let facts = ActionFacts::Hover {
        target: at.line,
        brought_forward: brought,
    };
    Ok(Outcome::new(tab, summary, facts))
}

/// Drags from the target's centre to a point of another element (its centre, or its before or
/// after half) or by an offset.
pub async fn drag(
    tab: TabId,
    from: &Target,
    to: &DragTo,
    checkpoint: &Checkpoint,
) -> Result<Outcome, OpError> {
    let start = retrying(checkpoint, || locate(tab, from)).await?;
    let (end, end_line) = match to {
        DragTo::Offset { dx, dy } => ((start.x + dx, start.y + dy), None),
        DragTo::Target { target, position } => {
            let prepared = target::prepare(tab, target, TOP_FRAME)?;
            if prepared.frame != TOP_FRAME {
                return Err(OpError::new(
                    ErrorCode::InvalidArgument,
                    "Dragging onto an element inside a frame is not supported yet; drag by an \
                     offset (dx, dy) instead.",
                ));
            }
            let url = resolve_tab(Some(tab)).await?.url;
            let reply = retrying(checkpoint, || async {
                page::run::<ClickPoint>(
                    tab,
                    TOP_FRAME,
                    &PageCommand::Point {
                        target: prepared.page.clone(),
                        position: *position,
                    },
                    prepared.missing_frame(),
                )
                .await
            })
            .await?;
            prepared.check_document(&reply.document_id)?;
            prepared.rebound(tab, reply.value.rebound);
            let line = render_node(&reply.value.node, Some(&url), Detail::Full);
            ((reply.value.x, reply.value.y), Some(line))
        }
    };
    let brought = bring_forward(tab, &start).await?;
    debugger::ensure_attached(tab).await?;
    let html5 = input::drag(tab, (start.x, start.y), end, checkpoint).await?;
    let onto = match (&end_line, to) {
        (Some(line), DragTo::Target { position, .. }) if !position.is_center() => {
            format!("{line} (position {})", position_name(*position))
        }
        (Some(line), _) => line.clone(),
        (None, _) => format!("({:.0}, {:.0})", end.0, end.1),
    };
    let summary = format!("Dragged {} to {onto}", start.line);
    let facts = ActionFacts::Drag {
        target: start.line,
        to: end_line,
        x: end.0,
        y: end.1,
        html5,
        brought_forward: brought,
    };
    Ok(Outcome::new(tab, summary, facts))
}

/// A drop position as the agent wrote it.
fn position_name(position: DropPosition) -> &'static str {
    match position {
        DropPosition::Center => "center",
        DropPosition::Before => "before",
        DropPosition::After => "after",
    }
}
