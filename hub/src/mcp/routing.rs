//! Which peer a tool call goes to (SPEC §3), and sending it there.
//!
//! An explicit ID argument (`browserId`) wins and leaves the session's selection alone;
//! otherwise the session's selected peer of that kind is used. With no selection, a lone
//! connected peer is selected automatically, and several connected peers make the call fail
//! with the kind's "not selected" code listing them. A selected peer that is gone is never
//! replaced. All of it is written once, over [`PeerKind`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::{Ask, ErrorCode, Kind, LeaseHolder, OpResult, TabId};

use super::envelope::ToolError;
use crate::accounts::Account;
use crate::registry::Connection;
use crate::session::Session;
use crate::state::HubState;

/// Who is calling: the hub, the MCP session and the account the call belongs to.
#[derive(Clone)]
pub struct Caller {
    /// The hub's shared state.
    pub hub: Arc<HubState>,
    /// The calling MCP session.
    pub session: Arc<Session>,
    /// The caller's account: the only peers this call can see.
    pub account: Arc<Account>,
    /// Who calls, for the leases peers keep: sent with every request that changes something.
    pub holder: LeaseHolder,
    /// Where the call went, for the audit log.
    pub trace: Arc<Mutex<Trace>>,
    /// Where to report progress, when the client asked for it (a `progressToken`).
    pub progress: Option<Progress>,
    /// Fires when the MCP client cancels the call or goes away: from then on the call's
    /// requests are withdrawn at their peer and no new one is sent.
    pub cancel: tokio_util::sync::CancellationToken,
}

/// A call's progress reports: MCP `notifications/progress` with the client's token.
#[derive(Clone)]
pub struct Progress {
    peer: rmcp::Peer<rmcp::RoleServer>,
    token: rmcp::model::ProgressToken,
}

impl Progress {
    /// Reports to `peer` under `token`.
    pub fn new(peer: rmcp::Peer<rmcp::RoleServer>, token: rmcp::model::ProgressToken) -> Self {
        Progress { peer, token }
    }

    /// Sends one report: `progress` (increasing) and a sentence. A client that went away is
    /// not an error here; the call ends on its own.
    pub async fn report(&self, progress: f64, message: &str) {
        let mut params = rmcp::model::ProgressNotificationParam::new(self.token.clone(), progress);
        params.message = Some(message.to_owned());
        if let Err(error) = self.peer.notify_progress(params).await {
            tracing::debug!(%error, "could not send a progress notification");
        }
    }
}

/// Where one tool call went — the peer it reached and the tab — filled in by the routing that
/// every peer kind shares and read by the audit log once the call has ended.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Trace {
    /// The kind's noun (`browser`) and the peer's ID, of the last request sent.
    pub peer: Option<(&'static str, String)>,
    /// The tab the call named, or else the first one a request named.
    pub tab_id: Option<TabId>,
    /// Whether a request that changes something was answered as done, or with an error saying
    /// its input may have gone out: what a cancelled call's record says of its effect.
    pub acted: bool,
    /// In a cluster: the replica that answered, when the peer was on another one.
    pub owner: Option<String>,
    /// The files an upload carried: name and size.
    pub files: Vec<(String, u64)>,
    /// The clipboard's characters read or written (`"read"`/`"written"`, length).
    pub clipboard: Option<(&'static str, usize)>,
    /// A recording of the person's input: `"started"`, `"stopped"` or `"handedBack"` (a
    /// handoff's), and how many steps it returned.
    pub recording: Option<(&'static str, usize)>,
}

impl Trace {
    fn note(&mut self, peer: Option<(&'static str, &str)>, tab_id: Option<TabId>) {
        if let Some((noun, id)) = peer {
            self.peer = Some((noun, id.to_owned()));
        }
        self.tab_id = self.tab_id.or(tab_id);
    }
}

impl Caller {
    /// The context of one call of `tool` of `group`, routed by `route`.
    pub fn context(&self, tool: &'static str, group: Group, route: Route) -> ToolContext {
        self.trace.lock().unwrap().note(None, route.tab_id);
        ToolContext {
            caller: self.clone(),
            tool,
            group,
            route,
        }
    }
}

/// Which kind of peer a tool is about: it decides the tool's routing arguments and which
/// registry its calls go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// The hub itself: peers and sessions, no peer to call.
    Hub,
    /// A peer of the kind: every tool takes the kind's ID argument (`browserId`).
    Peer(Kind),
}

/// Where a call goes, from the routing arguments of its group. Declared once per group and
/// flattened into each tool's arguments ([`BrowserRoute`], [`TabRoute`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Route {
    /// The peer's ID argument (`browserId`): this peer, for this call only.
    pub peer_id: Option<String>,
    /// `tabId`: this tab; `None` is the active tab (or no tab, for browser-wide tools).
    pub tab_id: Option<TabId>,
}

/// The routing arguments of tools that act on a whole browser (`list_tabs`, `create_tab`).
// Plain comments, not doc comments, on the fields: a doc comment would become a description
// repeated in every tool's schema, and INSTRUCTIONS describes these once.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrowserRoute {
    pub browser_id: Option<String>,
}

/// The routing arguments of tools that act on one tab of a browser.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TabRoute {
    pub tab_id: Option<TabId>,
    pub browser_id: Option<String>,
}

/// The (absent) routing arguments of the hub's own tools.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct NoRoute {}

impl From<BrowserRoute> for Route {
    fn from(route: BrowserRoute) -> Self {
        Route {
            peer_id: route.browser_id,
            tab_id: None,
        }
    }
}

impl From<TabRoute> for Route {
    fn from(route: TabRoute) -> Self {
        Route {
            peer_id: route.browser_id,
            tab_id: route.tab_id,
        }
    }
}

impl From<NoRoute> for Route {
    fn from(_: NoRoute) -> Self {
        Route::default()
    }
}

/// What a tool handler works with: the caller, the tool's name and group (from the catalogue)
/// and the call's routing arguments.
pub struct ToolContext {
    /// Who is calling.
    pub caller: Caller,
    /// The tool, as the catalogue names it: what the extension logs and `get_tab_health`
    /// reports.
    pub tool: &'static str,
    /// The tool's group: which kind of peer its calls go to.
    pub group: Group,
    /// Where the call goes.
    pub route: Route,
}

impl std::ops::Deref for ToolContext {
    type Target = Caller;

    fn deref(&self) -> &Caller {
        &self.caller
    }
}

impl ToolContext {
    /// What URLs this call may load: the hub's file-URL rule and the operator's policy of the
    /// caller's account.
    pub fn destinations(&self) -> crate::state::Destinations {
        self.hub.destinations(&self.account.name)
    }

    /// The connection of the peer of `kind` a call should use, chosen by `explicit` (its ID
    /// argument) or the session.
    pub fn peer(&self, kind: Kind, explicit: Option<&str>) -> Result<Arc<Connection>, ToolError> {
        let spec = kind.spec();
        let registry = self.account.peers(kind);
        let noun = spec.noun;
        if let Some(id) = explicit {
            return registry.connection(id).map_err(ToolError::from);
        }
        if let Some(selected) = self.session.selected_of(kind) {
            return registry.connection(&selected).map_err(|error| {
                if error.code == spec.not_found {
                    // A selection restored after a hub restart names a peer that has not
                    // reconnected yet: it is the session's, just not here right now.
                    ToolError::new(
                        spec.disconnected,
                        format!(
                            "the selected {noun} ({selected}) is not connected to this hub; \
                             tabwire never switches to another {noun} on its own. Wait for it \
                             to reconnect or select another {noun}"
                        ),
                    )
                } else {
                    ToolError::from(error)
                }
            });
        }
        let connected = registry.connected();
        match connected.as_slice() {
            [] => Err(ToolError::new(
                spec.not_found,
                format!(
                    "no {noun} is connected to this hub. {}",
                    registry.connect_hint(&self.hub.reach())
                ),
            )),
            [(only, _)] => {
                self.session.select_of(kind, only);
                tracing::info!(session = self.session.id(), kind = noun, peer = %only, "selected the only one connected");
                registry.connection(only).map_err(ToolError::from)
            }
            several => {
                let mut error = ToolError::new(
                    spec.not_selected,
                    format!(
                        "{} {noun}s are connected; call {} with one of them (or pass {})",
                        several.len(),
                        spec.select_tool,
                        spec.id_arg
                    ),
                );
                error.candidates = Some(
                    several
                        .iter()
                        .map(|(id, name)| json!({spec.id_arg: id, "name": name}))
                        .collect(),
                );
                // A device's name is the phone's words: its candidates are fenced.
                error.candidates_quote_page = spec.names_from_peer;
                Err(error)
            }
        }
    }

    /// The connection of the peer this call goes to: of the tool's group, chosen by the
    /// call's ID argument or the session.
    pub fn connection(&self) -> Result<Arc<Connection>, ToolError> {
        let explicit = self.route.peer_id.as_deref();
        match self.group {
            Group::Peer(kind) => self.peer(kind, explicit),
            Group::Hub => Err(ToolError::new(
                ErrorCode::Internal,
                format!("{} is a tool of the hub: it calls no peer", self.tool),
            )),
        }
    }

    /// Sends `request` to the call's peer and tab and waits for its answer.
    pub async fn call<A: Ask>(
        &self,
        request: A,
        deadline: Duration,
    ) -> Result<A::Answer, ToolError> {
        let connection = self.connection()?;
        self.call_on(&connection, self.route.tab_id, request, deadline)
            .await
    }

    /// Sends `request` on `connection` for `tab_id` and waits for its answer: for a tool that
    /// makes several requests of one browser.
    pub async fn call_on<A: Ask>(
        &self,
        connection: &Connection,
        tab_id: Option<TabId>,
        request: A,
        deadline: Duration,
    ) -> Result<A::Answer, ToolError> {
        self.trace
            .lock()
            .unwrap()
            .note(Some((connection.noun(), connection.peer_id())), tab_id);
        let op: tabwire_protocol::Operation = request.into();
        let mutation = op.is_mutation();
        let result = connection
            .request_unless(
                self.tool,
                tab_id,
                Some(&self.holder),
                op,
                deadline,
                &self.cancel,
            )
            .await;
        let acted = match &result {
            Ok(_) => mutation,
            Err(error) => error.action_may_have_occurred,
        };
        if acted {
            self.trace.lock().unwrap().acted = true;
        }
        if let Some(owner) = connection.owner_node() {
            self.trace.lock().unwrap().owner = Some(owner.to_owned());
        }
        A::answer(result?).map_err(|other| self.mismatch(&other))
    }

    /// The error for an answer of the wrong kind: the hub and the peer are different builds.
    fn mismatch(&self, result: &OpResult) -> ToolError {
        let kind = serde_json::to_value(result)
            .ok()
            .and_then(|value| {
                value
                    .get("kind")
                    .and_then(|k| k.as_str())
                    .map(str::to_owned)
            })
            .unwrap_or_default();
        ToolError::new(
            ErrorCode::Internal,
            format!(
                "{}: the peer answered with the wrong kind of result ({kind})",
                self.tool
            ),
        )
    }
}
