//! Where `weft ps`, `weft events` and `weft logs` read runs from: the
//! daemon by default (started when it is not running, so its start-up
//! reconciliation has marked runs that a crash left `running` as
//! interrupted before anything is shown), or the database directly with
//! `--no-daemon` — the same read-only path the app uses to browse history
//! offline.
//!
//! When the daemon cannot be reached even after trying to start it, the
//! commands say so and read the database directly rather than show nothing.

use super::daemon::message;
use crate::ipc::client::{Client, Subscription};
use crate::ipc::protocol::{RunDetail, RunEvents, RunGet, RunList};
use crate::model::Event;
use crate::model::{RunStatus, RunSummary};
use crate::store::{Home, Store, StoreError};

/// A source of recorded runs.
pub(crate) enum Reader {
    Daemon(Client),
    /// `None` when no database exists yet (nothing has ever run).
    Store(Option<Store>),
}

/// Why a read failed, already worded for the user.
pub(crate) type ReadError = String;

impl Reader {
    /// The daemon (started if need be), or the database when `no_daemon`
    /// or when the daemon cannot be reached.
    pub(crate) async fn open(home: &Home, no_daemon: bool) -> Result<Reader, ReadError> {
        if !no_daemon {
            match super::daemon::connect(home).await {
                Ok(client) => return Ok(Reader::Daemon(client)),
                Err(e) => {
                    eprintln!("warning: cannot reach weftd ({e}); reading the run store directly")
                }
            }
        }
        if !home.db_path().is_file() {
            return Ok(Reader::Store(None));
        }
        Store::open_read_only(home)
            .map(|store| Reader::Store(Some(store)))
            .map_err(|e| format!("cannot open the run store: {e}"))
    }

    /// Runs matching `query`, newest first.
    pub(crate) async fn list(&self, query: RunList) -> Result<Vec<RunSummary>, ReadError> {
        match self {
            Reader::Daemon(client) => client.call(query).await.map_err(|e| message(&e)),
            Reader::Store(None) => Ok(Vec::new()),
            Reader::Store(Some(store)) => Ok(store
                .list_runs(&query.filter())
                .map_err(|e| format!("cannot read the run store: {e}"))?
                .into_iter()
                .map(RunSummary::from)
                .collect()),
        }
    }

    /// The run `run` (an id or unique prefix) with its stages.
    pub(crate) async fn get(&self, run: &str) -> Result<RunDetail, ReadError> {
        let not_found = || {
            format!(
                "no run matches `{}`; `weft ps --all` lists the runs",
                run.trim()
            )
        };
        match self {
            Reader::Daemon(client) => {
                let query = RunGet {
                    run: run.to_string(),
                };
                client.call(query).await.map_err(|e| {
                    if e.is(crate::model::Code::RunNotFound) {
                        not_found()
                    } else {
                        message(&e)
                    }
                })
            }
            Reader::Store(None) => Err(not_found()),
            Reader::Store(Some(store)) => {
                let record = store.find_run(run).map_err(|e| match e {
                    StoreError::RunNotFound(_) => not_found(),
                    other => other.to_string(),
                })?;
                let stages = store
                    .stages(&record.id)
                    .map_err(|e| format!("cannot read the stages of run {}: {e}", record.id))?;
                Ok(RunDetail {
                    run: record,
                    stages,
                })
            }
        }
    }

    /// Up to `limit` events of run `run_id` with `seq > after`.
    pub(crate) async fn events(
        &self,
        run_id: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<Event>, ReadError> {
        let failed = |e: String| format!("cannot read the events of run {run_id}: {e}");
        match self {
            Reader::Daemon(client) => client
                .call(RunEvents {
                    run: run_id.to_string(),
                    after_seq: after,
                    limit: Some(limit),
                })
                .await
                .map(|page| page.events)
                .map_err(|e| failed(message(&e))),
            Reader::Store(None) => Ok(Vec::new()),
            Reader::Store(Some(store)) => store
                .events(run_id, after, Some(limit))
                .map_err(|e| failed(e.to_string())),
        }
    }

    /// The run's status now.
    pub(crate) async fn status(&self, run_id: &str) -> Result<RunStatus, ReadError> {
        self.get(run_id).await.map(|detail| detail.run.status)
    }

    /// Live events of `run_id` after `after` from the daemon; `None` when
    /// reading the database (the caller polls instead).
    pub(crate) async fn subscribe(
        &self,
        run_id: &str,
        after: u64,
    ) -> Result<Option<Subscription>, ReadError> {
        match self {
            Reader::Daemon(client) => client
                .subscribe("events", Some(run_id.to_string()), after)
                .await
                .map(Some)
                .map_err(|e| format!("cannot follow run {run_id}: {}", message(&e))),
            Reader::Store(_) => Ok(None),
        }
    }
}
