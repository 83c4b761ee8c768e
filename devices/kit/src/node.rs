//! The nodes an observation of a device shows, whatever the platform: each platform's reader
//! (Android's `uiautomator` dump, iOS's XCUITest page source) turns its tree into these, kept
//! and pruned by the same idea (words, or something to act on), and everything after — refs,
//! rendering, budgets, deltas, acting on a ref — works on them alone.

use tabwire_protocol::Rect;

use crate::refs::Identity;

/// One node an observation can show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenNode {
    /// `button`, `textbox`, `checkbox`, `switch`, `radio`, `slider`, `progressbar`,
    /// `combobox`, `tab`, `list`, `group`, `img`, `webview`, or `text` (prose, rendered as its
    /// quoted words).
    pub role: &'static str,
    /// The words it is known by.
    pub name: String,
    /// A field's contents ([`tabwire_protocol::REDACTED`] for a password), a slider's value.
    pub value: Option<String>,
    /// A password field: its value is never shown.
    pub secret: bool,
    /// `checked`, `selected`, `disabled`, `focused`, `scrollable`, in that order.
    pub states: Vec<&'static str>,
    /// Its bounds, clipped to the screen.
    pub bounds: Rect,
    /// What its ref is kept by.
    pub identity: Identity,
    /// Its app.
    pub package: String,
    /// A progress bar or a loading label: the screen is not settled while one shows.
    pub busy: bool,
}

/// The screen's size in the orientation the dump was taken in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl Extent {
    /// `natural` (portrait for phones) turned by `rotation` quarter turns.
    pub fn rotated(natural: Extent, rotation: u8) -> Extent {
        if rotation % 2 == 1 {
            Extent {
                width: natural.height,
                height: natural.width,
            }
        } else {
            natural
        }
    }
}

/// Whether `text` holds something a reader sees as words: a character that is not white
/// space, a control or formatting character (direction marks, joiners), or a private-use
/// code point (where icon fonts draw their glyphs, which read as nothing, or as a box).
pub fn has_words(text: &str) -> bool {
    text.chars().any(|c| {
        !c.is_whitespace()
            && !c.is_control()
            && !matches!(c,
                '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}' | '\u{feff}'
                | '\u{e000}'..='\u{f8ff}' | '\u{f0000}'..='\u{10ffff}')
    })
}

/// "Loading…", "Loading...", "Please wait": short labels that say the screen is not ready.
pub fn is_loading_label(text: &str) -> bool {
    let lower = text.trim().to_lowercase();
    lower.chars().count() <= 40
        && (lower.starts_with("loading") || lower.starts_with("please wait"))
}
