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
//! [`MAX_SUBSCRIPTIONS`] subscriptions.

use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::{Notify, broadcast, mpsc};
use tokio::task::JoinHandle;

use super::Daemon;
use super::gates::{self, AnswerError};
use crate::ipc::codec::{self, FrameError, FrameReader, MAX_FRAME_BYTES};
use crate::ipc::protocol::{
    Call, CancelRequested, DaemonInfo, DaemonStopping, EVENTS_PAGE_BYTES, EventPage, Id,
    Notification, Outcome, PROTOCOL_VERSION, QuestionAnswer, Rejection, Response, RpcError,
    RunDetail, RunStarted, ServerMessage, Subscribed, Unsubscribed, Version, code, decode_request,
};
use crate::model::Event;
use crate::model::{RunStatus, RunSummary};
use crate::store::EVENTS_PAGE_MAX;
use crate::store::{QuestionRecord, QuestionStatus, Store, StoreError};

/// The most subscriptions one connection may hold at once.
pub const MAX_SUBSCRIPTIONS: usize = 64;

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
    let mut subscriptions: HashMap<String, JoinHandle<()>> = HashMap::new();
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
        // A request without an id is a notification: no reply (JSON-RPC).
        let wants_reply = id.is_some();
        let response = match call {
            Call::Subscribe(params) => {
                // Replies itself: the reply must precede the first event.
                subscribe(&daemon, id, params, &outbox, &mut subscriptions);
                continue;
            }
            Call::Unsubscribe(params) => {
                let existed = subscriptions
                    .remove(&params.subscription)
                    .is_some_and(|task| {
                        let live = !task.is_finished();
                        task.abort();
                        live
                    });
                Response::success(id, &Unsubscribed { existed })
            }
            Call::DaemonStop(_) => {
                let (running, _) = daemon.load();
                let reply = DaemonStopping {
                    pid: std::process::id(),
                    runs_interrupted: running,
                };
                daemon.stop_requested.notify_one();
                Response::success(id, &reply)
            }
            other => match dispatch(&daemon, other).await {
                // Already JSON (built off the loop for large results): not
                // copied again.
                Ok(result) => Response {
                    jsonrpc: Version,
                    id,
                    outcome: Outcome::Result(result),
                },
                Err(error) => Response::failure(id, error),
            },
        };
        if wants_reply {
            outbox.reply(response);
        }
    }
    for (_, task) in subscriptions {
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

fn from_answer_error(e: &AnswerError) -> RpcError {
    match e {
        AnswerError::NotWaiting(_) => RpcError::new(code::INVALID_STATE, e.code(), e.to_string()),
        AnswerError::NoSuchOption { .. } => {
            RpcError::new(code::INVALID_PARAMS, e.code(), e.to_string())
        }
    }
}

/// Runs `read` on a blocking thread with a read-only connection.
async fn read<T, F>(daemon: &Daemon, read: F) -> Result<T, RpcError>
where
    T: Send + 'static,
    F: FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
{
    daemon.read(read).await.map_err(RpcError::from)
}

/// Every method but the subscription and stop ones.
async fn dispatch(daemon: &Rc<Daemon>, call: Call) -> Result<Value, RpcError> {
    let value = |v: serde_json::Result<Value>| v.map_err(|e| RpcError::internal(e.to_string()));
    match call {
        Call::RunStart(params) => {
            if daemon.is_stopping() {
                return Err(RpcError::shutting_down());
            }
            let auto = params.auto_approve;
            let prepared = daemon.prepare(params).await?;
            if daemon.is_stopping() {
                // Recorded as queued: the next start resumes it.
                return Err(RpcError::shutting_down());
            }
            let started = RunStarted {
                run_id: prepared.run_id.clone(),
                run_dir: prepared.run_dir.clone(),
                status: RunStatus::Queued,
            };
            daemon.enqueue_start(prepared, auto);
            value(serde_json::to_value(started))
        }
        Call::RunResume(params) => {
            if daemon.is_stopping() {
                return Err(RpcError::shutting_down());
            }
            let record = daemon.store().find_run(&params.run)?;
            // The engine decides, at once and leaving the run as it was,
            // rather than the job failing later. A run that ended is
            // refused even while this daemon is still finishing it.
            let verdict = crate::engine::launch::resumable(&record);
            if let Err(ended @ crate::engine::launch::NotResumable::Ended { .. }) = verdict {
                return Err(crate::engine::EngineError::from(ended).into());
            }
            let started = RunStarted {
                run_id: record.id.clone(),
                run_dir: record.run_dir.clone(),
                status: record.status,
            };
            if daemon.is_active(&record.id) {
                // Already being resumed here (at start-up, after a crash):
                // the caller follows that resume.
                return value(serde_json::to_value(started));
            }
            verdict.map_err(crate::engine::EngineError::from)?;
            let caller_env = (!params.env.is_empty()).then(|| params.env.0.clone());
            daemon.enqueue_resume(record, caller_env);
            value(serde_json::to_value(started))
        }
        Call::RunList(params) => {
            let filter = params.filter();
            read(daemon, move |store| {
                let runs: Vec<RunSummary> = store
                    .list_runs(&filter)?
                    .into_iter()
                    .map(RunSummary::from)
                    .collect();
                to_value(&runs)
            })
            .await
        }
        Call::RunGet(params) => {
            read(daemon, move |store| {
                let run = store.find_run(&params.run)?;
                let stages = store.stages(&run.id)?;
                to_value(&RunDetail { run, stages })
            })
            .await
        }
        Call::RunArchive(params) => {
            let mut store = daemon.store();
            let record = store.find_run(&params.run)?;
            store.set_archived(&record.id, params.archived)?;
            let summary = RunSummary::from(store.find_run(&record.id)?);
            value(serde_json::to_value(summary))
        }
        Call::RunCancel(params) => {
            let record = daemon.store().find_run(&params.run)?;
            if !daemon.cancel(&record.id) {
                return Err(RpcError::new(
                    code::INVALID_STATE,
                    "run.not_cancellable",
                    format!(
                        "run {} is {}, not queued or running",
                        record.id,
                        record.status.as_str()
                    ),
                ));
            }
            let status = daemon.store().find_run(&record.id)?.status;
            value(serde_json::to_value(CancelRequested {
                run_id: record.id,
                status,
            }))
        }
        Call::RunEvents(params) => {
            let limit = params.limit.unwrap_or(EVENTS_PAGE_MAX).min(EVENTS_PAGE_MAX);
            read(daemon, move |store| {
                let run = store.find_run(&params.run)?;
                let events =
                    event_page(store, &run.id, params.after_seq, limit, EVENTS_PAGE_BYTES)?;
                to_value(&EventPage {
                    run_id: run.id,
                    events,
                })
            })
            .await
        }
        Call::QuestionList(params) => {
            read(daemon, move |store| {
                let run = match &params.run {
                    Some(prefix) => Some(store.find_run(prefix)?.id),
                    None => None,
                };
                to_value(&store.questions(run.as_deref(), params.pending_only)?)
            })
            .await
        }
        Call::QuestionAnswer(params) => answer(daemon, &params),
        Call::DaemonStatus(_) => {
            let (running, queued) = daemon.load();
            let info = DaemonInfo {
                version: env!("CARGO_PKG_VERSION").to_string(),
                protocol: PROTOCOL_VERSION,
                pid: std::process::id(),
                uptime_ms: u64::try_from(daemon.started.elapsed().as_millis()).unwrap_or(u64::MAX),
                runs_running: running,
                runs_queued: queued,
                home: daemon.home.root().to_path_buf(),
                db_path: daemon.home.db_path(),
                socket_path: daemon.paths.socket.clone(),
            };
            value(serde_json::to_value(info))
        }
        Call::Subscribe(_) | Call::Unsubscribe(_) | Call::DaemonStop(_) => {
            Err(RpcError::internal("handled by the connection"))
        }
    }
}

/// `value` as JSON, for a read that runs off the event loop (the encoding
/// of a large result is work too).
fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, StoreError> {
    serde_json::to_value(value).map_err(|source| StoreError::Json {
        what: "a reply".into(),
        source,
    })
}

/// The run's events after `after_seq`: at most `limit` of them, and no more
/// once they add up to `max_bytes` (always at least one, so paging goes on).
fn event_page(
    store: &Store,
    run_id: &str,
    after_seq: u64,
    limit: u32,
    max_bytes: usize,
) -> Result<Vec<Event>, StoreError> {
    let mut events = store.events(run_id, after_seq, Some(limit))?;
    let mut bytes = 0;
    let mut keep = events.len();
    for (i, event) in events.iter().enumerate() {
        bytes += serde_json::to_vec(event).map_or(0, |v| v.len());
        if bytes > max_bytes && i > 0 {
            keep = i;
            break;
        }
    }
    events.truncate(keep);
    Ok(events)
}

/// `question.answer`: delivers the answer to the waiting run (or keeps it
/// for a run here that has not asked yet), or, for a question answered
/// already, returns the recorded answer when it is the same one.
///
/// Runs on the event loop without awaiting, so the engine cannot move
/// between the checks below.
fn answer(daemon: &Rc<Daemon>, params: &QuestionAnswer) -> Result<Value, RpcError> {
    let to_value = |record: &QuestionRecord| {
        serde_json::to_value(record).map_err(|e| RpcError::internal(e.to_string()))
    };
    let Some(mut record) = daemon.store().question(&params.question)? else {
        return Err(RpcError::new(
            code::NOT_FOUND,
            "question.not_found",
            format!("no question {}", params.question),
        ));
    };
    let question = gates::question_of(&record);
    // What this answer means, whether or not it can still be given.
    let given = gates::resolve(&question, &params.answer).map_err(|e| from_answer_error(&e))?;
    let given_json = gates::recorded(&question, &given);
    if record.status != QuestionStatus::Pending {
        // Idempotent: the same answer again.
        if record.status == QuestionStatus::Answered && record.answer.as_ref() == Some(&given_json)
        {
            return to_value(&record);
        }
        return Err(closed(&record));
    }
    if let Some(early) = daemon.gates.early_answer(&record.id) {
        record.status = QuestionStatus::Answered;
        record.answer = Some(gates::recorded(&question, &early));
        if record.answer.as_ref() == Some(&given_json) {
            return to_value(&record);
        }
        return Err(closed(&record));
    }
    if daemon.gates.is_waiting(&record.id) {
        let answer = daemon
            .gates
            .answer(&record.id, &params.answer)
            .map_err(|e| from_answer_error(&e))?;
        let answer = gates::recorded(&question, &answer);
        // Recorded now, not when the run gets to it: every later answer
        // (a second client, a retry) finds it.
        daemon
            .store()
            .answer_question(&record.id, QuestionStatus::Answered, Some(&answer))?;
        record.status = QuestionStatus::Answered;
        record.answer = Some(answer);
        record.answered_at = Some(crate::store::timestamp());
        return to_value(&record);
    }
    if daemon.is_active(&record.run_id) {
        // Pending, and its run is queued or running here but has not asked
        // (again) yet: it takes this answer when it does.
        daemon.gates.keep_early(&record.run_id, &record.id, given);
        record.status = QuestionStatus::Answered;
        record.answer = Some(given_json);
        return to_value(&record);
    }
    let status = daemon
        .store()
        .run(&record.run_id)?
        .map_or("gone", |run| run.status.as_str());
    Err(RpcError::new(
        code::INVALID_STATE,
        "question.not_waiting",
        format!(
            "no run is waiting on question {}: run {} is {status}, not running in the daemon; \
             resume it (`weft resume {}`) and answer again",
            record.id, record.run_id, record.run_id
        ),
    ))
}

/// `question.closed`: the question was answered otherwise, timed out or
/// was interrupted; the message says what was recorded.
fn closed(record: &QuestionRecord) -> RpcError {
    let answer = record
        .answer
        .as_ref()
        .and_then(|a| {
            a.get("choice")
                .or_else(|| a.get("text"))
                .or_else(|| a.get("default_choice"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| {
            record
                .answer
                .as_ref()
                .map_or_else(String::new, Value::to_string)
        });
    let message = match record.status {
        QuestionStatus::Answered => format!(
            "question {} was already answered `{answer}`; the answer stands",
            record.id
        ),
        QuestionStatus::TimedOut if answer.is_empty() => {
            format!("question {} timed out unanswered", record.id)
        }
        QuestionStatus::TimedOut => format!(
            "question {} timed out and took its default `{answer}`",
            record.id
        ),
        QuestionStatus::Interrupted | QuestionStatus::Pending => format!(
            "question {} was closed unanswered (its run stopped at the gate)",
            record.id
        ),
    };
    RpcError::new(code::INVALID_STATE, "question.closed", message).with_detail(
        "question",
        serde_json::to_value(record).unwrap_or(Value::Null),
    )
}

/// `subscribe`: the reply first, then (for one run) every recorded event
/// after `after_seq`, then live events, in order, without gaps.
fn subscribe(
    daemon: &Rc<Daemon>,
    id: Option<Id>,
    params: crate::ipc::protocol::Subscribe,
    outbox: &Rc<Outbox>,
    subscriptions: &mut HashMap<String, JoinHandle<()>>,
) {
    let fail = |error: RpcError| outbox.reply(Response::failure(id.clone(), error));
    // A subscription that ended by itself (`lagged`) frees its id and slot.
    subscriptions.retain(|_, task| !task.is_finished());
    if subscriptions.contains_key(&params.subscription) {
        fail(RpcError::new(
            code::INVALID_STATE,
            "subscription.exists",
            format!(
                "subscription {} exists on this connection",
                params.subscription
            ),
        ));
        return;
    }
    if subscriptions.len() >= MAX_SUBSCRIPTIONS {
        fail(RpcError::new(
            code::INVALID_STATE,
            "subscription.limit",
            format!(
                "this connection already has {MAX_SUBSCRIPTIONS} subscriptions, the most one \
                 may hold; unsubscribe first"
            ),
        ));
        return;
    }
    let run_id = match &params.run {
        Some(prefix) => match daemon.store().find_run(prefix) {
            Ok(run) => Some(run.id),
            Err(e) => {
                fail(RpcError::from(e));
                return;
            }
        },
        None => None,
    };
    // Subscribe to live events before reading the backlog, so nothing falls
    // between the two; duplicates are dropped by sequence number.
    let live = daemon.hub.subscribe();
    outbox.reply(Response::success(
        id,
        &Subscribed {
            subscription: params.subscription.clone(),
            run_id: run_id.clone(),
        },
    ));
    let task = tokio::task::spawn_local(forward(
        daemon.clone(),
        params.subscription.clone(),
        run_id,
        params.after_seq,
        live,
        outbox.clone(),
    ));
    subscriptions.insert(params.subscription, task);
}

/// Sends one subscription's events until it ends: recorded ones first (read
/// off the event loop, a page at a time, waiting while the client catches
/// up), then live ones; a live event that does not fit in the connection's
/// buffer ends the subscription with a `lagged` notice.
async fn forward(
    daemon: Rc<Daemon>,
    subscription: String,
    run_id: Option<String>,
    after_seq: u64,
    mut live: broadcast::Receiver<Event>,
    outbox: Rc<Outbox>,
) {
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
