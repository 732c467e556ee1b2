//! The `runs` table: a run's record from creation to its end (status, the
//! process executing it, its checkpoint), finding a run by id, prefix or
//! `last~N`, and the run list. [`RunFilter`] is the one run-list query:
//! `weft ps`, the daemon's `run.list` and the app's runs page all filter,
//! page and count through it.

use std::path::PathBuf;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSqlOutput, ValueRef};
use rusqlite::{Connection, OptionalExtension, ToSql, params};
use serde::{Deserialize, Serialize};

use super::sql::{U64, from_json, path_text, to_json};
use super::{Result, Store, StoreError, timestamp};
use crate::model::{Event, RunSpend, RunStatus, RunSummary};

/// The most workflow names [`Store::workflow_names`] returns: a filter's
/// choices, not a report.
pub const WORKFLOW_NAMES_MAX: u32 = 1_000;

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
        // Where its commands run, when not on the host: `docker IMAGE`.
        let sandbox = r
            .options
            .get("sandbox")
            .and_then(|config| {
                serde_json::from_value::<crate::model::SandboxConfig>(config.clone()).ok()
            })
            .filter(|c| c.provider() != crate::model::sandbox::Provider::Local)
            .map(|c| format!("{} {}", c.provider().as_str(), c.image()));
        RunSummary {
            parent,
            sandbox,
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
                         'cost', SUM(json_extract(s.outcome, '$.llm.cost')), \
                         'unpriced', SUM(json_extract(s.outcome, '$.llm.unpriced_calls'))) \
        FROM stages s WHERE s.run_id = runs.id AND json_extract(s.outcome, '$.llm') IS NOT NULL), ",
    failed_stages_sql!()
);

/// How many runs an ambiguous prefix lists.
const AMBIGUOUS_LIST_MAX: usize = 10;

/// How deep [`Store::spend_of_tree`] follows parent links: well past how
/// deeply the engine nests runs, and a bound even on links made to loop.
const MAX_TREE_DEPTH: i64 = 64;

/// The fewest characters of a run id that `weft ps` shows (see
/// [`Store::unique_prefix_lengths`]): more when that many are shared with
/// another run, as they are for runs started in the same second.
pub(crate) const SHORT_ID_MIN: usize = 8;

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

    /// Replaces the run's spending limits in its stored options, so a
    /// resume (and a daemon restarting it) keeps a raised budget.
    pub fn set_budget(&mut self, run_id: &str, budget: &crate::model::Budget) -> Result<()> {
        let json = to_json(budget, || format!("budget of run {run_id}"))?;
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE runs SET options = json_set(COALESCE(options, '{}'), '$.budget', json(?2)) \
                 WHERE id = ?1",
            )?
            .execute(params![run_id, json])?;
        expect_run(changed, run_id)
    }

    /// What the stages of every run that finished since local midnight
    /// spent (the per-day budget; `[budget] max_cost_per_day`).
    pub fn spend_today(&self) -> Result<RunSpend> {
        let json: Option<String> = self
            .conn
            .prepare_cached(
                "SELECT json_object('calls', SUM(json_extract(s.outcome, '$.llm.calls')), \
                   'input', SUM(json_extract(s.outcome, '$.llm.usage.input')), \
                   'output', SUM(json_extract(s.outcome, '$.llm.usage.output')), \
                   'cost', SUM(json_extract(s.outcome, '$.llm.cost'))) \
                 FROM stages s WHERE json_extract(s.outcome, '$.llm') IS NOT NULL \
                   AND s.finished_at >= strftime('%Y-%m-%dT%H:%M:%S', 'now', 'localtime', 'start of day', 'utc')",
            )?
            .query_row([], |row| row.get(0))
            .optional()?
            .flatten();
        Ok(json.as_deref().and_then(spend_of).unwrap_or_default())
    }

    /// What the stages of `run_id` and of every run below it (its
    /// sub-workflows' child runs, to any depth) spent: the spend a run's
    /// budget is held against.
    pub fn spend_of_tree(&self, run_id: &str) -> Result<RunSpend> {
        let json: Option<String> = self
            .conn
            .prepare_cached(
                "WITH RECURSIVE tree(id, depth) AS ( \
                   SELECT ?1, 0 \
                   UNION ALL \
                   SELECT runs.id, tree.depth + 1 FROM runs JOIN tree \
                     ON json_extract(runs.options, '$.parent.run_id') = tree.id \
                   WHERE tree.depth < ?2) \
                 SELECT json_object('calls', SUM(json_extract(s.outcome, '$.llm.calls')), \
                   'input', SUM(json_extract(s.outcome, '$.llm.usage.input')), \
                   'output', SUM(json_extract(s.outcome, '$.llm.usage.output')), \
                   'cost', SUM(json_extract(s.outcome, '$.llm.cost'))) \
                 FROM stages s JOIN tree ON s.run_id = tree.id \
                 WHERE json_extract(s.outcome, '$.llm') IS NOT NULL",
            )?
            // Bounded even if the links were made to loop: runs nest at
            // most MAX_NESTING deep.
            .query_row(params![run_id, MAX_TREE_DEPTH], |row| row.get(0))
            .optional()?
            .flatten();
        Ok(json.as_deref().and_then(spend_of).unwrap_or_default())
    }

    /// The daily limits raised today (local time), if any were.
    pub fn day_budget(&self) -> Result<Option<crate::model::Budget>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT max_cost, max_tokens FROM day_budgets \
                 WHERE day = date('now', 'localtime')",
            )?
            .query_row([], |row| {
                Ok(crate::model::Budget {
                    max_cost: row.get(0)?,
                    max_tokens: row
                        .get::<_, Option<i64>>(1)?
                        .and_then(|n| u64::try_from(n).ok()),
                    warn_at: None,
                })
            })
            .optional()?)
    }

    /// Records `budget` as today's daily limits (a raise at a budget
    /// pause): every run of the home keeps them until local midnight.
    pub fn raise_day_budget(&mut self, budget: &crate::model::Budget) -> Result<()> {
        let tokens = budget
            .max_tokens
            .map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        self.conn
            .prepare_cached(
                "INSERT INTO day_budgets (day, max_cost, max_tokens) \
                 VALUES (date('now', 'localtime'), ?1, ?2) \
                 ON CONFLICT (day) DO UPDATE SET \
                   max_cost = COALESCE(excluded.max_cost, max_cost), \
                   max_tokens = COALESCE(excluded.max_tokens, max_tokens)",
            )?
            .execute(params![budget.max_cost, tokens])?;
        Ok(())
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
    pub(crate) fn unique_prefix_lengths(&self, ids: &[&str]) -> Result<Vec<usize>> {
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
    pub(crate) fn count_runs(&self, filter: &RunFilter) -> Result<u64> {
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

    /// The names of the workflows of the store's runs, archived ones
    /// included, each once, sorted; at most [`WORKFLOW_NAMES_MAX`].
    pub fn workflow_names(&self) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT DISTINCT workflow_name FROM runs ORDER BY workflow_name LIMIT ?1",
        )?;
        let names = stmt
            .query_map(params![WORKFLOW_NAMES_MAX], |row| row.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Ok(names)
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
}

fn expect_run(changed: usize, run_id: &str) -> Result<()> {
    if changed == 0 {
        return Err(StoreError::RunNotFound(run_id.to_string()));
    }
    Ok(())
}

/// The run's last event seq; [`StoreError::RunNotFound`] if there is no run.
pub(super) fn last_seq(conn: &Connection, run_id: &str) -> Result<u64> {
    conn.prepare_cached("SELECT last_seq FROM runs WHERE id = ?1")?
        .query_row([run_id], |row| row.get::<_, U64>(0).map(|seq| seq.0))
        .optional()?
        .ok_or_else(|| StoreError::RunNotFound(run_id.to_string()))
}

pub(super) fn set_last_seq(conn: &Connection, run_id: &str, seq: u64) -> Result<()> {
    conn.prepare_cached("UPDATE runs SET last_seq = ?2 WHERE id = ?1")?
        .execute(params![run_id, U64(seq)])?;
    Ok(())
}

/// Stores the checkpoint and, if events were appended, the new last seq.
pub(super) fn set_checkpoint(
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
        unpriced_calls: int("unpriced").unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::{home, new_run};

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
    fn workflow_names_are_listed_once_each_sorted_archived_runs_included() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        for (id, workflow) in [("A1", "review"), ("B2", "deploy"), ("C3", "review")] {
            store
                .create_run(&new_run(id, workflow, "goal", "2026-01-01T00:00:00.000Z"))
                .expect("create");
        }
        store.set_archived("B2", true).expect("archive");
        assert_eq!(store.workflow_names().expect("names"), ["deploy", "review"]);
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
}
