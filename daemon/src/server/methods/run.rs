//! `run.start`, `run.resume`, `run.list`, `run.get`, `run.archive`,
//! `run.cancel`, `run.events`, `run.timeline` and `run.fork`.

use super::{Handler, Session, read};
use crate::engine::fork::Forked;
use crate::ipc::protocol::{
    CancelRequested, EVENTS_PAGE_BYTES, EventPage, RpcError, RunArchive, RunCancel, RunDetail,
    RunEvents, RunFork, RunGet, RunList, RunResume, RunStart, RunStarted, RunTimeline,
};
use crate::model::{Code, Event, RunStatus, RunSummary};
use crate::store::TimelineEntry;
use crate::store::{EVENTS_PAGE_MAX, Store, StoreError};

impl Handler for RunStart {
    async fn handle(self, session: &mut Session) -> Result<RunStarted, RpcError> {
        let daemon = &session.daemon;
        if daemon.is_stopping() {
            return Err(RpcError::shutting_down());
        }
        let auto = self.auto_approve;
        let prepared = daemon.prepare(self).await?;
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
        Ok(started)
    }
}

impl Handler for RunResume {
    async fn handle(self, session: &mut Session) -> Result<RunStarted, RpcError> {
        let daemon = &session.daemon;
        if daemon.is_stopping() {
            return Err(RpcError::shutting_down());
        }
        let record = daemon.store().find_run(&self.run)?;
        // The engine decides, at once and leaving the run as it was,
        // rather than the job failing later. A run that ended is refused
        // even while this daemon is still finishing it.
        let verdict = crate::engine::launch::resumable(&record);
        if let Err(ended @ crate::engine::launch::NotResumable::Ended { .. }) = verdict {
            return Err(crate::engine::EngineError::from(ended).into());
        }
        let started = RunStarted {
            run_id: record.id.clone(),
            run_dir: record.run_dir.clone(),
            status: record.status,
        };
        if daemon.is_active(&record.id) && !daemon.is_ending(&record.id) {
            // Already being resumed here (at start-up, after a crash, or
            // by another client): the caller follows that resume. A run
            // whose cancelled execution is still finishing is not: its
            // resume is queued and starts once that execution has ended.
            return Ok(started);
        }
        verdict.map_err(crate::engine::EngineError::from)?;
        let caller_env = (!self.env.is_empty()).then(|| self.env.0.clone());
        daemon.enqueue_resume(record, caller_env);
        Ok(started)
    }
}

impl Handler for RunList {
    const LARGE: bool = true;

    async fn handle(self, session: &mut Session) -> Result<Vec<RunSummary>, RpcError> {
        let filter = self.filter();
        read(&session.daemon, move |store| {
            Ok(store
                .list_runs(&filter)?
                .into_iter()
                .map(RunSummary::from)
                .collect())
        })
        .await
    }
}

impl Handler for RunGet {
    const LARGE: bool = true;

    async fn handle(self, session: &mut Session) -> Result<RunDetail, RpcError> {
        read(&session.daemon, move |store| {
            let run = store.find_run(&self.run)?;
            let stages = store.stages(&run.id)?;
            Ok(RunDetail { run, stages })
        })
        .await
    }
}

impl Handler for RunArchive {
    async fn handle(self, session: &mut Session) -> Result<RunSummary, RpcError> {
        let mut store = session.daemon.store();
        let record = store.find_run(&self.run)?;
        store.set_archived(&record.id, self.archived)?;
        Ok(RunSummary::from(store.find_run(&record.id)?))
    }
}

impl Handler for RunTimeline {
    const LARGE: bool = true;

    async fn handle(self, session: &mut Session) -> Result<Vec<TimelineEntry>, RpcError> {
        read(&session.daemon, move |store| {
            let run = store.find_run(&self.run)?;
            store.timeline(&run.id)
        })
        .await
    }
}

impl Handler for RunFork {
    async fn handle(self, session: &mut Session) -> Result<Forked, RpcError> {
        let daemon = &session.daemon;
        if daemon.is_stopping() {
            return Err(RpcError::shutting_down());
        }
        let store = daemon.store.clone();
        let home = daemon.home.clone();
        // Copies files and writes git refs: off the event loop.
        tokio::task::spawn_blocking(move || {
            crate::engine::fork::fork(
                &store,
                &home,
                &self.run,
                self.target.as_deref(),
                self.rewind,
            )
        })
        .await
        .map_err(|e| RpcError::internal(format!("the fork failed: {e}")))?
        .map_err(|e| RpcError::new(e.code(), e.to_string()))
    }
}

impl Handler for RunCancel {
    async fn handle(self, session: &mut Session) -> Result<CancelRequested, RpcError> {
        let daemon = &session.daemon;
        let record = daemon.store().find_run(&self.run)?;
        if !daemon.cancel(&record.id) {
            return Err(RpcError::new(
                Code::RunNotCancellable,
                format!(
                    "run {} is {}, not queued or running",
                    record.id,
                    record.status.as_str()
                ),
            ));
        }
        let status = daemon.store().find_run(&record.id)?.status;
        Ok(CancelRequested {
            run_id: record.id,
            status,
        })
    }
}

impl Handler for RunEvents {
    const LARGE: bool = true;

    async fn handle(self, session: &mut Session) -> Result<EventPage, RpcError> {
        let limit = self.limit.unwrap_or(EVENTS_PAGE_MAX).min(EVENTS_PAGE_MAX);
        read(&session.daemon, move |store| {
            let run = store.find_run(&self.run)?;
            let events = event_page(store, &run.id, self.after_seq, limit, EVENTS_PAGE_BYTES)?;
            Ok(EventPage {
                run_id: run.id,
                events,
            })
        })
        .await
    }
}

/// The run's events after `after_seq`: at most `limit` of them, and no more
/// once they add up to `max_bytes` (always at least one, so paging goes on).
pub(crate) fn event_page(
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
