//! ACP sessions kept alive between stages of one run that share a
//! `thread_id` at full fidelity: the next stage of the thread prompts the
//! same agent process in the same session, so it remembers the work so far
//! (as Weft's own agents continue a thread's conversation).
//!
//! In memory only, like the API backend's threads: a resumed run starts
//! the thread's agent afresh. The run stops every kept agent when it ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;

use crate::agent::acp::AcpAgent;
use crate::util::lock::lock;

/// How long a kept agent gets to exit once its stdin closes.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// The run's kept ACP sessions, by thread. Cheap to clone (shared by the
/// run's parallel branches).
#[derive(Clone, Default)]
pub(crate) struct AcpThreads {
    kept: Arc<Mutex<HashMap<String, AcpAgent>>>,
}

impl AcpThreads {
    /// The session of `thread`, taken out while a stage uses it: a
    /// parallel branch of the same thread meanwhile starts its own.
    pub fn take(&self, thread: &str) -> Option<AcpAgent> {
        lock(&self.kept).remove(thread)
    }

    /// Keeps `session` for the next stage of `thread`, stopping one kept
    /// there meanwhile (a parallel branch's).
    pub async fn keep(&self, thread: &str, session: AcpAgent) {
        let replaced = lock(&self.kept).insert(thread.to_string(), session);
        if let Some(old) = replaced {
            old.stop(STOP_GRACE).await;
        }
    }

    /// Stops every kept agent: the run is over. Boxed, so the run's own
    /// future (nested once per sub-workflow level) stays small.
    pub fn stop_all(&self) -> BoxFuture<'static, ()> {
        let kept: Vec<AcpAgent> = lock(&self.kept).drain().map(|(_, s)| s).collect();
        Box::pin(async move {
            futures_util::future::join_all(kept.into_iter().map(|s| s.stop(STOP_GRACE))).await;
        })
    }
}
