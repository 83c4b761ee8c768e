//! Text helpers every layer uses: capping a string to a number of characters (the observation
//! crate's `cap`, which its line wording uses too), and cutting a slice of characters out of a
//! text for paging. Characters, not bytes: budgets are stated in characters, and a cut never
//! splits a code point.

pub use tabwire_observation::text::cap;

/// Characters `[offset, offset + max)` of a text.
#[derive(Debug, PartialEq, Eq)]
pub struct Slice {
    /// The characters.
    pub text: String,
    /// Where they start (the offset, at most the total).
    pub offset: u32,
    /// The text's length, in characters.
    pub total: u32,
    /// Characters before or after the slice were left out.
    pub truncated: bool,
    /// Where the rest starts, when there is more.
    pub next_offset: Option<u32>,
}

/// Characters `[offset, offset + max)` of `text`.
pub fn slice_chars(text: &str, offset: u32, max: u32) -> Slice {
    let total = text.chars().count();
    let start = (offset as usize).min(total);
    let end = start.saturating_add(max as usize).min(total);
    let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Slice {
        text: text.chars().skip(start).take(end - start).collect(),
        offset: clamp(start),
        total: clamp(total),
        truncated: start > 0 || end < total,
        next_offset: (end < total).then(|| clamp(end)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_count_characters_not_bytes() {
        let text = "héllo wörld";
        let s = slice_chars(text, 0, 5);
        assert_eq!(s.text, "héllo");
        assert_eq!(s.total, 11);
        assert!(s.truncated);
        assert_eq!(s.next_offset, Some(5));
        let s = slice_chars(text, 5, 100);
        assert_eq!(s.text, " wörld");
        assert!(s.truncated, "characters before the offset are not returned");
        assert_eq!(s.next_offset, None);
        let s = slice_chars(text, 0, 100);
        assert!(!s.truncated);
        let s = slice_chars(text, 50, 10);
        assert_eq!((s.text.as_str(), s.offset), ("", 11));
    }

    #[test]
    fn paging_returns_the_whole_text() {
        let text: String = (0..1000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let mut out = String::new();
        let mut offset = Some(0);
        while let Some(at) = offset {
            let s = slice_chars(&text, at, 70);
            out.push_str(&s.text);
            offset = s.next_offset;
        }
        assert_eq!(out, text);
    }
}
