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
//! Connections, the event fan-out and the daemon's own writes share one
//! thread (a tokio `LocalSet`); each run executes on a thread of its own
//! ([`run_thread`]) and shares with it only thread-safe parts (the store's
//! writer behind a mutex, the event hub, the gates, cancel tokens). Work
//! that grows with its input never runs on the daemon's thread, so one
//! client cannot freeze the others:
//! loading and validating a workflow for `run.start` and every read that
//! returns a list or a page (runs, stages, events, questions, subscription
//! backlogs) run on the blocking pool, reads through read-only connections
//! of their own (WAL lets them read beside the writer).

mod connection;
pub(crate) mod convert;
pub mod detach;
pub mod gates;
mod methods;
pub(crate) mod notify;
mod run_thread;
mod settings;

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use interprocess::local_socket::tokio::prelude::*;
use tokio::sync::{Notify, Semaphore, broadcast};

use crate::engine::clock::Clock;
use crate::engine::interviewer::{AutoApprove, Interviewer};
use crate::engine::launch::{Prepared, Services};
use crate::exec::cancel::{Cancel, CancelReason};
use crate::ipc::paths::DaemonPaths;
use crate::ipc::protocol::{RpcError, RunStart};
use crate::model::{Event, EventKind, RunStatus};
use crate::store::{Checkpoint, Home, RunFilter, RunRecord, Store, StoreError};
use crate::util::lock::lock;

pub use gates::Gates;
pub(crate) use gates::SocketInterviewer;
pub(crate) use settings::settings_warnings;
pub use settings::{Settings, start_desktop_app};

/// Events buffered for slow subscribers before they must catch up from
/// the database. The buffer keeps its last events whether or not anyone
/// still needs them, so it is kept small: a one-run subscription that falls
/// further behind catches up from the database, an all-runs one gets a
/// `lagged` notice.
const HUB_CAPACITY: usize = 1024;

/// Reads running at once on the blocking pool (each on a read-only
/// connection of its own); more wait their turn.
const READS_AT_ONCE: usize = 8;

/// Read-only connections kept open for the next read.
const READERS_KEPT: usize = 4;

/// Workflows loaded and validated at once for `run.start`; more wait their
/// turn, so a burst of large workflows cannot take all the memory.
const PREPARES_AT_ONCE: usize = 2;

/// How often a daemon that recorded something copies the write-ahead log
/// into the database file (a passive checkpoint, off the event loop).
const CHECKPOINT_EVERY: Duration = Duration::from_secs(30);

/// How long a starting daemon waits for the lock of a previous daemon that
/// does not answer on its socket (one that is exiting: killed, or stopping)
/// before it gives up and reports it as running.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// How many of the newest run folders are checked against the database at
/// start-up (a lost write-ahead log shows as folders without a run).
const RUN_DIRS_CHECKED: usize = 100;

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

/// The daemon's state, shared by connections and the tasks that watch runs
/// (on the daemon's thread; the runs themselves have threads of their own).
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
    /// Desktop notifications are paused (`notifications.pause`): in memory
    /// only, so a restarted daemon notifies again. Read by the runs'
    /// threads as they record events.
    pub notifications_paused: Arc<AtomicBool>,
    /// Events that may call for a desktop notification.
    notes: RefCell<Option<tokio::sync::mpsc::Sender<Event>>>,
    /// Read-only connections for reads off the event loop.
    readers: Arc<Mutex<Vec<Store>>>,
    read_slots: Arc<Semaphore>,
    prepare_slots: Arc<Semaphore>,
    /// Events recorded so far; the periodic checkpoint runs when it moved.
    recorded: Arc<AtomicU64>,
    /// The agent stages running in this daemon's runs (`run.steer`).
    pub(crate) agents: crate::engine::steering::RunningAgents,
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon")
            .field("home", &self.home)
            .finish_non_exhaustive()
    }
}

impl Daemon {
    /// Opens the store and prepares the daemon for `home`.
    pub fn new(home: Home) -> Result<Rc<Daemon>, DaemonError> {
        let settings = Settings::load(&home).map_err(DaemonError::Settings)?;
        // Keys nothing reads (a typo, or a section Weft does not implement):
        // the CLI warns as it starts a daemon; a daemon started otherwise
        // says so in its log.
        let path = home.settings_path();
        for d in crate::server::settings_warnings(&path) {
            let at = d
                .span
                .map(|s| format!(":{}:{}", s.line, s.column))
                .unwrap_or_default();
            eprintln!("weftd: warning: {}{at}: {}", path.display(), d.message);
        }
        let mut store = Store::open(&home)?;
        // Every run writes through this one connection: a checkpoint inside
        // a commit would hold them all up.
        store.checkpoint_off_thread()?;
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
            notifications_paused: Arc::default(),
            notes: RefCell::new(None),
            readers: Arc::default(),
            read_slots: Arc::new(Semaphore::new(READS_AT_ONCE)),
            prepare_slots: Arc::new(Semaphore::new(PREPARES_AT_ONCE)),
            recorded: Arc::default(),
            agents: crate::engine::steering::RunningAgents::default(),
        }))
    }

    /// Runs `read` on the blocking pool with a read-only connection, so a
    /// large result never holds up the event loop (nor the writer's lock).
    pub async fn read<T, F>(&self, read: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    {
        let Ok(_slot) = self.read_slots.clone().acquire_owned().await else {
            return Err(StoreError::io(
                "reading the run store",
                std::io::Error::other("the daemon is stopping"),
            ));
        };
        let (pool, home) = (self.readers.clone(), self.home.clone());
        tokio::task::spawn_blocking(move || {
            let kept = lock(&pool).pop();
            let store = match kept {
                Some(store) => store,
                None => Store::open_read_only(&home)?,
            };
            let result = read(&store);
            let mut pool = lock(&pool);
            if pool.len() < READERS_KEPT {
                pool.push(store);
            }
            result
        })
        .await
        .unwrap_or_else(|e| {
            Err(StoreError::io(
                "reading the run store",
                std::io::Error::other(e.to_string()),
            ))
        })
    }

    /// Reads (when given by path), loads and validates `run.start`'s
    /// workflow and records the run as `queued`, on the blocking pool: a
    /// large workflow takes its time without holding up other clients.
    pub async fn prepare(&self, params: RunStart) -> Result<Prepared, RpcError> {
        let Ok(_slot) = self.prepare_slots.clone().acquire_owned().await else {
            return Err(RpcError::shutting_down());
        };
        let services = self.loading_services();
        tokio::task::spawn_blocking(move || {
            let mut request = convert::run_request(&params)?;
            if !params.env.is_empty() {
                request.env = Some(params.env.0);
            }
            crate::engine::launch::prepare(request, &services).map_err(RpcError::from)
        })
        .await
        .unwrap_or_else(|e| {
            Err(RpcError::internal(format!(
                "loading the workflow failed: {e}"
            )))
        })
    }

    /// Services for preparing a run (nothing executes with them).
    fn loading_services(&self) -> Services {
        Services {
            home: self.home.clone(),
            caller_env: None,
            store: self.store.clone(),
            interviewer: Arc::new(AutoApprove),
            clock: Clock::System,
            cancel: Cancel::new(),
            observer: None,
            nesting: 0,
            agents: self.agents.clone(),
            budget: None,
            sandbox: None,
        }
    }

    /// The store, locked for one operation.
    pub fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        lock(&self.store)
    }

    /// Whether a shutdown has begun (no new work is taken).
    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.get()
    }

    /// Runs executing now and runs waiting for a slot.
    pub fn load(&self) -> (u32, u32) {
        let running = u32::try_from(self.running.borrow().len()).unwrap_or(u32::MAX);
        let queued = u32::try_from(self.queue.borrow().len()).unwrap_or(u32::MAX);
        (running, queued)
    }

    /// Whether a run is executing or waiting for a slot here.
    pub(crate) fn is_active(&self, run_id: &str) -> bool {
        self.running.borrow().contains_key(run_id)
            || self.queue.borrow().iter().any(|(id, _)| id == run_id)
    }

    /// Whether the run's execution here was cancelled and is still
    /// finishing (stopping its processes, recording its end), with no
    /// resume of it queued yet.
    pub(crate) fn is_ending(&self, run_id: &str) -> bool {
        self.running
            .borrow()
            .get(run_id)
            .is_some_and(|cancel| cancel.reason().is_some())
            && !self.queue.borrow().iter().any(|(id, _)| id == run_id)
    }

    /// Queues a prepared run (already recorded as `queued`).
    pub(crate) fn enqueue_start(self: &Rc<Self>, prepared: Prepared, auto_approve: bool) {
        let id = prepared.run_id.clone();
        self.queue
            .borrow_mut()
            .push_back((id, Job::Start(Box::new(prepared), auto_approve)));
        self.schedule();
    }

    /// Queues the resume of an interrupted or cancelled run.
    pub(crate) fn enqueue_resume(
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
            // Recorded and published like a cancel the run saw itself, so
            // its followers see how it ended.
            let reason = "cancelled before it started";
            let mut store = self.store();
            if let Ok(event) = store.append_event(
                run_id,
                &EventKind::RunCancelled {
                    reason: reason.to_string(),
                    duration_ms: 0,
                },
                None,
            ) {
                let _ = self.hub.send(event);
            }
            let _ = store.set_status(run_id, RunStatus::Cancelled, Some(reason));
            return true;
        }
        false
    }

    /// Starts queued work while slots are free.
    fn schedule(self: &Rc<Self>) {
        while !self.is_stopping() && self.running.borrow().len() < self.settings.max_concurrent_runs
        {
            // The first job whose run is not executing here: a resume sent
            // while the run's cancelled execution finishes waits for it
            // (one execution of a run at a time).
            let next = {
                let mut queue = self.queue.borrow_mut();
                let running = self.running.borrow();
                queue
                    .iter()
                    .position(|(id, _)| !running.contains_key(id))
                    .and_then(|at| queue.remove(at))
            };
            let Some((id, job)) = next else {
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
                    if me.queue.borrow().is_empty() && !me.is_stopping() {
                        me.checkpoint_in_background();
                    }
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
                store: Some(self.store.clone()),
            })
        };
        let hub = self.hub.clone();
        let recorded = self.recorded.clone();
        let notes = self.notes.borrow().clone();
        let paused = self.notifications_paused.clone();
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
                // Paused: an event while paused is never shown, not even
                // after the pause ends.
                if let Some(notes) = &notes
                    && !paused.load(Ordering::Relaxed)
                    && notify::notifies(&e.kind)
                {
                    // A full queue (a notification service that stopped
                    // answering) drops the note rather than hold the run.
                    let _ = notes.try_send(e.clone());
                }
                recorded.fetch_add(1, Ordering::Relaxed);
                let _ = hub.send(e.clone());
            })),
            nesting: 0,
            agents: self.agents.clone(),
            budget: None,
            sandbox: None,
        };
        let execution = match job {
            Job::Start(prepared, _) => Ok(run_thread::Execution::Start(prepared)),
            // Loading the workflow again is work in proportion to its size:
            // off the event loop, as for a start.
            Job::Resume(record, _) => {
                let loading = self.loading_services();
                match tokio::task::spawn_blocking(move || {
                    crate::engine::launch::prepare_resume(&record, &loading)
                })
                .await
                {
                    Ok(Ok(resumable)) => Ok(run_thread::Execution::Resume(Box::new(resumable))),
                    Ok(Err(e)) => Err(e),
                    Err(e) => Err(crate::engine::EngineError::Io(format!(
                        "loading the run to resume it failed: {e}"
                    ))),
                }
            }
        };
        let result = match execution {
            Ok(execution) => run_thread::run_on_own_thread(run_id, execution, services).await,
            Err(e) => Err(e),
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
        // Answers kept for questions it never asked go with it.
        self.gates.forget_run(run_id);
    }

    /// Marks runs a dead daemon left `running`, `blocked` or `queued` as
    /// interrupted and, when the settings say so, queues their resume.
    ///
    /// `previous` is the pid of the daemon that held the lock before this
    /// one: its runs are orphaned whatever its process looks like now (a
    /// daemon holds the lock until it exits, so one that was just killed
    /// may not be reaped yet, or not even a zombie).
    pub(crate) fn reconcile(self: &Rc<Self>, previous: Option<u32>) -> Result<u32, DaemonError> {
        let runs = self.store().list_runs(&RunFilter::default())?;
        let mut resumed = 0;
        let mut sandboxed = Vec::new();
        for run in runs {
            if run.status.is_terminal()
                && let Some(engine) = docker_engine(&run.options)
            {
                sandboxed.push((run.id.clone(), run.run_dir.clone(), engine));
            }
            let orphaned = match run.status {
                RunStatus::Running | RunStatus::Blocked => !run.pid.is_some_and(|pid| {
                    pid != std::process::id()
                        && Some(pid) != previous
                        && crate::os::process::still_alive(pid, run.pid_start)
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
                // The dead executor's file writer may not have written
                // every committed stage's files: write them from the rows
                // (the run directory is whole even if nobody resumes it).
                let _ =
                    store.restore_stage_files(&run.id, &crate::store::RunDir::open(&run.run_dir));
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
        remove_leftover_containers(sandboxed);
        Ok(resumed)
    }

    /// Copies the write-ahead log into the database file on the blocking
    /// pool (a passive checkpoint: it never waits for anyone), so the main
    /// file is rarely far behind its log.
    fn checkpoint_in_background(&self) {
        let db = self.home.db_path();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = Store::checkpoint_file(&db, Checkpoint::Passive) {
                eprintln!("weftd: checkpoint of {} failed: {e}", db.display());
            }
        });
    }

    /// Checkpoints every [`CHECKPOINT_EVERY`] while events are recorded.
    fn spawn_checkpoints(self: &Rc<Self>) {
        let me = Rc::downgrade(self);
        tokio::task::spawn_local(async move {
            let mut seen = 0;
            let mut tick = tokio::time::interval(CHECKPOINT_EVERY);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(me) = me.upgrade() else { return };
                let now = me.recorded.load(Ordering::Relaxed);
                if now != seen && !me.is_stopping() {
                    seen = now;
                    me.checkpoint_in_background();
                }
            }
        });
    }

    /// Warns (in the daemon's log) about signs that the database lost
    /// writes: a write-ahead log cut mid-frame, and run folders among the
    /// newest [`RUN_DIRS_CHECKED`] that have no run in the database.
    fn check_history(&self, cut: Option<&str>) {
        if let Some(cut) = cut {
            eprintln!("weftd: warning: {cut}");
        }
        let Ok(entries) = std::fs::read_dir(self.home.runs_dir()) else {
            return;
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort_unstable_by(|a, b| b.cmp(a));
        let store = self.store();
        let missing: Vec<&String> = names
            .iter()
            .take(RUN_DIRS_CHECKED)
            .filter(|name| {
                name.rsplit_once('-')
                    .is_some_and(|(_, id)| store.run(id).is_ok_and(|run| run.is_none()))
            })
            .collect();
        if let Some(first) = missing.first() {
            eprintln!(
                "weftd: warning: {} of the newest run folders under {} have no run in the \
                 database (e.g. {first}): the database lost writes; was its write-ahead log \
                 ({}-wal) deleted or cut?",
                missing.len(),
                self.home.runs_dir().display(),
                self.home.db_path().display()
            );
        }
    }

    /// Interrupts every running run and waits until they have stopped.
    pub(crate) async fn shut_down(&self) -> u32 {
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
        // Everything into the main file, so it does not depend on the log.
        if let Err(e) = self.store().checkpoint(Checkpoint::Truncate) {
            eprintln!("weftd: final checkpoint failed: {e}");
        }
        interrupted
    }
}

/// Holds the single-instance lock for as long as it lives.
#[derive(Debug)]
pub struct InstanceLock {
    _file: std::fs::File,
    /// The pid the pid file named when the lock was taken: the daemon that
    /// held it before (gone now), if any.
    pub previous: Option<u32>,
}

/// Takes the daemon lock for `paths`, or says who holds it.
///
/// A lock held by a daemon that answers on the socket means it is running.
/// One held by a process that does not answer is usually a daemon on its
/// way out (killed a moment ago: the kernel releases the lock when it has
/// exited; or finishing a stop), or one still starting: the lock is tried
/// again until [`LOCK_WAIT`] has passed or a daemon answers.
pub(crate) fn take_lock(home: &Home, paths: &DaemonPaths) -> Result<InstanceLock, DaemonError> {
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
    let deadline = Instant::now() + LOCK_WAIT;
    let mut said = false;
    loop {
        if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok() {
            break;
        }
        let pid = crate::limits::read_text_capped(&paths.pid, 64)
            .map(|p| p.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        if Instant::now() >= deadline || answers(&paths.socket) {
            return Err(DaemonError::AlreadyRunning {
                home: home.root().display().to_string(),
                pid,
                socket: paths.socket.display().to_string(),
            });
        }
        if !said {
            eprintln!(
                "weftd: the lock is held by pid {pid}, which does not answer on its socket; \
                 waiting up to {}s for it to exit",
                LOCK_WAIT.as_secs()
            );
            said = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let previous = crate::limits::read_text_capped(&paths.pid, 64)
        .ok()
        .and_then(|p| p.trim().parse().ok());
    crate::store::write_atomic(&paths.pid, std::process::id().to_string().as_bytes())?;
    Ok(InstanceLock {
        _file: file,
        previous,
    })
}

/// Whether a daemon answers `daemon.status` on `socket` within a second.
fn answers(socket: &std::path::Path) -> bool {
    use std::io::{BufRead, Read, Write};
    let Ok(mut stream) = std::os::unix::net::UnixStream::connect(socket) else {
        return false;
    };
    let timeout = Some(Duration::from_secs(1));
    if stream.set_read_timeout(timeout).is_err() || stream.set_write_timeout(timeout).is_err() {
        return false;
    }
    if stream
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.status\"}\n")
        .is_err()
    {
        return false;
    }
    let mut line = String::new();
    std::io::BufReader::new(stream.take(64 * 1024))
        .read_line(&mut line)
        .is_ok_and(|n| n > 0 && line.contains("\"result\""))
}

/// Whether no daemon holds the lock of `paths` (none runs, or the last one
/// has exited). A daemon holds it until its process is gone, whoever is its
/// parent and whether or not that parent reaps it, so waiting on this
/// rather than on the pid is exact.
#[must_use]
pub(crate) fn lock_released(paths: &DaemonPaths) -> bool {
    let Ok(file) = std::fs::File::open(&paths.lock) else {
        return true;
    };
    // A shared lock taken and dropped at once: it fails exactly while a
    // daemon holds its exclusive one.
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockShared).is_ok()
}

/// Runs the daemon in the foreground until it is stopped (SIGTERM, SIGINT
/// or `daemon.stop`). Call inside a `LocalSet` on a current-thread runtime.
/// The instance lock is released when this returns.
pub async fn serve(home: Home) -> Result<(), DaemonError> {
    serve_holding_lock(home).await.map(drop)
}

/// [`serve`], handing the instance lock back instead of releasing it, for
/// a process that exits next: `weft daemon stop` takes the lock's release
/// to mean the daemon is gone, so the binary keeps it until the kernel
/// drops it at exit, after the runtime has shut down.
pub async fn serve_holding_lock(home: Home) -> Result<InstanceLock, DaemonError> {
    let paths = DaemonPaths::for_home(&home);
    let lock = take_lock(&home, &paths)?;
    let wal = crate::store::wal::inspect(&home)?;
    let daemon = Daemon::new(home)?;
    daemon.check_history(wal.cut.as_deref());
    *daemon.notes.borrow_mut() = Some(notify::spawn(&daemon));
    let listener = crate::ipc::socket::listen(&paths.socket)?;
    let resumed = daemon.reconcile(lock.previous)?;
    daemon.spawn_checkpoints();
    eprintln!(
        "weftd {} listening on {} (pid {}, {} resumed)",
        env!("CARGO_PKG_VERSION"),
        paths.socket.display(),
        std::process::id(),
        runs(resumed, "interrupted run"),
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
    eprintln!(
        "weftd stopped ({} interrupted, to resume at the next start)",
        runs(interrupted, "run")
    );
    Ok(lock)
}

/// Milliseconds from the RFC 3339 time `started` until now (0 if unknown).
fn since(started: Option<&str>) -> u64 {
    started
        .and_then(|t| humantime::parse_rfc3339_weak(t).ok())
        .and_then(|t| t.elapsed().ok())
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `1 run`, `2 runs`: for weftd's log lines.
fn runs(n: impl std::fmt::Display + PartialEq<u32> + Copy, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// The engine's address a run's stored options name, when they ask for a
/// `docker` sandbox (the address was resolved and stored at its start).
fn docker_engine(options: &serde_json::Value) -> Option<String> {
    let config: crate::model::SandboxConfig =
        serde_json::from_value(options.get("sandbox")?.clone()).ok()?;
    (config.provider() == crate::model::sandbox::Provider::Docker)
        .then_some(config.engine)
        .flatten()
}

/// Removes, in the background, the containers that runs which have ended
/// left recorded (`sandbox.json`; see [`crate::sandbox::run::leftover`]):
/// those labelled with the run's id, on the engine its options name (the
/// file says only that one may be left). Which runs is decided before this
/// returns; kept containers stay.
fn remove_leftover_containers(runs: Vec<(String, std::path::PathBuf, String)>) {
    let leftovers: Vec<_> = runs
        .into_iter()
        .filter(|(_, dir, _)| crate::sandbox::run::leftover(dir).is_some())
        .collect();
    if leftovers.is_empty() {
        return;
    }
    tokio::task::spawn_local(async move {
        for (run_id, dir, engine) in leftovers {
            match crate::sandbox::run::remove_leftover(&engine, &run_id, &dir).await {
                Ok(removed) => eprintln!(
                    "weftd: removed {removed} container(s) of ended run {run_id} ({})",
                    dir.display()
                ),
                Err(e) => eprintln!(
                    "weftd: could not remove the container of ended run {run_id} ({}): {e}",
                    dir.display()
                ),
            }
        }
    });
}
