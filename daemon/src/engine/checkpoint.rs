//! The checkpoint: everything needed to continue a run after its last
//! committed stage (execution/checkpoints.mdx, "What's in a checkpoint").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The checkpoint format this build writes and reads.
pub(crate) const CHECKPOINT_VERSION: u32 = 1;

/// A run's state after a committed stage.
///
/// Per-node history (visits, retries, latest outcomes, the order of
/// completed stages) is not repeated here: it lives in the stages table,
/// committed in the same transaction as the checkpoint, and resume rebuilds
/// it from there. That keeps a checkpoint's size independent of how many
/// stages ran, so saving one costs the same at stage 10 and at stage 10,000.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub version: u32,
    pub timestamp: String,
    /// The node whose stage was just committed.
    #[serde(default)]
    pub current_node: Option<String>,
    /// Where execution continues; `None` once the run has nowhere to go.
    #[serde(default)]
    pub next_node_id: Option<String>,
    /// How many stages have been committed.
    #[serde(default)]
    pub completed: u32,
    /// The whole run context.
    #[serde(default)]
    pub context_values: Map<String, Value>,
    /// Failure signature counts for the circuit breaker.
    #[serde(default)]
    pub loop_failure_signatures: BTreeMap<String, u32>,
    /// Failure signature counts across `loop_restart` edges.
    #[serde(default)]
    pub restart_failure_signatures: BTreeMap<String, u32>,
    /// The run branch's head at this checkpoint, when the run is
    /// checkpointed in git: a resume resets the worktree to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit_sha: Option<String>,
    /// While a parallel stage runs: each branch's progress, so a resume
    /// continues the branches instead of starting them over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel: Option<ParallelProgress>,
}

/// The branches of the parallel stage in flight.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParallelProgress {
    /// The parallel (fan-out) node and its visit.
    pub node: String,
    pub visit: u32,
    pub branches: Vec<BranchProgress>,
}

/// One branch's progress.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BranchProgress {
    /// The branch id: the node its edge from the fan-out leads to.
    pub id: String,
    /// Where the branch continues; `None` once it has finished.
    #[serde(default)]
    pub next: Option<String>,
    /// The branch's own copy of the context.
    #[serde(default)]
    pub context: Map<String, Value>,
    /// The nodes it has run, in order.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// Its result, once finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<BranchResult>,
}

/// What a finished branch hands to the join (one entry of `parallel.results`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BranchResult {
    pub id: String,
    pub status: crate::model::Status,
    /// The nodes the branch ran, in order.
    pub nodes: Vec<String>,
    /// The keys the branch changed in its copy of the context.
    pub context_updates: Map<String, Value>,
    /// The last response or command output of the branch (text, or a blob
    /// ref when large).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
}

/// Why a stored checkpoint cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CheckpointError {
    #[error("the checkpoint is empty")]
    Empty,
    #[error("the checkpoint is not valid JSON ({0}); it may have been cut short")]
    Invalid(String),
    #[error("the checkpoint has version {found}; this build reads version {CHECKPOINT_VERSION}")]
    UnknownVersion { found: u64 },
}

impl Checkpoint {
    /// Reads and checks a stored checkpoint. Never panics on damaged text.
    pub fn parse(text: &str) -> Result<Checkpoint, CheckpointError> {
        if text.trim().is_empty() {
            return Err(CheckpointError::Empty);
        }
        let value: Value =
            serde_json::from_str(text).map_err(|e| CheckpointError::Invalid(e.to_string()))?;
        Checkpoint::from_value(value)
    }

    /// Like [`Checkpoint::parse`], from JSON already read.
    pub fn from_value(value: Value) -> Result<Checkpoint, CheckpointError> {
        let found = value.get("version").and_then(Value::as_u64).unwrap_or(0);
        if found != u64::from(CHECKPOINT_VERSION) {
            return Err(CheckpointError::UnknownVersion { found });
        }
        serde_json::from_value(value).map_err(|e| CheckpointError::Invalid(e.to_string()))
    }

    /// The checkpoint as compact JSON.
    #[must_use]
    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Checkpoint {
        Checkpoint {
            version: CHECKPOINT_VERSION,
            timestamp: "2026-12-02T12:00:00.000Z".into(),
            current_node: Some("plan".into()),
            next_node_id: Some("build".into()),
            completed: 2,
            ..Checkpoint::default()
        }
    }

    #[test]
    fn a_checkpoint_reads_back_what_was_written() {
        let cp = sample();
        assert_eq!(Checkpoint::parse(&cp.to_json()), Ok(cp));
    }

    #[test]
    fn damaged_checkpoints_are_detected_not_panicked_on() {
        let json = sample().to_json();
        assert_eq!(Checkpoint::parse(""), Err(CheckpointError::Empty));
        assert!(matches!(
            Checkpoint::parse(&json[..json.len() / 2]),
            Err(CheckpointError::Invalid(_))
        ));
        let future = json.replacen("\"version\":1", "\"version\":99", 1);
        assert_eq!(
            Checkpoint::parse(&future),
            Err(CheckpointError::UnknownVersion { found: 99 })
        );
        assert!(matches!(
            Checkpoint::parse("[1,2]"),
            Err(CheckpointError::UnknownVersion { found: 0 })
        ));
    }
}
