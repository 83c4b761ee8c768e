//! Files into pages (issue 26): what an upload tells the extension, and the chunks its bytes
//! travel in.
//!
//! The hub never sends an upload's bytes in one message: it sends them as [`UploadChunk`]s of
//! at most [`CHUNK_BYTES`] (each its own request, so other calls and the heartbeat go on
//! between them), which the extension keeps for the caller, and then the
//! [`crate::Action::Upload`] that names them. The extension checks that every byte arrived
//! before anything is set.

use serde::{Deserialize, Serialize};

/// The most bytes of a file one chunk carries (before base64): a chunk's request stays under
/// NATS's default 1 MiB message, which a call between hub replicas travels in.
pub const CHUNK_BYTES: usize = 512 << 10;
/// The longest upload ID.
pub const MAX_UPLOAD_ID_LEN: usize = 64;
/// The most files one upload sets.
pub const MAX_UPLOAD_FILES: usize = 20;
/// The longest file name (in characters).
pub const MAX_FILE_NAME_LEN: usize = 255;
/// The longest MIME type.
pub const MAX_MIME_LEN: usize = 100;
/// The most bytes the extension keeps for uploads not yet set, over all callers: above the
/// hub's largest per-call cap it allows (`--max-upload-mb`, at most 100 MB), so one call
/// always fits.
pub const MAX_KEPT_BYTES: u64 = 128 << 20;

/// How an upload reaches the element.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum UploadMode {
    /// Set the files of the `<input type=file>` named, or of the one a click on the element
    /// (a styled button) opens a file chooser for.
    #[default]
    Input,
    /// Drop the files on the element (a drop zone), as a person dragging them from the desktop.
    Drop,
}

/// One file of an upload, without its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UploadFile {
    /// Its name, as the page will see it (no directory).
    pub name: String,
    /// Its MIME type; empty when unknown.
    #[serde(default)]
    pub mime_type: String,
    /// Its size in bytes: the chunks sent for it add up to this.
    pub size: u64,
}

/// Part of one file's bytes, kept by the extension for `upload` until the action that names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UploadChunk {
    /// The upload it belongs to (the hub's random ID).
    pub upload: String,
    /// The file's index in the upload.
    pub file: u32,
    /// Where in the file these bytes start.
    pub offset: u64,
    /// The bytes, base64 (standard alphabet, padded): at most [`CHUNK_BYTES`] decoded.
    pub data: String,
}

/// Answer to an [`UploadChunk`]: how many bytes of the upload the extension keeps now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChunkKept {
    /// The upload's bytes kept so far, over all its files.
    pub kept: u64,
}

/// The largest PDF `save_pdf` returns, in bytes. It reaches the client base64 in one MCP
/// message, and MCP clients built on rmcp drop messages over 16 MiB (its stdio lines and
/// streamable HTTP events alike): 10 MiB is 13.3 MiB of base64.
pub const MAX_PDF_BYTES: u64 = 10 << 20;

/// Print a tab's page to PDF (`Page.printToPDF` on its debugger session, without switching
/// tabs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PdfRequest {
    /// Landscape instead of portrait.
    #[serde(default)]
    pub landscape: bool,
    /// The pages to print, e.g. `1-3, 5` (the hub checked the syntax); all when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_ranges: Option<String>,
    /// Print background colours and images.
    #[serde(default)]
    pub print_background: bool,
}

/// A page printed to PDF.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PdfDocument {
    /// The tab printed.
    pub tab_id: crate::TabId,
    /// The page's URL.
    pub url: String,
    /// The page's title.
    pub title: String,
    /// The PDF, base64.
    pub data: String,
    /// Its size in bytes.
    pub bytes: u64,
}

/// A download the browser reports, as the session whose action started it may see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DownloadInfo {
    /// Chrome's download ID.
    pub id: u32,
    /// The file's name (without its directory).
    pub name: String,
    /// Where it came from (after redirects).
    pub url: String,
    /// The tab whose page started it.
    pub tab_id: crate::TabId,
    /// Its MIME type, from the response; empty when unknown.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mime_type: String,
    /// Its size in bytes, when the server said or once it is complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// How far it is.
    pub state: DownloadState,
    /// Why it stopped, for an interrupted one (Chrome's reason, e.g. `USER_CANCELED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Where it is on the disk of the browser's computer, once Chrome named the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// How far a download is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DownloadState {
    /// Still arriving.
    InProgress,
    /// Waiting for the person to accept a file Chrome warns about.
    Waiting,
    /// On disk, whole.
    Complete,
    /// Stopped (see `error`).
    Interrupted,
}

/// The downloads the calling session's actions started: all of them (the newest first), or
/// one, waited for until it is complete, with its bytes when asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DownloadsRequest {
    /// One download; all when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u32>,
    /// With `id`: how long to wait for it to complete.
    #[serde(default)]
    pub wait_ms: u32,
    /// With `id`: its bytes too (base64), at most [`MAX_DOWNLOAD_BYTES`].
    #[serde(default)]
    pub bytes: bool,
}

/// The most bytes of a download returned in one answer: as for a PDF, one MCP message.
pub const MAX_DOWNLOAD_BYTES: u64 = MAX_PDF_BYTES;
/// The most downloads a session's list keeps.
pub const MAX_DOWNLOADS_LISTED: usize = 50;

/// Answer to a [`DownloadsRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Downloads {
    /// The downloads, the newest first (one, for a request with `id`).
    pub downloads: Vec<DownloadInfo>,
    /// The bytes, base64, when asked for one complete download.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// How the bytes were read: `data` (the URL held them), `blob` (the page's object, still
    /// there), `refetched` (the URL fetched again, with the profile's cookies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_by: Option<String>,
}

/// Whether `ranges` is a page range list as Chrome's printing takes it: numbers and `a-b`
/// ranges (either end may be left out) separated by commas.
pub fn check_page_ranges(ranges: &str) -> Result<(), String> {
    let well_formed = ranges.len() <= 100
        && ranges.split(',').all(|part| {
            let part = part.trim();
            let number = |s: &str| s.is_empty() || s.bytes().all(|b| b.is_ascii_digit());
            match part.split_once('-') {
                Some((from, to)) => {
                    number(from.trim())
                        && number(to.trim())
                        && !(from.trim().is_empty() && to.trim().is_empty())
                }
                None => !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()),
            }
        });
    if well_formed {
        Ok(())
    } else {
        Err(format!(
            "pageRanges {ranges:?} is not a list of pages such as \"1-3, 5\""
        ))
    }
}

/// Whether `name` can be a file's name in an upload: not empty, no directory separators, no
/// control characters, not `.` or `..`, at most [`MAX_FILE_NAME_LEN`] characters.
pub fn check_file_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "." || name == ".." {
        return Err(format!("{name:?} is not a file name"));
    }
    if name.chars().count() > MAX_FILE_NAME_LEN {
        return Err(format!(
            "a file name is longer than {MAX_FILE_NAME_LEN} characters"
        ));
    }
    if name.contains(['/', '\\']) || name.chars().any(char::is_control) {
        return Err(format!(
            "file name {name:?} holds a slash or a control character: give the name alone"
        ));
    }
    Ok(())
}

/// Whether `mime` can be a file's MIME type: empty, or `type/subtype` in the characters MIME
/// types are made of (parameters after `;` allowed), at most [`MAX_MIME_LEN`] bytes.
pub fn check_mime_type(mime: &str) -> Result<(), String> {
    if mime.is_empty() {
        return Ok(());
    }
    let essence = mime.split(';').next().unwrap_or_default().trim();
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    let well_formed = essence
        .split_once('/')
        .is_some_and(|(kind, sub)| token(kind) && token(sub));
    if mime.len() > MAX_MIME_LEN || !well_formed || mime.chars().any(char::is_control) {
        return Err(format!(
            "mimeType {mime:?} is not a MIME type such as text/plain or image/png"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_names_alone() {
        assert!(check_file_name("cv.pdf").is_ok());
        assert!(check_file_name("résumé 2026.pdf").is_ok());
        for bad in ["", ".", "..", "a/b", "..\\x", "a\nb", &"x".repeat(256)] {
            assert!(check_file_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn mime_types_are_checked_for_shape() {
        for good in ["", "text/plain", "image/svg+xml", "text/csv; charset=utf-8"] {
            assert!(check_mime_type(good).is_ok(), "{good:?}");
        }
        for bad in [
            "text",
            "/plain",
            "text/",
            "a b/c",
            "text/plain\n",
            &"a/".repeat(60),
        ] {
            assert!(check_mime_type(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn page_ranges_are_numbers_and_ranges() {
        for good in ["1", "1-3", "1-3, 5", "2-", "-4", " 7 , 9-10 "] {
            assert!(check_page_ranges(good).is_ok(), "{good:?}");
        }
        for bad in ["", "a", "1,,2", "-", "1-2-3", "1;2", &"1,".repeat(60)] {
            assert!(check_page_ranges(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn chunks_round_trip_and_refuse_unknown_fields() {
        let chunk = UploadChunk {
            upload: "u1".into(),
            file: 0,
            offset: 0,
            data: "aGVsbG8=".into(),
        };
        let json = serde_json::to_string(&chunk).unwrap();
        assert_eq!(serde_json::from_str::<UploadChunk>(&json).unwrap(), chunk);
        assert!(
            serde_json::from_str::<UploadChunk>(
                r#"{"upload":"u","file":0,"offset":0,"data":"","x":1}"#
            )
            .is_err()
        );
    }
}

/// The browser's clipboard, as a person's copy and paste see it: read (no `write`), or
/// replaced with `write`'s text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClipboardRequest {
    /// The text to put on the clipboard; `None` reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<String>,
}

/// The most characters of text the clipboard tool reads or writes at once.
pub const MAX_CLIPBOARD_CHARS: usize = 1 << 20;

/// Answer to a [`ClipboardRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClipboardText {
    /// What the clipboard holds as plain text (a read); `None` after a write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The characters read or written.
    pub length: usize,
}
