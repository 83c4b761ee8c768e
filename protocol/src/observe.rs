//! Observing a page (SPEC §4, §6): snapshots with element refs and deltas, a document's
//! content, the tab's frames, the selected text and screenshots.
//!
//! Every read is bounded on the extension side: an observation returns a window of the node
//! list within a node and character budget, content a slice of characters, a screenshot an image
//! scaled to a width; each says what it left out.

use serde::{Deserialize, Serialize};

use crate::observation::{Observation, Subject};
use crate::{ElementRef, TabId, Target};

/// Observe a document of the tab: its meaningful nodes with refs, bounded.
///
/// The extension builds the full ordered node list of the document (or of the `scope`
/// subtree), keeps the nodes matching `query`, and returns the window
/// `[offset, offset + budget)` of that list. With `since`, it compares the window with the
/// observation of that version and returns only what changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SnapshotRequest {
    /// The frame to observe (an ID from [`ListFrames`]); `None` is the top document.
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
    /// Keep text a person cannot see (`opacity: 0`, clipped to nothing, far off-screen, a font
    /// under 2 px), which observations otherwise drop: hidden text is where pages put
    /// instructions meant for agents. A control's accessible name keeps such text either way.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_hidden: bool,
}

/// List the tab's frames.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListFrames {}

/// What [`ContentRequest`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ContentFormat {
    /// The readable text, as a person sees it.
    Text,
    /// Raw markup (password values removed).
    Html,
}

/// Read a document's content as text or HTML, bounded.
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

/// The text selected in the tab (any frame), bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetSelectedText {
    /// Budget.
    pub max_chars: u32,
}

/// Image formats of a screenshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ImageFormat {
    /// Lossless; the largest.
    Png,
    /// Lossy, `quality` 0–100.
    Jpeg,
    /// Lossy, `quality` 0–100; the smallest at equal quality.
    #[default]
    Webp,
}

/// Take a screenshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScreenshotRequest {
    /// The image format.
    pub format: ImageFormat,
    /// For jpeg and webp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<u8>,
    /// The image is scaled down to at most this many pixels wide.
    pub max_width: u32,
    /// The whole page rather than the viewport.
    #[serde(default)]
    pub full_page: bool,
    /// Only this element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// Take an observation with it (this budget), and fail if the document changed between the
    /// two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_snapshot: Option<SnapshotBudget>,
}

/// The budget of the observation taken with a screenshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SnapshotBudget {
    /// Nodes.
    pub max_nodes: u32,
    /// Characters.
    pub max_chars: u32,
}

/// The observe group's operations, nested in [`crate::Operation::Observe`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum ObserveOp {
    /// Observe a document.
    Snapshot(SnapshotRequest),
    /// List the tab's frames.
    ListFrames(ListFrames),
    /// Read a document's content.
    Content(ContentRequest),
    /// The selected text.
    SelectedText(GetSelectedText),
    /// A screenshot.
    Screenshot(ScreenshotRequest),
    /// The page printed to PDF.
    Pdf(crate::files::PdfRequest),
}

crate::tagged::deserialize_tagged!(ObserveOp, "kind", {
    "pdf" => crate::files::PdfRequest => Self::Pdf,
    "snapshot" => SnapshotRequest => Self::Snapshot,
    "listFrames" => ListFrames => Self::ListFrames,
    "content" => ContentRequest => Self::Content,
    "selectedText" => GetSelectedText => Self::SelectedText,
    "screenshot" => ScreenshotRequest => Self::Screenshot,
});

impl ObserveOp {
    /// Whether it runs beside the tab's queue. None does: a read of a tab waits its turn like
    /// any other operation on it (screenshots of other tabs are independent anyway).
    pub fn bypasses_queue(&self) -> bool {
        false
    }
}

/// What a browser observation looked at: one document of a tab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Page {
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
}

impl Subject for Page {
    type Ref = ElementRef;
}

/// Every frame of a tab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FrameList {
    /// The tab observed.
    pub tab_id: TabId,
    /// Every frame of the tab, the top document first, parents before children.
    pub frames: Vec<FrameInfo>,
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
    /// The frame's URL (empty when the policy denies its origin).
    pub url: String,
    /// The frame shows an origin the policy denies: nothing in it is read or acted on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocked: bool,
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

/// The text selected in a tab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelectedText {
    /// The tab.
    pub tab_id: TabId,
    /// The text, cut to the budget.
    pub text: String,
    /// Its full length.
    pub total_chars: u32,
}

/// A screenshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Screenshot {
    /// The tab captured.
    pub tab_id: TabId,
    /// The image format.
    pub format: ImageFormat,
    /// The image, base64.
    pub data: String,
    /// Its width in pixels.
    pub width: u32,
    /// Its height in pixels.
    pub height: u32,
    /// The captured area's width in CSS pixels before scaling.
    pub css_width: u32,
    /// The captured area's height in CSS pixels before scaling.
    pub css_height: u32,
    /// The document captured.
    pub document_id: String,
    /// The observation taken with it, when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation<Page>>,
    /// Frames in the captured area that the policy does not let agents read (or whose frame
    /// element could not be told apart from theirs): painted over with a solid fill in the image
    /// after it was captured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub covered_frames: Vec<CoveredFrame>,
}

/// A frame painted over in a screenshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CoveredFrame {
    /// Chrome's frame ID (as `list_frames` gives it).
    pub frame_id: u32,
    /// The origin it shows (`https://bank.example`), or the URL when it has none.
    pub origin: String,
}

/// What an [`ObserveOp`] produced, nested in [`crate::OpResult::Observe`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum ObserveResult {
    /// An observation.
    Snapshot(Observation<Page>),
    /// The tab's frames.
    Frames(FrameList),
    /// Content.
    Content(PageContent),
    /// The selected text.
    SelectedText(SelectedText),
    /// A screenshot.
    Screenshot(Screenshot),
    /// A PDF.
    Pdf(crate::files::PdfDocument),
}

crate::tagged::deserialize_tagged!(ObserveResult, "kind", {
    "pdf" => crate::files::PdfDocument => Self::Pdf,
    "snapshot" => Observation<Page> => Self::Snapshot,
    "frames" => FrameList => Self::Frames,
    "content" => PageContent => Self::Content,
    "selectedText" => SelectedText => Self::SelectedText,
    "screenshot" => Screenshot => Self::Screenshot,
});
