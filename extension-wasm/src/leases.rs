//! Tab leases (issue 14 §3), enforced where a request takes effect: once it knows its tab and
//! holds its place in the tab's queue, so two sessions can never both win one tab.
//!
//! The table's rules are the protocol's ([`LeaseTable`], shared with the device backends); this
//! module keys it by tab, takes the caller from the request ([`LeaseHolder`], set by the hub),
//! and shows leases to the person: each holder's tabs sit in a Chrome tab group titled with its
//! client's label, one group per holder and window. A changing call on a tab another session
//! holds fails with `TAB_LEASED`; otherwise it leases the tab (or renews the lease). Tabs a
//! session opens — `create_tab`, or a click that opened one — are its own from the start.
//! Reads never lease and are never refused.
//!
//! A lease lapses after its holder's idle time (a timer ungroups it), with `release_tab`, when
//! the hub says the session ended, when the connection to the hub ends (the hub's sessions do
//! not outlive it), and when the person drags the tab out of its group (a group change that
//! tabwire did not make). A tab that closes takes its lease with it.
//!
//! Grouping is shown, not enforced: when Chrome cannot group a tab (the API missing, a tab
//! that cannot be grouped) the lease holds all the same and the failure is logged. Leases live
//! in the worker's memory and die with it; the groups would not, so the IDs of the groups
//! tabwire made are kept in `chrome.storage.local`, and a new worker (after a crash, a reload
//! or an update of the extension) takes the tabs out of the groups its predecessor left.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use serde_json::json;
use tabwire_protocol::leases::{Claimed, Held, Released};
use tabwire_protocol::{
    ActResult, ErrorCode, LeaseHolder, LeaseTable, OpError, OpResult, Operation, StepResult, TabId,
    TabReleased, TabsOp, TabsResult,
};
use wasm_bindgen_futures::spawn_local;

use crate::chrome::{self, JsFailure};
use crate::chrome_tabs::{get_tab, query, resolve_tab};
use crate::timer::{now_ms, sleep};

/// Where the IDs of the groups tabwire made are kept for the next worker.
const GROUPS_KEY: &str = "leaseGroups";

#[derive(Default)]
struct State {
    table: LeaseTable<TabId>,
    /// The group made for each holder (by session) in each window.
    groups: HashMap<(String, i64), i64>,
    /// The group tabwire put each leased tab in: a tab seen in any other group was moved by
    /// the person.
    placed: HashMap<TabId, i64>,
    /// Tabs tabwire is moving into or out of a group right now: their group changes are ours.
    moving: HashSet<TabId>,
    /// When the pending expiry sweep runs.
    sweep_at: Option<u64>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

fn with<T>(f: impl FnOnce(&mut State) -> T) -> T {
    STATE.with(|state| f(&mut state.borrow_mut()))
}

fn now() -> u64 {
    now_ms().max(0.0) as u64
}

/// Checks the lease for `op` on `tab`, which the request holds in its queue: a changing call
/// is refused while another session holds the tab. A release is answered here (`Some`);
/// everything else goes on (`None`) and takes the lease with [`take`] once it may run.
pub async fn gate(
    tab: TabId,
    holder: Option<&LeaseHolder>,
    op: &Operation,
) -> Result<Option<OpResult>, OpError> {
    if matches!(op, Operation::Tabs(TabsOp::Release(_))) {
        return release(tab, holder)
            .await
            .map(|released| Some(released.into()));
    }
    if held_against(op) {
        let session = holder.map(|holder| holder.session.as_str());
        with(|state| state.table.check(tab, session, now())).map_err(|held| leased(tab, &held))?;
    }
    Ok(None)
}

/// Whether another session's lease refuses `op`: it changes the tab, hands it to a person
/// (which would keep the holder out of its own tab meanwhile), or records what the person does
/// in the holder's tab.
fn held_against(op: &Operation) -> bool {
    op.is_mutation() || matches!(op, Operation::Tabs(TabsOp::Handoff(_) | TabsOp::Record(_)))
}

/// Leases `tab` to the caller of a changing `op` (or renews its lease). A caller the hub did
/// not name takes no lease: it may change only tabs nobody holds ([`gate`]). Closing a tab
/// takes none either: the tab is about to go, lease and all.
pub fn take(tab: TabId, holder: Option<&LeaseHolder>, op: &Operation) -> Result<(), OpError> {
    match holder {
        Some(_) if matches!(op, Operation::Tabs(TabsOp::Close(_))) => Ok(()),
        Some(holder) if op.is_mutation() => claim(tab, holder),
        _ => Ok(()),
    }
}

/// [`gate`] for an operation that runs beside the queues (answering a dialog): its tab is
/// looked up first. Browser-wide operations (opening a tab) pass.
pub async fn gate_unqueued(
    tab_id: Option<TabId>,
    holder: Option<&LeaseHolder>,
    op: &Operation,
) -> Result<(), OpError> {
    if !held_against(op) || matches!(op, Operation::Tabs(TabsOp::Create(_))) {
        return Ok(());
    }
    let tab = resolve_tab(tab_id).await?.id;
    gate(tab, holder, op).await?;
    take(tab, holder, op)
}

/// Leases to the caller the tabs its operation opened (a new tab, tabs a click opened), and
/// hands the outcome on.
pub fn adopt(
    holder: Option<&LeaseHolder>,
    opens_tab: bool,
    outcome: Result<OpResult, OpError>,
) -> Result<OpResult, OpError> {
    let (Some(holder), Ok(result)) = (holder, &outcome) else {
        return outcome;
    };
    for tab in opened_tabs(opens_tab, result) {
        if let Err(error) = claim(tab, holder) {
            chrome::log!(
                "tab {tab} opened by a call is not leased: {}",
                error.message
            );
        }
    }
    outcome
}

/// The tabs `result` says were opened.
fn opened_tabs(opens_tab: bool, result: &OpResult) -> Vec<TabId> {
    match result {
        OpResult::Tabs(TabsResult::Tab(tab)) if opens_tab => vec![tab.tab_id],
        OpResult::Act(ActResult::Acted(acted)) => acted.outcome.opened_tabs.clone(),
        OpResult::Act(ActResult::Batch(batch)) => batch
            .steps
            .iter()
            .flat_map(|step| match step {
                StepResult::Acted { outcome } => outcome.opened_tabs.clone(),
                _ => Vec::new(),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Leases `tab` to `holder` (or renews its lease) and, for a new lease, puts the tab in the
/// holder's group. The grouping goes on beside the call: it shows the lease, and the call's
/// deadline is the page's (a first grouping costs several Chrome calls).
fn claim(tab: TabId, holder: &LeaseHolder) -> Result<(), OpError> {
    let claimed =
        with(|state| state.table.claim(tab, holder, now())).map_err(|held| leased(tab, &held))?;
    schedule_sweep();
    let placed = with(|state| state.placed.contains_key(&tab) || state.moving.contains(&tab));
    if matches!(claimed, Claimed::New { .. }) || !placed {
        let holder = holder.clone();
        spawn_local(async move { group(tab, &holder).await });
    }
    Ok(())
}

/// Gives up the caller's lease on `tab`.
async fn release(tab: TabId, holder: Option<&LeaseHolder>) -> Result<TabReleased, OpError> {
    let Some(holder) = holder else {
        return Err(OpError::new(
            ErrorCode::Internal,
            "release_tab reached the browser without its caller",
        ));
    };
    // The tab must exist: releasing a tab ID that names nothing is an error, not a no-op.
    get_tab(tab).await?;
    let released =
        with(|state| state.table.release(tab, &holder.session, now())).map_err(|held| {
            OpError::new(
                ErrorCode::TabLeased,
                format!(
                    "Tab {tab} is leased to {}, another agent session; only it can release the \
                     tab (the lease lapses in {} s if it stays idle).",
                    held.client,
                    held.lapses_in_secs()
                ),
            )
        })?;
    ungroup(vec![tab]).await;
    Ok(TabReleased {
        tab_id: tab,
        was_leased: released == Released::Released,
    })
}

/// The `TAB_LEASED` refusal of a changing call on `tab`.
fn leased(tab: TabId, held: &Held) -> OpError {
    OpError::new(
        ErrorCode::TabLeased,
        format!(
            "Tab {tab} is leased to {}, another agent session, for {} s more unless it keeps \
             using it; nothing was done. Reads (snapshots, content, screenshots) still work. To \
             act, open your own tab with create_tab or use another one.",
            held.client,
            held.lapses_in_secs()
        ),
    )
}

/// The hub says an MCP session ended: its leases lapse.
pub fn session_ended(session: &str) {
    let tabs = with(|state| {
        state.groups.retain(|(holder, _), _| holder != session);
        state.table.release_holder(session)
    });
    if !tabs.is_empty() {
        chrome::log!("a session ended: released {} tab(s)", tabs.len());
        spawn_local(ungroup(tabs));
    }
}

/// The connection to the hub ended: the sessions that held leases went with it.
pub fn connection_ended() {
    let tabs = with(|state| {
        state.groups.clear();
        state.table.clear()
    });
    if !tabs.is_empty() {
        chrome::log!("the hub connection ended: released {} tab(s)", tabs.len());
        spawn_local(ungroup(tabs));
    }
}

/// A tab's group changed (`chrome.tabs.onUpdated`). A leased tab moved out of the group
/// tabwire put it in, by someone other than tabwire, is the person taking it back.
pub fn group_changed(tab: TabId, group: i64) {
    let released = with(|state| {
        if state.moving.contains(&tab) {
            return false;
        }
        match state.placed.get(&tab) {
            Some(placed) if *placed != group => {
                state.placed.remove(&tab);
                state.table.forget(tab).is_some()
            }
            _ => false,
        }
    });
    if released {
        chrome::log!("tab {tab} was moved out of its group: lease released");
    }
}

/// A tab was opened from `opener` (a link with a target, `window.open`): when a session holds
/// the opener, the new tab is that session's too. This catches what a call's own outcome can
/// miss (Chrome may report the new tab after the click's result is made).
pub fn tab_opened(tab: TabId, opener: TabId) {
    let Some(holder) = with(|state| {
        let holder = state.table.lease(opener, now())?.holder.clone();
        // Already leased (a create_tab, say): leave it as it is.
        state.table.lease(tab, now()).is_none().then_some(holder)
    }) else {
        return;
    };
    if let Err(error) = claim(tab, &holder) {
        chrome::log!(
            "tab {tab} opened from a leased tab is not leased: {}",
            error.message
        );
    }
}

/// Whether `session` may change `tab` now: no other session holds a live lease on it (a
/// network mock answers for its session only then).
pub fn may_change(tab: TabId, session: &str) -> bool {
    with(|state| state.table.check(tab, Some(session), now()).is_ok())
}

/// A tab closed: its lease goes with it.
pub fn forget(tab: TabId) {
    with(|state| {
        state.table.forget(tab);
        state.placed.remove(&tab);
        state.moving.remove(&tab);
    });
}

/// Puts `tab` in `holder`'s group of its window, making and titling the group if needed.
async fn group(tab: TabId, holder: &LeaseHolder) {
    with(|state| state.moving.insert(tab));
    let grouped = place(tab, holder).await;
    // A session's end may have released the tab while it was being grouped.
    let still_leased = with(|state| {
        let leased = state.table.lease(tab, now()).is_some();
        if let (Ok(group), true) = (&grouped, leased) {
            state.placed.insert(tab, *group);
        }
        leased
    });
    match grouped {
        Ok(_) if !still_leased => {
            let _ = chrome::call(chrome::tabs_ungroup(tab)).await;
        }
        Ok(_) => {}
        Err(failure) => chrome::log!("tab {tab} could not be grouped: {failure}"),
    }
    with(|state| state.moving.remove(&tab));
}

async fn place(tab: TabId, holder: &LeaseHolder) -> Result<i64, JsFailure> {
    let window = get_tab(tab)
        .await
        .map_err(|error| JsFailure {
            message: error.message,
        })?
        .window_id
        .unwrap_or_default();
    let key = (holder.session.clone(), window);
    if let Some(group) = with(|state| state.groups.get(&key).copied()) {
        let options = chrome::to_js(&json!({"tabIds": [tab], "groupId": group}))?;
        if chrome::call(chrome::tabs_group(&options)).await.is_ok() {
            return Ok(group);
        }
        // The group is gone (its last tab left, or the person closed it): make another.
        with(|state| state.groups.remove(&key));
    }
    let options =
        chrome::to_js(&json!({"tabIds": [tab], "createProperties": {"windowId": window}}))?;
    let group = chrome::call(chrome::tabs_group(&options))
        .await?
        .as_f64()
        .ok_or_else(|| JsFailure {
            message: "chrome.tabs.group returned no group".into(),
        })? as i64;
    let title = chrome::to_js(&json!({"title": holder.client, "collapsed": false}))?;
    chrome::call(chrome::tab_groups_update(group as f64, &title)).await?;
    with(|state| state.groups.insert(key, group));
    save_groups().await;
    Ok(group)
}

/// Keeps the IDs of the groups made so far (some may be gone: the next worker finds no tabs in
/// those).
async fn save_groups() {
    let groups: Vec<i64> = with(|state| state.groups.values().copied().collect());
    let saved = match chrome::to_js(&json!({ GROUPS_KEY: groups })) {
        Ok(items) => chrome::call(chrome::storage_local_set(&items))
            .await
            .map(|_| ()),
        Err(failure) => Err(failure),
    };
    if let Err(failure) = saved {
        chrome::log!("could not keep the lease groups: {failure}");
    }
}

/// At worker start, before any lease: takes the tabs out of the groups an earlier worker made
/// (its leases ended with it).
pub async fn ungroup_leftovers() {
    let Ok(keys) = chrome::to_js(&json!([GROUPS_KEY])) else {
        return;
    };
    let saved: HashMap<String, Vec<i64>> =
        match chrome::call(chrome::storage_local_get(&keys)).await {
            Ok(items) => chrome::from_js(items).unwrap_or_default(),
            Err(failure) => {
                chrome::log!("could not read the lease groups: {failure}");
                return;
            }
        };
    let groups = saved.get(GROUPS_KEY).cloned().unwrap_or_default();
    if groups.is_empty() {
        return;
    }
    let mut tabs = Vec::new();
    for group in groups {
        if let Ok(found) = query(&json!({ "groupId": group })).await {
            tabs.extend(found.iter().filter_map(|tab| tab.tab_id()));
        }
    }
    for tab in &tabs {
        let _ = chrome::call(chrome::tabs_ungroup(*tab)).await;
    }
    if !tabs.is_empty() {
        chrome::log!(
            "took {} tab(s) out of an earlier worker's lease groups",
            tabs.len()
        );
    }
    // Groups of this worker's own may have been made meanwhile: keep those.
    save_groups().await;
}

/// Takes tabs tabwire grouped out of their groups (their leases are over).
async fn ungroup(tabs: Vec<TabId>) {
    for tab in tabs {
        let Some(_) = with(|state| {
            let placed = state.placed.remove(&tab);
            if placed.is_some() {
                state.moving.insert(tab);
            }
            placed
        }) else {
            continue;
        };
        let ungrouped = chrome::call(chrome::tabs_ungroup(tab)).await;
        with(|state| state.moving.remove(&tab));
        if let Err(failure) = ungrouped {
            chrome::log!("tab {tab} could not be ungrouped: {failure}");
        }
    }
}

/// Makes sure a sweep runs when the next lease lapses.
fn schedule_sweep() {
    let Some(next) = with(|state| {
        let next = state.table.next_lapse()?;
        if state.sweep_at.is_some_and(|at| at <= next) {
            return None;
        }
        state.sweep_at = Some(next);
        Some(next)
    }) else {
        return;
    };
    spawn_local(async move {
        sleep(next.saturating_sub(now()) as f64 + 1.0).await;
        with(|state| {
            if state.sweep_at == Some(next) {
                state.sweep_at = None;
            }
        });
        let lapsed = with(|state| state.table.expire(now()));
        if !lapsed.is_empty() {
            chrome::log!("{} idle lease(s) lapsed", lapsed.len());
            ungroup(lapsed).await;
        }
        schedule_sweep();
    });
}
