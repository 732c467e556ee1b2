//! One client connection: read requests line by line, answer each, and
//! forward the events of its subscriptions. A bad line gets an error reply
//! and the connection goes on; a client that disconnects affects nothing
//! else (its subscriptions end with it).
//!
//! What a connection may hold is bounded: at most `subscriber_buffer_bytes`
//! of messages (settings.toml, [`super::settings::DEFAULT_SUBSCRIBER_BUFFER_BYTES`]
//! by default) wait to be written. A client that does not read its replies
//! is not read from until it does; a subscription whose live events do not
//! fit is ended with a `lagged` notice, and the client continues it from the
//! database with `after_seq`. A connection holds at most
//! [`super::methods::subscription::MAX_SUBSCRIPTIONS`] subscriptions.
//!
//! Each request is carried out by its method's handler ([`super::methods`]).

use std::cell::Cell;
use std::rc::Rc;

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::{Notify, broadcast, mpsc};

use super::Daemon;
use super::methods::{self, Session, Starting, run::event_page};
use crate::ipc::codec::{self, FrameError, FrameReader, MAX_FRAME_BYTES};
use crate::ipc::protocol::{
    Call, Id, Notification, Outcome, Rejection, Response, RpcError, ServerMessage, Version,
    decode_request,
};

/// Events one backlog read of a subscription holds (at most, and at most
/// [`BACKLOG_PAGE_BYTES`] of them).
const BACKLOG_PAGE_EVENTS: u32 = 256;

/// Bytes of events one backlog read of a subscription holds, about.
const BACKLOG_PAGE_BYTES: usize = 1024 * 1024;

/// The messages waiting to be written to one client, counted in bytes.
struct Outbox {
    lines: mpsc::UnboundedSender<Vec<u8>>,
    /// The most bytes that may wait (one message is always let in).
    budget: usize,
    /// Bytes queued and not yet written.
    queued: Cell<usize>,
    /// Notified whenever the writer has written a message (or given up).
    drained: Notify,
    /// The writer could not write: the client is gone.
    broken: Cell<bool>,
}

impl Outbox {
    /// Queues a reply, however full the queue is (a reply is owed); one
    /// that does not fit in a message becomes an error reply.
    fn reply(&self, response: Response) {
        let id = response.id.clone();
        let line = match encode(&ServerMessage::from(response)) {
            Some(line) => line,
            None => match encode(&ServerMessage::from(Response::failure(
                id,
                RpcError::too_long(MAX_FRAME_BYTES)
                    .with_detail("reply", Value::from("the result is too large to send")),
            ))) {
                Some(line) => line,
                None => return,
            },
        };
        self.push(line);
    }

    /// Whether a message of `len` bytes may be queued now: it fits in the
    /// budget, or nothing is queued (so any message gets through alone).
    fn fits(&self, len: usize) -> bool {
        let queued = self.queued.get();
        queued == 0 || queued + len <= self.budget
    }

    /// Queues `line` (a notification) if it [`Outbox::fits`].
    fn offer(&self, line: Vec<u8>) -> Offered {
        if !self.fits(line.len()) {
            return Offered::Full;
        }
        if self.push(line) {
            Offered::Queued
        } else {
            Offered::Full
        }
    }

    /// Queues `notification` regardless of the budget (a `lagged` notice:
    /// small, and at most one per subscription).
    fn force(&self, notification: Notification) {
        if let Some(line) = encode(&ServerMessage::from(notification)) {
            self.push(line);
        }
    }

    fn push(&self, line: Vec<u8>) -> bool {
        if self.broken.get() {
            return false;
        }
        let len = line.len();
        if self.lines.send(line).is_err() {
            return false;
        }
        self.queued.set(self.queued.get() + len);
        true
    }

    /// Waits until `ready` holds (checked after every write), or the client
    /// is gone.
    async fn wait_until(&self, ready: impl Fn(&Outbox) -> bool) {
        loop {
            let drained = self.drained.notified();
            if ready(self) || self.broken.get() {
                return;
            }
            drained.await;
        }
    }
}

/// What became of an offered notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Offered {
    Queued,
    /// No room (or the client is gone).
    Full,
}

/// `message` as one line with its newline, or `None` when it is over the
/// message limit (or cannot be encoded).
fn encode(message: &ServerMessage) -> Option<Vec<u8>> {
    let mut line = codec::encode(message).ok()?;
    if line.len() > MAX_FRAME_BYTES {
        return None;
    }
    line.push(b'\n');
    Some(line)
}

/// Serves one connection until the client goes away.
pub async fn serve(daemon: Rc<Daemon>, stream: interprocess::local_socket::tokio::Stream) {
    let (read, mut write) = tokio::io::split(stream);
    let mut reader = FrameReader::new(BufReader::new(read));
    let (lines, mut to_write) = mpsc::unbounded_channel::<Vec<u8>>();
    let outbox = Rc::new(Outbox {
        lines,
        budget: daemon.settings.subscriber_buffer_bytes,
        queued: Cell::new(0),
        drained: Notify::new(),
        broken: Cell::new(false),
    });
    // One writer, so replies and notifications never interleave mid-line.
    let writer = tokio::task::spawn_local({
        let outbox = Rc::clone(&outbox);
        async move {
            while let Some(line) = to_write.recv().await {
                let written = async {
                    write.write_all(&line).await?;
                    write.flush().await
                };
                let ok = written.await.is_ok();
                outbox
                    .queued
                    .set(outbox.queued.get().saturating_sub(line.len()));
                if !ok {
                    outbox.broken.set(true);
                    outbox.drained.notify_waiters();
                    break;
                }
                outbox.drained.notify_waiters();
            }
        }
    });
    let mut session = Session::new(daemon);
    loop {
        // A client that does not read its replies is not read from either.
        outbox.wait_until(|o| o.queued.get() <= o.budget).await;
        if outbox.broken.get() {
            break;
        }
        let line = match reader.read_frame().await {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) if e.is_recoverable() => {
                outbox.reply(Response::failure(None, e.to_rpc_error()));
                continue;
            }
            Err(_) => break,
        };
        let (id, call) = match decode(line).await {
            Ok(Ok(decoded)) => decoded,
            Ok(Err(rejection)) => {
                outbox.reply(Response::rejected(rejection));
                continue;
            }
            Err(e) => {
                outbox.reply(Response::failure(None, e.to_rpc_error()));
                continue;
            }
        };
        let outcome = match methods::dispatch(call, &mut session).await {
            Ok(result) => Outcome::Result(result),
            Err(error) => Outcome::Error(error),
        };
        // A request without an id is a notification: no reply (JSON-RPC).
        if id.is_some() {
            outbox.reply(Response {
                jsonrpc: Version,
                id,
                outcome,
            });
        }
        // A subscription starts forwarding only now, so that its reply
        // (queued above) precedes its first event.
        if let Some(starting) = session.starting.take() {
            let subscription = starting.subscription.clone();
            let task =
                tokio::task::spawn_local(forward(session.daemon.clone(), starting, outbox.clone()));
            session.subscriptions.insert(subscription, task);
        }
    }
    for (_, task) in session.subscriptions {
        task.abort();
    }
    // The writer ends once every sender is gone (the forwarders' too).
    drop(outbox);
    let _ = writer.await;
}

/// Requests up to this size are parsed on the event loop; larger ones (up
/// to the 8 MiB message limit: a workflow sent inline, say) on the blocking
/// pool, so parsing them holds up no one.
const PARSE_INLINE_BYTES: usize = 64 * 1024;

/// Parses and types one request line.
async fn decode(line: Vec<u8>) -> Result<Result<(Option<Id>, Call), Rejection>, FrameError> {
    let typed = |line: &[u8]| codec::parse::<Value>(line).map(decode_request);
    if line.len() <= PARSE_INLINE_BYTES {
        return typed(&line);
    }
    tokio::task::spawn_blocking(move || typed(&line))
        .await
        .unwrap_or_else(|e| Err(FrameError::Io(std::io::Error::other(e.to_string()))))
}

/// Sends one subscription's events until it ends: recorded ones first (read
/// off the event loop, a page at a time, waiting while the client catches
/// up), then live ones; a live event that does not fit in the connection's
/// buffer ends the subscription with a `lagged` notice.
async fn forward(daemon: Rc<Daemon>, starting: Starting, outbox: Rc<Outbox>) {
    let Starting {
        subscription,
        run_id,
        after_seq,
        mut live,
    } = starting;
    let mut last = after_seq;
    if let Some(run) = &run_id
        && !catch_up(&daemon, &subscription, run, &mut last, &outbox).await
    {
        return;
    }
    loop {
        match live.recv().await {
            Ok(event) => {
                let wanted = run_id.as_deref().is_none_or(|r| r == event.run_id);
                if !wanted || (run_id.is_some() && event.seq <= last) {
                    continue;
                }
                let seq = event.seq;
                let Some(line) = encode(&ServerMessage::from(Notification::event(
                    &subscription,
                    event,
                ))) else {
                    unsendable(&subscription, seq);
                    continue;
                };
                if outbox.offer(line) == Offered::Full {
                    if !outbox.broken.get() {
                        outbox.force(Notification::lagged(
                            subscription,
                            run_id.is_some().then_some(last),
                        ));
                    }
                    return;
                }
                if run_id.is_some() {
                    last = seq;
                }
            }
            Err(broadcast::error::RecvError::Lagged(_)) => {
                // Too slow for the live buffer: catch up from the database
                // (an all-runs subscription has no order to catch up in).
                match &run_id {
                    Some(run) => {
                        if !catch_up(&daemon, &subscription, run, &mut last, &outbox).await {
                            return;
                        }
                    }
                    None => {
                        outbox.force(Notification::lagged(subscription, None));
                        return;
                    }
                }
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Sends the recorded events of `run` after `last`, a page at a time,
/// waiting for room in the connection's buffer; false when the client is
/// gone.
async fn catch_up(
    daemon: &Daemon,
    subscription: &str,
    run: &str,
    last: &mut u64,
    outbox: &Outbox,
) -> bool {
    loop {
        let (run_id, after) = (run.to_string(), *last);
        let page = daemon
            .read(move |store| {
                event_page(
                    store,
                    &run_id,
                    after,
                    BACKLOG_PAGE_EVENTS,
                    BACKLOG_PAGE_BYTES,
                )
            })
            .await;
        let Ok(page) = page else {
            return !outbox.broken.get();
        };
        if page.is_empty() {
            return !outbox.broken.get();
        }
        for event in page {
            let seq = event.seq;
            *last = seq;
            let Some(line) = encode(&ServerMessage::from(Notification::event(
                subscription,
                event,
            ))) else {
                unsendable(subscription, seq);
                continue;
            };
            // Recorded events wait for room: the client catches up at its
            // own pace, holding at most this page here.
            let len = line.len();
            outbox.wait_until(|o| o.fits(len)).await;
            if outbox.offer(line) != Offered::Queued {
                return false;
            }
        }
    }
}

/// Logs an event too large for a message: it is skipped, so the
/// subscription goes on (it could never be sent, and retrying would stall
/// the subscription for good).
fn unsendable(subscription: &str, seq: u64) {
    eprintln!(
        "weftd: event {seq} of subscription {subscription} exceeds the {MAX_FRAME_BYTES}-byte \
         message limit and was not sent"
    );
}
