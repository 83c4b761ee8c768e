//! Recorded demonstrations (issue 28): what a person did by hand in a tab, as steps an agent can
//! replay with `run_browser_actions`.
//!
//! A recording is asked for by an agent (`record_actions`) and allowed by the person at the
//! browser, or made during a handoff (`request_human`), which the person agreed to. The
//! extension notes the person's trusted input in the tab and its frames and folds it into
//! [`Replay`] steps: one `type` step per field however many keys were pressed, a `waitFor`
//! before the first step in a new document, a secret field's text as a placeholder, never its
//! value. Each step's element is kept by a selector chosen to outlive the document (a unique
//! `id`, `data-testid` or `name`, an `aria-label`, else a short CSS path checked unique when it
//! was recorded) and by its line as an observation shows it.

use serde::{Deserialize, Serialize};

use crate::TabId;
use crate::actions::MouseButton;
use crate::refs::ElementRef;

/// Start recording the person's input in the request's tab, or stop and return the steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordActions {
    /// `true` to start (the person is asked), `false` to stop.
    pub start: bool,
}

/// At most this many steps are kept in one recording; later input is counted as omitted.
pub const MAX_RECORDED_STEPS: usize = 200;

/// A recording's state; once stopped, what it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActionRecording {
    /// The tab.
    pub tab_id: TabId,
    /// Whether it is still recording.
    pub recording: bool,
    /// What was done, in order (a stopped recording's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<RecordedStep>,
    /// Input left out: in a frame or page the policy does not let agents read, or past
    /// [`MAX_RECORDED_STEPS`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: u32,
    /// Who stopped it, once stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<RecordingEnd>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Who stopped a recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RecordingEnd {
    /// The agent (`record_actions {stop}`), or the handoff's answer.
    Agent,
    /// The person, with *Stop* in the popup.
    Person,
}

/// One thing the person did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordedStep {
    /// The step, as `run_browser_actions` takes it.
    pub step: Replay,
    /// The element it was done to, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element: Option<RecordedElement>,
}

/// The element of a recorded step, as the recording saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordedElement {
    /// Its line as an observation shows it (`button "Save"`).
    pub line: String,
    /// Its ref, when it still lives in the tab's document and an observation gave it one.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub element_ref: Option<ElementRef>,
    /// The frame (0: the top document).
    #[serde(default)]
    pub frame_id: u32,
}

/// A recorded step: the kinds and argument names of `run_browser_actions`' steps, so a step
/// serializes as the step itself. `upload` and `dialog` are notes: a batch cannot replay them
/// (an upload needs the files, a dialog is answered with `handle_dialog`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Replay {
    /// A click.
    Click {
        /// The element.
        selector: String,
        /// Left when left out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        button: Option<MouseButton>,
        /// 2 for a double click; 1 when left out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        click_count: Option<u32>,
    },
    /// A field's text, replacing what it held.
    Type {
        /// The field.
        selector: String,
        /// What it ended up holding, or a placeholder for a secret.
        text: Typed,
        /// Always `true`: the recorded text is the field's whole value.
        clear: bool,
    },
    /// A named key (`Enter`, `Tab`, `Escape`, …) or a key with modifiers.
    PressKey {
        /// The key.
        key: String,
        /// Alt=1, Control=2, Meta=4, Shift=8, summed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        modifiers: Option<u8>,
        /// The element that had the focus.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selector: Option<String>,
    },
    /// An option chosen in a native `<select>`.
    SelectOption {
        /// The `<select>`.
        selector: String,
        /// The option's value.
        value: String,
    },
    /// An element dragged onto another.
    Drag {
        /// What was dragged.
        selector: String,
        /// Where it was dropped.
        to: String,
    },
    /// An address the person loaded (typed, a bookmark, a reload's).
    Navigate {
        /// The URL.
        url: String,
    },
    /// Wait for the next step's element in a new document.
    WaitFor {
        /// Its selector.
        selector: String,
    },
    /// Files chosen for an input (a note: their names only).
    Upload {
        /// The input.
        selector: String,
        /// The files' names.
        files: Vec<String>,
    },
    /// A dialog the page opened, and how the person answered (a note).
    Dialog {
        /// `alert`, `confirm`, `prompt` or `beforeunload`.
        dialog: String,
        /// Whether they accepted it.
        accepted: bool,
    },
}

impl Replay {
    /// Whether `run_browser_actions` can replay it (uploads and dialogs are notes).
    pub fn replays(&self) -> bool {
        !matches!(self, Replay::Upload { .. } | Replay::Dialog { .. })
    }

    /// The selector of the element it acts on, if any.
    pub fn selector(&self) -> Option<&str> {
        match self {
            Replay::Click { selector, .. }
            | Replay::Type { selector, .. }
            | Replay::SelectOption { selector, .. }
            | Replay::Drag { selector, .. }
            | Replay::WaitFor { selector }
            | Replay::Upload { selector, .. } => Some(selector),
            Replay::PressKey { selector, .. } => selector.as_deref(),
            Replay::Navigate { .. } | Replay::Dialog { .. } => None,
        }
    }
}

/// A `type` step's text: what the field held, or, for a secret field, a placeholder naming it
/// (`{"secret": "password field"}`) that the agent replaces with the secret before replaying.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Typed {
    /// The field's text.
    Text(String),
    /// A secret's placeholder.
    Secret {
        /// What kind of secret (`password field`, `one-time code field`).
        secret: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_step_serializes_as_the_batch_step_it_replays_as() {
        let typed = Replay::Type {
            selector: "#user".into(),
            text: Typed::Text("ann".into()),
            clear: true,
        };
        assert_eq!(
            serde_json::to_value(&typed).unwrap(),
            json!({"kind": "type", "selector": "#user", "text": "ann", "clear": true})
        );
        let secret = Replay::Type {
            selector: "#password".into(),
            text: Typed::Secret {
                secret: "password field".into(),
            },
            clear: true,
        };
        assert_eq!(
            serde_json::to_value(&secret).unwrap()["text"],
            json!({"secret": "password field"})
        );
        let key = Replay::PressKey {
            key: "Enter".into(),
            modifiers: None,
            selector: Some("#q".into()),
        };
        assert_eq!(
            serde_json::to_value(&key).unwrap(),
            json!({"kind": "pressKey", "key": "Enter", "selector": "#q"})
        );
        let wait = Replay::WaitFor {
            selector: "#next".into(),
        };
        assert_eq!(
            serde_json::to_value(&wait).unwrap(),
            json!({"kind": "waitFor", "selector": "#next"})
        );
        for step in [typed, secret, key, wait] {
            let back: Replay =
                serde_json::from_value(serde_json::to_value(&step).unwrap()).unwrap();
            assert_eq!(back, step);
        }
    }

    #[test]
    fn uploads_and_dialogs_are_notes() {
        let upload = Replay::Upload {
            selector: "#file".into(),
            files: vec!["report.pdf".into()],
        };
        assert!(!upload.replays());
        assert_eq!(upload.selector(), Some("#file"));
        assert!(
            !Replay::Dialog {
                dialog: "confirm".into(),
                accepted: true
            }
            .replays()
        );
        assert!(
            Replay::Navigate {
                url: "https://example.com/".into()
            }
            .replays()
        );
    }
}
