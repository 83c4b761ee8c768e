//! An MCP session's own state: which peer of each kind (browser, later device) it has selected,
//! and which opt-in tool groups it has asked to see listed.
//!
//! Selection is per session, so two agents can drive two different browsers through one hub.
//! A local session attached by `tabwire-mcp` also reports every change of selection back to the
//! shim, which hands it to the hub again after a reconnect: that is how a session keeps its
//! browser across a hub restart without the hub storing anything on disk.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use tabwire_protocol::{LocalControl, Selections, ShimDialect};
use tokio::sync::mpsc;

use crate::peer::PeerKind;

/// One MCP session.
pub struct Session {
    /// The shim's identity for the session (random), or a fresh one for a plain MCP client.
    id: String,
    /// The peers chosen with `select_*` (or picked automatically when only one was connected),
    /// by kind.
    selected: Mutex<Selections>,
    /// Where selection changes are reported when a shim is attached, and in which dialect.
    control: Option<(mpsc::UnboundedSender<LocalControl>, ShimDialect)>,
    /// The opt-in tool groups listed for this session, by name.
    shown: Mutex<BTreeSet<&'static str>>,
    /// Set when `shown` grew and the client has not been told yet.
    listing_changed: AtomicBool,
}

impl Session {
    /// A session starting with `selected` (restored from the shim's attach line, if any).
    pub fn new(
        id: String,
        selected: Selections,
        control: Option<(mpsc::UnboundedSender<LocalControl>, ShimDialect)>,
    ) -> Self {
        Session {
            id,
            selected: Mutex::new(selected),
            control,
            shown: Mutex::default(),
            listing_changed: AtomicBool::new(false),
        }
    }

    /// The session's identity, for logs.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The selected peer of kind `K`, if any.
    pub fn selected<K: PeerKind>(&self) -> Option<String> {
        self.selected
            .lock()
            .unwrap()
            .get(K::NOUN)
            .map(str::to_owned)
    }

    /// Lists the opt-in tool groups named (by their names) from now on.
    pub fn show(&self, groups: impl IntoIterator<Item = &'static str>) {
        let mut shown = self.shown.lock().unwrap();
        let before = shown.len();
        shown.extend(groups);
        if shown.len() > before {
            self.listing_changed.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the opt-in tool group named `group` is listed for this session.
    pub fn shows(&self, group: &str) -> bool {
        self.shown.lock().unwrap().contains(group)
    }

    /// Whether the session's tool listing changed since this was last asked.
    pub fn take_listing_changed(&self) -> bool {
        self.listing_changed.swap(false, Ordering::Relaxed)
    }

    /// Selects a peer of kind `K` and tells the shim, so the choice survives a reconnect.
    pub fn select<K: PeerKind>(&self, id: &str) {
        let changed = {
            let mut selected = self.selected.lock().unwrap();
            selected.set(K::NOUN, id).then(|| selected.clone())
        };
        if let (Some(selected), Some((control, dialect))) = (changed, &self.control)
            && let Some(state) = LocalControl::state(&selected, *dialect)
        {
            let _ = control.send(state);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::Browser;

    #[test]
    fn selections_reach_the_shim_in_its_own_dialect() {
        for (dialect, line) in [
            (
                ShimDialect::Selections,
                "{\"tabwire\":\"state\",\"selected\":{\"browser\":\"b1\"}}\n",
            ),
            (
                ShimDialect::BrowserOnly,
                "{\"tabwire\":\"state\",\"selectedBrowser\":\"b1\"}\n",
            ),
        ] {
            let (control, mut lines) = mpsc::unbounded_channel();
            let session = Session::new("s".into(), Selections::default(), Some((control, dialect)));
            session.select::<Browser>("b1");
            session.select::<Browser>("b1");
            assert_eq!(lines.try_recv().unwrap().to_line(), line);
            assert!(
                lines.try_recv().is_err(),
                "an unchanged selection is not reported"
            );
            assert_eq!(session.selected::<Browser>().as_deref(), Some("b1"));
        }
    }
}
