//! `take_screenshot`: `Page.captureScreenshot` through the tab's own debugger session, so a
//! background tab is captured where it is — no tab is selected and no window focused — and
//! captures of different tabs run side by side (each tab has its own session and queue). A
//! short screencast around the capture makes a background tab draw the frame the capture
//! needs.
//!
//! The image is scaled by Chrome itself (the clip's `scale`) so it is at most `maxWidth` device
//! pixels wide, and a full page is cut at [`MAX_HEIGHT_PX`] pixels: a screenshot never floods
//! an agent's context. A screenshot taken with an observation checks that the document did not
//! change between the two.
//!
//! A screenshot never shows a frame the policy does not let agents read ([`cover`], asked by
//! [`measure`]): where such frames are drawn is measured before and after the capture, the two must agree (else the
//! capture is taken again, and after [`CAPTURES`] tries refused), and the image — captured as
//! PNG then, so it is encoded lossily once — is painted over there ([`paint`]) before it leaves
//! the worker, and the result names them (`coveredFrames`). For the capture's duration the frame
//! elements of the documents holding such frames are hidden ([`hide`]), so a page that moves
//! one between the measurements still cannot get it drawn.

mod cover;
mod hide;
mod measure;
mod paint;

use serde::Deserialize;
use serde_json::{Value, json};
use tabwire_protocol::{
    CoveredFrame, ErrorCode, ImageFormat, OpError, Screenshot, ScreenshotRequest, SnapshotRequest,
    TabId, Target,
};

use self::cover::Rect as Clip;
use self::paint::Pixels;
use super::snapshot;
use crate::checkpoint::Checkpoint;
use crate::chrome_tabs::get_tab;
use crate::ops::target;
use crate::page::{self, MissingFrame, PageCommand};
use crate::refs::TOP_FRAME;
use crate::timer::{Either, select, sleep};
use crate::{chrome, debugger};

/// The largest image sent, as base64 (about 6 MB of image): well under the hub's message limit,
/// so one screenshot can never cost the browser its connection.
const MAX_IMAGE_BASE64: usize = 8 * 1024 * 1024;

/// Stops the capture's screencast when dropped, whatever ended the capture.
struct ScreencastGuard(TabId);

impl Drop for ScreencastGuard {
    fn drop(&mut self) {
        let tab = self.0;
        wasm_bindgen_futures::spawn_local(async move {
            let _ = debugger::send(tab, "Page.stopScreencast", &json!({})).await;
        });
    }
}

/// How long a capture may wait for Chrome to draw a frame.
const FRAME_WAIT_MS: f64 = 5000.0;

/// The tallest image a full-page screenshot produces, in pixels.
const MAX_HEIGHT_PX: f64 = 4000.0;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Viewport {
    page_x: f64,
    page_y: f64,
    client_width: f64,
    client_height: f64,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ContentSize {
    width: f64,
    height: f64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LayoutMetrics {
    css_visual_viewport: Viewport,
    #[serde(default)]
    css_layout_viewport: Viewport,
    #[serde(default)]
    layout_viewport: Viewport,
    css_content_size: ContentSize,
}

#[derive(Deserialize)]
struct Rect {
    x: f64,
    y: f64,
    width: f64,
    height: f64,
    rebound: Option<u32>,
}

#[derive(Deserialize)]
struct Captured {
    data: String,
}

/// The scale that fits `clip` into `max_width` device pixels (never enlarging), and the clip
/// cut to [`MAX_HEIGHT_PX`] at that scale.
fn fit(clip: Clip, max_width: u32, device_ratio: f64) -> (Clip, f64) {
    let ratio = if device_ratio > 0.0 {
        device_ratio
    } else {
        1.0
    };
    let scale = (f64::from(max_width) / (clip.width * ratio)).min(1.0);
    let tallest = MAX_HEIGHT_PX / (scale * ratio);
    (
        Clip {
            height: clip.height.min(tallest),
            ..clip
        },
        scale,
    )
}

/// Takes the screenshot.
pub async fn take(
    tab: TabId,
    request: ScreenshotRequest,
    viewer: &str,
    checkpoint: &Checkpoint,
) -> Result<Screenshot, OpError> {
    let url = get_tab(tab).await?.url.unwrap_or_default();
    if is_browser_page(&url) {
        return Err(OpError::new(
            ErrorCode::RestrictedPage,
            format!(
                "{url} is one of the browser's own pages, which extensions may not capture. Use \
                 an ordinary web page."
            ),
        ));
    }
    debugger::ensure_attached(tab).await?;
    let observation = match request.with_snapshot {
        Some(budget) => {
            let snapshot = SnapshotRequest {
                frame_id: None,
                scope: None,
                query: None,
                max_nodes: budget.max_nodes,
                max_chars: budget.max_chars,
                offset: 0,
                since: None,
                include_hidden: false,
            };
            Some(snapshot::snapshot(Some(tab), snapshot, viewer, checkpoint).await?)
        }
        None => None,
    };
    let metrics: LayoutMetrics = chrome::from_js(
        debugger::send(tab, "Page.getLayoutMetrics", &json!({})).await?,
    )
    .map_err(|e| {
        OpError::new(
            ErrorCode::Internal,
            format!("reading the page's layout: {e}"),
        )
    })?;
    // Device pixels per CSS pixel; 1 when Chrome leaves the (deprecated) device-pixel viewport
    // out.
    let device_ratio = match (
        metrics.layout_viewport.client_width,
        metrics.css_layout_viewport.client_width,
    ) {
        (device, css) if device > 0.0 && css > 0.0 => device / css,
        _ => 1.0,
    };
    let view = &metrics.css_visual_viewport;
    let (area, beyond_viewport) = match (&request.target, request.full_page) {
        (Some(target), _) => (element_clip(tab, target).await?, true),
        (None, true) => (
            Clip {
                x: 0.0,
                y: 0.0,
                width: metrics.css_content_size.width.max(1.0),
                height: metrics.css_content_size.height.max(1.0),
            },
            true,
        ),
        (None, false) => (
            Clip {
                x: view.page_x,
                y: view.page_y,
                width: view.client_width.max(1.0),
                height: view.client_height.max(1.0),
            },
            false,
        ),
    };
    let (clip, scale) = fit(area, request.max_width, device_ratio);
    let pixels = scale * device_ratio;
    let size = (
        (clip.width * pixels).round() as u32,
        (clip.height * pixels).round() as u32,
    );
    let shot = Shot {
        clip,
        scale,
        pixels,
        size,
        beyond_viewport,
    };
    let (data, covered_frames) = capture_covered(tab, &request, &shot).await?;
    if data.len() > MAX_IMAGE_BASE64 {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            format!(
                "The image is {} MB, more than tabwire sends ({} MB). Use format webp or jpeg, \
                 a lower quality, a smaller maxWidth, or the viewport instead of the full page.",
                data.len() * 3 / 4 / 1_000_000,
                MAX_IMAGE_BASE64 * 3 / 4 / 1_000_000
            ),
        ));
    }
    // The document that was captured: the one that answers now.
    let document_id =
        page::run::<Value>(tab, TOP_FRAME, &PageCommand::Probe, MissingFrame::Requested)
            .await
            .map(|reply| reply.document_id)
            .unwrap_or_default();
    if let Some(observation) = &observation
        && observation.of.document_id != document_id
    {
        return Err(OpError::new(
            ErrorCode::DocumentChanged,
            "The page loaded a new document between the observation and the screenshot, so \
             they would not show the same page. Take them again.",
        ));
    }
    Ok(Screenshot {
        tab_id: tab,
        format: request.format,
        data,
        width: size.0,
        height: size.1,
        css_width: clip.width.round() as u32,
        css_height: clip.height.round() as u32,
        document_id,
        observation,
        covered_frames,
    })
}

/// What is captured and how.
struct Shot {
    /// The area, in CSS pixels of the page.
    clip: Clip,
    /// Chrome's scale of the clip.
    scale: f64,
    /// Image pixels per CSS pixel.
    pixels: f64,
    /// The image's size in pixels.
    size: (u32, u32),
    /// Whether the area reaches beyond the viewport (a full page, an element).
    beyond_viewport: bool,
}

/// How many captures a screenshot takes at most while frames it must cover move.
const CAPTURES: usize = 3;

/// Captures the area, with the frame elements of the documents that hold frames agents may not
/// read hidden ([`hide`]) and those frames painted over: where they are drawn is measured
/// before and after the capture, and the capture is kept only when both agree and every
/// document holding such a frame had its frame elements hidden. Hiding stops the page's
/// animations of frame elements, which moves them: the next try measures them still.
async fn capture_covered(
    tab: TabId,
    request: &ScreenshotRequest,
    shot: &Shot,
) -> Result<(String, Vec<CoveredFrame>), OpError> {
    // Shown again when dropped: on every way out, refusals and a dropped request included.
    let mut hiding = hide::Hiding::new(tab);
    for _ in 0..CAPTURES {
        let before = measure::measure(tab).await?;
        if let Some(measured) = &before {
            hiding.hide(&measured.holders).await;
        }
        let (parts, covered) = parts_in(before.as_ref(), shot);
        // Painted over, the image is encoded again: captured lossless, it is encoded lossily
        // only once.
        let format = if parts.is_empty() {
            request.format
        } else {
            ImageFormat::Png
        };
        let data = capture(tab, format, request.quality, shot).await?;
        let after = measure::measure(tab).await?;
        if parts_in(after.as_ref(), shot) != (parts.clone(), covered.clone())
            || after.as_ref().is_some_and(|m| !hiding.tried(&m.holders))
        {
            continue;
        }
        if parts.is_empty() {
            return Ok((data, covered));
        }
        let data = paint::cover(&data, shot.size, &parts, request.format, request.quality).await?;
        return Ok((data, covered));
    }
    Err(OpError::new(
        ErrorCode::OriginBlocked,
        format!(
            "A frame the policy does not let agents read moved while the screenshot was taken \
             ({CAPTURES} tries), so where the page drew it is not known and no screenshot is \
             returned. The page may be animating it: try again later, or use get_page_snapshot."
        ),
    ))
}

/// The parts of the image that `measured` says to paint over, and the frames they hide.
fn parts_in(measured: Option<&measure::Measured>, shot: &Shot) -> (Vec<Pixels>, Vec<CoveredFrame>) {
    let Some(measured) = measured else {
        return (Vec::new(), Vec::new());
    };
    let mut parts = Vec::new();
    let mut frames = std::collections::BTreeSet::new();
    for patch in &measured.patches {
        if let Some(part) = paint::to_pixels(&patch.rect, &shot.clip, shot.pixels, shot.size) {
            parts.push(part);
            frames.extend(patch.frames.iter().copied());
        }
    }
    let covered = frames
        .into_iter()
        .map(|frame_id| CoveredFrame {
            frame_id,
            origin: measured.origins.get(&frame_id).cloned().unwrap_or_default(),
        })
        .collect();
    (parts, covered)
}

/// One capture of the area in `format`, as base64.
async fn capture(
    tab: TabId,
    format: ImageFormat,
    quality: Option<u8>,
    shot: &Shot,
) -> Result<String, OpError> {
    let clip = shot.clip;
    let mut params = json!({
        "format": match format {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpeg",
            ImageFormat::Webp => "webp",
        },
        "clip": {"x": clip.x, "y": clip.y, "width": clip.width, "height": clip.height, "scale": shot.scale},
        "captureBeyondViewport": shot.beyond_viewport,
    });
    if let (Some(quality), false) = (quality, format == ImageFormat::Png) {
        params["quality"] = json!(quality);
    }
    // Chrome draws no frames for a tab it does not show (one behind another in its window),
    // and a capture waits for a frame: through an extension's debugger it never returned
    // (measured). A screencast running for the capture's duration makes the tab draw, without
    // showing it: the page stays `visibilityState: "hidden"` and nobody's view changes.
    let screencast = json!({"format": "jpeg", "quality": 1, "maxWidth": 16, "maxHeight": 16, "everyNthFrame": 1000});
    let drawing = match select(
        debugger::send(tab, "Page.startScreencast", &screencast),
        sleep(FRAME_WAIT_MS),
    )
    .await
    {
        Either::Left(Ok(_)) => Some(ScreencastGuard(tab)),
        _ => None,
    };
    let capture = debugger::send(tab, "Page.captureScreenshot", &params);
    let answer = select(capture, sleep(FRAME_WAIT_MS)).await;
    // Stopped here, or when the request is dropped before (deadline, dialog).
    drop(drawing);
    let answer = match answer {
        Either::Left(answer) => answer?,
        Either::Right(()) => {
            return Err(OpError::new(
                ErrorCode::TabHidden,
                "Chrome produced no frame of the tab within 5 s (its window may be minimized). \
                 Show the window, then take the screenshot again.",
            ));
        }
    };
    let captured: Captured = chrome::from_js(answer)
        .map_err(|e| OpError::new(ErrorCode::Internal, format!("reading the screenshot: {e}")))?;
    Ok(captured.data)
}

/// The element's box (top document only).
async fn element_clip(tab: TabId, target: &Target) -> Result<Clip, OpError> {
    let prepared = target::prepare(tab, target, TOP_FRAME)?;
    if prepared.frame != TOP_FRAME {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            "Screenshots of an element inside a frame are not supported yet; capture the \
             viewport or the page instead.",
        ));
    }
    let reply = page::run::<Rect>(
        tab,
        TOP_FRAME,
        &PageCommand::Rect {
            target: prepared.page.clone(),
        },
        prepared.missing_frame(),
    )
    .await?;
    prepared.check_document(&reply.document_id)?;
    prepared.rebound(tab, reply.value.rebound);
    let rect = reply.value;
    Ok(Clip {
        x: rect.x,
        y: rect.y,
        width: rect.width,
        height: rect.height,
    })
}

/// The browser's own pages (settings, extensions, DevTools, the Web Store): off limits to
/// extensions, even where the debugger happens to attach.
fn is_browser_page(url: &str) -> bool {
    [
        "chrome:",
        "chrome-extension:",
        "chrome-untrusted:",
        "devtools:",
        "edge:",
        "about:",
    ]
    .iter()
    .any(|scheme| url.starts_with(scheme))
        && url != "about:blank"
        || url.starts_with("https://chromewebstore.google.com")
        || url.starts_with("https://chrome.google.com/webstore")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn screenshots_fit_the_width_and_the_height_cap() {
        let page = Clip {
            x: 0.0,
            y: 0.0,
            width: 1280.0,
            height: 30000.0,
        };
        let (clip, scale) = fit(page, 800, 1.0);
        assert_eq!(scale, 0.625);
        assert_eq!(clip.height, 6400.0);
        // Never enlarged; a high-density screen counts its device pixels.
        assert_eq!(
            fit(
                Clip {
                    width: 400.0,
                    ..page
                },
                800,
                1.0
            )
            .1,
            1.0
        );
        assert_eq!(fit(page, 800, 2.0).1, 0.3125);
    }

    #[test]
    fn the_browsers_own_pages_are_not_captured() {
        assert!(is_browser_page("chrome://version/"));
        assert!(is_browser_page(
            "https://chromewebstore.google.com/detail/x"
        ));
        assert!(!is_browser_page("about:blank"));
        assert!(!is_browser_page("https://example.com/chrome://"));
    }
}
