//! Typing and key presses.
//!
//! The default typing (`TypeMode::Auto`) is a person's: the field is focused in the page, then
//! every character goes through `chrome.debugger` as a trusted key down/up, so widgets that
//! listen to `keydown`/`keyup` (autocompletes, comboboxes) react as they do to a keyboard, and
//! frameworks see real input. Keys cost about a millisecond each, so a text longer than
//! [`KEYED_MAX`] characters is inserted at once (`Input.insertText`) but for its last
//! character, which is still a key. Keys type nothing into a read-only field, so a read-only
//! picker (`allowReadonly`) is set natively; so is a field that cannot take the focus (keys
//! would go to another element) and any field of a tab the debugger cannot attach to.
//!
//! Native typing happens in the page (js/collector/): the native value setter plus `input` and
//! `change` events, which framework-controlled fields notice (contenteditable: `insertText`).
//! Trusted typing focuses the field in the page, then inserts the text through
//! `chrome.debugger` (`Input.insertText`, or a key down/up per character). A password's
//! resulting value is redacted in the page.

use serde::Deserialize;
use tabwire_protocol::actions::KEYED_MAX;
use tabwire_protocol::{
    ActionFacts, ElementFacts, InputMethod, OpError, Outcome, TabId, Target, TypeMode,
};

use super::steps::{Rebinds, change_target, retrying};
use crate::checkpoint::Checkpoint;
use crate::chrome_tabs::resolve_tab;
use crate::ops::target::{self, PreparedTarget};
use crate::page::{self, PageCommand};
use crate::refs::TOP_FRAME;
use crate::timer::join;
use crate::{debugger, input};
use tabwire_observation::{Detail, PageNode, render_node};

#[derive(Deserialize)]
struct TypedFacts {
    value: String,
    node: PageNode,
    rebound: Option<u32>,
}

impl Rebinds for TypedFacts {
    fn rebound(&self) -> Option<u32> {
        self.rebound
    }
}

#[derive(Deserialize)]
struct Focused {
    node: PageNode,
    rebound: Option<u32>,
    /// For a text field: `input` (one line), `area` or `editable`.
    kind: Option<String>,
    /// For a text field: it is read-only.
    #[serde(default)]
    readonly: bool,
    /// For a text field: it took the focus, so keys go to it.
    #[serde(default)]
    focused: bool,
}

#[derive(Deserialize)]
struct StateFacts {
    state: ElementFacts,
}

/// How to type.
pub struct Typing<'a> {
    /// The text.
    pub text: &'a str,
    /// Replace the current value.
    pub clear: bool,
    /// Keys, the native setter or trusted input.
    pub mode: TypeMode,
    /// For trusted input: one insertion or key events.
    pub input_method: InputMethod,
    /// Accept a read-only field.
    pub allow_readonly: bool,
}

/// Types into the target.
pub async fn type_text(
    tab: TabId,
    target: &Target,
    typing: &Typing<'_>,
    checkpoint: &Checkpoint,
) -> Result<Outcome, OpError> {
    // The tab's URL only renders the field's line: it is read beside the typing.
    let (url, typed) = join(
        resolve_tab(Some(tab)),
        typed_into(tab, target, typing, checkpoint),
    )
    .await;
    match (url, typed) {
        (Ok(url), Ok((node, value, note))) => Ok(typed_outcome(tab, &url.url, &node, value, &note)),
        // A tab that is gone is the first thing to say, unless input had gone out.
        (Err(gone), Err(error)) if !error.action_may_have_occurred => Err(gone),
        (_, Err(error)) => Err(error),
        (Err(gone), Ok(_)) => Err(gone.action_may_have_occurred()),
    }
}

/// Types into the target: the field as the page described it, its value, and a note on how
/// it was typed when that is not by keys.
async fn typed_into(
    tab: TabId,
    target: &Target,
    typing: &Typing<'_>,
    checkpoint: &Checkpoint,
) -> Result<(PageNode, String, String), OpError> {
    let prepared = target::prepare(tab, target, TOP_FRAME)?;
    let missing = prepared.missing_frame();
    let mut note = String::new();
    let (node, value) = match typing.mode {
        TypeMode::Native => native(tab, &prepared, typing, checkpoint).await?,
        TypeMode::Auto => {
            let (node, value, why_native) = auto(tab, &prepared, typing, checkpoint).await?;
            if let Some(why) = why_native {
                note = format!(" (set natively: {why})");
            }
            (node, value)
        }
        TypeMode::Trusted => {
            let editable = Some((typing.clear, typing.allow_readonly));
            let focused = focus(tab, &prepared, editable, checkpoint).await?;
            if focused.kind.as_deref() == Some(FORMATTED) {
                // No key reaches a date field as text: it is set in its format, as `Auto` does.
                let (node, value) = native(tab, &prepared, typing, checkpoint).await?;
                return Ok((node, value, note));
            }
            let node = focused.node;
            debugger::ensure_attached(tab).await?;
            // Each input call passes the checkpoint right before its input goes out.
            match (typing.input_method, typing.text.is_empty()) {
                // Clearing with nothing to type: delete the selected content.
                (_, true) if typing.clear => {
                    input::press_key(tab, &input::key_def("Delete", 0)?, 0, checkpoint).await?
                }
                (_, true) => {}
                (InputMethod::Insert, false) => {
                    input::insert_text(tab, typing.text, checkpoint).await?
                }
                (InputMethod::Keys, false) => {
                    input::type_keys(tab, typing.text, checkpoint).await?
                }
            }
            let value = read_value(tab, prepared.frame, &prepared.page, missing)
                .await
                .map_err(OpError::action_may_have_occurred)?;
            (node, value)
        }
    };
    Ok((node, value, note))
}

/// The outcome of typing into `node`, which now holds `value`.
fn typed_outcome(tab: TabId, url: &str, node: &PageNode, value: String, note: &str) -> Outcome {
    let line = render_node(node, Some(url), Detail::WithoutValue);
    // The value is in the facts and in the observation's line for the field.
    let summary = format!("Typed into {line}{note}");
    let facts = ActionFacts::Type {
        target: line,
        value,
    };
    Outcome::new(tab, summary, facts)
}

/// The default typing: keys ([`keyboard`]), or the value setter for a field keys cannot
/// reach or a tab the debugger cannot attach to. Returns the field, its value, and why it was
/// set natively, if it was.
async fn auto(
    tab: TabId,
    prepared: &PreparedTarget,
    typing: &Typing<'_>,
    checkpoint: &Checkpoint,
) -> Result<(PageNode, String, Option<&'static str>), OpError> {
    if let Err(error) = debugger::ensure_attached(tab).await {
        crate::chrome::log!("tab {tab}: typing natively ({})", error.message);
        let (node, value) = native(tab, prepared, typing, checkpoint).await?;
        return Ok((node, value, Some("the debugger cannot attach to this tab")));
    }
    let field = (typing.clear, typing.allow_readonly);
    match keyboard(tab, prepared, typing.text, field, checkpoint).await? {
        Keyboard::Typed(node) => {
            let value = read_value(
                tab,
                prepared.frame,
                &prepared.page,
                prepared.missing_frame(),
            )
            .await
            .map_err(OpError::action_may_have_occurred)?;
            Ok((*node, value, None))
        }
        Keyboard::Refused(why) => {
            let (node, value) = native(tab, prepared, typing, checkpoint).await?;
            Ok((node, value, Some(why)))
        }
        Keyboard::Formatted => {
            let (node, value) = native(tab, prepared, typing, checkpoint).await?;
            Ok((node, value, None))
        }
    }
}

/// Native typing: the value setter in the page. Returns the field and its value.
async fn native(
    tab: TabId,
    prepared: &PreparedTarget,
    typing: &Typing<'_>,
    checkpoint: &Checkpoint,
) -> Result<(PageNode, String), OpError> {
    let command = PageCommand::Type {
        target: prepared.page.clone(),
        text: typing.text.to_owned(),
        clear: typing.clear,
        allow_readonly: typing.allow_readonly,
    };
    // The page checked its document token before typing; `change_target` double-checks
    // Chrome's view, after the fact, so a mismatch says the text may already be in.
    let typed = change_target::<TypedFacts>(tab, prepared, &command, checkpoint).await?;
    Ok((typed.node, typed.value))
}

/// What [`keyboard`] did.
pub enum Keyboard {
    /// The text went in as keys (and a leading insertion for a long text): the field as the
    /// page described it when it was focused.
    Typed(Box<PageNode>),
    /// Keys cannot type into the field, and nothing was typed: it is read-only (and
    /// `allowReadonly` accepted it), or it did not take the focus (it is not rendered), so
    /// keys would go elsewhere. Says which, for the summary.
    Refused(&'static str),
    /// A date, time, month or week field: its value is set natively in its own format (keys
    /// reach Chrome's picker segment by segment, in the locale's order), which the page checks
    /// before changing anything. Nothing was typed.
    Formatted,
}

/// The kind the page gives a date, time, month or week field (see [`Keyboard::Formatted`]).
const FORMATTED: &str = "formatted";

/// The default typing: focuses the field (selecting its content when `clear`) and types
/// `text` with trusted keys, per [`keyboard_plan`]. The debugger must be attached.
/// `field: (clear, allow_readonly)`.
pub async fn keyboard(
    tab: TabId,
    prepared: &PreparedTarget,
    text: &str,
    field: (bool, bool),
    checkpoint: &Checkpoint,
) -> Result<Keyboard, OpError> {
    let (clear, _) = field;
    let focused = focus(tab, prepared, Some(field), checkpoint).await?;
    if focused.kind.as_deref() == Some(FORMATTED) {
        return Ok(Keyboard::Formatted);
    }
    if focused.readonly {
        return Ok(Keyboard::Refused("it is read-only"));
    }
    if !focused.focused {
        return Ok(Keyboard::Refused("it cannot take the focus"));
    }
    let single_line = focused.kind.as_deref() == Some("input");
    let plan = keyboard_plan(text, single_line);
    if plan.insert.is_empty() && plan.keys.is_empty() {
        if clear {
            // Clearing with nothing to type: delete the selected content.
            input::press_key(tab, &input::key_def("Delete", 0)?, 0, checkpoint).await?;
        }
        return Ok(Keyboard::Typed(Box::new(focused.node)));
    }
    if !plan.insert.is_empty() {
        input::insert_text(tab, &plan.insert, checkpoint).await?;
    }
    input::type_keys(tab, &plan.keys, checkpoint)
        .await
        .map_err(|error| {
            if plan.insert.is_empty() {
                error
            } else {
                error.action_may_have_occurred()
            }
        })?;
    Ok(Keyboard::Typed(Box::new(focused.node)))
}

/// How the default typing sends a text: `insert` at once, then `keys` one by one.
#[derive(Debug, PartialEq, Eq)]
pub struct KeyboardPlan {
    /// Inserted in one trusted edit (empty for a short text).
    pub insert: String,
    /// Typed as a key down/up each (`\n` as Enter).
    pub keys: String,
}

/// Splits `text` for the default typing: up to [`KEYED_MAX`] characters all as keys, a longer
/// text inserted but for its last character. Line breaks become `\n`; a one-line field drops
/// them, as its value setter would (an Enter there would submit the form).
pub fn keyboard_plan(text: &str, single_line: bool) -> KeyboardPlan {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let text = if single_line {
        text.replace('\n', "")
    } else {
        text
    };
    let count = text.chars().count();
    if count <= KEYED_MAX {
        return KeyboardPlan {
            insert: String::new(),
            keys: text,
        };
    }
    let split = text.char_indices().last().map_or(0, |(index, _)| index);
    KeyboardPlan {
        insert: text[..split].to_owned(),
        keys: text[split..].to_owned(),
    }
}

/// Focuses the target in the page (a CSS target is looked up again until the deadline) and
/// returns it as the page described it. `editable: Some((clear, allow_readonly))`: it must
/// accept text (`PageCommand::Focus`), and the reply says its kind and whether it is read-only.
async fn focus(
    tab: TabId,
    prepared: &PreparedTarget,
    editable: Option<(bool, bool)>,
    checkpoint: &Checkpoint,
) -> Result<Focused, OpError> {
    let (clear, allow_readonly) = editable.unwrap_or_default();
    let command = PageCommand::Focus {
        target: prepared.page.clone(),
        editable: editable.is_some(),
        clear,
        allow_readonly,
    };
    let focused = retrying(checkpoint, || {
        page::run::<Focused>(tab, prepared.frame, &command, prepared.missing_frame())
    })
    .await?;
    prepared.check_document(&focused.document_id)?;
    prepared.rebound(tab, focused.value.rebound);
    Ok(focused.value)
}

/// The field's value after trusted typing (redacted for passwords).
async fn read_value(
    tab: TabId,
    frame: u32,
    target: &page::PageTarget,
    missing: page::MissingFrame<'_>,
) -> Result<String, OpError> {
    let reply = page::run::<StateFacts>(
        tab,
        frame,
        &PageCommand::ReadState {
            target: target.clone(),
            attributes: Vec::new(),
            max_chars: 2000,
        },
        missing,
    )
    .await?;
    Ok(reply.value.state.value.unwrap_or_default())
}

/// Presses a key, focusing `target` first when given.
pub async fn press_key(
    tab: TabId,
    key: &str,
    modifiers: u8,
    target: Option<&Target>,
    checkpoint: &Checkpoint,
) -> Result<Outcome, OpError> {
    let def = input::key_def(key, modifiers)?;
    let mut focused_line = None;
    if let Some(target) = target {
        let url = resolve_tab(Some(tab)).await?.url;
        let prepared = target::prepare(tab, target, TOP_FRAME)?;
        let node = focus(tab, &prepared, None, checkpoint).await?.node;
        focused_line = Some(render_node(&node, Some(&url), Detail::Full));
    }
    debugger::ensure_attached(tab).await?;
    input::press_key(tab, &def, modifiers, checkpoint).await?;
    let chord = chord(key, modifiers);
    let summary = match &focused_line {
        Some(line) => format!("Pressed {chord} in {line}"),
        None => format!("Pressed {chord}"),
    };
    let facts = ActionFacts::PressKey {
        key: chord,
        target: focused_line,
    };
    Ok(Outcome::new(tab, summary, facts))
}

/// `Control+Shift+K`-style name of a key with modifiers.
fn chord(key: &str, modifiers: u8) -> String {
    let mut parts: Vec<&str> = [(2, "Control"), (1, "Alt"), (4, "Meta"), (8, "Shift")]
        .into_iter()
        .filter(|(bit, _)| modifiers & bit != 0)
        .map(|(_, name)| name)
        .collect();
    parts.push(key);
    parts.join("+")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_texts_are_all_keys_and_long_ones_end_with_one() {
        let short = keyboard_plan("café", true);
        assert_eq!((short.insert.as_str(), short.keys.as_str()), ("", "café"));
        let limit = "a".repeat(KEYED_MAX);
        assert_eq!(keyboard_plan(&limit, true).keys, limit);
        let long = format!("{}é", "a".repeat(KEYED_MAX));
        let plan = keyboard_plan(&long, false);
        assert_eq!(plan.insert, "a".repeat(KEYED_MAX));
        assert_eq!(plan.keys, "é");
    }

    #[test]
    fn line_breaks_stay_in_text_areas_and_leave_one_line_fields() {
        assert_eq!(keyboard_plan("a\r\nb\rc\n", false).keys, "a\nb\nc\n");
        assert_eq!(keyboard_plan("a\r\nb\rc\n", true).keys, "abc");
        let empty = keyboard_plan("\n", true);
        assert!(empty.insert.is_empty() && empty.keys.is_empty());
    }

    #[test]
    fn chords_name_their_modifiers() {
        assert_eq!(chord("Enter", 0), "Enter");
        assert_eq!(chord("k", 2 | 8), "Control+Shift+k");
        assert_eq!(chord("a", 4), "Meta+a");
    }
}
