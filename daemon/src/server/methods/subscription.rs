//! `subscribe` and `unsubscribe`. A subscription belongs to its
//! connection: the connection forwards its events (recorded ones first,
//! then live ones) once the `subscribe` reply is queued.

use super::{Handler, Session, Starting};
use crate::ipc::protocol::{RpcError, Subscribe, Subscribed, Unsubscribe, Unsubscribed};
use crate::model::Code;

/// The most subscriptions one connection may hold at once.
pub(crate) const MAX_SUBSCRIPTIONS: usize = 64;

impl Handler for Subscribe {
    async fn handle(self, session: &mut Session) -> Result<Subscribed, RpcError> {
        // A subscription that ended by itself (`lagged`) frees its id and slot.
        session.subscriptions.retain(|_, task| !task.is_finished());
        if session.subscriptions.contains_key(&self.subscription) {
            return Err(RpcError::new(
                Code::SubscriptionExists,
                format!(
                    "subscription {} exists on this connection",
                    self.subscription
                ),
            ));
        }
        if session.subscriptions.len() >= MAX_SUBSCRIPTIONS {
            return Err(RpcError::new(
                Code::SubscriptionLimit,
                format!(
                    "this connection already has {MAX_SUBSCRIPTIONS} subscriptions, the most one \
                     may hold; unsubscribe first"
                ),
            ));
        }
        let run_id = match &self.run {
            Some(prefix) => Some(session.daemon.store().find_run(prefix)?.id),
            None => None,
        };
        // Subscribe to live events before reading the backlog, so nothing
        // falls between the two; duplicates are dropped by sequence number.
        let live = session.daemon.hub.subscribe();
        session.starting = Some(Starting {
            subscription: self.subscription.clone(),
            run_id: run_id.clone(),
            after_seq: self.after_seq,
            live,
        });
        Ok(Subscribed {
            subscription: self.subscription,
            run_id,
        })
    }
}

impl Handler for Unsubscribe {
    async fn handle(self, session: &mut Session) -> Result<Unsubscribed, RpcError> {
        let existed = session
            .subscriptions
            .remove(&self.subscription)
            .is_some_and(|task| {
                let live = !task.is_finished();
                task.abort();
                live
            });
        Ok(Unsubscribed { existed })
    }
}
