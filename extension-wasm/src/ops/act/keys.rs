//! Typing and key presses.
//!
//! Native typing (the default) happens in the page (js/collector/): the native value setter
//! plus `input` and `change` events, which framework-controlled fields notice (contenteditable:
//! `insertText`). Trusted typing focuses the field in the page, then inserts the text through
//! `chrome.debugger` (`Input.insertText`, or a key down/up per character) — the page sees the
//! same trusted events a keyboard makes. A password's resulting value is redacted in the page.

use serde::Deserialize;
use tabwire_protocol::{
    ActionFacts, ElementFacts, InputMethod, OpError, Outcome, TabId, Target, TypeMode,
};

use super::steps::{change_page, retrying};
use crate::checkpoint::Checkpoint;
use crate::chrome_tabs::resolve_tab;
use crate::observation::{Detail, PageNode, render_node};
use crate::ops::target;
use crate::page::{self, PageCommand};
use crate::refs::TOP_FRAME;
use crate::{debugger, input};

#[derive(Deserialize)]
struct TypedFacts {
    value: String,
    node: PageNode,
    rebound: Option<u32>,
}

#[derive(Deserialize)]
struct Focused {
    node: PageNode,
    rebound: Option<u32>,
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
    /// Native setter or trusted input.
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
    let url = resolve_tab(Some(tab)).await?.url;
    let prepared = target::prepare(tab, target, TOP_FRAME)?;
    let missing = prepared.missing_frame();
    let (node, value) = match typing.mode {
        TypeMode::Native => {
            let command = PageCommand::Type {
                target: prepared.page.clone(),
                text: typing.text.to_owned(),
                clear: typing.clear,
                allow_readonly: typing.allow_readonly,
            };
            let reply =
                change_page::<TypedFacts>(tab, prepared.frame, &command, missing, checkpoint)
                    .await?;
            // The page checked its document token before typing; this double-checks Chrome's
            // view, after the fact, so a mismatch must say the text may already be in.
            prepared
                .check_document(&reply.document_id)
                .map_err(OpError::action_may_have_occurred)?;
            prepared.rebound(tab, reply.value.rebound);
            (reply.value.node, reply.value.value)
        }
        TypeMode::Trusted => {
            let editable = Some((typing.clear, typing.allow_readonly));
            let node = focus(tab, &prepared, editable, checkpoint).await?;
            debugger::ensure_attached(tab).await?;
            if typing.input_method == InputMethod::Insert || typing.text.is_empty() {
                checkpoint.check()?;
            }
            match (typing.input_method, typing.text.is_empty()) {
                // Clearing with nothing to type: delete the selected content.
                (_, true) if typing.clear => {
                    input::press_key(tab, &input::key_def("Delete", 0)?, 0).await?
                }
                (_, true) => {}
                (InputMethod::Insert, false) => input::insert_text(tab, typing.text).await?,
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
    let line = render_node(&node, &url, Detail::WithoutValue);
    // The value is in the facts and in the observation's line for the field.
    let summary = format!("Typed into {line}");
    let facts = ActionFacts::Type {
        target: line,
        value,
    };
    Ok(Outcome::new(tab, summary, facts))
}

/// Focuses the target in the page (a CSS target is looked up again until the deadline) and
/// returns it as the page described it. `editable: Some((clear, allow_readonly))`: it must
/// accept text (`PageCommand::Focus`).
async fn focus(
    tab: TabId,
    prepared: &target::PreparedTarget,
    editable: Option<(bool, bool)>,
    checkpoint: &Checkpoint,
) -> Result<PageNode, OpError> {
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
    Ok(focused.value.node)
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
        let node = focus(tab, &prepared, None, checkpoint).await?;
        focused_line = Some(render_node(&node, &url, Detail::Full));
    }
    debugger::ensure_attached(tab).await?;
    checkpoint.check()?;
    input::press_key(tab, &def, modifiers).await?;
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
    fn chords_name_their_modifiers() {
        assert_eq!(chord("Enter", 0), "Enter");
        assert_eq!(chord("k", 2 | 8), "Control+Shift+k");
        assert_eq!(chord("a", 4), "Meta+a");
    }
}
