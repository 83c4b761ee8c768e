//! `Click`: trusted mouse input at the centre of an element, in the top document or in a frame
//! (same-origin or not).
//!
//! The page scrolls the element into view, checks it has a box and that its centre is not
//! covered, and reports the point; the click itself goes through `chrome.debugger`
//! (`Input.dispatchMouseEvent`), so the page sees `event.isTrusted === true` — the same as a
//! person's click, which many sites require.
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
use tabwire_protocol::{Clicked, OpError, OpResult, TabId, Target};

use crate::debugger;
use crate::observation::{Detail, PageNode, render_node};
use crate::ops::{frames, tabs::resolve_tab, target};
use crate::page::{self, PageCommand};
use crate::refs::TOP_FRAME;
use crate::requests::Checkpoint;

#[derive(Deserialize)]
struct ClickPoint {
    x: f64,
    y: f64,
    node: PageNode,
    rebound: Option<u32>,
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

/// Clicks the target.
pub async fn click(
    tab_id: Option<TabId>,
    target: &Target,
    checkpoint: &Checkpoint,
) -> Result<OpResult, OpError> {
    let tab = resolve_tab(tab_id).await?;
    let prepared = target::prepare(tab.id, target, TOP_FRAME)?;
    let missing = prepared.missing_frame();
    let chain = frames::chain(tab.id, prepared.frame)
        .await?
        .ok_or_else(|| page::missing_frame_error(tab.id, prepared.frame, missing))?;
    // Attach first: in a headed Chrome the "is being debugged" bar appears on the first attach
    // and shrinks the viewport, which would move the element away from a point measured before.
    debugger::ensure_attached(tab.id).await?;

    // Each frame's index among its parent's frames: chain[k] is frames[indexes[k]] of chain[k+1].
    let mut indexes = Vec::with_capacity(chain.len() - 1);
    for &frame in &chain[..chain.len() - 1] {
        let reply =
            page::run::<FrameIndex>(tab.id, frame, &PageCommand::FrameIndex, missing).await?;
        let index = u32::try_from(reply.value.index)
            .map_err(|_| page::missing_frame_error(tab.id, frame, missing))?;
        indexes.push(index);
    }
    // From the top down, bring each frame element on the way into view.
    for k in (0..indexes.len()).rev() {
        page::run::<serde_json::Value>(
            tab.id,
            chain[k + 1],
            &PageCommand::ScrollFrame { index: indexes[k] },
            missing,
        )
        .await?;
    }
    let reply = page::run::<ClickPoint>(
        tab.id,
        prepared.frame,
        &PageCommand::Click {
            target: prepared.page.clone(),
        },
        missing,
    )
    .await?;
    prepared.check_document(&reply.document_id)?;
    let point = reply.value;
    prepared.rebound(tab.id, point.rebound);
    // From the bottom up, carry the point into each parent's viewport.
    let (mut x, mut y) = (point.x, point.y);
    for (k, &index) in indexes.iter().enumerate() {
        let hit = page::run::<Point>(
            tab.id,
            chain[k + 1],
            &PageCommand::FrameHit { index, x, y },
            missing,
        )
        .await?;
        (x, y) = (hit.value.x, hit.value.y);
    }
    checkpoint.check()?;
    debugger::click_at(tab.id, x, y).await?;
    Ok(OpResult::Clicked(Clicked {
        tab_id: tab.id,
        target: render_node(&point.node, &tab.url, Detail::Full),
        x,
        y,
    }))
}
