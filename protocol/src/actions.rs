//! Actions (SPEC §5): what an [`ActRequest`] or a batch step asks the extension to do to a
//! page, and what it reports back; reading one element's state, answering a JavaScript dialog
//! and a tab's health, which actions run into.
//!
//! An action runs in the tab's queue, checks its request's deadline immediately before it
//! dispatches input, and answers with an [`Outcome`] plus, unless switched off, a small
//! [`Observation`] of the [`Page`] afterwards.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::observation::{Node, Observation};
use crate::observe::{ContentRequest, Page, PageContent, SnapshotRequest};
use crate::{OpError, TabId, Target};

/// One action and the observation to take after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActRequest {
    /// What to do.
    pub action: Action,
    /// What to observe afterwards; `None` observes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: Option<ObserveSpec>,
}

/// The observation an action returns: a small window of the top document (or of `scope`), or
/// the changes since the agent's last matching observation of the same document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObserveSpec {
    /// At most this many nodes.
    pub max_nodes: u32,
    /// At most this many characters of node text.
    pub max_chars: u32,
    /// Observe only this element's subtree (a scope ref names its frame).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Target>,
    /// Return the changes since this observation version. Without it, the changes since the
    /// latest observation of the same view are returned when there is one, else a full window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
}

/// Which mouse button.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum MouseButton {
    /// The primary button.
    #[default]
    Left,
    /// The wheel button.
    Middle,
    /// The secondary button (context menu).
    Right,
}

impl MouseButton {
    /// CDP's name, and the `buttons` bit while pressed.
    pub fn cdp(self) -> (&'static str, u32) {
        match self {
            MouseButton::Left => ("left", 1),
            MouseButton::Right => ("right", 2),
            MouseButton::Middle => ("middle", 4),
        }
    }
}

/// How a click is delivered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ClickMode {
    /// Mouse input through `chrome.debugger`: `event.isTrusted` is true.
    #[default]
    Trusted,
    /// `element.click()` in the page: no hit test, untrusted, for elements a person could not
    /// reach with the mouse.
    Dom,
}

/// How text is set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TypeMode {
    /// Trusted key events, as a person types, so widgets that listen to keys react: a key per
    /// character up to [`KEYED_MAX`], beyond it one insertion and the last character as a key.
    /// A read-only field, a field that cannot take the focus, or a tab the debugger cannot
    /// attach to gets the native setter.
    #[default]
    Auto,
    /// The native value setter plus `input`/`change` events.
    Native,
    /// Trusted input through `chrome.debugger` into the focused field.
    Trusted,
}

/// The longest text [`TypeMode::Auto`] types key by key; a longer one is inserted at once but
/// for its last character, still a key (keys cost about a millisecond each).
pub const KEYED_MAX: usize = 100;

/// How trusted text reaches the field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum InputMethod {
    /// One text insertion (`Input.insertText`): fast, one `input` event.
    #[default]
    Insert,
    /// A key down/up pair per character, for pages that listen to keys.
    Keys,
}

/// The load state a navigation waits for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WaitUntil {
    /// The document is parsed (`DOMContentLoaded`).
    Domcontentloaded,
    /// The document and its subresources finished loading.
    #[default]
    Complete,
}

crate::tagged::struct_variants_tagged! {
tag = "kind";
/// What a wait waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum WaitCondition {
    /// An element matching the CSS selector is rendered (or, with `hidden`, no longer is).
    Selector {
        /// A native CSS selector (top document).
        css: String,
        /// Wait for it to disappear instead.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        hidden: bool,
    },
    /// The document's visible text contains `text` (or, with `gone`, no longer does).
    Text {
        /// Case-sensitive text.
        text: String,
        /// Wait for it to disappear instead.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        gone: bool,
    },
    /// The tab's URL matches `pattern` (or, with `gone`, no longer does): with a `*`, a glob
    /// over the whole URL (`*` is any run of characters); a pattern with a scheme is the URL's
    /// beginning; one starting with `/` is found in the URL's path (so `/done` is not found in
    /// `/login?next=/done`); any other text is found anywhere in the URL.
    Url {
        /// The pattern.
        pattern: String,
        /// Wait until the URL no longer matches instead.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        gone: bool,
    },
    /// No request of the tab has been in flight for `idle_ms`.
    NetworkIdle {
        /// The quiet period.
        idle_ms: u32,
    },
    /// Simply wait this long.
    Delay {
        /// Milliseconds.
        ms: u32,
    },
}
}

crate::tagged::struct_variants_tagged! {
tag = "kind";
/// Where a drag ends.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum DragTo {
    /// A point on another element: its centre, or the half of it a sortable list reads as
    /// "before" or "after" it.
    Target {
        /// The element.
        target: Target,
        /// Which point of it.
        #[serde(default, skip_serializing_if = "DropPosition::is_center")]
        position: DropPosition,
    },
    /// An offset from the start point, in CSS pixels.
    Offset {
        /// Horizontal offset.
        dx: f64,
        /// Vertical offset.
        dy: f64,
    },
}
}

/// Where on its target a drag ends. Sortable lists decide "before" or "after" an item from the
/// half of it the pointer is over, along the list's axis.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DropPosition {
    /// The centre.
    #[default]
    Center,
    /// A quarter of the way in from the side facing the item before it (in a vertical list, 25%
    /// of the height from the top).
    Before,
    /// A quarter of the way in from the side facing the item after it (75% from the top).
    After,
}

impl DropPosition {
    /// Whether this is the default, the centre.
    pub fn is_center(&self) -> bool {
        *self == DropPosition::Center
    }
}

/// A value for one form field. Read by hand (`actions_de.rs`): a boolean or a string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum FieldValue {
    /// A checkbox or radio button's state.
    Checked(bool),
    /// Text, or a select's option (by value, else by visible text).
    Text(String),
}

/// One field of a `FillForm`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FormField {
    /// The field.
    pub target: Target,
    /// Its new value.
    pub value: FieldValue,
}

crate::tagged::struct_variants_tagged! {
tag = "kind";
/// An action on a page. (Read without buffering through a mirror of its variants, as the
/// other enums declared with `struct_variants_tagged!`: `tagged.rs`.)
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Action {
    /// Click the target; with `wait_until`/`wait_for`, then wait for the navigation or element
    /// it causes.
    Click {
        /// The element.
        target: Target,
        /// Trusted (default) or DOM.
        #[serde(default)]
        mode: ClickMode,
        /// The button.
        #[serde(default)]
        button: MouseButton,
        /// 1 for a click, 2 for a double click.
        click_count: u32,
        /// Wait for a navigation started by the click to reach this state.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wait_until: Option<WaitUntil>,
        /// Then wait for this CSS selector to be rendered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wait_for: Option<String>,
    },
    /// Move the mouse over the target (trusted).
    Hover {
        /// The element.
        target: Target,
    },
    /// Press the mouse on `from`, move in steps, release at `to` (trusted; HTML5 drag and drop
    /// included).
    Drag {
        /// Where the drag starts.
        from: Target,
        /// Where it ends.
        to: DragTo,
    },
    /// Put text into a field.
    Type {
        /// The field.
        target: Target,
        /// The text.
        text: String,
        /// Replace the current value instead of appending.
        #[serde(default)]
        clear: bool,
        /// Keys as a person types (default), the native setter, or trusted input.
        #[serde(default)]
        mode: TypeMode,
        /// For trusted input: one insertion or key events.
        #[serde(default)]
        input_method: InputMethod,
        /// Accept a read-only field (custom pickers); the attribute is left in place.
        #[serde(default)]
        allow_readonly: bool,
    },
    /// Press a key (trusted), optionally focusing `target` first.
    PressKey {
        /// A named key (`Enter`, `ArrowDown`, …) or one character.
        key: String,
        /// Bitmask: Alt=1, Control=2, Meta=4, Shift=8.
        #[serde(default)]
        modifiers: u8,
        /// Focus this element first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<Target>,
    },
    /// Choose an option: in a native `<select>` (`target`) by value or text, or, without
    /// `target`, the visible element with exactly `text` in an open custom dropdown.
    SelectOption {
        /// The `<select>`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<Target>,
        /// The option's value.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<String>,
        /// The option's visible text (exact).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// Fill several fields of one form, validating every target before changing any.
    FillForm {
        /// The fields, in order.
        fields: Vec<FormField>,
        /// Request the form's submission afterwards.
        #[serde(default)]
        submit: bool,
    },
    /// Scroll the page (or `target`'s scroll container) by an amount, or bring `to` into view.
    Scroll {
        /// The element to scroll; the page when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<Target>,
        /// Pixels right.
        #[serde(default)]
        dx: f64,
        /// Pixels down.
        #[serde(default)]
        dy: f64,
        /// Scroll this element into view instead.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<Target>,
    },
    /// Load `url` and wait for `wait_until`, then for `wait_for`.
    Navigate {
        /// An absolute http(s) URL (the hub checked it).
        url: String,
        /// The load state to wait for.
        #[serde(default)]
        wait_until: WaitUntil,
        /// Then wait for this CSS selector to be rendered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wait_for: Option<String>,
    },
    /// Wait for a condition, at most `timeout_ms`.
    Wait {
        /// The condition.
        condition: WaitCondition,
        /// How long to wait before failing with `WAIT_TIMEOUT`.
        timeout_ms: u32,
    },
    /// Give files to a file input, the one a click on `target` opens, or a drop zone; their
    /// bytes were sent before as the upload's chunks ([`crate::files`]).
    Upload {
        /// The input, the element that opens one, or the drop zone.
        target: Target,
        /// The upload whose chunks hold the bytes.
        upload: String,
        /// The files, in order.
        files: Vec<crate::files::UploadFile>,
        /// An input's files or a drop.
        #[serde(default)]
        mode: crate::files::UploadMode,
    },
}
}

impl Action {
    /// The name used in messages and step results.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Click {
                wait_until,
                wait_for,
                ..
            } if wait_until.is_some() || wait_for.is_some() => "clickAndWait",
            Action::Click { .. } => "click",
            Action::Hover { .. } => "hover",
            Action::Drag { .. } => "drag",
            Action::Type { .. } => "type",
            Action::PressKey { .. } => "pressKey",
            Action::SelectOption { .. } => "selectOption",
            Action::FillForm { .. } => "fill",
            Action::Scroll { .. } => "scroll",
            Action::Navigate { .. } => "navigate",
            Action::Wait { .. } => "wait",
            Action::Upload { .. } => "upload",
        }
    }

    /// The element the action is about, if any: the one its observation should look at.
    pub fn target(&self) -> Option<&Target> {
        match self {
            Action::Click { target, .. }
            | Action::Hover { target }
            | Action::Type { target, .. }
            | Action::Drag { from: target, .. }
            | Action::Upload { target, .. } => Some(target),
            Action::PressKey { target, .. } | Action::SelectOption { target, .. } => {
                target.as_ref()
            }
            Action::FillForm { fields, .. } => fields.first().map(|f| &f.target),
            Action::Scroll { target, to, .. } => to.as_ref().or(target.as_ref()),
            Action::Navigate { .. } | Action::Wait { .. } => None,
        }
    }

    /// Whether the action changes the page (a wait only watches it).
    pub fn is_mutation(&self) -> bool {
        !matches!(self, Action::Wait { .. })
    }
}

/// What an action did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Outcome {
    /// The tab acted in.
    pub tab_id: TabId,
    /// One line for the agent, e.g. `Clicked button "Sign in"`.
    pub summary: String,
    /// What the action itself reports; absent when a dialog its input opened cut it short.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<ActionFacts>,
    /// The JavaScript dialog the action's input opened: the action happened, and the page now
    /// waits for an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialog: Option<DialogInfo>,
    /// Tabs the action opened (links with a target, `window.open`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub opened_tabs: Vec<TabId>,
    /// A top-frame navigation the action's input started, and how far it got before the
    /// observation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub navigation: Option<NavigationState>,
    /// Downloads the action started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub downloads: Vec<crate::files::DownloadInfo>,
}

impl Outcome {
    /// An outcome with the action's facts and no side effects (yet).
    pub fn new(tab_id: TabId, summary: impl Into<String>, facts: ActionFacts) -> Self {
        Outcome {
            tab_id,
            summary: summary.into(),
            facts: Some(facts),
            dialog: None,
            opened_tabs: Vec::new(),
            navigation: None,
            downloads: Vec::new(),
        }
    }
}

/// How far a navigation that an action started got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum NavigationState {
    /// The new document was parsed.
    #[serde(rename = "navigated")]
    Navigated,
    /// The navigation failed.
    #[serde(rename = "navigation failed")]
    Failed,
    /// Still loading when the action's deadline came near.
    #[serde(rename = "navigation still loading")]
    StillLoading,
}

/// What each kind of action reports about itself. Element lines (`target`, `to`) are rendered
/// like observation lines; values are the field's own afterwards (passwords redacted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum ActionFacts {
    /// A trusted click (or click and wait).
    Click {
        /// The element clicked.
        target: String,
        /// With a wait: whether the click started a navigation.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        navigated: Option<bool>,
        /// With a wait: the URL the tab ended on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
    },
    /// `element.click()` in the page.
    DomClick {
        /// The element clicked.
        target: String,
        /// Always [`ClickMode::Dom`].
        mode: ClickMode,
    },
    /// The mouse moved over an element.
    Hover {
        /// The element.
        target: String,
        /// The tab had to be made the selected tab of its window first.
        brought_forward: bool,
    },
    /// A drag.
    Drag {
        /// Where it started.
        target: String,
        /// The element it ended on; `None` for a drag by an offset.
        to: Option<String>,
        /// Where it ended, in CSS pixels of the viewport.
        x: f64,
        /// Where it ended.
        y: f64,
        /// Whether the page started an HTML5 drag, delivered as drag events.
        html5: bool,
        /// The tab had to be made the selected tab of its window first.
        brought_forward: bool,
    },
    /// Text typed into a field.
    Type {
        /// The field.
        target: String,
        /// Its value afterwards.
        value: String,
    },
    /// A key pressed.
    PressKey {
        /// The chord, e.g. `Control+A`.
        key: String,
        /// The element focused first, if one was named.
        target: Option<String>,
    },
    /// An option chosen in an open custom dropdown.
    ChooseOption {
        /// The element clicked.
        target: String,
        /// Its text.
        text: String,
    },
    /// An option selected in a native `<select>`.
    SelectOption {
        /// The select.
        target: String,
        /// The option's value.
        value: String,
        /// The option's text.
        text: String,
    },
    /// A form filled.
    Fill {
        /// Each field, in order.
        fields: Vec<FilledField>,
        /// Whether the submission was requested.
        submitted: bool,
        /// Whether the whole form passed its constraints.
        form_valid: bool,
    },
    /// The page or an element scrolled.
    Scroll {
        /// The scroll position afterwards.
        scroll_x: f64,
        /// The scroll position afterwards.
        scroll_y: f64,
        /// Whether the scroller is at its end in the direction scrolled.
        at_end: bool,
        /// The element scrolled or brought into view.
        target: Option<String>,
    },
    /// A navigation that waited.
    Navigate {
        /// The URL the tab ended on.
        url: String,
    },
    /// Files given to an input or dropped on an element.
    Upload {
        /// The element that took them: the input (also when a button opened it), or the drop
        /// zone.
        target: String,
        /// Each file's name and size, in order.
        files: Vec<crate::files::UploadFile>,
        /// How they were given.
        mode: crate::files::UploadMode,
        /// The element clicked to open the input's file chooser, when it was not the input.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        opened_by: Option<String>,
    },
    /// A wait that came true.
    Wait {
        /// How long it took.
        waited_ms: f64,
        /// What appeared, for a selector or text that appeared: the element's line with its
        /// ref (for text, the first line holding it), as an observation would show it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        element: Option<Node<crate::ElementRef>>,
        /// For a URL wait: the URL the tab was on when it came true.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
    },
}

/// One field of a filled form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FilledField {
    /// The field.
    pub target: String,
    /// Its value afterwards (passwords redacted).
    pub value: FieldValue,
    /// False when the field fails its constraints.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub valid: bool,
    /// The browser's message for an invalid field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_message: Option<String>,
}

fn yes() -> bool {
    true
}

fn is_true(value: &bool) -> bool {
    *value
}

/// Answer to an [`ActRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Acted {
    /// What happened.
    pub outcome: Outcome,
    /// The page afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation<Page>>,
    /// Why no observation came back although one was asked for (a dialog blocks the page, the
    /// tab is loading a restricted page…). The action itself succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation_error: Option<OpError>,
}

/// One step of a batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "step",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Step {
    /// An action (no observation of its own).
    Act {
        /// The action.
        action: Action,
    },
    /// An observation.
    Observe {
        /// What to observe.
        request: SnapshotRequest,
    },
    /// A content read.
    Content {
        /// What to read.
        request: ContentRequest,
    },
}

/// A batch: steps run in order in one tab under one deadline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BatchRequest {
    /// 1–20 steps.
    pub steps: Vec<Step>,
    /// What to observe after the last step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: Option<ObserveSpec>,
}

/// What one completed step produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum StepResult {
    /// An action's outcome.
    Acted {
        /// What happened.
        outcome: Outcome,
    },
    /// An observation.
    Observed {
        /// The observation.
        observation: Observation<Page>,
    },
    /// Content.
    Content {
        /// The content.
        content: PageContent,
    },
}

/// The failure that stopped a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StepFailure {
    /// The failed step's index (0-based).
    pub step: u32,
    /// Why.
    pub error: OpError,
}

/// Answer to a [`BatchRequest`]: the completed steps, and the failure that stopped the batch,
/// if any (later steps did not run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BatchResult {
    /// The tab the batch ran in.
    pub tab_id: TabId,
    /// One result per completed step, in order.
    pub steps: Vec<StepResult>,
    /// The step that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<StepFailure>,
    /// The page after the last completed step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation<Page>>,
    /// Why no observation came back although one was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation_error: Option<OpError>,
}

/// A bounded read of one element's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadStateRequest {
    /// The element (hidden inputs too).
    pub target: Target,
    /// Attributes to report besides the standard state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<String>,
    /// The value is cut to this many characters.
    pub max_chars: u32,
}

/// An element's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ElementState {
    /// The tab read.
    pub tab_id: TabId,
    /// The element, rendered like an observation line.
    pub target: String,
    /// The state.
    pub state: ElementFacts,
}

/// What `read_element_state` reports about an element; a fact that does not apply to the
/// element (a checkbox's `checked` for a text field) is absent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ElementFacts {
    /// The tag name, lower case.
    pub tag: String,
    /// An input's type.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub input_type: Option<String>,
    /// A field's value (bounded; a password's is redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The value was cut to the budget.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub value_truncated: bool,
    /// A checkbox's or radio button's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<bool>,
    /// An option's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected: Option<bool>,
    /// A select's chosen options' text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_text: Option<String>,
    /// A text field's `readOnly`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readonly: Option<bool>,
    /// A form control's disabled state (fieldsets included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// A form control's `required`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Whether it is rendered (hidden inputs never are).
    pub visible: bool,
    /// Whether it has the focus.
    pub focused: bool,
    /// Its border box in CSS pixels of its frame's viewport, rounded; absent when it has no
    /// layout box (`display: none`, a hidden input).
    #[serde(rename = "box", default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<ElementBox>,
    /// Why it fails its constraints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_message: Option<String>,
    /// The attributes asked for that it has (bounded; a password's `value` redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attributes: Option<BTreeMap<String, String>>,
}

/// An element's box: where it is and how big, in CSS pixels of its frame's viewport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElementBox {
    /// The left edge, from the viewport's left (negative when scrolled past).
    pub x: i64,
    /// The top edge, from the viewport's top.
    pub y: i64,
    /// The width.
    pub width: u32,
    /// The height.
    pub height: u32,
}

/// A JavaScript dialog (alert, confirm, prompt, beforeunload) open in a tab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DialogInfo {
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The dialog's message.
    pub message: String,
    /// A prompt's default text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub default_prompt: String,
    /// A frame agents may not read (a denied origin, or inside a denied frame) opened it: its
    /// message and default text are withheld (empty), and it may only be dismissed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub withheld: bool,
}

impl DialogInfo {
    /// What agents are told of a dialog a frame they may not read opened: only its type.
    pub fn withheld(kind: &str) -> Self {
        Self {
            kind: kind.to_owned(),
            message: String::new(),
            default_prompt: String::new(),
            withheld: true,
        }
    }
}

/// Accept or dismiss the JavaScript dialog open in the tab. Runs beside the tab's queue: the
/// dialog is what blocks it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HandleDialog {
    /// Accept (OK) or dismiss (Cancel).
    pub accept: bool,
    /// A prompt's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_text: Option<String>,
}

/// Report the tab's health. Runs beside the tab's queue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetTabHealth {
    /// Reattach the debugger, only if the tab's queue is idle.
    #[serde(default)]
    pub recover_debugger: bool,
}

/// Answer to [`HandleDialog`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DialogHandled {
    /// The tab.
    pub tab_id: TabId,
    /// The dialog that was closed.
    pub dialog: DialogInfo,
    /// Whether it was accepted.
    pub accepted: bool,
}

/// The action a tab is running.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActiveWork {
    /// The tool that asked for it.
    pub tool: String,
    /// How long it has been running.
    pub elapsed_ms: u64,
    /// Its deadline, counted from its start.
    pub deadline_ms: u64,
}

/// Answer to [`GetTabHealth`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TabHealth {
    /// The tab.
    pub tab_id: TabId,
    /// The tab's URL.
    pub url: String,
    /// Whether the page answered a trivial script within a second.
    pub responsive: bool,
    /// How long that answer took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_ms: Option<u64>,
    /// The operation running in the tab's queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<ActiveWork>,
    /// How many operations wait behind it.
    pub queued: u32,
    /// Whether tabwire's debugger session is attached.
    pub debugger_attached: bool,
    /// An open JavaScript dialog blocking the page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialog: Option<DialogInfo>,
    /// What `recoverDebugger` did, when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<String>,
}

/// The action group's operations, nested in [`crate::Operation::Act`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum ActOp {
    /// Act on the page (click, type, wait…) and observe it afterwards.
    Act(ActRequest),
    /// Run steps in order in one tab under the request's deadline.
    Batch(BatchRequest),
    /// Read one element's state.
    ReadState(ReadStateRequest),
    /// Answer a dialog.
    HandleDialog(HandleDialog),
    /// The tab's health.
    Health(GetTabHealth),
    /// Keep part of an upload's bytes until the action that names the upload.
    UploadChunk(crate::files::UploadChunk),
    /// The downloads the session's actions started.
    Downloads(crate::files::DownloadsRequest),
    /// The browser's clipboard.
    Clipboard(crate::files::ClipboardRequest),
}

crate::tagged::deserialize_tagged!(ActOp, "kind", {
    "uploadChunk" => crate::files::UploadChunk => Self::UploadChunk,
    "downloads" => crate::files::DownloadsRequest => Self::Downloads,
    "clipboard" => crate::files::ClipboardRequest => Self::Clipboard,
    "act" => ActRequest => Self::Act,
    "batch" => BatchRequest => Self::Batch,
    "readState" => ReadStateRequest => Self::ReadState,
    "handleDialog" => HandleDialog => Self::HandleDialog,
    "health" => GetTabHealth => Self::Health,
});

impl ActOp {
    /// Whether the operation can change the page.
    pub fn is_mutation(&self) -> bool {
        match self {
            ActOp::Act(request) => request.action.is_mutation(),
            ActOp::Batch(batch) => batch
                .steps
                .iter()
                .any(|step| matches!(step, Step::Act { action } if action.is_mutation())),
            ActOp::HandleDialog(_) => true,
            ActOp::ReadState(_)
            // The clipboard is not the page: a write takes no lease (the policy still judges
            // it as an action on the tab's page).
            | ActOp::Clipboard(_)
            | ActOp::Health(_)
            | ActOp::UploadChunk(_)
            | ActOp::Downloads(_) => false,
        }
    }

    /// Whether it runs beside the tab's queue: health must answer while the queue is stuck,
    /// and a dialog is what blocks it.
    pub fn bypasses_queue(&self) -> bool {
        matches!(
            self,
            ActOp::HandleDialog(_) | ActOp::Health(_) | ActOp::UploadChunk(_) | ActOp::Downloads(_)
        )
    }
}

/// What an [`ActOp`] produced, nested in [`crate::OpResult::Act`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum ActResult {
    /// An action's outcome and observation.
    Acted(Acted),
    /// A batch's steps.
    Batch(BatchResult),
    /// An element's state.
    ElementState(ElementState),
    /// The dialog answered.
    DialogHandled(DialogHandled),
    /// The tab's health.
    Health(TabHealth),
    /// An upload's chunk kept.
    ChunkKept(crate::files::ChunkKept),
    /// Downloads.
    Downloads(crate::files::Downloads),
    /// The clipboard read or written.
    Clipboard(crate::files::ClipboardText),
}

crate::tagged::deserialize_tagged!(ActResult, "kind", {
    "chunkKept" => crate::files::ChunkKept => Self::ChunkKept,
    "downloads" => crate::files::Downloads => Self::Downloads,
    "clipboard" => crate::files::ClipboardText => Self::Clipboard,
    "acted" => Acted => Self::Acted,
    "batch" => BatchResult => Self::Batch,
    "elementState" => ElementState => Self::ElementState,
    "dialogHandled" => DialogHandled => Self::DialogHandled,
    "health" => TabHealth => Self::Health,
});

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_drop_at_the_centre_keeps_the_old_shape() {
        let centre = DragTo::Target {
            target: Target::Css("#lane".into()),
            position: DropPosition::Center,
        };
        assert_eq!(
            serde_json::to_value(&centre).unwrap(),
            json!({"kind": "target", "target": {"css": "#lane"}})
        );
        let after: DragTo = serde_json::from_value(
            json!({"kind": "target", "target": {"css": "#lane"}, "position": "after"}),
        )
        .unwrap();
        assert_eq!(
            after,
            DragTo::Target {
                target: Target::Css("#lane".into()),
                position: DropPosition::After,
            }
        );
        assert!(
            serde_json::from_value::<DragTo>(
                json!({"kind": "target", "target": {"css": "#lane"}, "position": "below"})
            )
            .is_err()
        );
    }
}
