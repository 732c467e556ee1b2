//! The daemon's side of the method table: one handler per method of
//! [`crate::ipc::protocol::Call`], each returning that method's declared
//! [`Method::Output`], so a handler that returns the wrong type does not
//! compile (as a client calling the method gets that type back). [`dispatch`]
//! matches every method, so a method without a handler does not compile
//! either, and it is the one place where a result becomes JSON.
//!
//! The handlers live in [`run`] (`run.*`), [`steer`] (`run.steer`), [`apply`] (`run.apply`), [`question`] (`question.list`,
//! `question.answer`), [`subscription`] (`subscribe`, `unsubscribe`) and
//! [`daemon`] (`daemon.status`, `daemon.stop`, `notifications.pause`).

pub mod apply;
pub mod daemon;
pub mod question;
pub mod run;
pub mod steer;
pub mod subscription;

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use super::Daemon;
use crate::ipc::protocol::{Call, Method, RpcError};
use crate::model::Event;
use crate::store::{Store, StoreError};

/// What a handler may use: the daemon and the state of the connection the
/// request came on.
pub(crate) struct Session {
    pub daemon: Rc<Daemon>,
    /// This connection's live subscriptions: the task forwarding each
    /// one's events, by subscription id.
    pub subscriptions: HashMap<String, JoinHandle<()>>,
    /// A subscription the request being handled accepted; the connection
    /// starts forwarding its events once the reply is queued, so the reply
    /// comes first.
    pub starting: Option<Starting>,
}

impl Session {
    /// A session of a new connection to `daemon`, without subscriptions.
    #[must_use]
    pub fn new(daemon: Rc<Daemon>) -> Session {
        Session {
            daemon,
            subscriptions: HashMap::new(),
            starting: None,
        }
    }
}

/// A subscription accepted and not yet forwarding: where its events start.
pub(crate) struct Starting {
    pub subscription: String,
    /// The full run id; `None` for every run.
    pub run_id: Option<String>,
    /// Recorded events after this `seq` are sent first (one run only).
    pub after_seq: u64,
    /// Live events, subscribed to before the backlog is read so that
    /// nothing falls between the two.
    pub live: broadcast::Receiver<Event>,
}

/// A method the daemon serves.
pub trait Handler: Method<Output: Send + 'static> {
    /// The result can be large (a list or a page of records): it is encoded
    /// on the blocking pool, like the read that produced it, so no other
    /// client waits while it is.
    const LARGE: bool = false;

    /// Carries the request out: its result, or the error to reply with.
    async fn handle(self, session: &mut Session) -> Result<Self::Output, RpcError>;
}

/// Carries out `call` and encodes its result. Every method is matched
/// here, each through its own [`Handler`].
pub(crate) async fn dispatch(call: Call, session: &mut Session) -> Result<Value, RpcError> {
    match call {
        Call::RunStart(params) => respond(params, session).await,
        Call::RunList(params) => respond(params, session).await,
        Call::RunGet(params) => respond(params, session).await,
        Call::RunArchive(params) => respond(params, session).await,
        Call::RunCancel(params) => respond(params, session).await,
        Call::RunResume(params) => respond(params, session).await,
        Call::RunEvents(params) => respond(params, session).await,
        Call::RunTimeline(params) => respond(params, session).await,
        Call::RunFork(params) => respond(params, session).await,
        Call::RunSteer(params) => respond(params, session).await,
        Call::RunApply(params) => respond(params, session).await,
        Call::Subscribe(params) => respond(params, session).await,
        Call::Unsubscribe(params) => respond(params, session).await,
        Call::QuestionList(params) => respond(params, session).await,
        Call::QuestionAnswer(params) => respond(params, session).await,
        Call::DaemonStatus(params) => respond(params, session).await,
        Call::DaemonStop(params) => respond(params, session).await,
        Call::NotificationsPause(params) => respond(params, session).await,
    }
}

/// Runs the handler of `M` and encodes its result: the one place where a
/// result becomes JSON.
async fn respond<M: Handler>(params: M, session: &mut Session) -> Result<Value, RpcError> {
    let output = params.handle(session).await?;
    if M::LARGE {
        tokio::task::spawn_blocking(move || encode(&output))
            .await
            .map_err(|e| RpcError::internal(format!("encoding the result failed: {e}")))?
    } else {
        encode(&output)
    }
}

fn encode<T: serde::Serialize>(output: &T) -> Result<Value, RpcError> {
    serde_json::to_value(output)
        .map_err(|e| RpcError::internal(format!("cannot encode the result: {e}")))
}

/// Runs `read` on the blocking pool with a read-only connection.
async fn read<T, F>(daemon: &Daemon, read: F) -> Result<T, RpcError>
where
    T: Send + 'static,
    F: FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
{
    daemon.read(read).await.map_err(RpcError::from)
}
