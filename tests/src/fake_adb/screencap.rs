//! The fake device's `screencap -p`: a real PNG of the screen's size, drawn from the current
//! hierarchy (every node's box outlined, clickable ones and text fields filled, the keyboard a
//! dark band at the bottom when it shows), so two screens give two different pictures. Each
//! picture is made once per scenario and kept in the device's `cache/`.

use super::command::{Output, device_path};
use super::hierarchy;
use super::scenario::ScenarioDir;

/// `screencap [-p] [-d DISPLAY] [FILE]`.
pub fn screencap(dir: &ScenarioDir, serial: &str, args: &[String]) -> Output {
    let mut png = false;
    let mut file = None;
    let mut words = args.iter().map(String::as_str);
    while let Some(word) = words.next() {
        match word {
            "-p" => png = true,
            "-d" => {
                words.next();
            }
            "-h" => return Output::error(0, "usage: screencap [-hp] [-d display-id] [FILENAME]"),
            path => file = Some(path.to_owned()),
        }
    }
    png |= file.as_deref().is_some_and(|f| f.ends_with(".png"));
    if !png {
        return Output::error(1, "screencap: the fake device writes PNG only (-p)");
    }
    let image = match picture(dir, serial) {
        Ok(image) => image,
        Err(message) => return Output::error(1, message),
    };
    match file {
        None => Output {
            stdout: image,
            ..Output::default()
        },
        Some(path) => match std::fs::write(device_path(dir, serial, &path), image) {
            Ok(()) => Output::default(),
            Err(error) => Output::error(1, format!("Error opening file: {path} ({error})")),
        },
    }
}

/// The PNG of the device's current screen, from the cache or drawn now.
fn picture(dir: &ScenarioDir, serial: &str) -> Result<Vec<u8>, String> {
    let state = dir.state(serial);
    let [width, height] = dir.config(serial).screen_size();
    if width == 0 || height == 0 {
        return Err("screencap: the device has no screen size".into());
    }
    let cache = dir.device_dir(serial).join("cache");
    let key = format!(
        "{}-{}-{width}x{height}.png",
        state.screen.replace('/', "_"),
        if state.keyboard { "kb" } else { "nokb" }
    );
    if let Ok(bytes) = std::fs::read(cache.join(&key)) {
        return Ok(bytes);
    }
    let xml = dir.screen_xml(&state.screen).unwrap_or_default();
    let pixels = draw(&xml, width, height, state.keyboard);
    let bytes = encode(&pixels, width, height)?;
    let _ = std::fs::create_dir_all(&cache);
    super::scenario::write_atomically(&cache.join(&key), &bytes);
    Ok(bytes)
}

/// RGB pixels of the screen.
fn draw(xml: &str, width: u32, height: u32, keyboard: bool) -> Vec<u8> {
    let (w, h) = (width as i64, height as i64);
    let mut pixels = vec![0xffu8; (w * h * 3) as usize];
    let mut fill = |[l, t, r, b]: [i64; 4], colour: [u8; 3]| {
        let (l, t, r, b) = (l.clamp(0, w), t.clamp(0, h), r.clamp(0, w), b.clamp(0, h));
        for y in t..b {
            let row = (y * w * 3) as usize;
            for x in l..r {
                let at = row + (x * 3) as usize;
                pixels[at..at + 3].copy_from_slice(&colour);
            }
        }
    };
    for node in hierarchy::nodes(xml) {
        let Some([l, t, r, b]) = node.bounds() else {
            continue;
        };
        if r <= l || b <= t {
            continue;
        }
        let class = node.get("class");
        let inside = if class.ends_with("EditText") {
            Some([0xee, 0xee, 0xee])
        } else if node.flag("clickable") {
            Some([0xd6, 0xe4, 0xfb])
        } else {
            None
        };
        let line = [0xb0, 0xb0, 0xb0];
        fill([l, t, r, (t + 2).min(b)], line);
        fill([l, (b - 2).max(t), r, b], line);
        fill([l, t, (l + 2).min(r), b], line);
        fill([(r - 2).max(l), t, r, b], line);
        if let Some(colour) = inside {
            fill([l + 2, t + 2, r - 2, b - 2], colour);
        }
    }
    if keyboard {
        fill([0, h * 62 / 100, w, h], [0x26, 0x32, 0x38]);
    }
    pixels
}

fn encode(pixels: &[u8], width: u32, height: u32) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(pixels).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(bytes)
}
