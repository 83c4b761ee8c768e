//! Asking the pages where the frames a screenshot must not show are drawn, now: the policy's view
//! of the tab's frames, the readable frames' indexes among their parents' frames, and the frame
//! boxes of the documents that hold hidden frames and of every document above them; then
//! [`super::cover::plan`].

use std::collections::{BTreeSet, HashMap};

use serde::Deserialize;
use tabwire_protocol::policy::Need;
use tabwire_protocol::{ErrorCode, OpError, TabId};

use super::cover::{DocumentBoxes, Patch, plan};
use crate::page::{self, MissingFrame, PageCommand};
use crate::policy::{self, FrameView};
use crate::refs::TOP_FRAME;

/// The frames a screenshot must not show, now, and where: `None` when the policy lets agents
/// read every frame of the tab. `ORIGIN_BLOCKED` when the top document itself may not be read,
/// or when a frame that must be hidden cannot be placed.
pub async fn measure(tab: TabId) -> Result<Option<Measured>, OpError> {
    if policy::allows_everything() {
        return Ok(None);
    }
    let views = policy::frame_views(tab).await?;
    // The top document is judged as every read is (ORIGIN_BLOCKED naming the rule).
    policy::check_view(tab, &views, TOP_FRAME, Need::Read)?;
    if views.values().all(FrameView::readable) {
        return Ok(None);
    }
    // The documents holding the hidden frames' elements, and every document above them.
    let mut documents = BTreeSet::new();
    for view in views.values().filter(|v| !v.readable()) {
        let Some(parent) = view
            .parent
            .filter(|p| views.get(p).is_some_and(FrameView::readable))
        else {
            continue;
        };
        let mut at = Some(parent);
        while let Some(id) = at {
            if !documents.insert(id) {
                break;
            }
            at = views.get(&id).and_then(|v| v.parent);
        }
    }
    // Their readable frames tell their indexes (the documents themselves too, but the top).
    let asked: Vec<u32> = views
        .iter()
        .filter(|(id, view)| {
            **id != TOP_FRAME
                && view.readable()
                && (documents.contains(id) || view.parent.is_some_and(|p| documents.contains(&p)))
        })
        .map(|(id, _)| *id)
        .collect();
    #[derive(Deserialize)]
    struct Index {
        index: i64,
    }
    let indexes: HashMap<u32, u32> = each_frame::<Index>(tab, &asked, &PageCommand::FrameIndex)
        .await
        .into_iter()
        .filter_map(|(frame, i)| Some((frame, u32::try_from(i.index).ok()?)))
        .collect();
    let documents: Vec<u32> = documents.into_iter().collect();
    let boxes: HashMap<u32, DocumentBoxes> = each_frame(tab, &documents, &PageCommand::FrameBoxes)
        .await
        .into_iter()
        .collect();
    let patches = plan(&views, &boxes, &indexes).map_err(|unplaced| {
        if let Some(effect) = &unplaced.effect {
            return OpError::new(
                ErrorCode::OriginBlocked,
                format!(
                    "The tab shows a frame the policy does not let agents read (frame {}), and \
                     the page applies a drawing effect ({effect}) that can draw its pixels \
                     outside the box it is measured in, so no screenshot was taken rather than \
                     one that might show it. get_page_snapshot reads the rest of the page.",
                    unplaced.frame
                ),
            );
        }
        OpError::new(
            ErrorCode::OriginBlocked,
            format!(
                "The tab shows a frame the policy does not let agents read, and tabwire cannot \
                 tell where the page draws it (frame {}, or the frame holding it: its element \
                 cannot be measured or placed), so no screenshot was taken rather than one that \
                 might show it. get_page_snapshot reads the rest of the page.",
                unplaced.frame
            ),
        )
    })?;
    let origins = views
        .iter()
        .map(|(id, view)| {
            // A URL without an origin (`data:`) is named by its scheme: the rest is the page's.
            let origin = tabwire_protocol::policy::origin_of(&view.url).unwrap_or_else(|| {
                view.url
                    .split_once(':')
                    .map_or_else(String::new, |(scheme, _)| {
                        format!("{}:", crate::text::cap(scheme, 20))
                    })
            });
            (*id, origin)
        })
        .collect();
    // The readable documents that hold a frame agents may not read: their frame elements are
    // hidden for the capture (`super::hide`).
    let holders = views
        .values()
        .filter(|view| !view.readable())
        .filter_map(|view| view.parent)
        .filter(|parent| views.get(parent).is_some_and(FrameView::readable))
        .collect();
    Ok(Some(Measured {
        patches,
        origins,
        holders,
    }))
}

/// What [`measure`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// Where to paint.
    pub patches: Vec<Patch>,
    /// Every frame's origin, for the result's `coveredFrames`.
    pub origins: HashMap<u32, String>,
    /// The documents agents may read that hold a frame they may not.
    pub holders: BTreeSet<u32>,
}

/// Runs a read in several frames with one injection, or one at a time when Chrome refuses one
/// of them (the others still answer); the frames that answered, by frame ID.
async fn each_frame<T: serde::de::DeserializeOwned>(
    tab: TabId,
    frames: &[u32],
    command: &PageCommand,
) -> Vec<(u32, T)> {
    if frames.is_empty() {
        return Vec::new();
    }
    if let Ok(answers) = page::run_all::<T>(tab, frames, command).await {
        return answers;
    }
    let mut answers = Vec::with_capacity(frames.len());
    for &frame in frames {
        if let Ok(reply) = page::run::<T>(tab, frame, command, MissingFrame::Requested).await {
            answers.push((frame, reply.value));
        }
    }
    answers
}
