//! A syntax check of CSS selectors in the hub, so that a selector the browser would refuse fails
//! before anything reaches it: a batch whose third step has `div[` must not run its first two.
//!
//! The check follows the grammar of CSS Selectors 4 (selector lists, combinators, compound
//! selectors, attribute selectors, pseudo-classes and -elements, escapes, namespaces) and is
//! conservative: it refuses only what cannot be a valid selector. The arguments of functional
//! pseudo-classes (`:not(…)`, `:nth-child(…)`, `:has(…)`) are only checked for balance; anything
//! subtler is left to the browser, which still reports `INVALID_SELECTOR` when the step runs.

/// Checks `selector`'s syntax; the error says what is wrong and where (1-based character).
pub fn check(selector: &str) -> Result<(), String> {
    let mut parser = Parser {
        chars: selector.chars().collect(),
        pos: 0,
    };
    parser.selector_list()
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{c}')
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || !c.is_ascii()
}

fn is_name_char(c: char) -> bool {
    is_name_start(c) || c.is_ascii_digit() || c == '-'
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.peek_at(0)
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn bump(&mut self) {
        self.pos += 1;
    }

    fn error(&self, what: &str) -> String {
        format!("{what} (character {})", self.pos + 1)
    }

    fn unexpected(&self) -> String {
        match self.peek() {
            Some(c) => self.error(&format!("unexpected {c:?}")),
            None => self.error("unexpected end"),
        }
    }

    /// Skips whitespace and comments; true when there was whitespace (a descendant
    /// combinator).
    fn skip_whitespace(&mut self) -> bool {
        let mut any = false;
        loop {
            match self.peek() {
                Some(c) if is_whitespace(c) => {
                    any = true;
                    self.bump();
                }
                Some('/') if self.peek_at(1) == Some('*') => {
                    self.pos += 2;
                    while self.peek().is_some()
                        && !(self.peek() == Some('*') && self.peek_at(1) == Some('/'))
                    {
                        self.bump();
                    }
                    self.pos = (self.pos + 2).min(self.chars.len());
                }
                _ => return any,
            }
        }
    }

    /// A backslash that starts an escape (CSS Syntax §4.3.8): not followed by a line break.
    fn escape_at(&self, offset: usize) -> bool {
        self.peek_at(offset) == Some('\\') && self.peek_at(offset + 1) != Some('\n')
    }

    fn at_ident_start(&self) -> bool {
        match self.peek() {
            Some('-') => match self.peek_at(1) {
                Some('-') => true,
                Some(c) if is_name_start(c) => true,
                _ => self.escape_at(1),
            },
            Some(c) if is_name_start(c) => true,
            _ => self.escape_at(0),
        }
    }

    /// Consumes name characters and escapes.
    fn name(&mut self) {
        loop {
            match self.peek() {
                Some(c) if is_name_char(c) => self.bump(),
                Some('\\') if self.escape_at(0) => {
                    self.bump();
                    let hex = self.chars[self.pos..]
                        .iter()
                        .take(6)
                        .take_while(|c| c.is_ascii_hexdigit())
                        .count();
                    if hex > 0 {
                        self.pos += hex;
                        if self.peek().is_some_and(is_whitespace) {
                            self.bump();
                        }
                    } else if self.peek().is_some() {
                        self.bump();
                    }
                }
                _ => return,
            }
        }
    }

    fn ident(&mut self, what: &str) -> Result<(), String> {
        if !self.at_ident_start() {
            return Err(self.error(&format!("expected {what}")));
        }
        self.name();
        Ok(())
    }

    fn selector_list(&mut self) -> Result<(), String> {
        loop {
            self.complex()?;
            match self.peek() {
                Some(',') => self.bump(),
                None => return Ok(()),
                Some(_) => return Err(self.unexpected()),
            }
        }
    }

    fn complex(&mut self) -> Result<(), String> {
        self.skip_whitespace();
        if matches!(self.peek(), Some('>' | '+' | '~')) {
            return Err(self.error("a selector cannot start with a combinator"));
        }
        self.compound()?;
        loop {
            let spaced = self.skip_whitespace();
            match self.peek() {
                None | Some(',') => return Ok(()),
                Some('>' | '+' | '~') => {
                    self.bump();
                    self.skip_whitespace();
                    if matches!(self.peek(), None | Some(',' | '>' | '+' | '~')) {
                        return Err(self.error("expected a selector after the combinator"));
                    }
                    self.compound()?;
                }
                Some(_) if spaced => self.compound()?,
                Some(_) => return Err(self.unexpected()),
            }
        }
    }

    fn compound(&mut self) -> Result<(), String> {
        let start = self.pos;
        self.type_selector()?;
        loop {
            match self.peek() {
                Some('#') => {
                    self.bump();
                    if !self.at_ident_start() {
                        return Err(self.error(
                            "expected an id after # (an id starting with a digit needs \
                             [id=\"…\"])",
                        ));
                    }
                    self.name();
                }
                Some('.') => {
                    self.bump();
                    self.ident("a class name after .")?;
                }
                Some('[') => self.attribute()?,
                Some(':') => self.pseudo()?,
                // The nesting selector (`&`), valid in querySelector as the scoping root.
                Some('&') => self.bump(),
                _ => break,
            }
        }
        if self.pos == start {
            return Err(match self.peek() {
                None => self.error("expected a selector"),
                Some(_) => self.unexpected(),
            });
        }
        Ok(())
    }

    /// `[ns|]name`, `*`, `ns|*`, `|name`; absent is fine.
    fn type_selector(&mut self) -> Result<(), String> {
        let namespace_bar = |parser: &Parser, offset| {
            parser.peek_at(offset) == Some('|') && parser.peek_at(offset + 1) != Some('=')
        };
        if self.peek() == Some('*') {
            self.bump();
        } else if self.at_ident_start() {
            self.name();
        } else if !namespace_bar(self, 0) {
            return Ok(());
        }
        if namespace_bar(self, 0) {
            self.bump();
            if self.peek() == Some('*') {
                self.bump();
            } else {
                self.ident("an element name after |")?;
            }
        }
        Ok(())
    }

    fn attribute(&mut self) -> Result<(), String> {
        self.bump();
        self.skip_whitespace();
        if self.peek() == Some('*') && self.peek_at(1) == Some('|') {
            self.pos += 2;
        } else if self.peek() == Some('|') && self.peek_at(1) != Some('=') {
            self.bump();
        }
        self.ident("an attribute name after [")?;
        if self.peek() == Some('|') && self.peek_at(1) != Some('=') {
            self.bump();
            self.ident("an attribute name after |")?;
        }
        self.skip_whitespace();
        match (self.peek(), self.peek_at(1)) {
            (Some(']'), _) => {
                self.bump();
                return Ok(());
            }
            (Some('='), _) => self.bump(),
            (Some('~' | '|' | '^' | '$' | '*'), Some('=')) => self.pos += 2,
            (None, _) => return Err(self.error("unclosed [")),
            _ => {
                return Err(
                    self.error("expected ], =, ~=, |=, ^=, $= or *= in the attribute selector")
                );
            }
        }
        self.skip_whitespace();
        match self.peek() {
            Some(quote @ ('"' | '\'')) => self.string(quote)?,
            _ if self.at_ident_start() => self.name(),
            _ => {
                return Err(self.error(
                    "an attribute value must be a name or a quoted string (quote numbers: \
                     [data-id=\"1\"])",
                ));
            }
        }
        self.skip_whitespace();
        if matches!(self.peek(), Some('i' | 'I' | 's' | 'S')) {
            self.bump();
            self.skip_whitespace();
        }
        match self.peek() {
            Some(']') => {
                self.bump();
                Ok(())
            }
            None => Err(self.error("unclosed [")),
            Some(_) => Err(self.unexpected()),
        }
    }

    fn string(&mut self, quote: char) -> Result<(), String> {
        self.bump();
        loop {
            match self.peek() {
                None => return Err(self.error("unclosed string")),
                Some('\n') => return Err(self.error("line break in a string")),
                Some('\\') => self.pos = (self.pos + 2).min(self.chars.len()),
                Some(c) => {
                    self.bump();
                    if c == quote {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// `:name`, `::name`, or either with `(…)`.
    fn pseudo(&mut self) -> Result<(), String> {
        self.bump();
        if self.peek() == Some(':') {
            self.bump();
        }
        self.ident("a pseudo-class or pseudo-element name after :")?;
        if self.peek() == Some('(') {
            self.bump();
            self.balanced(')')?;
        }
        Ok(())
    }

    /// Skips to the `close` that balances an opening just consumed, across nested brackets and
    /// strings.
    fn balanced(&mut self, close: char) -> Result<(), String> {
        loop {
            match self.peek() {
                None => return Err(self.error(&format!("missing {close:?}"))),
                Some(c) if c == close => {
                    self.bump();
                    return Ok(());
                }
                Some('(') => {
                    self.bump();
                    self.balanced(')')?;
                }
                Some('[') => {
                    self.bump();
                    self.balanced(']')?;
                }
                Some(quote @ ('"' | '\'')) => self.string(quote)?,
                Some('\\') => self.pos = (self.pos + 2).min(self.chars.len()),
                Some(')' | ']') => return Err(self.unexpected()),
                Some(_) => self.bump(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_selectors_pass() {
        for ok in [
            "#login button[type=submit]",
            "input[name=\"q\"]",
            "a[href^='http' i]",
            "[ data-x = \"y\" s ]",
            "[data-x]",
            "[aria-label=\"Close dialog\"]",
            "ul > li:nth-child(2n+1)",
            "div:not(.a, .b) ~ p + span",
            ":is(h1, h2)::before",
            "p::first-line",
            "a:has(> img)",
            "label:has(+ input)",
            "svg|rect",
            "*|*",
            "|a",
            "*",
            "[*|lang]",
            ".a\\:b",
            "#foo\\.bar",
            ".\\31 23",
            "div.-foo",
            ".--x",
            "._a",
            "é.ü",
            "tr:nth-child(3) td:first-child",
            "button[data-testid='submit'], a.link",
            "div >p",
            "div> p",
            "div>p",
            "e3",
            "input:checked",
            ":root",
            "a /* note */ b",
            "&.active",
            "li:nth-child(2 of .x)",
            "a:not([href=\")\"])",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn invalid_selectors_fail_with_a_reason() {
        for (bad, reason) in [
            ("div[", "expected an attribute name"),
            ("div[x", "unclosed ["),
            ("[a=1]", "quoted string"),
            ("[a=\"b", "unclosed string"),
            ("[a==b]", "quoted string"),
            ("[a b]", "expected ]"),
            ("#1", "an id starting with a digit"),
            (".", "class name"),
            (".1a", "class name"),
            ("a >", "after the combinator"),
            ("> a", "cannot start with a combinator"),
            ("a > > b", "after the combinator"),
            ("a,", "expected a selector"),
            (",a", "unexpected ','"),
            ("a,,b", "unexpected ','"),
            ("a:not(b", "missing ')'"),
            ("a)", "unexpected ')'"),
            ("a::", "pseudo-class or pseudo-element name"),
            ("div*", "unexpected '*'"),
            ("\"x\"", "unexpected '\"'"),
            ("a b \"c\"", "unexpected '\"'"),
            ("a:nth-child(2))", "unexpected ')'"),
        ] {
            let error = check(bad).expect_err(bad);
            assert!(error.contains(reason), "{bad}: {error}");
            assert!(error.contains("(character "), "{bad}: {error}");
        }
    }
}
