//! The text selected in a tab: of whichever frame has a selection, the top document first.

use serde::Deserialize;
use tabwire_protocol::{OpError, SelectedText, TabId};

use super::frames;
use crate::chrome_tabs::resolve_tab;
use crate::page::{self, PageCommand};
use crate::refs::TOP_FRAME;
use crate::text::slice_chars;

#[derive(Deserialize)]
struct Selected {
    text: String,
}

/// The selection of the frame that has one (the top document first).
pub async fn selected_text(tab_id: Option<TabId>, max_chars: u32) -> Result<SelectedText, OpError> {
    let tab = resolve_tab(tab_id).await?.id;
    let mut ids: Vec<u32> = frames::all_frames(tab)
        .await?
        .iter()
        .filter_map(|f| u32::try_from(f.frame_id).ok())
        .collect();
    if ids.is_empty() {
        ids.push(TOP_FRAME);
    }
    let mut answers = page::run_all::<Selected>(tab, &ids, &PageCommand::SelectedText).await?;
    answers.sort_by_key(|(frame, _)| *frame);
    let text = answers
        .into_iter()
        .map(|(_, s)| s.text)
        .find(|t| !t.is_empty())
        .unwrap_or_default();
    let slice = slice_chars(&text, 0, max_chars);
    Ok(SelectedText {
        tab_id: tab,
        text: slice.text,
        total_chars: slice.total,
    })
}
