//! Calling the in-page collector (js/collector/, joined into one file at build time, through the
//! glue in js/page.js) and reading its answer.
//!
//! Every page-side step goes through [`run`]: it runs the collector in one frame of the tab
//! with `chrome.scripting.executeScript` (injecting collector.js first when that document does
//! not have the current build yet), parses the JSON string it returns, and reports the
//! `documentId` Chrome ran it in — the identity refs are bound to. Chrome's refusals (chrome://
//! pages, the Web Store, other extensions, error pages, frames that no longer exist) become
//! error codes here, in one place, with advice an agent can follow.

use js_sys::Promise;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tabwire_protocol::REDACTED;
use tabwire_protocol::policy::Need;
use tabwire_protocol::{ContentFormat, ErrorCode, OpError, TabId};
use wasm_bindgen::prelude::*;

use crate::chrome;
use tabwire_observation::facts::Identity;

#[wasm_bindgen(module = "/js/page.js")]
extern "C" {
    #[wasm_bindgen(catch, js_name = runInFrames)]
    fn run_in_frames(
        tab_id: u32,
        frame_ids: Vec<u32>,
        build: &str,
        args_json: &str,
    ) -> Result<Promise, JsValue>;

    #[wasm_bindgen(catch, js_name = runInPage)]
    fn run_in_page(
        tab_id: u32,
        frame_id: u32,
        build: &str,
        args_json: &str,
    ) -> Result<Promise, JsValue>;

    #[wasm_bindgen(catch, js_name = dropUpload)]
    fn drop_upload_in_page(tab_id: u32, frame_id: u32, key: &str) -> Result<Promise, JsValue>;

    #[wasm_bindgen(catch, js_name = keepInPage)]
    fn keep_bytes_in_page(
        tab_id: u32,
        frame_id: u32,
        key: &str,
        file: u32,
        offset: f64,
        data: &JsValue,
    ) -> Result<Promise, JsValue>;
}

/// Forgets what upload `key` left in tabwire's world of frame `frame` (its bytes, an armed
/// chooser listener), whatever ended it; a frame that is gone holds nothing any more.
pub async fn drop_in_page(tab: TabId, frame: u32, key: &str) {
    if let Err(failure) = chrome::call(drop_upload_in_page(tab, frame, key)).await
        && !is_missing_frame(&failure.message)
    {
        chrome::log!(
            "tab {tab}: could not clear an upload's bytes: {}",
            failure.message
        );
    }
}

/// Puts one chunk of upload `key` (file `file`, from byte `offset`; `data` is base64) into
/// tabwire's world of frame `frame`, where [`PageCommand::SetFiles`] finds it (and checks that
/// every byte reached the document it runs in): judged as an action on the frame first, as the
/// bytes are for it.
pub async fn keep_in_page(
    tab: TabId,
    frame: u32,
    key: &str,
    file: u32,
    offset: u64,
    data: &JsValue,
) -> Result<(), OpError> {
    let judged = crate::policy::check_frame(tab, frame, Need::Act).await;
    admit_frame(tab, frame, judged)?;
    chrome::call(keep_bytes_in_page(
        tab,
        frame,
        key,
        file,
        offset as f64,
        data,
    ))
    .await
    .map_err(|failure| {
        if is_missing_frame(&failure.message) {
            missing_frame_error(tab, frame, MissingFrame::Requested)
        } else {
            injection_error(&failure.message)
        }
    })?;
    Ok(())
}

/// The collector's source, its parts joined by the build script as build.sh joins them into
/// the extension.
const COLLECTOR_SOURCE: &str = include_str!(concat!(env!("OUT_DIR"), "/collector.js"));

/// FNV-1a of the collector's source: pages keep a collector only while it is this build.
const COLLECTOR_HASH: u64 = {
    let bytes = COLLECTOR_SOURCE.as_bytes();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
};

/// [`COLLECTOR_HASH`] as the string the page compares.
fn collector_build() -> String {
    format!("{COLLECTOR_HASH:016x}")
}

/// Whether snapshots check the page model against a fresh walk (set once at start-up from the
/// bundled config.json; the end-to-end tests set it).
static CHECK_PAGE_MODEL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Turns the page model's check mode on for this worker's life.
pub fn check_page_model() {
    CHECK_PAGE_MODEL.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether the page model's check mode is on.
pub fn checks_page_model() -> bool {
    CHECK_PAGE_MODEL.load(std::sync::atomic::Ordering::Relaxed)
}

/// The check mode's failure: the kept page model of `tab`'s frame `frame` differed from a
/// fresh walk (`mismatch` says where). Logged too, as a test's log is where it is looked for.
pub fn page_model_differs(tab: TabId, frame: u32, mismatch: &str) -> OpError {
    let message = format!("page model check: tab {tab} frame {frame}: {mismatch}");
    crate::chrome::log!("{message}");
    OpError::new(ErrorCode::Internal, message)
}

/// The lines of a snapshot that the wasm may show, which the page sends nodes for.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageWindow {
    /// The first line.
    pub offset: u32,
    /// Most lines.
    pub lines: u32,
    /// Most characters.
    pub chars: u32,
    /// The page model's generation of the baseline a delta will compare with: the page also
    /// sends the nodes outside the window that changed after it (`changedOutside` in
    /// js/collector/25-model.js).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_since: Option<u64>,
}

/// What the page is asked to do: a command of the collector, named by its `command` tag (the
/// collector's table of commands in js/collector/90-dispatch.js has one entry per variant, which
/// a test checks).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(
    tag = "command",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum PageCommand {
    /// Report the document's URL and title (and, by failing, whether it can be scripted).
    Probe,
    /// Walk the document (or the scope's subtree) and report every visible node's facts, and
    /// which of the `known` keys' elements have left the document.
    Snapshot {
        /// Observe only this element's subtree.
        #[serde(skip_serializing_if = "Option::is_none")]
        scope: Option<PageTarget>,
        /// Keys of the frame's live refs.
        known: Vec<u32>,
        /// Send only the nodes this window can show, and count the others (no query: a query
        /// needs every node).
        #[serde(skip_serializing_if = "Option::is_none")]
        window: Option<PageWindow>,
        /// Keep text a person cannot see (see `concealed` in js/collector/20-walk.js).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        include_hidden: bool,
        /// Whom the observation is for, as a number ([`crate::refs::RefTables::viewer_number`]:
        /// no session's name enters a page): popups are "new" to each viewer until it was
        /// shown a whole-document observation after they opened. `None` for a walk shown to
        /// no one (a wait looking for the line that holds a text), which leaves that alone.
        #[serde(skip_serializing_if = "Option::is_none")]
        viewer: Option<u32>,
        /// The query of the observation, when it has one and no window: the page sends only
        /// the nodes it may match (a superset of those the engine keeps; see
        /// `queryCandidates` in js/collector/25-model.js).
        #[serde(skip_serializing_if = "Option::is_none")]
        query: Option<String>,
        /// Also walk the document afresh and report where the kept page model differs
        /// ([`check_page_model`]).
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        check: bool,
    },
    /// Count, over the whole document (hidden elements and open shadow roots included), the
    /// elements carrying each of these anchor sets.
    CountAnchors {
        /// The anchor sets.
        anchors: Vec<crate::refs::table::AnchorKey>,
    },
    /// Find the target, scroll it into view, hit-test its centre and report the point.
    Click {
        /// The element.
        target: PageTarget,
    },
    /// Put text into the target with the native value setter. Replies
    /// `{value, node, rebound?}`.
    Type {
        /// The field.
        target: PageTarget,
        /// The text to enter.
        text: String,
        /// Replace instead of append.
        clear: bool,
        /// Accept a read-only field (the attribute stays).
        allow_readonly: bool,
    },
    /// Scroll the target into view and call `element.click()`. Replies `{node, rebound?}`.
    DomClick {
        /// The element.
        target: PageTarget,
    },
    /// Scroll the target into view and focus it; with `editable`, it must accept text (as for
    /// `Type`), and with `clear` its content is selected so typed text replaces it. Replies
    /// `{node, rebound?}`.
    Focus {
        /// The element.
        target: PageTarget,
        /// It must accept text.
        editable: bool,
        /// Select its whole content.
        clear: bool,
        /// With `editable`: accept a read-only field.
        allow_readonly: bool,
    },
    /// A point of the target in the viewport (its centre, or its before or after half along
    /// its list), without scrolling or hit-testing: the end of a drag. Replies
    /// `{x, y, node, rebound?}`.
    Point {
        /// The element.
        target: PageTarget,
        /// Which point of it.
        position: tabwire_protocol::DropPosition,
    },
    /// Choose an option of a native `<select>` by value, else by exact visible text, and fire
    /// `input`/`change`. Replies `{node, value, text}`.
    SelectNative {
        /// The `<select>`.
        target: PageTarget,
        /// The option's value.
        #[serde(skip_serializing_if = "Option::is_none")]
        value: Option<String>,
        /// The option's text.
        #[serde(skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// Find the one visible element whose text is exactly `text` in an open custom dropdown,
    /// scroll it into view, hit-test it, and report its centre. Replies `{x, y, node}`.
    FindOption {
        /// The option's text.
        text: String,
    },
    /// Read the target's state (hidden elements included). Replies `{node, state}`.
    ReadState {
        /// The element.
        target: PageTarget,
        /// Extra attributes to report.
        attributes: Vec<String>,
        /// The value is cut to this many characters.
        max_chars: u32,
    },
    /// Validate every field, then set them all, then optionally request submission. Replies
    /// `{fields: [{node, value, valid, validationMessage?, rebound?}], submitted, formValid}`.
    FillForm {
        /// The fields.
        fields: Vec<PageField>,
        /// Request submission.
        submit: bool,
    },
    /// The first step of filling a form with keys: check every field as `FillForm` does,
    /// changing nothing. Replies `{fields: [{typed, rebound?}]}`: whether each takes typed text.
    CheckForm {
        /// The fields.
        fields: Vec<PageField>,
        /// Submission will be requested.
        submit: bool,
    },
    /// The last step of filling a form with keys: report the fields and optionally request
    /// submission. Replies as `FillForm` does.
    FinishForm {
        /// The fields, in the form's order.
        targets: Vec<PageTarget>,
        /// Request submission.
        submit: bool,
    },
    /// Scroll the page, or the target's scroll container, by (dx, dy), or bring `to` into view;
    /// with neither, one screen down. Replies `{scrollX, scrollY, atEnd, node?}`.
    Scroll {
        /// The element to scroll.
        #[serde(skip_serializing_if = "Option::is_none")]
        target: Option<PageTarget>,
        /// Pixels right.
        dx: f64,
        /// Pixels down.
        dy: f64,
        /// Bring this element into view instead.
        #[serde(skip_serializing_if = "Option::is_none")]
        to: Option<PageTarget>,
    },
    /// Whether the document's visible text contains `text`. Replies `{found}`.
    CheckText {
        /// The text (case-sensitive).
        text: String,
    },
    /// Whether an element matching `css` is rendered. Replies `{visible, count}`, and with
    /// `describe` the first rendered match's facts, the collector's document token and the
    /// document's URL (`{node, doc, url}`).
    CheckSelector {
        /// The selector.
        css: String,
        /// Describe the first rendered match.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        describe: bool,
    },
    /// The text selected in the frame. Replies `{text}`.
    SelectedText,
    /// The origin's `localStorage`, bounded. Replies `{origin, entries: [{key, value,
    /// valueTruncated?}], total, truncated}`.
    LocalStorage {
        /// Only keys containing this.
        #[serde(skip_serializing_if = "Option::is_none")]
        filter: Option<String>,
        /// Budget.
        max_chars: u32,
    },
    /// The target's box in document coordinates. Replies `{x, y, width, height, rebound?}`.
    Rect {
        /// The element.
        target: PageTarget,
    },
    /// Read the document's (or the scope's) text or markup.
    Content {
        /// Read only this element.
        #[serde(skip_serializing_if = "Option::is_none")]
        scope: Option<PageTarget>,
        /// Text or HTML.
        format: ContentFormat,
    },
    /// Report this frame's index among its parent's frames.
    FrameIndex,
    /// Scroll the element of child frame `index` into view.
    ScrollFrame {
        /// The child's index in `window.frames`.
        index: u32,
    },
    /// Translate a point of child frame `index` into this frame's viewport and check that the
    /// frame's element is what is hit there.
    FrameHit {
        /// The child's index in `window.frames`.
        index: u32,
        /// The point in the child's viewport.
        x: f64,
        /// See `x`.
        y: f64,
    },
    /// The boxes of the document's frame elements (closed shadow roots included) in its
    /// viewport, each with its index in `window.frames` and its address, and the viewport's size
    /// and scroll (for covering denied frames in a screenshot). Replies `{frames: [{index, src,
    /// holds, x, y, width, height, contentX, contentY, scaleX, scaleY, plain}], width, height,
    /// scrollX, scrollY}`.
    FrameBoxes,
    /// Before a click on `target` that may open a file chooser: catch the file input the click
    /// activates (and keep its chooser closed), unless `target` is a file input itself. Replies
    /// `{input: bool, rebound?}`.
    ArmChooser {
        /// The element to be clicked.
        target: PageTarget,
    },
    /// Set the files of upload `key` (kept in the page by [`keep_in_page`]) on `target`, or
    /// with `chooser` on the input the armed click caught (`target` then names the element
    /// clicked). Replies `{node, opener?, rebound?}`, or `{pending: true}` while no input was
    /// caught yet.
    SetFiles {
        /// The input or drop zone; with `chooser`, the element clicked.
        target: PageTarget,
        /// The upload.
        key: String,
        /// The files, in order.
        files: Vec<tabwire_protocol::files::UploadFile>,
        /// An input's files or a drop.
        mode: tabwire_protocol::files::UploadMode,
        /// The input is the one the armed click caught.
        chooser: bool,
    },
    /// Start (`on`) or stop recording the person's input in the document
    /// (js/collector/80-record.js; [`crate::recording`]). Replies `true`.
    Record {
        /// Listen from now on, or stop.
        on: bool,
    },
}

impl PageCommand {
    /// Whether the command only reads the page: the collector's `READS` (a test holds the two
    /// to each other). Any other command may change the page, so in a frame it needs the
    /// frame's origin to allow actions.
    pub fn only_reads(&self) -> bool {
        matches!(
            self,
            PageCommand::Probe
                | PageCommand::Snapshot { .. }
                | PageCommand::CountAnchors { .. }
                | PageCommand::ReadState { .. }
                | PageCommand::CheckText { .. }
                | PageCommand::CheckSelector { .. }
                | PageCommand::SelectedText
                | PageCommand::LocalStorage { .. }
                | PageCommand::Rect { .. }
                | PageCommand::Content { .. }
                | PageCommand::FrameIndex
                | PageCommand::FrameHit { .. }
                | PageCommand::Point { .. }
                | PageCommand::FrameBoxes
                | PageCommand::Record { .. }
        )
    }
}

/// How the page finds an element.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(untagged)]
pub enum PageTarget {
    /// A key from a snapshot of the document whose collector token is `doc`.
    Key {
        /// The collector's element key.
        key: u32,
        /// The collector's document token.
        doc: String,
        /// The ref as the agent wrote it, for messages.
        #[serde(rename = "ref")]
        element_ref: String,
        /// What the element looked like, so the page can find its one replacement if it was
        /// removed.
        #[serde(skip_serializing_if = "Option::is_none")]
        identity: Option<Identity>,
    },
    /// A CSS selector that must match exactly one element.
    Css {
        /// The selector.
        css: String,
    },
}

/// One field of [`PageCommand::FillForm`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub struct PageField {
    /// The field.
    pub target: PageTarget,
    /// Text (or an option's value/text), or a checkbox/radio state.
    pub value: tabwire_protocol::FieldValue,
}

/// The arguments object the page receives: the command plus the redaction marker, passed in
/// so the protocol crate stays the single source of truth for it.
#[derive(Serialize)]
struct Args<'a> {
    redacted: &'static str,
    #[serde(flatten)]
    command: &'a PageCommand,
}

/// What `runInPage` resolves to.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Injection {
    result: Option<String>,
    document_id: String,
    /// The URL of the document that answered (`location.href` in the collector's world,
    /// which the page cannot change without navigating).
    href: Option<String>,
}

/// The page's JSON answer: exactly one of the two.
#[derive(Deserialize)]
struct Reply<T> {
    value: Option<T>,
    error: Option<PageError>,
}

#[derive(Deserialize)]
struct PageError {
    code: ErrorCode,
    message: String,
}

/// A successful page answer and the document it came from.
#[derive(Debug)]
pub struct InPage<T> {
    /// The command's result.
    pub value: T,
    /// Chrome's ID of the document the command ran in.
    pub document_id: String,
    /// The size of the page's JSON answer, for the log.
    pub bytes: usize,
    /// How long reading that answer took, for the log.
    pub parse_ms: f64,
}

/// What to say when the frame a command is for no longer exists.
#[derive(Debug, Clone, Copy)]
pub enum MissingFrame<'a> {
    /// The frame was named by the request (`frameId`): the argument is wrong now.
    Requested,
    /// The frame was named by a ref: the ref is stale.
    OfRef(&'a str),
}

/// Runs `command` in frame `frame` (0: the top document) of `tab`.
pub async fn run<T: DeserializeOwned>(
    tab: TabId,
    frame: u32,
    command: &PageCommand,
    missing: MissingFrame<'_>,
) -> Result<InPage<T>, OpError> {
    // A read of a tab's page is judged on the URL of the document that answered, which the
    // collector reports beside its answer, before anything of the answer is read: the
    // judgement a `getFrame` before the call gave, without its round trip (~0.3–1 ms, on every
    // snapshot), and on the document that ran rather than the one there a moment before.
    // Anything that may change the page is judged before it runs, as is a frame's read (a
    // frame is judged with its ancestors).
    let judged_after = frame == crate::refs::TOP_FRAME && command.only_reads();
    if !judged_after {
        check_frame(tab, frame, command).await?;
    }
    let args = serde_json::to_string(&Args {
        redacted: REDACTED,
        command,
    })
    .map_err(|e| OpError::new(ErrorCode::Internal, format!("encoding page arguments: {e}")))?;
    let injection = match chrome::call(run_in_page(tab, frame, &collector_build(), &args)).await {
        Ok(injection) => injection,
        Err(failure) => {
            // Chrome's words can hold the page's URL: a read judged after the call is judged
            // before they are passed on.
            if judged_after {
                check_frame(tab, frame, command).await?;
            }
            return Err(if is_missing_frame(&failure.message) {
                missing_frame_error(tab, frame, missing)
            } else {
                injection_error(&failure.message)
            });
        }
    };
    let injection: Injection = chrome::from_js(injection).map_err(|e| {
        OpError::new(
            ErrorCode::Internal,
            format!("reading the injection result: {e}"),
        )
    })?;
    let Some(json) = injection.result else {
        return Err(OpError::new(
            ErrorCode::TabUnresponsive,
            "The page gave no answer: it was probably replaced by a navigation while tabwire \
             was reading it. Retry once the page has loaded.",
        ));
    };
    if judged_after {
        judge_answer(tab, frame, need_of(command), injection.href.as_deref())?;
    }
    let bytes = json.len();
    let parse_started = crate::timer::now_ms();
    let value = parse_reply(&json)?;
    Ok(InPage {
        value,
        document_id: injection.document_id,
        bytes,
        parse_ms: crate::timer::now_ms() - parse_started,
    })
}

/// One frame's answer to [`run_all`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FrameInjection {
    frame_id: u32,
    result: Option<String>,
}

/// Runs `command` in several frames of `tab` with one injection; returns each frame's answer
/// that parsed, by frame ID. Fails as a whole when Chrome refuses any of the frames.
pub async fn run_all<T: DeserializeOwned>(
    tab: TabId,
    frames: &[u32],
    command: &PageCommand,
) -> Result<Vec<(u32, T)>, OpError> {
    // A frame the policy closes is left out, as one that does not answer is (one read of the
    // tab's frames judges them all).
    let views = if crate::policy::allows_everything() {
        None
    } else {
        Some(crate::policy::frame_views(tab).await?)
    };
    let mut allowed = Vec::with_capacity(frames.len());
    for &frame in frames {
        let judged = match &views {
            None => Ok(None),
            Some(views) => crate::policy::check_view(tab, views, frame, need_of(command)),
        };
        if admit_frame(tab, frame, judged).is_ok() {
            allowed.push(frame);
        }
    }
    let frames = allowed.as_slice();
    let args = serde_json::to_string(&Args {
        redacted: REDACTED,
        command,
    })
    .map_err(|e| OpError::new(ErrorCode::Internal, format!("encoding page arguments: {e}")))?;
    let injections = chrome::call(run_in_frames(
        tab,
        frames.to_vec(),
        &collector_build(),
        &args,
    ))
    .await
    .map_err(|failure| injection_error(&failure.message))?;
    let injections: Vec<FrameInjection> = chrome::from_js(injections).map_err(|e| {
        OpError::new(
            ErrorCode::Internal,
            format!("reading the injection results: {e}"),
        )
    })?;
    Ok(injections
        .into_iter()
        .filter_map(|i| Some((i.frame_id, parse_reply(&i.result?).ok()?)))
        .collect())
}

/// Whether the policy lets `command` run in frame `frame` of `tab`, judged by what the frame
/// shows now (after a redirect or a navigation since the request began): reads need its origin
/// to allow reads, anything else actions. On an `ask` origin the top document may be acted on
/// only when this very request was approved for that origin (`approvals::admitted`), so a batch
/// that navigated elsewhere asks again; in a subframe it is refused: approvals are asked for a
/// tab's own page only (open the frame's page in a tab of its own).
async fn check_frame(tab: TabId, frame: u32, command: &PageCommand) -> Result<(), OpError> {
    let judged = crate::policy::check_frame(tab, frame, need_of(command)).await;
    admit_frame(tab, frame, judged)
}

/// What a command needs: a page's storage needs its origin to allow sensitive reads (as the
/// storage tools ask up front), other reads reads, anything else actions.
fn need_of(command: &PageCommand) -> Need {
    match command {
        // A recording holds what a person types.
        PageCommand::LocalStorage { .. } | PageCommand::Record { .. } => Need::SensitiveRead,
        command if command.only_reads() => Need::Read,
        _ => Need::Act,
    }
}

/// The policy's judgement of a frame for a command (see [`check_frame`]) as a go-ahead or the
/// error to answer.
fn admit_frame(
    tab: TabId,
    frame: u32,
    judged: Result<Option<String>, OpError>,
) -> Result<(), OpError> {
    match judged? {
        None => Ok(()),
        Some(origin) if frame == 0 && crate::approvals::admitted(tab, &origin) => Ok(()),
        Some(origin) if frame == 0 => Err(OpError::new(
            ErrorCode::OriginBlocked,
            format!(
                "The page is now on {origin}, where actions need a person's approval, and this \
                 call was not approved there (it started on another page); nothing more was \
                 done. Call again to ask."
            ),
        )),
        Some(origin) => Err(OpError::new(
            ErrorCode::OriginBlocked,
            format!(
                "Frame {frame} shows {origin}, where actions need a person's approval, which is \
                 asked only for a tab's own page: open the frame's page in a tab of its own."
            ),
        )),
    }
}

/// Whether Chrome refused because the frame does not exist (any more).
fn is_missing_frame(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("no frame with id")
}

/// The error for a frame that no longer exists. The top frame is never gone from a tab that
/// has one: a tab without it has not committed its first document yet.
pub fn missing_frame_error(tab: TabId, frame: u32, missing: MissingFrame<'_>) -> OpError {
    match missing {
        MissingFrame::Requested if frame == crate::refs::TOP_FRAME => {
            crate::policy::still_loading(tab)
        }
        MissingFrame::Requested => OpError::new(
            ErrorCode::InvalidArgument,
            format!(
                "Tab {tab} has no frame {frame} (it was removed, or the page navigated). Call \
                 list_frames to see the tab's frames."
            ),
        ),
        MissingFrame::OfRef(element_ref) => OpError::new(
            ErrorCode::StaleRef,
            format!(
                "{element_ref} is stale: its frame no longer exists (it was removed, or the page \
                 navigated). Call list_frames and take a new snapshot of the frame."
            ),
        ),
    }
}

/// Judges a read of a tab's page on `href`, the URL of the document that answered (see
/// [`run`]), before anything of its answer is read: a refused document's answer, value or
/// error (even a parse error's words), is never looked at, and an answer that does not say
/// which document it came from is not trusted.
fn judge_answer(tab: TabId, frame: u32, need: Need, href: Option<&str>) -> Result<(), OpError> {
    let Some(href) = href else {
        return Err(OpError::new(
            ErrorCode::Internal,
            "tabwire's page script did not say which page answered",
        ));
    };
    admit_frame(tab, frame, crate::policy::judge_url(href, need))
}

/// Parses the page's JSON answer: its value, or its error.
fn parse_reply<T: DeserializeOwned>(json: &str) -> Result<T, OpError> {
    let reply: Reply<T> = serde_json::from_str(json).map_err(|e| {
        OpError::new(
            ErrorCode::Internal,
            format!("tabwire's page script sent an answer it could not read: {e}"),
        )
    })?;
    match (reply.value, reply.error) {
        (_, Some(error)) => Err(OpError::new(error.code, error.message)),
        (Some(value), None) => Ok(value),
        (None, None) => Err(OpError::new(
            ErrorCode::Internal,
            "tabwire's page script answered with neither a value nor an error",
        )),
    }
}

/// Maps Chrome's refusal to inject a script into an error code and advice.
pub fn injection_error(message: &str) -> OpError {
    let lower = message.to_ascii_lowercase();
    if lower.contains("no tab with id") {
        return OpError::new(
            ErrorCode::TabNotFound,
            "The tab no longer exists. Call list_tabs to see the open tabs.",
        );
    }
    if lower.contains("error page") {
        return OpError::new(
            ErrorCode::RestrictedPage,
            "The tab is showing Chrome's error page (its last navigation failed), which cannot \
             be scripted. Navigate it to a page that loads.",
        );
    }
    if lower.contains("frame") && lower.contains("removed") {
        return OpError::new(
            ErrorCode::TabUnresponsive,
            "The page was replaced while tabwire was reading it. Retry once it has loaded.",
        );
    }
    let restricted = [
        "cannot access",
        "cannot be scripted",
        "chrome://",
        "chrome-extension://",
        "extensions gallery",
        "permission",
    ];
    let detail = if restricted.iter().any(|needle| lower.contains(needle)) {
        "Chrome does not let extensions script this page (chrome:// pages, the Chrome Web \
         Store, other extensions' pages and similar are off limits)"
    } else {
        "Chrome refused to run tabwire's script in this page"
    };
    OpError::new(
        ErrorCode::RestrictedPage,
        format!(
            "{detail}: {message} Navigate the tab to an ordinary web page, or use another tab."
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_carry_the_command_and_the_redaction_marker() {
        let command = PageCommand::Type {
            target: PageTarget::Key {
                key: 4,
                doc: "t".into(),
                element_ref: "@e2".into(),
                identity: None,
            },
            text: "hi".into(),
            clear: true,
            allow_readonly: false,
        };
        let json = serde_json::to_value(Args {
            redacted: REDACTED,
            command: &command,
        })
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"redacted": "••••", "command": "type",
                "target": {"key": 4, "doc": "t", "ref": "@e2"}, "text": "hi", "clear": true, "allowReadonly": false})
        );
        let css = serde_json::to_value(PageTarget::Css { css: "#a".into() }).unwrap();
        assert_eq!(css, serde_json::json!({"css": "#a"}));
        let snapshot = serde_json::to_value(Args {
            redacted: REDACTED,
            command: &PageCommand::Snapshot {
                scope: None,
                known: vec![3, 4],
                window: None,
                include_hidden: false,
                viewer: Some(2),
                query: None,
                check: false,
            },
        })
        .unwrap();
        assert_eq!(
            snapshot,
            serde_json::json!({"redacted": "••••", "command": "snapshot", "known": [3, 4], "viewer": 2})
        );
        let content = serde_json::to_value(Args {
            redacted: REDACTED,
            command: &PageCommand::Content {
                scope: Some(PageTarget::Css { css: "main".into() }),
                format: ContentFormat::Html,
            },
        })
        .unwrap();
        assert_eq!(content["format"], "html");
        assert_eq!(content["scope"]["css"], "main");
    }

    #[test]
    fn every_page_command_has_a_handler_and_every_handler_a_command() {
        // Meeting an unknown variant, serde lists the ones it knows.
        let error = serde_json::from_str::<PageCommand>(r#"{"command":"?"}"#)
            .unwrap_err()
            .to_string();
        let listed = error
            .split_once("expected one of ")
            .map(|(_, names)| names)
            .unwrap_or_else(|| panic!("serde listed no variants: {error}"));
        let variants: std::collections::BTreeSet<&str> =
            listed.split('`').skip(1).step_by(2).collect();
        // The collector's table: `name,` or `name: handler,` lines between its braces.
        let table = COLLECTOR_SOURCE
            .split_once("const COMMANDS = {")
            .and_then(|(_, rest)| rest.split_once("};"))
            .map(|(table, _)| table)
            .expect("the collector has a COMMANDS table");
        let handlers: std::collections::BTreeSet<&str> = table
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with("//"))
            .map(|line| line.split([':', ',']).next().unwrap_or(line).trim())
            .collect();
        assert!(variants.len() > 20, "{variants:?}");
        assert_eq!(variants, handlers);
    }

    #[test]
    fn the_commands_that_only_read_are_the_collectors_reads() {
        // The collector forgets its walk after any command but these; the policy lets only
        // these run in a frame that allows reads but not actions. The names `only_reads`
        // matches, in the collector's spelling:
        let only_reads = [
            "probe",
            "snapshot",
            "countAnchors",
            "readState",
            "checkText",
            "checkSelector",
            "selectedText",
            "localStorage",
            "rect",
            "content",
            "frameIndex",
            "frameHit",
            "point",
            "frameBoxes",
            "record",
        ];
        let reads = COLLECTOR_SOURCE
            .split_once("const READS = new Set([")
            .and_then(|(_, rest)| rest.split_once("])"))
            .map(|(list, _)| list)
            .expect("the collector has a READS set");
        let mut reads: Vec<&str> = reads
            .split(',')
            .map(|name| name.trim().trim_matches('\''))
            .collect();
        reads.sort_unstable();
        let mut expected = only_reads.to_vec();
        expected.sort_unstable();
        assert_eq!(reads, expected);
        assert!(PageCommand::FrameIndex.only_reads());
        assert!(!PageCommand::ScrollFrame { index: 0 }.only_reads());
    }

    /// A read of a tab's page is judged on the document that answered: a denied one's answer,
    /// whether a value or an error (which would tell what the page holds), gets no further,
    /// and an answer that does not say which document it came from is not trusted.
    #[test]
    fn a_denied_document_is_refused_on_its_own_url() {
        use tabwire_protocol::policy::Policy;
        crate::policy::set_operator(Policy::hosted_default().denying_files());
        let refused = judge_answer(1, 0, Need::Read, Some("file:///home/a/notes.txt")).unwrap_err();
        assert_eq!(refused.code, ErrorCode::OriginBlocked, "{refused:?}");
        let unsaid = judge_answer(1, 0, Need::Read, None).unwrap_err();
        assert_eq!(unsaid.code, ErrorCode::Internal, "{unsaid:?}");
        judge_answer(1, 0, Need::Read, Some("https://example.com/")).unwrap();
        // A page's storage is a sensitive read, refused where those are (hosted's default).
        let storage = PageCommand::LocalStorage {
            filter: None,
            max_chars: 10,
        };
        let sensitive = judge_answer(1, 0, need_of(&storage), Some("https://example.com/"));
        assert_eq!(sensitive.unwrap_err().code, ErrorCode::OriginBlocked);
        crate::policy::set_operator(Policy::default());
    }

    #[test]
    fn the_collector_is_its_parts_in_name_order() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/js/collector");
        let mut parts: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "js"))
            .collect();
        parts.sort();
        let joined: String = parts
            .iter()
            .map(|part| std::fs::read_to_string(part).unwrap())
            .collect();
        assert_eq!(joined, COLLECTOR_SOURCE);
        assert!(COLLECTOR_SOURCE.starts_with("// The in-page collector of tabwire"));
        assert!(COLLECTOR_SOURCE.trim_end().ends_with("};"));
    }

    #[test]
    fn missing_frames_are_stale_refs_or_bad_arguments() {
        assert!(is_missing_frame("No frame with id 7 in tab 3."));
        let stale = missing_frame_error(3, 7, MissingFrame::OfRef("@f7e2"));
        assert_eq!(stale.code, ErrorCode::StaleRef);
        assert!(
            stale.message.starts_with("@f7e2 is stale"),
            "{}",
            stale.message
        );
        let bad = missing_frame_error(3, 7, MissingFrame::Requested);
        assert_eq!(bad.code, ErrorCode::InvalidArgument);
        assert!(bad.message.contains("list_frames"));
        // The top frame is no argument of the caller's: a tab without one is still loading.
        let loading = missing_frame_error(3, 0, MissingFrame::Requested);
        assert_eq!(loading.code, ErrorCode::TabLoading);
        assert!(
            loading.message.contains("still loading"),
            "{}",
            loading.message
        );
    }

    #[test]
    fn page_errors_keep_their_code() {
        let err = parse_reply::<u32>(r#"{"error":{"code":"SELECTOR_NOT_UNIQUE","message":"3"}}"#)
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::SelectorNotUnique);
        assert_eq!(parse_reply::<u32>(r#"{"value":7}"#).unwrap(), 7);
        assert_eq!(
            parse_reply::<u32>("{}").unwrap_err().code,
            ErrorCode::Internal
        );
        assert_eq!(
            parse_reply::<u32>("not json").unwrap_err().code,
            ErrorCode::Internal
        );
    }

    #[test]
    fn chrome_refusals_map_to_codes() {
        assert_eq!(
            injection_error("Cannot access a chrome:// URL").code,
            ErrorCode::RestrictedPage
        );
        assert_eq!(
            injection_error("The extensions gallery cannot be scripted.").code,
            ErrorCode::RestrictedPage
        );
        assert_eq!(
            injection_error("No tab with id: 12.").code,
            ErrorCode::TabNotFound
        );
        assert_eq!(
            injection_error("Frame with ID 0 is showing error page").code,
            ErrorCode::RestrictedPage
        );
        assert_eq!(
            injection_error("Frame with ID 0 was removed.").code,
            ErrorCode::TabUnresponsive
        );
        let message = injection_error("Cannot access contents of url \"about:x\".").message;
        assert!(message.contains("ordinary web page"), "{message}");
    }
}
