//! Files into and out of pages (issue 26, docs/files.md): `upload_file`, `save_pdf`,
//! `get_downloads` and `clipboard`.
//!
//! Every file is read (a path, from the directories the operator allows) or decoded (bytes the
//! client sent) and checked against the caps before anything is sent, so a refused upload sets
//! nothing. The bytes then go to the browser as chunks of at most
//! [`CHUNK_BYTES`](tabwire_protocol::files::CHUNK_BYTES), one request each, which the
//! extension keeps for this caller; the upload action that names them comes last and goes
//! through the policy, the lease and the observation like any other action. The audit log
//! gets each file's name and size.

use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use schemars::JsonSchema;
use serde::Deserialize;
use tabwire_protocol::files::{
    CHUNK_BYTES, ClipboardRequest, DownloadInfo, DownloadsRequest, MAX_CLIPBOARD_CHARS,
    MAX_UPLOAD_FILES, PdfRequest, UploadChunk, UploadFile, check_file_name, check_mime_type,
    check_page_ranges,
};
use tabwire_protocol::{ActRequest, Action, ErrorCode};

use super::act::acted_output;
use super::args::{self, ActionOptions, mirror};
use super::envelope::{Blob, ToolError, ToolOutput};
use super::fence::Rendering;
use super::routing::ToolContext;
use crate::uploads::Refusal;

/// `timeoutMs` of an upload when the caller gives none: 25 MB move in well under it.
const UPLOAD_TIMEOUT_MS: u32 = 30_000;
/// The longest a chunk's request may take.
const CHUNK_DEADLINE: Duration = Duration::from_secs(10);

/// Arguments of upload_file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UploadArgs {
    /// The file input, the element whose click opens one, or (drop) the drop zone.
    pub selector: String,
    /// 1-20.
    pub files: Vec<FileArg>,
    pub mode: Option<UploadMode>,
}

/// A file: {path, mimeType?} (local hub, --upload-dir) or {name, mimeType?, dataBase64}.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileArg {
    pub path: Option<String>,
    pub name: Option<String>,
    pub mime_type: Option<String>,
    pub data_base64: Option<String>,
}

mirror! {
    /// Default input.
    UploadMode => files::UploadMode {
        /// Set an input's files.
        Input,
        /// Drop them on the element.
        Drop,
    }
}

pub const UPLOAD_FILE: &str = "Give files to a file input (or the one a click on the element \
opens), or drop them on a drop zone.";

/// One file, read and checked.
struct Ready {
    file: UploadFile,
    bytes: Vec<u8>,
}

/// The handler of upload_file.
pub async fn upload_file(
    ctx: &ToolContext,
    args: UploadArgs,
    options: ActionOptions,
) -> Result<ToolOutput, ToolError> {
    let started = Instant::now();
    let options = options.resolve(UPLOAD_TIMEOUT_MS)?;
    let target = args::target(&args.selector, "selector")?;
    let mode = args.mode.map(Into::into).unwrap_or_default();
    // Reading files blocks: off the runtime's threads.
    let hub = ctx.hub.clone();
    let files = tokio::task::spawn_blocking(move || read_files(&hub.uploads, args.files))
        .await
        .map_err(|e| ToolError::new(ErrorCode::Internal, format!("reading the files: {e}")))??;
    ctx.trace.lock().unwrap().files = files
        .iter()
        .map(|ready| (ready.file.name.clone(), ready.file.size))
        .collect();
    let deadline = Duration::from_millis(u64::from(options.timeout_ms));
    let remaining = || deadline.saturating_sub(started.elapsed());
    let upload = crate::random::hex::<16>();
    // One browser for every request of the call, even if the session's selection changes.
    let connection = ctx.connection()?;
    for (index, ready) in files.iter().enumerate() {
        for (offset, chunk) in (0..)
            .step_by(CHUNK_BYTES)
            .zip(ready.bytes.chunks(CHUNK_BYTES))
        {
            let left = remaining();
            if left.is_zero() {
                return Err(out_of_time(options.timeout_ms));
            }
            let chunk = UploadChunk {
                upload: upload.clone(),
                file: index as u32,
                offset,
                data: STANDARD.encode(chunk),
            };
            ctx.call_on(
                &connection,
                ctx.route.tab_id,
                chunk,
                left.min(CHUNK_DEADLINE),
            )
            .await?;
        }
    }
    let left = remaining();
    if left.is_zero() {
        return Err(out_of_time(options.timeout_ms));
    }
    let request = ActRequest {
        action: Action::Upload {
            target,
            upload,
            files: files.into_iter().map(|ready| ready.file).collect(),
            mode,
        },
        observe: options.observe,
    };
    let acted = ctx
        .call_on(&connection, ctx.route.tab_id, request, left)
        .await?;
    Ok(acted_output(acted))
}

/// Reads or decodes every file, checking names, types and the caps; nothing is sent before all
/// of them pass.
fn read_files(
    uploads: &crate::uploads::Uploads,
    files: Vec<FileArg>,
) -> Result<Vec<Ready>, ToolError> {
    if files.is_empty() || files.len() > MAX_UPLOAD_FILES {
        return Err(ToolError::invalid(format!(
            "files takes 1 to {MAX_UPLOAD_FILES} files"
        )));
    }
    let refused = |refusal: Refusal| ToolError::new(refusal.code, refusal.message);
    let mut total = 0u64;
    let mut ready = Vec::with_capacity(files.len());
    for (index, file) in files.into_iter().enumerate() {
        let at = |message: String| ToolError::invalid(format!("files[{index}]: {message}"));
        let (name, bytes) = match (file.path, file.data_base64) {
            // A file read from the disk keeps its own name, which the person asked and the
            // audit log then name.
            (Some(_), None) if file.name.is_some() => {
                return Err(at(
                    "a file read from a path keeps its own name: give name only with dataBase64"
                        .into(),
                ));
            }
            (Some(path), None) => uploads.read(&path, total).map_err(refused)?,
            (None, Some(data)) => {
                let name = file.name.ok_or_else(|| {
                    at("dataBase64 needs name, the file's name as the page sees it".into())
                })?;
                // Base64 holds 3 bytes in 4 characters: refuse what cannot fit before decoding.
                let at_least = (data.len() as u64 / 4) * 3;
                let at_least = at_least.saturating_sub(2);
                if let Some(refusal) = uploads.over_cap(&name, at_least, total + at_least) {
                    return Err(refused(refusal));
                }
                let bytes = STANDARD.decode(data.trim()).map_err(|e| {
                    at(format!(
                        "dataBase64 is not base64 (standard alphabet, padded): {e}"
                    ))
                })?;
                (name, bytes)
            }
            (Some(_), Some(_)) => {
                return Err(at("give path or dataBase64, not both".into()));
            }
            (None, None) => {
                return Err(at(
                    "give path (a file on this computer) or {name, dataBase64}".into(),
                ));
            }
        };
        check_file_name(&name).map_err(at)?;
        let mime_type = match file.mime_type {
            Some(given) => given,
            None => mime_type_of(&name).to_owned(),
        };
        check_mime_type(&mime_type).map_err(at)?;
        let size = bytes.len() as u64;
        total += size;
        if let Some(refusal) = uploads.over_cap(&name, size, total) {
            return Err(refused(refusal));
        }
        ready.push(Ready {
            file: UploadFile {
                name,
                mime_type,
                size,
            },
            bytes,
        });
    }
    Ok(ready)
}

/// The MIME type a browser gives a file of this name picked from the disk, for the common
/// kinds (an input's `accept` is checked against it); empty when unknown, as a browser does.
fn mime_type_of(name: &str) -> &'static str {
    let extension = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match extension.as_deref() {
        Some("txt") => "text/plain",
        Some("csv") => "text/csv",
        Some("html" | "htm") => "text/html",
        Some("css") => "text/css",
        Some("js" | "mjs") => "text/javascript",
        Some("json") => "application/json",
        Some("xml") => "text/xml",
        Some("pdf") => "application/pdf",
        Some("zip") => "application/zip",
        Some("gz") => "application/gzip",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("svg") => "image/svg+xml",
        Some("heic") => "image/heic",
        Some("mp3") => "audio/mpeg",
        Some("wav") => "audio/wav",
        Some("mp4") => "video/mp4",
        Some("webm") => "video/webm",
        Some("doc") => "application/msword",
        Some("docx") => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        Some("xls") => "application/vnd.ms-excel",
        Some("xlsx") => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        Some("pptx") => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        _ => "",
    }
}

fn out_of_time(timeout_ms: u32) -> ToolError {
    ToolError::new(
        ErrorCode::TabUnresponsive,
        format!(
            "the files did not reach the browser within timeoutMs ({timeout_ms} ms); nothing \
             was set. Retry with a longer timeoutMs."
        ),
    )
}

/// Arguments of save_pdf.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PdfArgs {
    pub landscape: Option<bool>,
    /// e.g. "1-3, 5".
    pub page_ranges: Option<String>,
    pub print_background: Option<bool>,
}

pub const SAVE_PDF: &str = "The tab's page printed to PDF (background tabs too), as an embedded \
resource.";

/// How long Chrome may take to print: long pages take seconds.
const PDF_DEADLINE: Duration = Duration::from_secs(60);

/// The handler of save_pdf.
pub async fn save_pdf(ctx: &ToolContext, args: PdfArgs) -> Result<ToolOutput, ToolError> {
    if let Some(ranges) = &args.page_ranges {
        check_page_ranges(ranges).map_err(ToolError::invalid)?;
    }
    let request = PdfRequest {
        landscape: args.landscape.unwrap_or(false),
        page_ranges: args.page_ranges,
        print_background: args.print_background.unwrap_or(false),
    };
    let pdf = ctx.call(request, PDF_DEADLINE).await?;
    let name = format!("tab-{}-{}.pdf", pdf.tab_id, crate::random::hex::<4>());
    let uri = format!("tabwire:pdf/{name}");
    let data = serde_json::json!({
        "tabId": pdf.tab_id,
        "url": pdf.url,
        "title": pdf.title,
        "bytes": pdf.bytes,
        "mimeType": "application/pdf",
        "resource": uri,
    });
    let mut text = Rendering::hub(format!("tab {} ", pdf.tab_id));
    text.push_page(&format!("\"{}\" {}", pdf.title, pdf.url));
    text.push(&format!(
        " printed to PDF: {} bytes, embedded as {uri}",
        pdf.bytes
    ));
    Ok(ToolOutput::new(data, text).with_resource(Blob {
        uri,
        mime_type: "application/pdf".into(),
        data: pdf.data,
    }))
}

/// Arguments of get_downloads.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DownloadsArgs {
    /// One download; without it, all of this session's.
    pub id: Option<u32>,
    /// With id: wait up to this long (0-60000) for it to complete.
    pub wait_ms: Option<u32>,
    /// With id: its bytes as an embedded resource (default: hosted hub yes, local no).
    pub bytes: Option<bool>,
}

pub const GET_DOWNLOADS: &str = "Downloads this session's actions started: all, or one (id) \
with its path or bytes.";

/// The longest `waitMs`.
const MAX_DOWNLOAD_WAIT_MS: u32 = 60_000;

/// The handler of get_downloads.
pub async fn get_downloads(
    ctx: &ToolContext,
    args: DownloadsArgs,
) -> Result<ToolOutput, ToolError> {
    let hosted = ctx.hub.is_hosted();
    if args.id.is_none() && (args.wait_ms.is_some() || args.bytes.is_some()) {
        return Err(ToolError::invalid(
            "waitMs and bytes are about one download: give its id",
        ));
    }
    let wait_ms = args::in_range(args.wait_ms, 0, 0, MAX_DOWNLOAD_WAIT_MS, "waitMs")?;
    let request = DownloadsRequest {
        id: args.id,
        wait_ms,
        bytes: args.id.is_some() && args.bytes.unwrap_or(hosted),
    };
    let deadline = Duration::from_millis(u64::from(wait_ms) + 30_000);
    let mut answer = ctx.call(request, deadline).await?;
    if hosted {
        // A path on someone else's computer says nothing useful and something about them.
        for download in &mut answer.downloads {
            download.path = None;
        }
    }
    let mut text = Rendering::hub(match (args.id, answer.downloads.len()) {
        (None, 0) => "No downloads started by this session's actions.".to_owned(),
        (None, n) => format!("{n} downloads, newest first:"),
        (Some(_), _) => String::new(),
    });
    for (i, download) in answer.downloads.iter().enumerate() {
        if args.id.is_none() || i > 0 {
            text.push("\n");
        }
        render_download(&mut text, download);
    }
    let mut data = serde_json::json!({ "downloads": answer.downloads });
    let Some(bytes) = answer.data else {
        return Ok(ToolOutput::new(data, text));
    };
    let download = &answer.downloads[0];
    let uri = format!("tabwire:download/{}", download.id);
    data["resource"] = uri.clone().into();
    data["readBy"] = answer.read_by.clone().into();
    text.push(&format!(
        "\nIts bytes are embedded as {uri} (read by: {}).",
        answer.read_by.as_deref().unwrap_or("?")
    ));
    let mime_type = if download.mime_type.is_empty() {
        "application/octet-stream".to_owned()
    } else {
        download.mime_type.clone()
    };
    Ok(ToolOutput::new(data, text).with_resource(Blob {
        uri,
        mime_type,
        data: bytes,
    }))
}

/// Arguments of clipboard.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClipboardArgs {
    /// Text to copy; without it, the clipboard is read.
    pub write: Option<String>,
}

pub const CLIPBOARD: &str = "Reads the browser's clipboard, or copies write to it (paste: \
press_key v with modifiers 2).";

/// The handler of clipboard: the text travels, the audit log keeps only its length.
pub async fn clipboard(ctx: &ToolContext, args: ClipboardArgs) -> Result<ToolOutput, ToolError> {
    if let Some(text) = &args.write {
        let length = text.chars().count();
        if length > MAX_CLIPBOARD_CHARS {
            return Err(ToolError::invalid(format!(
                "write holds {length} characters, more than {MAX_CLIPBOARD_CHARS}; nothing was \
                 copied"
            )));
        }
    }
    let writing = args.write.is_some();
    let answer = ctx
        .call(
            ClipboardRequest { write: args.write },
            // A write on an `ask` origin waits for the person's answer.
            Duration::from_secs(60),
        )
        .await?;
    ctx.trace.lock().unwrap().clipboard =
        Some((if writing { "written" } else { "read" }, answer.length));
    match answer.text {
        Some(text) => {
            let mut rendering = Rendering::hub(format!(
                "The clipboard holds {} characters:\n",
                answer.length
            ));
            rendering.push_page(&text);
            Ok(ToolOutput::new(
                serde_json::json!({"text": text, "length": answer.length}),
                rendering,
            ))
        }
        None => Ok(ToolOutput::new(
            serde_json::json!({"length": answer.length}),
            Rendering::hub(format!(
                "Copied {} characters to the clipboard.",
                answer.length
            )),
        )),
    }
}

/// One download as a line: its ID, name (the page's words), state, size, path.
fn render_download(text: &mut Rendering, download: &DownloadInfo) {
    text.push(&format!("download {} ", download.id));
    text.push_page(&format!("\"{}\"", download.name));
    let mut facts = vec![format!("{:?}", download.state).to_lowercase()];
    if let Some(size) = download.size {
        facts.push(format!("{size} bytes"));
    }
    if let Some(error) = &download.error {
        facts.push(format!("error {error}"));
    }
    facts.push(format!("tab {}", download.tab_id));
    text.push(&format!(" ({})", facts.join(", ")));
    if let Some(path) = &download.path {
        text.push(" at ");
        text.push_page(path);
    }
}
