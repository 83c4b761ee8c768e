//! Reading an element's state, answering dialogs, and a tab's health (SPEC §5, §6).
//!
//! `HandleDialog` and `Health` run beside the tab's queue: a dialog blocks the page and so the
//! queue, and health must answer while the queue is stuck. Recovering the debugger is the one
//! thing health changes, and only when the queue is idle: reattaching under a running action
//! could cut its input in half.

use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::policy::Need;
use tabwire_protocol::{
    DialogHandled, ElementFacts, ElementState, ErrorCode, HandleDialog, OpError, ReadStateRequest,
    TabHealth, TabId,
};

use crate::checkpoint::Checkpoint;
use crate::chrome_tabs::resolve_tab;
use crate::ops::target;
use crate::page::{self, MissingFrame, PageCommand};
use crate::refs::TOP_FRAME;
use crate::timer::{Either, now_ms, select, sleep};
use crate::{debugger, queue};
use tabwire_observation::{Detail, PageNode, render_node};

/// How long the health probe waits for the page.
const PROBE_MS: f64 = 1000.0;

#[derive(Deserialize)]
struct StateFacts {
    node: PageNode,
    state: ElementFacts,
    rebound: Option<u32>,
}

/// Reads one element's state.
pub async fn read_state(tab: TabId, request: ReadStateRequest) -> Result<ElementState, OpError> {
    let url = resolve_tab(Some(tab)).await?.url;
    let prepared = target::prepare(tab, &request.target, TOP_FRAME)?;
    let reply = page::run::<StateFacts>(
        tab,
        prepared.frame,
        &PageCommand::ReadState {
            target: prepared.page.clone(),
            attributes: request.attributes,
            max_chars: request.max_chars,
        },
        prepared.missing_frame(),
    )
    .await?;
    prepared.check_document(&reply.document_id)?;
    prepared.rebound(tab, reply.value.rebound);
    // A hidden input's value is a sensitive read: it goes out only where the policy allows.
    if reply.value.state.input_type.as_deref() == Some("hidden")
        && reply.value.state.value.is_some()
    {
        crate::policy::check_frame(tab, prepared.frame, Need::SensitiveRead).await?;
    }
    Ok(ElementState {
        tab_id: tab,
        target: render_node(&reply.value.node, Some(&url), Detail::WithoutValue),
        state: reply.value.state,
    })
}

/// Accepts or dismisses the tab's open dialog.
pub async fn handle_dialog(
    tab_id: Option<TabId>,
    request: HandleDialog,
    checkpoint: &Checkpoint,
) -> Result<DialogHandled, OpError> {
    let HandleDialog {
        accept,
        prompt_text,
    } = request;
    let tab = resolve_tab(tab_id).await?.id;
    let Some(dialog) = debugger::judged_dialog(tab).await else {
        return Err(OpError::new(
            ErrorCode::NoDialog,
            "No JavaScript dialog is open in this tab (tabwire sees dialogs in tabs it has acted \
             on).",
        ));
    };
    // A frame agents may not read opened it: accepting would act on that page (confirm its
    // deletion or payment, type into its prompt); dismissing only unblocks the tab.
    if dialog.withheld && accept {
        return Err(OpError::new(
            ErrorCode::OriginBlocked,
            format!(
                "The open {} dialog was opened by a frame of an origin agents may not read or \
                 act on, so it can only be dismissed: call handle_dialog with accept false.",
                dialog.kind
            ),
        ));
    }
    let mut params = json!({ "accept": accept });
    if let Some(text) = prompt_text.filter(|_| !dialog.withheld) {
        params["promptText"] = json!(text);
    }
    checkpoint.check()?;
    debugger::send(tab, "Page.handleJavaScriptDialog", &params)
        .await
        .map_err(OpError::action_may_have_occurred)?;
    debugger::dialog_closed(tab);
    Ok(DialogHandled {
        tab_id: tab,
        dialog,
        accepted: accept,
    })
}

/// The tab's health, after reattaching the debugger when asked and the tab is idle.
pub async fn health(tab_id: Option<TabId>, recover_debugger: bool) -> Result<TabHealth, OpError> {
    let resolved = resolve_tab(tab_id).await?;
    let tab = resolved.id;
    let mut recovery = None;
    if recover_debugger {
        // Held while reattaching: nothing may start on the tab meanwhile.
        let Some(_idle) = queue::try_admit(tab, "get_tab_health") else {
            let (active, queued) = queue::status(tab);
            let running = active.map_or_else(
                || "an operation about to start".to_owned(),
                |a| format!("{} ({} ms of {} ms)", a.tool, a.elapsed_ms, a.deadline_ms),
            );
            return Err(OpError::new(
                ErrorCode::TabBusy,
                format!(
                    "The tab is running {running} with {queued} more waiting; the debugger is \
                     only reattached when the tab is idle. Retry when it is done."
                ),
            ));
        };
        debugger::reattach(tab).await?;
        recovery = Some("reattached".to_owned());
    }
    let asked = now_ms();
    let probe = page::run::<serde_json::Value>(
        tab,
        TOP_FRAME,
        &PageCommand::Probe,
        MissingFrame::Requested,
    );
    let (responsive, probe_ms) = match select(probe, sleep(PROBE_MS)).await {
        Either::Left(Ok(_)) => (true, Some((now_ms() - asked).round() as u64)),
        Either::Left(Err(_)) | Either::Right(()) => (false, None),
    };
    let (active, queued) = queue::status(tab);
    Ok(TabHealth {
        tab_id: tab,
        url: resolved.url,
        responsive,
        probe_ms,
        active,
        queued,
        debugger_attached: debugger::is_attached(tab),
        dialog: debugger::judged_dialog(tab).await,
        recovery,
    })
}
