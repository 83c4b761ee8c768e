//! What a screenshot must not show (issue 23 §1): every frame the policy does not let agents
//! read — a frame on a denied origin, and whatever is inside one — and where each is drawn in
//! the top document, so that [`super::paint`] can paint over it in the captured image.
//!
//! Nothing of tabwire's runs in a denied frame, so a denied frame cannot say where it is. Its
//! box is read in its parent instead, a document agents may read: the parent lists its frame
//! elements with their boxes and their index in `window.frames` (`PageCommand::FrameBoxes`),
//! and its readable child frames each tell their own index (`PageCommand::FrameIndex`, as for
//! trusted clicks inside frames). Every frame element of that parent which no readable frame
//! claims is painted over: the denied frames, and with them any frame that did not answer
//! (they cannot be told apart without asking the denied ones). A parent inside another frame
//! is placed in the top document the way a click's point is carried up (the frame element's
//! content origin and scale in each document above).
//!
//! Whatever cannot be placed fails closed: a parent that cannot be measured, that holds fewer
//! frame elements than Chrome lists frames under it (one the page keeps out of reach), or whose
//! own frame element is turned or skewed, is covered whole in its own parent, and so on up; when
//! that reaches the top document the screenshot is refused ([`Unplaced`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::Deserialize;

use crate::policy::FrameView;
use crate::refs::TOP_FRAME;

/// A rectangle in CSS pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    /// Left.
    pub x: f64,
    /// Top.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

impl Rect {
    /// The part of `self` inside `other`, if any.
    pub fn intersect(&self, other: &Rect) -> Option<Rect> {
        let x = self.x.max(other.x);
        let y = self.y.max(other.y);
        let right = (self.x + self.width).min(other.x + other.width);
        let bottom = (self.y + self.height).min(other.y + other.height);
        (right > x && bottom > y).then_some(Rect {
            x,
            y,
            width: right - x,
            height: bottom - y,
        })
    }
}

/// One frame element of a document, as `PageCommand::FrameBoxes` measures it in the
/// document's viewport.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameBox {
    /// Its index in `window.frames`; `None` when it has none.
    pub index: Option<u32>,
    /// The address the page gave it (`src`, an object's `data`): which frame it holds, most
    /// likely; only the result's naming trusts it.
    #[serde(default)]
    pub src: Option<String>,
    /// Whether it holds a document (an `<object>` showing an image does not).
    #[serde(default)]
    pub holds: bool,
    /// Its border box.
    pub x: f64,
    /// See `x`.
    pub y: f64,
    /// See `x`.
    pub width: f64,
    /// See `x`.
    pub height: f64,
    /// Where its content (the child's viewport) starts.
    pub content_x: f64,
    /// See `content_x`.
    pub content_y: f64,
    /// How much its content is scaled (CSS transforms).
    pub scale_x: f64,
    /// See `scale_x`.
    pub scale_y: f64,
    /// Not turned, skewed or in perspective: a point inside maps by offset and scale.
    pub plain: bool,
}

impl FrameBox {
    fn border(&self) -> Rect {
        Rect {
            x: self.x,
            y: self.y,
            width: self.width,
            height: self.height,
        }
    }
}

/// A document's frame elements and its viewport.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentBoxes {
    /// Every frame element, closed shadow roots included.
    pub frames: Vec<FrameBox>,
    /// A drawing effect in the document that can draw a frame's pixels outside its box (a
    /// filter or reflection on a frame element or above one, content in SVG, a backdrop filter,
    /// a view transition): its frames can be placed no better than the whole document.
    #[serde(default)]
    pub effect: Option<String>,
    /// The viewport's width.
    pub width: f64,
    /// The viewport's height.
    pub height: f64,
    /// How far the document is scrolled.
    pub scroll_x: f64,
    /// See `scroll_x`.
    pub scroll_y: f64,
}

/// A part of the page to paint over, in the top document's page coordinates (CSS pixels from
/// the document's top left), and the frames it may hide.
#[derive(Debug, Clone, PartialEq)]
pub struct Patch {
    /// Where.
    pub rect: Rect,
    /// The frames that may be drawn there, by frame ID.
    pub frames: Vec<u32>,
}

/// `frames` and every frame inside them that may not be read and sits in a document agents
/// may read: painted over with them, and named (a denied frame inside a readable frame that
/// had to be covered whole is why it was). What a denied frame embeds is painted over with it
/// but never named: which sites a denied page frames is its content (`list_frames` hides it).
fn with_hidden_inside(views: &HashMap<u32, FrameView>, frames: Vec<u32>) -> Vec<u32> {
    let readable = |id: u32| views.get(&id).is_some_and(FrameView::readable);
    let inside = |id: u32| {
        let mut at = views.get(&id).and_then(|v| v.parent);
        while let Some(parent) = at {
            if frames.contains(&parent) {
                return true;
            }
            at = views.get(&parent).and_then(|v| v.parent);
        }
        false
    };
    let mut all: Vec<u32> = views
        .iter()
        .filter(|(id, view)| !view.readable() && view.parent.is_some_and(readable) && inside(**id))
        .map(|(id, _)| *id)
        .chain(frames.iter().copied())
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// A frame that must not be shown and whose place in the top document cannot be known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unplaced {
    /// The frame, or the frame holding it that had to be covered whole.
    pub frame: u32,
    /// The top document's drawing effect that is why, if that is why.
    pub effect: Option<String>,
}

/// The patches that hide every frame of `views` agents may not read, from the documents'
/// frame boxes and the readable frames' indexes among their parents' frames; `Unplaced` when
/// a frame that must be hidden cannot be placed (the top document is never hidden: the caller
/// refuses a top document agents may not read before asking).
pub fn plan(
    views: &HashMap<u32, FrameView>,
    boxes: &HashMap<u32, DocumentBoxes>,
    indexes: &HashMap<u32, u32>,
) -> Result<Vec<Patch>, Unplaced> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (&id, view) in views {
        if let Some(parent) = view.parent.filter(|p| views.contains_key(p)) {
            children.entry(parent).or_default().push(id);
        }
    }
    let readable = |id: u32| views.get(&id).is_some_and(FrameView::readable);
    let parent_of = |id: u32| views.get(&id).and_then(|v| v.parent);
    // Frames to hide, by the document that holds their frame elements.
    let mut hide: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    // Hides `id` whole in its parent; the top document cannot be: then the first frame it was
    // to hide cannot be placed.
    let hide_frame = |hide: &mut BTreeMap<u32, BTreeSet<u32>>, id: u32| match parent_of(id) {
        Some(parent) => Ok(hide.entry(parent).or_default().insert(id)),
        None => Err(Unplaced {
            frame: hide
                .get(&id)
                .and_then(|set| set.first().copied())
                .unwrap_or(id),
            effect: None,
        }),
    };
    for (&id, view) in views {
        if !view.readable()
            && let Some(parent) = view.parent
            && readable(parent)
        {
            hide_frame(&mut hide, id)?;
        }
    }
    // Whether `id` or a frame above it is hidden whole already (its box covers `id`'s).
    let hidden_above = |hide: &BTreeMap<u32, BTreeSet<u32>>, id: u32| {
        let mut at = id;
        while let Some(parent) = parent_of(at) {
            if hide.get(&parent).is_some_and(|set| set.contains(&at)) {
                return true;
            }
            at = parent;
        }
        false
    };
    // The frame element of `id` in its parent, when both are known.
    let host = |id: u32| -> Option<&FrameBox> {
        let index = indexes.get(&id)?;
        boxes
            .get(&parent_of(id)?)?
            .frames
            .iter()
            .find(|f| f.index == Some(*index))
    };
    // Until nothing more must be hidden whole: a document that cannot be read for its frames
    // is hidden in its parent; so is a frame whose link up to the top cannot be placed.
    loop {
        let mut changed = false;
        let documents: Vec<u32> = hide.keys().copied().collect();
        for document in documents {
            if hidden_above(&hide, document) {
                continue;
            }
            let listed = children.get(&document).map_or(0, Vec::len);
            let measured = boxes
                .get(&document)
                .is_some_and(|b| b.frames.iter().filter(|f| f.holds).count() >= listed);
            if !measured {
                changed |= hide_frame(&mut hide, document)?;
                continue;
            }
            // Up to the top: a document with a drawing effect may draw what it holds anywhere
            // in its own viewport (a frame's content never leaves its frame's box), so it is
            // covered whole in its parent, and the top document's refuses the capture; a frame
            // element turned or skewed is covered whole.
            let mut at = document;
            loop {
                if let Some(effect) = boxes.get(&at).and_then(|b| b.effect.clone()) {
                    if parent_of(at).is_none() {
                        let frame = hide.get(&document).and_then(|set| set.first().copied());
                        return Err(Unplaced {
                            frame: frame.unwrap_or(document),
                            effect: Some(effect),
                        });
                    }
                    changed |= hide_frame(&mut hide, at)?;
                    break;
                }
                if parent_of(at).is_none() {
                    break;
                }
                if !host(at).is_some_and(|h| h.plain) {
                    changed |= hide_frame(&mut hide, at)?;
                    break;
                }
                at = parent_of(at).unwrap_or(TOP_FRAME);
            }
        }
        if !changed {
            break;
        }
    }
    // Carries a rectangle of `document`'s viewport up to the top document's page.
    let lift = |document: u32, rect: Rect| -> Option<Rect> {
        let mut rect = rect;
        let mut at = document;
        while let Some(parent) = parent_of(at) {
            let own = boxes.get(&at)?;
            rect = rect.intersect(&Rect {
                x: 0.0,
                y: 0.0,
                width: own.width,
                height: own.height,
            })?;
            let host = host(at)?;
            rect = Rect {
                x: host.content_x + rect.x * host.scale_x,
                y: host.content_y + rect.y * host.scale_y,
                width: rect.width * host.scale_x,
                height: rect.height * host.scale_y,
            };
            at = parent;
        }
        let top = boxes.get(&at)?;
        Some(Rect {
            x: rect.x + top.scroll_x,
            y: rect.y + top.scroll_y,
            ..rect
        })
    };
    let mut patches = Vec::new();
    for (&document, hidden) in &hide {
        if hidden_above(&hide, document) {
            continue;
        }
        let Some(measured) = boxes.get(&document) else {
            continue;
        };
        let kids = children
            .get(&document)
            .map(Vec::as_slice)
            .unwrap_or_default();
        // The frame elements the readable frames that stay shown are drawn in.
        let claimed: HashSet<u32> = kids
            .iter()
            .filter(|kid| readable(**kid) && !hidden.contains(kid))
            .filter_map(|kid| indexes.get(kid).copied())
            .collect();
        // What the patches here may hide: the hidden frames, and the readable ones that did
        // not say which element is theirs.
        let mut named: Vec<u32> = hidden
            .iter()
            .copied()
            .chain(
                kids.iter()
                    .copied()
                    .filter(|kid| readable(*kid) && !indexes.contains_key(kid)),
            )
            .collect();
        named.sort_unstable();
        named.dedup();
        for element in &measured.frames {
            let shown = element.index.is_some_and(|i| claimed.contains(&i));
            if shown || !element.holds {
                continue;
            }
            // Which of them this element holds: the one frame at the address the page gave it,
            // else any of them (only the naming depends on it, never what is painted).
            let at_src: Vec<u32> = element.src.as_deref().map_or_else(Vec::new, |src| {
                named
                    .iter()
                    .copied()
                    .filter(|id| views.get(id).is_some_and(|v| v.url == src))
                    .collect()
            });
            let frames = if at_src.len() == 1 {
                at_src
            } else {
                named.clone()
            };
            if let Some(rect) = lift(document, element.border()) {
                patches.push(Patch {
                    rect,
                    frames: with_hidden_inside(views, frames),
                });
            }
        }
    }
    Ok(patches)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(parent: Option<u32>, denied_at: Option<u32>) -> FrameView {
        FrameView {
            parent,
            url: "http://x/".into(),
            denied_at,
        }
    }

    fn element(index: Option<u32>, x: f64, y: f64, width: f64, height: f64) -> FrameBox {
        FrameBox {
            index,
            src: None,
            holds: true,
            x,
            y,
            width,
            height,
            content_x: x + 2.0,
            content_y: y + 2.0,
            scale_x: 1.0,
            scale_y: 1.0,
            plain: true,
        }
    }

    fn document(frames: Vec<FrameBox>, scroll_y: f64) -> DocumentBoxes {
        DocumentBoxes {
            frames,
            effect: None,
            width: 600.0,
            height: 400.0,
            scroll_x: 0.0,
            scroll_y,
        }
    }

    fn rect(x: f64, y: f64, width: f64, height: f64) -> Rect {
        Rect {
            x,
            y,
            width,
            height,
        }
    }

    #[test]
    fn nothing_is_covered_when_every_frame_may_be_read() {
        let views = HashMap::from([(0, view(None, None)), (3, view(Some(0), None))]);
        assert_eq!(plan(&views, &HashMap::new(), &HashMap::new()), Ok(vec![]));
    }

    #[test]
    fn a_denied_frame_is_covered_where_its_element_is_and_its_readable_sibling_is_not() {
        // Top (scrolled 100 px) holds frame 3 (readable, index 0) and frame 5 (denied).
        let views = HashMap::from([
            (0, view(None, None)),
            (3, view(Some(0), None)),
            (5, view(Some(0), Some(5))),
        ]);
        let boxes = HashMap::from([(
            0,
            document(
                vec![
                    element(Some(0), 10.0, 20.0, 100.0, 50.0),
                    element(Some(1), 10.0, 300.0, 200.0, 80.0),
                ],
                100.0,
            ),
        )]);
        let indexes = HashMap::from([(3, 0)]);
        let patches = plan(&views, &boxes, &indexes).unwrap();
        assert_eq!(
            patches,
            [Patch {
                rect: rect(10.0, 400.0, 200.0, 80.0),
                frames: vec![5]
            }]
        );
    }

    #[test]
    fn a_denied_frame_inside_a_readable_frame_is_carried_up_and_clipped() {
        // Top holds frame 3 at (50, 60) with its content at (52, 62), scaled by 0.5; frame 3
        // holds denied frame 8 at (500, 10) in its 600×400 viewport, 300 wide: the part inside
        // frame 3's viewport is (500..600) × (10..110).
        let views = HashMap::from([
            (0, view(None, None)),
            (3, view(Some(0), None)),
            (8, view(Some(3), Some(8))),
        ]);
        let mut host = element(Some(0), 50.0, 60.0, 300.0, 200.0);
        host.scale_x = 0.5;
        host.scale_y = 0.5;
        let boxes = HashMap::from([
            (0, document(vec![host], 0.0)),
            (
                3,
                document(vec![element(Some(0), 500.0, 10.0, 300.0, 100.0)], 0.0),
            ),
        ]);
        let indexes = HashMap::from([(3, 0), (8, 0)]);
        let patches = plan(&views, &boxes, &indexes).unwrap();
        assert_eq!(
            patches,
            [Patch {
                rect: rect(52.0 + 250.0, 62.0 + 5.0, 50.0, 50.0),
                frames: vec![8]
            }]
        );
    }

    #[test]
    fn what_is_inside_a_denied_frame_is_covered_with_it() {
        // Frame 4 (denied) holds frame 9, readable by its own origin but inside a denied one:
        // only frame 4's element is painted, and frame 9 needs no measuring.
        let views = HashMap::from([
            (0, view(None, None)),
            (4, view(Some(0), Some(4))),
            (9, view(Some(4), Some(4))),
        ]);
        let boxes = HashMap::from([(
            0,
            document(vec![element(Some(0), 0.0, 0.0, 10.0, 10.0)], 0.0),
        )]);
        let patches = plan(&views, &boxes, &HashMap::new()).unwrap();
        assert_eq!(patches.len(), 1);
        assert_eq!(
            patches[0].frames,
            [4],
            "frame 9 is painted over, never named"
        );
    }

    #[test]
    fn a_readable_frame_covered_whole_names_the_denied_frames_it_holds_and_no_deeper() {
        // Frame 3 (readable) cannot be measured, so it is covered whole in the top document:
        // the patch names it and frame 6 (denied, its child), but not frame 7 (inside 6).
        let views = HashMap::from([
            (0, view(None, None)),
            (3, view(Some(0), None)),
            (6, view(Some(3), Some(6))),
            (7, view(Some(6), Some(6))),
        ]);
        let boxes = HashMap::from([(
            0,
            document(vec![element(Some(0), 0.0, 0.0, 10.0, 10.0)], 0.0),
        )]);
        let patches = plan(&views, &boxes, &HashMap::new()).unwrap();
        assert_eq!(patches.len(), 1, "{patches:?}");
        assert_eq!(patches[0].frames, [3, 6]);
    }

    #[test]
    fn a_frame_that_does_not_answer_is_covered_with_the_denied_one_it_cannot_be_told_from() {
        // Frame 3 is readable but never said its index: both unclaimed elements are painted,
        // and both frames are named.
        let views = HashMap::from([
            (0, view(None, None)),
            (3, view(Some(0), None)),
            (5, view(Some(0), Some(5))),
        ]);
        let boxes = HashMap::from([(
            0,
            document(
                vec![
                    element(Some(0), 0.0, 0.0, 10.0, 10.0),
                    element(Some(1), 0.0, 50.0, 10.0, 10.0),
                    element(None, 0.0, 90.0, 10.0, 10.0),
                ],
                0.0,
            ),
        )]);
        let patches = plan(&views, &boxes, &HashMap::new()).unwrap();
        assert_eq!(patches.len(), 3, "{patches:?}");
        assert!(patches.iter().all(|p| p.frames == [3, 5]));
    }

    #[test]
    fn an_elements_address_names_the_frame_it_holds_when_it_names_one() {
        let mut views = HashMap::from([(0, view(None, None))]);
        for (id, url) in [
            (5, "http://bank/a"),
            (6, "http://bank/b"),
            (7, "http://bank/b"),
        ] {
            views.insert(
                id,
                FrameView {
                    parent: Some(0),
                    url: url.into(),
                    denied_at: Some(id),
                },
            );
        }
        let with_src = |src: &str, y: f64| {
            let mut element = element(Some(0), 0.0, y, 10.0, 10.0);
            element.src = Some(src.into());
            element
        };
        let boxes = HashMap::from([(
            0,
            document(
                vec![
                    with_src("http://bank/a", 0.0),
                    with_src("http://bank/b", 20.0),
                    with_src("http://bank/c", 40.0),
                ],
                0.0,
            ),
        )]);
        let named: Vec<Vec<u32>> = plan(&views, &boxes, &HashMap::new())
            .unwrap()
            .into_iter()
            .map(|p| p.frames)
            .collect();
        // One frame at that address; two; none: every element is painted all the same.
        assert_eq!(named, [vec![5], vec![5, 6, 7], vec![5, 6, 7]]);
    }

    #[test]
    fn what_cannot_be_placed_is_covered_whole_further_up_or_refused_at_the_top() {
        let views = HashMap::from([
            (0, view(None, None)),
            (3, view(Some(0), None)),
            (8, view(Some(3), Some(8))),
        ]);
        let top = || document(vec![element(Some(0), 50.0, 60.0, 300.0, 200.0)], 0.0);
        let indexes = HashMap::from([(3, 0)]);
        // Frame 3 could not be measured: its whole element in the top document is covered, and
        // both it and the denied frame inside are named.
        let boxes = HashMap::from([(0, top())]);
        let patches = plan(&views, &boxes, &indexes).unwrap();
        assert_eq!(patches.len(), 1);
        assert_eq!(patches[0].rect, rect(50.0, 60.0, 300.0, 200.0));
        assert_eq!(patches[0].frames, [3, 8]);
        // Frame 3 lists fewer frame elements than Chrome has frames under it (one in a place
        // tabwire cannot reach): the same.
        let boxes = HashMap::from([(0, top()), (3, document(vec![], 0.0))]);
        assert_eq!(plan(&views, &boxes, &indexes).unwrap()[0].frames, [3, 8]);
        // Frame 3's element is turned: a point inside cannot be carried up, so all of it.
        let mut turned = top();
        turned.frames[0].plain = false;
        let boxes = HashMap::from([
            (0, turned),
            (3, document(vec![element(Some(0), 0.0, 0.0, 5.0, 5.0)], 0.0)),
        ]);
        assert_eq!(
            plan(&views, &boxes, &HashMap::from([(3, 0), (8, 0)])).unwrap()[0].rect,
            rect(50.0, 60.0, 300.0, 200.0)
        );
        // The top document itself could not be measured: nothing can be placed.
        assert_eq!(
            plan(&views, &HashMap::new(), &indexes),
            Err(Unplaced {
                frame: 3,
                effect: None
            })
        );
        // Nor when a denied frame's element is out of reach of the top document.
        let views = HashMap::from([(0, view(None, None)), (5, view(Some(0), Some(5)))]);
        let boxes = HashMap::from([(0, document(vec![], 0.0))]);
        assert_eq!(
            plan(&views, &boxes, &HashMap::new()),
            Err(Unplaced {
                frame: 5,
                effect: None
            })
        );
    }

    #[test]
    fn a_drawing_effect_covers_its_document_whole_and_refuses_at_the_top() {
        let views = HashMap::from([
            (0, view(None, None)),
            (3, view(Some(0), None)),
            (8, view(Some(3), Some(8))),
        ]);
        let indexes = HashMap::from([(3, 0)]);
        let top = || document(vec![element(Some(0), 50.0, 60.0, 300.0, 200.0)], 0.0);
        let inner = || document(vec![element(Some(0), 10.0, 10.0, 20.0, 20.0)], 0.0);
        // Without an effect, only the denied frame's element in frame 3 is painted.
        let boxes = HashMap::from([(0, top()), (3, inner())]);
        let patches = plan(&views, &boxes, &indexes).unwrap();
        assert_eq!(patches[0].rect, rect(52.0 + 10.0, 62.0 + 10.0, 20.0, 20.0));
        // A filter in frame 3 may move the denied frame anywhere in frame 3's viewport: frame
        // 3's whole element is painted instead.
        let mut filtered = inner();
        filtered.effect = Some("filter".into());
        let boxes = HashMap::from([(0, top()), (3, filtered)]);
        let patches = plan(&views, &boxes, &indexes).unwrap();
        assert_eq!(patches.len(), 1, "{patches:?}");
        assert_eq!(patches[0].rect, rect(50.0, 60.0, 300.0, 200.0));
        // In the top document it may move it anywhere in the image: refused, saying why.
        let mut reflected = top();
        reflected.effect = Some("-webkit-box-reflect".into());
        let boxes = HashMap::from([(0, reflected), (3, inner())]);
        assert_eq!(
            plan(&views, &boxes, &indexes),
            Err(Unplaced {
                frame: 8,
                effect: Some("-webkit-box-reflect".into())
            })
        );
    }

    #[test]
    fn rectangles_intersect() {
        let a = rect(0.0, 0.0, 10.0, 10.0);
        assert_eq!(
            a.intersect(&rect(5.0, 5.0, 10.0, 10.0)),
            Some(rect(5.0, 5.0, 5.0, 5.0))
        );
        assert_eq!(a.intersect(&rect(10.0, 0.0, 5.0, 5.0)), None);
    }
}
