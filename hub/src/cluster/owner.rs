//! The owner's side: the peers this replica holds, served to the other replicas.
//!
//! When a peer connects here, this replica subscribes to its subject in the `owners` queue
//! group, announces a takeover with a fresh epoch (so an older owner elsewhere drops its stale
//! connection) and says it holds the peer. Each call that arrives is checked (the account it
//! names must be the subject's and the peer's), acknowledged at once (`Accepted`), kept alive
//! every [`WORKING_EVERY`] (`Working`) and answered on the caller's inbox — in chunks of
//! [`CHUNK_BYTES`] when large — by the same `request_unless` a local call uses.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tabwire_protocol::{ErrorCode, OpError};
use tokio_util::sync::CancellationToken;

use super::Cluster;
use super::fence::{Epoch, PeerKey};
use super::held::Owned;
use super::subjects;
use super::wire::{CHUNK_BYTES, CHUNK_HEADER, ClusterMessage, PresentPeer};
use crate::registry::Connection;

/// How often the owner tells a caller that it still runs its call.
pub const WORKING_EVERY: Duration = Duration::from_millis(500);

impl Cluster {
    /// Becomes the owner of the peer whose `connection` just registered here.
    pub fn own(
        self: &Arc<Self>,
        account: &str,
        kind: &str,
        hello: serde_json::Value,
        credential: &str,
        connection: &Arc<Connection>,
    ) {
        let key: PeerKey = (
            account.to_owned(),
            kind.to_owned(),
            connection.peer_id().to_owned(),
        );
        let epoch = self.fences.take(&key, &self.node);
        let listening = CancellationToken::new();
        let previous = self.owned.lock().unwrap().insert(
            key.clone(),
            Owned {
                number: connection.number(),
                epoch: epoch.clone(),
                hello,
                credential: credential.to_owned(),
                since: Instant::now(),
                connection: connection.clone(),
                listening: listening.clone(),
            },
        );
        if let Some(previous) = previous {
            previous.listening.cancel();
        }
        let weak = Arc::downgrade(self);
        self.spawn(serve(weak, key, epoch, connection.clone(), listening));
    }

    /// Stops owning the peer of `connection`, if that is still the connection this replica
    /// owns it by.
    pub fn disown(&self, account: &str, kind: &str, connection: &Connection) {
        let key: PeerKey = (
            account.to_owned(),
            kind.to_owned(),
            connection.peer_id().to_owned(),
        );
        let removed = {
            let mut owned = self.owned.lock().unwrap();
            match owned.get(&key) {
                Some(entry) if entry.number == connection.number() => owned.remove(&key),
                _ => None,
            }
        };
        if let Some(removed) = removed {
            // Its listener unsubscribes, then says what this replica still holds.
            removed.listening.cancel();
        }
    }

    /// Drops this replica's connection of `key` if a newer owner's `epoch` fences it.
    pub(super) fn fenced(&self, key: &PeerKey, epoch: &Epoch) {
        let removed = {
            let mut owned = self.owned.lock().unwrap();
            match owned.get(key) {
                Some(entry) if entry.epoch < *epoch => owned.remove(key),
                _ => None,
            }
        };
        if let Some(removed) = removed {
            tracing::warn!(
                peer = %key.2, kind = %key.1, newer = %epoch.node,
                "cluster: the peer connected to another replica; dropping this connection"
            );
            removed.listening.cancel();
            removed.connection.fence(&format!(
                "the {} connected to replica {}",
                key.1, epoch.node
            ));
        }
    }

    /// Says which peers of `account`'s `kind` this replica holds.
    pub(super) fn publish_presence(&self, account: &str, kind: &str) {
        let peers: Vec<PresentPeer> = self
            .owned
            .lock()
            .unwrap()
            .iter()
            .filter(|((a, k, _), _)| a == account && k == kind)
            .map(|(_, owned)| PresentPeer {
                hello: owned.hello.clone(),
                connected_ms: owned.since.elapsed().as_millis() as u64,
                credential: owned.credential.clone(),
            })
            .collect();
        self.publish(
            subjects::presence(account, kind),
            &ClusterMessage::Presence {
                account: account.to_owned(),
                kind: kind.to_owned(),
                node: self.node.clone(),
                peers,
            },
        );
    }

    /// Says everything this replica holds (the periodic refresh).
    pub(super) fn publish_all_presence(&self) {
        let mut groups: Vec<(String, String)> = self
            .owned
            .lock()
            .unwrap()
            .keys()
            .map(|(account, kind, _)| (account.clone(), kind.clone()))
            .collect();
        groups.sort();
        groups.dedup();
        for (account, kind) in groups {
            self.publish_presence(&account, &kind);
        }
    }
}

/// Listens on the peer's subject until `listening` is cancelled, serving each call.
async fn serve(
    cluster: Weak<Cluster>,
    key: PeerKey,
    epoch: Epoch,
    connection: Arc<Connection>,
    listening: CancellationToken,
) {
    let (account, kind, peer) = &key;
    let subject = subjects::peer(account, kind, peer);
    let Some(client) = cluster.upgrade().map(|c| c.client.clone()) else {
        return;
    };
    let mut calls = match client
        .queue_subscribe(subject.clone(), subjects::OWNERS.to_owned())
        .await
    {
        Ok(calls) => calls,
        Err(error) => {
            tracing::error!(%error, %subject, "cluster: cannot listen for the peer's calls");
            return;
        }
    };
    if let Some(cluster) = cluster.upgrade() {
        cluster.publish(
            subjects::fence(account, kind, peer),
            &ClusterMessage::Takeover {
                account: account.clone(),
                kind: kind.clone(),
                peer: peer.clone(),
                epoch: epoch.epoch,
                node: epoch.node.clone(),
            },
        );
        cluster.publish_presence(account, kind);
    }
    loop {
        let message = tokio::select! {
            () = listening.cancelled() => {
                // Unsubscribed before the presence that no longer lists the peer goes out (one
                // connection keeps the order): a replica that saw it sends no more calls here.
                let _ = calls.unsubscribe().await;
                if let Some(cluster) = cluster.upgrade() {
                    cluster.publish_presence(account, kind);
                }
                return;
            }
            message = calls.next() => match message {
                Some(message) => message,
                None => return,
            },
        };
        let Some(cluster) = cluster.upgrade() else {
            return;
        };
        let Some(reply) = message.reply.clone() else {
            continue;
        };
        let call = ClusterMessage::from_bytes(&message.payload);
        let Some(ClusterMessage::Call {
            account: claimed,
            kind: claimed_kind,
            peer: claimed_peer,
            tool,
            tab_id,
            holder,
            op,
            deadline_ms,
            call_uid,
            from_node,
        }) = call
        else {
            continue;
        };
        // The owner checks isolation itself: a message naming another account (or peer) than
        // the subject it came on is refused, whatever the sender meant.
        let subject_account = subjects::account_of(message.subject.as_str());
        if claimed != *account
            || subject_account.as_deref() != Some(account.as_str())
            || claimed_kind != *kind
            || claimed_peer != *peer
        {
            tracing::warn!(from = %from_node, "cluster: refused a call naming another account or peer");
            let refusal = ClusterMessage::Answer {
                outcome: Box::new(Err(OpError::new(
                    ErrorCode::Forbidden,
                    format!("no {kind} with that ID belongs to this account"),
                ))),
                node: cluster.node.clone(),
            };
            answer(&client, reply.to_string(), &refusal).await;
            continue;
        }
        let token = CancellationToken::new();
        cluster
            .running
            .lock()
            .unwrap()
            .insert(call_uid.clone(), token.clone());
        let connection = connection.clone();
        let client = client.clone();
        let node = cluster.node.clone();
        let weak = Arc::downgrade(&cluster);
        cluster.spawn(async move {
            let reply = reply.to_string();
            let accepted = ClusterMessage::Accepted { node: node.clone() };
            let _ = client
                .publish(reply.clone(), accepted.to_bytes().into())
                .await;
            let run = connection.request_unless(
                &tool,
                tab_id,
                holder.as_ref(),
                *op,
                Duration::from_millis(deadline_ms),
                &token,
            );
            tokio::pin!(run);
            let mut working = tokio::time::interval_at(
                tokio::time::Instant::now() + WORKING_EVERY,
                WORKING_EVERY,
            );
            let outcome = loop {
                tokio::select! {
                    outcome = &mut run => break outcome,
                    _ = working.tick() => {
                        let still = ClusterMessage::Working { node: node.clone() };
                        let _ = client.publish(reply.clone(), still.to_bytes().into()).await;
                    }
                }
            };
            if let Some(cluster) = weak.upgrade() {
                cluster.running.lock().unwrap().remove(&call_uid);
            }
            let outcome = Box::new(outcome);
            answer(&client, reply, &ClusterMessage::Answer { outcome, node }).await;
        });
    }
}

/// Sends an answer on the caller's inbox: whole, or in [`CHUNK_BYTES`] pieces numbered in the
/// [`CHUNK_HEADER`] (NATS keeps one publisher's order, so the caller reassembles in order).
async fn answer(client: &async_nats::Client, reply: String, answer: &ClusterMessage) {
    let bytes = answer.to_bytes();
    if bytes.len() <= CHUNK_BYTES {
        if let Err(error) = client.publish(reply, bytes.into()).await {
            tracing::warn!(%error, "cluster: cannot send an answer");
        }
        return;
    }
    let count = bytes.len().div_ceil(CHUNK_BYTES);
    for (index, piece) in bytes.chunks(CHUNK_BYTES).enumerate() {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(CHUNK_HEADER, format!("{index}/{count}"));
        if let Err(error) = client
            .publish_with_headers(reply.clone(), headers, piece.to_vec().into())
            .await
        {
            tracing::warn!(%error, "cluster: cannot send an answer's piece");
            return;
        }
    }
}
