//! What the measurements ask of each server beyond a snapshot, and what each answers in the
//! same shape: how many of a page's interactive elements it reached, and reaching and clicking
//! a row of the 2,000-row table.

/// How many of a page's interactive elements a server gave usable refs for.
#[derive(Debug, Clone)]
pub struct Completeness {
    /// The page's own count (`Interactive elements here: N`), summed over its frames; `None`
    /// when the page shows no such line.
    pub expected: Option<u32>,
    /// Distinct refs on lines with an interactive role.
    pub reached: usize,
    /// Tool calls it took.
    pub calls: u32,
    /// How the refs were gathered, e.g. "list_frames + 3 frames, 14 pages".
    pub how: String,
}

/// Reaching a row's button on the 2,000-row table and clicking it.
#[derive(Debug, Clone)]
pub struct RowClick {
    /// What the first (plain) snapshot said about its own completeness.
    pub first_view: String,
    /// Calls until the button's ref was known (the plain snapshot, then a search if needed).
    pub reach_calls: u32,
    /// Response bytes of those calls.
    pub reach_bytes: usize,
    /// The ref clicked.
    pub button: String,
    /// Response bytes of the click.
    pub click_bytes: usize,
    /// Round trip of the click, in milliseconds.
    pub click_ms: f64,
    /// Calls after the click to read the status line (0 when the click's result showed it).
    pub confirm_calls: u32,
    /// Response bytes of those calls.
    pub confirm_bytes: usize,
    /// The page's status line after the click, if it was found.
    pub status: Option<String>,
}

/// The status line `Opened row 1500 (…)` in `text`: the first `prefix` followed by a digit (so a
/// search echoing "Opened row" back is skipped), up to the end of its line or closing quote.
pub fn status_line(text: &str, prefix: &str) -> Option<String> {
    text.match_indices(prefix).find_map(|(at, _)| {
        let rest = &text[at..];
        rest[prefix.len()..]
            .starts_with(|c: char| c.is_ascii_digit())
            .then(|| {
                rest.split(['\n', '"'])
                    .next()
                    .unwrap_or_default()
                    .trim_end()
                    .to_owned()
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_in_either_rendering() {
        assert_eq!(
            status_line(
                "- status [ref=f3e3]: Opened row 1500 (trusted: true)\n- table",
                "Opened row "
            )
            .as_deref(),
            Some("Opened row 1500 (trusted: true)")
        );
        assert_eq!(
            status_line(
                r#"@e3 status "Opened row 1500 (trusted: true)""#,
                "Opened row "
            )
            .as_deref(),
            Some("Opened row 1500 (trusted: true)")
        );
        assert_eq!(
            status_line(
                "Found 1 match for \"Opened row \":\n  - status [ref=e3]: Opened row 7 (trusted: true)",
                "Opened row "
            )
            .as_deref(),
            Some("Opened row 7 (trusted: true)")
        );
        assert_eq!(status_line("No row opened yet", "Opened row "), None);
    }
}
