//! Printing a tool's answer, and the exit code it gives.
//!
//! - Text (the default, terminal or pipe): the tool's text content exactly as the hub wrote it
//!   for a model, page-text fences included (a shell agent is a model too, and its stdout is a
//!   pipe); an image is a line saying where it was written (`--out FILE`) or that it was left
//!   out.
//! - JSON (`--output json`, for scripts): exactly one line, the tool's structured envelope
//!   (`{"ok":true,"data":…}` or `{"ok":false,"error":…}`), page text in it unfenced. Image bytes
//!   are never in it; `--out FILE` writes them, and stderr says so.
//!
//! Exit code 0 when the tool succeeded, 1 when it failed (`isError`).

use std::io::Write;
use std::path::Path;

use base64::Engine;
use rmcp::model::CallToolResult;
use serde_json::{Value, json};
use tabwire_protocol::terminal_safe;

use crate::error::CliError;

/// How this invocation prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// For a person (or an agent reading a terminal).
    Text,
    /// One JSON line, for a script.
    Json,
}

/// Prints a tool's result; returns the exit code (0 ok, 1 tool error).
pub fn print_result(
    result: &CallToolResult,
    format: Format,
    out: Option<&Path>,
) -> Result<u8, CliError> {
    let failed = result.is_error == Some(true);
    let mut notes = Vec::new();
    let images: Vec<(&str, &str)> = result
        .content
        .iter()
        .filter_map(|block| block.as_image())
        .map(|image| (image.data.as_str(), image.mime_type.as_str()))
        .collect();
    let mut image_lines = Vec::new();
    match (images.as_slice(), out) {
        ([], Some(path)) => notes.push(format!(
            "the answer holds no image; nothing was written to {}",
            path.display()
        )),
        ([], None) => {}
        ([(data, mime), rest @ ..], Some(path)) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data)
                .map_err(|error| {
                    CliError::connection(format!(
                        "the hub sent an image that is not base64: {error}"
                    ))
                })?;
            write_private(path, &bytes)
                .map_err(|error| CliError::usage(format!("--out {}: {error}", path.display())))?;
            image_lines.push(format!(
                "[image {mime}, {} bytes, written to {}]",
                bytes.len(),
                path.display()
            ));
            if !rest.is_empty() {
                notes.push(format!("{} more image(s) left out", rest.len()));
            }
        }
        (images, None) => {
            for (data, mime) in images {
                // Base64's length tells the size without decoding.
                let size = data.len() / 4 * 3;
                image_lines.push(format!(
                    "[image {mime}, about {size} bytes, not shown; pass --out FILE to save it]"
                ));
            }
        }
    }
    let text: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
        .collect();
    let mut stdout = std::io::stdout().lock();
    match format {
        Format::Text => {
            let mut printed = text.join("\n");
            for line in &image_lines {
                if !printed.is_empty() {
                    printed.push('\n');
                }
                printed.push_str(line);
            }
            let printed = terminal_safe(&printed);
            let _ = writeln!(stdout, "{}", printed.trim_end_matches('\n'));
        }
        Format::Json => {
            let envelope = result.structured_content.clone().unwrap_or_else(|| {
                // Every tabwire tool answers with an envelope; another server might not.
                if failed {
                    json!({"ok": false, "error": {"code": "TOOL_ERROR", "message": text.join("\n")}})
                } else {
                    json!({"ok": true, "data": {"text": text.join("\n")}})
                }
            });
            let _ = writeln!(stdout, "{}", json_line(&envelope));
            notes.extend(image_lines);
        }
    }
    let _ = stdout.flush();
    for note in notes {
        eprintln!("tabwire: {}", terminal_safe(&note));
    }
    Ok(if failed { 1 } else { 0 })
}

/// Prints a failure of the CLI itself (exit 2): on stderr always, and as one JSON line on
/// stdout when the output is JSON.
pub fn print_error(error: &CliError, format: Format) -> u8 {
    eprintln!("{}", terminal_safe(&error.for_person()));
    if format == Format::Json {
        emit(&json_line(&error.envelope()));
    }
    error.exit_code()
}

/// Prints a JSON document (JSON output) or text (text output).
pub fn print_either(format: Format, json: &Value, text: &str) {
    match format {
        Format::Json => emit(&json_line(json)),
        Format::Text => emit(terminal_safe(text).trim_end_matches('\n')),
    }
}

/// Writes a line to stdout. A reader that went away (`tabwire tools | head`) is no error
/// worth a panic: what it wanted it has.
fn emit(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

/// `value` on one line. serde_json escapes C0 controls but not DEL or the C1 controls, which
/// some terminals obey: those are escaped too (`\u009b`), still the same JSON.
fn json_line(value: &Value) -> String {
    let line = value.to_string();
    if !line.chars().any(|c| ('\u{7f}'..='\u{9f}').contains(&c)) {
        return line;
    }
    line.chars()
        .map(|c| {
            if ('\u{7f}'..='\u{9f}').contains(&c) {
                format!("\\u{:04x}", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Writes `bytes` to `path` as a new file only this user may read (a screenshot of a logged-in
/// page), through a fresh file beside it renamed over `path`: a link or another user's file
/// already at `path` is replaced, never written through.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("names no file"))?;
    let mut fresh = name.to_os_string();
    fresh.push(format!(".tabwire-{}", std::process::id()));
    let fresh = path.with_file_name(fresh);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&fresh)
        .and_then(|mut file| file.write_all(bytes))
        .and_then(|()| std::fs::rename(&fresh, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&fresh);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_escape_the_controls_serde_json_leaves() {
        let value = json!({"t": "a\u{9b}2J\u{7f}\u{1b}"});
        let line = json_line(&value);
        assert_eq!(line, r#"{"t":"a\u009b2J\u007f\u001b"}"#);
        assert_eq!(serde_json::from_str::<Value>(&line).unwrap(), value);
    }

    #[test]
    fn out_files_are_private_and_replace_a_link_instead_of_following_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("tabwire-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let out = dir.join("shot.png");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        write_private(&out, b"png").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(&out).unwrap(), b"png");
        let mode = std::fs::symlink_metadata(&out)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
