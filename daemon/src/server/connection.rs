//! One client connection: read requests line by line, answer each, and
//! forward the events of its subscriptions. A bad line gets an error reply
//! and the connection goes on; a client that disconnects affects nothing
//! else (its subscriptions end with it).

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::{Value, json};
use tokio::io::BufReader;
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;

use super::Daemon;
use super::gates::AnswerError;
use crate::engine::event::Event;
use crate::ipc::codec::{FrameReader, FrameWriter};
use crate::ipc::protocol::{
    Call, CancelRequested, DaemonInfo, DaemonStopping, EventPage, Id, Notification,
    PROTOCOL_VERSION, QuestionAnswer, Response, RpcError, RunDetail, RunStarted, RunSummary,
    ServerMessage, Subscribed, Unsubscribed, code, decode_request,
};
use crate::store::{QuestionStatus, RunStatus};

/// Serves one connection until the client goes away.
pub async fn serve(daemon: Rc<Daemon>, stream: interprocess::local_socket::tokio::Stream) {
    let (read, write) = tokio::io::split(stream);
    let mut reader = FrameReader::new(BufReader::new(read));
    let (tx, mut rx) = mpsc::unbounded_channel::<ServerMessage>();
    // One writer, so replies and notifications never interleave mid-line.
    let writer = tokio::task::spawn_local(async move {
        let mut writer = FrameWriter::new(write);
        while let Some(message) = rx.recv().await {
            if writer.write(&message).await.is_err() {
                break;
            }
        }
    });
    let mut subscriptions: HashMap<String, JoinHandle<()>> = HashMap::new();
    loop {
        let value = match reader.read::<Value>().await {
            Ok(Some(value)) => value,
            Ok(None) => break,
            Err(e) if e.is_recoverable() => {
                let _ = tx.send(Response::failure(None, e.to_rpc_error()).into());
                continue;
            }
            Err(_) => break,
        };
        let (id, call) = match decode_request(value) {
            Ok(decoded) => decoded,
            Err(rejection) => {
                let _ = tx.send(Response::rejected(rejection).into());
                continue;
            }
        };
        // A request without an id is a notification: no reply (JSON-RPC).
        let wants_reply = id.is_some();
        let response = match call {
            Call::Subscribe(params) => {
                // Replies itself: the reply must precede the first event.
                subscribe(&daemon, id, params, &tx, &mut subscriptions);
                continue;
            }
            Call::Unsubscribe(params) => {
                let existed = subscriptions
                    .remove(&params.subscription)
                    .map(|task| task.abort())
                    .is_some();
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
                Ok(result) => Response::success(id, &result),
                Err(error) => Response::failure(id, error),
            },
        };
        if wants_reply {
            let _ = tx.send(response.into());
        }
    }
    for (_, task) in subscriptions {
        task.abort();
    }
    drop(tx);
    let _ = writer.await;
}

fn from_answer_error(e: AnswerError) -> RpcError {
    match e {
        AnswerError::NotWaiting(_) => RpcError::new(code::INVALID_STATE, e.code(), e.to_string()),
        AnswerError::NoSuchOption { .. } => {
            RpcError::new(code::INVALID_PARAMS, e.code(), e.to_string())
        }
    }
}

/// Every method but the subscription and stop ones.
async fn dispatch(daemon: &Rc<Daemon>, call: Call) -> Result<Value, RpcError> {
    let value = |v: serde_json::Result<Value>| v.map_err(|e| RpcError::internal(e.to_string()));
    match call {
        Call::RunStart(params) => {
            if daemon.is_stopping() {
                return Err(RpcError::shutting_down());
            }
            let mut request = params.to_run_request()?;
            if !params.env.is_empty() {
                request.env = Some(params.env.0.clone());
            }
            let auto = request.auto_approve;
            let services = daemon_services(daemon);
            let prepared = crate::engine::launch::prepare(request, &services)?;
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
            if matches!(record.status, RunStatus::Succeeded | RunStatus::Failed) {
                return Err(RpcError::new(
                    code::INVALID_STATE,
                    "run.not_resumable",
                    format!(
                        "run {} already {}; only interrupted or cancelled runs can be resumed",
                        record.id,
                        record.status.as_str()
                    ),
                ));
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
            // Refused at once (still running in a live process), leaving
            // the run as it was, rather than failing later in the job.
            crate::engine::launch::check_resumable(&record)?;
            let caller_env = (!params.env.is_empty()).then(|| params.env.0.clone());
            daemon.enqueue_resume(record, caller_env);
            value(serde_json::to_value(started))
        }
        Call::RunList(params) => {
            let records = daemon.store().list_runs(&params.filter())?;
            let summaries: Vec<RunSummary> = records
                .into_iter()
                .map(RunSummary::from)
                .filter(|s| params.label.as_deref().is_none_or(|l| s.has_label(l)))
                .collect();
            value(serde_json::to_value(summaries))
        }
        Call::RunGet(params) => {
            let store = daemon.store();
            let run = store.find_run(&params.run)?;
            let stages = store.stages(&run.id)?;
            value(serde_json::to_value(RunDetail { run, stages }))
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
            let store = daemon.store();
            let run = store.find_run(&params.run)?;
            let events = store.events(&run.id, params.after_seq, params.limit)?;
            value(serde_json::to_value(EventPage {
                run_id: run.id,
                events,
            }))
        }
        Call::QuestionList(params) => {
            let store = daemon.store();
            let run = match &params.run {
                Some(prefix) => Some(store.find_run(prefix)?.id),
                None => None,
            };
            let questions = store.questions(run.as_deref(), params.pending_only)?;
            value(serde_json::to_value(questions))
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

/// `question.answer`: delivers the answer to the waiting run, or returns
/// the recorded answer when the question was answered already.
fn answer(daemon: &Rc<Daemon>, params: &QuestionAnswer) -> Result<Value, RpcError> {
    let find = || {
        daemon
            .store()
            .questions(None, false)
            .map(|qs| qs.into_iter().find(|q| q.id == params.question))
    };
    let Some(mut record) = find()? else {
        return Err(RpcError::new(
            code::NOT_FOUND,
            "question.not_found",
            format!("no question {}", params.question),
        ));
    };
    if record.status != QuestionStatus::Pending {
        // Idempotent: the same answer (or the closed state) again.
        return serde_json::to_value(record).map_err(|e| RpcError::internal(e.to_string()));
    }
    let answer = daemon
        .gates
        .answer(&params.question, &params.answer)
        .map_err(from_answer_error)?;
    record.status = QuestionStatus::Answered;
    record.answer = Some(match answer {
        crate::engine::interviewer::Answer::Choice(i) => {
            json!({ "choice": record.options.get(i).cloned().unwrap_or_default() })
        }
        crate::engine::interviewer::Answer::Freeform(text) => json!({ "text": text }),
        _ => Value::Null,
    });
    record.answered_at = Some(crate::store::timestamp());
    serde_json::to_value(record).map_err(|e| RpcError::internal(e.to_string()))
}

/// `subscribe`: the reply first, then (for one run) every recorded event
/// after `after_seq`, then live events, in order, without gaps.
fn subscribe(
    daemon: &Rc<Daemon>,
    id: Option<Id>,
    params: crate::ipc::protocol::Subscribe,
    tx: &mpsc::UnboundedSender<ServerMessage>,
    subscriptions: &mut HashMap<String, JoinHandle<()>>,
) {
    let fail = |error: RpcError| {
        let _ = tx.send(Response::failure(id.clone(), error).into());
    };
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
    let reply = Response::success(
        id,
        &Subscribed {
            subscription: params.subscription.clone(),
            run_id: run_id.clone(),
        },
    );
    let _ = tx.send(reply.into());
    let task = tokio::task::spawn_local(forward(
        daemon.clone(),
        params.subscription.clone(),
        run_id,
        params.after_seq,
        live,
        tx.clone(),
    ));
    subscriptions.insert(params.subscription, task);
}

async fn forward(
    daemon: Rc<Daemon>,
    subscription: String,
    run_id: Option<String>,
    after_seq: u64,
    mut live: broadcast::Receiver<Event>,
    tx: mpsc::UnboundedSender<ServerMessage>,
) {
    let send = |event: Event| {
        tx.send(Notification::event(subscription.clone(), event).into())
            .is_ok()
    };
    let mut last = after_seq;
    if let Some(run) = &run_id {
        let backlog = daemon
            .store()
            .events(run, after_seq, None)
            .unwrap_or_default();
        for event in backlog {
            last = event.seq;
            if !send(event) {
                return;
            }
        }
    }
    loop {
        match live.recv().await {
            Ok(event) => {
                let wanted = run_id.as_deref().is_none_or(|r| r == event.run_id);
                if !wanted || (run_id.is_some() && event.seq <= last) {
                    continue;
                }
                if run_id.is_some() {
                    last = event.seq;
                }
                if !send(event) {
                    return;
                }
            }
            Err(broadcast::error::RecvError::Lagged(_)) => {
                // Too slow for the live buffer: catch up from the database.
                if let Some(run) = &run_id {
                    let missed = daemon.store().events(run, last, None).unwrap_or_default();
                    for event in missed {
                        last = event.seq;
                        if !send(event) {
                            return;
                        }
                    }
                }
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

fn daemon_services(daemon: &Rc<Daemon>) -> crate::engine::launch::Services {
    crate::engine::launch::Services {
        home: daemon.home.clone(),
        caller_env: None,
        store: daemon.store.clone(),
        interviewer: std::sync::Arc::new(crate::engine::interviewer::AutoApprove),
        clock: crate::engine::clock::Clock::System,
        cancel: crate::engine::cancel::Cancel::new(),
        observer: None,
    }
}
