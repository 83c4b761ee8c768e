//! Choosing options, filling forms and scrolling.
//!
//! A native `<select>` is set in the page (value setter plus `input`/`change`), as a person's
//! choice would end. An option of an open custom dropdown is found by its exact visible text,
//! scrolled into view inside the dropdown, and clicked with trusted input. A form is filled in
//! one page call that first validates every field and only then sets them (js/collector/), so
//! a bad field leaves the form untouched.

use serde::Deserialize;
use tabwire_protocol::{
    ActionFacts, ErrorCode, FieldValue, FilledField, FormField, MouseButton, OpError, Outcome,
    TabId, Target,
};

use super::steps::{change_page, retrying};
use crate::checkpoint::Checkpoint;
use crate::chrome_tabs::{get_tab, resolve_tab};
use crate::observation::{Detail, PageNode, render_node};
use crate::ops::target;
use crate::page::{self, PageCommand, PageField};
use crate::refs::TOP_FRAME;
use crate::{debugger, input};

#[derive(Deserialize)]
struct Selected {
    node: PageNode,
    value: String,
    text: String,
    rebound: Option<u32>,
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
        let line = render_node(&found.value.node, &url, Detail::Full);
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
    let reply = change_page::<Selected>(
        tab,
        prepared.frame,
        &command,
        prepared.missing_frame(),
        checkpoint,
    )
    .await?;
    prepared
        .check_document(&reply.document_id)
        .map_err(OpError::action_may_have_occurred)?;
    prepared.rebound(tab, reply.value.rebound);
    let chosen = reply.value;
    let line = render_node(&chosen.node, &url, Detail::WithoutValue);
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
    let command = PageCommand::FillForm {
        fields: prepared
            .iter()
            .zip(fields)
            .map(|(p, f)| PageField {
                target: p.page.clone(),
                value: f.value.clone(),
            })
            .collect(),
        submit,
    };
    let missing = prepared
        .first()
        .map_or(page::MissingFrame::Requested, |p| p.missing_frame());
    let reply = change_page::<Filled>(tab, frame, &command, missing, checkpoint).await?;
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
            target: render_node(&f.node, &url, Detail::WithoutValue),
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
        .map(|n| render_node(n, &url, Detail::Full));
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
