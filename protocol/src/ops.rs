//! Operations the hub asks of the extension, and their results.
//!
//! One enum each way, shared by both sides. Adding an operation means adding a variant to
//! [`Operation`] and one to [`OpResult`]; the compiler then points at every place that must
//! handle it.

use serde::{Deserialize, Serialize};

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
    /// Observe the tab's page: its meaningful elements with refs, bounded.
    Snapshot {
        /// At most this many nodes are returned.
        max_nodes: u32,
        /// At most this many characters of node text are returned.
        max_chars: u32,
    },
    /// Click the target with trusted mouse input at its centre.
    Click {
        /// The element to click.
        target: Target,
    },
    /// Put text into a text field with the native value setter and input/change events.
    TypeText {
        /// The field.
        target: Target,
        /// The text to enter.
        text: String,
        /// Replace the field's current value instead of appending to it.
        clear: bool,
    },
}

impl Operation {
    /// Whether the operation can change the page. A mutation that times out or is cut off by a
    /// disconnect may have happened, and the agent is told so.
    pub fn is_mutation(&self) -> bool {
        matches!(
            self,
            Operation::Navigate { .. } | Operation::Click { .. } | Operation::TypeText { .. }
        )
    }
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
    /// Answer to [`Operation::Click`].
    Clicked(Clicked),
    /// Answer to [`Operation::TypeText`].
    Typed(Typed),
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

/// A bounded view of a page: its meaningful nodes in document order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Observation {
    /// The tab observed.
    pub tab_id: TabId,
    /// The document's URL.
    pub url: String,
    /// The document's title.
    pub title: String,
    /// Chrome's ID of the observed document; refs are valid only while it stays the same.
    pub document_id: String,
    /// Increases with every observation of the same document.
    pub version: u64,
    /// The nodes shown, in document order.
    pub nodes: Vec<ObservedNode>,
    /// How many nodes the page had in all.
    pub total_nodes: u32,
    /// True when nodes were left out to stay within the budget.
    pub truncated: bool,
    /// How many nodes were left out.
    pub omitted_nodes: u32,
}

/// One line of an observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservedNode {
    /// The element's ref; absent for plain text lines, which cannot be acted on.
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub element_ref: Option<ElementRef>,
    /// The one-line rendering, e.g. `button "Sign in" [disabled]`.
    pub text: String,
}

/// Where a click landed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Clicked {
    /// The tab clicked in.
    pub tab_id: TabId,
    /// The element clicked, rendered like an observation line.
    pub target: String,
    /// The click point, in CSS pixels from the viewport's top left.
    pub x: f64,
    /// See `x`.
    pub y: f64,
}

/// A text field after typing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Typed {
    /// The tab typed in.
    pub tab_id: TabId,
    /// The field, rendered like an observation line (value left out).
    pub target: String,
    /// The field's value afterwards; a password's value is always replaced by `"••••"`.
    pub value: String,
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
            Operation::Snapshot {
                max_nodes: 10,
                max_chars: 100,
            },
            Operation::TypeText {
                target: Target::Ref(ElementRef::top(4)),
                text: "alice".into(),
                clear: true,
            },
        ];
        for op in ops {
            let json = serde_json::to_string(&op).unwrap();
            assert_eq!(serde_json::from_str::<Operation>(&json).unwrap(), op);
        }
        let json = serde_json::to_value(Operation::Snapshot {
            max_nodes: 1,
            max_chars: 2,
        })
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"kind": "snapshot", "maxNodes": 1, "maxChars": 2})
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
            truncated: false,
            omitted_nodes: 0,
        });
        let json = serde_json::to_string(&result).unwrap();
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
        assert!(
            Operation::Click {
                target: Target::Css("a".into())
            }
            .is_mutation()
        );
    }
}
