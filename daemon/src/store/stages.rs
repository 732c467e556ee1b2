//! The `stages` table: one row per node visit, from its start to its
//! completion. Completing a stage ([`Store::commit_stage`]) also appends its
//! closing events and stores the checkpoint, in one transaction: the
//! store's core invariant.

use rusqlite::{OptionalExtension, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use super::events::insert_events;
use super::runs::set_checkpoint;
use super::sql::{U64, from_json, to_json};
use super::{Result, Store, StoreError, timestamp};
use crate::model::{Event, EventKind};

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
    /// The stage's own files for the run directory
    /// ([`super::stage_files`]); `None` when it has none.
    pub files: Option<&'a super::StageFiles>,
}

/// The `stages` columns in the order [`StageRow::read`] expects.
const STAGE_COLUMNS: &str = "run_id, node_id, visit, rank, handler, status, attempts, \
     started_at, finished_at, duration_ms, failure_reason, outcome, branch";

impl Store {
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
    pub(crate) fn stage_started_in(
        &mut self,
        run_id: &str,
        node_id: &str,
        visit: u32,
        handler: &str,
        branch: Option<&str>,
    ) -> Result<u32> {
        self.start_stage(run_id, node_id, visit, handler, branch, None)
            .map(|(rank, _)| rank)
    }

    /// [`Store::stage_started_in`] with the stage's first event (its
    /// `stage.started`) in the same transaction: one commit per stage
    /// start instead of two. Returns the rank and the event as stored.
    pub(crate) fn start_stage(
        &mut self,
        run_id: &str,
        node_id: &str,
        visit: u32,
        handler: &str,
        branch: Option<&str>,
        first: Option<&EventKind>,
    ) -> Result<(u32, Option<crate::model::Event>)> {
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
        let event = match first {
            Some(kind) => {
                let stored =
                    insert_events(&tx, run_id, &now, &[(kind.clone(), Some((node_id, visit)))])?;
                if let Some(last) = stored.last() {
                    super::runs::set_last_seq(&tx, run_id, last.seq)?;
                }
                stored.into_iter().next()
            }
            None => None,
        };
        tx.commit()?;
        Ok((rank, event))
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
        let files = commit
            .files
            .map(|files| {
                to_json(files, || {
                    format!(
                        "files of {}@{} in run {}",
                        commit.node_id, commit.visit, commit.run_id
                    )
                })
            })
            .transpose()?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let changed = tx
            .prepare_cached(
                "UPDATE stages SET status = ?4, attempts = ?5, finished_at = ?6, \
                 duration_ms = ?7, failure_reason = ?8, outcome = ?9, files = ?10 \
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
                files,
            ])?;
        expect_stage(changed, commit.run_id, commit.node_id, commit.visit)?;
        let events = insert_events(&tx, commit.run_id, &now, &commit.events)?;
        set_checkpoint(&tx, commit.run_id, &commit.checkpoint, &events)?;
        tx.commit()?;
        Ok(events)
    }

    /// Marks the run's stages still `running` as `interrupted` (their process
    /// died) and returns how many there were.
    pub(crate) fn interrupt_running_stages(&mut self, run_id: &str) -> Result<u32> {
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
}

fn expect_stage(changed: usize, run_id: &str, node_id: &str, visit: u32) -> Result<()> {
    if changed == 0 {
        return Err(StoreError::StageNotFound(format!(
            "{node_id}@{visit} in run {run_id}"
        )));
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Outcome, Status};
    use crate::store::fixtures::{home, new_run, notice, seqs};

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
        let files: super::super::StageFiles = [
            ("status.json".to_string(), Some("{}".to_string())),
            ("stdout.log".to_string(), None),
        ]
        .into_iter()
        .collect();
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
                files: Some(&files),
            })
            .expect("commit");
        assert_eq!(seqs(&events), [2, 3]);

        // The stage's files, committed with it, are restored where missing.
        let run_dir = crate::store::RunDir::open(home.runs_dir().join("R1"));
        assert_eq!(
            store.restore_stage_files("R1", &run_dir).expect("restore"),
            2
        );
        let dir = run_dir.node_dir("plan", 1);
        assert_eq!(
            std::fs::read_to_string(dir.join("status.json")).expect("status"),
            "{}"
        );
        std::fs::write(dir.join("stdout.log"), "output\n").expect("log");
        assert_eq!(store.restore_stage_files("R1", &run_dir).expect("again"), 0);
        assert_eq!(
            std::fs::read_to_string(dir.join("stdout.log")).expect("log"),
            "output\n"
        );

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
                files: None,
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
}
