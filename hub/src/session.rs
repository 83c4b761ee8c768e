//! An MCP session's own state: which browser it has selected.
//!
//! Selection is per session, so two agents can drive two different browsers through one hub.
//! A local session attached by `tabwire-mcp` also reports every change of selection back to the
//! shim, which hands it to the hub again after a reconnect: that is how a session keeps its
//! browser across a hub restart without the hub storing anything on disk.

use std::sync::Mutex;

use tabwire_protocol::LocalControl;
use tokio::sync::mpsc;

/// One MCP session.
pub struct Session {
    /// The shim's identity for the session (random), or a fresh one for a plain MCP client.
    id: String,
    /// The browser chosen with `select_browser` (or picked automatically when only one was
    /// connected).
    selected: Mutex<Option<String>>,
    /// Where selection changes are reported when a shim is attached.
    control: Option<mpsc::UnboundedSender<LocalControl>>,
}

impl Session {
    /// A session starting with `selected` (restored from the shim's attach line, if any).
    pub fn new(
        id: String,
        selected: Option<String>,
        control: Option<mpsc::UnboundedSender<LocalControl>>,
    ) -> Self {
        Session {
            id,
            selected: Mutex::new(selected),
            control,
        }
    }

    /// The session's identity, for logs.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The selected browser, if any.
    pub fn selected(&self) -> Option<String> {
        self.selected.lock().unwrap().clone()
    }

    /// Selects a browser and tells the shim, so the choice survives a reconnect.
    pub fn select(&self, browser_id: &str) {
        let changed = {
            let mut selected = self.selected.lock().unwrap();
            let changed = selected.as_deref() != Some(browser_id);
            *selected = Some(browser_id.to_owned());
            changed
        };
        if changed && let Some(control) = &self.control {
            let _ = control.send(LocalControl::State {
                selected_browser: Some(browser_id.to_owned()),
            });
        }
    }
}
