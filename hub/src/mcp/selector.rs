//! Checking the `selector` argument of element tools before anything reaches a browser.
//!
//! A selector is an observed `@ref` (`@e12`, `@f2e5`) or a native CSS selector that must match
//! exactly one element (the extension checks the match). Playwright's own locator syntax looks
//! like CSS to the eye but is not; it is refused here with a pointer to what works instead.
//! CSS syntax is checked here too (`css.rs`), so a batch is refused whole before it starts.

use tabwire_protocol::{ElementRef, ErrorCode, Target};

use super::css;
use super::envelope::ToolError;

const MAX_SELECTOR_LEN: usize = 2000;

/// Fragments that only Playwright understands. Each would otherwise fail in the page with a
/// less helpful syntax error, or worse, match something unintended.
const PLAYWRIGHT_ONLY: &[&str] = &[
    ":has-text(",
    ":text(",
    ":text-is(",
    ":text-matches(",
    ":nth-match(",
    ":visible",
    ">>",
];
const PLAYWRIGHT_PREFIXES: &[&str] = &["text=", "css=", "xpath=", "role=", "internal:", "//"];

/// Parses a selector argument into a [`Target`].
pub fn parse(selector: &str) -> Result<Target, ToolError> {
    let selector = selector.trim();
    if selector.is_empty() {
        return Err(ToolError::invalid("selector is empty"));
    }
    if selector.len() > MAX_SELECTOR_LEN {
        return Err(ToolError::invalid(format!(
            "selector is longer than {MAX_SELECTOR_LEN} characters"
        )));
    }
    if selector.starts_with('@') {
        return ElementRef::parse(selector).map(Target::Ref).ok_or_else(|| {
            ToolError::new(
                ErrorCode::InvalidSelector,
                format!(
                    "{selector} is not a ref; refs look like @e12 (or @f2e5 in a frame), exactly as \
                     a snapshot shows them"
                ),
            )
        });
    }
    let playwright = PLAYWRIGHT_PREFIXES
        .iter()
        .any(|prefix| selector.starts_with(prefix))
        || PLAYWRIGHT_ONLY
            .iter()
            .any(|fragment| selector.contains(fragment));
    if playwright {
        return Err(ToolError::new(
            ErrorCode::InvalidSelector,
            format!(
                "{selector} uses Playwright locator syntax, which tabwire does not accept. Use an \
                 @ref from get_page_snapshot, or a plain CSS selector"
            ),
        ));
    }
    css::check(selector).map_err(|reason| {
        ToolError::new(
            ErrorCode::InvalidSelector,
            format!(
                "{} is not a valid CSS selector: {reason}",
                serde_json::Value::String(selector.chars().take(200).collect())
            ),
        )
    })?;
    Ok(Target::Css(selector.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_and_css() {
        assert_eq!(parse("@e3").unwrap(), Target::Ref(ElementRef::top(3)));
        assert_eq!(
            parse(" #login button[type=submit] ").unwrap(),
            Target::Css("#login button[type=submit]".into())
        );
        // Without the @ this is a CSS type selector, and is passed on as one.
        assert_eq!(parse("e3").unwrap(), Target::Css("e3".into()));
    }

    #[test]
    fn bad_selectors_fail_up_front() {
        for bad in [
            "@x1",
            "@e",
            "button:has-text(\"Go\")",
            "text=Sign in",
            "//div",
            "a >> b",
            "div[",
            "[data-id=1]",
        ] {
            assert_eq!(
                parse(bad).unwrap_err().code,
                ErrorCode::InvalidSelector,
                "{bad}"
            );
        }
        assert_eq!(parse("  ").unwrap_err().code, ErrorCode::InvalidArgument);
    }
}
