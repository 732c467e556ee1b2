//! The client side of the protocol, used by the CLI and the desktop app.
//!
//! One [`Client`] is one connection. Calls may run concurrently (`&self`):
//! each gets the next numeric id and its reply is matched by id, whatever
//! order the daemon answers in. Event notifications are routed to the
//! [`Subscription`] whose id they carry, including those that arrive before
//! the `subscribe` reply, so nothing is missed; a subscription that falls
//! behind (a `lagged` notice from the daemon, or a consumer slower than
//! [`SUBSCRIPTION_BUFFER`] events) is continued from its last event.
//!
//! Two small tasks (spawned on the current tokio runtime; a current-thread
//! runtime is fine) own the socket: a reader that dispatches replies and
//! events, and a writer that sends whole lines, so dropping a call future
//! never leaves half a request on the wire.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader, ReadHalf, WriteHalf};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::JoinHandle;

use super::codec::{self, FrameError, FrameReader, MAX_FRAME_BYTES};
use super::paths::DaemonPaths;
use super::protocol::{
    Id, Method, NotificationBody, Outcome, Request, RpcError, ServerMessage, Subscribe, Subscribed,
    Unsubscribe, Unsubscribed, Version,
};
use super::socket;
use crate::model::{Code, Event};
use crate::store::Home;
use crate::util::lock::lock;

type Stream = interprocess::local_socket::tokio::Stream;

/// Why a call to the daemon failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No daemon listens on the home's socket (no socket file, or a stale
    /// one that refuses connections).
    #[error(
        "the Weft daemon is not running (nothing listens on {}); start it with `weft daemon start`",
        socket.display()
    )]
    DaemonNotRunning { socket: PathBuf },
    /// The socket exists but could not be connected to (permissions, ...).
    #[error("cannot connect to the Weft daemon at {}: {source}", socket.display())]
    Connect {
        socket: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The daemon answered with an error.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// The daemon sent something that is not the protocol; the connection
    /// is closed. Usually a daemon of a different version.
    #[error(
        "the Weft daemon broke the protocol: {0}; is it a different version? (`weft daemon status`)"
    )]
    Protocol(String),
    /// The request could not be sent (too large, or not serialisable).
    #[error("cannot send the request: {0}")]
    Request(#[source] FrameError),
    /// The connection closed before the reply arrived (the daemon stopped
    /// or crashed).
    #[error("the connection to the Weft daemon closed before it answered")]
    Disconnected,
}

impl ClientError {
    /// A stable, machine-readable code (a [`Code`]'s text); for
    /// [`ClientError::Rpc`], the daemon's code (`run.not_found`, ...), as
    /// sent (a newer daemon may send one this build does not know).
    #[must_use]
    pub fn code(&self) -> &str {
        match self {
            ClientError::DaemonNotRunning { .. } => Code::DaemonNotRunning.as_str(),
            ClientError::Connect { .. } => Code::DaemonConnect.as_str(),
            ClientError::Rpc(e) => e.data_code(),
            ClientError::Protocol(_) => Code::IpcProtocol.as_str(),
            ClientError::Request(_) => Code::IpcRequest.as_str(),
            ClientError::Disconnected => Code::IpcDisconnected.as_str(),
        }
    }

    /// Whether [`ClientError::code`] is `code`: how callers branch on a
    /// failure.
    #[must_use]
    pub fn is(&self, code: Code) -> bool {
        self.code() == code.as_str()
    }
}

/// Why a pending call ended without a result; cloneable, unlike
/// [`ClientError`], so one failure can end every pending call.
#[derive(Debug, Clone)]
enum Failure {
    Rpc(RpcError),
    Disconnected,
    Protocol(String),
}

impl From<Failure> for ClientError {
    fn from(f: Failure) -> ClientError {
        match f {
            Failure::Rpc(e) => ClientError::Rpc(e),
            Failure::Disconnected => ClientError::Disconnected,
            Failure::Protocol(why) => ClientError::Protocol(why),
        }
    }
}

/// Events one subscription holds for its consumer before it falls behind:
/// then further events are dropped, the daemon is told to stop sending, and
/// once the consumer has read what is held the client subscribes again
/// from the last event it kept (see [`Subscription::next`]).
pub(crate) const SUBSCRIPTION_BUFFER: usize = 1024;

/// Who waits for the reply to a request.
enum Pending {
    /// A caller of [`Client::call_value`].
    Call(oneshot::Sender<Result<Value, Failure>>),
    /// The client's own `subscribe` that continues subscription `.0` after
    /// it fell behind.
    Resubscribe(String),
    /// The client's own `unsubscribe` of a subscription that fell behind:
    /// the reply changes nothing.
    Ignore,
}

/// Where one subscription stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// Events go to the queue.
    Live,
    /// Fell behind (the queue overflowed, or the daemon sent `lagged`):
    /// events are dropped until the consumer has emptied the queue and the
    /// client subscribes again.
    Behind,
    /// The client subscribed again with this request id; for one run, the
    /// event right after the last one kept (or the reply) makes it live.
    Resubscribing(u64),
    /// Unsubscribed, refused, or the connection closed: what is queued is
    /// still read, then the stream ends.
    Ended,
}

/// One subscription's side of the connection: the reader fills the queue,
/// [`Subscription::next`] drains it.
struct Route {
    /// The run subscribed to (as the daemon resolved it), `None` for all.
    run: Option<String>,
    queue: VecDeque<Event>,
    /// The seq of the last event queued (for one run): where a new
    /// subscription continues.
    last_seq: u64,
    flow: Flow,
    /// Woken when something is queued or the flow changes.
    wake: Arc<Notify>,
}

/// What the reader task and the callers share.
#[derive(Default)]
struct Shared {
    /// Requests waiting for their reply, by request id.
    pending: HashMap<u64, Pending>,
    /// Live subscriptions, by the id the client chose.
    subscriptions: HashMap<String, Route>,
    /// Set once the connection is over; later calls fail with it at once.
    closed: Option<Failure>,
}

impl Shared {
    /// Ends the connection: fails every pending call with `why` and ends
    /// every subscription stream (after what it has queued).
    fn close(&mut self, why: Failure) {
        if self.closed.is_none() {
            self.closed = Some(why.clone());
        }
        for (_, waiting) in self.pending.drain() {
            if let Pending::Call(reply) = waiting {
                let _ = reply.send(Err(why.clone()));
            }
        }
        for route in self.subscriptions.values_mut() {
            route.flow = Flow::Ended;
            route.wake.notify_one();
        }
    }
}

impl Drop for Shared {
    /// The client is gone: every subscription waiting for an event wakes
    /// up to find it has ended.
    fn drop(&mut self) {
        for route in self.subscriptions.values() {
            route.wake.notify_one();
        }
    }
}

/// The connection itself, shared by the client, its reader task and its
/// subscriptions.
struct Connection {
    shared: Mutex<Shared>,
    /// Whole lines (with `\n`) for the writer task.
    outgoing: mpsc::UnboundedSender<Vec<u8>>,
    next_id: AtomicU64,
}

impl Connection {
    /// Queues request `method(params)` under a fresh id, registering
    /// `waiting` for its reply first. The id, or why nothing was sent.
    fn send(&self, method: &str, params: Value, waiting: Pending) -> Result<u64, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = Request {
            jsonrpc: Version,
            id: Some(Id::from(id)),
            method: method.to_string(),
            params: Some(params),
        };
        let mut line = codec::encode(&request).map_err(ClientError::Request)?;
        if line.len() > MAX_FRAME_BYTES {
            return Err(ClientError::Request(FrameError::TooLong {
                limit: MAX_FRAME_BYTES,
            }));
        }
        line.push(b'\n');
        {
            let mut shared = lock(&self.shared);
            if let Some(why) = &shared.closed {
                return Err(why.clone().into());
            }
            shared.pending.insert(id, waiting);
        }
        if self.outgoing.send(line).is_err() {
            lock(&self.shared).pending.remove(&id);
            return Err(ClientError::Disconnected);
        }
        Ok(id)
    }

    /// Sends a request whose reply the client handles itself.
    fn send_own<M: Method>(&self, params: &M, waiting: Pending) -> Option<u64> {
        let params = serde_json::to_value(params).ok()?;
        self.send(M::NAME, params, waiting).ok()
    }
}

/// A connection to `weftd`.
pub struct Client {
    socket: PathBuf,
    connection: Arc<Connection>,
    reader: JoinHandle<()>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("socket", &self.socket)
            .finish_non_exhaustive()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // The writer ends by itself once the connection is gone, after
        // sending what is queued; the reader would wait for the daemon
        // forever.
        self.reader.abort();
    }
}

impl Client {
    /// Connects to the daemon of `home` (socket from [`DaemonPaths`]).
    /// Must be called within a tokio runtime.
    ///
    /// Errors: [`ClientError::DaemonNotRunning`] when no daemon listens
    /// (the caller may start one and retry), [`ClientError::Connect`]
    /// otherwise.
    pub async fn connect(home: &Home) -> Result<Client, ClientError> {
        Client::connect_to(&DaemonPaths::for_home(home).socket).await
    }

    /// Connects to the daemon listening on `socket`.
    pub(crate) async fn connect_to(socket: &Path) -> Result<Client, ClientError> {
        let stream = socket::connect(socket)
            .await
            .map_err(|source| match source.kind() {
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused => {
                    ClientError::DaemonNotRunning {
                        socket: socket.to_path_buf(),
                    }
                }
                _ => ClientError::Connect {
                    socket: socket.to_path_buf(),
                    source,
                },
            })?;
        let (read, write) = tokio::io::split(stream);
        let (outgoing, lines) = mpsc::unbounded_channel();
        let connection = Arc::new(Connection {
            shared: Mutex::new(Shared::default()),
            outgoing,
            next_id: AtomicU64::new(1),
        });
        let reader = tokio::spawn(read_loop(
            FrameReader::new(BufReader::new(read)),
            Arc::clone(&connection),
        ));
        tokio::spawn(write_loop(write, lines, Arc::downgrade(&connection)));
        Ok(Client {
            socket: socket.to_path_buf(),
            connection,
            reader,
        })
    }

    /// The socket this client is connected to.
    #[must_use]
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// True once the connection has ended; every call then fails.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        lock(&self.connection.shared).closed.is_some()
    }

    /// Calls method `M` and waits for its typed result.
    ///
    /// Errors: [`ClientError::Rpc`] when the daemon answers with an error;
    /// [`ClientError::Disconnected`] or [`ClientError::Protocol`] when the
    /// connection ends first; [`ClientError::Request`] when the request is
    /// over the size limit.
    pub async fn call<M: Method>(&self, params: M) -> Result<M::Output, ClientError> {
        let params = serde_json::to_value(&params)
            .map_err(|e| ClientError::Request(FrameError::Encode(e)))?;
        let result = self.call_value(M::NAME, Some(params)).await?;
        serde_json::from_value(result).map_err(|e| {
            ClientError::Protocol(format!(
                "the reply to `{}` does not have the expected shape: {e}",
                M::NAME
            ))
        })
    }

    /// Calls `method` with untyped params and returns the untyped result:
    /// for passing requests through (the desktop shell) and for tests.
    pub(crate) async fn call_value(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, ClientError> {
        let (reply, replied) = oneshot::channel();
        let params = params.unwrap_or(Value::Null);
        let id = self.connection.send(method, params, Pending::Call(reply))?;
        // Forget the call if this future is dropped before the reply.
        let _pending = PendingGuard {
            shared: &self.connection.shared,
            id,
        };
        match replied.await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(failure)) => Err(failure.into()),
            Err(_) => Err(ClientError::Disconnected),
        }
    }

    /// Subscribes to the events of run `run` (an id or unique prefix) after
    /// `after_seq`, or with `run: None` to new events of every run, under
    /// the client-chosen id `subscription`.
    ///
    /// Events sent before the daemon's reply are kept, so subscribing with
    /// `after_seq: 0` right after `run.start` sees every event of the run.
    /// Errors: the daemon's (`run.not_found`, `subscription.exists`, ...);
    /// `subscription.exists` also when this client already has a live
    /// subscription of that id.
    pub async fn subscribe(
        &self,
        subscription: impl Into<String>,
        run: Option<String>,
        after_seq: u64,
    ) -> Result<Subscription, ClientError> {
        let id = subscription.into();
        let wake = Arc::new(Notify::new());
        {
            let mut shared = lock(&self.connection.shared);
            if let Some(why) = &shared.closed {
                return Err(why.clone().into());
            }
            if shared.subscriptions.contains_key(&id) {
                return Err(ClientError::Rpc(RpcError::new(
                    Code::SubscriptionExists,
                    format!("subscription `{id}` is already active on this connection"),
                )));
            }
            // Registered before the request goes out: events may overtake
            // the reply.
            shared.subscriptions.insert(
                id.clone(),
                Route {
                    run: run.clone(),
                    queue: VecDeque::new(),
                    last_seq: after_seq,
                    flow: Flow::Live,
                    wake: Arc::clone(&wake),
                },
            );
        }
        let subscribed: Result<Subscribed, ClientError> = self
            .call(Subscribe {
                subscription: id.clone(),
                run,
                after_seq,
            })
            .await;
        match subscribed {
            Ok(subscribed) => {
                // A later subscription continues the resolved run, not a
                // prefix that may have become ambiguous since.
                if let Some(route) = lock(&self.connection.shared).subscriptions.get_mut(&id) {
                    route.run.clone_from(&subscribed.run_id);
                }
                Ok(Subscription {
                    id,
                    run_id: subscribed.run_id,
                    wake,
                    connection: Arc::downgrade(&self.connection),
                })
            }
            Err(e) => {
                lock(&self.connection.shared).subscriptions.remove(&id);
                Err(e)
            }
        }
    }

    /// Ends subscription `subscription`: the daemon sends no event for it
    /// after its reply, and its [`Subscription`] stream then ends.
    pub async fn unsubscribe(&self, subscription: &str) -> Result<Unsubscribed, ClientError> {
        let result = self
            .call(Unsubscribe {
                subscription: subscription.to_string(),
            })
            .await;
        if let Some(route) = lock(&self.connection.shared)
            .subscriptions
            .remove(subscription)
        {
            route.wake.notify_one();
        }
        result
    }
}

/// Removes a pending call's entry when its future ends, however it ends.
struct PendingGuard<'a> {
    shared: &'a Mutex<Shared>,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        lock(self.shared).pending.remove(&self.id);
    }
}

/// The events of one subscription, in the order the daemon sent them.
///
/// [`Subscription::next`] returns `None` once the subscription ends
/// (unsubscribed, or the connection closed). At most
/// [`SUBSCRIPTION_BUFFER`] events wait for the consumer; a consumer (or a
/// connection) that falls further behind is caught up transparently: the
/// client subscribes again after the last event it kept, so a one-run
/// subscription still delivers every event once, in order, without a gap.
/// (An all-runs subscription goes on with new events: the ones it missed
/// are not replayed.) Dropping a subscription discards its further events
/// locally; call [`Client::unsubscribe`] to stop the daemon sending them.
pub struct Subscription {
    id: String,
    run_id: Option<String>,
    wake: Arc<Notify>,
    connection: Weak<Connection>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

impl Subscription {
    /// The id chosen when subscribing.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The full id of the subscribed run; `None` for all runs.
    #[must_use]
    pub fn run_id(&self) -> Option<&str> {
        self.run_id.as_deref()
    }

    /// The next event, or `None` when the subscription has ended.
    pub async fn next(&mut self) -> Option<Event> {
        loop {
            // Registered before looking, so a wake-up in between is kept.
            let woken = self.wake.notified();
            {
                let connection = self.connection.upgrade()?;
                let mut shared = lock(&connection.shared);
                let route = shared
                    .subscriptions
                    .get_mut(&self.id)
                    .filter(|route| Arc::ptr_eq(&route.wake, &self.wake))?;
                if let Some(event) = route.queue.pop_front() {
                    return Some(event);
                }
                match route.flow {
                    Flow::Ended => return None,
                    // Everything kept has been read: continue after it.
                    Flow::Behind => {
                        let again = Subscribe {
                            subscription: self.id.clone(),
                            run: route.run.clone(),
                            after_seq: route.last_seq,
                        };
                        drop(shared);
                        let sent =
                            connection.send_own(&again, Pending::Resubscribe(self.id.clone()));
                        let mut shared = lock(&connection.shared);
                        let route = shared.subscriptions.get_mut(&self.id)?;
                        route.flow = match sent {
                            Some(request) if route.flow == Flow::Behind => {
                                Flow::Resubscribing(request)
                            }
                            Some(_) => route.flow,
                            None => Flow::Ended,
                        };
                        continue;
                    }
                    Flow::Live | Flow::Resubscribing(_) => {}
                }
            }
            woken.await;
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.upgrade() {
            let mut shared = lock(&connection.shared);
            // Only this subscription's route: after an unsubscribe the id
            // may name a newer subscription.
            if shared
                .subscriptions
                .get(&self.id)
                .is_some_and(|route| Arc::ptr_eq(&route.wake, &self.wake))
            {
                shared.subscriptions.remove(&self.id);
            }
        }
    }
}

/// Reads the daemon's messages until the connection ends, completing calls
/// and routing events; then fails what is still pending.
async fn read_loop(
    mut reader: FrameReader<BufReader<ReadHalf<Stream>>>,
    connection: Arc<Connection>,
) {
    let why = loop {
        let value = match reader.read::<Value>().await {
            Ok(Some(value)) => value,
            Ok(None) | Err(FrameError::Truncated { .. } | FrameError::Io(_)) => {
                break Failure::Disconnected;
            }
            // A line we cannot read may have been a reply: some call would
            // wait forever, so the connection is over.
            Err(e) => break Failure::Protocol(e.to_string()),
        };
        if let Err(why) = dispatch(value, &connection) {
            break why;
        }
    };
    lock(&connection.shared).close(why);
}

/// Hands one message from the daemon to its call or subscription.
fn dispatch(value: Value, connection: &Connection) -> Result<(), Failure> {
    let is_notification = value.get("method").is_some();
    match ServerMessage::from_value(value) {
        Ok(ServerMessage::Response(response)) => {
            let id = match &response.id {
                // An error without id answers a line the daemon could not
                // read: one of our calls will never get its reply.
                None | Some(Id::Null) => {
                    let why = match response.outcome {
                        Outcome::Error(e) => e.message,
                        Outcome::Result(_) => "a reply without id".to_string(),
                    };
                    return Err(Failure::Protocol(format!(
                        "the daemon could not read a request: {why}"
                    )));
                }
                Some(id) => match id.as_u64() {
                    Some(id) => id,
                    // This client only sends whole-number ids.
                    None => return Ok(()),
                },
            };
            let reply = match response.outcome {
                Outcome::Result(value) => Ok(value),
                Outcome::Error(e) => Err(Failure::Rpc(e)),
            };
            let mut shared = lock(&connection.shared);
            // No entry: the caller stopped waiting. Nothing to do.
            match shared.pending.remove(&id) {
                Some(Pending::Call(waiting)) => {
                    let _ = waiting.send(reply);
                }
                Some(Pending::Resubscribe(subscription)) => {
                    if let Some(route) = shared.subscriptions.get_mut(&subscription) {
                        route.flow = match (reply, route.flow) {
                            (Ok(_), Flow::Resubscribing(request)) if request == id => Flow::Live,
                            (Ok(_), flow) => flow,
                            (Err(_), _) => Flow::Ended,
                        };
                        route.wake.notify_one();
                    }
                }
                Some(Pending::Ignore) | None => {}
            }
            Ok(())
        }
        Ok(ServerMessage::Notification(notification)) => {
            match notification.body {
                NotificationBody::Event(n) => {
                    let mut shared = lock(&connection.shared);
                    let Some(route) = shared.subscriptions.get_mut(&n.subscription) else {
                        return Ok(());
                    };
                    if route.queue.len() >= SUBSCRIPTION_BUFFER && route.flow == Flow::Live {
                        // The consumer is too slow: stop the daemon sending,
                        // and continue once what is queued has been read.
                        route.flow = Flow::Behind;
                        drop(shared);
                        let _ = connection.send_own(
                            &Unsubscribe {
                                subscription: n.subscription,
                            },
                            Pending::Ignore,
                        );
                        return Ok(());
                    }
                    route.accept(n.event);
                }
                NotificationBody::Lagged(n) => {
                    // The daemon ended the subscription: continue it once
                    // what is queued has been read.
                    if let Some(route) = lock(&connection.shared)
                        .subscriptions
                        .get_mut(&n.subscription)
                        && matches!(route.flow, Flow::Live | Flow::Resubscribing(_))
                    {
                        route.flow = Flow::Behind;
                        route.wake.notify_one();
                    }
                }
            }
            Ok(())
        }
        // A notification this client does not know (a newer daemon) is
        // skipped; an unreadable reply is fatal (see `read_loop`).
        Err(_) if is_notification => Ok(()),
        Err(e) => Err(Failure::Protocol(format!("unreadable reply: {e}"))),
    }
}

impl Route {
    /// Queues `event` if the subscription is live, skipping what it has
    /// already queued; while it is being continued, the event right after
    /// the last one queued makes it live again.
    fn accept(&mut self, event: Event) {
        let one_run = self.run.is_some();
        match self.flow {
            Flow::Live => {}
            Flow::Resubscribing(_) if one_run && event.seq == self.last_seq + 1 => {
                self.flow = Flow::Live;
            }
            Flow::Resubscribing(_) | Flow::Behind | Flow::Ended => return,
        }
        if one_run {
            if event.seq <= self.last_seq {
                return;
            }
            self.last_seq = event.seq;
        }
        self.queue.push_back(event);
        self.wake.notify_one();
    }
}

/// Sends queued lines until the client is dropped or the socket fails.
async fn write_loop(
    mut write: WriteHalf<Stream>,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
    connection: Weak<Connection>,
) {
    while let Some(line) = lines.recv().await {
        let sent = async {
            write.write_all(&line).await?;
            write.flush().await
        };
        if sent.await.is_err() {
            if let Some(connection) = connection.upgrade() {
                lock(&connection.shared).close(Failure::Disconnected);
            }
            return;
        }
    }
    let _ = write.shutdown().await;
}

#[cfg(test)]
mod tests;
