//! A git-checkpointed run's changes, for the app's Files Changed view: the
//! run's git facts from `manifest.json` and `conclusion.json`, the run's
//! `final.patch` and each stage's `nodes/{dir}/diff.patch`, all read from
//! the run directory so the view works with weftd stopped.
//!
//! The engine writes those files (docs/git.md); this side only reads them,
//! bounded: a stage's patch may be up to 32 MiB (the engine's cut) and the
//! run's final patch has no cap of its own, so the app gets at most
//! [`PATCH_VIEW_MAX`] bytes of either, cut at a line's end and marked.

use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::Views;
use crate::model::RunStatus;
use crate::store::{Result, RunDir};

/// The most bytes of a patch the app is sent (4 MiB). A longer patch is cut
/// at the end of a line within it and [`Changes::truncated`] says so; the
/// whole file stays in the run directory (`weft dump`, `git`).
pub(crate) const PATCH_VIEW_MAX: u64 = 4 * crate::limits::MIB;

/// The most bytes of `manifest.json`, `conclusion.json` or a stage's
/// `status.json` read for the git facts (they are a few hundred bytes).
const RUN_JSON_MAX: u64 = crate::limits::MIB;

/// A checkpointed run's git facts. A run that is not checkpointed (its work
/// dir was not in a git repository, or checkpoints were switched off) has
/// none: `RunView.git` is absent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct RunGit {
    /// The commit the run started from (40 hex digits).
    pub base_sha: String,
    /// The run's branch, `weft/run/{run_id}`.
    pub run_branch: String,
    /// The metadata branch, `weft/meta/{run_id}`, when recorded.
    pub meta_branch: Option<String>,
    /// The top of the user's checkout the run started from, when recorded.
    pub repo: Option<String>,
    /// The run branch's last commit once the run ended (`conclusion.json`).
    pub final_git_commit_sha: Option<String>,
}

/// What a patch read found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ChangesState {
    /// The patch file holds changes: [`Changes::patch`].
    Recorded,
    /// The patch file is empty: the stage (or the run) changed nothing.
    Empty,
    /// The run has no git checkpoints, so no patches at all.
    NotCheckpointed,
    /// Not written yet: a stage's when it completes, the run's
    /// `final.patch` when the run ends (meanwhile each stage has its own).
    Pending,
    /// The run (or stage) is over and checkpointed, but the file is absent
    /// or unreadable (a stage that failed before its commit, a run from
    /// before patches were written, a removed file).
    Missing,
}

/// A run's or a stage's changes as a unified git diff, for a diff viewer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Changes {
    pub state: ChangesState,
    /// The patch text (invalid UTF-8 replaced), at most [`PATCH_VIEW_MAX`]
    /// bytes; empty unless `state` is `recorded`.
    pub patch: String,
    /// The size of the whole patch file in bytes (0 when there is none).
    pub size: u64,
    /// Whether `patch` is only the start of the file (cut at a line's end
    /// to fit [`PATCH_VIEW_MAX`]).
    pub truncated: bool,
    /// Whether the engine itself cut the stage's patch (its `status.json`
    /// says `"patch_complete": false`): the commit holds the whole change,
    /// the patch only its start. Always false for a run's `final.patch`.
    pub incomplete: bool,
}

impl Changes {
    fn without_patch(state: ChangesState) -> Changes {
        Changes {
            state,
            patch: String::new(),
            size: 0,
            truncated: false,
            incomplete: false,
        }
    }
}

impl Views {
    /// The run's changes from its base commit to its last one
    /// (`final.patch`): `pending` while the run can still go on (running,
    /// blocked, queued, cancelled or interrupted: resumable), `missing` when
    /// it ended without one.
    pub fn run_changes(&self, id_or_prefix: &str) -> Result<Changes> {
        let store = self.store(id_or_prefix)?;
        let record = store.find_run(id_or_prefix)?;
        if run_git(&record.run_dir).is_none() {
            return Ok(Changes::without_patch(ChangesState::NotCheckpointed));
        }
        let ended = matches!(record.status, RunStatus::Succeeded | RunStatus::Failed);
        let absent = if ended {
            ChangesState::Missing
        } else {
            ChangesState::Pending
        };
        Ok(
            read_patch(&record.run_dir.join("final.patch"), PATCH_VIEW_MAX)
                .unwrap_or_else(|| Changes::without_patch(absent)),
        )
    }

    /// The changes of stage `node_id@visit` (its `diff.patch`): `empty` when
    /// it changed nothing, `pending` while it runs, `missing` when it has
    /// no patch otherwise (it never ran, or failed before its commit).
    pub fn stage_changes(&self, id_or_prefix: &str, node_id: &str, visit: u32) -> Result<Changes> {
        let store = self.store(id_or_prefix)?;
        let record = store.find_run(id_or_prefix)?;
        if run_git(&record.run_dir).is_none() {
            return Ok(Changes::without_patch(ChangesState::NotCheckpointed));
        }
        let folder = RunDir::open(&record.run_dir).node_dir(node_id, visit);
        if let Some(mut changes) = read_patch(&folder.join("diff.patch"), PATCH_VIEW_MAX) {
            changes.incomplete = read_json(&folder.join("status.json"))
                .and_then(|s| s.get("patch_complete").and_then(serde_json::Value::as_bool))
                == Some(false);
            return Ok(changes);
        }
        let running = store
            .stages(&record.id)?
            .iter()
            .any(|s| s.node_id == node_id && s.visit == visit && s.status == "running");
        Ok(Changes::without_patch(if running {
            ChangesState::Pending
        } else {
            ChangesState::Missing
        }))
    }
}

/// The run's git facts, from `manifest.json` (`base_sha` and `run_branch`
/// both strings make a checkpointed run) and `conclusion.json`.
pub(crate) fn run_git(run_dir: &Path) -> Option<RunGit> {
    let manifest = read_json(&run_dir.join("manifest.json"))?;
    let text =
        |v: &serde_json::Value, key: &str| v.get(key).and_then(|s| s.as_str()).map(String::from);
    let conclusion = read_json(&run_dir.join("conclusion.json"));
    Some(RunGit {
        base_sha: text(&manifest, "base_sha")?,
        run_branch: text(&manifest, "run_branch")?,
        meta_branch: text(&manifest, "meta_branch"),
        repo: text(&manifest, "repo"),
        final_git_commit_sha: conclusion.and_then(|c| text(&c, "final_git_commit_sha")),
    })
}

/// A small JSON file Weft wrote, or `None` when it is missing, too large or
/// does not parse.
fn read_json(path: &Path) -> Option<serde_json::Value> {
    let bytes = crate::limits::read_capped(path, RUN_JSON_MAX).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The patch file at `path`, at most `max` bytes of it (cut after the last
/// newline within them); `None` when it is missing or not a regular file.
fn read_patch(path: &Path, max: u64) -> Option<Changes> {
    let file = crate::limits::open_regular(path).ok()?;
    let size = file.metadata().ok()?.len();
    let mut bytes = Vec::new();
    // One byte past the cap tells a file that grew since the stat, too.
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .ok()?;
    let truncated = bytes.len() as u64 > max;
    if truncated {
        let cap = usize::try_from(max).unwrap_or(usize::MAX);
        bytes.truncate(cap);
        // End at a whole line, so the viewer never shows half a line (or
        // half a UTF-8 sequence) as if it were the patch's.
        let end = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(end);
    }
    let state = if size == 0 && bytes.is_empty() {
        ChangesState::Empty
    } else {
        ChangesState::Recorded
    };
    Some(Changes {
        state,
        patch: String::from_utf8_lossy(&bytes).into_owned(),
        size: size.max(bytes.len() as u64),
        truncated,
        incomplete: false,
    })
}

#[cfg(test)]
mod tests;
