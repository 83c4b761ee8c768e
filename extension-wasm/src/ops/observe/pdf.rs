//! `save_pdf` (issue 26): the tab's page printed by Chrome (`Page.printToPDF` on tabwire's
//! debugger session of that tab, so the tab need not be the one shown), read back in bounded
//! pieces of the stream Chrome returns it in.
//!
//! A PDF holds every frame of the page as printed, and nothing can be painted over in it as in
//! a screenshot: a page showing a frame of an origin agents may not read is refused whole.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use tabwire_protocol::files::{MAX_PDF_BYTES, PdfDocument, PdfRequest};
use tabwire_protocol::policy::Need;
use tabwire_protocol::{ErrorCode, OpError, TabId};

use crate::checkpoint::Checkpoint;
use crate::chrome_tabs::get_tab;
use crate::{chrome, debugger, policy};

/// How much of the stream one `IO.read` asks for.
const READ_BYTES: u32 = 1 << 20;

#[derive(Deserialize)]
struct Printed {
    stream: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Piece {
    data: String,
    #[serde(default)]
    base64_encoded: bool,
    eof: bool,
}

/// Prints `tab` to PDF.
pub async fn print(
    tab: TabId,
    request: PdfRequest,
    checkpoint: &Checkpoint,
) -> Result<PdfDocument, OpError> {
    if !policy::allows_everything() {
        let views = policy::frame_views(tab).await?;
        for &frame in views.keys() {
            if policy::check_view(tab, &views, frame, Need::Read).is_err() {
                return Err(OpError::new(
                    ErrorCode::OriginBlocked,
                    "The page shows a frame of an origin agents may not read, and a PDF would \
                     hold it; nothing was printed. Take a screenshot (denied frames are \
                     painted over) or read the page instead.",
                ));
            }
        }
    }
    let shown = get_tab(tab).await?;
    let mut params = serde_json::json!({
        "landscape": request.landscape,
        "printBackground": request.print_background,
        "transferMode": "ReturnAsStream",
    });
    if let Some(ranges) = &request.page_ranges {
        params["pageRanges"] = ranges.clone().into();
    }
    let printed = debugger::send(tab, "Page.printToPDF", &params)
        .await
        .map_err(|error| {
            if error.message.to_ascii_lowercase().contains("range") {
                OpError::new(
                    ErrorCode::InvalidArgument,
                    format!(
                        "Chrome refused pageRanges: {} (pages past the end, or a range that \
                         ends before it starts)",
                        error.message
                    ),
                )
            } else {
                error
            }
        })?;
    let Printed { stream } = chrome::from_js(printed).map_err(unreadable)?;
    let read = read_stream(tab, &stream, checkpoint).await;
    // The stream is Chrome's to free, whatever happened.
    let _ = debugger::send(tab, "IO.close", &serde_json::json!({ "handle": stream })).await;
    let bytes = read?;
    Ok(PdfDocument {
        tab_id: tab,
        url: shown.url.unwrap_or_default(),
        title: shown.title.unwrap_or_default(),
        bytes: bytes.len() as u64,
        data: STANDARD.encode(&bytes),
    })
}

fn unreadable(failure: chrome::JsFailure) -> OpError {
    OpError::new(
        ErrorCode::Internal,
        format!("reading Chrome's PDF: {}", failure.message),
    )
}

/// Reads Chrome's stream `handle` to its end, at most [`MAX_PDF_BYTES`].
async fn read_stream(
    tab: TabId,
    handle: &str,
    checkpoint: &Checkpoint,
) -> Result<Vec<u8>, OpError> {
    let mut bytes = Vec::new();
    loop {
        checkpoint.check_alive()?;
        let params = serde_json::json!({ "handle": handle, "size": READ_BYTES });
        let piece = debugger::send(tab, "IO.read", &params).await?;
        let piece: Piece = chrome::from_js(piece).map_err(unreadable)?;
        if piece.base64_encoded {
            let decoded = STANDARD.decode(piece.data.as_bytes()).map_err(|e| {
                OpError::new(ErrorCode::Internal, format!("Chrome's PDF stream: {e}"))
            })?;
            bytes.extend_from_slice(&decoded);
        } else {
            bytes.extend_from_slice(piece.data.as_bytes());
        }
        if bytes.len() as u64 > MAX_PDF_BYTES {
            return Err(OpError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "The PDF is larger than {} MB, the most save_pdf returns; print fewer \
                     pages (pageRanges).",
                    MAX_PDF_BYTES >> 20
                ),
            ));
        }
        if piece.eof {
            return Ok(bytes);
        }
    }
}
