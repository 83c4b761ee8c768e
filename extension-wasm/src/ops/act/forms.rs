//! Choosing options, filling forms and scrolling.
//!
//! A native `<select>` is set in the page (value setter plus `input`/`change`), as a person's
//! choice would end. An option of an open custom dropdown is found by its exact visible text,
//! scrolled into view inside the dropdown, and clicked with trusted input.
//!
//! A form's fields are all checked in the page before any is set, so a bad field leaves the
//! form untouched. Then, in the fields' order, text fields are typed as `type_text` types by
//! default (trusted keys, `keys::keyboard`), so a form's key listeners react as they do to a
//! person, and the other fields (selects, checkboxes, dates…) are set in the page; a last page
//! call reports every field and requests submission. In a tab the debugger cannot attach to,
//! one page call checks and sets every field natively.

use serde::Deserialize;
use tabwire_protocol::{
    ActionFacts, ErrorCode, FieldValue, FilledField, FormField, MouseButton, OpError, Outcome,
    TabId, Target,
};

use super::keys::{self, Keyboard};
use super::steps::{Rebinds, change_page, change_target, retrying};
use crate::checkpoint::Checkpoint;
use crate::chrome_tabs::{get_tab, resolve_tab};
use crate::ops::target::{self, PreparedTarget};
use crate::page::{self, InPage, PageCommand, PageField};
use crate::refs::TOP_FRAME;
use crate::{debugger, input};
use tabwire_observation::{Detail, PageNode, render_node};

#[derive(Deserialize)]
struct Selected {
    node: PageNode,
    value: String,
    text: String,
    rebound: Option<u32>,
}

impl Rebinds for Selected {
    fn rebound(&self) -> Option<u32> {
        self.rebound
    }
}

#[derive(Deserialize)]
struct OptionPoint {
    x: f64,
    y: f64,
    node: PageNode,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Filled {
    fields: Vec<FieldFacts>,
    submitted: bool,
    form_valid: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FieldFacts {
    node: PageNode,
    value: FieldValue,
    valid: bool,
    validation_message: Option<String>,
    rebound: Option<u32>,
}

#[derive(Deserialize)]
struct CheckedForm {
    fields: Vec<CheckedField>,
}

#[derive(Deserialize)]
struct CheckedField {
    /// It takes typed text.
    typed: bool,
    rebound: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Scrolled {
    scroll_x: f64,
    scroll_y: f64,
    at_end: bool,
    node: Option<PageNode>,
}

/// Chooses an option: of a native `<select>`, or of an open custom dropdown.
pub async fn select_option(
    tab: TabId,
    target: Option<&Target>,
    value: Option<&str>,
    text: Option<&str>,
    checkpoint: &Checkpoint,
) -> Result<Outcome, OpError> {
    let url = resolve_tab(Some(tab)).await?.url;
    let Some(target) = target else {
        let text = text.ok_or_else(|| {
            OpError::new(
                ErrorCode::InvalidArgument,
                "Without a selector, give the option's exact text.",
            )
        })?;
        let found = retrying(checkpoint, || async {
            page::run::<OptionPoint>(
                tab,
                TOP_FRAME,
                &PageCommand::FindOption {
                    text: text.to_owned(),
                },
                page::MissingFrame::Requested,
            )
            .await
        })
        .await?;
        let line = render_node(&found.value.node, Some(&url), Detail::Full);
        let shown = get_tab(tab).await?.active;
        debugger::ensure_attached(tab).await?;
        input::click(
            tab,
            (found.value.x, found.value.y),
            MouseButton::Left,
            1,
            shown,
            checkpoint,
        )
        .await?;
        let summary = format!("Chose {line}");
        let facts = ActionFacts::ChooseOption {
            target: line,
            text: text.to_owned(),
        };
        return Ok(Outcome::new(tab, summary, facts));
    };
    let prepared = target::prepare(tab, target, TOP_FRAME)?;
    let command = PageCommand::SelectNative {
        target: prepared.page.clone(),
        value: value.map(str::to_owned),
        text: text.map(str::to_owned),
    };
    let chosen = change_target::<Selected>(tab, &prepared, &command, checkpoint).await?;
    let line = render_node(&chosen.node, Some(&url), Detail::WithoutValue);
    let summary = format!("Selected \"{}\" in {line}", chosen.text);
    let facts = ActionFacts::SelectOption {
        target: line,
        value: chosen.value,
        text: chosen.text,
    };
    Ok(Outcome::new(tab, summary, facts))
}

/// Fills several fields of one form, all in one frame.
pub async fn fill_form(
    tab: TabId,
    fields: &[FormField],
    submit: bool,
    checkpoint: &Checkpoint,
) -> Result<Outcome, OpError> {
    let url = resolve_tab(Some(tab)).await?.url;
    let mut prepared = Vec::with_capacity(fields.len());
    for field in fields {
        prepared.push(target::prepare(tab, &field.target, TOP_FRAME)?);
    }
    let frame = prepared.first().map_or(TOP_FRAME, |p| p.frame);
    if prepared.iter().any(|p| p.frame != frame) {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            "The fields are in different frames; a form lives in one frame. Fill each frame's \
             fields with its own fill_form call.",
        ));
    }
    let page_fields: Vec<PageField> = prepared
        .iter()
        .zip(fields)
        .map(|(p, f)| PageField {
            target: p.page.clone(),
            value: f.value.clone(),
        })
        .collect();
    let has_text = fields
        .iter()
        .any(|f| matches!(f.value, FieldValue::Text(_)));
    let attached = match debugger::ensure_attached(tab).await {
        Ok(()) => true,
        Err(error) if has_text => {
            crate::chrome::log!("tab {tab}: filling natively ({})", error.message);
            false
        }
        Err(_) => false,
    };
    let reply = if has_text && attached {
        fill_with_keys(tab, &prepared, fields, page_fields, submit, checkpoint).await?
    } else {
        // Only checkboxes and radio buttons, or no debugger: one page call does it all.
        let command = PageCommand::FillForm {
            fields: page_fields,
            submit,
        };
        let missing = prepared
            .first()
            .map_or(page::MissingFrame::Requested, |p| p.missing_frame());
        change_page::<Filled>(tab, frame, &command, missing, checkpoint).await?
    };
    for p in &prepared {
        p.check_document(&reply.document_id)
            .map_err(OpError::action_may_have_occurred)?;
    }
    let filled = reply.value;
    for (p, field) in prepared.iter().zip(&filled.fields) {
        p.rebound(tab, field.rebound);
    }
    let invalid = filled.fields.iter().filter(|f| !f.valid).count();
    let results: Vec<FilledField> = filled
        .fields
        .into_iter()
        .map(|f| FilledField {
            target: render_node(&f.node, Some(&url), Detail::WithoutValue),
            value: f.value,
            valid: f.valid,
            validation_message: f.validation_message.filter(|_| !f.valid),
        })
        .collect();
    let mut summary = format!("Filled {} field(s)", results.len());
    if invalid > 0 {
        summary.push_str(&format!("; {invalid} invalid"));
    }
    if submit {
        summary.push_str(if filled.submitted {
            "; submission requested"
        } else {
            "; not submitted (the form is invalid)"
        });
    }
    let facts = ActionFacts::Fill {
        fields: results,
        submitted: filled.submitted,
        form_valid: filled.form_valid,
    };
    Ok(Outcome::new(tab, summary, facts))
}

/// Fills a form with keys: checks every field (changing nothing), then in order types each
/// text field with trusted keys and sets each run of other fields in the page, then reports.
/// Once something is set, any failure says the action may have occurred.
async fn fill_with_keys(
    tab: TabId,
    prepared: &[PreparedTarget],
    fields: &[FormField],
    page_fields: Vec<PageField>,
    submit: bool,
    checkpoint: &Checkpoint,
) -> Result<InPage<Filled>, OpError> {
    let Some(first) = prepared.first() else {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            "No fields to fill.",
        ));
    };
    let (frame, missing) = (first.frame, first.missing_frame());
    let check = PageCommand::CheckForm {
        fields: page_fields.clone(),
        submit,
    };
    let checked = retrying(checkpoint, || {
        page::run::<CheckedForm>(tab, frame, &check, missing)
    })
    .await?;
    for p in prepared {
        p.check_document(&checked.document_id)?;
    }
    for (p, field) in prepared.iter().zip(&checked.value.fields) {
        p.rebound(tab, field.rebound);
    }
    let typed: Vec<bool> = checked.value.fields.iter().map(|f| f.typed).collect();
    if !typed.contains(&true) {
        // No text to type: the one page call that checks and sets does it all.
        let command = PageCommand::FillForm {
            fields: page_fields,
            submit,
        };
        return change_page::<Filled>(tab, frame, &command, missing, checkpoint).await;
    }
    let mut started = false;
    let after_start = |started: bool| {
        move |error: OpError| {
            if started {
                error.action_may_have_occurred()
            } else {
                error
            }
        }
    };
    // Fields set in the page, waiting for the next typed field (or the end).
    let mut run: Vec<PageField> = Vec::new();
    for (index, page_field) in page_fields.into_iter().enumerate() {
        let FieldValue::Text(text) = &fields[index].value else {
            run.push(page_field);
            continue;
        };
        if !typed.get(index).copied().unwrap_or(false) {
            run.push(page_field);
            continue;
        }
        set_in_page(tab, frame, missing, &mut run, checkpoint)
            .await
            .map_err(after_start(started))?;
        started = true;
        let keyed = keys::keyboard(tab, &prepared[index], text, (true, false), checkpoint)
            .await
            .map_err(after_start(started))?;
        // A field keys cannot reach is set in the page, as type_text would set it (the page
        // refused a read-only one before any key, as read-only fields are not allowed here).
        if let Keyboard::Refused(_) | Keyboard::Formatted = keyed {
            run.push(page_field);
        }
    }
    set_in_page(tab, frame, missing, &mut run, checkpoint)
        .await
        .map_err(after_start(started))?;
    let finish = PageCommand::FinishForm {
        targets: prepared.iter().map(|p| p.page.clone()).collect(),
        submit,
    };
    change_page::<Filled>(tab, frame, &finish, missing, checkpoint)
        .await
        .map_err(OpError::action_may_have_occurred)
}

/// Sets the waiting `run` of fields in the page (natively, no submission) and empties it.
async fn set_in_page(
    tab: TabId,
    frame: u32,
    missing: page::MissingFrame<'_>,
    run: &mut Vec<PageField>,
    checkpoint: &Checkpoint,
) -> Result<(), OpError> {
    if run.is_empty() {
        return Ok(());
    }
    let command = PageCommand::FillForm {
        fields: std::mem::take(run),
        submit: false,
    };
    change_page::<Filled>(tab, frame, &command, missing, checkpoint).await?;
    Ok(())
}

/// Scrolls the page or an element, or brings an element into view.
pub async fn scroll(
    tab: TabId,
    target: Option<&Target>,
    dx: f64,
    dy: f64,
    to: Option<&Target>,
    checkpoint: &Checkpoint,
) -> Result<Outcome, OpError> {
    let url = resolve_tab(Some(tab)).await?.url;
    let target = target
        .map(|t| target::prepare(tab, t, TOP_FRAME))
        .transpose()?;
    let to = to.map(|t| target::prepare(tab, t, TOP_FRAME)).transpose()?;
    let named = to.as_ref().or(target.as_ref());
    let frame = named.map_or(TOP_FRAME, |p| p.frame);
    if let (Some(a), Some(b)) = (&target, &to)
        && a.frame != b.frame
    {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            "The element to scroll and the element to bring into view are in different frames.",
        ));
    }
    let missing = named.map_or(page::MissingFrame::Requested, |p| p.missing_frame());
    let command = PageCommand::Scroll {
        target: target.as_ref().map(|p| p.page.clone()),
        dx,
        dy,
        to: to.as_ref().map(|p| p.page.clone()),
    };
    let reply = change_page::<Scrolled>(tab, frame, &command, missing, checkpoint).await?;
    let scrolled = reply.value;
    let line = scrolled
        .node
        .as_ref()
        .map(|n| render_node(n, Some(&url), Detail::Full));
    let summary = match &line {
        Some(line) if to.is_some() => format!("Scrolled {line} into view"),
        _ => format!(
            "Scrolled to ({:.0}, {:.0}){}",
            scrolled.scroll_x,
            scrolled.scroll_y,
            if scrolled.at_end { ", the end" } else { "" }
        ),
    };
    let facts = ActionFacts::Scroll {
        scroll_x: scrolled.scroll_x,
        scroll_y: scrolled.scroll_y,
        at_end: scrolled.at_end,
        target: line,
    };
    Ok(Outcome::new(tab, summary, facts))
}
