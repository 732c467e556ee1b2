//! A run's checkpoint timeline (execution/checkpoints.mdx, "Rewinding"): one
//! entry per committed stage, read from the durable events (each stage's
//! closing event and the `checkpoint.saved` committed with it), and the copy
//! of a run's history up to one of them that a fork or rewind starts from.

use rusqlite::{TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use super::sql::U64;
use super::{Result, Store};
use crate::model::EventKind;

/// One committed stage and the checkpoint it left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct TimelineEntry {
    /// 1-based, in commit order (`@N` names it).
    pub ordinal: u32,
    pub node_id: String,
    pub visit: u32,
    /// The stage's outcome status.
    pub status: String,
    /// The `seq` of the `checkpoint.saved` event.
    pub seq: u64,
    /// When the checkpoint was saved.
    pub ts: String,
    /// Where the run went on from there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_node: Option<String>,
    /// The run branch's head there, in git checkpoint mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit_sha: Option<String>,
    /// The checkpoint itself.
    #[ts(type = "unknown")]
    pub checkpoint: serde_json::Value,
}

impl Store {
    /// The run's timeline: each committed stage with the checkpoint saved in
    /// the same transaction, oldest first. A checkpoint saved without a
    /// stage (a goal gate's jump) is not an entry.
    pub fn timeline(&self, run_id: &str) -> Result<Vec<TimelineEntry>> {
        let events = self.events_named_any(
            run_id,
            &["stage.completed", "stage.failed", "checkpoint.saved"],
        )?;
        let mut entries = Vec::new();
        let mut pending: Option<(String, u32, String)> = None;
        for event in events {
            match event.kind {
                EventKind::StageCompleted { status, .. }
                | EventKind::StageFailed { status, .. } => {
                    if let (Some(node), Some(visit)) = (event.node_id, event.visit) {
                        pending = Some((node, visit, status.as_str().to_string()));
                    }
                }
                EventKind::CheckpointSaved {
                    next_node,
                    checkpoint,
                    ..
                } => {
                    let current = checkpoint.get("current_node").and_then(|v| v.as_str());
                    let Some((node, visit, status)) = pending.take() else {
                        continue;
                    };
                    if current != Some(node.as_str()) {
                        continue;
                    }
                    entries.push(TimelineEntry {
                        ordinal: u32::try_from(entries.len() + 1).unwrap_or(u32::MAX),
                        node_id: node,
                        visit,
                        status,
                        seq: event.seq,
                        ts: event.ts,
                        next_node,
                        git_commit_sha: checkpoint
                            .get("git_commit_sha")
                            .and_then(|v| v.as_str())
                            .map(str::to_string),
                        checkpoint,
                    });
                }
                _ => {}
            }
        }
        Ok(entries)
    }

    /// Gives the run `to` (recorded, with no stages or events yet) the
    /// history of `from` up to the event `seq`: the events up to it and the
    /// stages committed by then, then `checkpoint` as its checkpoint, all
    /// in one transaction. Stage and event rows keep their numbers, so `to`
    /// must be new (no stages or events of its own yet).
    ///
    /// # Errors
    /// The database cannot be written.
    pub fn copy_history(&mut self, from: &str, to: &str, seq: u64, checkpoint: &str) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO stages (run_id, node_id, visit, rank, handler, status, attempts, \
             started_at, finished_at, duration_ms, failure_reason, outcome, branch) \
             SELECT ?2, node_id, visit, rank, handler, status, attempts, started_at, \
             finished_at, duration_ms, failure_reason, outcome, branch FROM stages \
             WHERE run_id = ?1 AND outcome IS NOT NULL AND (node_id, visit) IN \
             (SELECT node_id, visit FROM events WHERE run_id = ?1 AND seq <= ?3 \
              AND event IN ('stage.completed', 'stage.failed'))",
            params![from, to, U64(seq)],
        )?;
        tx.execute(
            "INSERT INTO events (run_id, seq, ts, event, node_id, visit, properties) \
             SELECT ?2, seq, ts, event, node_id, visit, properties FROM events \
             WHERE run_id = ?1 AND seq <= ?3",
            params![from, to, U64(seq)],
        )?;
        let last: Option<i64> = tx.query_row(
            "SELECT MAX(seq) FROM events WHERE run_id = ?1",
            [to],
            |row| row.get(0),
        )?;
        tx.execute(
            "UPDATE runs SET last_seq = ?2, checkpoint = ?3 WHERE id = ?1",
            params![to, last.unwrap_or(0), checkpoint],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The run's events with any of `names`, in order.
    fn events_named_any(&self, run_id: &str, names: &[&str]) -> Result<Vec<crate::model::Event>> {
        let mut all = Vec::new();
        for name in names {
            all.extend(self.events_named(run_id, name)?);
        }
        all.sort_by_key(|e| e.seq);
        Ok(all)
    }
}
