//! Cancellation shared by a run and everything it started.

use std::sync::Arc;

use tokio::sync::watch;

/// Why a run is being stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelReason {
    /// Ctrl-C, SIGTERM, or a cancel request.
    User(String),
    /// The stall watchdog saw no activity for this many seconds.
    Stalled(u64),
    /// The daemon is shutting down: the run is interrupted, to be resumed
    /// when the daemon starts again.
    Shutdown(String),
}

impl std::fmt::Display for CancelReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CancelReason::User(why) => f.write_str(why),
            CancelReason::Stalled(secs) => write!(f, "stalled: no activity for {secs}s"),
            CancelReason::Shutdown(why) => f.write_str(why),
        }
    }
}

/// A cancellation handle: cheap to clone; the first reason given wins. A
/// [`Cancel::child`] is cancelled with its parent, or on its own (a parallel
/// branch that lost a `first_success` race).
#[derive(Debug, Clone)]
pub struct Cancel {
    tx: Arc<watch::Sender<Option<CancelReason>>>,
    parent: Option<Box<Cancel>>,
}

impl Default for Cancel {
    fn default() -> Self {
        Cancel::new()
    }
}

impl Cancel {
    #[must_use]
    pub fn new() -> Cancel {
        let (tx, _) = watch::channel(None);
        Cancel {
            tx: Arc::new(tx),
            parent: None,
        }
    }

    /// A handle cancelled when this one is, and cancellable alone.
    #[must_use]
    pub fn child(&self) -> Cancel {
        Cancel {
            parent: Some(Box::new(self.clone())),
            ..Cancel::new()
        }
    }

    /// Requests cancellation; later requests keep the first reason.
    pub fn cancel(&self, reason: CancelReason) {
        self.tx.send_if_modified(|slot| {
            if slot.is_none() {
                *slot = Some(reason);
                true
            } else {
                false
            }
        });
    }

    /// The reason, once cancelled (its own, else its parent's).
    #[must_use]
    pub fn reason(&self) -> Option<CancelReason> {
        self.tx
            .borrow()
            .clone()
            .or_else(|| self.parent.as_ref().and_then(|p| p.reason()))
    }

    /// Waits until cancelled (itself or through its parent) and returns the reason.
    pub async fn cancelled(&self) -> CancelReason {
        match &self.parent {
            None => self.own().await,
            Some(parent) => {
                let parent = Box::pin(parent.cancelled());
                tokio::select! {
                    reason = self.own() => reason,
                    reason = parent => reason,
                }
            }
        }
    }

    async fn own(&self) -> CancelReason {
        let mut rx = self.tx.subscribe();
        loop {
            if let Some(reason) = rx.borrow_and_update().clone() {
                return reason;
            }
            if rx.changed().await.is_err() {
                // The sender lives as long as any handle, including this one.
                std::future::pending::<()>().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_child_is_cancelled_with_its_parent_but_not_the_other_way() {
        let parent = Cancel::new();
        let child = parent.child();
        child.cancel(CancelReason::User("lost the race".into()));
        assert_eq!(parent.reason(), None);
        let other = parent.child();
        parent.cancel(CancelReason::User("ctrl-c".into()));
        assert_eq!(other.cancelled().await, CancelReason::User("ctrl-c".into()));
        assert_eq!(
            child.reason(),
            Some(CancelReason::User("lost the race".into()))
        );
    }

    #[tokio::test]
    async fn the_first_reason_wins_and_waiters_wake() {
        let cancel = Cancel::new();
        let waiter = tokio::spawn({
            let cancel = cancel.clone();
            async move { cancel.cancelled().await }
        });
        cancel.cancel(CancelReason::User("ctrl-c".into()));
        cancel.cancel(CancelReason::Stalled(5));
        assert_eq!(waiter.await.ok(), Some(CancelReason::User("ctrl-c".into())));
        assert_eq!(cancel.reason(), Some(CancelReason::User("ctrl-c".into())));
    }
}
