//! Capping text to a number of characters. Characters, not bytes: budgets are stated in
//! characters, and a cut never splits a code point.

/// Cuts `text` to `max` characters, ending with `…` when cut.
pub fn cap(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_count_characters_and_mark_the_cut() {
        assert_eq!(cap("héllo", 5), "héllo");
        assert_eq!(cap("héllo wörld", 5), "héll…");
        assert_eq!(cap("", 0), "");
    }
}
