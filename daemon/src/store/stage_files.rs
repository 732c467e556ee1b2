//! A stage's own files in the run directory — `status.json`, a command's
//! `script_invocation.json` and `script_timing.json`, its logs when they
//! are empty — written from the committed record, off the run's critical
//! path (docs/engine.md, "The run directory").
//!
//! The stage's commit stores these files' contents in its row
//! (`stages.files`) in the same transaction as its outcome. Then a
//! [`FileWriter`], one thread per run, writes them while the next stage
//! runs: on a disk, creating files costs more than anything else a short
//! stage does. The engine waits for the writer whenever someone may look
//! (a gate opens, the run ends), and [`Store::restore_stage_files`] writes
//! whatever a crash kept the writer from writing, from the rows, when the
//! run is resumed or the daemon reconciles it.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use rusqlite::params;

use super::{Result, RunDir, Store};
use crate::util::lock::lock;

/// A stage's files by name: the text of each, or `None` for a file that
/// only has to exist (an empty log, which output may have filled since).
pub type StageFiles = BTreeMap<String, Option<String>>;

/// Jobs queued before a stage waits for the writer: a run that outpaces
/// its disk slows down to the disk's pace instead of queueing without
/// bound.
const QUEUE: usize = 256;

/// At most this many write errors are kept to report.
const ERRORS_KEPT: usize = 16;

enum Job {
    Write {
        dir: PathBuf,
        files: StageFiles,
    },
    /// Answered once every job before it is done.
    Flush(std::sync::mpsc::Sender<()>),
}

/// Writes stages' files on a thread of its own, in the order given.
/// Dropping it waits for what is queued.
pub(crate) struct FileWriter {
    jobs: Option<SyncSender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
    errors: Arc<Mutex<Vec<String>>>,
}

impl std::fmt::Debug for FileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileWriter").finish_non_exhaustive()
    }
}

impl FileWriter {
    /// A writer with its thread; if no thread can be started, files are
    /// written by the caller, as they are queued.
    pub(crate) fn start() -> FileWriter {
        let (jobs, queue) = std::sync::mpsc::sync_channel(QUEUE);
        let errors = Arc::new(Mutex::new(Vec::new()));
        let seen = errors.clone();
        let thread = std::thread::Builder::new()
            .name("weft-stage-files".into())
            .spawn(move || work(&queue, &seen))
            .ok();
        FileWriter {
            jobs: thread.is_some().then_some(jobs),
            thread,
            errors,
        }
    }

    /// Queues `files` for `dir` (waiting while the queue is full).
    pub(crate) fn write(&self, dir: PathBuf, files: StageFiles) {
        if files.is_empty() {
            return;
        }
        let job = Job::Write { dir, files };
        let unsent = match &self.jobs {
            Some(jobs) => jobs.send(job).err().map(|e| e.0),
            None => Some(job),
        };
        if let Some(Job::Write { dir, files }) = unsent {
            write_files(&dir, &files, &self.errors);
        }
    }

    /// Waits until every file queued so far is written, and returns the
    /// errors met since the last call.
    pub(crate) fn flush(&self) -> Vec<String> {
        if let Some(jobs) = &self.jobs {
            let (done, wait) = std::sync::mpsc::channel();
            if jobs.send(Job::Flush(done)).is_ok() {
                let _ = wait.recv();
            }
        }
        std::mem::take(&mut *lock(&self.errors))
    }
}

impl Drop for FileWriter {
    fn drop(&mut self) {
        // Closing the queue ends the thread once it has written the rest.
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn work(queue: &Receiver<Job>, errors: &Mutex<Vec<String>>) {
    while let Ok(job) = queue.recv() {
        match job {
            Job::Write { dir, files } => write_files(&dir, &files, errors),
            Job::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

/// Writes `files` into `dir` (made if missing), noting what fails.
fn write_files(dir: &Path, files: &StageFiles, errors: &Mutex<Vec<String>>) {
    let note = |message: String| {
        let mut errors = lock(errors);
        if errors.len() < ERRORS_KEPT {
            errors.push(message);
        }
    };
    if let Err(e) = super::create_private_dir_all(dir) {
        note(format!("could not create {}: {e}", dir.display()));
        return;
    }
    for (name, text) in files {
        // Names come from the engine, never from a workflow; still, one
        // path component only.
        if name.contains('/') || name.starts_with('.') {
            continue;
        }
        let path = dir.join(name);
        let written = match text {
            Some(text) => super::write_atomic(&path, text.as_bytes()).map_err(|e| e.to_string()),
            None => ensure_exists(&path).map_err(|e| e.to_string()),
        };
        if let Err(e) = written {
            note(format!("could not write {}: {e}", path.display()));
        }
    }
}

/// Creates `path` empty unless it exists (a log that output has reached is
/// left as it is).
fn ensure_exists(path: &Path) -> std::io::Result<()> {
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(super::PRIVATE_FILE_MODE)
        .open(path)
    {
        Ok(mut file) => file.flush(),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

impl Store {
    /// The files committed with stage `node_id@visit` of `run_id` (`None`
    /// when it has not committed, or ran before they were stored): what
    /// its directory holds once the writer has written them.
    pub fn committed_stage_files(
        &self,
        run_id: &str,
        node_id: &str,
        visit: u32,
    ) -> Result<Option<StageFiles>> {
        use rusqlite::OptionalExtension;
        let text: Option<String> = self
            .conn
            .prepare_cached(
                "SELECT files FROM stages WHERE run_id = ?1 AND node_id = ?2 AND visit = ?3",
            )?
            .query_row(params![run_id, node_id, visit], |row| row.get(0))
            .optional()?
            .flatten();
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    /// Writes the files of `run_id`'s committed stages that are missing
    /// from `run_dir` (a crash stopped the writer before it wrote them),
    /// from the stages' rows; returns how many files it wrote. Files that
    /// exist are left alone: the writer may have written them, and a log
    /// may hold output.
    pub fn restore_stage_files(&self, run_id: &str, run_dir: &RunDir) -> Result<usize> {
        let mut statement = self.conn.prepare_cached(
            "SELECT node_id, visit, files FROM stages \
             WHERE run_id = ?1 AND files IS NOT NULL ORDER BY rank",
        )?;
        let rows = statement.query_map(params![run_id], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, u32>(1)?,
                row.get::<_, String>(2)?,
            ))
        })?;
        let errors = Mutex::new(Vec::new());
        let mut written = 0;
        for row in rows {
            let (node, visit, text) = row?;
            let Ok(files) = serde_json::from_str::<StageFiles>(&text) else {
                continue;
            };
            let dir = run_dir.node_dir(&node, visit);
            let missing: StageFiles = files
                .into_iter()
                .filter(|(name, _)| !dir.join(name).exists())
                .collect();
            written += missing.len();
            write_files(&dir, &missing, &errors);
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(pairs: &[(&str, Option<&str>)]) -> StageFiles {
        pairs
            .iter()
            .map(|(name, text)| ((*name).to_string(), text.map(str::to_string)))
            .collect()
    }

    #[test]
    fn queued_files_are_written_by_the_time_a_flush_returns() {
        let temp = tempfile::tempdir().expect("temp dir");
        let writer = FileWriter::start();
        let dir = temp.path().join("nodes/build");
        writer.write(
            dir.clone(),
            files(&[("status.json", Some("{}")), ("stdout.log", None)]),
        );
        assert!(writer.flush().is_empty());
        assert_eq!(
            std::fs::read_to_string(dir.join("status.json")).expect("status"),
            "{}"
        );
        assert_eq!(
            std::fs::metadata(dir.join("stdout.log"))
                .expect("log")
                .len(),
            0
        );
    }

    #[test]
    fn an_empty_log_never_replaces_one_that_output_reached() {
        let temp = tempfile::tempdir().expect("temp dir");
        std::fs::write(temp.path().join("stdout.log"), "hello\n").expect("log");
        let writer = FileWriter::start();
        writer.write(temp.path().to_path_buf(), files(&[("stdout.log", None)]));
        drop(writer);
        assert_eq!(
            std::fs::read_to_string(temp.path().join("stdout.log")).expect("log"),
            "hello\n"
        );
    }

    #[test]
    fn a_file_that_cannot_be_written_is_reported_at_the_next_flush() {
        let temp = tempfile::tempdir().expect("temp dir");
        // A file where the stage's directory should be.
        let blocked = temp.path().join("nodes");
        std::fs::write(&blocked, "").expect("file");
        let writer = FileWriter::start();
        writer.write(blocked.join("build"), files(&[("status.json", Some("{}"))]));
        let errors = writer.flush();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("could not create"), "{errors:?}");
        assert!(writer.flush().is_empty(), "reported once");
    }
}
