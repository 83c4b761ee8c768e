//! Operations the hub asks of the extension, and their results.
//!
//! One enum each way, shared by both sides. Adding an operation means adding a variant to
//! [`Operation`] and one to [`OpResult`]; the compiler then points at every place that must
//! handle it.

use serde::{Deserialize, Serialize};

use crate::actions::{
    ActRequest, Acted, BatchRequest, BatchResult, DialogHandled, ElementState, ReadStateRequest,
    TabHealth,
};
use crate::{ElementRef, TabId};

/// What a [`crate::Request`] asks the extension to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Operation {
    /// List the browser's tabs, in every window.
    ListTabs,
    /// Load `url` in the tab and wait until it has finished loading.
    Navigate {
        /// An absolute URL; the hub has already checked its scheme.
        url: String,
    },
    /// Observe a document of the tab: its meaningful nodes with refs, bounded.
    Snapshot(SnapshotRequest),
    /// List the tab's frames.
    ListFrames,
    /// Read a document's content as text or HTML, bounded.
    Content(ContentRequest),
    /// Act on the page (click, type, wait…) and observe it afterwards.
    Act(ActRequest),
    /// Run steps in order in one tab under the request's deadline.
    Batch(BatchRequest),
    /// Read one element's state.
    ReadState(ReadStateRequest),
    /// Accept or dismiss the JavaScript dialog open in the tab. Runs beside the tab's queue:
    /// the dialog is what blocks it.
    HandleDialog {
        /// Accept (OK) or dismiss (Cancel).
        accept: bool,
        /// A prompt's answer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt_text: Option<String>,
    },
    /// Tabs, history, screenshots, capture and storage.
    Tab {
        /// What to do.
        op: crate::capture::TabOp,
    },
    /// Report the tab's health. Runs beside the tab's queue.
    Health {
        /// Reattach the debugger, only if the tab's queue is idle.
        #[serde(default)]
        recover_debugger: bool,
    },
}

impl Operation {
    /// Whether the operation can change the page. A mutation that times out or is cut off by a
    /// disconnect may have happened, and the agent is told so.
    pub fn is_mutation(&self) -> bool {
        match self {
            Operation::Navigate { .. } | Operation::HandleDialog { .. } => true,
            Operation::Tab { op } => op.is_mutation(),
            Operation::Act(request) => request.action.is_mutation(),
            Operation::Batch(batch) => batch.steps.iter().any(
                |step| matches!(step, crate::actions::Step::Act { action } if action.is_mutation()),
            ),
            _ => false,
        }
    }

    /// Whether the operation runs beside the tab's queue instead of in it: it must work while
    /// the queue is stuck (health), or it is what unblocks the page (a dialog).
    pub fn bypasses_queue(&self) -> bool {
        match self {
            Operation::Tab { op } => op.bypasses_queue(),
            _ => matches!(
                self,
                Operation::ListTabs | Operation::Health { .. } | Operation::HandleDialog { .. }
            ),
        }
    }
}

/// What an observation covers and how much of it to return.
///
/// The extension builds the full ordered node list of the document (or of the `scope`
/// subtree), keeps the nodes matching `query`, and returns the window
/// `[offset, offset + budget)` of that list. With `since`, it compares the window with the
/// observation of that version and returns only what changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SnapshotRequest {
    /// The frame to observe (an ID from `ListFrames`); `None` is the top document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_id: Option<u32>,
    /// Observe only this element's subtree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Target>,
    /// Keep only nodes whose line contains this text (case-insensitive), together with the
    /// other nodes of their row or list item, so "the button in the row that says X" is found
    /// in one call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// At most this many nodes are returned.
    pub max_nodes: u32,
    /// At most this many characters of node text are returned.
    pub max_chars: u32,
    /// Skip this many nodes of the (scoped, filtered) list: paging through a truncated view.
    #[serde(default)]
    pub offset: u32,
    /// Return only the changes since this observation version, if it is still a baseline for
    /// the same frame, scope, query, offset and budget; otherwise a full observation with
    /// `reset: true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
}

/// What `Content` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ContentFormat {
    /// The readable text, as a person sees it.
    Text,
    /// Raw markup (password values removed).
    Html,
}

/// A bounded read of a document's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContentRequest {
    /// The frame to read; `None` is the top document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_id: Option<u32>,
    /// Read only this element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Target>,
    /// Text or HTML.
    pub format: ContentFormat,
    /// At most this many characters are returned.
    pub max_chars: u32,
    /// Start at this character: paging through long content.
    #[serde(default)]
    pub offset: u32,
}

/// How a tool names an element: an observed ref, or a CSS selector that must match exactly one
/// element.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Target {
    /// An `@ref` from an observation of the current document.
    Ref(ElementRef),
    /// A native CSS selector.
    Css(String),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Ref(r) => write!(f, "{r}"),
            Target::Css(css) => write!(f, "{css}"),
        }
    }
}

/// What an [`Operation`] produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum OpResult {
    /// Answer to [`Operation::ListTabs`].
    Tabs {
        /// Every tab of every window.
        tabs: Vec<TabInfo>,
    },
    /// Answer to [`Operation::Navigate`].
    Navigated(Navigated),
    /// Answer to [`Operation::Snapshot`].
    Snapshot(Observation),
    /// Answer to [`Operation::ListFrames`].
    Frames {
        /// The tab observed.
        tab_id: TabId,
        /// Every frame of the tab, the top document first, parents before children.
        frames: Vec<FrameInfo>,
    },
    /// Answer to [`Operation::Content`].
    Content(PageContent),
    /// Answer to [`Operation::Act`].
    Acted(Acted),
    /// Answer to [`Operation::Batch`].
    Batch(BatchResult),
    /// Answer to [`Operation::ReadState`].
    ElementState(ElementState),
    /// Answer to [`Operation::HandleDialog`].
    DialogHandled(DialogHandled),
    /// Answer to [`Operation::Health`].
    Health(TabHealth),
    /// Answer to [`Operation::Tab`].
    Tab {
        /// What it produced.
        result: crate::capture::TabResult,
    },
}

/// One tab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TabInfo {
    /// Chrome's tab ID.
    pub tab_id: TabId,
    /// The window holding the tab.
    pub window_id: u32,
    /// Whether it is the selected tab of its window.
    pub active: bool,
    /// The tab's URL (empty when Chrome does not disclose it).
    pub url: String,
    /// The tab's title.
    pub title: String,
    /// Chrome's loading status: `"loading"`, `"complete"` or `"unloaded"` (a discarded tab).
    pub status: String,
}

/// The tab after a navigation finished.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Navigated {
    /// The tab navigated.
    pub tab_id: TabId,
    /// The URL it ended on (after redirects).
    pub url: String,
    /// The loaded page's title.
    pub title: String,
}

/// One frame of a tab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FrameInfo {
    /// Chrome's frame ID (0 is the top document); refs in this frame look like `@f<id>e<n>`.
    pub frame_id: u32,
    /// The parent frame; `None` for the top document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_frame_id: Option<u32>,
    /// The frame's URL.
    pub url: String,
}

/// A bounded view of a document: its meaningful nodes in document order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Observation {
    /// The tab observed.
    pub tab_id: TabId,
    /// The frame observed; `None` for the top document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_id: Option<u32>,
    /// The document's URL.
    pub url: String,
    /// The document's title.
    pub title: String,
    /// Chrome's ID of the observed document; refs are valid only while it stays the same.
    pub document_id: String,
    /// Increases with every observation of the same document.
    pub version: u64,
    /// The nodes shown, in document order (empty when `delta` is set).
    pub nodes: Vec<ObservedNode>,
    /// How many nodes the scoped, filtered list has in all.
    pub total_nodes: u32,
    /// The index in that list of the first node shown.
    pub offset: u32,
    /// True when nodes of the list are not shown (before `offset` or past the budget).
    pub truncated: bool,
    /// How many nodes of the list are not shown.
    pub omitted_nodes: u32,
    /// How many characters of node text those omitted nodes hold.
    pub omitted_chars: u32,
    /// The `offset` that shows the next nodes, when there are more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u32>,
    /// The changes since the requested version, instead of `nodes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<Delta>,
    /// True when a delta was asked for but its baseline was gone or made for another scope,
    /// query, offset or budget: `nodes` is then a full observation to use as the new baseline.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reset: bool,
}

/// What changed in an observed window since an earlier version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Delta {
    /// The version compared against.
    pub since: u64,
    /// Nodes that are new or whose line changed.
    pub changed: Vec<ObservedNode>,
    /// Refs of nodes no longer in the window.
    pub removed: Vec<ElementRef>,
    /// The window's full order of refs, present only when new nodes were inserted before
    /// existing ones or nodes moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Vec<ElementRef>>,
    /// The list around the window changed since the baseline: its total, whether the view is
    /// truncated, or the next offset (see the observation's fields for the new values).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub view_changed: bool,
}

/// A bounded slice of a document's text or markup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PageContent {
    /// The tab read.
    pub tab_id: TabId,
    /// The frame read; `None` for the top document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_id: Option<u32>,
    /// The document's URL.
    pub url: String,
    /// The document's title.
    pub title: String,
    /// Text or HTML.
    pub format: ContentFormat,
    /// The characters `[offset, offset + len)` of the content.
    pub content: String,
    /// The index of the first character returned.
    pub offset: u32,
    /// The content's full length in characters.
    pub total_chars: u32,
    /// True when characters before `offset` or past the budget are not returned.
    pub truncated: bool,
    /// The `offset` that returns the next characters, when there are more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u32>,
}

/// One line of an observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservedNode {
    /// The node's ref; absent only for a select's option lines, which are chosen through
    /// their select.
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub element_ref: Option<ElementRef>,
    /// The one-line rendering, e.g. `button "Sign in" [disabled]`.
    pub text: String,
}

/// What a password's value is replaced with wherever tabwire would show it.
pub const REDACTED: &str = "••••";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_round_trip() {
        let ops = [
            Operation::ListTabs,
            Operation::Navigate {
                url: "http://127.0.0.1/".into(),
            },
            Operation::Snapshot(SnapshotRequest {
                frame_id: Some(3),
                scope: Some(Target::Css("main".into())),
                query: Some("Row 1500".into()),
                max_nodes: 10,
                max_chars: 100,
                offset: 20,
                since: Some(4),
            }),
            Operation::ListFrames,
            Operation::Content(ContentRequest {
                frame_id: None,
                scope: None,
                format: ContentFormat::Html,
                max_chars: 1000,
                offset: 0,
            }),
            Operation::Act(ActRequest {
                action: crate::actions::Action::Type {
                    target: Target::Ref(ElementRef::top(4)),
                    text: "alice".into(),
                    clear: true,
                    mode: Default::default(),
                    input_method: Default::default(),
                    allow_readonly: false,
                },
                observe: None,
            }),
            Operation::Health {
                recover_debugger: true,
            },
            Operation::Tab {
                op: crate::capture::TabOp::Screenshot(crate::capture::ScreenshotRequest {
                    format: crate::capture::ImageFormat::Jpeg,
                    quality: Some(70),
                    max_width: 800,
                    full_page: true,
                    target: None,
                    with_snapshot: None,
                }),
            },
        ];
        for op in ops {
            let json = serde_json::to_string(&op).unwrap();
            assert_eq!(serde_json::from_str::<Operation>(&json).unwrap(), op);
        }
        let json = serde_json::to_value(Operation::Snapshot(SnapshotRequest {
            frame_id: None,
            scope: None,
            query: None,
            max_nodes: 1,
            max_chars: 2,
            offset: 0,
            since: None,
        }))
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"kind": "snapshot", "maxNodes": 1, "maxChars": 2, "offset": 0})
        );
    }

    #[test]
    fn operation_rejects_unknown_fields() {
        let json = r#"{"kind":"navigate","url":"http://x/","extra":1}"#;
        assert!(serde_json::from_str::<Operation>(json).is_err());
    }

    #[test]
    fn results_round_trip() {
        let result = OpResult::Snapshot(Observation {
            tab_id: 3,
            frame_id: None,
            url: "http://x/".into(),
            title: "X".into(),
            document_id: "D1".into(),
            version: 2,
            nodes: vec![
                ObservedNode {
                    element_ref: Some(ElementRef::top(1)),
                    text: "button \"Go\"".into(),
                },
                ObservedNode {
                    element_ref: None,
                    text: "Hello".into(),
                },
            ],
            total_nodes: 2,
            offset: 0,
            truncated: false,
            omitted_nodes: 0,
            omitted_chars: 0,
            next_offset: None,
            delta: Some(Delta {
                since: 1,
                changed: vec![],
                removed: vec![ElementRef::top(9)],
                order: None,
                view_changed: false,
            }),
            reset: false,
        });
        let json = serde_json::to_string(&result).unwrap();
        assert!(
            json.contains(r#""delta":{"since":1,"changed":[],"removed":["@e9"]}"#),
            "{json}"
        );
        assert!(!json.contains("reset"), "{json}");
        assert!(
            json.contains(r#"{"ref":"@e1","text":"button \"Go\""}"#),
            "{json}"
        );
        assert!(json.contains(r#"{"text":"Hello"}"#), "{json}");
        assert_eq!(serde_json::from_str::<OpResult>(&json).unwrap(), result);
    }

    #[test]
    fn only_page_changing_operations_are_mutations() {
        assert!(!Operation::ListTabs.is_mutation());
        let act = |action| {
            Operation::Act(ActRequest {
                action,
                observe: None,
            })
        };
        assert!(
            act(crate::actions::Action::Hover {
                target: Target::Css("a".into())
            })
            .is_mutation()
        );
        assert!(
            !act(crate::actions::Action::Wait {
                condition: crate::actions::WaitCondition::Delay { ms: 5 },
                timeout_ms: 10,
            })
            .is_mutation()
        );
    }
}
