//! `Click`: trusted mouse input at the centre of an element.
//!
//! The page scrolls the element into view, checks it has a box and that its centre is not
//! covered, and reports the point; the click itself goes through `chrome.debugger`
//! (`Input.dispatchMouseEvent`), so the page sees `event.isTrusted === true` — the same as a
//! person's click, which many sites require.

use serde::Deserialize;
use tabwire_protocol::{Clicked, OpError, OpResult, TabId, Target};

use crate::debugger;
use crate::observation::{Detail, PageNode, render_node};
use crate::ops::{tabs::resolve_tab, target};
use crate::page::{self, PageCommand};
use crate::requests::Checkpoint;

#[derive(Deserialize)]
struct ClickPoint {
    x: f64,
    y: f64,
    node: PageNode,
}

/// Clicks the target.
pub async fn click(
    tab_id: Option<TabId>,
    target: &Target,
    checkpoint: &Checkpoint,
) -> Result<OpResult, OpError> {
    let tab = resolve_tab(tab_id).await?;
    let prepared = target::prepare(tab.id, target)?;
    // Attach first: in a headed Chrome the "is being debugged" bar appears on the first attach
    // and shrinks the viewport, which would move the element away from a point measured before.
    debugger::ensure_attached(tab.id).await?;
    let reply = page::run::<ClickPoint>(
        tab.id,
        &PageCommand::Click {
            target: prepared.page.clone(),
        },
    )
    .await?;
    prepared.check_document(target, &reply.document_id)?;
    let point = reply.value;
    checkpoint.check()?;
    debugger::click_at(tab.id, point.x, point.y).await?;
    Ok(OpResult::Clicked(Clicked {
        tab_id: tab.id,
        target: render_node(&point.node, &tab.url, Detail::Full),
        x: point.x,
        y: point.y,
    }))
}
