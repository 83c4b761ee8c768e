//! Which frame a captured event comes from, so that capture keeps nothing of a frame the policy
//! does not let agents read (issue 23 §1): the tab's frames as CDP names them (`Page` events:
//! each frame's parent and URL) and its JavaScript contexts (`Runtime` events: each context's
//! frame), kept while a capture is on.
//!
//! The URLs alone did not do: a denied page's request to an allowed address, or its console
//! line from a script an allowed server sent, carry only allowed URLs; a blank or `srcdoc` frame
//! it made has no origin of its own; and what an allowed page shows inside a denied frame is the
//! denied page's. So a record is judged by its frame, as the policy judges frames: by the
//! frame's URL (a blank or `srcdoc` frame by its parent's) and every frame above it. An event
//! from a frame or context capture does not know is dropped while the policy restricts
//! anything.

use std::collections::HashMap;

use serde::Deserialize;

/// One frame as CDP describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Frame {
    parent: Option<String>,
    url: String,
}

/// A tab's frames and JavaScript contexts.
#[derive(Debug, Default)]
pub struct FrameTree {
    frames: HashMap<String, Frame>,
    /// Execution context ID → its frame's ID.
    contexts: HashMap<i64, String>,
    /// Request ID → the ID of the frame that made it, for the browser's log entries about a
    /// request (at most [`REQUESTS_KEPT`], the oldest forgotten first).
    requests: HashMap<String, String>,
    /// The keys of `requests`, oldest first.
    request_order: std::collections::VecDeque<String>,
}

/// How many requests' frames are remembered.
const REQUESTS_KEPT: usize = 1000;

/// `Page.getFrameTree`'s answer, the fields read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameTreeAnswer {
    frame_tree: TreeNode,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TreeNode {
    frame: FrameInfo,
    #[serde(default)]
    child_frames: Vec<TreeNode>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FrameInfo {
    id: String,
    #[serde(default)]
    parent_id: Option<String>,
    #[serde(default)]
    url: String,
    #[serde(default)]
    url_fragment: Option<String>,
}

impl FrameInfo {
    fn full_url(&self) -> String {
        format!(
            "{}{}",
            self.url,
            self.url_fragment.as_deref().unwrap_or_default()
        )
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FrameAttached {
    frame_id: String,
    #[serde(default)]
    parent_frame_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct FrameNavigated {
    frame: FrameInfo,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FrameId {
    frame_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WithinDocument {
    frame_id: String,
    url: String,
}

#[derive(Debug, Deserialize)]
struct ContextCreated {
    context: Context,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Context {
    id: i64,
    #[serde(default)]
    aux_data: Option<AuxData>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuxData {
    #[serde(default)]
    frame_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContextDestroyed {
    execution_context_id: i64,
}

impl FrameTree {
    /// Whether `method` is an event the tree follows.
    pub fn follows(method: &str) -> bool {
        matches!(
            method,
            "Page.frameAttached"
                | "Page.frameNavigated"
                | "Page.frameDetached"
                | "Page.navigatedWithinDocument"
                | "Runtime.executionContextCreated"
                | "Runtime.executionContextDestroyed"
                | "Runtime.executionContextsCleared"
        )
    }

    /// Takes in the frames of `Page.getFrameTree` (when a capture starts), in place of those
    /// known; the contexts stay (the other kind of capture may have learned them).
    pub fn seed(&mut self, answer: FrameTreeAnswer) {
        self.frames.clear();
        let mut stack = vec![answer.frame_tree];
        while let Some(node) = stack.pop() {
            self.frames.insert(
                node.frame.id.clone(),
                Frame {
                    parent: node.frame.parent_id.clone(),
                    url: node.frame.full_url(),
                },
            );
            stack.extend(node.child_frames);
        }
    }

    /// Follows one event (see [`FrameTree::follows`]); `params` is its JSON.
    pub fn on_event(&mut self, method: &str, params: serde_json::Value) {
        fn read<T: for<'de> Deserialize<'de>>(params: serde_json::Value) -> Option<T> {
            serde_json::from_value(params).ok()
        }
        match method {
            "Page.frameAttached" => {
                if let Some(event) = read::<FrameAttached>(params) {
                    // A new frame shows its parent's blank document until it navigates.
                    self.frames.entry(event.frame_id).or_insert(Frame {
                        parent: event.parent_frame_id,
                        url: "about:blank".to_owned(),
                    });
                }
            }
            "Page.frameNavigated" => {
                if let Some(event) = read::<FrameNavigated>(params) {
                    let url = event.frame.full_url();
                    self.frames.insert(
                        event.frame.id,
                        Frame {
                            parent: event.frame.parent_id,
                            url,
                        },
                    );
                }
            }
            "Page.navigatedWithinDocument" => {
                if let Some(event) = read::<WithinDocument>(params)
                    && let Some(frame) = self.frames.get_mut(&event.frame_id)
                {
                    frame.url = event.url;
                }
            }
            "Page.frameDetached" => {
                if let Some(event) = read::<FrameId>(params) {
                    self.frames.remove(&event.frame_id);
                }
            }
            "Runtime.executionContextCreated" => {
                if let Some(event) = read::<ContextCreated>(params)
                    && let Some(frame) = event.context.aux_data.and_then(|aux| aux.frame_id)
                {
                    self.contexts.insert(event.context.id, frame);
                }
            }
            "Runtime.executionContextDestroyed" => {
                if let Some(event) = read::<ContextDestroyed>(params) {
                    self.contexts.remove(&event.execution_context_id);
                }
            }
            "Runtime.executionContextsCleared" => self.contexts.clear(),
            _ => {}
        }
    }

    /// Whether what frame `frame` does must be left out: `denies` says so of its URL (a blank or
    /// `srcdoc` frame's: its parent's) or of a frame above it, or the frame is not known.
    pub fn denies_frame(&self, frame: &str, denies: impl Fn(&str) -> bool) -> bool {
        let denies = &denies;
        // The chain from the frame up to the top.
        let mut chain = Vec::new();
        let mut at = Some(frame);
        while let Some(id) = at {
            let Some(known) = self.frames.get(id) else {
                return true;
            };
            chain.push(known);
            if chain.len() > 64 {
                return true;
            }
            at = known.parent.as_deref();
        }
        // Judged from the top down, a blank frame by the URL above it.
        let mut above: Option<&str> = None;
        for frame in chain.into_iter().rev() {
            let url = match above {
                Some(parent) if frame.url.to_ascii_lowercase().starts_with("about:") => parent,
                _ => frame.url.as_str(),
            };
            if denies(url) {
                return true;
            }
            above = Some(url);
        }
        false
    }

    /// Notes that frame `frame` made request `request` (`Network.requestWillBeSent`).
    pub fn note_request(&mut self, request: &str, frame: &str) {
        if self
            .requests
            .insert(request.to_owned(), frame.to_owned())
            .is_none()
        {
            self.request_order.push_back(request.to_owned());
            if self.request_order.len() > REQUESTS_KEPT
                && let Some(oldest) = self.request_order.pop_front()
            {
                self.requests.remove(&oldest);
            }
        }
    }

    /// Whether a log entry of the browser's (`Log.entryAdded`) must be left out. Such an entry
    /// names no frame or context, only at times the request it is about: while any frame of the
    /// tab is one `denies` hides, an entry is kept only when it is about a request of a frame
    /// that is shown (an entry's URL can be an allowed one though a denied frame caused it, as a
    /// denied page's failed request to an allowed server does).
    pub fn denies_entry(&self, request: Option<&str>, denies: impl Fn(&str) -> bool) -> bool {
        if let Some(frame) = request.and_then(|r| self.requests.get(r)) {
            return self.denies_frame(frame, &denies);
        }
        request.is_some() || self.frames.keys().any(|id| self.denies_frame(id, &denies))
    }

    /// Whether what JavaScript context `context` logs must be left out (see
    /// [`FrameTree::denies_frame`]; an unknown context is).
    pub fn denies_context(&self, context: i64, denies: impl Fn(&str) -> bool) -> bool {
        self.contexts
            .get(&context)
            .is_none_or(|frame| self.denies_frame(frame, denies))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tree() -> FrameTree {
        let mut tree = FrameTree::default();
        let answer: FrameTreeAnswer = serde_json::from_value(json!({"frameTree": {
            "frame": {"id": "TOP", "url": "https://shop.example/"},
            "childFrames": [
                {"frame": {"id": "BANK", "parentId": "TOP", "url": "https://bank.example/a"}}
            ]
        }}))
        .unwrap();
        tree.seed(answer);
        tree
    }

    fn denies(url: &str) -> bool {
        url.starts_with("https://bank.example")
    }

    #[test]
    fn frames_are_judged_by_their_url_their_parents_and_unknown_ones_are_denied() {
        let mut tree = tree();
        assert!(!tree.denies_frame("TOP", denies));
        assert!(tree.denies_frame("BANK", denies));
        assert!(tree.denies_frame("NEVER-SEEN", denies));
        // A srcdoc frame the bank made, and an allowed page the bank framed.
        tree.on_event(
            "Page.frameAttached",
            json!({"frameId": "SRCDOC", "parentFrameId": "BANK"}),
        );
        tree.on_event(
            "Page.frameNavigated",
            json!({"frame": {"id": "PAY", "parentId": "BANK", "url": "https://pay.example/"}}),
        );
        assert!(tree.denies_frame("SRCDOC", denies));
        assert!(tree.denies_frame("PAY", denies));
        // A blank frame of the shop is the shop's.
        tree.on_event(
            "Page.frameAttached",
            json!({"frameId": "BLANK", "parentFrameId": "TOP"}),
        );
        assert!(!tree.denies_frame("BLANK", denies));
        // The bank's frame navigates to an allowed page: from then on it is that page's.
        tree.on_event(
            "Page.frameNavigated",
            json!({"frame": {"id": "BANK", "parentId": "TOP", "url": "https://news.example/"}}),
        );
        assert!(!tree.denies_frame("PAY", denies));
        tree.on_event("Page.frameDetached", json!({"frameId": "PAY"}));
        assert!(tree.denies_frame("PAY", denies));
    }

    #[test]
    fn log_entries_are_kept_only_when_they_can_be_told_from_a_denied_frame() {
        let mut tree = tree();
        tree.note_request("r1", "TOP");
        tree.note_request("r2", "BANK");
        assert!(!tree.denies_entry(Some("r1"), denies));
        assert!(tree.denies_entry(Some("r2"), denies));
        assert!(tree.denies_entry(Some("r3"), denies), "unknown request");
        // The tab shows a denied frame: an entry about no request could be its.
        assert!(tree.denies_entry(None, denies));
        // Without one, it is kept.
        tree.on_event("Page.frameDetached", json!({"frameId": "BANK"}));
        assert!(!tree.denies_entry(None, denies));
        for i in 0..REQUESTS_KEPT + 1 {
            tree.note_request(&format!("n{i}"), "TOP");
        }
        assert!(tree.denies_entry(Some("n0"), denies), "forgotten");
        assert!(!tree.denies_entry(Some("n1"), denies));
    }

    #[test]
    fn contexts_are_judged_by_their_frame() {
        let mut tree = tree();
        for (id, frame) in [(1, "TOP"), (2, "BANK")] {
            tree.on_event(
                "Runtime.executionContextCreated",
                json!({"context": {"id": id, "origin": "x", "name": "",
                       "auxData": {"frameId": frame, "isDefault": true}}}),
            );
        }
        assert!(!tree.denies_context(1, denies));
        assert!(tree.denies_context(2, denies));
        assert!(tree.denies_context(3, denies), "unknown");
        // A capture of the other kind starting learns the frames again, and keeps the contexts.
        tree.seed(
            serde_json::from_value(json!({"frameTree": {
                "frame": {"id": "TOP", "url": "https://shop.example/"}
            }}))
            .unwrap(),
        );
        assert!(!tree.denies_context(1, denies));
        assert!(tree.denies_context(2, denies), "its frame is gone");
        tree.on_event(
            "Runtime.executionContextDestroyed",
            json!({"executionContextId": 1}),
        );
        assert!(tree.denies_context(1, denies));
    }
}
