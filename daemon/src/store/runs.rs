//! The SQLite database: runs, stages, events, questions, blobs, artifacts.

use std::path::{Path, PathBuf};

use std::time::Duration;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSqlOutput, ValueRef};
use rusqlite::{Connection, OpenFlags, OptionalExtension, ToSql, TransactionBehavior, params};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{Home, Result, StoreError, migrations, timestamp};
use crate::model::{Event, EventKind, RunSpend, RunStatus, RunSummary};

impl ToSql for RunStatus {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for RunStatus {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<RunStatus> {
        let text = value.as_str()?;
        RunStatus::parse(text)
            .ok_or_else(|| FromSqlError::Other(format!("unknown run status `{text}`").into()))
    }
}
/// What is known when a run is created.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NewRun {
    pub id: String,
    pub workflow_name: String,
    /// The workflow file, absolute, when the run came from a file.
    pub workflow_path: Option<PathBuf>,
    pub goal: Option<String>,
    pub run_dir: PathBuf,
    pub work_dir: PathBuf,
    /// `--input` values and run options as given, for re-runs and display.
    pub inputs: serde_json::Map<String, serde_json::Value>,
    pub options: serde_json::Value,
    pub labels: Vec<String>,
    pub node_count: u32,
    pub edge_count: u32,
    /// RFC 3339 UTC.
    pub created_at: String,
}

/// A run as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: String,
    pub workflow_name: String,
    pub workflow_path: Option<PathBuf>,
    pub goal: Option<String>,
    pub status: RunStatus,
    pub run_dir: PathBuf,
    pub work_dir: PathBuf,
    pub inputs: serde_json::Map<String, serde_json::Value>,
    pub options: serde_json::Value,
    pub labels: Vec<String>,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub failure_reason: Option<String>,
    /// The pid of the process executing it, while running.
    pub pid: Option<u32>,
    /// The last event's sequence number (0 before any event).
    pub last_seq: u64,
    /// The committed checkpoint, raw (the engine parses and checks it).
    pub checkpoint: Option<String>,
    pub node_count: u32,
    pub edge_count: u32,
    /// When the process executing it started (Linux: clock ticks since
    /// boot), to tell it from a later process that got the same pid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_start: Option<u64>,
    /// What its stages spent on language models; `None` when none called one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<RunSpend>,
    /// Archived by the user: hidden from the app's runs list by default.
    #[serde(default)]
    pub archived: bool,
    /// The nodes whose latest visit failed, in the order they ran: in a run
    /// that succeeded, the failures the default `on_failure="route"` policy
    /// routed past.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_stages: Vec<String>,
}

/// A run's listing line is its record without the bulky parts.
impl From<RunRecord> for RunSummary {
    fn from(r: RunRecord) -> RunSummary {
        let parent = r
            .options
            .get("parent")
            .and_then(|link| serde_json::from_value(link.clone()).ok());
        RunSummary {
            parent,
            llm: r.llm,
            archived: r.archived,
            failed_stages: r.failed_stages,
            id: r.id,
            workflow_name: r.workflow_name,
            workflow_path: r.workflow_path,
            goal: r.goal,
            status: r.status,
            labels: r.labels,
            run_dir: r.run_dir,
            work_dir: r.work_dir,
            created_at: r.created_at,
            started_at: r.started_at,
            finished_at: r.finished_at,
            failure_reason: r.failure_reason,
            last_seq: r.last_seq,
            node_count: r.node_count,
        }
    }
}

/// One stage (node visit) as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct StageRecord {
    pub run_id: String,
    pub node_id: String,
    pub visit: u32,
    /// 1-based execution order within the run.
    pub rank: u32,
    pub handler: String,
    /// `running`, `interrupted`, or an outcome status.
    pub status: String,
    pub attempts: u32,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub duration_ms: Option<u64>,
    pub failure_reason: Option<String>,
    /// The outcome as JSON, once completed.
    pub outcome: Option<serde_json::Value>,
    /// The parallel branch the stage ran in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
}

/// Everything committed when a stage completes, in one transaction.
#[derive(Debug, Clone)]
pub struct StageCommit<'a> {
    pub run_id: &'a str,
    pub node_id: &'a str,
    pub visit: u32,
    pub status: &'a str,
    pub attempts: u32,
    pub duration_ms: u64,
    pub failure_reason: Option<&'a str>,
    pub outcome: serde_json::Value,
    /// The stage's closing events (stage.completed/failed, edge.selected,
    /// checkpoint.saved, ...), each with its node and visit.
    pub events: Vec<(EventKind, Option<(&'a str, u32)>)>,
    /// The checkpoint JSON that names the next node.
    pub checkpoint: String,
}

/// Filters for [`Store::list_runs`] and [`Store::count_runs`]; `None`
/// means "any". The filters combine with AND and are all applied in SQL,
/// before `limit` and `offset`, so a page is never short. The daemon's
/// `run.list`, the app's run list and `weft ps --no-daemon` all filter
/// through it.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub status: Option<RunStatus>,
    /// The workflow's name, exactly.
    pub workflow: Option<String>,
    /// Runs carrying this label.
    pub label: Option<String>,
    /// Substring of goal, workflow name or run id, ignoring ASCII case.
    pub text: Option<String>,
    /// Only archived (`true`) or only unarchived (`false`) runs.
    pub archived: Option<bool>,
    /// At most this many runs.
    pub limit: Option<u32>,
    /// Skip this many of the newest matching runs first (paging).
    pub offset: Option<u32>,
}

/// The one `WHERE` clause of the run list: `?1` status, `?2` workflow name,
/// `?3` lower-case text, `?4` label, `?5` archived; `NULL` matches anything.
const RUN_MATCH: &str = "(?1 IS NULL OR status = ?1) \
     AND (?2 IS NULL OR workflow_name = ?2) \
     AND (?3 IS NULL \
          OR instr(lower(coalesce(goal, '')), ?3) > 0 \
          OR instr(lower(workflow_name), ?3) > 0 \
          OR instr(lower(id), ?3) > 0) \
     AND (?4 IS NULL OR EXISTS (SELECT 1 FROM json_each(runs.labels) WHERE value = ?4)) \
     AND (?5 IS NULL OR archived = ?5)";

impl RunFilter {
    /// `?3` of [`RUN_MATCH`]: the text filter, lower case.
    fn lower_text(&self) -> Option<String> {
        self.text.as_deref().map(str::to_ascii_lowercase)
    }
}

/// Where a human gate's question stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum QuestionStatus {
    /// Asked, waiting for an answer.
    Pending,
    Answered,
    /// The gate's timeout passed; its default (if any) was taken.
    TimedOut,
    /// The run stopped while the question was open.
    Interrupted,
}

impl QuestionStatus {
    /// The snake_case name used in the database (`pending`, `timed_out`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            QuestionStatus::Pending => "pending",
            QuestionStatus::Answered => "answered",
            QuestionStatus::TimedOut => "timed_out",
            QuestionStatus::Interrupted => "interrupted",
        }
    }

    /// Reads a name written by [`QuestionStatus::as_str`].
    #[must_use]
    pub fn parse(text: &str) -> Option<QuestionStatus> {
        [
            QuestionStatus::Pending,
            QuestionStatus::Answered,
            QuestionStatus::TimedOut,
            QuestionStatus::Interrupted,
        ]
        .into_iter()
        .find(|status| status.as_str() == text)
    }
}

impl ToSql for QuestionStatus {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for QuestionStatus {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<QuestionStatus> {
        let text = value.as_str()?;
        QuestionStatus::parse(text)
            .ok_or_else(|| FromSqlError::Other(format!("unknown question status `{text}`").into()))
    }
}

/// A human gate's question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct QuestionRecord {
    pub id: String,
    pub run_id: String,
    pub node_id: String,
    pub visit: u32,
    pub text: String,
    pub options: Vec<String>,
    pub freeform: bool,
    pub status: QuestionStatus,
    pub answer: Option<serde_json::Value>,
    pub asked_at: String,
    pub answered_at: Option<String>,
}

/// A connection to the run database.
///
/// Exactly one process (weftd) writes, through a store from [`Store::open`];
/// every other reader uses [`Store::open_read_only`]. In WAL mode readers
/// never block the writer nor the writer them, and each read method is one
/// SQL statement, so it sees one consistent snapshot.
pub struct Store {
    /// Visible to the sibling modules that add methods to the store
    /// (`artifacts`); nothing outside `store` sees it.
    pub(super) conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// How long a connection waits for a lock before giving up with
/// SQLITE_BUSY. Writes are short, so this is only reached if something is
/// badly wrong.
const BUSY_TIMEOUT: Duration = Duration::from_millis(5000);

/// The nodes of run `runs.id` whose latest visit failed, in the order they
/// ran, as a JSON array: the one definition of a run's failed stages.
macro_rules! failed_stages_sql {
    () => {
        "(SELECT json_group_array(node_id) FROM \
           (SELECT s.node_id FROM stages s WHERE s.run_id = runs.id AND s.status = 'failed' \
              AND NOT EXISTS (SELECT 1 FROM stages t WHERE t.run_id = s.run_id \
                              AND t.node_id = s.node_id AND t.visit > s.visit) \
            ORDER BY s.rank))"
    };
}

/// The `runs` columns in the order [`RunRow::read`] expects.
const RUN_COLUMNS: &str = concat!(
    "id, workflow_name, workflow_path, goal, status, run_dir, work_dir, \
     inputs, options, labels, created_at, started_at, finished_at, failure_reason, pid, \
     last_seq, checkpoint, node_count, edge_count, pid_start, archived, \
     (SELECT json_object('calls', SUM(json_extract(s.outcome, '$.llm.calls')), \
                         'input', SUM(json_extract(s.outcome, '$.llm.usage.input')), \
                         'output', SUM(json_extract(s.outcome, '$.llm.usage.output')), \
                         'cost', SUM(json_extract(s.outcome, '$.llm.cost'))) \
        FROM stages s WHERE s.run_id = runs.id AND json_extract(s.outcome, '$.llm') IS NOT NULL), ",
    failed_stages_sql!()
);

/// The `stages` columns in the order [`StageRow::read`] expects.
const STAGE_COLUMNS: &str = "run_id, node_id, visit, rank, handler, status, attempts, \
     started_at, finished_at, duration_ms, failure_reason, outcome, branch";

/// The `events` columns in the order [`EventRow::read`] expects.
const EVENT_COLUMNS: &str = "seq, ts, event, node_id, visit, properties";

/// The `questions` columns in the order [`QuestionRow::read`] expects.
const QUESTION_COLUMNS: &str = "id, run_id, node_id, visit, text, options, freeform, status, \
     answer, asked_at, answered_at";

/// How many runs an ambiguous prefix lists.
const AMBIGUOUS_LIST_MAX: usize = 10;

/// The fewest characters of a run id that `weft ps` shows (see
/// [`Store::unique_prefix_lengths`]): more when that many are shared with
/// another run, as they are for runs started in the same second.
pub const SHORT_ID_MIN: usize = 8;

/// The run a name of the form `last` or `last~N` (any case) means: the
/// newest run, or the one N places before it. `None` for any other text.
/// ULIDs never contain `L`, so no run id or prefix reads as one of these.
fn newest_offset(name: &str) -> Option<Option<u32>> {
    let (head, back) = match name.split_once('~') {
        Some((head, n)) => (head, n.parse::<u32>().ok()),
        None => (name, Some(0)),
    };
    head.eq_ignore_ascii_case("last").then_some(back)
}

/// How many leading characters `a` and `b` share, ignoring ASCII case.
fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes()
        .zip(b.bytes())
        .take_while(|(x, y)| x.eq_ignore_ascii_case(y))
        .count()
}

impl Store {
    /// Opens (creating if needed) the database of `home` for writing: makes
    /// the home's folders, sets WAL mode, `synchronous=NORMAL` (a killed
    /// process loses nothing committed), foreign keys and a busy timeout,
    /// then applies any pending migrations. Fails with
    /// [`StoreError::SchemaTooNew`] if a newer Weft wrote the database.
    ///
    /// Only the daemon should hold a store opened this way (one writer).
    /// Refuses a database whose write-ahead log was lost
    /// ([`StoreError::WalMissing`], see [`super::wal::inspect`]) rather than
    /// migrate over it, and checkpoints after migrating, so the main file
    /// holds the schema whatever happens to the log.
    pub fn open(home: &Home) -> Result<Store> {
        home.ensure()?;
        super::wal::inspect(home)?;
        let path = home.db_path();
        // Created private before SQLite opens it: SQLite gives the WAL and
        // shared-memory files the database file's mode.
        std::os::unix::fs::OpenOptionsExt::mode(
            std::fs::OpenOptions::new().write(true).create(true),
            super::PRIVATE_FILE_MODE,
        )
        .open(&path)
        .map_err(|e| StoreError::io(format!("cannot create {}", path.display()), e))?;
        let mut conn = Connection::open(&path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Room for every statement of the hot paths, so none is re-prepared.
        conn.set_prepared_statement_cache_capacity(32);
        migrations::migrate(&mut conn, &path)?;
        let store = Store { conn, path };
        store.checkpoint(Checkpoint::Passive)?;
        Ok(store)
    }

    /// Copies the write-ahead log into the main database file (see
    /// [`Checkpoint`]). Readers holding an older snapshot keep the frames
    /// they still need, so a checkpoint may be partial; that is not an error.
    pub fn checkpoint(&self, mode: Checkpoint) -> Result<()> {
        checkpoint_on(&self.conn, mode)
    }

    /// [`Store::checkpoint`] on a connection of its own to the database at
    /// `db`, so it can run on another thread than the store's owner.
    pub fn checkpoint_file(db: &Path, mode: Checkpoint) -> Result<()> {
        let conn = Connection::open_with_flags(
            db,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        checkpoint_on(&conn, mode)
    }

    /// Opens the database of `home` read-only (the app, CLI inspection),
    /// with a busy timeout and without migrating. A missing database is a
    /// [`StoreError::Io`] saying that no runs have been recorded yet; a
    /// database from a newer Weft is [`StoreError::SchemaTooNew`]; one whose
    /// write-ahead log was lost is [`StoreError::WalMissing`].
    pub fn open_read_only(home: &Home) -> Result<Store> {
        super::wal::inspect(home)?;
        let path = home.db_path();
        if !path.is_file() {
            return Err(StoreError::io(
                format!(
                    "no runs have been recorded yet under {} (there is no {})",
                    home.root().display(),
                    path.display()
                ),
                std::io::Error::new(std::io::ErrorKind::NotFound, "database file not found"),
            ));
        }
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.set_prepared_statement_cache_capacity(32);
        let found = migrations::user_version(&conn)?;
        let known = migrations::known_version();
        if found > known {
            return Err(StoreError::SchemaTooNew {
                path: path.display().to_string(),
                found,
                known,
            });
        }
        // A reader cannot migrate (weftd, the one writer, does when it
        // starts): an older schema lacks columns the queries read.
        if found < known {
            return Err(StoreError::SchemaTooOld {
                path: path.display().to_string(),
                found,
                known,
            });
        }
        Ok(Store { conn, path })
    }

    /// The database file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    // ----- runs ------------------------------------------------------------

    /// One consistent view of the database for a group of reads (a page of
    /// runs with its count and questions): a deferred transaction, ended
    /// when the returned guard is dropped. Nothing is written through it.
    ///
    /// # Errors
    /// When SQLite cannot begin the transaction.
    pub fn snapshot(&self) -> Result<rusqlite::Transaction<'_>> {
        Ok(self.conn.unchecked_transaction()?)
    }

    /// Runs `work` in one write transaction, committed when it returns
    /// `Ok` (bulk inserts, as benchmarks and tests make them).
    ///
    /// # Errors
    /// What `work` returns, or SQLite failing to begin or commit.
    pub fn in_transaction<T>(&mut self, work: impl FnOnce(&mut Store) -> Result<T>) -> Result<T> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        match work(self) {
            Ok(value) => {
                self.conn.execute_batch("COMMIT")?;
                Ok(value)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Records a new run with status `queued`. Fails if the id exists.
    pub fn create_run(&mut self, run: &NewRun) -> Result<()> {
        let workflow_path = run.workflow_path.as_deref().map(path_text).transpose()?;
        self.conn
            .prepare_cached(
                "INSERT INTO runs (id, workflow_name, workflow_path, goal, status, run_dir, \
                 work_dir, inputs, options, labels, created_at, node_count, edge_count) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )?
            .execute(params![
                run.id,
                run.workflow_name,
                workflow_path,
                run.goal,
                RunStatus::Queued,
                path_text(&run.run_dir)?,
                path_text(&run.work_dir)?,
                to_json(&run.inputs, || format!("inputs of run {}", run.id))?,
                to_json(&run.options, || format!("options of run {}", run.id))?,
                to_json(&run.labels, || format!("labels of run {}", run.id))?,
                run.created_at,
                run.node_count,
                run.edge_count,
            ])?;
        Ok(())
    }

    /// Marks the run `running` in process `pid`. Sets `started_at` the first
    /// time only, and clears `finished_at` and `failure_reason`, because a
    /// resume continues the same run.
    pub fn mark_running(&mut self, run_id: &str, pid: u32) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE runs SET status = ?2, pid = ?3, started_at = coalesce(started_at, ?4), \
                 finished_at = NULL, failure_reason = NULL, pid_start = ?5 WHERE id = ?1",
            )?
            .execute(params![
                run_id,
                RunStatus::Running,
                pid,
                timestamp(),
                crate::os::process::start_time(pid).map(|t| i64::try_from(t).unwrap_or(i64::MAX))
            ])?;
        expect_run(changed, run_id)
    }

    /// Sets the run's status and failure reason (`None` clears it).
    /// `finished_at` is set exactly when the status is terminal; terminal
    /// and `interrupted` runs have no pid (no process is executing them).
    pub fn set_status(
        &mut self,
        run_id: &str,
        status: RunStatus,
        failure_reason: Option<&str>,
    ) -> Result<()> {
        let finished_at = status.is_terminal().then(timestamp);
        let keep_pid = !(status.is_terminal() || status == RunStatus::Interrupted);
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE runs SET status = ?2, failure_reason = ?3, finished_at = ?4, \
                 pid = CASE WHEN ?5 THEN pid END, \
                 pid_start = CASE WHEN ?5 THEN pid_start END WHERE id = ?1",
            )?
            .execute(params![
                run_id,
                status,
                failure_reason,
                finished_at,
                keep_pid
            ])?;
        expect_run(changed, run_id)
    }

    /// The nodes of `run_id` whose latest visit failed, in the order they
    /// ran (see [`RunRecord::failed_stages`]).
    pub fn failed_stages(&self, run_id: &str) -> Result<Vec<String>> {
        let text: Option<String> = self
            .conn
            .prepare_cached(concat!(
                "SELECT ",
                failed_stages_sql!(),
                " FROM runs WHERE id = ?1"
            ))?
            .query_row([run_id], |row| row.get(0))
            .optional()?
            .flatten();
        match text {
            Some(text) => from_json(&text, || format!("failed stages of run {run_id}")),
            None => Ok(Vec::new()),
        }
    }

    /// The run with exactly this id, if any.
    pub fn run(&self, run_id: &str) -> Result<Option<RunRecord>> {
        let row = self
            .conn
            .prepare_cached(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"))?
            .query_row([run_id], RunRow::read)
            .optional()?;
        row.map(RunRow::into_record).transpose()
    }

    /// The run named by a full id or a unique prefix of one, ignoring ASCII
    /// case (ULIDs are upper case; people type lower case). An id that
    /// matches in full wins even if it prefixes others.
    /// [`StoreError::RunNotFound`] when nothing matches;
    /// [`StoreError::AmbiguousRun`] (listing at most 10 ids, newest first)
    /// when several do.
    ///
    /// `last` names the newest run that is not a sub-workflow's child run,
    /// `last~N` the one N places before it (`last~0` is `last`), in the
    /// order `weft ps` lists them.
    pub fn find_run(&self, id_or_prefix: &str) -> Result<RunRecord> {
        let wanted = id_or_prefix.trim();
        if wanted.is_empty() {
            return Err(StoreError::RunNotFound(id_or_prefix.to_string()));
        }
        if let Some(back) = newest_offset(wanted) {
            let Some(back) = back else {
                return Err(StoreError::RunNotFound(wanted.to_string()));
            };
            let row = self
                .conn
                .prepare_cached(&format!(
                    "SELECT {RUN_COLUMNS} FROM runs \
                     WHERE json_extract(options, '$.parent') IS NULL \
                     ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ?1"
                ))?
                .query_row([back], RunRow::read)
                .optional()?;
            return row
                .ok_or_else(|| StoreError::RunNotFound(wanted.to_string()))?
                .into_record();
        }
        if let Some(run) = self.run(wanted)? {
            return Ok(run);
        }
        // A full scan of the id column; the runs table stays small enough
        // that this is far below anything a person would notice.
        let rows = self
            .conn
            .prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM runs \
                 WHERE substr(upper(id), 1, length(?1)) = upper(?1) \
                 ORDER BY upper(id) = upper(?1) DESC, created_at DESC, id DESC LIMIT ?2"
            ))?
            .query_map(params![wanted, AMBIGUOUS_LIST_MAX as i64 + 1], RunRow::read)?
            .collect::<rusqlite::Result<Vec<RunRow>>>()?;
        let exact = rows
            .first()
            .is_some_and(|row| row.id.eq_ignore_ascii_case(wanted));
        match rows.len() {
            0 => Err(StoreError::RunNotFound(wanted.to_string())),
            _ if exact || rows.len() == 1 => rows
                .into_iter()
                .next()
                .ok_or_else(|| StoreError::RunNotFound(wanted.to_string()))?
                .into_record(),
            _ => Err(StoreError::AmbiguousRun {
                prefix: wanted.to_string(),
                matches: rows
                    .into_iter()
                    .take(AMBIGUOUS_LIST_MAX)
                    .map(|row| row.id)
                    .collect(),
            }),
        }
    }

    /// For each of `ids`, the length of its shortest prefix that no other
    /// recorded run shares, at least [`SHORT_ID_MIN`] (and at most the id's
    /// length): the form `weft ps` shows, which every command taking a run
    /// accepts. Runs started in the same millisecond share 10 characters,
    /// so those get longer prefixes. Two indexed lookups per id.
    pub fn unique_prefix_lengths(&self, ids: &[&str]) -> Result<Vec<usize>> {
        let mut before = self
            .conn
            .prepare_cached("SELECT id FROM runs WHERE id < ?1 ORDER BY id DESC LIMIT 1")?;
        let mut after = self
            .conn
            .prepare_cached("SELECT id FROM runs WHERE id > ?1 ORDER BY id LIMIT 1")?;
        let mut lengths = Vec::with_capacity(ids.len());
        for id in ids {
            let mut shared = 0;
            for statement in [&mut before, &mut after] {
                let neighbour: Option<String> =
                    statement.query_row([id], |row| row.get(0)).optional()?;
                if let Some(other) = neighbour {
                    shared = shared.max(common_prefix(id, &other));
                }
            }
            lengths.push((shared + 1).max(SHORT_ID_MIN).min(id.len()));
        }
        Ok(lengths)
    }

    /// Runs matching `filter`, newest first (`created_at`, then id,
    /// descending). The text filter folds ASCII case only.
    pub fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>> {
        let limit = filter.limit.map_or(-1, i64::from);
        let offset = i64::from(filter.offset.unwrap_or(0));
        let f = filter;
        let rows = self
            .conn
            .prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE {RUN_MATCH} \
                 ORDER BY created_at DESC, id DESC LIMIT ?6 OFFSET ?7"
            ))?
            .query_map(
                params![
                    f.status,
                    f.workflow,
                    f.lower_text(),
                    f.label,
                    f.archived,
                    limit,
                    offset
                ],
                RunRow::read,
            )?
            .collect::<rusqlite::Result<Vec<RunRow>>>()?;
        rows.into_iter().map(RunRow::into_record).collect()
    }

    /// How many runs match `filter`, ignoring its `limit` and `offset`.
    pub fn count_runs(&self, filter: &RunFilter) -> Result<u64> {
        let f = filter;
        let total: i64 = self
            .conn
            .prepare_cached(&format!("SELECT count(*) FROM runs WHERE {RUN_MATCH}"))?
            .query_row(
                params![f.status, f.workflow, f.lower_text(), f.label, f.archived],
                |row| row.get(0),
            )?;
        Ok(u64::try_from(total).unwrap_or(0))
    }

    /// Archives (or unarchives) run `run_id`. Errors: [`StoreError::RunNotFound`].
    pub fn set_archived(&mut self, run_id: &str, archived: bool) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached("UPDATE runs SET archived = ?2 WHERE id = ?1")?
            .execute(params![run_id, archived])?;
        if changed == 0 {
            return Err(StoreError::RunNotFound(run_id.to_string()));
        }
        Ok(())
    }

    // ----- stages ----------------------------------------------------------

    /// Records that stage `node_id@visit` started running `handler` and
    /// returns its rank (1-based execution order in the run). A row that
    /// exists already, left `running` or `interrupted` by a process that
    /// died mid-stage, is reset to a fresh start and keeps its rank, so a
    /// re-run stage stays where it first ran.
    pub fn stage_started(
        &mut self,
        run_id: &str,
        node_id: &str,
        visit: u32,
        handler: &str,
    ) -> Result<u32> {
        self.stage_started_in(run_id, node_id, visit, handler, None)
    }

    /// [`Store::stage_started`] for a stage of a parallel branch.
    pub fn stage_started_in(
        &mut self,
        run_id: &str,
        node_id: &str,
        visit: u32,
        handler: &str,
        branch: Option<&str>,
    ) -> Result<u32> {
        let now = timestamp();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let existing: Option<u32> = tx
            .prepare_cached(
                "SELECT rank FROM stages WHERE run_id = ?1 AND node_id = ?2 AND visit = ?3",
            )?
            .query_row(params![run_id, node_id, visit], |row| row.get(0))
            .optional()?;
        let rank = if let Some(rank) = existing {
            tx.prepare_cached(
                "UPDATE stages SET handler = ?4, status = 'running', attempts = 0, \
                 started_at = ?5, finished_at = NULL, duration_ms = NULL, \
                 failure_reason = NULL, outcome = NULL, branch = ?6 \
                 WHERE run_id = ?1 AND node_id = ?2 AND visit = ?3",
            )?
            .execute(params![run_id, node_id, visit, handler, now, branch])?;
            rank
        } else {
            let rank: u32 = tx
                .prepare_cached("SELECT coalesce(max(rank), 0) + 1 FROM stages WHERE run_id = ?1")?
                .query_row([run_id], |row| row.get(0))?;
            tx.prepare_cached(
                "INSERT INTO stages (run_id, node_id, visit, rank, handler, status, attempts, \
                 started_at, branch) VALUES (?1, ?2, ?3, ?4, ?5, 'running', 0, ?6, ?7)",
            )?
            .execute(params![run_id, node_id, visit, rank, handler, now, branch])?;
            rank
        };
        tx.commit()?;
        Ok(rank)
    }

    /// Records how many attempts the stage has made so far.
    pub fn set_stage_attempts(
        &mut self,
        run_id: &str,
        node_id: &str,
        visit: u32,
        attempts: u32,
    ) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE stages SET attempts = ?4 WHERE run_id = ?1 AND node_id = ?2 AND visit = ?3",
            )?
            .execute(params![run_id, node_id, visit, attempts])?;
        expect_stage(changed, run_id, node_id, visit)
    }

    /// Completes a stage durably. In ONE immediate transaction it updates
    /// the stage row (status, attempts, finish time, duration, failure
    /// reason, outcome), appends the closing events with consecutive
    /// sequence numbers, and stores the checkpoint that names the next node.
    ///
    /// This is the engine's core durability invariant: after a crash either
    /// all of it is in the database or none of it is, so resume never finds
    /// a completed stage without its checkpoint (which would run it twice)
    /// or a checkpoint without its stage. Call it before the next stage
    /// starts. [`StoreError::StageNotFound`] if [`Store::stage_started`] was
    /// never called for this stage; nothing is written then.
    pub fn commit_stage(&mut self, commit: &StageCommit<'_>) -> Result<Vec<Event>> {
        let now = timestamp();
        let outcome = to_json(&commit.outcome, || {
            format!(
                "outcome of {}@{} in run {}",
                commit.node_id, commit.visit, commit.run_id
            )
        })?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let changed = tx
            .prepare_cached(
                "UPDATE stages SET status = ?4, attempts = ?5, finished_at = ?6, \
                 duration_ms = ?7, failure_reason = ?8, outcome = ?9 \
                 WHERE run_id = ?1 AND node_id = ?2 AND visit = ?3",
            )?
            .execute(params![
                commit.run_id,
                commit.node_id,
                commit.visit,
                commit.status,
                commit.attempts,
                now,
                U64(commit.duration_ms),
                commit.failure_reason,
                outcome,
            ])?;
        expect_stage(changed, commit.run_id, commit.node_id, commit.visit)?;
        let events = insert_events(&tx, commit.run_id, &now, &commit.events)?;
        set_checkpoint(&tx, commit.run_id, &commit.checkpoint, &events)?;
        tx.commit()?;
        Ok(events)
    }

    /// Like [`Store::commit_stage`] without a stage: stores `checkpoint` and
    /// appends `events` in one transaction (for jumps that complete no
    /// stage).
    pub fn save_checkpoint(
        &mut self,
        run_id: &str,
        checkpoint: &str,
        events: &[(EventKind, Option<(&str, u32)>)],
    ) -> Result<Vec<Event>> {
        let now = timestamp();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let events = insert_events(&tx, run_id, &now, events)?;
        set_checkpoint(&tx, run_id, checkpoint, &events)?;
        tx.commit()?;
        Ok(events)
    }

    /// Marks the run's stages still `running` as `interrupted` (their process
    /// died) and returns how many there were.
    pub fn interrupt_running_stages(&mut self, run_id: &str) -> Result<u32> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE stages SET status = 'interrupted' \
                 WHERE run_id = ?1 AND status = 'running'",
            )?
            .execute([run_id])?;
        Ok(u32::try_from(changed).unwrap_or(u32::MAX))
    }

    /// The run's stages in execution order (by rank).
    pub fn stages(&self, run_id: &str) -> Result<Vec<StageRecord>> {
        let rows = self
            .conn
            .prepare_cached(&format!(
                "SELECT {STAGE_COLUMNS} FROM stages WHERE run_id = ?1 ORDER BY rank"
            ))?
            .query_map([run_id], StageRow::read)?
            .collect::<rusqlite::Result<Vec<StageRow>>>()?;
        rows.into_iter().map(StageRow::into_record).collect()
    }

    // ----- events ----------------------------------------------------------

    /// Appends one event (see [`Store::append_events`]).
    pub fn append_event(
        &mut self,
        run_id: &str,
        kind: &EventKind,
        node: Option<(&str, u32)>,
    ) -> Result<Event> {
        let now = timestamp();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let seq = last_seq(&tx, run_id)? + 1;
        let event = insert_event(&tx, run_id, seq, &now, kind, node)?;
        set_last_seq(&tx, run_id, seq)?;
        tx.commit()?;
        Ok(event)
    }

    /// Appends `events` in one transaction, numbered after the run's last
    /// event: sequence numbers are 1-based and gap-free across calls. All
    /// share one timestamp, the time they were recorded. Returns the events
    /// as stored.
    pub fn append_events(
        &mut self,
        run_id: &str,
        events: &[(EventKind, Option<(&str, u32)>)],
    ) -> Result<Vec<Event>> {
        let now = timestamp();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let stored = insert_events(&tx, run_id, &now, events)?;
        if let Some(last) = stored.last() {
            set_last_seq(&tx, run_id, last.seq)?;
        }
        tx.commit()?;
        Ok(stored)
    }

    /// The run's events with `seq > after_seq`, ascending, at most `limit`.
    /// An `after_seq` beyond every stored seq (even beyond SQLite's integer
    /// range) gives an empty list. A stored event that no longer parses is a
    /// [`StoreError::Json`] naming its run and seq.
    pub fn events(&self, run_id: &str, after_seq: u64, limit: Option<u32>) -> Result<Vec<Event>> {
        let limit = limit.map_or(-1, i64::from);
        // Seqs are stored as SQLite integers: nothing lies beyond i64::MAX.
        let after_seq = U64(after_seq.min(i64::MAX.unsigned_abs()));
        let rows = self
            .conn
            .prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS} FROM events WHERE run_id = ?1 AND seq > ?2 \
                 ORDER BY seq LIMIT ?3"
            ))?
            .query_map(params![run_id, after_seq, limit], EventRow::read)?
            .collect::<rusqlite::Result<Vec<EventRow>>>()?;
        rows.into_iter().map(|row| row.into_event(run_id)).collect()
    }

    /// The run's events named `name` (e.g. `checkpoint.saved`), ascending.
    pub fn events_named(&self, run_id: &str, name: &str) -> Result<Vec<Event>> {
        let rows = self
            .conn
            .prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS} FROM events WHERE run_id = ?1 AND event = ?2 \
                 ORDER BY seq"
            ))?
            .query_map(params![run_id, name], EventRow::read)?
            .collect::<rusqlite::Result<Vec<EventRow>>>()?;
        rows.into_iter().map(|row| row.into_event(run_id)).collect()
    }

    // ----- questions -------------------------------------------------------

    /// Records a human gate's question. Fails if the id exists.
    pub fn insert_question(&mut self, q: &QuestionRecord) -> Result<()> {
        let answer = q
            .answer
            .as_ref()
            .map(|a| to_json(a, || format!("answer to question {}", q.id)))
            .transpose()?;
        self.conn
            .prepare_cached(&format!(
                "INSERT INTO questions ({QUESTION_COLUMNS}) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
            ))?
            .execute(params![
                q.id,
                q.run_id,
                q.node_id,
                q.visit,
                q.text,
                to_json(&q.options, || format!("options of question {}", q.id))?,
                q.freeform,
                q.status,
                answer,
                q.asked_at,
                q.answered_at,
            ])?;
        Ok(())
    }

    /// Closes question `id` with `status` and `answer`, stamping
    /// `answered_at`. [`StoreError::QuestionNotFound`] if there is no such
    /// question.
    pub fn answer_question(
        &mut self,
        id: &str,
        status: QuestionStatus,
        answer: Option<&serde_json::Value>,
    ) -> Result<()> {
        let answer = answer
            .map(|a| to_json(a, || format!("answer to question {id}")))
            .transpose()?;
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE questions SET status = ?2, answer = ?3, answered_at = ?4 WHERE id = ?1",
            )?
            .execute(params![id, status, answer, timestamp()])?;
        if changed == 0 {
            return Err(StoreError::QuestionNotFound(id.to_string()));
        }
        Ok(())
    }

    /// The question with this id, if any.
    pub fn question(&self, id: &str) -> Result<Option<QuestionRecord>> {
        let row = self
            .conn
            .prepare_cached(&format!(
                "SELECT {QUESTION_COLUMNS} FROM questions WHERE id = ?1"
            ))?
            .query_row([id], QuestionRow::read)
            .optional()?;
        row.map(QuestionRow::into_record).transpose()
    }

    /// Questions of one run (or of all runs), oldest first; only the
    /// pending ones if `pending_only`.
    pub fn questions(
        &self,
        run_id: Option<&str>,
        pending_only: bool,
    ) -> Result<Vec<QuestionRecord>> {
        let rows = self
            .conn
            .prepare_cached(&format!(
                "SELECT {QUESTION_COLUMNS} FROM questions \
                 WHERE (?1 IS NULL OR run_id = ?1) AND (NOT ?2 OR status = 'pending') \
                 ORDER BY asked_at, id"
            ))?
            .query_map(params![run_id, pending_only], QuestionRow::read)?
            .collect::<rusqlite::Result<Vec<QuestionRow>>>()?;
        rows.into_iter().map(QuestionRow::into_record).collect()
    }

    // ----- blobs -----------------------------------------------------------

    /// Records that blob `hash` (lowercase hex) of `size` bytes exists;
    /// recording it again changes nothing.
    pub fn record_blob(&mut self, hash: &str, size: u64) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT OR IGNORE INTO blobs (hash, size, created_at) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![hash, U64(size), timestamp()])?;
        Ok(())
    }
}

// ----- helpers ---------------------------------------------------------------

/// How much a checkpoint does (SQLite's `wal_checkpoint` modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checkpoint {
    /// Copies what it can without waiting for readers or writers: for an
    /// idle daemon, never blocks.
    Passive,
    /// Waits (up to the busy timeout) for readers, copies everything and
    /// empties the log: when the daemon stops.
    Truncate,
}

fn checkpoint_on(conn: &Connection, mode: Checkpoint) -> Result<()> {
    let sql = match mode {
        Checkpoint::Passive => "PRAGMA wal_checkpoint(PASSIVE)",
        Checkpoint::Truncate => "PRAGMA wal_checkpoint(TRUNCATE)",
    };
    // One row: (busy, frames in the log, frames checkpointed); a busy
    // reader only leaves the checkpoint partial.
    conn.query_row(sql, [], |_| Ok(()))?;
    Ok(())
}

/// A `u64` as an SQLite integer (which is signed). Seqs, durations and sizes
/// never get near `i64::MAX`; one that did would be an error, not a wrap.
#[derive(Debug, Clone, Copy)]
struct U64(u64);

impl ToSql for U64 {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        i64::try_from(self.0)
            .map(ToSqlOutput::from)
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
    }
}

impl FromSql for U64 {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<U64> {
        let n = value.as_i64()?;
        u64::try_from(n)
            .map(U64)
            .map_err(|_| FromSqlError::OutOfRange(n))
    }
}

/// A path as database text. Non-UTF-8 paths are refused rather than stored
/// lossily, since a mangled work dir would later send a resume elsewhere.
fn path_text(path: &Path) -> Result<&str> {
    path.to_str().ok_or_else(|| {
        StoreError::io(
            format!("cannot record the path {}", path.display()),
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the path is not valid UTF-8",
            ),
        )
    })
}

/// `value` as compact JSON text.
fn to_json(value: &impl Serialize, what: impl FnOnce() -> String) -> Result<String> {
    serde_json::to_string(value).map_err(|source| StoreError::Json {
        what: what(),
        source,
    })
}

/// JSON text read back from a column.
fn from_json<T: DeserializeOwned>(text: &str, what: impl FnOnce() -> String) -> Result<T> {
    serde_json::from_str(text).map_err(|source| StoreError::Json {
        what: what(),
        source,
    })
}

fn expect_run(changed: usize, run_id: &str) -> Result<()> {
    if changed == 0 {
        return Err(StoreError::RunNotFound(run_id.to_string()));
    }
    Ok(())
}

fn expect_stage(changed: usize, run_id: &str, node_id: &str, visit: u32) -> Result<()> {
    if changed == 0 {
        return Err(StoreError::StageNotFound(format!(
            "{node_id}@{visit} in run {run_id}"
        )));
    }
    Ok(())
}

/// The run's last event seq; [`StoreError::RunNotFound`] if there is no run.
fn last_seq(conn: &Connection, run_id: &str) -> Result<u64> {
    conn.prepare_cached("SELECT last_seq FROM runs WHERE id = ?1")?
        .query_row([run_id], |row| row.get::<_, U64>(0).map(|seq| seq.0))
        .optional()?
        .ok_or_else(|| StoreError::RunNotFound(run_id.to_string()))
}

fn set_last_seq(conn: &Connection, run_id: &str, seq: u64) -> Result<()> {
    conn.prepare_cached("UPDATE runs SET last_seq = ?2 WHERE id = ?1")?
        .execute(params![run_id, U64(seq)])?;
    Ok(())
}

/// Stores the checkpoint and, if events were appended, the new last seq.
fn set_checkpoint(
    conn: &Connection,
    run_id: &str,
    checkpoint: &str,
    events: &[Event],
) -> Result<()> {
    let changed = conn
        .prepare_cached(
            "UPDATE runs SET checkpoint = ?2, last_seq = coalesce(?3, last_seq) WHERE id = ?1",
        )?
        .execute(params![
            run_id,
            checkpoint,
            events.last().map(|e| U64(e.seq))
        ])?;
    expect_run(changed, run_id)
}

/// Inserts `events` after the run's last seq (inside the caller's
/// transaction, which must also update `runs.last_seq`).
fn insert_events(
    conn: &Connection,
    run_id: &str,
    ts: &str,
    events: &[(EventKind, Option<(&str, u32)>)],
) -> Result<Vec<Event>> {
    if events.is_empty() {
        return Ok(Vec::new());
    }
    let mut seq = last_seq(conn, run_id)?;
    let mut stored = Vec::with_capacity(events.len());
    for (kind, node) in events {
        seq += 1;
        stored.push(insert_event(conn, run_id, seq, ts, kind, *node)?);
    }
    Ok(stored)
}

/// Inserts one event row and returns the event.
fn insert_event(
    conn: &Connection,
    run_id: &str,
    seq: u64,
    ts: &str,
    kind: &EventKind,
    node: Option<(&str, u32)>,
) -> Result<Event> {
    let properties = to_json(&kind.properties(), || {
        format!("event {seq} of run {run_id}")
    })?;
    conn.prepare_cached(
        "INSERT INTO events (run_id, seq, ts, event, node_id, visit, properties) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        run_id,
        U64(seq),
        ts,
        kind.name(),
        node.map(|(id, _)| id),
        node.map(|(_, visit)| visit),
        properties,
    ])?;
    Ok(Event {
        seq,
        ts: ts.to_string(),
        run_id: run_id.to_string(),
        node_id: node.map(|(id, _)| id.to_string()),
        visit: node.map(|(_, visit)| visit),
        kind: kind.clone(),
    })
}

/// A `runs` row as stored, before its JSON columns are parsed (which can
/// fail with an error naming the run, outside rusqlite's row callback).
struct RunRow {
    id: String,
    workflow_name: String,
    workflow_path: Option<String>,
    goal: Option<String>,
    status: RunStatus,
    run_dir: String,
    work_dir: String,
    inputs: String,
    options: String,
    labels: String,
    created_at: String,
    started_at: Option<String>,
    finished_at: Option<String>,
    failure_reason: Option<String>,
    pid: Option<u32>,
    last_seq: u64,
    checkpoint: Option<String>,
    node_count: u32,
    edge_count: u32,
    pid_start: Option<u64>,
    archived: bool,
    llm: Option<String>,
    failed_stages: Option<String>,
}

impl RunRow {
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
        Ok(RunRow {
            id: row.get(0)?,
            workflow_name: row.get(1)?,
            workflow_path: row.get(2)?,
            goal: row.get(3)?,
            status: row.get(4)?,
            run_dir: row.get(5)?,
            work_dir: row.get(6)?,
            inputs: row.get(7)?,
            options: row.get(8)?,
            labels: row.get(9)?,
            created_at: row.get(10)?,
            started_at: row.get(11)?,
            finished_at: row.get(12)?,
            failure_reason: row.get(13)?,
            pid: row.get(14)?,
            last_seq: row.get::<_, U64>(15)?.0,
            checkpoint: row.get(16)?,
            node_count: row.get(17)?,
            edge_count: row.get(18)?,
            pid_start: row.get::<_, Option<U64>>(19)?.map(|v| v.0),
            archived: row.get(20)?,
            llm: row.get(21)?,
            failed_stages: row.get(22)?,
        })
    }

    fn into_record(self) -> Result<RunRecord> {
        let id = self.id;
        let failed_stages = match &self.failed_stages {
            Some(text) => from_json(text, || format!("failed stages of run {id}"))?,
            None => Vec::new(),
        };
        Ok(RunRecord {
            inputs: from_json(&self.inputs, || format!("inputs of run {id}"))?,
            options: from_json(&self.options, || format!("options of run {id}"))?,
            labels: from_json(&self.labels, || format!("labels of run {id}"))?,
            id,
            workflow_name: self.workflow_name,
            workflow_path: self.workflow_path.map(PathBuf::from),
            goal: self.goal,
            status: self.status,
            run_dir: PathBuf::from(self.run_dir),
            work_dir: PathBuf::from(self.work_dir),
            created_at: self.created_at,
            started_at: self.started_at,
            finished_at: self.finished_at,
            failure_reason: self.failure_reason,
            pid: self.pid,
            last_seq: self.last_seq,
            checkpoint: self.checkpoint,
            node_count: self.node_count,
            edge_count: self.edge_count,
            pid_start: self.pid_start,
            llm: self.llm.as_deref().and_then(spend_of),
            archived: self.archived,
            failed_stages,
        })
    }
}

/// The spend the runs query sums up (`{"calls":…,"input":…,…}`, with
/// nulls when no stage called a model).
fn spend_of(json: &str) -> Option<RunSpend> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let int = |k: &str| v[k].as_f64().map(|n| n.max(0.0) as u64);
    Some(RunSpend {
        calls: int("calls")?,
        input_tokens: int("input").unwrap_or(0),
        output_tokens: int("output").unwrap_or(0),
        cost: v["cost"].as_f64().unwrap_or(0.0),
    })
}

/// A `stages` row as stored.
struct StageRow {
    record: StageRecord,
    outcome: Option<String>,
}

impl StageRow {
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<StageRow> {
        Ok(StageRow {
            record: StageRecord {
                run_id: row.get(0)?,
                node_id: row.get(1)?,
                visit: row.get(2)?,
                rank: row.get(3)?,
                handler: row.get(4)?,
                status: row.get(5)?,
                attempts: row.get(6)?,
                started_at: row.get(7)?,
                finished_at: row.get(8)?,
                duration_ms: row.get::<_, Option<U64>>(9)?.map(|d| d.0),
                failure_reason: row.get(10)?,
                outcome: None,
                branch: row.get(12)?,
            },
            outcome: row.get(11)?,
        })
    }

    fn into_record(self) -> Result<StageRecord> {
        let mut record = self.record;
        if let Some(text) = self.outcome {
            record.outcome = Some(from_json(&text, || {
                format!(
                    "outcome of {}@{} in run {}",
                    record.node_id, record.visit, record.run_id
                )
            })?);
        }
        Ok(record)
    }
}

/// An `events` row as stored.
struct EventRow {
    seq: u64,
    ts: String,
    event: String,
    node_id: Option<String>,
    visit: Option<u32>,
    properties: String,
}

impl EventRow {
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<EventRow> {
        Ok(EventRow {
            seq: row.get::<_, U64>(0)?.0,
            ts: row.get(1)?,
            event: row.get(2)?,
            node_id: row.get(3)?,
            visit: row.get(4)?,
            properties: row.get(5)?,
        })
    }

    /// Rebuilds the typed event; a row that does not parse (edited by hand,
    /// or written by a build with other event types) is an error naming it.
    fn into_event(self, run_id: &str) -> Result<Event> {
        let seq = self.seq;
        let what = || format!("event {seq} ({}) of run {run_id}", self.event);
        let properties: serde_json::Value = from_json(&self.properties, what)?;
        let kind =
            EventKind::from_parts(&self.event, properties).map_err(|source| StoreError::Json {
                what: what(),
                source,
            })?;
        Ok(Event {
            seq,
            ts: self.ts,
            run_id: run_id.to_string(),
            node_id: self.node_id,
            visit: self.visit,
            kind,
        })
    }
}

/// A `questions` row as stored.
struct QuestionRow {
    record: QuestionRecord,
    options: String,
    answer: Option<String>,
}

impl QuestionRow {
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<QuestionRow> {
        Ok(QuestionRow {
            record: QuestionRecord {
                id: row.get(0)?,
                run_id: row.get(1)?,
                node_id: row.get(2)?,
                visit: row.get(3)?,
                text: row.get(4)?,
                options: Vec::new(),
                freeform: row.get(6)?,
                status: row.get(7)?,
                answer: None,
                asked_at: row.get(9)?,
                answered_at: row.get(10)?,
            },
            options: row.get(5)?,
            answer: row.get(8)?,
        })
    }

    fn into_record(self) -> Result<QuestionRecord> {
        let mut record = self.record;
        let id = record.id.clone();
        record.options = from_json(&self.options, || format!("options of question {id}"))?;
        if let Some(text) = self.answer {
            record.answer = Some(from_json(&text, || format!("answer to question {id}"))?);
        }
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Outcome, Status};

    fn home() -> (tempfile::TempDir, Home) {
        let temp = tempfile::tempdir().expect("temp dir");
        let home = Home::at(temp.path().join("home"));
        (temp, home)
    }

    fn new_run(id: &str, workflow: &str, goal: &str, created_at: &str) -> NewRun {
        let mut inputs = serde_json::Map::new();
        inputs.insert("branch".into(), serde_json::json!("main"));
        NewRun {
            id: id.into(),
            workflow_name: workflow.into(),
            workflow_path: Some(PathBuf::from(format!("/work/{workflow}.fabro"))),
            goal: Some(goal.into()),
            run_dir: PathBuf::from(format!("/home/runs/{id}")),
            work_dir: PathBuf::from("/work"),
            inputs,
            options: serde_json::json!({"dry_run": false}),
            labels: vec!["nightly".into()],
            node_count: 4,
            edge_count: 3,
            created_at: created_at.into(),
        }
    }

    fn notice(n: usize) -> EventKind {
        EventKind::RunNotice {
            message: format!("notice {n}"),
        }
    }

    fn seqs(events: &[Event]) -> Vec<u64> {
        events.iter().map(|e| e.seq).collect()
    }

    #[test]
    fn run_status_names_round_trip_and_only_three_are_terminal() {
        for status in RunStatus::ALL {
            assert_eq!(RunStatus::parse(status.as_str()), Some(status));
            let json = serde_json::to_value(status).expect("serialises");
            assert_eq!(json, serde_json::json!(status.as_str()), "serde agrees");
        }
        assert_eq!(RunStatus::parse(" Failed "), Some(RunStatus::Failed));
        assert_eq!(RunStatus::parse("done"), None);
        let terminal: Vec<RunStatus> = RunStatus::ALL
            .into_iter()
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(
            terminal,
            [
                RunStatus::Succeeded,
                RunStatus::Failed,
                RunStatus::Cancelled
            ]
        );
    }

    #[test]
    fn migrations_run_once_and_reopening_is_a_no_op() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        assert_eq!(store.path(), home.db_path());
        assert_eq!(
            migrations::user_version(&store.conn).expect("version"),
            migrations::known_version()
        );
        store
            .create_run(&new_run("R1", "wf", "goal", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        drop(store);
        let store = Store::open(&home).expect("reopen");
        assert_eq!(
            migrations::user_version(&store.conn).expect("version"),
            migrations::known_version()
        );
        assert!(store.run("R1").expect("read").is_some(), "data survives");
        let journal: String = store
            .conn
            .pragma_query_value(None, "journal_mode", |row| row.get(0))
            .expect("journal mode");
        assert_eq!(journal, "wal");
    }

    #[test]
    fn a_database_from_a_newer_weft_is_refused() {
        let (_temp, home) = home();
        drop(Store::open(&home).expect("open"));
        let conn = Connection::open(home.db_path()).expect("raw open");
        conn.pragma_update(None, "user_version", 99)
            .expect("bump version");
        drop(conn);
        let error = Store::open(&home).expect_err("too new");
        assert!(
            matches!(error, StoreError::SchemaTooNew { found: 99, .. }),
            "{error}"
        );
        let error = Store::open_read_only(&home).expect_err("too new");
        assert_eq!(error.code(), "store.schema_too_new");
    }

    #[test]
    fn read_only_open_of_a_fresh_home_says_no_runs_yet() {
        let (_temp, home) = home();
        let error = Store::open_read_only(&home).expect_err("no database");
        assert_eq!(error.code(), "store.io");
        assert!(
            error.to_string().contains("no runs have been recorded yet"),
            "{error}"
        );
        assert!(!home.db_path().exists(), "a reader creates nothing");
    }

    #[test]
    fn runs_round_trip_and_follow_their_lifecycle() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        let new = new_run("R1", "wf", "ship it", "2026-01-01T00:00:00.000Z");
        store.create_run(&new).expect("create");
        assert!(store.create_run(&new).is_err(), "ids are unique");

        let run = store.run("R1").expect("read").expect("exists");
        assert_eq!(run.status, RunStatus::Queued);
        assert_eq!(run.inputs, new.inputs);
        assert_eq!(run.options, new.options);
        assert_eq!(run.labels, new.labels);
        assert_eq!(run.workflow_path, new.workflow_path);
        assert_eq!((run.node_count, run.edge_count, run.last_seq), (4, 3, 0));
        assert_eq!(run.started_at, None);

        store.mark_running("R1", 77).expect("running");
        let run = store.run("R1").expect("read").expect("exists");
        assert_eq!((run.status, run.pid), (RunStatus::Running, Some(77)));
        let started = run.started_at.clone().expect("started");

        store
            .set_status("R1", RunStatus::Failed, Some("boom"))
            .expect("failed");
        let run = store.run("R1").expect("read").expect("exists");
        assert_eq!(run.status, RunStatus::Failed);
        assert_eq!(run.failure_reason.as_deref(), Some("boom"));
        assert!(run.finished_at.is_some());
        assert_eq!(run.pid, None, "a finished run has no process");

        // A resume reuses the run: started_at stays, the ending is cleared.
        store.mark_running("R1", 78).expect("running again");
        let run = store.run("R1").expect("read").expect("exists");
        assert_eq!(run.started_at, Some(started));
        assert_eq!((run.finished_at, run.failure_reason), (None, None));

        store
            .set_status("R1", RunStatus::Blocked, None)
            .expect("blocked");
        let run = store.run("R1").expect("read").expect("exists");
        assert_eq!(run.pid, Some(78), "a blocked run is still executing");

        assert_eq!(
            store.mark_running("nope", 1).expect_err("missing").code(),
            "run.not_found"
        );
        assert_eq!(
            store
                .set_status("nope", RunStatus::Failed, None)
                .expect_err("missing")
                .code(),
            "run.not_found"
        );
    }

    #[test]
    fn appended_events_get_gap_free_increasing_seqs_across_calls() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store
            .create_run(&new_run("R1", "wf", "g", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        let first = store
            .append_event("R1", &notice(0), None)
            .expect("append one");
        assert_eq!(first.seq, 1);
        let batch = store
            .append_events(
                "R1",
                &[
                    (notice(1), None),
                    (
                        EventKind::StageStarted {
                            handler: "command".into(),
                            attempt: 1,
                            branch: None,
                        },
                        Some(("build", 2)),
                    ),
                    (notice(3), None),
                ],
            )
            .expect("append batch");
        assert_eq!(seqs(&batch), [2, 3, 4]);
        assert!(store.append_events("R1", &[]).expect("empty").is_empty());
        let next = store.append_event("R1", &notice(5), None).expect("append");
        assert_eq!(next.seq, 5);

        let mut written = vec![first];
        written.extend(batch);
        written.push(next);
        let read = store.events("R1", 0, None).expect("read");
        assert_eq!(read, written, "events read back equal what was written");
        assert_eq!(read[2].node_id.as_deref(), Some("build"));
        assert_eq!(read[2].visit, Some(2));
        assert_eq!(seqs(&store.events("R1", 2, Some(2)).expect("page")), [3, 4]);
        assert_eq!(
            store.events_named("R1", "stage.started").expect("named"),
            vec![written[2].clone()]
        );
        assert_eq!(store.run("R1").expect("read").expect("run").last_seq, 5);
        assert_eq!(
            store
                .append_event("nope", &notice(0), None)
                .expect_err("no run")
                .code(),
            "run.not_found"
        );
    }

    #[test]
    fn an_event_row_that_does_not_parse_is_an_error_naming_it() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store
            .create_run(&new_run("R1", "wf", "g", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        store.append_event("R1", &notice(1), None).expect("append");
        store
            .conn
            .execute("UPDATE events SET event = 'no.such.event'", [])
            .expect("corrupt");
        let error = store.events("R1", 0, None).expect_err("does not parse");
        assert_eq!(error.code(), "store.json");
        let message = error.to_string();
        assert!(
            message.contains("event 1") && message.contains("R1"),
            "{message}"
        );
    }

    #[test]
    fn commit_stage_writes_stage_events_and_checkpoint_together() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store
            .create_run(&new_run("R1", "wf", "g", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        store.append_event("R1", &notice(0), None).expect("append");
        assert_eq!(
            store
                .stage_started("R1", "plan", 1, "agent")
                .expect("started"),
            1
        );
        store
            .set_stage_attempts("R1", "plan", 1, 2)
            .expect("attempts");
        let outcome = Outcome::succeeded();
        let checkpoint = r#"{"next_node":"build","completed":1}"#;
        let events = store
            .commit_stage(&StageCommit {
                run_id: "R1",
                node_id: "plan",
                visit: 1,
                status: "succeeded",
                attempts: 2,
                duration_ms: 1234,
                failure_reason: None,
                outcome: serde_json::to_value(&outcome).expect("outcome json"),
                events: vec![
                    (
                        EventKind::StageCompleted {
                            status: Status::Succeeded,
                            duration_ms: 1234,
                            attempts: 2,
                            outcome: outcome.clone(),
                        },
                        Some(("plan", 1)),
                    ),
                    (
                        EventKind::CheckpointSaved {
                            next_node: Some("build".into()),
                            completed: 1,
                            checkpoint: serde_json::from_str(checkpoint).expect("json"),
                        },
                        None,
                    ),
                ],
                checkpoint: checkpoint.into(),
            })
            .expect("commit");
        assert_eq!(seqs(&events), [2, 3]);

        let stages = store.stages("R1").expect("stages");
        assert_eq!(stages.len(), 1);
        let stage = &stages[0];
        assert_eq!(
            (stage.status.as_str(), stage.attempts, stage.duration_ms),
            ("succeeded", 2, Some(1234))
        );
        assert_eq!((stage.rank, stage.handler.as_str()), (1, "agent"));
        assert!(stage.finished_at.is_some());
        assert_eq!(
            stage.outcome,
            Some(serde_json::to_value(&outcome).expect("json"))
        );
        let run = store.run("R1").expect("read").expect("run");
        assert_eq!(run.checkpoint.as_deref(), Some(checkpoint));
        assert_eq!(run.last_seq, 3);
        assert_eq!(store.events("R1", 1, None).expect("events"), events);

        // A jump that completes no stage.
        let jumped = store
            .save_checkpoint("R1", "{\"next_node\":\"exit\"}", &[(notice(4), None)])
            .expect("save checkpoint");
        assert_eq!(seqs(&jumped), [4]);
        let run = store.run("R1").expect("read").expect("run");
        assert_eq!(
            (run.checkpoint.as_deref(), run.last_seq),
            (Some("{\"next_node\":\"exit\"}"), 4)
        );
    }

    #[test]
    fn commit_stage_of_a_stage_never_started_writes_nothing() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store
            .create_run(&new_run("R1", "wf", "g", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        let error = store
            .commit_stage(&StageCommit {
                run_id: "R1",
                node_id: "ghost",
                visit: 1,
                status: "succeeded",
                attempts: 1,
                duration_ms: 1,
                failure_reason: None,
                outcome: serde_json::Value::Null,
                events: vec![(notice(1), None)],
                checkpoint: "{}".into(),
            })
            .expect_err("not started");
        assert_eq!(error.code(), "stage.not_found");
        let run = store.run("R1").expect("read").expect("run");
        assert_eq!((run.last_seq, run.checkpoint), (0, None), "rolled back");
        assert!(store.events("R1", 0, None).expect("events").is_empty());
    }

    #[test]
    fn a_restarted_in_flight_stage_keeps_its_rank() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store
            .create_run(&new_run("R1", "wf", "g", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        assert_eq!(
            store.stage_started("R1", "plan", 1, "agent").expect("plan"),
            1
        );
        assert_eq!(
            store
                .stage_started("R1", "build", 1, "command")
                .expect("build"),
            2
        );
        store
            .set_stage_attempts("R1", "build", 1, 3)
            .expect("attempts");
        // The process dies mid-stage; the reconciler marks it interrupted.
        assert_eq!(store.interrupt_running_stages("R1").expect("interrupt"), 2);
        assert!(
            store
                .stages("R1")
                .expect("stages")
                .iter()
                .all(|s| s.status == "interrupted")
        );
        // Resume runs `build` again: same row, same rank, fresh attempt count.
        assert_eq!(
            store
                .stage_started("R1", "build", 1, "command")
                .expect("again"),
            2
        );
        assert_eq!(
            store
                .stage_started("R1", "build", 2, "command")
                .expect("visit 2"),
            3
        );
        let stages = store.stages("R1").expect("stages");
        let order: Vec<(&str, u32, u32, &str, u32)> = stages
            .iter()
            .map(|s| {
                (
                    s.node_id.as_str(),
                    s.visit,
                    s.rank,
                    s.status.as_str(),
                    s.attempts,
                )
            })
            .collect();
        assert_eq!(
            order,
            [
                ("plan", 1, 1, "interrupted", 0),
                ("build", 1, 2, "running", 0),
                ("build", 2, 3, "running", 0),
            ]
        );
        assert_eq!(
            store
                .set_stage_attempts("R1", "nope", 1, 1)
                .expect_err("missing")
                .code(),
            "stage.not_found"
        );
    }

    #[test]
    fn last_names_the_newest_top_level_runs() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        assert_eq!(
            store.find_run("last").expect_err("no runs").code(),
            "run.not_found"
        );
        for (id, at) in [
            ("01JAAAA0000000000000000000", "2026-01-01T00:00:00.000Z"),
            ("01JAAAB0000000000000000000", "2026-01-02T00:00:00.000Z"),
            ("01JAAAC0000000000000000000", "2026-01-03T00:00:00.000Z"),
        ] {
            store
                .create_run(&new_run(id, "wf", "g", at))
                .expect("create");
        }
        // A sub-workflow's child run, newer than its parent: not `last`.
        let mut child = new_run(
            "01JAAAD0000000000000000000",
            "child",
            "g",
            "2026-01-04T00:00:00.000Z",
        );
        child.options = serde_json::json!({"parent": {"run_id": "01JAAAC0000000000000000000"}});
        store.create_run(&child).expect("create child");
        let id = |name: &str| store.find_run(name).map(|r| r.id);
        assert_eq!(id("last").expect("last"), "01JAAAC0000000000000000000");
        assert_eq!(
            id(" LAST ").expect("any case"),
            "01JAAAC0000000000000000000"
        );
        assert_eq!(id("last~0").expect("last~0"), "01JAAAC0000000000000000000");
        assert_eq!(id("last~1").expect("last~1"), "01JAAAB0000000000000000000");
        assert_eq!(id("last~2").expect("last~2"), "01JAAAA0000000000000000000");
        for missing in ["last~3", "last~", "last~x", "last~-1"] {
            assert_eq!(
                store.find_run(missing).expect_err(missing).code(),
                "run.not_found",
                "{missing}"
            );
        }
    }

    #[test]
    fn unique_prefixes_reach_past_the_shared_timestamp() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        // Two runs started in the same millisecond share the 10 characters
        // of the timestamp and two more; a third run an hour away shares 5.
        let ids = [
            "01JAAAAAAA7XK2000000000000",
            "01JAAAAAAA7XM9000000000000",
            "01JAAB0000Q00000000000000Z",
        ];
        for (i, id) in ids.iter().enumerate() {
            store
                .create_run(&new_run(
                    id,
                    "wf",
                    "g",
                    &format!("2026-01-0{}T00:00:00.000Z", i + 1),
                ))
                .expect("create");
        }
        let lengths = store.unique_prefix_lengths(&ids).expect("lengths");
        assert_eq!(lengths, [13, 13, SHORT_ID_MIN]);
        for (id, length) in ids.iter().zip(&lengths) {
            let prefix = id[..*length].to_lowercase();
            assert_eq!(
                store
                    .find_run(&prefix)
                    .expect("the short form names its run")
                    .id,
                *id
            );
        }
        assert_eq!(
            store.find_run(&ids[0][..12]).expect_err("one short").code(),
            "run.ambiguous"
        );
    }

    #[test]
    fn find_run_takes_exact_ids_and_unique_prefixes_in_any_case() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        for (i, id) in [
            "01JAAAA0000000000000000000",
            "01JAAAB0000000000000000000",
            "01JBBBB0000000000000000000",
        ]
        .into_iter()
        .enumerate()
        {
            store
                .create_run(&new_run(
                    id,
                    "wf",
                    "g",
                    &format!("2026-01-0{}T00:00:00.000Z", i + 1),
                ))
                .expect("create");
        }
        let exact = store.find_run("01JAAAA0000000000000000000").expect("exact");
        assert_eq!(exact.id, "01JAAAA0000000000000000000");
        assert_eq!(
            store.find_run("01JB").expect("prefix").id,
            "01JBBBB0000000000000000000"
        );
        assert_eq!(
            store.find_run("01jaaab").expect("lower case").id,
            "01JAAAB0000000000000000000"
        );
        assert_eq!(
            store
                .find_run("01jaaaa0000000000000000000")
                .expect("lower case full id")
                .id,
            "01JAAAA0000000000000000000"
        );
        match store.find_run("01ja").expect_err("ambiguous") {
            StoreError::AmbiguousRun { prefix, matches } => {
                assert_eq!(prefix, "01ja");
                assert_eq!(
                    matches,
                    ["01JAAAB0000000000000000000", "01JAAAA0000000000000000000"],
                    "newest first"
                );
            }
            other => panic!("expected AmbiguousRun, got {other}"),
        }
        assert_eq!(
            store.find_run("01JC").expect_err("missing").code(),
            "run.not_found"
        );
        assert_eq!(
            store.find_run("  ").expect_err("empty").code(),
            "run.not_found"
        );
        assert_eq!(
            store.find_run("%").expect_err("no wildcards").code(),
            "run.not_found"
        );
    }

    #[test]
    fn an_ambiguous_prefix_lists_at_most_ten_ids() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        for i in 0..15 {
            store
                .create_run(&new_run(
                    &format!("R{i:02}"),
                    "wf",
                    "g",
                    "2026-01-01T00:00:00.000Z",
                ))
                .expect("create");
        }
        match store.find_run("r").expect_err("ambiguous") {
            StoreError::AmbiguousRun { matches, .. } => assert_eq!(matches.len(), 10),
            other => panic!("expected AmbiguousRun, got {other}"),
        }
    }

    #[test]
    fn list_runs_filters_and_orders_newest_first() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store
            .create_run(&new_run(
                "A1",
                "deploy",
                "Ship the Widget",
                "2026-01-01T00:00:00.000Z",
            ))
            .expect("create");
        store
            .create_run(&new_run(
                "B2",
                "review",
                "review the PR",
                "2026-01-02T00:00:00.000Z",
            ))
            .expect("create");
        store
            .create_run(&new_run(
                "C3",
                "deploy",
                "rollback",
                "2026-01-02T00:00:00.000Z",
            ))
            .expect("create");
        store
            .set_status("B2", RunStatus::Succeeded, None)
            .expect("status");
        let ids = |filter: RunFilter| -> Vec<String> {
            store
                .list_runs(&filter)
                .expect("list")
                .into_iter()
                .map(|r| r.id)
                .collect()
        };
        assert_eq!(
            ids(RunFilter::default()),
            ["C3", "B2", "A1"],
            "created_at desc, then id desc"
        );
        assert_eq!(
            ids(RunFilter {
                status: Some(RunStatus::Queued),
                ..RunFilter::default()
            }),
            ["C3", "A1"]
        );
        assert_eq!(
            ids(RunFilter {
                workflow: Some("deploy".into()),
                ..RunFilter::default()
            }),
            ["C3", "A1"]
        );
        assert!(
            ids(RunFilter {
                workflow: Some("dep".into()),
                ..RunFilter::default()
            })
            .is_empty(),
            "workflow is an exact name"
        );
        assert_eq!(
            ids(RunFilter {
                text: Some("WIDGET".into()),
                ..RunFilter::default()
            }),
            ["A1"],
            "goal"
        );
        assert_eq!(
            ids(RunFilter {
                text: Some("revi".into()),
                ..RunFilter::default()
            }),
            ["B2"],
            "workflow name"
        );
        assert_eq!(
            ids(RunFilter {
                text: Some("c3".into()),
                ..RunFilter::default()
            }),
            ["C3"],
            "id"
        );
        assert_eq!(
            ids(RunFilter {
                limit: Some(1),
                offset: Some(1),
                ..RunFilter::default()
            }),
            ["B2"]
        );
        assert_eq!(
            ids(RunFilter {
                offset: Some(2),
                ..RunFilter::default()
            }),
            ["A1"]
        );
        assert_eq!(
            ids(RunFilter {
                status: Some(RunStatus::Queued),
                workflow: Some("deploy".into()),
                text: Some("roll".into()),
                ..RunFilter::default()
            }),
            ["C3"],
            "filters combine"
        );
    }

    #[test]
    fn label_and_archived_filter_before_the_page_is_cut_so_a_page_is_never_short() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        // Ten runs, newest last; every third carries `release`.
        for i in 0..10 {
            let mut run = new_run(
                &format!("R{i}"),
                "ship",
                "goal",
                &format!("2026-01-01T00:00:{i:02}.000Z"),
            );
            run.labels = if i % 3 == 0 {
                vec!["release".into()]
            } else {
                vec!["nightly".into()]
            };
            store.create_run(&run).expect("create");
        }
        store.set_archived("R6", true).expect("archive");
        let ids = |filter: RunFilter| -> Vec<String> {
            store
                .list_runs(&filter)
                .expect("list")
                .into_iter()
                .map(|r| r.id)
                .collect()
        };
        let release = |limit, offset| RunFilter {
            label: Some("release".into()),
            limit: Some(limit),
            offset: Some(offset),
            ..RunFilter::default()
        };
        assert_eq!(ids(release(2, 0)), ["R9", "R6"], "a full first page");
        assert_eq!(ids(release(2, 2)), ["R3", "R0"], "and a full second one");
        assert_eq!(
            ids(RunFilter {
                archived: Some(false),
                ..release(10, 0)
            }),
            ["R9", "R3", "R0"]
        );
        assert_eq!(
            ids(RunFilter {
                archived: Some(true),
                ..RunFilter::default()
            }),
            ["R6"]
        );
        assert_eq!(store.count_runs(&release(1, 1)).expect("count"), 4);
    }

    #[test]
    fn events_after_a_seq_beyond_any_are_none_not_an_error() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store
            .create_run(&new_run("R", "ship", "goal", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        store.append_event("R", &notice(1), None).expect("append");
        for after in [1, 2, i64::MAX.unsigned_abs(), u64::MAX] {
            assert_eq!(
                store.events("R", after, None).expect("no conversion error"),
                Vec::new(),
                "after {after}"
            );
        }
    }

    #[test]
    fn questions_round_trip_and_answers_close_them() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store
            .create_run(&new_run("R1", "wf", "g", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        store
            .create_run(&new_run("R2", "wf", "g", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        let question = |id: &str, run: &str, asked_at: &str| QuestionRecord {
            id: id.into(),
            run_id: run.into(),
            node_id: "approve".into(),
            visit: 1,
            text: "Ship it?".into(),
            options: vec!["[Y] Yes".into(), "[N] No".into()],
            freeform: false,
            status: QuestionStatus::Pending,
            answer: None,
            asked_at: asked_at.into(),
            answered_at: None,
        };
        let q1 = question("Q1", "R1", "2026-01-01T00:00:01.000Z");
        let q2 = question("Q2", "R2", "2026-01-01T00:00:02.000Z");
        store.insert_question(&q1).expect("insert");
        store.insert_question(&q2).expect("insert");
        assert_eq!(
            store.questions(None, false).expect("all"),
            [q1.clone(), q2.clone()]
        );
        assert_eq!(
            store.questions(Some("R2"), true).expect("R2"),
            std::slice::from_ref(&q2)
        );

        let answer = serde_json::json!({"selected": "Yes"});
        store
            .answer_question("Q1", QuestionStatus::Answered, Some(&answer))
            .expect("answer");
        assert_eq!(store.questions(None, true).expect("pending"), [q2]);
        let answered = store.questions(Some("R1"), false).expect("R1");
        assert_eq!(answered[0].status, QuestionStatus::Answered);
        assert_eq!(answered[0].answer, Some(answer));
        assert!(answered[0].answered_at.is_some());

        store
            .answer_question("Q2", QuestionStatus::TimedOut, None)
            .expect("time out");
        let timed_out = store.questions(Some("R2"), false).expect("R2");
        assert_eq!(
            (timed_out[0].status, &timed_out[0].answer),
            (QuestionStatus::TimedOut, &None)
        );
        assert_eq!(
            store
                .answer_question("Q9", QuestionStatus::Answered, None)
                .expect_err("missing")
                .code(),
            "question.not_found"
        );
    }

    #[test]
    fn recording_a_blob_twice_keeps_one_row() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store.record_blob("ab12", 5).expect("record");
        store.record_blob("ab12", 5).expect("record again");
        let count: i64 = store
            .conn
            .query_row("SELECT count(*) FROM blobs", [], |row| row.get(0))
            .expect("count");
        assert_eq!(count, 1);
    }

    /// Acceptance: one writer, readers opening and reading concurrently,
    /// never an error (no SQLITE_BUSY) and always a gap-free prefix of the
    /// events.
    #[test]
    fn readers_see_gap_free_events_while_a_writer_appends() {
        const TOTAL: u64 = 10_000;
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store
            .create_run(&new_run("R1", "wf", "g", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));

        let writer = {
            let done = std::sync::Arc::clone(&done);
            std::thread::spawn(move || {
                let sizes = [1usize, 3, 1, 7, 2, 25, 1, 64, 5, 1];
                let mut written = 0u64;
                let mut stage = 0u32;
                let mut round = 0usize;
                while written < TOTAL {
                    let left = usize::try_from(TOTAL - written).expect("small");
                    let size = sizes[round % sizes.len()].min(left);
                    round += 1;
                    let batch: Vec<(EventKind, Option<(&str, u32)>)> =
                        (0..size).map(|i| (notice(i), None)).collect();
                    let events = match round % 3 {
                        0 if size == 1 => vec![
                            store
                                .append_event("R1", &batch[0].0, None)
                                .expect("append one"),
                        ],
                        1 => {
                            stage += 1;
                            store
                                .stage_started("R1", "loop", stage, "command")
                                .expect("stage started");
                            store
                                .commit_stage(&StageCommit {
                                    run_id: "R1",
                                    node_id: "loop",
                                    visit: stage,
                                    status: "succeeded",
                                    attempts: 1,
                                    duration_ms: 1,
                                    failure_reason: None,
                                    outcome: serde_json::Value::Null,
                                    events: batch,
                                    checkpoint: format!("{{\"completed\":{stage}}}"),
                                })
                                .expect("commit stage")
                        }
                        _ => store.append_events("R1", &batch).expect("append batch"),
                    };
                    assert_eq!(events.len(), size);
                    assert_eq!(events[0].seq, written + 1, "seqs continue across calls");
                    written += u64::try_from(size).expect("small");
                }
                done.store(true, std::sync::atomic::Ordering::SeqCst);
                written
            })
        };

        let reader = {
            let home = home.clone();
            let done = std::sync::Arc::clone(&done);
            std::thread::spawn(move || {
                let mut reads = 0u32;
                let mut seen = 0u64;
                loop {
                    // Read after seeing `done`, so the last read sees all.
                    let finished = done.load(std::sync::atomic::Ordering::SeqCst);
                    let reader = Store::open_read_only(&home).expect("open read-only");
                    let all = reader.events("R1", 0, None).expect("read all");
                    let n = u64::try_from(all.len()).expect("small");
                    assert!(
                        all.iter().map(|e| e.seq).eq(1..=n),
                        "events are exactly 1..={n}"
                    );
                    assert!(n >= seen, "the log never shrinks ({n} after {seen})");
                    // Paged reads from where the last read ended continue it.
                    let page = reader.events("R1", n, Some(100)).expect("read page");
                    assert!(
                        page.iter()
                            .map(|e| e.seq)
                            .eq(n + 1..n + 1 + page.len() as u64),
                        "a page continues the log without gaps"
                    );
                    let run = reader.run("R1").expect("read run").expect("run");
                    assert!(run.last_seq >= n, "last_seq covers what was read");
                    seen = n;
                    reads += 1;
                    if finished {
                        return (reads, seen);
                    }
                }
            })
        };

        let written = writer.join().expect("writer thread");
        let (reads, seen) = reader.join().expect("reader thread");
        assert_eq!(written, TOTAL);
        assert_eq!(seen, TOTAL, "the final read sees every event");
        assert!(reads >= 2, "the reader ran alongside the writer");
    }
}
