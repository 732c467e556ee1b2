//! `weft apply RUN`: a checkpointed run's result brought into the user's
//! checkout — the rules about the run (it must have been checkpointed and
//! have ended; a failed one needs `force`), read from its run directory
//! (manifest.json's `run_branch`, `base_sha` and `repo`, and final.patch),
//! in one place for the CLI and the daemon. The repository work is
//! [`crate::git::apply`].

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::git::{Applied, ApplyErrorKind, ApplyMode, ApplyRequest};
use crate::limits::{MIB, read_capped, read_text_capped};
use crate::model::{Code, RunStatus};
use crate::store::RunRecord;

/// Largest manifest.json read (a few hundred bytes in practice).
const MAX_MANIFEST_BYTES: u64 = MIB;

/// Largest final.patch read: the engine cuts it at
/// [`crate::git::run_branch::MAX_PATCH_BYTES`] (32 MiB); a little more is
/// allowed for nothing in particular, anything beyond is not its own.
const MAX_FINAL_PATCH_BYTES: u64 = 33 * MIB;

/// What to do with a run.
#[derive(Debug, Clone, Default)]
pub struct ApplyOptions {
    /// The branch to merge into; `None` for the one checked out.
    pub to: Option<String>,
    /// Apply final.patch to the working tree instead of merging.
    pub patch: bool,
    /// Apply a run that failed (or was cancelled or interrupted) too.
    pub force: bool,
}

/// What applying a run did (the result of `weft apply --json` and of
/// `run.apply`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunApplied {
    pub run_id: String,
    /// The run's branch (`weft/run/{id}`).
    pub run_branch: String,
    /// The checkout it was applied to.
    pub repo: PathBuf,
    #[serde(flatten)]
    pub applied: Applied,
}

/// Why a run was not applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunApplyErrorKind {
    /// The run has no run branch: its work dir was in no repository, or it
    /// ran with `--no-checkpoint`.
    NotCheckpointed,
    /// Queued, running or waiting at a gate.
    NotEnded,
    /// Failed, cancelled or interrupted, and `force` was not given.
    NeedsForce,
    /// The run directory cannot be read (manifest.json, final.patch).
    RunDir,
    /// The repository refused or failed (see [`ApplyErrorKind`]).
    Git(ApplyErrorKind),
}

/// Why a run was not applied, worded for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunApplyError {
    pub kind: RunApplyErrorKind,
    pub message: String,
}

impl std::fmt::Display for RunApplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RunApplyError {}

impl RunApplyError {
    /// The error's code on the wire, so the app never reads the message
    /// to tell a dirty checkout from a conflict.
    #[must_use]
    pub fn code(&self) -> Code {
        match &self.kind {
            RunApplyErrorKind::NotCheckpointed => Code::ApplyNotCheckpointed,
            RunApplyErrorKind::NotEnded => Code::ApplyRunNotEnded,
            RunApplyErrorKind::NeedsForce => Code::ApplyNeedsForce,
            RunApplyErrorKind::RunDir | RunApplyErrorKind::Git(ApplyErrorKind::Git) => {
                Code::ApplyFailed
            }
            RunApplyErrorKind::Git(ApplyErrorKind::Dirty { .. }) => Code::ApplyDirty,
            RunApplyErrorKind::Git(ApplyErrorKind::Conflicts { .. }) => Code::ApplyConflicts,
            RunApplyErrorKind::Git(ApplyErrorKind::PatchDoesNotApply) => {
                Code::ApplyPatchDoesNotApply
            }
            RunApplyErrorKind::Git(
                ApplyErrorKind::OperationInProgress
                | ApplyErrorKind::NoRunBranch
                | ApplyErrorKind::Detached
                | ApplyErrorKind::WeftBranch
                | ApplyErrorKind::NoSuchBranch
                | ApplyErrorKind::CheckedOutElsewhere,
            ) => Code::ApplyNoTarget,
        }
    }

    /// The paths a refusal is about (dirty files, conflicts; the first
    /// few), empty for the others.
    #[must_use]
    pub fn paths(&self) -> &[String] {
        match &self.kind {
            RunApplyErrorKind::Git(
                ApplyErrorKind::Dirty { paths } | ApplyErrorKind::Conflicts { paths },
            ) => paths,
            _ => &[],
        }
    }
}

fn refused(kind: RunApplyErrorKind, message: String) -> RunApplyError {
    RunApplyError { kind, message }
}

/// manifest.json's git fields; all `None` for a run without checkpoints.
#[derive(Debug, serde::Deserialize)]
struct Manifest {
    run_branch: Option<String>,
    base_sha: Option<String>,
    repo: Option<PathBuf>,
}

/// Brings the run `record`'s result into its checkout as `options` say.
/// Blocking (git work on the user's repository).
///
/// # Errors
/// The run cannot be applied (not checkpointed, not ended, failed without
/// `force`), its run directory cannot be read, or [`crate::git::apply`]
/// refused; each message says why and what to do.
pub fn apply_run(record: &RunRecord, options: &ApplyOptions) -> Result<RunApplied, RunApplyError> {
    let id = &record.id;
    check_status(record, options.force)?;
    let manifest = read_manifest(&record.run_dir)?;
    let (Some(run_branch), Some(base_sha), Some(repo)) =
        (manifest.run_branch, manifest.base_sha, manifest.repo)
    else {
        return Err(refused(
            RunApplyErrorKind::NotCheckpointed,
            format!(
                "run {id} was not checkpointed (its work dir was not in a git repository, or \
                 it ran with --no-checkpoint): there is nothing to apply"
            ),
        ));
    };
    let final_patch;
    let message = merge_message(record);
    let mode = if options.patch {
        final_patch = read_final_patch(&record.run_dir, id)?;
        ApplyMode::Patch {
            patch: &final_patch,
        }
    } else {
        ApplyMode::Merge { message: &message }
    };
    let request = ApplyRequest {
        root: &repo,
        run_branch: &run_branch,
        base_sha: &base_sha,
        to: options.to.as_deref(),
        mode,
    };
    let applied = crate::git::apply(&request)
        .map_err(|e| refused(RunApplyErrorKind::Git(e.kind), e.message))?;
    Ok(RunApplied {
        run_id: id.clone(),
        run_branch,
        repo,
        applied,
    })
}

/// A run that ended well can be applied; one that failed, was cancelled or
/// was interrupted holds the work of the stages that completed, which is
/// applied only on request; one still going is refused (its branch is
/// still moving).
fn check_status(record: &RunRecord, force: bool) -> Result<(), RunApplyError> {
    let id = &record.id;
    match record.status {
        RunStatus::Succeeded => Ok(()),
        RunStatus::Queued | RunStatus::Running | RunStatus::Blocked => Err(refused(
            RunApplyErrorKind::NotEnded,
            format!(
                "run {id} is {} and its branch may still change: wait for it to end (`weft \
                 events {id} --follow`), then apply it",
                record.status
            ),
        )),
        RunStatus::Failed | RunStatus::Cancelled | RunStatus::Interrupted if !force => {
            let why = record
                .failure_reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            Err(refused(
                RunApplyErrorKind::NeedsForce,
                format!(
                    "run {id} {}{why}: its branch holds only the work of the stages that \
                     completed; pass --force to apply it anyway",
                    match record.status {
                        RunStatus::Failed => "failed",
                        RunStatus::Cancelled => "was cancelled",
                        _ => "was interrupted",
                    }
                ),
            ))
        }
        RunStatus::Failed | RunStatus::Cancelled | RunStatus::Interrupted => Ok(()),
    }
}

fn read_manifest(run_dir: &Path) -> Result<Manifest, RunApplyError> {
    let path = run_dir.join("manifest.json");
    let cannot = |why: String| {
        refused(
            RunApplyErrorKind::RunDir,
            format!("cannot read {}: {why}", path.display()),
        )
    };
    let bytes = read_capped(&path, MAX_MANIFEST_BYTES).map_err(|e| cannot(e.to_string()))?;
    serde_json::from_slice(&bytes).map_err(|e| cannot(e.to_string()))
}

fn read_final_patch(run_dir: &Path, id: &str) -> Result<String, RunApplyError> {
    let path = run_dir.join("final.patch");
    read_text_capped(&path, MAX_FINAL_PATCH_BYTES).map_err(|e| {
        let why = match e {
            crate::limits::ReadError::NotFound => format!(
                "run {id} has no final.patch (it is written when the run ends); merging its \
                 branch (without --patch) brings in what it has done"
            ),
            other => format!("cannot read {}: {other}", path.display()),
        };
        refused(RunApplyErrorKind::RunDir, why)
    })
}

/// The merge commit's message: the subject `Merge weft run {id}
/// ({workflow})`, the goal when the run had one, and the `Weft-Run`
/// trailer that stage commits carry too.
fn merge_message(record: &RunRecord) -> String {
    let mut message = format!(
        "Merge weft run {} ({})\n\n",
        record.id, record.workflow_name
    );
    if let Some(goal) = record.goal.as_deref().filter(|g| !g.trim().is_empty()) {
        message.push_str(&format!("Goal: {}\n\n", goal.trim()));
    }
    message.push_str(&format!("Weft-Run: {}\n", record.id));
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(status: RunStatus, run_dir: &Path) -> RunRecord {
        RunRecord {
            pid_start: None,
            id: "01JRUN".into(),
            workflow_name: "ship".into(),
            workflow_path: None,
            goal: Some("ship the login page".into()),
            status,
            run_dir: run_dir.to_path_buf(),
            work_dir: "/w".into(),
            inputs: serde_json::Map::new(),
            options: serde_json::Value::Null,
            labels: Vec::new(),
            created_at: "2026-12-02T12:00:00.000Z".into(),
            started_at: None,
            finished_at: None,
            failure_reason: Some("stage boom failed".into()),
            pid: None,
            last_seq: 0,
            checkpoint: None,
            node_count: 3,
            edge_count: 2,
            llm: None,
            archived: false,
            failed_stages: Vec::new(),
        }
    }

    fn kind(result: Result<RunApplied, RunApplyError>) -> RunApplyErrorKind {
        result.expect_err("refused").kind
    }

    #[test]
    fn a_run_still_going_is_refused_and_one_that_did_not_succeed_needs_force() {
        let dir = tempfile::tempdir().expect("temp");
        let options = ApplyOptions::default();
        for status in [RunStatus::Queued, RunStatus::Running, RunStatus::Blocked] {
            let forced = ApplyOptions {
                force: true,
                ..ApplyOptions::default()
            };
            let error = apply_run(&record(status, dir.path()), &forced).expect_err("going");
            assert_eq!(error.kind, RunApplyErrorKind::NotEnded, "{status}");
            assert_eq!(error.code(), Code::ApplyRunNotEnded);
            assert!(error.message.contains("--follow"), "{error}");
        }
        for status in [
            RunStatus::Failed,
            RunStatus::Cancelled,
            RunStatus::Interrupted,
        ] {
            let error = apply_run(&record(status, dir.path()), &options).expect_err("force");
            assert_eq!(error.kind, RunApplyErrorKind::NeedsForce, "{status}");
            assert!(error.message.contains("--force"), "{error}");
        }
        let failed = apply_run(&record(RunStatus::Failed, dir.path()), &options)
            .expect_err("failed")
            .message;
        assert!(failed.contains("failed (stage boom failed)"), "{failed}");
    }

    #[test]
    fn a_run_without_a_run_branch_has_nothing_to_apply() {
        let dir = tempfile::tempdir().expect("temp");
        std::fs::write(
            dir.path().join("manifest.json"),
            r#"{"run_id":"01JRUN","run_branch":null,"base_sha":null,"repo":null}"#,
        )
        .expect("write");
        let run = record(RunStatus::Succeeded, dir.path());
        let error = apply_run(&run, &ApplyOptions::default()).expect_err("unchecked");
        assert_eq!(error.kind, RunApplyErrorKind::NotCheckpointed);
        assert_eq!(error.code(), Code::ApplyNotCheckpointed);
        assert!(
            error.message.contains("--no-checkpoint") && error.message.contains("nothing to apply"),
            "{error}"
        );
        // A failed run is forced past its status, then stopped the same way.
        let forced = ApplyOptions {
            force: true,
            ..ApplyOptions::default()
        };
        assert_eq!(
            kind(apply_run(&record(RunStatus::Failed, dir.path()), &forced)),
            RunApplyErrorKind::NotCheckpointed
        );

        std::fs::remove_file(dir.path().join("manifest.json")).expect("rm");
        assert_eq!(
            kind(apply_run(&run, &ApplyOptions::default())),
            RunApplyErrorKind::RunDir
        );
    }

    #[test]
    fn the_merge_message_names_the_run_its_workflow_and_goal_with_a_trailer() {
        let run = record(RunStatus::Succeeded, Path::new("/r"));
        assert_eq!(
            merge_message(&run),
            "Merge weft run 01JRUN (ship)\n\nGoal: ship the login page\n\nWeft-Run: 01JRUN\n"
        );
        let no_goal = RunRecord { goal: None, ..run };
        assert_eq!(
            merge_message(&no_goal),
            "Merge weft run 01JRUN (ship)\n\nWeft-Run: 01JRUN\n"
        );
    }
}
