//! Screenshots at default settings: on each fixture page, each server's screenshot tool called
//! as an agent calls it first, with no arguments (the viewport), and with `fullPage: true` where
//! the tool's `tools/list` schema has that parameter.
//!
//! - tabwire: `take_screenshot` (webp, quality 60, at most 800 pixels wide, the viewport).
//! - the peer: `browser_take_screenshot` (png at CSS scale, the viewport).
//!
//! Per call: the image's bytes (its base64 decoded), its format and pixel size from the image's
//! own header ([`crate::image`]), the response as received (bytes, and characters for the ~tokens
//! estimate, base64 included), and the p50 round trip of [`SHOT_ROUNDS`] calls after a warm-up.

use anyhow::{Result, bail};
use serde_json::{Value, json};

use super::server::{Server, ServerKind};
use super::session::{Exchange, clip};
use super::stats::{Outcome, time_calls};
use crate::image::{decode_base64, header};

/// Timed calls per page and shot (after one warm-up call).
pub const SHOT_ROUNDS: usize = 5;

/// What a screenshot covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shot {
    /// No arguments: the viewport.
    Viewport,
    /// `{"fullPage": true}`.
    FullPage,
}

impl Shot {
    /// Both, in report order.
    pub const ALL: [Shot; 2] = [Shot::Viewport, Shot::FullPage];

    /// The arguments of the call.
    pub fn args(self) -> Value {
        match self {
            Shot::Viewport => json!({}),
            Shot::FullPage => json!({"fullPage": true}),
        }
    }
}

/// A server's screenshot tool, and whether it takes `fullPage`.
#[derive(Debug, Clone)]
pub struct ShotTool {
    /// The tool's name.
    pub name: &'static str,
    /// `Ok` when its schema has `fullPage`, otherwise why the full-page shot is not taken.
    pub full_page: Result<(), String>,
}

/// One screenshot call on one page.
#[derive(Debug, Clone)]
pub struct ShotFigures {
    /// The format the image's header declares (the MIME type's subtype when unreadable).
    pub format: String,
    /// Width and height in pixels from the image's header, when it could be read.
    pub pixels: Option<(u32, u32)>,
    /// The image's size: its base64 decoded.
    pub image_bytes: usize,
    /// The JSON-RPC response line as received.
    pub response_bytes: usize,
    /// Characters of that line (for ~tokens, chars / 4).
    pub response_chars: usize,
    /// Median round trip, milliseconds.
    pub p50_ms: f64,
}

/// The screenshot tool of `server`; for the peer, `fullPage` is looked up in its `tools/list`.
pub async fn tool_of(server: &Server) -> ShotTool {
    match server.kind() {
        ServerKind::Tabwire => ShotTool {
            name: "take_screenshot",
            full_page: Ok(()),
        },
        ServerKind::Playwright => {
            let name = "browser_take_screenshot";
            let full_page = match server.session().input_schema(name).await {
                Ok(Some(schema)) if schema["properties"]["fullPage"].is_object() => Ok(()),
                Ok(Some(_)) => Err(format!("{name} has no fullPage parameter in tools/list")),
                Ok(None) => Err(format!("no {name} in tools/list")),
                Err(error) => Err(format!("{error:#}")),
            };
            ShotTool { name, full_page }
        }
    }
}

/// Every shot `tool` can take, on the page loaded in `server`'s current (active) tab.
pub async fn measure(server: &Server, tool: &ShotTool) -> Vec<(Shot, Outcome<ShotFigures>)> {
    let mut shots = Vec::with_capacity(Shot::ALL.len());
    for shot in Shot::ALL {
        let figures = match (shot, &tool.full_page) {
            (Shot::FullPage, Err(why)) => Err(why.clone()),
            _ => measure_shot(server, tool.name, shot)
                .await
                .map_err(|error| one_line(&format!("{error:#}"))),
        };
        shots.push((shot, figures));
    }
    shots
}

async fn measure_shot(server: &Server, tool: &str, shot: Shot) -> Result<ShotFigures> {
    let (timed, last) = time_calls(SHOT_ROUNDS, || call(server, tool, shot)).await?;
    let image = &last.images[0];
    let bytes = decode_base64(&image.data);
    let read = header(&bytes);
    Ok(ShotFigures {
        format: match read {
            Some(read) => read.format.name().to_owned(),
            None => image
                .mime_type
                .strip_prefix("image/")
                .unwrap_or(&image.mime_type)
                .to_owned(),
        },
        pixels: read.map(|read| (read.width, read.height)),
        image_bytes: bytes.len(),
        response_bytes: timed.bytes,
        response_chars: last.chars,
        p50_ms: timed.p50_ms,
    })
}

/// One screenshot call that must succeed with exactly one image.
async fn call(server: &Server, tool: &str, shot: Shot) -> Result<Exchange> {
    let reply = server.session().call(tool, shot.args()).await?;
    if reply.is_error || reply.structured["ok"] == false {
        bail!("{tool} {} failed: {}", shot.args(), clip(&reply.text));
    }
    if reply.images.len() != 1 {
        bail!(
            "{tool} {} answered with {} images, not one",
            shot.args(),
            reply.images.len()
        );
    }
    if reply.images[0].data.is_empty() {
        bail!("{tool} {} answered with an empty image", shot.args());
    }
    Ok(reply)
}

/// An error as a short line of the report: terminal colour codes (the peer's call logs carry
/// them) dropped, whitespace runs folded, at most [`ERROR_CHARS`] characters.
fn one_line(error: &str) -> String {
    const ERROR_CHARS: usize = 120;
    let mut plain = String::with_capacity(error.len());
    let mut chars = error.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters… final byte (@ to ~).
            if chars.next_if_eq(&'[').is_some() {
                while chars.next().is_some_and(|c| !('@'..='~').contains(&c)) {}
            }
            continue;
        }
        plain.push(c);
    }
    let folded = plain.split_whitespace().collect::<Vec<_>>().join(" ");
    match folded.char_indices().nth(ERROR_CHARS) {
        Some((at, _)) => format!("{}…", &folded[..at]),
        None => folded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_lose_colour_codes_and_length() {
        assert_eq!(
            one_line("Timeout.\nCall log:\n\u{1b}[2m  - taking page screenshot\u{1b}[22m\n"),
            "Timeout. Call log: - taking page screenshot"
        );
        let long = "x".repeat(200);
        assert_eq!(one_line(&long).chars().count(), 121);
    }

    #[test]
    fn shots_are_called_with_their_arguments() {
        assert_eq!(Shot::Viewport.args().to_string(), "{}");
        assert_eq!(Shot::FullPage.args().to_string(), r#"{"fullPage":true}"#);
    }
}
