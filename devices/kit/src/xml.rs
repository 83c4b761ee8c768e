//! Reading XML from a device (a `uiautomator` dump, a page source) without letting it harm the
//! reader: the XML parser recurses once per element, so a tree nested deeper than any real
//! screen is refused before it is parsed.

/// How deep the elements of well-formed `xml` nest, found without parsing it: tags are
/// counted outside quoted attribute values, where `>` may appear unescaped, and outside
/// comments, CDATA sections, processing instructions and declarations, which are skipped whole
/// (a closing tag written inside one would otherwise lower the count, and let a tree of any
/// depth through).
pub fn nesting(xml: &str) -> usize {
    let bytes = xml.as_bytes();
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'<' {
            i += 1;
            continue;
        }
        let rest = &bytes[i..];
        let skip_to = |end: &[u8]| {
            rest.windows(end.len())
                .position(|w| w == end)
                .map_or(bytes.len(), |at| i + at + end.len())
        };
        if rest.starts_with(b"<!--") {
            i = skip_to(b"-->");
            continue;
        }
        if rest.starts_with(b"<![CDATA[") {
            i = skip_to(b"]]>");
            continue;
        }
        if rest.starts_with(b"<?") {
            i = skip_to(b"?>");
            continue;
        }
        match bytes.get(i + 1) {
            Some(b'/') => depth = depth.saturating_sub(1),
            Some(b'!') => {}
            _ => {
                // An opening tag: find its end outside quotes; `/>` closes it at once.
                let mut quote = None;
                let mut j = i + 1;
                while j < bytes.len() {
                    match (quote, bytes[j]) {
                        (None, b'"' | b'\'') => quote = Some(bytes[j]),
                        (Some(q), c) if c == q => quote = None,
                        (None, b'>') => break,
                        _ => {}
                    }
                    j += 1;
                }
                if bytes.get(j.wrapping_sub(1)) != Some(&b'/') {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                i = j;
            }
        }
        i += 1;
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_counted_outside_quoted_values() {
        assert_eq!(nesting("<a><b x=\"/>\" y='>'><c/></b></a>"), 2);
        assert_eq!(nesting("<?xml version='1.0'?><a/>"), 0);
    }

    /// Review finding (issue 27): closing tags hidden in comments, CDATA or processing
    /// instructions once lowered the count, so a tree deep enough to overflow the parser's
    /// stack measured 2.
    #[test]
    fn markup_inside_comments_cdata_and_instructions_does_not_lower_the_count() {
        let depth = 20_000;
        for hidden in ["<!--</a>-->", "<![CDATA[</a>]]>", "<?pi </a> ?>"] {
            let xml = format!(
                "{}{}",
                format!("<a>{hidden}").repeat(depth),
                "</a>".repeat(depth)
            );
            assert_eq!(nesting(&xml), depth, "{hidden}");
        }
        assert_eq!(nesting("<a><!-- <b> --></a>"), 1);
        assert_eq!(nesting("<a><!-- unterminated <b><c>"), 1);
    }
}
