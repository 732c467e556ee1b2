//! The run directory on disk (`$WEFT_HOME/runs/YYYYMMDD-{run_id}/`), laid
//! out as in Fabro's run-directory reference, and the atomic file write that
//! keeps its files whole.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use super::{Result, StoreError};
use crate::model::Event;

/// Makes temp-file names unique among the threads of one process; the pid
/// makes them unique among processes.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces `path` with `bytes` so that readers see either the old content
/// or the new, never a mix: the bytes go to a temp file in the same
/// directory (`.{name}.{pid}.{n}.tmp`) which is then renamed over the target.
/// The file is private to the user (mode 0600): this writes Weft's own
/// files under `WEFT_HOME`.
///
/// There is deliberately no fsync. Rename is atomic, so a killed process
/// (even SIGKILL) can never leave a torn file; at worst a stray temp file
/// remains. Power loss may lose the latest version of a file, but SQLite is
/// the source of truth and its commits are durable, so everything here can
/// be rebuilt from the database.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| {
        StoreError::io(
            format!("cannot write {}", path.display()),
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file"),
        )
    })?;
    let temp = dir.join(format!(
        ".{}.{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(super::PRIVATE_FILE_MODE)
        .open(&temp)
        .and_then(|mut file| file.write_all(bytes))
        .and_then(|()| std::fs::rename(&temp, path));
    if let Err(e) = written {
        // Best effort: the temp file is garbage whatever went wrong.
        let _ = std::fs::remove_file(&temp);
        return Err(StoreError::io(
            format!("cannot write {}", path.display()),
            e,
        ));
    }
    Ok(())
}

/// Replaces every character outside `[A-Za-z0-9_.-]` with `_`, and never
/// yields `.`, `..` or an empty name, so the result is one safe path
/// component on every platform.
fn path_safe(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() || safe.chars().all(|c| c == '.') {
        // `.` and `..` would name the parent; replace every dot.
        "_".repeat(safe.len().max(1))
    } else {
        safe
    }
}

/// One run's directory. Every write that a reader might observe half-done
/// goes through [`write_atomic`]; `progress.jsonl` and `cli.log` are
/// append-only logs instead.
#[derive(Debug)]
pub struct RunDir {
    root: PathBuf,
    /// `progress.jsonl`, opened in append mode on first use and kept open.
    progress: Option<File>,
}

impl RunDir {
    /// Creates `runs_dir/YYYYMMDD-{run_id}/` (today's UTC date) and its
    /// `nodes/` folder; succeeds if they exist already. The run id is made
    /// path-safe like node ids (a ULID is unchanged).
    pub fn create(runs_dir: &Path, run_id: &str) -> Result<RunDir> {
        // `timestamp()` starts with `YYYY-MM-DD`.
        let date: String = super::timestamp()
            .chars()
            .take(10)
            .filter(|c| *c != '-')
            .collect();
        let root = runs_dir.join(format!("{date}-{}", path_safe(run_id)));
        let nodes = root.join("nodes");
        super::create_private_dir_all(&nodes)
            .map_err(|e| StoreError::io(format!("cannot create {}", nodes.display()), e))?;
        Ok(RunDir {
            root,
            progress: None,
        })
    }

    /// An existing run directory (for resume and inspection). Nothing is
    /// checked or created here: a missing directory shows up as an error on
    /// the first write.
    #[must_use]
    pub fn open(path: impl Into<PathBuf>) -> RunDir {
        RunDir {
            root: path.into(),
            progress: None,
        }
    }

    /// The run directory.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Where a stage's files go: `nodes/{node_id}` for the first visit (and
    /// visit 0), `nodes/{node_id}-visit_{N}` for visit N ≥ 2. The node id is
    /// made path-safe (characters outside `[A-Za-z0-9_.-]` become `_`), so
    /// two ids differing only in such characters share a folder.
    #[must_use]
    pub fn node_dir(&self, node_id: &str, visit: u32) -> PathBuf {
        let name = path_safe(node_id);
        let folder = if visit >= 2 {
            format!("{name}-visit_{visit}")
        } else {
            name
        };
        self.root.join("nodes").join(folder)
    }

    /// [`RunDir::node_dir`], created if missing.
    pub(crate) fn ensure_node_dir(&self, node_id: &str, visit: u32) -> Result<PathBuf> {
        let dir = self.node_dir(node_id, visit);
        super::create_private_dir_all(&dir)
            .map_err(|e| StoreError::io(format!("cannot create {}", dir.display()), e))?;
        Ok(dir)
    }

    /// `relative` under the run directory; only plain relative paths are
    /// accepted, so a write can never land outside it.
    fn resolve(&self, relative: &str) -> Result<PathBuf> {
        let path = Path::new(relative);
        let plain = path.components().all(|c| matches!(c, Component::Normal(_)));
        if !plain || relative.is_empty() {
            return Err(StoreError::io(
                format!("cannot write `{relative}` in {}", self.root.display()),
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "not a plain relative path inside the run directory",
                ),
            ));
        }
        let full = self.root.join(path);
        if let Some(parent) = full.parent() {
            super::create_private_dir_all(parent)
                .map_err(|e| StoreError::io(format!("cannot create {}", parent.display()), e))?;
        }
        Ok(full)
    }

    /// Writes `value` as pretty JSON to `relative` (e.g. `checkpoint.json`,
    /// `nodes/plan/status.json`) atomically, creating parent folders.
    pub(crate) fn write_json(&self, relative: &str, value: &impl Serialize) -> Result<()> {
        let mut bytes = serde_json::to_vec_pretty(value).map_err(|source| StoreError::Json {
            what: format!("{relative} in {}", self.root.display()),
            source,
        })?;
        bytes.push(b'\n');
        write_atomic(&self.resolve(relative)?, &bytes)
    }

    /// Writes `bytes` to `relative` atomically, creating parent folders.
    pub fn write_file(&self, relative: &str, bytes: &[u8]) -> Result<()> {
        write_atomic(&self.resolve(relative)?, bytes)
    }

    /// Appends `event` to `progress.jsonl` as one compact JSON line. The
    /// line goes out in a single write on a file opened in append mode, so
    /// a crash can lose at most the line being written, never a line before.
    pub(crate) fn append_progress(&mut self, event: &Event) -> Result<()> {
        let path = self.root.join("progress.jsonl");
        let mut line = serde_json::to_vec(event).map_err(|source| StoreError::Json {
            what: format!("event {} of run {}", event.seq, event.run_id),
            source,
        })?;
        line.push(b'\n');
        let file = match &mut self.progress {
            Some(file) => file,
            slot => slot.insert(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .mode(super::PRIVATE_FILE_MODE)
                    .open(&path)
                    .map_err(|e| StoreError::io(format!("cannot open {}", path.display()), e))?,
            ),
        };
        file.write_all(&line)
            .map_err(|e| StoreError::io(format!("cannot append to {}", path.display()), e))
    }

    /// Appends `{timestamp} {line}` to `cli.log`.
    pub(crate) fn append_log(&self, line: &str) -> Result<()> {
        let path = self.root.join("cli.log");
        let text = format!("{} {}\n", super::timestamp(), line.trim_end_matches('\n'));
        OpenOptions::new()
            .create(true)
            .append(true)
            .mode(super::PRIVATE_FILE_MODE)
            .open(&path)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .map_err(|e| StoreError::io(format!("cannot append to {}", path.display()), e))
    }

    /// Writes `run.pid` (the pid of the process executing the run).
    pub(crate) fn write_pid(&self, pid: u32) -> Result<()> {
        write_atomic(&self.root.join("run.pid"), format!("{pid}\n").as_bytes())
    }

    /// Removes `run.pid`; a missing file is fine.
    pub(crate) fn remove_pid(&self) -> Result<()> {
        let path = self.root.join("run.pid");
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io(
                format!("cannot remove {}", path.display()),
                e,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EventKind;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("read dir")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }

    #[test]
    fn write_atomic_replaces_content_and_leaves_no_temp_files() {
        let temp = tempfile::tempdir().expect("temp dir");
        let path = temp.path().join("checkpoint.json");
        write_atomic(&path, b"first").expect("first write");
        write_atomic(&path, b"second, longer").expect("second write");
        write_atomic(&path, b"3").expect("third write");
        assert_eq!(std::fs::read(&path).expect("read"), b"3");
        assert_eq!(entries(temp.path()), vec!["checkpoint.json".to_string()]);
    }

    #[test]
    fn write_atomic_into_a_missing_directory_fails_without_leaving_anything() {
        let temp = tempfile::tempdir().expect("temp dir");
        let error = write_atomic(&temp.path().join("missing/x.json"), b"{}")
            .expect_err("the directory does not exist");
        assert_eq!(error.code(), "store.io");
        assert!(entries(temp.path()).is_empty());
    }

    #[test]
    fn run_dir_is_named_by_utc_date_and_run_id() {
        let temp = tempfile::tempdir().expect("temp dir");
        let dir = RunDir::create(temp.path(), "01JABCDEF").expect("create");
        let name = dir
            .path()
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let today: String = crate::store::timestamp()
            .chars()
            .take(10)
            .filter(|c| *c != '-')
            .collect();
        assert_eq!(name, format!("{today}-01JABCDEF"));
        assert!(dir.path().join("nodes").is_dir());
        let reopened = RunDir::open(dir.path());
        assert_eq!(reopened.path(), dir.path());
        let missing = RunDir::open(temp.path().join("nope"));
        assert!(
            missing.write_pid(1).is_err(),
            "writes into a missing run dir fail"
        );
    }

    #[test]
    fn node_dirs_name_later_visits_and_make_ids_path_safe() {
        let temp = tempfile::tempdir().expect("temp dir");
        let dir = RunDir::create(temp.path(), "R").expect("create");
        let nodes = dir.path().join("nodes");
        assert_eq!(dir.node_dir("plan", 1), nodes.join("plan"));
        assert_eq!(dir.node_dir("plan", 2), nodes.join("plan-visit_2"));
        assert_eq!(dir.node_dir("plan", 12), nodes.join("plan-visit_12"));
        assert_eq!(dir.node_dir("a/b\\c d", 1), nodes.join("a_b_c_d"));
        assert_eq!(dir.node_dir("../etc", 1), nodes.join(".._etc"));
        assert_eq!(dir.node_dir("..", 1), nodes.join("__"));
        assert_eq!(dir.node_dir(".", 3), nodes.join("_-visit_3"));
        assert_eq!(dir.node_dir("", 1), nodes.join("_"));
        assert_eq!(
            dir.node_dir("ünïcode.v1-x_y", 1),
            nodes.join("_n_code.v1-x_y")
        );
        let made = dir.ensure_node_dir("plan", 2).expect("ensure");
        assert!(made.is_dir());
    }

    #[test]
    fn files_are_written_inside_the_run_dir_only() {
        let temp = tempfile::tempdir().expect("temp dir");
        let dir = RunDir::create(temp.path(), "R").expect("create");
        dir.write_json(
            "nodes/plan/status.json",
            &serde_json::json!({"status": "succeeded"}),
        )
        .expect("write json");
        let text =
            std::fs::read_to_string(dir.path().join("nodes/plan/status.json")).expect("read back");
        assert!(
            text.contains("\n  \"status\": \"succeeded\""),
            "pretty: {text}"
        );
        dir.write_file("final.patch", b"diff").expect("write file");
        assert_eq!(
            std::fs::read(dir.path().join("final.patch")).expect("read"),
            b"diff"
        );
        for bad in ["../escape", "/abs", "", "a/../../b"] {
            assert!(
                dir.write_file(bad, b"x").is_err(),
                "`{bad}` must be refused"
            );
        }
    }

    #[test]
    fn progress_lines_are_compact_json_and_logs_are_timestamped() {
        let temp = tempfile::tempdir().expect("temp dir");
        let mut dir = RunDir::create(temp.path(), "R").expect("create");
        for seq in 1..=3 {
            let event = Event {
                seq,
                ts: "2026-12-02T12:00:00.000Z".into(),
                run_id: "R".into(),
                node_id: None,
                visit: None,
                kind: EventKind::RunNotice {
                    message: format!("notice {seq}"),
                },
            };
            dir.append_progress(&event).expect("append");
        }
        let text = std::fs::read_to_string(dir.path().join("progress.jsonl")).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let third: Event = serde_json::from_str(lines[2]).expect("parses");
        assert_eq!(third.seq, 3);

        dir.append_log("started").expect("log");
        dir.append_log("done\n").expect("log");
        let log = std::fs::read_to_string(dir.path().join("cli.log")).expect("read log");
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].ends_with("Z started"), "{}", lines[0]);

        dir.write_pid(4242).expect("pid");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("run.pid"))
                .expect("pid file")
                .trim(),
            "4242"
        );
        dir.remove_pid().expect("remove");
        dir.remove_pid()
            .expect("removing a missing pid file is fine");
    }
}
