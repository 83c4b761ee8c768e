//! Which browser a tool call goes to (SPEC §3), and sending it there.
//!
//! An explicit `browserId` argument wins and leaves the session's selection alone; otherwise the
//! session's selected browser is used. With no selection, a lone connected browser is selected
//! automatically, and several connected browsers make the call fail with
//! `BROWSER_NOT_SELECTED` listing them. A selected browser that is gone is never replaced.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tabwire_protocol::{ErrorCode, OpResult, Operation, TabId};

use super::envelope::ToolError;
use crate::HubState;
use crate::accounts::Account;
use crate::registry::Connection;
use crate::session::Session;

/// What a tool handler works with.
pub struct ToolContext {
    /// The hub's shared state.
    pub hub: Arc<HubState>,
    /// The calling MCP session.
    pub session: Arc<Session>,
    /// The caller's account: the only browsers this call can see.
    pub account: Arc<Account>,
}

impl ToolContext {
    /// The connection a browser tool should use.
    pub fn browser(&self, explicit: Option<&str>) -> Result<Arc<Connection>, ToolError> {
        let registry = &self.account.registry;
        if let Some(browser_id) = explicit {
            return registry.connection(browser_id).map_err(ToolError::from);
        }
        if let Some(selected) = self.session.selected() {
            return registry.connection(&selected).map_err(|error| {
                if error.code == ErrorCode::BrowserNotFound {
                    // A selection restored after a hub restart names a browser that has not
                    // reconnected yet: it is the session's browser, just not here right now.
                    ToolError::new(
                        ErrorCode::BrowserDisconnected,
                        format!(
                            "the selected browser ({selected}) is not connected to this hub; \
                             tabwire never switches to another browser on its own. Wait for it \
                             to reconnect or select another browser"
                        ),
                    )
                } else {
                    ToolError::from(error)
                }
            });
        }
        let connected: Vec<_> = registry
            .list()
            .into_iter()
            .filter(|b| b.connected)
            .collect();
        match connected.as_slice() {
            [] => Err(ToolError::new(
                ErrorCode::BrowserNotFound,
                format!(
                    "no browser is connected to this hub. {}",
                    self.hub.connect_hint()
                ),
            )),
            [only] => {
                self.session.select(&only.browser_id);
                tracing::info!(session = self.session.id(), browser = %only.browser_id, "selected the only connected browser");
                registry
                    .connection(&only.browser_id)
                    .map_err(ToolError::from)
            }
            several => {
                let mut error = ToolError::new(
                    ErrorCode::BrowserNotSelected,
                    format!(
                        "{} browsers are connected; call select_browser with one of them (or pass \
                         browserId)",
                        several.len()
                    ),
                );
                error.candidates = Some(
                    several
                        .iter()
                        .map(|b| json!({"browserId": b.browser_id, "name": b.name}))
                        .collect(),
                );
                Err(error)
            }
        }
    }

    /// Routes one operation to the right browser and waits for its result.
    pub async fn call(
        &self,
        tool: &str,
        browser_id: Option<&str>,
        tab_id: Option<TabId>,
        op: Operation,
        deadline: Duration,
    ) -> Result<OpResult, ToolError> {
        let connection = self.browser(browser_id)?;
        connection
            .request(tool, tab_id, op, deadline)
            .await
            .map_err(ToolError::from)
    }
}

/// Turns an unexpected result kind into an internal error (a hub/extension mismatch).
pub fn unexpected(tool: &str) -> ToolError {
    ToolError::new(
        ErrorCode::Internal,
        format!("{tool}: the extension answered with the wrong kind of result"),
    )
}
