//! `take_screenshot` (SPEC §6): an image of a tab's viewport, whole page or one element, as MCP
//! image content, optionally with an observation of the same document.
//!
//! The image goes to the model as image content; `structuredContent` carries only its facts
//! (size, format, bytes, document), never the base64.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tabwire_protocol::{ErrorCode, ImageFormat, Screenshot, ScreenshotRequest, SnapshotBudget};

use super::act::observation_tail;
use super::args::{
    DEFAULT_OBSERVE_CHARS, DEFAULT_OBSERVE_NODES, ScreenshotFormat, in_range, optional_selector,
};
use super::envelope::{Image, ToolError, ToolOutput};
use super::fence::Rendering;
use super::routing::ToolContext;

const DEADLINE: Duration = Duration::from_secs(15);
const DEFAULT_QUALITY: u32 = 60;
pub(super) const DEFAULT_MAX_WIDTH: u32 = 800;
/// The observation taken with a screenshot: the same small window as after an action.
const SNAPSHOT_BUDGET: SnapshotBudget = SnapshotBudget {
    max_nodes: DEFAULT_OBSERVE_NODES,
    max_chars: DEFAULT_OBSERVE_CHARS,
};

/// Arguments of take_screenshot.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScreenshotArgs {
    #[schemars(extend("default" = "webp"))]
    pub format: Option<ScreenshotFormat>,
    /// 0-100; not png.
    #[schemars(extend("default" = 60))]
    pub quality: Option<u32>,
    /// 100-2000.
    #[schemars(extend("default" = 800))]
    pub max_width: Option<u32>,
    pub full_page: Option<bool>,
    pub selector: Option<String>,
    /// Also observe the page.
    pub with_snapshot: Option<bool>,
}

pub const TAKE_SCREENSHOT: &str = "A tab (background ones too) as an image: viewport, fullPage or \
one element.";

pub async fn take_screenshot(
    ctx: &ToolContext,
    args: ScreenshotArgs,
) -> Result<ToolOutput, ToolError> {
    let request = screenshot_request(&args)?;
    screenshot_output(ctx.call(request, DEADLINE).await?)
}

/// Checks the arguments and applies the defaults.
fn screenshot_request(args: &ScreenshotArgs) -> Result<ScreenshotRequest, ToolError> {
    let format = args.format.map_or(ImageFormat::Webp, ImageFormat::from);
    let quality = match (format, args.quality) {
        (ImageFormat::Png, Some(_)) => {
            return Err(ToolError::invalid(
                "quality applies to jpeg and webp; png is lossless",
            ));
        }
        (ImageFormat::Png, None) => None,
        (_, quality) => Some(in_range(quality, DEFAULT_QUALITY, 0, 100, "quality")? as u8),
    };
    let max_width = in_range(args.max_width, DEFAULT_MAX_WIDTH, 100, 2000, "maxWidth")?;
    let full_page = args.full_page.unwrap_or(false);
    let target = optional_selector(args.selector.as_deref(), "selector")?;
    if full_page && target.is_some() {
        return Err(ToolError::invalid(
            "selector captures one element and fullPage the whole page; give one of them",
        ));
    }
    Ok(ScreenshotRequest {
        format,
        quality,
        max_width,
        full_page,
        target,
        with_snapshot: args
            .with_snapshot
            .unwrap_or(false)
            .then_some(SNAPSHOT_BUDGET),
    })
}

/// The image as image content; its facts (not its bytes) in the data and a one-line text,
/// followed by the observation when one was taken.
fn screenshot_output(screenshot: Screenshot) -> Result<ToolOutput, ToolError> {
    let bytes = image_bytes("take_screenshot", &screenshot.data)?;
    let (name, mime_type) = match screenshot.format {
        ImageFormat::Png => ("png", "image/png"),
        ImageFormat::Jpeg => ("jpeg", "image/jpeg"),
        ImageFormat::Webp => ("webp", "image/webp"),
    };
    let mut data = Map::new();
    for (key, value) in [
        ("tabId", json!(screenshot.tab_id)),
        ("width", json!(screenshot.width)),
        ("height", json!(screenshot.height)),
        ("cssWidth", json!(screenshot.css_width)),
        ("cssHeight", json!(screenshot.css_height)),
        ("format", json!(name)),
        ("bytes", json!(bytes)),
        ("documentId", json!(screenshot.document_id)),
    ] {
        data.insert(key.into(), value);
    }
    let mut text = format!(
        "tab {} screenshot: {}x{} {name}, {}",
        screenshot.tab_id,
        screenshot.width,
        screenshot.height,
        human_size(bytes)
    );
    if (screenshot.css_width, screenshot.css_height) != (screenshot.width, screenshot.height) {
        text.push_str(&format!(
            " (of {}x{} CSS px)",
            screenshot.css_width, screenshot.css_height
        ));
    }
    let mut text: Rendering = text.into();
    if !screenshot.covered_frames.is_empty() {
        // What the image does not show, and why; the origins are the frames' (a page chose
        // what to frame), so they are page text.
        data.insert(
            "coveredFrames".into(),
            json!(
                screenshot
                    .covered_frames
                    .iter()
                    .map(|f| json!({"frameId": f.frame_id, "origin": f.origin}))
                    .collect::<Vec<_>>()
            ),
        );
        text.push("\nPainted over (frames the policy does not let agents read):");
        for (i, frame) in screenshot.covered_frames.iter().enumerate() {
            text.push(&format!(
                "{} frame {} ",
                if i == 0 { "" } else { "," },
                frame.frame_id
            ));
            text.push_page(&frame.origin);
        }
    }
    observation_tail(&mut data, &mut text, screenshot.observation.as_ref(), None);
    Ok(
        ToolOutput::new(Value::Object(data), text).with_image(Image {
            data: screenshot.data,
            mime_type,
        }),
    )
}

/// The size of an image a peer returned (any peer's screenshot), or the error for an empty one.
pub(super) fn image_bytes(tool: &str, base64: &str) -> Result<u64, ToolError> {
    if base64.is_empty() {
        return Err(ToolError::new(
            ErrorCode::Internal,
            format!("{tool}: the peer returned an empty image"),
        ));
    }
    Ok(decoded_len(base64))
}

/// The number of bytes base64 text decodes to (padding and whitespace aside).
fn decoded_len(base64: &str) -> u64 {
    let symbols = base64
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .count() as u64;
    symbols * 3 / 4
}

/// `512 B`, `14.2 KB`, `3.1 MB`.
pub(super) fn human_size(bytes: u64) -> String {
    const KB: f64 = 1024.0;
    let value = bytes as f64;
    if value < KB {
        format!("{bytes} B")
    } else if value < KB * KB {
        format!("{:.1} KB", value / KB)
    } else {
        format!("{:.1} MB", value / (KB * KB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::envelope::success;
    use tabwire_protocol::{ElementRef, Target};

    fn args() -> ScreenshotArgs {
        ScreenshotArgs {
            format: None,
            quality: None,
            max_width: None,
            full_page: None,
            selector: None,
            with_snapshot: None,
        }
    }

    #[test]
    fn defaults_are_a_small_webp() {
        let request = screenshot_request(&args()).unwrap();
        assert_eq!(
            request,
            ScreenshotRequest {
                format: ImageFormat::Webp,
                quality: Some(60),
                max_width: 800,
                full_page: false,
                target: None,
                with_snapshot: None,
            }
        );
        let request = screenshot_request(&ScreenshotArgs {
            format: Some(ScreenshotFormat::Png),
            selector: Some("@e4".into()),
            with_snapshot: Some(true),
            ..args()
        })
        .unwrap();
        assert_eq!(request.quality, None);
        assert_eq!(request.target, Some(Target::Ref(ElementRef::top(4))));
        assert_eq!(request.with_snapshot, Some(SNAPSHOT_BUDGET));
    }

    #[test]
    fn bad_arguments_are_refused_with_their_name() {
        let cases = [
            (
                ScreenshotArgs {
                    format: Some(ScreenshotFormat::Png),
                    quality: Some(80),
                    ..args()
                },
                "png is lossless",
            ),
            (
                ScreenshotArgs {
                    quality: Some(101),
                    ..args()
                },
                "quality must be between 0 and 100",
            ),
            (
                ScreenshotArgs {
                    max_width: Some(99),
                    ..args()
                },
                "maxWidth",
            ),
            (
                ScreenshotArgs {
                    max_width: Some(2001),
                    ..args()
                },
                "maxWidth",
            ),
            (
                ScreenshotArgs {
                    full_page: Some(true),
                    selector: Some("#chart".into()),
                    ..args()
                },
                "give one of them",
            ),
        ];
        for (args, expected) in cases {
            let error = screenshot_request(&args).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidArgument);
            assert!(error.message.contains(expected), "{}", error.message);
        }
        let error = screenshot_request(&ScreenshotArgs {
            selector: Some("text=Go".into()),
            ..args()
        })
        .unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidSelector);
    }

    fn screenshot() -> Screenshot {
        Screenshot {
            tab_id: 4,
            format: ImageFormat::Jpeg,
            // 13 bytes.
            data: "/9j/4AAQSkZJRgABAQ==".into(),
            width: 800,
            height: 500,
            css_width: 1280,
            css_height: 800,
            document_id: "D1".into(),
            observation: None,
            covered_frames: Vec::new(),
        }
    }

    #[test]
    fn the_image_is_image_content_and_not_in_the_structured_data() {
        let output = screenshot_output(screenshot()).unwrap();
        assert_eq!(
            output.text,
            "tab 4 screenshot: 800x500 jpeg, 13 B (of 1280x800 CSS px)"
        );
        let result = serde_json::to_value(success(output)).unwrap();
        assert_eq!(
            result["content"][1],
            json!({"type": "image", "data": "/9j/4AAQSkZJRgABAQ==", "mimeType": "image/jpeg"})
        );
        assert_eq!(
            result["structuredContent"],
            json!({"ok": true, "data": {
                "tabId": 4, "width": 800, "height": 500, "cssWidth": 1280, "cssHeight": 800,
                "format": "jpeg", "bytes": 13, "documentId": "D1"
            }})
        );
        assert!(!result["structuredContent"].to_string().contains("/9j/"));
    }

    #[test]
    fn an_observation_taken_with_it_is_rendered_and_compact() {
        let mut shot = screenshot();
        shot.css_width = 800;
        shot.css_height = 500;
        shot.observation = Some(crate::mcp::act::tests::observation());
        let output = screenshot_output(shot).unwrap();
        assert_eq!(
            output.text,
            "tab 4 screenshot: 800x500 jpeg, 13 B\ntab 4 \"X\" http://x/ (version 2)\n@e1 button \"Go\""
        );
        let observation = &output.data["observation"];
        assert_eq!(observation["version"], 2);
        assert!(observation.get("documentId").is_none());
        assert!(observation.get("tabId").is_none());
        assert!(output.image.is_some());
    }

    #[test]
    fn covered_frames_are_named_in_the_data_and_the_text() {
        let mut shot = screenshot();
        shot.covered_frames = vec![
            tabwire_protocol::CoveredFrame {
                frame_id: 5,
                origin: "https://bank.example".into(),
            },
            tabwire_protocol::CoveredFrame {
                frame_id: 9,
                origin: "http://localhost:8080".into(),
            },
        ];
        let output = screenshot_output(shot).unwrap();
        assert_eq!(
            output.data["coveredFrames"],
            json!([{"frameId": 5, "origin": "https://bank.example"},
                   {"frameId": 9, "origin": "http://localhost:8080"}])
        );
        assert!(
            output.text.as_str().ends_with(
                "\nPainted over (frames the policy does not let agents read): frame 5 \
                 https://bank.example, frame 9 http://localhost:8080"
            ),
            "{}",
            output.text.as_str()
        );
        // The origins are the frames': fenced as page text.
        assert!(output.text.quotes_page());
        // None covered: no field, no line.
        let plain = screenshot_output(screenshot()).unwrap();
        assert!(plain.data.get("coveredFrames").is_none());
        assert!(!plain.text.as_str().contains("Painted over"));
    }

    #[test]
    fn an_empty_image_is_an_internal_error() {
        let mut shot = screenshot();
        shot.data.clear();
        assert_eq!(
            screenshot_output(shot).unwrap_err().code,
            ErrorCode::Internal
        );
    }

    #[test]
    fn sizes_read_easily() {
        assert_eq!(decoded_len("QUJD"), 3);
        assert_eq!(decoded_len("QUI="), 2);
        assert_eq!(decoded_len("QQ=="), 1);
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(14_540), "14.2 KB");
        assert_eq!(human_size(3 * 1024 * 1024), "3.0 MB");
    }
}
