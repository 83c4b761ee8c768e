//! Fitting a list of records into a character budget: what capture reads and cookie reads
//! share.
//!
//! An agent pays for every character it reads, so a read returns the records that fit its
//! budget and says it cut the list; a first record that alone exceeds the budget still comes
//! back, its longest strings cut until it fits. Sizes are UTF-8 bytes of the JSON, brackets and
//! commas included: never fewer than its characters, so a page fits the budget however its
//! reader counts.

use serde::Serialize;

use crate::text::cap;

/// Strings are never cut below this many characters to fit a budget: shorter ones say too
/// little to be worth keeping, and the budget gives way instead.
pub const MIN_FITTED_CHARS: usize = 16;

/// A record that can be cut to fit: its strings can be shortened.
pub trait Fitted: Serialize {
    /// The record's strings, in the order of their JSON names: the longest is cut first, the
    /// last of equally long ones.
    fn strings(&mut self) -> Vec<&mut String>;
}

/// Fills a page with `items` in order while it stays within `budget`; says whether the budget
/// cut it short. The first item always goes in, its strings cut to fit when it alone exceeds
/// the budget.
pub fn fill<R: Fitted>(items: impl Iterator<Item = R>, budget: usize) -> (Vec<R>, bool) {
    const BRACKETS: usize = 2;
    let mut page = Vec::new();
    let mut used = BRACKETS;
    for item in items {
        let size = json_len(&item) + usize::from(!page.is_empty());
        if used + size > budget {
            if page.is_empty() {
                page.push(fit(item, budget.saturating_sub(BRACKETS)));
            }
            return (page, true);
        }
        used += size;
        page.push(item);
    }
    (page, false)
}

/// The length of `record` as JSON, in UTF-8 bytes.
pub fn json_len<R: Serialize>(record: &R) -> usize {
    serde_json::to_string(record).map_or(0, |text| text.len())
}

/// Cuts the longest strings of `record` until its JSON fits `budget` bytes (or no string is
/// longer than [`MIN_FITTED_CHARS`]). Cut strings end with `…`.
pub fn fit<R: Fitted>(mut record: R, budget: usize) -> R {
    // Each round shortens one string by at least one character, so this ends; the bound only
    // guards against a surprise.
    for _ in 0..256 {
        let size = json_len(&record);
        if size <= budget {
            break;
        }
        let mut strings = record.strings();
        let longest = strings
            .iter_mut()
            .map(|text| {
                let chars = text.chars().count();
                (text, chars)
            })
            .filter(|(_, chars)| *chars > MIN_FITTED_CHARS)
            .max_by_key(|(_, chars)| *chars);
        let Some((text, chars)) = longest else {
            break;
        };
        let keep = chars
            .saturating_sub(size - budget)
            .clamp(MIN_FITTED_CHARS, chars - 1);
        let cut = cap(text, keep);
        **text = cut;
    }
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Default, PartialEq, Serialize)]
    struct Note {
        a: String,
        b: u32,
    }

    impl Fitted for Note {
        fn strings(&mut self) -> Vec<&mut String> {
            vec![&mut self.a]
        }
    }

    #[test]
    fn fitting_stops_at_short_strings() {
        let note = Note {
            a: "x".repeat(40),
            b: 7,
        };
        let fitted = fit(note, 5);
        assert_eq!(fitted.a.chars().count(), MIN_FITTED_CHARS);
    }
}
