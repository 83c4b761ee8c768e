//! `ListFrames`, and the chain of frames from a frame up to the top document (for clicks
//! inside frames).
//!
//! Frames come from `chrome.webNavigation.getAllFrames`, which covers cross-origin frames too.
//! Documents that are not the frame's active one (prerendered, kept in the back-forward cache,
//! being deleted) are left out.

use std::collections::HashMap;

use serde::Deserialize;
use tabwire_protocol::{FrameInfo, FrameList, OpError, TabId};

use crate::chrome::{self, ChromeFrame};
use crate::chrome_tabs::{resolve_tab, tab_error};
use crate::page::{self, PageCommand};
use crate::refs::TOP_FRAME;
use tabwire_observation::PageNode;

/// Lists the tab's frames, the top document first, parents before children.
pub async fn list_frames(tab_id: Option<TabId>) -> Result<FrameList, OpError> {
    let tab = resolve_tab(tab_id).await?.id;
    let frames = all_frames(tab).await?;
    Ok(FrameList {
        tab_id: tab,
        frames: ordered(frames),
    })
}

pub async fn all_frames(tab: TabId) -> Result<Vec<ChromeFrame>, OpError> {
    chrome::active_frames(tab)
        .await
        .map_err(|failure| tab_error(tab, &failure.message))
}

/// Orders frames depth-first from the top document, siblings by frame ID (creation order).
/// Frames whose parent is not listed are left out: they are being torn down.
pub fn ordered(frames: Vec<ChromeFrame>) -> Vec<FrameInfo> {
    // A frame on a denied origin, and every frame inside one, is listed without its URL.
    let views = (!crate::policy::allows_everything())
        .then(|| crate::policy::view_frames(&frames, |url| !crate::policy::shows(url)));
    let mut children: HashMap<i64, Vec<&ChromeFrame>> = HashMap::new();
    for frame in &frames {
        children
            .entry(frame.parent_frame_id)
            .or_default()
            .push(frame);
    }
    for list in children.values_mut() {
        list.sort_by_key(|f| f.frame_id);
    }
    let mut out = Vec::with_capacity(frames.len());
    let mut stack: Vec<&ChromeFrame> = children
        .get(&-1)
        .map(|tops| tops.iter().rev().copied().collect())
        .unwrap_or_default();
    while let Some(frame) = stack.pop() {
        let Ok(frame_id) = u32::try_from(frame.frame_id) else {
            continue;
        };
        let blocked = views
            .as_ref()
            .is_some_and(|views| views.get(&frame_id).is_none_or(|view| !view.readable()));
        out.push(FrameInfo {
            frame_id,
            parent_frame_id: u32::try_from(frame.parent_frame_id).ok(),
            url: if blocked {
                String::new()
            } else {
                frame.url.clone()
            },
            blocked,
        });
        if let Some(kids) = children.get(&frame.frame_id) {
            stack.extend(kids.iter().rev().copied());
        }
    }
    out
}

/// Fills in the frame ID of each iframe node of a walk of `frame`, from the index in
/// `window.frames` the collector reported: every child frame tells its own index, in one
/// injection. Best effort: the IDs are left out when a child cannot be asked (a frame Chrome
/// does not let extensions script, or one that is still being created).
pub async fn name_child_frames(tab: TabId, frame: u32, nodes: &mut [PageNode]) {
    if !nodes.iter().any(|n| n.frame_index.is_some()) {
        return;
    }
    let Ok(all) = all_frames(tab).await else {
        return;
    };
    let children: Vec<u32> = all
        .iter()
        .filter(|f| f.parent_frame_id == i64::from(frame))
        .filter_map(|f| u32::try_from(f.frame_id).ok())
        .collect();
    if children.is_empty() {
        return;
    }
    #[derive(Deserialize)]
    struct Index {
        index: i64,
    }
    let Ok(answers) = page::run_all::<Index>(tab, &children, &PageCommand::FrameIndex).await else {
        return;
    };
    let by_index: HashMap<u32, u32> = answers
        .into_iter()
        .filter_map(|(frame_id, i)| Some((u32::try_from(i.index).ok()?, frame_id)))
        .collect();
    for node in nodes {
        if let Some(index) = node.frame_index {
            node.frame = by_index.get(&index).copied();
        }
    }
}

/// The frames from `frame` up to the top document: `[frame, parent, …, 0]`. `None` when the
/// frame is not in the tab (any more).
pub async fn chain(tab: TabId, frame: u32) -> Result<Option<Vec<u32>>, OpError> {
    if frame == TOP_FRAME {
        return Ok(Some(vec![TOP_FRAME]));
    }
    Ok(chain_in(&all_frames(tab).await?, frame))
}

fn chain_in(frames: &[ChromeFrame], frame: u32) -> Option<Vec<u32>> {
    let parents: HashMap<i64, i64> = frames
        .iter()
        .map(|f| (f.frame_id, f.parent_frame_id))
        .collect();
    let mut out = vec![frame];
    let mut at = i64::from(frame);
    while at != i64::from(TOP_FRAME) {
        let parent = *parents.get(&at)?;
        at = parent;
        out.push(u32::try_from(parent).ok()?);
        if out.len() > 64 {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(id: i64, parent: i64) -> ChromeFrame {
        ChromeFrame {
            frame_id: id,
            parent_frame_id: parent,
            url: format!("http://x/{id}"),
            document_lifecycle: None,
        }
    }

    #[test]
    fn frames_are_listed_top_first_and_parents_before_children() {
        let frames = vec![
            frame(9, 4),
            frame(4, 0),
            frame(0, -1),
            frame(5, 0),
            frame(7, 77),
        ];
        let listed: Vec<(u32, Option<u32>)> = ordered(frames)
            .iter()
            .map(|f| (f.frame_id, f.parent_frame_id))
            .collect();
        assert_eq!(
            listed,
            [(0, None), (4, Some(0)), (9, Some(4)), (5, Some(0))],
            "a frame whose parent is gone is left out"
        );
    }

    #[test]
    fn frames_inside_a_denied_frame_are_listed_blocked_without_their_url() {
        crate::policy::set_operator(
            tabwire_protocol::policy::Policy::from_lines("https://bank.example deny").unwrap(),
        );
        let mut frames = vec![frame(0, -1), frame(4, 0), frame(9, 4), frame(5, 0)];
        frames[1].url = "https://bank.example/account".into();
        let listed = ordered(frames);
        crate::policy::set_operator(tabwire_protocol::policy::Policy::default());
        let blocked: Vec<(u32, bool, &str)> = listed
            .iter()
            .map(|f| (f.frame_id, f.blocked, f.url.as_str()))
            .collect();
        assert_eq!(
            blocked,
            [
                (0, false, "http://x/0"),
                (4, true, ""),
                (9, true, ""),
                (5, false, "http://x/5")
            ]
        );
    }

    #[test]
    fn the_chain_goes_up_to_the_top() {
        let frames = vec![frame(0, -1), frame(4, 0), frame(9, 4)];
        assert_eq!(chain_in(&frames, 9), Some(vec![9, 4, 0]));
        assert_eq!(chain_in(&frames, 4), Some(vec![4, 0]));
        assert_eq!(chain_in(&frames, 8), None);
        let cyclic = vec![frame(1, 2), frame(2, 1)];
        assert_eq!(chain_in(&cyclic, 1), None);
    }
}
