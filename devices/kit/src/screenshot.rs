//! `device_screenshot`: the PNG `screencap -p` writes, scaled down to a width with a box
//! filter and encoded again.

use base64::Engine as _;
use tabwire_protocol::devices::DeviceScreenshot;
use tabwire_protocol::{ErrorCode, OpError};

/// The widest image returned, whatever was asked.
pub const MAX_WIDTH: u32 = 2_000;
/// The largest screen decoded, in pixels: 64 megapixels (the largest phones have about 4).
const MAX_PIXELS: u64 = 64 * 1024 * 1024;
/// The longest side decoded, in pixels; it also bounds the scaled image's height.
const MAX_SIDE: u32 = 16_384;

/// Decodes `png`, scales it to at most `max_width` pixels wide (keeping its proportions) and
/// encodes it again as an 8-bit RGB or RGBA PNG, base64.
pub fn scale(png: &[u8], max_width: u32) -> Result<DeviceScreenshot, OpError> {
    let bad = |what: String| {
        OpError::new(
            ErrorCode::DeviceError,
            format!("the device's screenshot could not be read: {what}"),
        )
    };
    let mut decoder = png::Decoder::new_with_limits(
        std::io::Cursor::new(png),
        png::Limits {
            bytes: (MAX_PIXELS * 4) as usize,
        },
    );
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(|e| bad(e.to_string()))?;
    let (width, height) = (reader.info().width, reader.info().height);
    if width > MAX_SIDE || height > MAX_SIDE || u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(bad(format!(
            "it is {width} × {height} pixels; at most {MAX_SIDE} a side and {} megapixels are \
             read",
            MAX_PIXELS / (1024 * 1024)
        )));
    }
    let mut pixels = vec![
        0;
        reader
            .output_buffer_size()
            .ok_or_else(|| bad("too large".into()))?
    ];
    let frame = reader
        .next_frame(&mut pixels)
        .map_err(|e| bad(e.to_string()))?;
    let (width, height) = (frame.width, frame.height);
    let channels = match frame.color_type {
        png::ColorType::Rgba => 4,
        png::ColorType::Rgb => 3,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Grayscale => 1,
        png::ColorType::Indexed => return Err(bad("an indexed image was not expanded".into())),
    };
    let stride = frame.line_size;
    let max_width = max_width.clamp(1, MAX_WIDTH);
    let (out_w, out_h) = if width > max_width {
        let h = (u64::from(height) * u64::from(max_width) / u64::from(width)).max(1);
        (max_width, h as u32)
    } else {
        (width, height)
    };
    let scaled = box_filter(&pixels, stride, width, height, channels, out_w, out_h);
    let color = match channels {
        4 => png::ColorType::Rgba,
        3 => png::ColorType::Rgb,
        2 => png::ColorType::GrayscaleAlpha,
        _ => png::ColorType::Grayscale,
    };
    let mut encoded = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut encoded, out_w, out_h);
        encoder.set_color(color);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Fast);
        let mut writer = encoder.write_header().map_err(|e| bad(e.to_string()))?;
        writer
            .write_image_data(&scaled)
            .map_err(|e| bad(e.to_string()))?;
    }
    Ok(DeviceScreenshot {
        data: base64::engine::general_purpose::STANDARD.encode(&encoded),
        width: out_w,
        height: out_h,
        screen_width: width,
        screen_height: height,
    })
}

/// Each output pixel is the mean of the source pixels its area covers.
fn box_filter(
    src: &[u8],
    stride: usize,
    width: u32,
    height: u32,
    channels: usize,
    out_w: u32,
    out_h: u32,
) -> Vec<u8> {
    if (out_w, out_h) == (width, height) {
        let row = width as usize * channels;
        return (0..height as usize)
            .flat_map(|y| src[y * stride..y * stride + row].iter().copied())
            .collect();
    }
    let mut out = Vec::with_capacity(out_w as usize * out_h as usize * channels);
    for oy in 0..u64::from(out_h) {
        let y0 = (oy * u64::from(height) / u64::from(out_h)) as usize;
        let y1 = (((oy + 1) * u64::from(height)).div_ceil(u64::from(out_h)) as usize)
            .clamp(y0 + 1, height as usize);
        for ox in 0..u64::from(out_w) {
            let x0 = (ox * u64::from(width) / u64::from(out_w)) as usize;
            let x1 = (((ox + 1) * u64::from(width)).div_ceil(u64::from(out_w)) as usize)
                .clamp(x0 + 1, width as usize);
            let mut sums = [0u64; 4];
            for y in y0..y1 {
                let row = &src[y * stride..];
                for x in x0..x1 {
                    for (c, sum) in sums.iter_mut().enumerate().take(channels) {
                        *sum += u64::from(row[x * channels + c]);
                    }
                }
            }
            let count = ((y1 - y0) * (x1 - x0)) as u64;
            for sum in sums.iter().take(channels) {
                out.push(((sum + count / 2) / count) as u8);
            }
        }
    }
    out
}

/// A `width` × `height` RGBA PNG, left half red and right half blue: what fake devices in
/// tests show (the scaling's colours are checked against it).
pub fn png_of(width: u32, height: u32) -> Vec<u8> {
    let mut data = Vec::new();
    for _ in 0..height {
        for x in 0..width {
            data.extend_from_slice(if x < width / 2 {
                &[255, 0, 0, 255]
            } else {
                &[0, 0, 255, 255]
            });
        }
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    encoder
        .write_header()
        .unwrap()
        .write_image_data(&data)
        .unwrap();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(b64: &str) -> (u32, u32, Vec<u8>) {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
            .read_info()
            .unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        (info.width, info.height, buf)
    }

    #[test]
    fn a_screenshot_is_scaled_to_the_width_asked() {
        let shot = scale(&png_of(1080, 2400), 270).unwrap();
        assert_eq!((shot.width, shot.height), (270, 600));
        assert_eq!((shot.screen_width, shot.screen_height), (1080, 2400));
        let (w, h, pixels) = decode(&shot.data);
        assert_eq!((w, h), (270, 600));
        assert_eq!(&pixels[..4], &[255, 0, 0, 255], "left stays red");
        let last = pixels.len() - 4;
        assert_eq!(&pixels[last..], &[0, 0, 255, 255], "right stays blue");
    }

    #[test]
    fn a_narrow_screenshot_is_kept_as_it_is() {
        let shot = scale(&png_of(40, 30), 1000).unwrap();
        assert_eq!((shot.width, shot.height), (40, 30));
        let (_, _, pixels) = decode(&shot.data);
        assert_eq!(pixels.len(), 40 * 30 * 4);
    }

    #[test]
    fn an_image_too_large_is_refused_before_it_is_decoded() {
        // 1-bit grey compresses to almost nothing, but decodes to a byte a pixel.
        let huge = |width: u32, height: u32| {
            let row = width.div_ceil(8) as usize;
            let data = vec![0u8; row * height as usize];
            let mut out = Vec::new();
            let mut encoder = png::Encoder::new(&mut out, width, height);
            encoder.set_color(png::ColorType::Grayscale);
            encoder.set_depth(png::BitDepth::One);
            encoder
                .write_header()
                .unwrap()
                .write_image_data(&data)
                .unwrap();
            out
        };
        for (w, h) in [(9_000, 9_000), (1, 20_000), (20_000, 1)] {
            let error = scale(&huge(w, h), 100).unwrap_err();
            assert_eq!(error.code, ErrorCode::DeviceError);
            assert!(error.message.contains("pixels"), "{}", error.message);
        }
        assert!(scale(&huge(1_080, 2_400), 100).is_ok());
    }

    #[test]
    fn what_is_not_a_png_is_a_device_error() {
        let error = scale(b"error: closed", 100).unwrap_err();
        assert_eq!(error.code, ErrorCode::DeviceError);
        let truncated = &png_of(100, 100)[..60];
        assert_eq!(
            scale(truncated, 100).unwrap_err().code,
            ErrorCode::DeviceError
        );
    }
}
