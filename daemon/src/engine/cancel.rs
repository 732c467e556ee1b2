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
}

impl std::fmt::Display for CancelReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CancelReason::User(why) => f.write_str(why),
            CancelReason::Stalled(secs) => write!(f, "stalled: no activity for {secs}s"),
        }
    }
}

/// A cancellation handle: cheap to clone; the first reason given wins.
#[derive(Debug, Clone)]
pub struct Cancel {
    tx: Arc<watch::Sender<Option<CancelReason>>>,
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
        Cancel { tx: Arc::new(tx) }
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

    /// The reason, once cancelled.
    #[must_use]
    pub fn reason(&self) -> Option<CancelReason> {
        self.tx.borrow().clone()
    }

    /// Waits until cancelled and returns the reason.
    pub async fn cancelled(&self) -> CancelReason {
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
