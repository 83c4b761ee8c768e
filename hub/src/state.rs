//! What every connection of one hub shares: the accounts with their peers, the URL extensions
//! are told to use, the token checks of hosted mode, the paired browsers of local mode,
//! whether agents may open file URLs, the audit log, the operator's policies and how long
//! leases last.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::accounts::Accounts;
use crate::audit::AuditLog;
use crate::auth::Authenticator;
use crate::launch::Launched;
use crate::leases::DEFAULT_LEASE_IDLE;
use crate::pairing::Pairings;
use crate::peer::Reach;
pub use crate::policy::FileUrls;
use crate::policy::Policies;
use tabwire_protocol::policy::Policy;

/// State shared by every connection.
pub struct HubState {
    /// Accounts and their peers (local mode has one account).
    pub accounts: Accounts,
    /// The URL an extension should be given to reach this hub, for messages to the user.
    pub browser_url: String,
    /// Token checks, in hosted mode.
    pub auth: Option<Arc<Authenticator>>,
    /// The paired browsers, in local mode.
    pub pairings: Option<Arc<Pairings>>,
    /// Whether tools may open file:// URLs in this hub's browsers.
    pub file_urls: FileUrls,
    /// What uploads may carry, and where paths are read from.
    pub uploads: crate::uploads::Uploads,
    /// Where every tool call is recorded, when the hub keeps an audit log.
    pub audit: Option<AuditLog>,
    /// How long a session's lease on a tab lasts without a changing call (`--lease-idle`).
    pub lease_idle: Duration,
    /// The operator's policy of each account.
    pub policies: Arc<Policies>,
    /// Where the hub listens and keeps its files, for `doctor`.
    pub layout: Layout,
    /// The replica cluster this hub is part of (`--cluster`); `None` for a lone hub.
    pub cluster: Option<Arc<crate::cluster::Cluster>>,
}

/// Where a hub listens and keeps its files, and the browser it launched: what `doctor` checks
/// and names. Every field is `None` for a hub that has no such thing (hosted mode has no
/// socket) and in tests that build a state without listeners.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// The bound HTTP address.
    pub http: Option<SocketAddr>,
    /// Where clients reach a hosted hub (`https://host/prefix`).
    pub public: Option<String>,
    /// Local mode's Unix socket.
    pub socket: Option<PathBuf>,
    /// Local mode's state directory.
    pub state_dir: Option<PathBuf>,
    /// The audit log's directory.
    pub audit_dir: Option<PathBuf>,
    /// The browser the hub launches (`--launch-browser`) and its status.
    pub launched: Option<Arc<Launched>>,
}

/// What the hub checks about a URL before a tool loads it: its rule for file URLs and the
/// operator's policy of the caller's account.
#[derive(Debug, Clone)]
pub struct Destinations {
    /// Whether file URLs may be opened.
    pub file_urls: FileUrls,
    /// The operator's policy.
    pub policy: Arc<Policy>,
    /// Whether the hub is hosted: whose files a `file://` URL would read (the browser's
    /// owner's, or the user's own) and so how a refusal is worded.
    pub hosted: bool,
}

impl From<FileUrls> for Destinations {
    /// `file_urls` of a local hub, under a policy that allows everything.
    fn from(file_urls: FileUrls) -> Self {
        Destinations {
            file_urls,
            policy: Arc::new(Policy::default()),
            hosted: false,
        }
    }
}

impl HubState {
    /// What URLs the callers of `account` may load.
    pub fn destinations(&self, account: &str) -> Destinations {
        Destinations {
            file_urls: self.file_urls,
            policy: self.policies.for_account(account),
            hosted: self.is_hosted(),
        }
    }

    /// Local mode's state: one account, browsers paired in `pairings`.
    pub fn local(browser_url: String, pairings: Arc<Pairings>) -> Self {
        HubState {
            accounts: Accounts::local(),
            browser_url,
            auth: None,
            pairings: Some(pairings),
            file_urls: FileUrls::Refused,
            uploads: Default::default(),
            audit: None,
            lease_idle: DEFAULT_LEASE_IDLE,
            policies: Arc::new(Policies::local(None).expect("no file to read")),
            layout: Layout::default(),
            cluster: None,
        }
    }

    /// Whether the hub is hosted (checks tokens).
    pub fn is_hosted(&self) -> bool {
        self.auth.is_some()
    }

    /// How peers reach this hub.
    pub fn reach(&self) -> Reach<'_> {
        Reach {
            browser_url: &self.browser_url,
            hosted: self.is_hosted(),
        }
    }
}
