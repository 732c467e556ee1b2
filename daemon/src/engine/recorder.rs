//! Where a run's events go: the database (the durable record), the run
//! directory (`progress.jsonl`, `live.json`) and an optional live observer
//! (the CLI's progress display, later the daemon's subscribers).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use serde_json::json;

use crate::model::{Event, EventKind};
use crate::secrets::Redactor;
use crate::store::{FileWriter, RunDir, StageCommit, StageFiles, Store, StoreError};
use crate::util::lock::lock;

/// Receives every event as soon as it is recorded.
pub(crate) type Observer = Arc<dyn Fn(&Event) + Send + Sync>;

/// Records one run's events. Cheap to share between the run loop and the
/// stage handlers (`&Recorder`); the store and files sit behind mutexes held
/// only for one write.
pub(crate) struct Recorder {
    run_id: String,
    store: Arc<Mutex<Store>>,
    run_dir: Mutex<RunDir>,
    observer: Option<Observer>,
    /// When the last event was recorded, for the stall watchdog.
    last_activity: Mutex<Instant>,
    /// Human gates waiting for an answer (several in parallel branches):
    /// waiting for a person is not a stall.
    gates_open: std::sync::atomic::AtomicU32,
    /// When live.json was last written.
    live_written: Mutex<Option<Instant>>,
    /// Takes secrets out of every event before it is recorded anywhere.
    redactor: Redactor,
    /// Writes stages' own files after their commit, off the critical path.
    files: FileWriter,
    /// Files the running stages have named so far, by stage directory:
    /// committed with the stage, then written.
    pending: Mutex<HashMap<PathBuf, StageFiles>>,
}

/// live.json is rewritten at most this often (and always for the events
/// that change what a monitor shows most: a gate opening, the run ending).
/// Rewriting it for every event made file churn the largest cost of a
/// short stage.
const LIVE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("run_id", &self.run_id)
            .finish()
    }
}

/// `kind` with the secrets in its text replaced, or `None` when it held
/// none (the common case, which costs no copy of the event).
fn redacted(redactor: &Redactor, kind: &EventKind) -> Option<EventKind> {
    match kind {
        // The hot path: output arrives in many chunks.
        EventKind::CommandOutput { stream, text } => match redactor.text(text) {
            std::borrow::Cow::Borrowed(_) => None,
            std::borrow::Cow::Owned(text) => Some(EventKind::CommandOutput {
                stream: *stream,
                text,
            }),
        },
        // Numbers, statuses and names from the workflow only.
        EventKind::StageStarted { .. }
        | EventKind::RunCompleted { .. }
        | EventKind::EdgeSelected { .. }
        | EventKind::LoopRestart { .. }
        | EventKind::ParallelStarted { .. }
        | EventKind::ParallelCompleted { .. }
        | EventKind::WatchdogTimeout { .. }
        | EventKind::LlmCompleted { .. }
        | EventKind::EnvWithheld { .. } => None,
        other => {
            let mut value = serde_json::to_value(other).ok()?;
            if !redactor.json(&mut value) {
                return None;
            }
            serde_json::from_value(value).ok()
        }
    }
}

impl Recorder {
    #[must_use]
    pub fn new(
        run_id: &str,
        store: Arc<Mutex<Store>>,
        run_dir: RunDir,
        observer: Option<Observer>,
    ) -> Recorder {
        Recorder {
            run_id: run_id.to_string(),
            store,
            run_dir: Mutex::new(run_dir),
            observer,
            last_activity: Mutex::new(Instant::now()),
            gates_open: std::sync::atomic::AtomicU32::new(0),
            live_written: Mutex::new(None),
            redactor: Redactor::default(),
            files: FileWriter::start(),
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// Names a file of the stage whose directory is `dir` (`None`: an
    /// empty file, unless output has filled it); it is committed with the
    /// stage and written after ([`crate::store::FileWriter`]).
    pub(crate) fn stage_file(&self, dir: &Path, name: &str, text: Option<String>) {
        lock(&self.pending)
            .entry(dir.to_path_buf())
            .or_default()
            .insert(name.to_string(), text);
    }

    /// The files named for the stage in `dir` so far, taken.
    pub(crate) fn take_stage_files(&self, dir: &Path) -> StageFiles {
        lock(&self.pending).remove(dir).unwrap_or_default()
    }

    /// Queues `files` to be written into `dir`.
    pub(crate) fn write_stage_files(&self, dir: PathBuf, files: StageFiles) {
        self.files.write(dir, files);
    }

    /// Waits until every stage file queued is written (someone may look
    /// now: a gate opened, the run ends); what failed becomes a notice.
    pub(crate) fn flush_files(&self) {
        for message in self.files.flush() {
            let _ = self.emit(EventKind::RunNotice { message }, None);
        }
    }

    /// Records through `redactor` (the run's secrets) instead of the
    /// credential patterns alone.
    #[must_use]
    pub fn with_redactor(mut self, redactor: Redactor) -> Recorder {
        self.redactor = redactor;
        self
    }

    #[must_use]
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The shared store handle (child runs record through it too).
    #[must_use]
    pub(crate) fn store_handle(&self) -> Arc<Mutex<Store>> {
        self.store.clone()
    }

    /// The live observer, if any (child runs report to it too).
    #[must_use]
    pub fn observer(&self) -> Option<Observer> {
        self.observer.clone()
    }

    /// The store, locked for one operation.
    pub fn store(&self) -> MutexGuard<'_, Store> {
        lock(&self.store)
    }

    /// The run directory, locked for one operation.
    pub fn run_dir(&self) -> MutexGuard<'_, RunDir> {
        lock(&self.run_dir)
    }

    /// Counts as activity for the stall watchdog without recording an
    /// event (a command's output past the event budget).
    pub fn touch(&self) {
        *lock(&self.last_activity) = Instant::now();
    }

    /// Seconds since the last recorded event; 0 while a human gate waits.
    #[must_use]
    pub(crate) fn idle_secs(&self) -> u64 {
        if self.gates_open.load(std::sync::atomic::Ordering::Relaxed) > 0 {
            return 0;
        }
        lock(&self.last_activity).elapsed().as_secs()
    }

    /// A human gate starts waiting; true when it is the only one (the run
    /// becomes blocked).
    pub(crate) fn gate_opened(&self) -> bool {
        *lock(&self.last_activity) = Instant::now();
        self.gates_open
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            == 0
    }

    /// A human gate stops waiting; true when no other gate still waits (the
    /// run is running again).
    pub(crate) fn gate_closed(&self) -> bool {
        *lock(&self.last_activity) = Instant::now();
        self.gates_open
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed)
            == 1
    }

    /// Records that stage `node_id@visit` started running `handler` (in
    /// `branch`, if any), with its `first` event in the same transaction.
    pub(crate) fn start_stage(
        &self,
        node_id: &str,
        visit: u32,
        handler: &str,
        branch: Option<&str>,
        first: &EventKind,
    ) -> Result<(), StoreError> {
        let first = redacted(&self.redactor, first).unwrap_or_else(|| first.clone());
        let (_, event) = self.store().start_stage(
            &self.run_id,
            node_id,
            visit,
            handler,
            branch,
            Some(&first),
        )?;
        if let Some(event) = event {
            self.publish(std::slice::from_ref(&event))?;
        }
        Ok(())
    }

    /// Records one event, with secrets redacted from its text.
    pub fn emit(&self, kind: EventKind, node: Option<(&str, u32)>) -> Result<Event, StoreError> {
        let kind = redacted(&self.redactor, &kind).unwrap_or(kind);
        let event = self.store().append_event(&self.run_id, &kind, node)?;
        self.publish(std::slice::from_ref(&event))?;
        Ok(event)
    }

    /// Commits a stage with its closing events and checkpoint (one
    /// transaction), then mirrors the events to the run directory.
    pub fn commit_stage(&self, commit: &StageCommit<'_>) -> Result<Vec<Event>, StoreError> {
        let events = if commit
            .events
            .iter()
            .any(|(kind, _)| redacted(&self.redactor, kind).is_some())
        {
            let events = commit
                .events
                .iter()
                .map(|(kind, at)| {
                    (
                        redacted(&self.redactor, kind).unwrap_or_else(|| kind.clone()),
                        *at,
                    )
                })
                .collect();
            self.store().commit_stage(&StageCommit {
                events,
                outcome: commit.outcome.clone(),
                checkpoint: commit.checkpoint.clone(),
                ..*commit
            })?
        } else {
            self.store().commit_stage(commit)?
        };
        self.publish(&events)?;
        Ok(events)
    }

    /// Commits a checkpoint with events but no stage (a goal-gate jump).
    pub(crate) fn save_checkpoint(
        &self,
        checkpoint: &str,
        events: &[(EventKind, Option<(&str, u32)>)],
    ) -> Result<Vec<Event>, StoreError> {
        let redacted_events: Vec<_> = events
            .iter()
            .map(|(kind, at)| {
                (
                    redacted(&self.redactor, kind).unwrap_or_else(|| kind.clone()),
                    *at,
                )
            })
            .collect();
        let events = self
            .store()
            .save_checkpoint(&self.run_id, checkpoint, &redacted_events)?;
        self.publish(&events)?;
        Ok(events)
    }

    /// After the database has the events: progress.jsonl, live.json (at most
    /// every [`LIVE_INTERVAL`]), the observer.
    fn publish(&self, events: &[Event]) -> Result<(), StoreError> {
        *lock(&self.last_activity) = Instant::now();
        {
            let mut dir = self.run_dir();
            for event in events {
                dir.append_progress(event)?;
            }
            let urgent = events.iter().any(|e| {
                matches!(
                    e.kind,
                    EventKind::InterviewStarted { .. }
                        | EventKind::RunCompleted { .. }
                        | EventKind::RunFailed { .. }
                        | EventKind::RunCancelled { .. }
                )
            });
            let mut written = lock(&self.live_written);
            let due = written.is_none_or(|at| at.elapsed() >= LIVE_INTERVAL);
            if let (Some(last), true) = (events.last(), urgent || due) {
                *written = Some(Instant::now());
                dir.write_json(
                    "live.json",
                    &json!({
                        "run_id": self.run_id,
                        "seq": last.seq,
                        "ts": last.ts,
                        "event": last.kind.name(),
                        "node_id": last.node_id,
                        "visit": last.visit,
                    }),
                )?;
            }
        }
        if let Some(observer) = &self.observer {
            for event in events {
                observer(event);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Stream;

    fn redactor() -> Redactor {
        Redactor::new(&[("VAULT_TOKEN".into(), "hvs.CAESIabcdefghijklmnop".into())])
    }

    #[test]
    fn output_and_messages_are_recorded_with_secrets_redacted() {
        let out = redacted(
            &redactor(),
            &EventKind::CommandOutput {
                stream: Stream::Stdout,
                text: "token hvs.CAESIabcdefghijklmnop\n".into(),
            },
        );
        assert_eq!(
            out,
            Some(EventKind::CommandOutput {
                stream: Stream::Stdout,
                text: "token [REDACTED]\n".into(),
            })
        );
        let retry = redacted(
            &redactor(),
            &EventKind::StageRetrying {
                attempt: 1,
                delay_ms: 10,
                reason: "push to https://bot:s3cret@example.com failed".into(),
            },
        );
        assert!(
            matches!(retry, Some(EventKind::StageRetrying { reason, .. })
                if reason == "push to https://bot:[REDACTED]@example.com failed"),
        );
    }

    #[test]
    fn an_event_without_secrets_is_recorded_as_it_is() {
        let notice = EventKind::RunNotice {
            message: "nothing to hide".into(),
        };
        assert_eq!(redacted(&redactor(), &notice), None, "no copy was made");
    }
}
