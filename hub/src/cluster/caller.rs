//! The caller's side: a call for a peer another replica holds.
//!
//! The call is published once to the peer's subject with its own inbox as reply subject (under
//! the replica's one inbox subscription), and never re-sent. The inbox then hears `Accepted` at once, `Working` every 500 ms while the
//! owner runs it, and the `Answer` (whole or in chunks). The outcomes that are not the peer's
//! own answer:
//! - NATS says no one listens on the subject ("no responders"): the peer is connected to no
//!   replica — the kind's `…_DISCONNECTED` at once; nothing was sent anywhere.
//! - Nothing heard for [`SILENCE`] (the owner died or hangs): `…_DISCONNECTED`, with
//!   `actionMayHaveOccurred` for a changing operation, since it may have reached the peer.
//! - This replica loses NATS while waiting: the same, at once.
//! - The MCP call is cancelled: the owner is told (`Cancel` on its node's subject) and its
//!   answer, which says whether input went out, is waited for as on the local path.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tabwire_protocol::{ErrorCode, LeaseHolder, OpError, OpResult, Operation, TabId};
use tokio_util::sync::CancellationToken;

use super::subjects;
use super::wire::{CHUNK_HEADER, ClusterMessage};
use super::{Cluster, Link};
use crate::registry::{Answering, Connection, Elsewhere, RemotePeer};

/// How long a caller waits without hearing from the owner before it takes it for dead.
pub const SILENCE: Duration = Duration::from_millis(1500);

/// Beyond the call's deadline, how long the caller waits for the owner's answer (the owner's
/// own bridge grace, plus the hop).
const ANSWER_GRACE: Duration = Duration::from_secs(4);

/// A registry's way to the other replicas, for its account.
impl Elsewhere for Link {
    fn own(
        &self,
        kind: &'static str,
        hello: serde_json::Value,
        credential: &str,
        connection: &Arc<Connection>,
    ) {
        self.cluster
            .own(&self.account, kind, hello, credential, connection);
    }

    fn disown(&self, kind: &'static str, connection: &Connection) {
        self.cluster.disown(&self.account, kind, connection);
    }

    fn peers(&self, kind: &'static str) -> Vec<RemotePeer> {
        self.cluster
            .presence
            .remote(&self.account, kind)
            .into_iter()
            .map(|remote| RemotePeer {
                hello: remote.peer.hello,
                connected_ms: remote.peer.connected_ms,
                credential: remote.peer.credential,
            })
            .collect()
    }

    fn reachable(&self) -> bool {
        self.cluster.is_connected()
    }

    fn request<'a>(
        &'a self,
        connection: &'a Connection,
        tool: &'a str,
        tab_id: Option<TabId>,
        holder: Option<&'a LeaseHolder>,
        op: Operation,
        deadline: Duration,
        cancel: &'a CancellationToken,
    ) -> Answering<'a> {
        Box::pin(self.call(connection, tool, tab_id, holder, op, deadline, cancel))
    }
}

impl Link {
    /// [`Connection::request_unless`] for a peer on another replica.
    #[allow(clippy::too_many_arguments)]
    async fn call(
        &self,
        connection: &Connection,
        tool: &str,
        tab_id: Option<TabId>,
        holder: Option<&LeaseHolder>,
        op: Operation,
        deadline: Duration,
        cancel: &CancellationToken,
    ) -> Result<OpResult, OpError> {
        let noun = connection.noun();
        let peer = connection.peer_id();
        let code = connection.disconnected_code();
        let mutation = op.is_mutation();
        let not_sent = |why: String| Err(OpError::new(code, why));
        if cancel.is_cancelled() {
            return Err(OpError::new(
                ErrorCode::Cancelled,
                format!(
                    "The MCP client cancelled the call; this request to the {noun} was not sent."
                ),
            ));
        }
        let cluster = &self.cluster;
        if !cluster.is_connected() {
            return not_sent(format!(
                "{noun} {peer} is not on this replica, and this replica has lost its connection \
                 to NATS, so it cannot reach the others; try again shortly"
            ));
        }
        let client = &cluster.client;
        let call_uid = uuid::Uuid::new_v4().simple().to_string();
        let inbox = format!("{}.{call_uid}", cluster.inbox_prefix);
        let (tx, mut replies) = tokio::sync::mpsc::unbounded_channel();
        cluster.waiting.lock().unwrap().insert(call_uid.clone(), tx);
        let _waiting = Waiting {
            cluster,
            call_uid: &call_uid,
        };
        let call = ClusterMessage::Call {
            account: self.account.clone(),
            kind: noun.to_owned(),
            peer: peer.to_owned(),
            tool: tool.to_owned(),
            tab_id,
            holder: holder.cloned(),
            op: Box::new(op),
            deadline_ms: deadline.as_millis().try_into().unwrap_or(u64::MAX),
            call_uid: call_uid.clone(),
            from_node: cluster.node.clone(),
        };
        let subject = subjects::peer(&self.account, noun, peer);
        if let Err(error) = client
            .publish_with_reply(subject, inbox, call.to_bytes().into())
            .await
        {
            return not_sent(format!("cannot reach the other replicas: {error}"));
        }
        // Whatever ends this wait from here on, the call may have reached the owner.
        let cut_off = |why: String| {
            let error = OpError::new(code, why);
            if mutation {
                Err(error.action_may_have_occurred())
            } else {
                Err(error)
            }
        };
        let mut connected = cluster.connected.clone();
        let give_up = tokio::time::Instant::now() + deadline + ANSWER_GRACE;
        let mut last_heard = tokio::time::Instant::now();
        let mut owner: Option<String> = None;
        let mut cancel_sent = false;
        let mut pieces: Vec<u8> = Vec::new();
        let mut next_piece = 0usize;
        loop {
            let message = tokio::select! {
                biased;
                message = replies.recv() => message,
                () = cancel.cancelled(), if !cancel_sent => {
                    cancel_sent = true;
                    if let Some(node) = &owner {
                        send_cancel(cluster, node, &call_uid);
                    }
                    continue;
                }
                changed = connected.wait_for(|up| !*up) => {
                    let _ = changed;
                    return cut_off(format!(
                        "this replica lost its connection to NATS while {noun} {peer} (on \
                         another replica) ran the call"
                    ));
                }
                () = tokio::time::sleep_until(last_heard + SILENCE) => {
                    let on = owner.as_deref().map(|node| format!(" ({node})")).unwrap_or_default();
                    return cut_off(format!(
                        "the replica holding {noun} {peer}{on} stopped answering; the call was \
                         not re-sent"
                    ));
                }
                () = tokio::time::sleep_until(give_up) => {
                    let error = OpError::new(
                        ErrorCode::BridgeTimeout,
                        format!("the {noun} did not answer within {} ms", (deadline + ANSWER_GRACE).as_millis()),
                    );
                    return Err(if mutation { error.action_may_have_occurred() } else { error });
                }
            };
            let Some(message) = message else {
                return cut_off(format!("the answer from {noun} {peer} was cut off"));
            };
            if message.status == Some(async_nats::StatusCode::NO_RESPONDERS) {
                return Err(OpError::new(
                    code,
                    format!(
                        "{noun} {peer} is not connected to any replica; tabwire never switches \
                         to another {noun} on its own. Wait for it to reconnect or select \
                         another {noun}"
                    ),
                ));
            }
            last_heard = tokio::time::Instant::now();
            let piece = message
                .headers
                .as_ref()
                .and_then(|headers| headers.get(CHUNK_HEADER))
                .map(|value| value.as_str().to_owned());
            let whole = match piece {
                Some(piece) => {
                    let (index, count) = piece
                        .split_once('/')
                        .and_then(|(i, n)| {
                            Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?))
                        })
                        .unwrap_or((usize::MAX, 0));
                    if index != next_piece {
                        return cut_off(format!(
                            "the answer from {noun} {peer} arrived out of order"
                        ));
                    }
                    pieces.extend_from_slice(&message.payload);
                    next_piece += 1;
                    if next_piece < count {
                        continue;
                    }
                    ClusterMessage::from_bytes(&std::mem::take(&mut pieces))
                }
                None => ClusterMessage::from_bytes(&message.payload),
            };
            match whole {
                Some(ClusterMessage::Accepted { node }) => {
                    if cancel_sent && owner.is_none() {
                        send_cancel(cluster, &node, &call_uid);
                    }
                    owner = Some(node);
                }
                Some(ClusterMessage::Working { .. }) => {}
                Some(ClusterMessage::Answer { outcome, node }) => {
                    connection.note_owner(&node);
                    return *outcome;
                }
                _ => {}
            }
        }
    }
}

/// Forgets a call's place among the waiting when it ends, however it ends.
struct Waiting<'a> {
    cluster: &'a Cluster,
    call_uid: &'a str,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.cluster.waiting.lock().unwrap().remove(self.call_uid);
    }
}

impl Cluster {
    /// Hands each reply on this replica's inbox subscription to the call it is for.
    pub(super) async fn hand_out(
        cluster: std::sync::Weak<Cluster>,
        mut replies: async_nats::Subscriber,
    ) {
        while let Some(message) = replies.next().await {
            let Some(cluster) = cluster.upgrade() else {
                return;
            };
            let Some(call_uid) = message.subject.as_str().rsplit('.').next() else {
                continue;
            };
            let waiter = cluster.waiting.lock().unwrap().get(call_uid).cloned();
            if let Some(waiter) = waiter {
                let _ = waiter.send(message);
            }
        }
    }
}

/// Tells the owner `node` to stop the call `call_uid`.
fn send_cancel(cluster: &Cluster, node: &str, call_uid: &str) {
    cluster.publish(
        subjects::cancel(node),
        &ClusterMessage::Cancel {
            call_uid: call_uid.to_owned(),
        },
    );
}
