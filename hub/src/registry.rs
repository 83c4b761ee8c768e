//! The registry of browsers known to this hub, and request correlation on each connection.
//!
//! A browser is known from its first hello until the hub stops; it is *connected* while its
//! extension holds a `/browser` WebSocket. Requests go to the exact connection of the browser the
//! caller chose: the registry never substitutes another browser. When a connection ends, every
//! request still waiting on it fails at once with `BROWSER_DISCONNECTED` instead of waiting for
//! its deadline.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tabwire_protocol::{
    ErrorCode, Hello, HubMessage, OpError, OpResult, Operation, Request, TabId,
};
use tokio::sync::{mpsc, oneshot};

/// How many browsers the hub remembers. Beyond this, the disconnected browsers seen longest ago
/// are forgotten, so a misbehaving local client cannot grow the registry without bound.
pub const MAX_KNOWN_BROWSERS: usize = 64;

/// Extra time the hub waits beyond a request's deadline, so that the extension's own, more
/// precise timeout error (which names the page or the queue) arrives before the hub gives up on
/// the bridge.
const BRIDGE_GRACE: Duration = Duration::from_secs(2);

/// What an agent is told about a browser.
#[derive(Debug, Clone)]
pub struct BrowserInfo {
    /// The stable ID from the extension's hello.
    pub browser_id: String,
    /// The user-chosen name.
    pub name: String,
    /// The extension's version.
    pub extension_version: String,
    /// The Chrome version.
    pub chrome_version: String,
    /// Whether a connection is open now.
    pub connected: bool,
    /// How long the current connection has been open.
    pub connected_for: Option<Duration>,
}

/// All browsers this hub has seen (in hosted mode: those of one account).
#[derive(Default)]
pub struct Registry {
    browsers: Mutex<HashMap<String, Entry>>,
    /// How many browsers may be connected at once; `None` for no limit (local mode).
    browser_limit: Option<usize>,
    /// Numbers connections so a late cleanup of an old connection cannot unregister the newer
    /// connection of the same browser.
    next_connection: AtomicU64,
}

struct Entry {
    hello: Hello,
    connection: Option<Arc<Connection>>,
    /// When the browser last connected or disconnected; decides which browsers are forgotten
    /// first.
    last_change: Instant,
}

impl Registry {
    /// A registry allowing at most `limit` connected browsers.
    pub fn with_browser_limit(limit: usize) -> Self {
        Registry {
            browser_limit: Some(limit),
            ..Registry::default()
        }
    }

    /// Registers a browser connection after an accepted hello. Returns the connection handle
    /// and the queue of messages to write to its socket, or `LIMIT_EXCEEDED` when the registry
    /// already holds its limit of other connected browsers.
    ///
    /// A browser that connects again while its old connection is still registered (a
    /// reconnect racing the old socket's close) replaces it; the old connection's waiting
    /// requests fail with `BROWSER_DISCONNECTED`.
    pub fn connect(
        &self,
        hello: Hello,
    ) -> Result<(Arc<Connection>, mpsc::UnboundedReceiver<HubMessage>), OpError> {
        let (outbox, outbox_rx) = mpsc::unbounded_channel();
        let connection = Arc::new(Connection {
            number: self.next_connection.fetch_add(1, Ordering::Relaxed),
            browser_id: hello.browser_id.clone(),
            outbox,
            pending: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
            since: Instant::now(),
            replaced: tokio::sync::Notify::new(),
        });
        let replaced = {
            let mut browsers = self.browsers.lock().unwrap();
            if let Some(limit) = self.browser_limit {
                let others = browsers
                    .values()
                    .filter(|entry| entry.connection.is_some())
                    .filter(|entry| entry.hello.browser_id != hello.browser_id)
                    .count();
                if others >= limit {
                    return Err(OpError::new(
                        ErrorCode::LimitExceeded,
                        format!(
                            "this account already has {others} browsers connected (the hub allows \
                             {limit}); disconnect one first"
                        ),
                    ));
                }
            }
            let entry = Entry {
                hello,
                connection: Some(connection.clone()),
                last_change: Instant::now(),
            };
            let replaced = browsers
                .insert(connection.browser_id.clone(), entry)
                .and_then(|old| old.connection);
            forget_oldest_disconnected(&mut browsers);
            replaced
        };
        if let Some(old) = replaced {
            tracing::warn!(browser = %old.browser_id, "browser reconnected; closing its previous connection");
            old.fail_all("the browser opened a new connection");
            old.replaced.notify_one();
        }
        Ok((connection, outbox_rx))
    }

    /// Marks the browser disconnected if `connection` is still its current one, and fails every
    /// request waiting on that connection.
    pub fn disconnect(&self, connection: &Connection) {
        {
            let mut browsers = self.browsers.lock().unwrap();
            if let Some(entry) = browsers.get_mut(&connection.browser_id)
                && entry
                    .connection
                    .as_ref()
                    .is_some_and(|current| current.number == connection.number)
            {
                entry.connection = None;
                entry.last_change = Instant::now();
            }
        }
        connection.fail_all("the browser disconnected");
    }

    /// Every known browser, connected ones first, then by name.
    pub fn list(&self) -> Vec<BrowserInfo> {
        let browsers = self.browsers.lock().unwrap();
        let mut list: Vec<BrowserInfo> = browsers.values().map(Entry::info).collect();
        list.sort_by(|a, b| {
            b.connected
                .cmp(&a.connected)
                .then_with(|| a.name.cmp(&b.name))
                .then_with(|| a.browser_id.cmp(&b.browser_id))
        });
        list
    }

    /// One browser by ID.
    pub fn get(&self, browser_id: &str) -> Option<BrowserInfo> {
        self.browsers
            .lock()
            .unwrap()
            .get(browser_id)
            .map(Entry::info)
    }

    /// The open connection of a browser: `BROWSER_NOT_FOUND` for an unknown ID,
    /// `BROWSER_DISCONNECTED` for a known browser that is not connected.
    pub fn connection(&self, browser_id: &str) -> Result<Arc<Connection>, OpError> {
        let browsers = self.browsers.lock().unwrap();
        match browsers.get(browser_id) {
            None => Err(OpError::new(
                ErrorCode::BrowserNotFound,
                format!("no browser with ID {browser_id} is known to this hub; call list_browsers"),
            )),
            Some(entry) => entry.connection.clone().ok_or_else(|| {
                OpError::new(
                    ErrorCode::BrowserDisconnected,
                    format!(
                        "browser \"{}\" ({browser_id}) is not connected; tabwire never switches \
                         to another browser on its own. Wait for it to reconnect or select another \
                         browser",
                        entry.hello.browser_name
                    ),
                )
            }),
        }
    }
}

/// Keeps the registry within [`MAX_KNOWN_BROWSERS`] by forgetting the disconnected browsers
/// seen longest ago. Connected browsers are never forgotten.
fn forget_oldest_disconnected(browsers: &mut HashMap<String, Entry>) {
    while browsers.len() > MAX_KNOWN_BROWSERS {
        let oldest = browsers
            .iter()
            .filter(|(_, entry)| entry.connection.is_none())
            .min_by_key(|(_, entry)| entry.last_change)
            .map(|(id, _)| id.clone());
        match oldest {
            Some(id) => {
                browsers.remove(&id);
            }
            None => break,
        }
    }
}

impl Entry {
    fn info(&self) -> BrowserInfo {
        BrowserInfo {
            browser_id: self.hello.browser_id.clone(),
            name: self.hello.browser_name.clone(),
            extension_version: self.hello.extension_version.clone(),
            chrome_version: self.hello.chrome_version.clone(),
            connected: self.connection.is_some(),
            connected_for: self.connection.as_ref().map(|c| c.since.elapsed()),
        }
    }
}

/// One open `/browser` WebSocket.
pub struct Connection {
    number: u64,
    browser_id: String,
    /// Messages for the socket writer; sending fails once the connection loop has ended.
    outbox: mpsc::UnboundedSender<HubMessage>,
    /// Requests sent and not yet answered, by request ID.
    pending: Mutex<HashMap<u64, oneshot::Sender<Result<OpResult, OpError>>>>,
    next_request: AtomicU64,
    since: Instant,
    /// Signalled when a newer connection of the same browser took over; the connection loop
    /// then closes this socket.
    replaced: tokio::sync::Notify,
}

impl Connection {
    /// Completes once a newer connection of the same browser has replaced this one.
    pub async fn replaced(&self) {
        self.replaced.notified().await;
    }

    /// The browser this connection belongs to.
    pub fn browser_id(&self) -> &str {
        &self.browser_id
    }

    /// Sends an operation and waits for its response, at most `deadline` plus a short grace.
    pub async fn request(
        &self,
        tool: &str,
        tab_id: Option<TabId>,
        op: Operation,
        deadline: Duration,
    ) -> Result<OpResult, OpError> {
        let mutation = op.is_mutation();
        let id = self.next_request.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, reply);
        // If the caller stops waiting (the MCP request was cancelled), forget the request so
        // its late response is dropped rather than leaking an entry.
        let _forget = PendingGuard {
            connection: self,
            id,
        };
        let request = HubMessage::Request(Request {
            id,
            tab_id,
            deadline_ms: deadline.as_millis().try_into().unwrap_or(u64::MAX),
            tool: tool.to_owned(),
            op,
        });
        if self.outbox.send(request).is_err() {
            return Err(disconnected(&self.browser_id, "the browser disconnected"));
        }
        let outcome = match tokio::time::timeout(deadline + BRIDGE_GRACE, answer).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(disconnected(&self.browser_id, "the browser disconnected")),
            Err(_) => Err(OpError::new(
                ErrorCode::BridgeTimeout,
                format!(
                    "the browser did not answer within {} ms",
                    (deadline + BRIDGE_GRACE).as_millis()
                ),
            )),
        };
        outcome.map_err(|error| {
            let cut_off = matches!(
                error.code,
                ErrorCode::BridgeTimeout | ErrorCode::BrowserDisconnected
            );
            if mutation && cut_off {
                error.action_may_have_occurred()
            } else {
                error
            }
        })
    }

    /// Delivers a response from the extension to whoever waits for it. A response nobody
    /// waits for any more (deadline passed, caller gone) is dropped.
    pub fn complete(&self, id: u64, outcome: Result<OpResult, OpError>) {
        let waiter = self.pending.lock().unwrap().remove(&id);
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(outcome);
            }
            None => tracing::debug!(browser = %self.browser_id, id, "late response dropped"),
        }
    }

    /// Queues a message for the socket (used by the connection loop for heartbeats).
    pub fn send(&self, message: HubMessage) {
        let _ = self.outbox.send(message);
    }

    /// Fails every waiting request at once.
    fn fail_all(&self, why: &str) {
        let waiters: Vec<_> = self.pending.lock().unwrap().drain().collect();
        for (_, waiter) in waiters {
            let _ = waiter.send(Err(disconnected(&self.browser_id, why)));
        }
    }
}

fn disconnected(browser_id: &str, why: &str) -> OpError {
    OpError::new(
        ErrorCode::BrowserDisconnected,
        format!("{why} ({browser_id}) before answering"),
    )
}

/// Removes a pending request when its caller stops waiting, however that happens.
struct PendingGuard<'a> {
    connection: &'a Connection,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.connection.pending.lock().unwrap().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tabwire_protocol::{PROTOCOL_VERSION, Response, Target};

    fn hello(id: &str, name: &str) -> Hello {
        Hello {
            browser_id: id.into(),
            browser_name: name.into(),
            extension_version: "0.1.0".into(),
            protocol_version: PROTOCOL_VERSION,
            chrome_version: "156".into(),
        }
    }

    fn click() -> Operation {
        Operation::Act(tabwire_protocol::ActRequest {
            action: tabwire_protocol::Action::Hover {
                target: Target::Css("#go".into()),
            },
            observe: None,
        })
    }

    #[tokio::test]
    async fn response_reaches_its_request() {
        let registry = Registry::default();
        let (conn, mut outbox) = registry.connect(hello("b1", "Work")).unwrap();
        let waiter = {
            let conn = conn.clone();
            tokio::spawn(async move {
                conn.request(
                    "list_tabs",
                    None,
                    Operation::ListTabs,
                    Duration::from_secs(5),
                )
                .await
            })
        };
        let Some(HubMessage::Request(request)) = outbox.recv().await else {
            panic!("expected a request");
        };
        assert_eq!(request.tool, "list_tabs");
        let response = Response::new(request.id, Ok(OpResult::Tabs { tabs: vec![] }));
        conn.complete(response.id, response.into_outcome());
        assert_eq!(
            waiter.await.unwrap().unwrap(),
            OpResult::Tabs { tabs: vec![] }
        );
    }

    #[tokio::test]
    async fn disconnect_fails_pending_requests_at_once() {
        let registry = Registry::default();
        let (conn, mut outbox) = registry.connect(hello("b1", "Work")).unwrap();
        let waiter = {
            let conn = conn.clone();
            tokio::spawn(async move {
                conn.request("click_element", Some(3), click(), Duration::from_secs(60))
                    .await
            })
        };
        outbox.recv().await.expect("request sent");
        let started = Instant::now();
        registry.disconnect(&conn);
        let error = waiter.await.unwrap().unwrap_err();
        assert_eq!(error.code, ErrorCode::BrowserDisconnected);
        assert!(
            error.action_may_have_occurred,
            "a cut-off click may have happened"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(!registry.get("b1").unwrap().connected);
        assert_eq!(
            registry.connection("b1").err().unwrap().code,
            ErrorCode::BrowserDisconnected
        );
        assert_eq!(
            registry.connection("nope").err().unwrap().code,
            ErrorCode::BrowserNotFound
        );
    }

    #[tokio::test]
    async fn reconnect_replaces_the_old_connection_only_once() {
        let registry = Registry::default();
        let (old, mut old_outbox) = registry.connect(hello("b1", "Work")).unwrap();
        let waiter = {
            let old = old.clone();
            tokio::spawn(async move {
                old.request(
                    "list_tabs",
                    None,
                    Operation::ListTabs,
                    Duration::from_secs(60),
                )
                .await
            })
        };
        old_outbox
            .recv()
            .await
            .expect("request sent on the old connection");
        let (new, _new_outbox) = registry.connect(hello("b1", "Work renamed")).unwrap();
        // The old connection's waiting request fails, and its loop is told to close.
        assert_eq!(
            waiter.await.unwrap().unwrap_err().code,
            ErrorCode::BrowserDisconnected
        );
        tokio::time::timeout(Duration::from_secs(1), old.replaced())
            .await
            .expect("the old connection is told it was replaced");
        // The old connection's late cleanup must not unregister the new one.
        registry.disconnect(&old);
        let info = registry.get("b1").unwrap();
        assert!(info.connected);
        assert_eq!(info.name, "Work renamed");
        assert_eq!(registry.connection("b1").unwrap().number, new.number);
    }

    #[tokio::test(start_paused = true)]
    async fn silent_browser_gives_bridge_timeout() {
        let registry = Registry::default();
        let (conn, _outbox) = registry.connect(hello("b1", "Work")).unwrap();
        let error = conn
            .request(
                "list_tabs",
                None,
                Operation::ListTabs,
                Duration::from_secs(1),
            )
            .await
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::BridgeTimeout);
        assert!(
            !error.action_may_have_occurred,
            "listing tabs changes nothing"
        );
        assert!(conn.pending.lock().unwrap().is_empty());
    }

    #[test]
    fn the_registry_forgets_old_disconnected_browsers_beyond_its_cap() {
        let registry = Registry::default();
        let (kept, _outbox) = registry.connect(hello("live", "Live")).unwrap();
        for n in 0..MAX_KNOWN_BROWSERS + 10 {
            let (conn, _outbox) = registry
                .connect(hello(&format!("gone-{n}"), "Gone"))
                .unwrap();
            registry.disconnect(&conn);
        }
        let list = registry.list();
        assert_eq!(list.len(), MAX_KNOWN_BROWSERS);
        assert!(list.iter().any(|b| b.browser_id == "live" && b.connected));
        assert!(
            registry.get("gone-0").is_none(),
            "the oldest is forgotten first"
        );
        assert!(
            registry
                .get(&format!("gone-{}", MAX_KNOWN_BROWSERS + 9))
                .is_some()
        );
        drop(kept);
    }

    #[test]
    fn list_puts_connected_browsers_first() {
        let registry = Registry::default();
        let (gone, _a) = registry.connect(hello("b1", "Alpha")).unwrap();
        let (_kept, _b) = registry.connect(hello("b2", "Zulu")).unwrap();
        registry.disconnect(&gone);
        let names: Vec<_> = registry.list().into_iter().map(|b| b.name).collect();
        assert_eq!(names, ["Zulu", "Alpha"]);
    }

    #[test]
    fn a_limited_registry_refuses_one_browser_too_many_but_not_a_reconnect() {
        let registry = Registry::with_browser_limit(2);
        let (_a, _ao) = registry.connect(hello("a", "A")).unwrap();
        let (b, _bo) = registry.connect(hello("b", "B")).unwrap();
        let refused = registry.connect(hello("c", "C")).err().unwrap();
        assert_eq!(refused.code, ErrorCode::LimitExceeded);
        assert!(
            registry.get("c").is_none(),
            "a refused browser is not registered"
        );
        // The same browser reconnecting replaces itself and is not counted twice.
        let (_b2, _b2o) = registry.connect(hello("b", "B")).unwrap();
        registry.disconnect(&b);
        assert_eq!(registry.list().iter().filter(|x| x.connected).count(), 2);
    }
}
