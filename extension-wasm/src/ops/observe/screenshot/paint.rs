//! Painting over parts of a captured image, in the service worker: the image is decoded
//! (`createImageBitmap`), drawn on an `OffscreenCanvas`, the parts are filled with a solid
//! colour, and the canvas is encoded again in the format the agent asked for
//! (`convertToBlob`: PNG, JPEG and WebP all work in an MV3 service worker, measured on
//! Chromium 156). The page is never touched: a hostile page could take away an overlay put in
//! it before the capture, while the image, once captured, is out of its reach.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use js_sys::{Array, ArrayBuffer, Uint8Array};
use tabwire_protocol::{ErrorCode, ImageFormat, OpError};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    Blob, BlobPropertyBag, ImageBitmap, ImageEncodeOptions, OffscreenCanvas,
    OffscreenCanvasRenderingContext2d, WorkerGlobalScope,
};

/// The fill: a mid grey, plain enough to read as "not shown" and unlike most pages.
pub const FILL: [u8; 3] = [0x80, 0x80, 0x80];

/// A rectangle of the image, in its pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pixels {
    /// Left.
    pub x: u32,
    /// Top.
    pub y: u32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

/// The MIME type of a format.
pub fn mime_type(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Png => "image/png",
        ImageFormat::Jpeg => "image/jpeg",
        ImageFormat::Webp => "image/webp",
    }
}

fn failed(step: &str, error: JsValue) -> OpError {
    OpError::new(
        ErrorCode::Internal,
        format!(
            "covering frames in the screenshot failed ({step}: {}), so it is not returned",
            crate::chrome::js_message(&error)
        ),
    )
}

/// Refuses an image whose size is not the one the parts were computed for: painted at another
/// scale, the fill would miss what it must hide. A pixel either way is Chrome rounding a
/// fractional area (the parts carry a pixel of margin on each side for it).
pub fn check_size(decoded: (u32, u32), expected: (u32, u32)) -> Result<(), OpError> {
    if decoded.0.abs_diff(expected.0) <= 1 && decoded.1.abs_diff(expected.1) <= 1 {
        return Ok(());
    }
    Err(OpError::new(
        ErrorCode::Internal,
        format!(
            "Chrome captured an image of {}x{} pixels where {}x{} were expected, so the frames \
             the policy does not let agents read cannot be placed in it: no screenshot is \
             returned. Retry; if it persists, use get_page_snapshot.",
            decoded.0, decoded.1, expected.0, expected.1
        ),
    ))
}

/// Paints `parts` of the PNG image `png` (base64), which must be `size` pixels, and returns it
/// encoded as `format` (base64), with `quality` (0–100) for the lossy formats.
pub async fn cover(
    png: &str,
    size: (u32, u32),
    parts: &[Pixels],
    format: ImageFormat,
    quality: Option<u8>,
) -> Result<String, OpError> {
    let bytes = STANDARD.decode(png).map_err(|e| {
        OpError::new(
            ErrorCode::Internal,
            format!("reading the captured image: {e}"),
        )
    })?;
    let input = Uint8Array::from(bytes.as_slice());
    let options = BlobPropertyBag::new();
    options.set_type("image/png");
    let blob = Blob::new_with_u8_array_sequence_and_options(&Array::of1(&input), &options)
        .map_err(|e| failed("blob", e))?;
    let scope: WorkerGlobalScope = js_sys::global().unchecked_into();
    let bitmap: ImageBitmap = JsFuture::from(
        scope
            .create_image_bitmap_with_blob(&blob)
            .map_err(|e| failed("decode", e))?,
    )
    .await
    .map_err(|e| failed("decode", e))?
    .unchecked_into();
    if let Err(error) = check_size((bitmap.width(), bitmap.height()), size) {
        bitmap.close();
        return Err(error);
    }
    let canvas =
        OffscreenCanvas::new(bitmap.width(), bitmap.height()).map_err(|e| failed("canvas", e))?;
    let context: OffscreenCanvasRenderingContext2d = canvas
        .get_context("2d")
        .map_err(|e| failed("context", e))?
        .ok_or_else(|| failed("context", JsValue::from_str("no 2d context")))?
        .unchecked_into();
    context
        .draw_image_with_image_bitmap(&bitmap, 0.0, 0.0)
        .map_err(|e| failed("draw", e))?;
    bitmap.close();
    let [r, g, b] = FILL;
    context.set_fill_style_str(&format!("rgb({r}, {g}, {b})"));
    for part in parts {
        context.fill_rect(
            f64::from(part.x),
            f64::from(part.y),
            f64::from(part.width),
            f64::from(part.height),
        );
    }
    let encode = ImageEncodeOptions::new();
    encode.set_type(mime_type(format));
    if let (Some(quality), false) = (quality, format == ImageFormat::Png) {
        encode.set_quality(f64::from(quality) / 100.0);
    }
    let encoded: Blob = JsFuture::from(
        canvas
            .convert_to_blob_with_options(&encode)
            .map_err(|e| failed("encode", e))?,
    )
    .await
    .map_err(|e| failed("encode", e))?
    .unchecked_into();
    let buffer: ArrayBuffer = JsFuture::from(encoded.array_buffer())
        .await
        .map_err(|e| failed("encode", e))?
        .unchecked_into();
    Ok(STANDARD.encode(Uint8Array::new(&buffer).to_vec()))
}

/// `rect` (CSS pixels of the page) in the pixels of an image of `clip` taken at `pixels` image
/// pixels per CSS pixel, widened to whole pixels and a pixel more on each side (the edges of a
/// scaled image blend neighbouring pixels), and cut to the image; `None` when it is outside.
pub fn to_pixels(
    rect: &super::cover::Rect,
    clip: &super::cover::Rect,
    pixels: f64,
    image: (u32, u32),
) -> Option<Pixels> {
    let inside = rect.intersect(clip)?;
    let left = ((inside.x - clip.x) * pixels).floor() - 1.0;
    let top = ((inside.y - clip.y) * pixels).floor() - 1.0;
    let right = ((inside.x + inside.width - clip.x) * pixels).ceil() + 1.0;
    let bottom = ((inside.y + inside.height - clip.y) * pixels).ceil() + 1.0;
    let (width, height) = (f64::from(image.0), f64::from(image.1));
    let left = left.clamp(0.0, width);
    let top = top.clamp(0.0, height);
    let right = right.clamp(0.0, width);
    let bottom = bottom.clamp(0.0, height);
    (right > left && bottom > top).then_some(Pixels {
        x: left as u32,
        y: top as u32,
        width: (right - left) as u32,
        height: (bottom - top) as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::super::cover::Rect;
    use super::*;

    #[test]
    fn an_image_of_another_size_is_refused() {
        assert!(check_size((800, 600), (800, 600)).is_ok());
        assert!(check_size((801, 599), (800, 600)).is_ok(), "rounding");
        for decoded in [(400, 300), (1600, 1200), (800, 602), (0, 0)] {
            let refused = check_size(decoded, (800, 600)).unwrap_err();
            assert_eq!(refused.code, ErrorCode::Internal);
            assert!(refused.message.contains("800x600"), "{}", refused.message);
        }
    }

    #[test]
    fn page_rectangles_become_whole_image_pixels_with_a_margin() {
        let clip = Rect {
            x: 0.0,
            y: 100.0,
            width: 1000.0,
            height: 500.0,
        };
        let frame = Rect {
            x: 10.5,
            y: 150.0,
            width: 100.0,
            height: 1000.0,
        };
        // Half scale: x 5.25..55.25 → 4..57; y (50..500)/2 → 24..251, cut at 250.
        assert_eq!(
            to_pixels(&frame, &clip, 0.5, (500, 250)),
            Some(Pixels {
                x: 4,
                y: 24,
                width: 53,
                height: 226
            })
        );
        let outside = Rect {
            x: 0.0,
            y: 0.0,
            width: 50.0,
            height: 90.0,
        };
        assert_eq!(to_pixels(&outside, &clip, 1.0, (1000, 500)), None);
    }
}
