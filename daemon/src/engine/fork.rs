//! Forking and rewinding a run (execution/checkpoints.mdx, "Rewinding",
//! "Forking"): a new run that starts from one of another run's checkpoints,
//! with its history up to there, ready to resume. A rewind also archives the
//! source, which must have ended; a fork leaves it as it is.
//!
//! The new run gets a copy of the source's record (workflow, inputs,
//! options), of its events and committed stages up to the checkpoint, of
//! those stages' files, and the checkpoint itself with the run's own id and
//! work dir in its context. In git checkpoint mode its branch
//! `weft/run/{new id}` starts at the checkpoint's commit; the worktree is
//! added when it resumes. It is recorded `cancelled` (stopped before it
//! ran anything of its own), so it waits for `weft resume` (or the app)
//! rather than being resumed by the next daemon start as an interrupted run
//! would be.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::launch::RunOptions;
use super::run_git::GitPlan;
use crate::model::{Code, EventKind, RunStatus};
use crate::store::{Home, NewRun, RunDir, RunRecord, Store, StoreError, TimelineEntry};
use crate::util::lock::lock;

/// Why a fork or rewind was refused, with the code a client branches on.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    NotForkable(String),
    #[error("{0}")]
    NoSuchCheckpoint(String),
    #[error("{0}")]
    Git(String),
}

impl ForkError {
    /// A stable, machine-readable code.
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            ForkError::Store(e) => e.code(),
            ForkError::NotForkable(_) => Code::RunNotForkable,
            ForkError::NoSuchCheckpoint(_) => Code::CheckpointNotFound,
            ForkError::Git(_) => Code::RunConfig,
        }
    }
}

/// The run a fork or rewind made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Forked {
    pub run_id: String,
    pub run_dir: PathBuf,
    /// The run it came from.
    pub source: String,
    /// The checkpoint it starts from.
    pub from: TimelineEntry,
    /// A rewind archived the source.
    pub archived_source: bool,
}

/// Finds `target` on `timeline`: `node` (its latest visit), `node@visit`,
/// or `@N` (the Nth entry); `None` for the latest entry.
///
/// # Errors
/// The target names no entry; the message lists what there is.
pub fn find<'a>(
    timeline: &'a [TimelineEntry],
    run_id: &str,
    target: Option<&str>,
) -> Result<&'a TimelineEntry, ForkError> {
    let missing = |what: String| {
        let known: Vec<String> = timeline
            .iter()
            .map(|e| format!("@{} {}@{}", e.ordinal, e.node_id, e.visit))
            .collect();
        ForkError::NoSuchCheckpoint(if known.is_empty() {
            format!("run {run_id} has no checkpoints: no stage was committed")
        } else {
            format!(
                "run {run_id} has no checkpoint {what}; its timeline: {} (`--list` shows it in full)",
                known.join(", ")
            )
        })
    };
    let Some(target) = target.map(str::trim).filter(|t| !t.is_empty()) else {
        return timeline.last().ok_or_else(|| missing(String::new()));
    };
    if let Some(n) = target.strip_prefix('@') {
        let n: u32 = n
            .parse()
            .map_err(|_| missing(format!("`{target}` (@N takes a number)")))?;
        return timeline
            .iter()
            .find(|e| e.ordinal == n)
            .ok_or_else(|| missing(target.to_string()));
    }
    let (node, visit) = match target.rsplit_once('@') {
        Some((node, visit)) => match visit.parse::<u32>() {
            Ok(v) => (node, Some(v)),
            Err(_) => return Err(missing(format!("`{target}` (node@visit takes a number)"))),
        },
        None => (target, None),
    };
    timeline
        .iter()
        .rev()
        .find(|e| e.node_id == node && visit.is_none_or(|v| e.visit == v))
        .ok_or_else(|| missing(format!("`{target}`")))
}

/// Forks (or with `rewind`, rewinds) the run `source` from its checkpoint
/// `target` (see [`find`]): records the new run and returns it. A fork of a
/// run a live process executes is refused; a rewind also needs the source
/// to have ended (succeeded or failed) and not be archived, and archives it.
///
/// # Errors
/// [`ForkError`], saying why; nothing is recorded then, unless the archive
/// of a rewind's source fails after the new run exists (the message says
/// so).
pub fn fork(
    store: &Mutex<Store>,
    home: &Home,
    source: &str,
    target: Option<&str>,
    rewind: bool,
) -> Result<Forked, ForkError> {
    let (source, timeline) = {
        let store = lock(store);
        let record = store.find_run(source)?;
        let timeline = store.timeline(&record.id)?;
        (record, timeline)
    };
    check_forkable(&source, rewind)?;
    let entry = find(&timeline, &source.id, target)?.clone();

    let run_id = ulid::Ulid::generate().to_string();
    let run_dir = RunDir::create(&home.runs_dir(), &run_id)?;
    let mut options: RunOptions =
        serde_json::from_value(source.options.clone()).unwrap_or_default();
    if let Some(plan) = &mut options.git {
        *plan = GitPlan {
            branch: format!("weft/run/{run_id}"),
            meta_branch: format!("weft/meta/{run_id}"),
            worktree: run_dir.path().join("worktree"),
            ..plan.clone()
        };
    }
    let work_dir = options
        .git
        .as_ref()
        .map_or_else(|| source.work_dir.clone(), GitPlan::work_dir);
    let checkpoint = rebased(&entry.checkpoint, &run_id, &work_dir);

    if let Some(plan) = &options.git {
        let at = entry
            .git_commit_sha
            .clone()
            .unwrap_or_else(|| plan.base_sha.clone());
        crate::git::worktree::create_branch(&plan.repo, &plan.branch, &at)
            .map_err(|e| ForkError::Git(format!("cannot start the fork's branch: {e}")))?;
    }
    copy_files(&source, run_dir.path(), &run_id, &entry, &options)?;
    let new = NewRun {
        id: run_id.clone(),
        workflow_name: source.workflow_name.clone(),
        workflow_path: source.workflow_path.clone(),
        goal: source.goal.clone(),
        run_dir: run_dir.path().to_path_buf(),
        work_dir: source.work_dir.clone(),
        inputs: source.inputs.clone(),
        options: serde_json::to_value(&options).unwrap_or(Value::Null),
        labels: source.labels.clone(),
        node_count: source.node_count,
        edge_count: source.edge_count,
        created_at: crate::store::timestamp(),
    };
    let what = if rewind { "rewound" } else { "forked" };
    let reason = format!(
        "{what} from run {} at {}@{}; resume it to continue",
        source.id, entry.node_id, entry.visit
    );
    {
        let mut store = lock(store);
        store.create_run(&new)?;
        store.copy_history(&source.id, &run_id, entry.seq, &checkpoint.to_string())?;
        store.append_event(
            &run_id,
            &EventKind::RunNotice {
                message: reason.clone(),
            },
            None,
        )?;
        store.set_status(&run_id, RunStatus::Cancelled, Some(&reason))?;
    }
    copy_stage_files(store, &source, run_dir.path(), &run_id)?;
    let _ = run_dir.write_json("checkpoint.json", &checkpoint);
    let mut archived_source = false;
    if rewind {
        lock(store).set_archived(&source.id, true).map_err(|e| {
            ForkError::NotForkable(format!(
                "run {run_id} was created from {}@{} but run {} could not be archived ({e}); archive it yourself, and do not rewind again",
                entry.node_id, entry.visit, source.id
            ))
        })?;
        archived_source = true;
    }
    Ok(Forked {
        run_id,
        run_dir: run_dir.path().to_path_buf(),
        source: source.id,
        from: entry,
        archived_source,
    })
}

/// Refuses a source a fork or rewind cannot start from now.
fn check_forkable(source: &RunRecord, rewind: bool) -> Result<(), ForkError> {
    let live = matches!(
        source.status,
        RunStatus::Running | RunStatus::Blocked | RunStatus::Queued
    ) && source
        .pid
        .is_none_or(|pid| crate::os::process::still_alive(pid, source.pid_start));
    if live {
        return Err(ForkError::NotForkable(format!(
            "run {} is {}: wait for it to end, or cancel it first",
            source.id,
            source.status.as_str()
        )));
    }
    if rewind {
        if !matches!(source.status, RunStatus::Succeeded | RunStatus::Failed) {
            return Err(ForkError::NotForkable(format!(
                "run {} is {}; only a run that succeeded or failed can be rewound (resume it, or fork it to keep it)",
                source.id,
                source.status.as_str()
            )));
        }
        if source.archived {
            return Err(ForkError::NotForkable(format!(
                "run {} is archived; unarchive it first, or fork it",
                source.id
            )));
        }
    }
    Ok(())
}

/// The checkpoint as the new run's: its context (and each parallel branch's)
/// names the new run and its work dir.
fn rebased(checkpoint: &Value, run_id: &str, work_dir: &Path) -> Value {
    let mut checkpoint = checkpoint.clone();
    let fix = |context: &mut Map<String, Value>| {
        context.insert("internal.run_id".into(), Value::String(run_id.to_string()));
        context.insert(
            "internal.work_dir".into(),
            Value::String(work_dir.to_string_lossy().into_owned()),
        );
    };
    if let Some(context) = checkpoint
        .get_mut("context_values")
        .and_then(Value::as_object_mut)
    {
        fix(context);
    }
    if let Some(branches) = checkpoint
        .pointer_mut("/parallel/branches")
        .and_then(Value::as_array_mut)
    {
        for branch in branches {
            if let Some(context) = branch.get_mut("context").and_then(Value::as_object_mut) {
                fix(context);
            }
        }
    }
    checkpoint
}

/// Copies the source's workflow and manifest (naming the new run) into the
/// new run directory.
fn copy_files(
    source: &RunRecord,
    run_dir: &Path,
    run_id: &str,
    entry: &TimelineEntry,
    options: &RunOptions,
) -> Result<(), ForkError> {
    let io = |what: String| move |e: std::io::Error| ForkError::Store(StoreError::io(what, e));
    std::fs::copy(
        source.run_dir.join("graph.fabro"),
        run_dir.join("graph.fabro"),
    )
    .map_err(io(format!("copying the workflow of run {}", source.id)))?;
    let mut manifest: Value =
        crate::limits::read_capped(&source.run_dir.join("manifest.json"), crate::limits::MIB)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_else(|| Value::Object(Map::new()));
    if let Some(m) = manifest.as_object_mut() {
        m.insert("run_id".into(), Value::String(run_id.to_string()));
        m.insert(
            "start_time".into(),
            Value::String(crate::store::timestamp()),
        );
        if let Some(plan) = &options.git {
            m.insert("run_branch".into(), Value::String(plan.branch.clone()));
            m.insert(
                "meta_branch".into(),
                Value::String(plan.meta_branch.clone()),
            );
        }
        m.insert(
            "forked_from".into(),
            serde_json::json!({
                "run_id": source.id,
                "node_id": entry.node_id,
                "visit": entry.visit,
                "ordinal": entry.ordinal,
            }),
        );
    }
    RunDir::open(run_dir).write_json("manifest.json", &manifest)?;
    Ok(())
}

/// Copies the files of the stages the new run has (those committed by its
/// checkpoint: logs, status, diff) from the source's run directory: each
/// node folder's regular files, not a sub-workflow's child run inside it.
fn copy_stage_files(
    store: &Mutex<Store>,
    source: &RunRecord,
    run_dir: &Path,
    run_id: &str,
) -> Result<(), ForkError> {
    let stages = lock(store).stages(run_id)?;
    let from = RunDir::open(&source.run_dir);
    let to = RunDir::open(run_dir);
    for stage in stages {
        let Ok(files) = std::fs::read_dir(from.node_dir(&stage.node_id, stage.visit)) else {
            continue;
        };
        let target = to.ensure_node_dir(&stage.node_id, stage.visit)?;
        for file in files.flatten() {
            if file.file_type().is_ok_and(|t| t.is_file()) {
                let _ = std::fs::copy(file.path(), target.join(file.file_name()));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(ordinal: u32, node: &str, visit: u32) -> TimelineEntry {
        TimelineEntry {
            ordinal,
            node_id: node.to_string(),
            visit,
            status: "succeeded".into(),
            seq: u64::from(ordinal) * 3,
            ts: String::new(),
            next_node: None,
            git_commit_sha: None,
            checkpoint: Value::Null,
        }
    }

    fn found(timeline: &[TimelineEntry], target: Option<&str>) -> Result<u32, String> {
        find(timeline, "R", target)
            .map(|e| e.ordinal)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_target_is_a_node_its_visit_or_an_ordinal_and_none_is_the_latest() {
        let timeline = [
            entry(1, "start", 1),
            entry(2, "build", 1),
            entry(3, "test", 1),
            entry(4, "build", 2),
        ];
        assert_eq!(found(&timeline, None), Ok(4));
        assert_eq!(found(&timeline, Some("build")), Ok(4), "the latest visit");
        assert_eq!(found(&timeline, Some("build@1")), Ok(2));
        assert_eq!(found(&timeline, Some("@3")), Ok(3));
        let missing = found(&timeline, Some("deploy")).unwrap_err();
        assert!(missing.contains("no checkpoint `deploy`"), "{missing}");
        assert!(missing.contains("@2 build@1"), "{missing}");
        assert!(found(&timeline, Some("build@x")).is_err());
        assert!(found(&timeline, Some("@9")).is_err());
        assert!(found(&[], None).unwrap_err().contains("no checkpoints"));
    }

    #[test]
    fn a_forked_checkpoint_names_the_new_run_and_its_work_dir_in_every_context() {
        let checkpoint = serde_json::json!({
            "context_values": {"internal.run_id": "OLD", "internal.work_dir": "/old", "k": 1},
            "parallel": {"branches": [{"id": "a", "context": {"internal.run_id": "OLD"}}]}
        });
        let new = rebased(&checkpoint, "NEW", Path::new("/new/worktree"));
        assert_eq!(new["context_values"]["internal.run_id"], "NEW");
        assert_eq!(new["context_values"]["internal.work_dir"], "/new/worktree");
        assert_eq!(new["context_values"]["k"], 1);
        assert_eq!(
            new["parallel"]["branches"][0]["context"]["internal.run_id"],
            "NEW"
        );
    }
}
