//! What the store's tests build on: a temporary home, runs and events.

use std::path::PathBuf;

use super::{Home, NewRun};
use crate::model::{Event, EventKind};

/// A fresh home in a temporary directory (kept while the guard lives).
pub(super) fn home() -> (tempfile::TempDir, Home) {
    let temp = tempfile::tempdir().expect("temp dir");
    let home = Home::at(temp.path().join("home"));
    (temp, home)
}

/// A run of `workflow` with one input and the label `nightly`.
pub(super) fn new_run(id: &str, workflow: &str, goal: &str, created_at: &str) -> NewRun {
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

/// A notice event, numbered `n`.
pub(super) fn notice(n: usize) -> EventKind {
    EventKind::RunNotice {
        message: format!("notice {n}"),
    }
}

/// The events' sequence numbers.
pub(super) fn seqs(events: &[Event]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}
