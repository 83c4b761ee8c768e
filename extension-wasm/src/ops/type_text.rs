//! `TypeText`: put text into a field the way a framework-controlled page notices — the native
//! value setter plus `input` and `change` events (contenteditable: `insertText`). All of it
//! happens in the page (js/collector.js), in the field's own frame; a password's resulting value is
//! redacted there.

use serde::Deserialize;
use tabwire_protocol::{OpError, OpResult, TabId, Target, Typed};

use crate::observation::{Detail, PageNode, render_node};
use crate::ops::{tabs::resolve_tab, target};
use crate::page::{self, PageCommand};
use crate::refs::TOP_FRAME;
use crate::requests::Checkpoint;

#[derive(Deserialize)]
struct TypedFacts {
    value: String,
    node: PageNode,
    rebound: Option<u32>,
}

/// Types `text` into the target, replacing its value when `clear`.
pub async fn type_text(
    tab_id: Option<TabId>,
    target: &Target,
    text: String,
    clear: bool,
    checkpoint: &Checkpoint,
) -> Result<OpResult, OpError> {
    let tab = resolve_tab(tab_id).await?;
    let prepared = target::prepare(tab.id, target, TOP_FRAME)?;
    checkpoint.check()?;
    let reply = page::run::<TypedFacts>(
        tab.id,
        prepared.frame,
        &PageCommand::Type {
            target: prepared.page.clone(),
            text,
            clear,
        },
        prepared.missing_frame(),
    )
    .await?;
    // The page checked its document token before typing; this double-checks Chrome's view,
    // after the fact, so a mismatch must say the text may already be in.
    prepared
        .check_document(&reply.document_id)
        .map_err(OpError::action_may_have_occurred)?;
    prepared.rebound(tab.id, reply.value.rebound);
    Ok(OpResult::Typed(Typed {
        tab_id: tab.id,
        target: render_node(&reply.value.node, &tab.url, Detail::WithoutValue),
        value: reply.value.value,
    }))
}
