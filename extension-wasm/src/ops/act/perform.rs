//! Performing one action and observing the page after it: what a single action and every
//! action step of a batch go through.
//!
//! [`perform`] dispatches the action to its module and handles what any action can run into:
//! a JavaScript dialog that its input opened (part of the result: the action happened, the page
//! now waits for an answer), tabs it opened, and a top-frame navigation it started (the
//! observation then waits for the new document to be parsed). [`observe_after`] takes the
//! observation, by default a delta against the agent's latest matching one.

use tabwire_protocol::{
    Action, ActionFacts, ErrorCode, NavigationState, Observation, ObserveSpec, OpError, Outcome,
    Page, SnapshotRequest, TabId, WaitUntil,
};

use super::{files, forms, keys, pointer, waits};
use crate::checkpoint::Checkpoint;
use crate::chrome_tabs::get_tab;
use crate::ops::observe::snapshot;
use crate::ops::target;
use crate::text::cap;
use crate::timer::{Either, select, sleep};
use crate::{activity, debugger, refs};
use tabwire_observation::delta::Params;

/// Performs one action (no observation) for `viewer`: the dialog and navigation handling
/// around [`dispatch`]. The caller adds the downloads it started ([`DownloadsMark`]) once it
/// is done with the page.
pub async fn perform(
    tab: TabId,
    action: &Action,
    viewer: &str,
    checkpoint: &Checkpoint,
) -> Result<Outcome, OpError> {
    if action.is_mutation()
        && let Err(error) = debugger::ensure_attached(tab).await
    {
        // Attached, tabwire sees dialogs open (`Page.javascriptDialogOpening`) instead of
        // waiting for a page that cannot answer. Without it (chrome:// pages refuse debuggers,
        // DevTools may own the tab) untrusted actions still work; trusted input reports the
        // attach error itself.
        crate::chrome::log!("tab {tab}: acting without the debugger ({})", error.message);
    }
    let before = checkpoint.dispatches();
    let mark = activity::load_mark(tab);
    let opened_mark = activity::opened_mark(tab);
    let outcome = match select(
        dispatch(tab, action, viewer, checkpoint),
        debugger::dialog_opened(tab),
    )
    .await
    {
        Either::Left(outcome) => outcome?,
        Either::Right(dialog) if checkpoint.dispatches() > before => {
            let summary = if dialog.withheld {
                format!(
                    "{} done; it opened a {} dialog in a frame of an origin agents may not \
                     read: its text is withheld, and it can only be dismissed (handle_dialog \
                     with accept false).",
                    action.name(),
                    dialog.kind
                )
            } else {
                format!(
                    "{} done; it opened a {} dialog: \"{}\". Answer it with handle_dialog.",
                    action.name(),
                    dialog.kind,
                    cap(&dialog.message, 200)
                )
            };
            return Ok(Outcome {
                tab_id: tab,
                summary,
                facts: None,
                dialog: Some(dialog),
                opened_tabs: Vec::new(),
                navigation: None,
                downloads: Vec::new(),
            });
        }
        Either::Right(dialog) => return Err(debugger::dialog_error(&dialog)),
    };
    let mut outcome = outcome;
    let opened = activity::opened_since(tab, opened_mark);
    if !opened.is_empty() {
        outcome.summary.push_str(&format!(
            "; it opened tab {} (list_tabs shows it)",
            opened
                .iter()
                .map(TabId::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
        outcome.opened_tabs = opened;
    }
    // Input that started a navigation: observe the new document, once it is parsed.
    let navigates_itself = matches!(action, Action::Navigate { .. } | Action::Wait { .. })
        || matches!(
            action,
            Action::Click {
                wait_until: Some(_),
                ..
            }
        );
    if !navigates_itself && action.is_mutation() && activity::load_started_since(tab, mark) {
        let parsed = select(
            activity::wait_load(tab, WaitUntil::Domcontentloaded),
            sleep(checkpoint.budget_ms()),
        )
        .await;
        if let Either::Left(Ok(())) = parsed {
            // Input that led to an origin the policy closes stops there.
            crate::ops::load::check_arrival(tab).await?;
        }
        outcome.navigation = Some(match parsed {
            Either::Left(Ok(())) => NavigationState::Navigated,
            Either::Left(Err(_)) => NavigationState::Failed,
            Either::Right(()) => NavigationState::StillLoading,
        });
    }
    Ok(outcome)
}

/// How long an action waits for a download its input may have started: a navigation that
/// turned into one ends as an aborted load, which an answer without content looks like too.
const DOWNLOAD_WAIT_MS: f64 = 500.0;

/// Where the downloads and the loads of a tab stood before an action, to name the downloads
/// it started once it is done ([`DownloadsMark::add_to`]).
///
/// While it lives (and a while after), what `tab` downloads is the acting session's, when its
/// action changes the page (and so holds the tab's lease): a wait or a read, which any session
/// may run in any tab, claims nothing.
pub struct DownloadsMark<'a> {
    tab: TabId,
    viewer: &'a str,
    downloads: u64,
    loads: u64,
    at: f64,
    _acting: Option<crate::downloads::ActingGuard>,
}

impl<'a> DownloadsMark<'a> {
    /// Marks where `tab` stands now, as `viewer` starts `action` there.
    pub fn of(tab: TabId, viewer: &'a str, action: &Action) -> DownloadsMark<'a> {
        DownloadsMark {
            tab,
            viewer,
            downloads: crate::downloads::mark(),
            loads: activity::load_mark(tab),
            at: crate::timer::now_ms(),
            _acting: action
                .is_mutation()
                .then(|| crate::downloads::acting(tab, viewer)),
        }
    }

    /// Adds the downloads the action started (`viewer`'s) to its outcome. Chrome's
    /// item follows the tab's announcement by a few milliseconds; a navigation that was aborted
    /// (as one that turns into a download is) waits a moment for one. A download announced
    /// only later (a slow server) is not named here; `get_downloads` lists it.
    pub async fn add_to(&self, outcome: &mut Outcome) {
        let (tab, viewer) = (self.tab, self.viewer);
        let aborted = activity::aborted_since(tab, self.loads);
        let until = crate::timer::now_ms() + DOWNLOAD_WAIT_MS;
        while crate::timer::now_ms() < until
            && (crate::downloads::announced_since(tab, self.at)
                || (aborted
                    && crate::downloads::started_since(tab, self.downloads, viewer).is_empty()))
        {
            sleep(10.0).await;
        }
        let downloads = crate::downloads::started_since(tab, self.downloads, viewer);
        if downloads.is_empty() {
            return;
        }
        if aborted {
            // The navigation became the download: the page stayed as it was.
            outcome.navigation = None;
        }
        let named: Vec<String> = downloads
            .iter()
            .map(|d| format!("{} \"{}\"", d.id, d.name))
            .collect();
        outcome.summary.push_str(&format!(
            "; it started download {} (get_downloads has it)",
            named.join(", ")
        ));
        outcome.downloads = downloads;
    }
}

/// The action itself (`viewer`: whose upload an upload sets).
async fn dispatch(
    tab: TabId,
    action: &Action,
    viewer: &str,
    checkpoint: &Checkpoint,
) -> Result<Outcome, OpError> {
    match action {
        Action::Click {
            target,
            mode,
            button,
            click_count,
            wait_until,
            wait_for,
        } => {
            let mark = activity::load_mark(tab);
            let mut outcome =
                pointer::click(tab, target, *mode, *button, *click_count, checkpoint).await?;
            if wait_until.is_some() || wait_for.is_some() {
                waits::after_click(tab, mark, *wait_until, wait_for.as_deref(), checkpoint).await?;
                let landed = get_tab(tab).await?;
                if let Some(ActionFacts::Click { navigated, url, .. }) = &mut outcome.facts {
                    *navigated = Some(activity::load_started_since(tab, mark));
                    *url = landed.url;
                }
            }
            Ok(outcome)
        }
        Action::Hover { target } => pointer::hover(tab, target, checkpoint).await,
        Action::Drag { from, to } => pointer::drag(tab, from, to, checkpoint).await,
        Action::Type {
            target,
            text,
            clear,
            mode,
            input_method,
            allow_readonly,
        } => {
            let typing = keys::Typing {
                text,
                clear: *clear,
                mode: *mode,
                input_method: *input_method,
                allow_readonly: *allow_readonly,
            };
            keys::type_text(tab, target, &typing, checkpoint).await
        }
        Action::PressKey {
            key,
            modifiers,
            target,
        } => keys::press_key(tab, key, *modifiers, target.as_ref(), checkpoint).await,
        Action::SelectOption {
            target,
            value,
            text,
        } => {
            forms::select_option(
                tab,
                target.as_ref(),
                value.as_deref(),
                text.as_deref(),
                checkpoint,
            )
            .await
        }
        Action::FillForm { fields, submit } => {
            forms::fill_form(tab, fields, *submit, checkpoint).await
        }
        Action::Scroll { target, dx, dy, to } => {
            forms::scroll(tab, target.as_ref(), *dx, *dy, to.as_ref(), checkpoint).await
        }
        Action::Navigate {
            url,
            wait_until,
            wait_for,
        } => waits::navigate(tab, url, *wait_until, wait_for.as_deref(), checkpoint).await,
        Action::Wait {
            condition,
            timeout_ms,
        } => waits::wait(tab, condition, *timeout_ms, checkpoint).await,
        Action::Upload {
            target,
            upload,
            files,
            mode,
        } => {
            let upload = files::Upload {
                target,
                id: upload,
                files,
                mode: *mode,
            };
            files::upload(tab, &upload, viewer, checkpoint).await
        }
    }
}

/// What the observation after an action depends on besides its options.
pub struct After<'a> {
    /// The frame the action's target was in (observed unless the options scope elsewhere).
    pub acted_in: u32,
    /// Whether the action opened a dialog, which blocks the page.
    pub blocked_by_dialog: bool,
    /// Whom the observation is for: its delta is against this viewer's latest view.
    pub viewer: &'a str,
}

/// The observation after an action, or why there is none. Without `since`, it is a delta
/// against the viewer's latest observation of the same view of the same document, when there
/// is one (never against another session's: what changed before that view would be missing).
pub async fn observe_after(
    tab: TabId,
    spec: Option<&ObserveSpec>,
    after: After<'_>,
    checkpoint: &Checkpoint,
) -> (Option<Observation<Page>>, Option<OpError>) {
    let Some(spec) = spec else {
        return (None, None);
    };
    let After {
        acted_in,
        blocked_by_dialog,
        viewer,
    } = after;
    if blocked_by_dialog {
        return (None, Some(debugger::blocking_dialog_error(tab)));
    }
    // The scope's frame, else the frame acted in.
    let frame = match (&spec.scope, target::frame_for(None, spec.scope.as_ref())) {
        (_, Err(error)) => return (None, Some(error)),
        (Some(_), Ok(frame)) => frame,
        (None, Ok(_)) => acted_in,
    };
    let automatic = spec.since.is_none();
    let since = spec.since.or_else(|| {
        let params = Params {
            scope: spec.scope.clone(),
            query: None,
            offset: 0,
            max_nodes: spec.max_nodes,
            max_chars: spec.max_chars,
            include_hidden: false,
        };
        refs::with_tables(|tables| {
            tables
                .get(tab, frame)
                .and_then(|state| state.doc.as_ref())
                .and_then(|doc| doc.views.of(viewer)?.latest(&params))
        })
    });
    let request = SnapshotRequest {
        frame_id: (frame != refs::TOP_FRAME).then_some(frame),
        scope: spec.scope.clone(),
        query: None,
        max_nodes: spec.max_nodes,
        max_chars: spec.max_chars,
        offset: 0,
        since,
        include_hidden: false,
    };
    let budget = checkpoint.budget_ms();
    if budget <= 0.0 {
        return (None, Some(no_time_left()));
    }
    // A dialog the page opens meanwhile would hold the snapshot until the deadline.
    let stopped = select(sleep(budget), debugger::dialog_opened(tab));
    match select(
        snapshot::observe_tab(
            tab,
            request,
            viewer,
            snapshot::Changes::SinceLastView,
            checkpoint,
        ),
        stopped,
    )
    .await
    {
        Either::Left(Ok(mut observation)) => {
            if automatic {
                // A new document simply gets a full window: not a reset the agent asked about.
                observation.reset = false;
            }
            (Some(observation), None)
        }
        Either::Left(Err(error)) => (None, Some(error)),
        Either::Right(Either::Left(())) => (None, Some(no_time_left())),
        Either::Right(Either::Right(dialog)) => (None, Some(debugger::dialog_error(&dialog))),
    }
}

fn no_time_left() -> OpError {
    OpError::new(
        ErrorCode::TabUnresponsive,
        "The action is done, but no time was left to observe the page; take a snapshot.",
    )
}
