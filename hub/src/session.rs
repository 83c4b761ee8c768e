//! An MCP session's own state: which peer of each kind (browser, later device) it has selected,
//! which opt-in tool groups it has asked to see listed, and who it is to the peers' leases.
//!
//! Selection is per session, so two agents can drive two different browsers through one hub.
//! A local session attached by `tabwire-mcp` also reports every change of selection back to the
//! shim, which hands it to the hub again after a reconnect: that is how a session keeps its
//! browser across a hub restart without the hub storing anything on disk.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tabwire_protocol::{Kind, KindSet, LeaseHolder, LocalControl, Selections, ShimDialect};
use tokio::sync::mpsc;

use crate::accounts::Account;
use crate::leases;
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
    /// Who the session is to leases, made with its first tool call (the client's name is known
    /// from `initialize` on); dropped with the session, which ends its leases.
    lease: OnceLock<SessionLease>,
    /// The kinds listed only while connected ([`tabwire_protocol::Listing::WhileConnected`])
    /// whose tools the client was last shown (in a listing, or by being told its list changed
    /// when the account's first peer of the kind connected), as [`KindSet`] bits.
    peers_shown: AtomicU32,
    /// Set once something watches the account's peers for this session.
    watching_peers: AtomicBool,
    /// Cancelled when the session ends, which stops what watches for it.
    ended: tokio_util::sync::CancellationToken,
    /// Cancelled when the session's client went away (its input ended), which cancels the
    /// calls still running at once: rmcp itself cancels them only after giving their
    /// responses a few seconds to drain.
    hung_up: tokio_util::sync::CancellationToken,
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
            lease: OnceLock::new(),
            peers_shown: AtomicU32::new(KindSet::EMPTY.bits()),
            watching_peers: AtomicBool::new(false),
            ended: tokio_util::sync::CancellationToken::new(),
            hung_up: tokio_util::sync::CancellationToken::new(),
        }
    }

    /// Records that the session's client went away: every call it has running is cancelled.
    pub fn hang_up(&self) {
        self.hung_up.cancel();
    }

    /// Runs `work`, one call of this session, cancelling `call` (the call's token) if the
    /// client goes away meanwhile.
    pub async fn unless_hung_up<F: std::future::Future>(
        &self,
        call: &tokio_util::sync::CancellationToken,
        work: F,
    ) -> F::Output {
        let hung_up = async {
            self.hung_up.cancelled().await;
            call.cancel();
            std::future::pending::<()>().await;
        };
        tokio::select! {
            output = work => output,
            () = hung_up => unreachable!("never completes"),
        }
    }

    /// Records that a listing went out with the tools of the kinds `shown` (of those listed
    /// only while connected).
    pub fn listed_peers(&self, shown: KindSet) {
        self.peers_shown.store(shown.bits(), Ordering::Relaxed);
    }

    /// Whether the client must be told its tool list changed because the account's peers of
    /// kinds listed only while connected came or went (`present`) since it was last shown;
    /// records that it is being told.
    pub fn peers_changed(&self, present: KindSet) -> bool {
        self.peers_shown.swap(present.bits(), Ordering::Relaxed) != present.bits()
    }

    /// True the first time only: the caller starts watching the account's peers.
    pub fn start_watching_peers(&self) -> bool {
        !self.watching_peers.swap(true, Ordering::Relaxed)
    }

    /// Completes when the session ends.
    pub fn ended(&self) -> tokio_util::sync::WaitForCancellationFutureOwned {
        self.ended.clone().cancelled_owned()
    }

    /// Who the session is to leases: made by `make` the first time, the same ever after.
    pub fn lease_holder(&self, make: impl FnOnce() -> SessionLease) -> LeaseHolder {
        self.lease.get_or_init(make).holder().clone()
    }

    /// The session's identity, for logs.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The selected peer of kind `K`, if any.
    pub fn selected<K: PeerKind>(&self) -> Option<String> {
        self.selected_of(K::SPEC.kind)
    }

    /// The selected peer of `kind`, if any.
    pub fn selected_of(&self, kind: Kind) -> Option<String> {
        self.selected
            .lock()
            .unwrap()
            .get(kind.spec().noun)
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
        self.select_of(K::SPEC.kind, id);
    }

    /// Selects a peer of `kind` and tells the shim, so the choice survives a reconnect.
    pub fn select_of(&self, kind: Kind, id: &str) {
        let changed = {
            let mut selected = self.selected.lock().unwrap();
            selected.set(kind.spec().noun, id).then(|| selected.clone())
        };
        if let (Some(selected), Some((control, dialect))) = (changed, &self.control)
            && let Some(state) = LocalControl::state(&selected, *dialect)
        {
            let _ = control.send(state);
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.ended.cancel();
    }
}

/// Numbers the sessions of this hub process, for their opaque IDs.
static SESSIONS: AtomicU64 = AtomicU64::new(1);

/// One MCP session's lease identity, kept by its [`Session`]; dropping it (the
/// session ended) ends the session's leases in every peer of its account.
pub struct SessionLease {
    holder: LeaseHolder,
    account: Arc<Account>,
}

impl SessionLease {
    /// The identity of a new session of `account` by the client named `client_name`.
    pub fn new(account: Arc<Account>, client_name: Option<&str>, idle: Duration) -> Self {
        let holder = LeaseHolder {
            // Numbered for the logs, and random so that no session of a later hub process (or
            // of another replica) is taken for this one by a browser that remembers it.
            session: format!(
                "s{}-{}",
                SESSIONS.fetch_add(1, Ordering::Relaxed),
                crate::random::hex::<6>()
            ),
            client: account.client_labels.next(client_name),
            idle_ms: leases::millis(idle),
        };
        SessionLease { holder, account }
    }

    /// Who the session is, for its requests.
    pub fn holder(&self) -> &LeaseHolder {
        &self.holder
    }
}

impl Drop for SessionLease {
    fn drop(&mut self) {
        tracing::debug!(
            session = self.holder.session,
            client = self.holder.client,
            "session's leases end"
        );
        self.account.session_ended(&self.holder.session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::Browser;
    use tabwire_protocol::{Hello, HubMessage, PROTOCOL_VERSION};

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

    #[test]
    fn a_sessions_end_reaches_every_connected_browser_of_its_account() {
        let accounts = crate::accounts::Accounts::local();
        let account = accounts.local_account();
        let mut inboxes = Vec::new();
        for id in ["b1", "b2"] {
            let (_connection, inbox) = account
                .registry::<Browser>()
                .connect(
                    Hello {
                        browser_id: id.into(),
                        browser_name: id.into(),
                        extension_version: "0.1.0".into(),
                        protocol_version: PROTOCOL_VERSION,
                        chrome_version: "156".into(),
                        proof: None,
                        managed_code: false,
                    },
                    crate::registry::Owner::fixed(id),
                )
                .unwrap();
            inboxes.push((_connection, inbox));
        }
        let first = SessionLease::new(
            account.clone(),
            Some("Claude Code"),
            leases::DEFAULT_LEASE_IDLE,
        );
        let second = SessionLease::new(
            account.clone(),
            Some("Claude Code"),
            leases::DEFAULT_LEASE_IDLE,
        );
        assert_ne!(first.holder().session, second.holder().session);
        assert_eq!(first.holder().client, "Claude Code · 1");
        assert_eq!(second.holder().client, "Claude Code · 2");
        assert_eq!(first.holder().idle_ms, 600_000);
        let session = first.holder().session.clone();
        for (_, inbox) in &mut inboxes {
            assert!(inbox.try_recv().is_err(), "nothing before the session ends");
        }
        drop(first);
        for (_, inbox) in &mut inboxes {
            assert_eq!(
                inbox.try_recv().unwrap(),
                HubMessage::SessionEnded {
                    session: session.clone()
                }
            );
        }
    }
}
