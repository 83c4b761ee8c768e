//! Just enough image reading to check a screenshot: base64 decoding and the pixel size in a
//! PNG, JPEG or WebP header (a screenshot whose header names the format and size the tool
//! reported is an image a client can decode; a truncated or mislabelled one is not), and a PNG's
//! pixels ([`Pixmap`]), to check what a screenshot shows where.

/// An image format, told by its magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `\x89PNG\r\n\x1a\n`.
    Png,
    /// `FF D8 FF`.
    Jpeg,
    /// `RIFF····WEBP`.
    Webp,
}

impl Format {
    /// The name the tools use (`format` in a screenshot's data).
    pub fn name(self) -> &'static str {
        match self {
            Format::Png => "png",
            Format::Jpeg => "jpeg",
            Format::Webp => "webp",
        }
    }

    /// The MIME type of an MCP image block in this format.
    pub fn mime_type(self) -> &'static str {
        match self {
            Format::Png => "image/png",
            Format::Jpeg => "image/jpeg",
            Format::Webp => "image/webp",
        }
    }
}

/// What an image's header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The format.
    pub format: Format,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// Decodes standard base64 (with or without padding); panics on anything else, since an MCP
/// image block must carry exactly that.
pub fn decode_base64(text: &str) -> Vec<u8> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut buffer = 0u32;
    let mut bits = 0;
    for (index, c) in text.bytes().enumerate() {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: byte {c:#04x} at {index}"),
        };
        buffer = (buffer << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    out
}

/// The format and pixel size an image's header declares, or `None` when the bytes are not a
/// PNG, JPEG or WebP image with a complete header.
pub fn header(bytes: &[u8]) -> Option<Header> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        if bytes.get(12..16)? != b"IHDR" {
            return None;
        }
        return Some(Header {
            format: Format::Png,
            width: be32(bytes, 16)?,
            height: be32(bytes, 20)?,
        });
    }
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        return jpeg(bytes);
    }
    if bytes.get(0..4)? == b"RIFF" && bytes.get(8..12)? == b"WEBP" {
        return webp(bytes);
    }
    None
}

/// A PNG's pixels, as RGB.
pub struct Pixmap {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    rgb: Vec<u8>,
}

impl Pixmap {
    /// Decodes a PNG (any colour type, alpha dropped); panics on anything else.
    pub fn decode_png(bytes: &[u8]) -> Pixmap {
        let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        decoder.set_transformations(png::Transformations::normalize_to_color8());
        let mut reader = decoder.read_info().expect("a PNG");
        let mut buffer = vec![0; reader.output_buffer_size().expect("a PNG's size")];
        let info = reader.next_frame(&mut buffer).expect("a PNG's pixels");
        let channels = info.color_type.samples();
        let rgb = buffer[..info.buffer_size()]
            .chunks(channels)
            .flat_map(|px| match channels {
                1 | 2 => [px[0], px[0], px[0]],
                _ => [px[0], px[1], px[2]],
            })
            .collect();
        Pixmap {
            width: info.width,
            height: info.height,
            rgb,
        }
    }

    /// The pixel at (`x`, `y`).
    pub fn at(&self, x: u32, y: u32) -> [u8; 3] {
        assert!(
            x < self.width && y < self.height,
            "({x}, {y}) is outside the {}×{} image",
            self.width,
            self.height
        );
        let i = ((y * self.width + x) * 3) as usize;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// Every pixel of the rectangle from (`x`, `y`), `width` × `height`, with its place, that
    /// is not `colour`.
    pub fn other_than(
        &self,
        (x, y, width, height): (u32, u32, u32, u32),
        colour: [u8; 3],
    ) -> Vec<((u32, u32), [u8; 3])> {
        let mut out = Vec::new();
        for py in y..y + height {
            for px in x..x + width {
                let here = self.at(px, py);
                if here != colour {
                    out.push(((px, py), here));
                }
            }
        }
        out
    }
}

fn webp(bytes: &[u8]) -> Option<Header> {
    let (width, height) = match bytes.get(12..16)? {
        // Lossy: a key frame's start code, then 14-bit sizes.
        b"VP8 " => {
            if bytes.get(23..26)? != [0x9D, 0x01, 0x2A] {
                return None;
            }
            (
                u32::from(le16(bytes, 26)? & 0x3FFF),
                u32::from(le16(bytes, 28)? & 0x3FFF),
            )
        }
        // Lossless: a signature byte, then 14-bit sizes minus one.
        b"VP8L" => {
            if *bytes.get(20)? != 0x2F {
                return None;
            }
            let packed = u32::from_le_bytes(bytes.get(21..25)?.try_into().ok()?);
            ((packed & 0x3FFF) + 1, ((packed >> 14) & 0x3FFF) + 1)
        }
        // Extended: the canvas size, 24-bit minus one.
        b"VP8X" => (le24(bytes, 24)? + 1, le24(bytes, 27)? + 1),
        _ => return None,
    };
    Some(Header {
        format: Format::Webp,
        width,
        height,
    })
}

fn jpeg(bytes: &[u8]) -> Option<Header> {
    let mut at = 2;
    loop {
        if *bytes.get(at)? != 0xFF {
            return None;
        }
        let marker = *bytes.get(at + 1)?;
        match marker {
            // Fill bytes.
            0xFF => at += 1,
            // Markers without a length.
            0x01 | 0xD0..=0xD8 => at += 2,
            // Start of frame (not DHT, JPG or DAC, which share the range).
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                return Some(Header {
                    format: Format::Jpeg,
                    height: u32::from(be16(bytes, at + 5)?),
                    width: u32::from(be16(bytes, at + 7)?),
                });
            }
            // Start of scan or end of image before any frame header.
            0xDA | 0xD9 => return None,
            _ => at += 2 + usize::from(be16(bytes, at + 2)?),
        }
    }
}

fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn le16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn le24(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 3)?;
    Some(u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_known_strings() {
        assert_eq!(decode_base64("aGVsbG8="), b"hello");
        assert_eq!(decode_base64("aGVsbG8"), b"hello");
        assert_eq!(decode_base64("YWJj"), b"abc");
        assert_eq!(decode_base64(""), b"");
    }

    #[test]
    fn reads_a_real_png_header() {
        // A 1×1 PNG.
        let png = decode_base64(
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
        );
        assert_eq!(
            header(&png),
            Some(Header {
                format: Format::Png,
                width: 1,
                height: 1
            })
        );
    }

    #[test]
    fn reads_webp_and_jpeg_sizes() {
        // Lossy WebP: RIFF, size, WEBP, "VP8 ", chunk size, frame tag, start code, 640×360.
        let mut lossy = b"RIFF\0\0\0\0WEBPVP8 \0\0\0\0\0\0\0\x9d\x01\x2a".to_vec();
        lossy.extend_from_slice(&640u16.to_le_bytes());
        lossy.extend_from_slice(&360u16.to_le_bytes());
        assert_eq!(
            header(&lossy),
            Some(Header {
                format: Format::Webp,
                width: 640,
                height: 360
            })
        );
        // Lossless WebP, 800×2000.
        let mut lossless = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        let packed: u32 = (800 - 1) | ((2000 - 1) << 14);
        lossless.extend_from_slice(&packed.to_le_bytes());
        assert_eq!(
            header(&lossless).map(|h| (h.width, h.height)),
            Some((800, 2000))
        );
        // JPEG: SOI, an APP0 segment, then SOF0 with 200 rows of 300 pixels.
        let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00];
        jpeg.extend_from_slice(&[0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00, 200, 0x01, 0x2C]);
        assert_eq!(
            header(&jpeg),
            Some(Header {
                format: Format::Jpeg,
                width: 300,
                height: 200
            })
        );
        assert_eq!(header(b"GIF89a"), None);
        assert_eq!(header(b"RIFF\0\0\0\0WEBPVP8 "), None, "cut short");
    }
}
