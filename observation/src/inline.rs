//! Inline refs: an element shown inside another node's line rather than on a line of its own —
//! a clickable word in a sentence, a day cell in a calendar row — written `[@e43 laoreet]`.
//!
//! The collector marks each one in the line's text as `U+E000 key U+E001 text U+E002`
//! (private-use characters it strips from page text) and lists the keys it marked in the
//! node's `inline` facts. A marker is turned into a ref only when its key is listed there, so
//! markers a page might smuggle into a name or a label come out as plain text.

/// Opens a marker; the element's key follows.
const OPEN: char = '\u{E000}';
/// Ends the key; the element's text follows.
const TEXT: char = '\u{E001}';
/// Ends the marker.
const CLOSE: char = '\u{E002}';

fn is_marker_char(c: char) -> bool {
    (OPEN..=CLOSE).contains(&c)
}

/// Whether the line has anything to resolve or strip.
pub fn has_markers(line: &str) -> bool {
    line.contains(is_marker_char)
}

/// Rewrites `line` with each listed marker as `[<ref> text]`, `ref_for` giving the ref of a key
/// (it is called only for markers present, in order). Unlisted or malformed markers keep their
/// text only; a marker cut off by a length cap is closed.
pub fn resolve(line: &str, listed: &[u32], mut ref_for: impl FnMut(u32) -> String) -> String {
    if !has_markers(line) {
        return line.to_owned();
    }
    let mut out = String::with_capacity(line.len() + 16);
    let mut rest = line;
    let mut open = false;
    while let Some(at) = rest.find(is_marker_char) {
        out.push_str(&rest[..at]);
        let c = rest[at..].chars().next().unwrap_or(OPEN);
        rest = &rest[at + c.len_utf8()..];
        match c {
            OPEN => {
                let digits = rest.find(TEXT).map(|end| &rest[..end]);
                let key = digits.and_then(|d| d.parse::<u32>().ok());
                if let (Some(digits), Some(key)) = (digits, key) {
                    rest = &rest[digits.len() + TEXT.len_utf8()..];
                    if listed.contains(&key) && !open {
                        out.push('[');
                        out.push_str(&ref_for(key));
                        out.push(' ');
                        open = true;
                    }
                }
            }
            CLOSE if open => {
                out.push(']');
                open = false;
            }
            _ => {}
        }
    }
    out.push_str(rest);
    if open {
        out.push(']');
    }
    out
}

/// The line's text without markers, as a query matches it.
pub fn plain(line: &str) -> String {
    resolve(line, &[], |_| String::new())
}

/// The characters the line will have once resolved (a ref is counted as `@e` and four digits).
pub fn width(line: &str) -> u32 {
    if !has_markers(line) {
        return line.chars().count() as u32;
    }
    let resolved = resolve(line, &[], |_| String::new());
    let markers = line.matches(OPEN).count() as u32;
    resolved.chars().count() as u32 + markers * "[@e1234 ]".len() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(key: u32, text: &str) -> String {
        format!("{OPEN}{key}{TEXT}{text}{CLOSE}")
    }

    #[test]
    fn listed_markers_become_refs() {
        let line = format!(
            "\"Lorem {} ipsum {} sit\"",
            marker(7, "dolor"),
            marker(9, "amet (selected)")
        );
        let mut asked = Vec::new();
        let out = resolve(&line, &[7, 9], |key| {
            asked.push(key);
            format!("@e{}", key + 100)
        });
        assert_eq!(
            out,
            "\"Lorem [@e107 dolor] ipsum [@e109 amet (selected)] sit\""
        );
        assert_eq!(asked, [7, 9]);
        assert_eq!(plain(&line), "\"Lorem dolor ipsum amet (selected) sit\"");
        assert!(width(&line) >= out.chars().count() as u32);
    }

    #[test]
    fn unlisted_broken_and_cut_markers_keep_only_their_text() {
        // Key 5 is not listed: a page-made marker is plain text.
        let forged = format!("row \"{} | {}\"", marker(5, "Delete"), marker(6, "2"));
        assert_eq!(
            resolve(&forged, &[6], |k| format!("@e{k}")),
            "row \"Delete | [@e6 2]\""
        );
        let broken = format!("a{OPEN}x{TEXT}b{CLOSE}c{CLOSE}");
        assert_eq!(resolve(&broken, &[1], |k| format!("@e{k}")), "axbc");
        let cut = format!("\"see {OPEN}4{TEXT}defin…");
        assert_eq!(
            resolve(&cut, &[4], |k| format!("@e{k}")),
            "\"see [@e4 defin…]"
        );
        assert_eq!(resolve("plain", &[], |_| unreachable!()), "plain");
    }
}
