//! The login scenario: the few calls an agent makes to sign in on `login.html`, on both
//! servers with their defaults. Navigate, type the username, type the password, check
//! "Remember me", click "Sign in", read the result.
//!
//! Each server's own calls live in its module ([`super::tabwire`], [`super::peer`]) and come
//! back as a [`LoginRun`]: every call it made, in order, with what kind of step it was. Refs
//! come from the navigation's own result when it has them; a snapshot is taken (and counted)
//! only when it does not, and likewise to read the result when the click's answer does not show
//! it. A run that does not end signed in, with the right password, trusted clicks and the box
//! checked, is an error: figures of a scenario that did not work would mean nothing.
//!
//! Figures: calls and ~tokens per run (characters of every response as received / 4, averaged
//! over the timed runs) and the p50 round trip per call, per tool; for the whole scenario, the
//! calls, ~tokens and p50 wall time per run.

use std::time::Duration;

use anyhow::{Result, bail};

use super::session::Exchange;
use super::stats::{millis, nearest_rank, tokens};

/// The fixture page.
pub const LOGIN_PAGE: &str = "login.html";
/// Timed runs (after one warm-up run).
pub const LOGIN_RUNS: usize = 5;
/// The username typed.
pub const USERNAME: &str = "alice";
/// The password typed (the one login.html accepts).
pub const PASSWORD: &str = "s3cret!";
/// The result line a successful run ends with.
pub const EXPECTED: &str =
    "Signed in as alice; password ok: true; trusted: true; clicks: 1; remember me: true";

/// What a call was for, so the two servers' tools can be compared step by step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Loading the page.
    Navigate,
    /// Typing into a field.
    Type,
    /// A click (the checkbox, the submit button).
    Click,
    /// A snapshot, for refs or to read the result.
    Read,
}

/// One call of a run.
#[derive(Debug, Clone)]
pub struct Call {
    /// The tool called.
    pub tool: &'static str,
    /// What it was for.
    pub step: Step,
    /// What came back.
    pub exchange: Exchange,
}

/// One run of the scenario on one server.
#[derive(Debug, Clone)]
pub struct LoginRun {
    /// Every call, in order.
    pub calls: Vec<Call>,
    /// Wall time of the whole run.
    pub elapsed: Duration,
    /// Where the result was read: the last click's own answer, or a further call.
    pub read_from_click: bool,
}

impl LoginRun {
    /// Starts a run's record.
    pub fn new() -> LoginRun {
        LoginRun {
            calls: Vec::new(),
            elapsed: Duration::ZERO,
            read_from_click: false,
        }
    }

    /// Records a call and returns its answer for the caller to read.
    pub fn record(&mut self, tool: &'static str, step: Step, exchange: Exchange) -> &Exchange {
        self.calls.push(Call {
            tool,
            step,
            exchange,
        });
        &self.calls.last().expect("just pushed").exchange
    }

    /// Ends the run: checks that the page ended signed in as expected, reading `text` (the
    /// click's answer, or the snapshot taken after it).
    pub fn finish(mut self, text: &str, read_from_click: bool, elapsed: Duration) -> Result<Self> {
        match signed_in_line(text) {
            Some(line) if line == EXPECTED => {}
            Some(line) => bail!("the login ended with {line:?}, not {EXPECTED:?}"),
            None => bail!("no \"Signed in as\" line after the click"),
        }
        self.read_from_click = read_from_click;
        self.elapsed = elapsed;
        Ok(self)
    }
}

impl Default for LoginRun {
    fn default() -> Self {
        LoginRun::new()
    }
}

/// One tool's figures in the scenario.
#[derive(Debug, Clone)]
pub struct ToolFigures {
    /// The tool.
    pub tool: &'static str,
    /// What it was used for (its first use).
    pub step: Step,
    /// Calls per run (an average if runs differed).
    pub calls: f64,
    /// ~tokens of its responses per run, as received.
    pub tokens: usize,
    /// ~tokens of their text content per run (what the model reads).
    pub text_tokens: usize,
    /// Median round trip of one call, milliseconds.
    pub p50_ms: f64,
}

/// The scenario's figures on one server.
#[derive(Debug, Clone)]
pub struct LoginFigures {
    /// Timed runs.
    pub runs: usize,
    /// Per tool, in order of first use.
    pub tools: Vec<ToolFigures>,
    /// Calls per run.
    pub calls: f64,
    /// ~tokens per run, every response as received.
    pub tokens: usize,
    /// ~tokens of text content per run.
    pub text_tokens: usize,
    /// Median wall time of a whole run, milliseconds.
    pub p50_ms: f64,
    /// Whether every timed run read the result from the last click's answer.
    pub read_from_click: bool,
}

impl LoginFigures {
    /// The figures of the tool used for clicks.
    pub fn click(&self) -> Option<&ToolFigures> {
        self.tools.iter().find(|tool| tool.step == Step::Click)
    }
}

/// The figures of `runs` (at least one).
pub fn summarise(runs: &[LoginRun]) -> LoginFigures {
    let count = runs.len().max(1);
    let mut tools: Vec<(ToolFigures, Vec<Duration>, usize, usize)> = Vec::new();
    for call in runs.iter().flat_map(|run| &run.calls) {
        let index = match tools.iter().position(|(t, ..)| t.tool == call.tool) {
            Some(index) => index,
            None => {
                tools.push((
                    ToolFigures {
                        tool: call.tool,
                        step: call.step,
                        calls: 0.0,
                        tokens: 0,
                        text_tokens: 0,
                        p50_ms: 0.0,
                    },
                    Vec::new(),
                    0,
                    0,
                ));
                tools.len() - 1
            }
        };
        let (_, samples, chars, text_chars) = &mut tools[index];
        samples.push(call.exchange.elapsed);
        *chars += call.exchange.chars;
        *text_chars += call.exchange.text_chars();
    }
    let tools: Vec<ToolFigures> = tools
        .into_iter()
        .map(|(mut figures, mut samples, chars, text_chars)| {
            samples.sort();
            figures.calls = samples.len() as f64 / count as f64;
            figures.tokens = tokens(chars / count);
            figures.text_tokens = tokens(text_chars / count);
            figures.p50_ms = millis(nearest_rank(&samples, 50));
            figures
        })
        .collect();
    let mut walls: Vec<Duration> = runs.iter().map(|run| run.elapsed).collect();
    walls.sort();
    let all_chars: usize = runs
        .iter()
        .flat_map(|run| &run.calls)
        .map(|call| call.exchange.chars)
        .sum();
    let all_text: usize = runs
        .iter()
        .flat_map(|run| &run.calls)
        .map(|call| call.exchange.text_chars())
        .sum();
    LoginFigures {
        runs: runs.len(),
        calls: runs.iter().map(|run| run.calls.len()).sum::<usize>() as f64 / count as f64,
        tokens: tokens(all_chars / count),
        text_tokens: tokens(all_text / count),
        p50_ms: if walls.is_empty() {
            0.0
        } else {
            millis(nearest_rank(&walls, 50))
        },
        read_from_click: runs.iter().all(|run| run.read_from_click),
        tools,
    }
}

/// The `Signed in as …` status in either server's rendering, up to the end of its line or
/// closing quote.
pub fn signed_in_line(text: &str) -> Option<String> {
    let at = text.find("Signed in as ")?;
    Some(
        text[at..]
            .split(['\n', '"'])
            .next()
            .unwrap_or_default()
            .trim_end()
            .to_owned(),
    )
}

/// The refs of the username field, the password field, the checkbox and the submit button, if
/// `text` (a navigation's result or a snapshot, in either server's rendering) shows them all.
pub fn login_refs(text: &str) -> Option<[String; 4]> {
    Some([
        ref_on_line(text, "textbox \"Username\"")?,
        ref_on_line(text, "\"Password\"")?,
        ref_on_line(text, "checkbox \"Remember me\"")?,
        ref_on_line(text, "button \"Sign in\"")?,
    ])
}

/// The ref on the first line of `text` containing `needle`, in either server's rendering:
/// tabwire's `@e4 textbox "Username"` or the peer's `- textbox "Username" [ref=e4]`.
pub fn ref_on_line(text: &str, needle: &str) -> Option<String> {
    let line = text.lines().find(|line| line.contains(needle))?;
    if let Some((_, after)) = line.split_once("[ref=") {
        return Some(after.split_once(']')?.0.to_owned());
    }
    let first = line.split_whitespace().next()?;
    first.starts_with('@').then(|| first.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(chars: usize, text: &str, ms: u64) -> Exchange {
        Exchange {
            is_error: false,
            structured: serde_json::Value::Null,
            text: text.into(),
            images: Vec::new(),
            bytes: chars,
            chars,
            elapsed: Duration::from_millis(ms),
        }
    }

    #[test]
    fn result_lines_in_either_rendering() {
        let ours = format!("Clicked button \"Sign in\"\n@e9 status \"{EXPECTED}\"\n@e10 x");
        assert_eq!(signed_in_line(&ours).as_deref(), Some(EXPECTED));
        let theirs = format!("- status [ref=e12]: {EXPECTED}\n- paragraph");
        assert_eq!(signed_in_line(&theirs).as_deref(), Some(EXPECTED));
        assert_eq!(signed_in_line("Not signed in"), None);
    }

    #[test]
    fn refs_in_either_rendering() {
        let ours =
            "tab 1 \"Fixture login\"\n@e3 textbox \"Username\"\n@e4 checkbox \"Remember me\"";
        assert_eq!(
            ref_on_line(ours, "textbox \"Username\"").as_deref(),
            Some("@e3")
        );
        let theirs = "  - textbox \"Username\" [ref=e7]\n  - checkbox \"Remember me\" [ref=e9]";
        assert_eq!(
            ref_on_line(theirs, "checkbox \"Remember me\"").as_deref(),
            Some("e9")
        );
        assert_eq!(ref_on_line(theirs, "button \"Sign in\""), None);
        assert!(login_refs(theirs).is_none());
        let form = "- textbox \"Username\" [ref=e3]\n- text: Password\n- textbox \"Password\" [ref=e5]\n\
                    - checkbox \"Remember me\" [ref=e6]\n- button \"Sign in\" [ref=e7]";
        assert_eq!(login_refs(form).unwrap(), ["e3", "e5", "e6", "e7"]);
    }

    #[test]
    fn runs_are_summarised_per_tool_and_per_run() {
        let run = |navigate_ms, click_ms| {
            let mut run = LoginRun::new();
            run.record("nav", Step::Navigate, exchange(400, "abcd", navigate_ms));
            run.record("type", Step::Type, exchange(100, "ab", 5));
            run.record("type", Step::Type, exchange(100, "ab", 7));
            run.record("click", Step::Click, exchange(200, "", click_ms));
            run.finish(EXPECTED, true, Duration::from_millis(100))
                .unwrap()
        };
        let figures = summarise(&[run(10, 2), run(30, 4), run(20, 6)]);
        assert_eq!(figures.runs, 3);
        assert_eq!(figures.calls, 4.0);
        assert_eq!(figures.tokens, 800 / 4);
        assert_eq!(figures.text_tokens, 8 / 4);
        assert!(figures.read_from_click);
        let tools: Vec<_> = figures.tools.iter().map(|t| (t.tool, t.calls)).collect();
        assert_eq!(tools, [("nav", 1.0), ("type", 2.0), ("click", 1.0)]);
        assert_eq!(figures.tools[0].p50_ms, 20.0);
        assert_eq!(figures.tools[1].tokens, 50);
        assert_eq!(figures.click().unwrap().p50_ms, 4.0);
    }

    #[test]
    fn a_run_that_did_not_sign_in_is_an_error() {
        let wrong = EXPECTED.replace("remember me: true", "remember me: false");
        assert!(
            LoginRun::new()
                .finish(&wrong, true, Duration::ZERO)
                .is_err()
        );
        assert!(
            LoginRun::new()
                .finish("Not signed in", false, Duration::ZERO)
                .is_err()
        );
    }
}
