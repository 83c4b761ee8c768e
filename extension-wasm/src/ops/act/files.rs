//! Uploads (issue 26, docs/files.md): an upload's bytes, kept by [`crate::uploads`] since their
//! chunks arrived, go into tabwire's world of the target's frame a chunk per script call (so
//! other tabs' calls go on between them), and the collector builds the files there and sets
//! them — on the file input named, on the one a click on the named element opens, or as a drop
//! on the element.
//!
//! A click that opens a file chooser is caught in the page: the collector's listener takes the
//! input the click activates and keeps the chooser closed. Chrome's own interception
//! (`Page.setInterceptFileChooserDialog`) is on meanwhile, so a chooser the listener cannot see
//! (an input outside the document, `showPicker()`) never opens on the person's screen either;
//! tabwire then says it cannot reach that input.

use serde::Deserialize;
use tabwire_protocol::files::{
    DownloadState, Downloads, DownloadsRequest, MAX_DOWNLOAD_BYTES, UploadFile, UploadMode,
};
use tabwire_protocol::policy::Need;
use tabwire_protocol::{
    ActionFacts, ClickMode, ErrorCode, MouseButton, OpError, Outcome, TabId, Target,
};

use super::pointer;
use super::steps::{Rebinds, change_target};
use crate::checkpoint::Checkpoint;
use crate::chrome_tabs::resolve_tab;
use crate::ops::target::{self, PreparedTarget};
use crate::page::{self, PageCommand};
use crate::refs::TOP_FRAME;
use crate::timer::sleep;
use crate::{debugger, downloads, uploads};
use tabwire_observation::{Detail, PageNode, render_node};

/// How long after the click the input it opens is waited for.
const CHOOSER_WAIT_MS: f64 = 2000.0;
/// How often the page is asked whether it caught the input.
const CHOOSER_POLL_MS: f64 = 25.0;

#[derive(Deserialize)]
struct Armed {
    input: bool,
    rebound: Option<u32>,
}

impl Rebinds for Armed {
    fn rebound(&self) -> Option<u32> {
        self.rebound
    }
}

#[derive(Deserialize)]
struct FilesSet {
    #[serde(default)]
    pending: bool,
    node: Option<PageNode>,
    opener: Option<PageNode>,
    rebound: Option<u32>,
}

impl Rebinds for FilesSet {
    fn rebound(&self) -> Option<u32> {
        self.rebound
    }
}

/// What an upload may leave behind, cleared when it ends however it ends (a cancel or the
/// deadline drops its future midway): its bytes in the page, the armed chooser listener, and
/// Chrome's interception of the tab's file choosers, which would otherwise keep the person's
/// own choosers closed.
struct Leftovers {
    tab: TabId,
    frame: u32,
    key: String,
    intercepting: std::cell::Cell<bool>,
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        let (tab, frame, key) = (self.tab, self.frame, std::mem::take(&mut self.key));
        let intercepting = self.intercepting.get();
        wasm_bindgen_futures::spawn_local(async move {
            page::drop_in_page(tab, frame, &key).await;
            if intercepting {
                let off = serde_json::json!({ "enabled": false });
                let _ =
                    debugger::send_attached(tab, "Page.setInterceptFileChooserDialog", &off).await;
            }
        });
    }
}

/// What an upload is.
pub struct Upload<'a> {
    /// The input, the element that opens one, or the drop zone.
    pub target: &'a Target,
    /// The upload's ID, whose bytes [`crate::uploads`] keeps.
    pub id: &'a str,
    /// Its files.
    pub files: &'a [UploadFile],
    /// An input's files or a drop.
    pub mode: UploadMode,
}

/// Gives the upload's files to the page for `viewer`, whose chunks hold the bytes.
pub async fn upload(
    tab: TabId,
    upload: &Upload<'_>,
    viewer: &str,
    checkpoint: &Checkpoint,
) -> Result<Outcome, OpError> {
    // Taken out first: whatever happens next, the bytes are not kept twice.
    let parts = uploads::take(viewer, upload.id, upload.files)?;
    let url = resolve_tab(Some(tab)).await?.url;
    let prepared = target::prepare(tab, upload.target, TOP_FRAME)?;
    let leftovers = Leftovers {
        tab,
        frame: prepared.frame,
        key: upload.id.to_owned(),
        intercepting: std::cell::Cell::new(false),
    };
    for (file, parts) in parts.iter().enumerate() {
        for (offset, data) in parts {
            // Bytes waiting in tabwire's world change nothing the page can see: no input yet.
            checkpoint.check_alive()?;
            page::keep_in_page(tab, prepared.frame, upload.id, file as u32, *offset, data).await?;
        }
    }
    let set = |chooser: bool| PageCommand::SetFiles {
        target: prepared.page.clone(),
        key: upload.id.to_owned(),
        files: upload.files.to_vec(),
        mode: upload.mode,
        chooser,
    };
    let reply = match upload.mode {
        UploadMode::Drop => {
            change_target::<FilesSet>(tab, &prepared, &set(false), checkpoint).await?
        }
        UploadMode::Input => {
            let command = PageCommand::ArmChooser {
                target: prepared.page.clone(),
            };
            let armed = change_target::<Armed>(tab, &prepared, &command, checkpoint).await?;
            if armed.input {
                change_target::<FilesSet>(tab, &prepared, &set(false), checkpoint).await?
            } else {
                through_chooser(
                    tab,
                    upload.target,
                    &prepared,
                    set(true),
                    &leftovers,
                    checkpoint,
                )
                .await?
            }
        }
    };
    let node = reply.node.ok_or_else(|| {
        OpError::new(
            ErrorCode::Internal,
            "the page set the files but described no element",
        )
    })?;
    let line = render_node(&node, Some(&url), Detail::WithoutValue);
    let opened_by = reply
        .opener
        .map(|opener| render_node(&opener, Some(&url), Detail::WithoutValue));
    let names = upload
        .files
        .iter()
        .map(|file| format!("\"{}\" ({} bytes)", file.name, file.size))
        .collect::<Vec<_>>()
        .join(", ");
    let summary = match (upload.mode, &opened_by) {
        (UploadMode::Drop, _) => format!("Dropped {names} on {line}"),
        (UploadMode::Input, Some(opener)) => {
            format!("Gave {names} to {line}, the file input {opener} opens")
        }
        (UploadMode::Input, None) => format!("Gave {names} to {line}"),
    };
    let facts = ActionFacts::Upload {
        target: line,
        files: upload.files.to_vec(),
        mode: upload.mode,
        opened_by,
    };
    Ok(Outcome::new(tab, summary, facts))
}

/// Clicks `target` (trusted) with the page's listener armed and Chrome's file chooser
/// intercepted, and sets the files on the input the click opened.
async fn through_chooser(
    tab: TabId,
    target: &Target,
    prepared: &PreparedTarget,
    command: PageCommand,
    leftovers: &Leftovers,
    checkpoint: &Checkpoint,
) -> Result<FilesSet, OpError> {
    debugger::ensure_attached(tab).await?;
    let on = serde_json::json!({ "enabled": true });
    // Switched off again by the leftovers' clean-up, whatever ends the upload.
    leftovers.intercepting.set(true);
    debugger::send(tab, "Page.setInterceptFileChooserDialog", &on).await?;
    let choosers = debugger::choosers_opened(tab);
    pointer::click(
        tab,
        target,
        ClickMode::Trusted,
        MouseButton::Left,
        1,
        checkpoint,
    )
    .await?;
    let mut waited = 0.0;
    loop {
        let reply = change_target::<FilesSet>(tab, prepared, &command, checkpoint).await?;
        if !reply.pending {
            return Ok(reply);
        }
        if debugger::choosers_opened(tab) != choosers {
            return Err(OpError::new(
                ErrorCode::InvalidArgument,
                "The click opened a file chooser for an input outside the page's document \
                 (made in script and never added, or opened with showPicker), which tabwire \
                 cannot reach; nothing was set, and the chooser was kept closed. If the page \
                 has a drop zone, use mode drop.",
            ));
        }
        if waited >= CHOOSER_WAIT_MS {
            return Err(OpError::new(
                ErrorCode::InvalidArgument,
                "The element is not a file input, and clicking it opened no file chooser \
                 within 2 s; nothing was set. Target the <input type=file> itself (a CSS \
                 selector finds a hidden one), the button that opens it, or use mode drop for \
                 a drop zone.",
            ));
        }
        sleep(CHOOSER_POLL_MS).await;
        waited += CHOOSER_POLL_MS;
    }
}

/// How often a download waited for is looked at again.
const DOWNLOAD_POLL_MS: f64 = 100.0;

/// The downloads `viewer`'s actions started (`get_downloads`): all of them, or one, waited for
/// until complete (at most `wait_ms`), with its bytes when asked. Its bytes are a read of the
/// page that started it and of their address, judged by the policy now.
pub async fn downloads(
    request: DownloadsRequest,
    viewer: &str,
    checkpoint: &Checkpoint,
) -> Result<Downloads, OpError> {
    let Some(id) = request.id else {
        return Ok(Downloads {
            downloads: downloads::list(viewer),
            data: None,
            read_by: None,
        });
    };
    let waited_until = crate::timer::now_ms() + f64::from(request.wait_ms);
    let found = loop {
        let found = downloads::find(viewer, id)?;
        let settled = matches!(
            found.info.state,
            DownloadState::Complete | DownloadState::Interrupted
        );
        if settled || crate::timer::now_ms() >= waited_until {
            break found;
        }
        checkpoint.check_alive()?;
        sleep(DOWNLOAD_POLL_MS).await;
    };
    let (data, read_by) = if request.bytes {
        if found.info.state != DownloadState::Complete {
            return Err(OpError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "Download {id} is not complete ({:?}); its bytes can be read once it is: \
                     call again with waitMs.",
                    found.info.state
                ),
            ));
        }
        // A file's bytes are a read of the page that started it (whoever may no longer read
        // that page may not read what it handed over) and of where they come from. A plain
        // read, as a PDF of the page is: the person's file, which the page handed over, not a
        // response body fetched behind the page (docs/files.md says why).
        if found.page_url.is_empty() {
            return Err(OpError::new(
                ErrorCode::OriginBlocked,
                format!(
                    "The page that started download {id} is not known (its tab was gone before \
                     Chrome said), so the policy cannot judge a read of its bytes."
                ),
            ));
        }
        crate::policy::check_url(&found.page_url, Need::Read)?;
        if let Some(address) = downloads::judged_address(&found.url) {
            crate::policy::check_url(address, Need::Read)?;
        }
        let (data, how) = downloads::bytes(&found, MAX_DOWNLOAD_BYTES).await?;
        (Some(data), Some(how.to_owned()))
    } else {
        (None, None)
    };
    let info = found.info;
    Ok(Downloads {
        downloads: vec![info],
        data,
        read_by,
    })
}
