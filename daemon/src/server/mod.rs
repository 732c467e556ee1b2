//! `weftd`: the daemon that executes runs behind a local socket.
//!
//! One daemon per `WEFT_HOME` (a lock file guards it). It owns the only
//! writing database connection, runs at most `max_concurrent_runs` runs at
//! once (the rest wait as `queued`), serves JSON-RPC over the socket
//! ([`crate::ipc`]), forwards events to subscribers, and parks human-gate
//! questions until a client answers them. At start-up it resumes runs that
//! were interrupted; on shutdown it interrupts running runs so that the next
//! start resumes them.
//!
//! Everything runs on one thread (a tokio `LocalSet`): runs are I/O-bound,
//! and the database has one writer anyway.

mod connection;
pub mod detach;
pub mod gates;
pub mod notify;
mod settings;

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use interprocess::local_socket::tokio::prelude::*;
use tokio::sync::{Notify, broadcast};

use crate::engine::cancel::{Cancel, CancelReason};
use crate::engine::clock::Clock;
use crate::engine::event::{Event, EventKind};
use crate::engine::interviewer::{AutoApprove, Interviewer};
use crate::engine::launch::{Prepared, Services};
use crate::ipc::paths::DaemonPaths;
use crate::store::{Home, RunFilter, RunRecord, RunStatus, Store, StoreError};

pub use gates::{Gates, SocketInterviewer};
pub use settings::Settings;

/// Events buffered for slow subscribers before they must catch up from
/// the database.
const HUB_CAPACITY: usize = 4096;

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("weftd is already running for {home} (pid {pid}, socket {socket})")]
    AlreadyRunning {
        home: String,
        pid: String,
        socket: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Paths(#[from] crate::ipc::paths::PathsError),
    #[error(transparent)]
    Listen(#[from] crate::ipc::socket::ListenError),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Settings(String),
}

impl DaemonError {
    fn io(context: impl Into<String>, source: std::io::Error) -> DaemonError {
        DaemonError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Work waiting for a slot.
enum Job {
    Start(Box<Prepared>, bool),
    /// With the environment of the client that asked (`None`: the daemon's).
    Resume(Box<RunRecord>, Option<Vec<(String, String)>>),
}

/// The daemon's state, shared by connections and run tasks (one thread).
pub struct Daemon {
    pub home: Home,
    pub paths: DaemonPaths,
    pub settings: Settings,
    pub store: Arc<Mutex<Store>>,
    pub hub: broadcast::Sender<Event>,
    pub gates: Arc<Gates>,
    pub started: Instant,
    /// Cancelled with [`CancelReason::Shutdown`] when the daemon stops.
    shutdown: Cancel,
    /// Notified when a shutdown is requested over the socket.
    pub stop_requested: Notify,
    queue: RefCell<VecDeque<(String, Job)>>,
    /// Runs executing now, with their own cancel handles.
    running: RefCell<HashMap<String, Cancel>>,
    idle: Notify,
    stopping: Cell<bool>,
    /// Events that may call for a desktop notification.
    notes: RefCell<Option<tokio::sync::mpsc::UnboundedSender<Event>>>,
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon")
            .field("home", &self.home)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Daemon {
    /// Opens the store and prepares the daemon for `home`.
    pub fn new(home: Home) -> Result<Rc<Daemon>, DaemonError> {
        let settings = Settings::load(&home).map_err(DaemonError::Settings)?;
        let store = Store::open(&home)?;
        let (hub, _) = broadcast::channel(HUB_CAPACITY);
        Ok(Rc::new(Daemon {
            paths: DaemonPaths::for_home(&home),
            home,
            settings,
            store: Arc::new(Mutex::new(store)),
            hub,
            gates: Arc::default(),
            started: Instant::now(),
            shutdown: Cancel::new(),
            stop_requested: Notify::new(),
            queue: RefCell::default(),
            running: RefCell::default(),
            idle: Notify::new(),
            stopping: Cell::new(false),
            notes: RefCell::new(None),
        }))
    }

    /// The store, locked for one operation.
    pub fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        lock(&self.store)
    }

    /// Whether a shutdown has begun (no new work is taken).
    pub fn is_stopping(&self) -> bool {
        self.stopping.get()
    }

    /// Runs executing now and runs waiting for a slot.
    pub fn load(&self) -> (u32, u32) {
        let running = u32::try_from(self.running.borrow().len()).unwrap_or(u32::MAX);
        let queued = u32::try_from(self.queue.borrow().len()).unwrap_or(u32::MAX);
        (running, queued)
    }

    /// Whether a run is executing or waiting for a slot here.
    pub fn is_active(&self, run_id: &str) -> bool {
        self.running.borrow().contains_key(run_id)
            || self.queue.borrow().iter().any(|(id, _)| id == run_id)
    }

    /// Queues a prepared run (already recorded as `queued`).
    pub fn enqueue_start(self: &Rc<Self>, prepared: Prepared, auto_approve: bool) {
        let id = prepared.run_id.clone();
        self.queue
            .borrow_mut()
            .push_back((id, Job::Start(Box::new(prepared), auto_approve)));
        self.schedule();
    }

    /// Queues the resume of an interrupted or cancelled run.
    pub fn enqueue_resume(
        self: &Rc<Self>,
        record: RunRecord,
        caller_env: Option<Vec<(String, String)>>,
    ) {
        let id = record.id.clone();
        self.queue
            .borrow_mut()
            .push_back((id, Job::Resume(Box::new(record), caller_env)));
        self.schedule();
    }

    /// Cancels a queued or running run; false when it is neither.
    pub fn cancel(&self, run_id: &str) -> bool {
        if let Some(cancel) = self.running.borrow().get(run_id) {
            cancel.cancel(CancelReason::User("cancelled by a client".into()));
            return true;
        }
        let mut queue = self.queue.borrow_mut();
        if let Some(pos) = queue.iter().position(|(id, _)| id == run_id) {
            queue.remove(pos);
            drop(queue);
            let _ = self.store().set_status(
                run_id,
                RunStatus::Cancelled,
                Some("cancelled before it started"),
            );
            return true;
        }
        false
    }

    /// Starts queued work while slots are free.
    fn schedule(self: &Rc<Self>) {
        while !self.is_stopping() && self.running.borrow().len() < self.settings.max_concurrent_runs
        {
            let Some((id, job)) = self.queue.borrow_mut().pop_front() else {
                break;
            };
            let cancel = self.shutdown.child();
            self.running.borrow_mut().insert(id.clone(), cancel.clone());
            let me = self.clone();
            tokio::task::spawn_local(async move {
                me.execute(&id, job, cancel).await;
                me.running.borrow_mut().remove(&id);
                if me.running.borrow().is_empty() {
                    me.idle.notify_waiters();
                }
                me.schedule();
            });
        }
    }

    async fn execute(&self, run_id: &str, job: Job, cancel: Cancel) {
        let auto = match &job {
            Job::Start(_, auto) => *auto,
            Job::Resume(record, _) => record
                .options
                .get("auto_approve")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
        };
        let interviewer: Arc<dyn Interviewer> = if auto {
            Arc::new(AutoApprove)
        } else {
            Arc::new(SocketInterviewer {
                gates: self.gates.clone(),
            })
        };
        let hub = self.hub.clone();
        let notes = self.notes.borrow().clone();
        let caller_env = match &job {
            Job::Start(..) => None,
            Job::Resume(_, env) => env.clone(),
        };
        let services = Services {
            home: self.home.clone(),
            caller_env,
            store: self.store.clone(),
            interviewer,
            clock: Clock::System,
            cancel,
            observer: Some(Arc::new(move |e: &Event| {
                if let Some(notes) = &notes
                    && matches!(
                        e.kind,
                        EventKind::InterviewStarted { .. }
                            | EventKind::RunFailed { .. }
                            | EventKind::RunCompleted { .. }
                    )
                {
                    let _ = notes.send(e.clone());
                }
                let _ = hub.send(e.clone());
            })),
        };
        let result = match job {
            Job::Start(prepared, _) => prepared.run(&services).await,
            Job::Resume(record, _) => crate::engine::resume(&record, &services).await,
        };
        if let Err(e) = result {
            eprintln!("weftd: run {run_id} could not run: {e}");
            if let Ok(Some(event)) =
                crate::engine::launch::record_execution_error(&self.store, run_id, &e)
            {
                // Followers of the run learn why it stopped here.
                let _ = self.hub.send(event);
            }
        }
    }

    /// Marks runs a dead daemon left `running`, `blocked` or `queued` as
    /// interrupted and, when the settings say so, queues their resume.
    pub fn reconcile(self: &Rc<Self>) -> Result<u32, DaemonError> {
        let runs = self.store().list_runs(&RunFilter::default())?;
        let mut resumed = 0;
        for run in runs {
            let orphaned = match run.status {
                RunStatus::Running | RunStatus::Blocked => !run.pid.is_some_and(|pid| {
                    pid != std::process::id()
                        && crate::engine::launch::run_process_alive(pid, run.pid_start)
                }),
                RunStatus::Queued => true,
                // Interrupted by a daemon shutdown: resumable as it is.
                RunStatus::Interrupted => false,
                _ => continue,
            };
            if orphaned {
                // Recorded like an interruption the run saw itself, so its
                // history says how it ended and followers stop there.
                let reason = "the process running it stopped";
                let mut store = self.store();
                store.interrupt_running_stages(&run.id)?;
                store.append_event(
                    &run.id,
                    &EventKind::RunInterrupted {
                        reason: reason.to_string(),
                        duration_ms: since(run.started_at.as_deref()),
                    },
                    None,
                )?;
                store.set_status(&run.id, RunStatus::Interrupted, Some(reason))?;
            } else if run.status != RunStatus::Interrupted {
                continue;
            }
            // A child run is resumed by its parent's sub-workflow stage.
            let child = run.options.get("parent").is_some_and(|p| !p.is_null());
            if child {
                continue;
            }
            if self.settings.resume_interrupted {
                let record = self.store().find_run(&run.id)?;
                self.enqueue_resume(record, None);
                resumed += 1;
            }
        }
        Ok(resumed)
    }

    /// Interrupts every running run and waits until they have stopped.
    pub async fn shut_down(&self) -> u32 {
        self.stopping.set(true);
        let interrupted = u32::try_from(self.running.borrow().len()).unwrap_or(u32::MAX);
        self.shutdown
            .cancel(CancelReason::Shutdown("the daemon is stopping".into()));
        while !self.running.borrow().is_empty() {
            let idle = self.idle.notified();
            if self.running.borrow().is_empty() {
                break;
            }
            idle.await;
        }
        interrupted
    }
}

/// Holds the single-instance lock for as long as it lives.
#[derive(Debug)]
pub struct InstanceLock {
    _file: std::fs::File,
}

/// Takes the daemon lock for `paths`, or says who holds it.
pub fn take_lock(home: &Home, paths: &DaemonPaths) -> Result<InstanceLock, DaemonError> {
    paths.ensure()?;
    let file = std::os::unix::fs::OpenOptionsExt::mode(
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true),
        crate::store::PRIVATE_FILE_MODE,
    )
    .open(&paths.lock)
    .map_err(|e| DaemonError::io(format!("opening {}", paths.lock.display()), e))?;
    if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
        let pid = std::fs::read_to_string(&paths.pid)
            .map(|p| p.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        return Err(DaemonError::AlreadyRunning {
            home: home.root().display().to_string(),
            pid,
            socket: paths.socket.display().to_string(),
        });
    }
    crate::store::write_atomic(&paths.pid, std::process::id().to_string().as_bytes())?;
    Ok(InstanceLock { _file: file })
}

/// Runs the daemon in the foreground until it is stopped (SIGTERM, SIGINT
/// or `daemon.stop`). Call inside a `LocalSet` on a current-thread runtime.
pub async fn serve(home: Home) -> Result<(), DaemonError> {
    let paths = DaemonPaths::for_home(&home);
    let _lock = take_lock(&home, &paths)?;
    let daemon = Daemon::new(home)?;
    *daemon.notes.borrow_mut() = Some(notify::spawn(&daemon));
    let listener = crate::ipc::socket::listen(&paths.socket)?;
    let resumed = daemon.reconcile()?;
    eprintln!(
        "weftd {} listening on {} (pid {}, {resumed} interrupted run(s) resumed)",
        env!("CARGO_PKG_VERSION"),
        paths.socket.display(),
        std::process::id()
    );
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::pin!(term);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(stream) if !crate::ipc::socket::peer_is_same_user(&stream) => {
                    // Dropped unanswered: another user has no business here.
                    eprintln!("weftd: refused a connection from another user");
                }
                Ok(stream) => {
                    let me = daemon.clone();
                    tokio::task::spawn_local(async move {
                        connection::serve(me, stream).await;
                    });
                }
                Err(e) => eprintln!("weftd: accept failed: {e}"),
            },
            () = &mut term => break,
            _ = tokio::signal::ctrl_c() => break,
            () = daemon.stop_requested.notified() => break,
        }
    }
    let interrupted = daemon.shut_down().await;
    drop(listener);
    let _ = std::fs::remove_file(&paths.socket);
    let _ = std::fs::remove_file(&paths.pid);
    eprintln!("weftd stopped ({interrupted} run(s) interrupted, to resume at the next start)");
    Ok(())
}

/// Milliseconds from the RFC 3339 time `started` until now (0 if unknown).
fn since(started: Option<&str>) -> u64 {
    started
        .and_then(|t| humantime::parse_rfc3339_weak(t).ok())
        .and_then(|t| t.elapsed().ok())
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
