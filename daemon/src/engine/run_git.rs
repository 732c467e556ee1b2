//! Git checkpoint mode for a run (execution/checkpoints.mdx; docs/git.md):
//! a run whose work dir is in a git repository works in a worktree of its
//! own, on the branch `weft/run/{run_id}`, and every committed stage's
//! changes become a commit there, linked by its `Weft-Checkpoint` trailer
//! to a commit on the orphan branch `weft/meta/{run_id}` that holds the
//! checkpoint and the stage's outcome.
//!
//! - [`plan`]: when the run is recorded, whether it is checkpointed and
//!   where (the [`GitPlan`], stored with the run's options).
//! - [`RunGit::open`]: when it starts executing, the branch and worktree
//!   (created, or on resume reopened and reset to the last checkpoint).
//! - [`RunGit::commit_stage`]: after each stage.
//! - [`RunGit::finish`]: at the end, `final.patch` and the worktree's
//!   removal.
//!
//! Git trouble after the start never fails a run: the stage is committed
//! to the store as always and a notice says what git could not do (the
//! reference makes these steps best-effort).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::git::{
    Checkout, Checkpointer, Discovery, GitError, MetadataBranch, RunBranch, stage_message,
};
use crate::model::RunStatus;
use crate::util::lock::lock;

/// Where a checkpointed run works, decided when it is recorded and stored
/// with its options, so a resume finds the same branch and worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct GitPlan {
    /// The top of the user's checkout.
    pub repo: PathBuf,
    /// The work dir's place inside the checkout (empty at its top): the
    /// run works in the same place inside its worktree.
    pub subdir: PathBuf,
    /// HEAD when the run was recorded.
    pub base_sha: String,
    pub branch: String,
    pub meta_branch: String,
    pub worktree: PathBuf,
    /// Copy the checkout's uncommitted changes into the worktree.
    #[serde(default)]
    pub include_dirty: bool,
}

impl GitPlan {
    /// Where the run's commands run: the work dir's place in the worktree.
    #[must_use]
    pub fn work_dir(&self) -> PathBuf {
        if self.subdir.as_os_str().is_empty() {
            self.worktree.clone()
        } else {
            self.worktree.join(&self.subdir)
        }
    }
}

/// Whether a run whose work dir is `work_dir` is checkpointed, and where;
/// decided before anything is recorded, for a run that asked for
/// checkpoints (not a dry run, nor a child run, which works in its parent's
/// worktree, nor one started with `--no-checkpoint`). A work dir in no
/// repository has none.
///
/// The plan's `worktree` is left empty: the caller sets it once the run
/// directory exists.
///
/// # Errors
/// The work dir is in a repository a run cannot branch from (bare, no
/// commits): the message says why and to use `--no-checkpoint`.
pub(crate) fn plan(
    work_dir: &Path,
    run_id: &str,
    include_dirty: bool,
) -> Result<Option<GitPlan>, String> {
    let checkout = match Checkout::discover(work_dir) {
        Ok(Discovery::NotARepository) => return Ok(None),
        Ok(Discovery::Checkout(checkout)) => checkout,
        Err(e) => {
            return Err(format!(
                "cannot checkpoint the run in git: {e} (run with --no-checkpoint to run without checkpoints)"
            ));
        }
    };
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let repo = canonical(&checkout.root);
    let subdir = canonical(work_dir)
        .strip_prefix(&repo)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    Ok(Some(GitPlan {
        repo,
        subdir,
        base_sha: checkout.head_sha,
        branch: format!("weft/run/{run_id}"),
        meta_branch: format!("weft/meta/{run_id}"),
        worktree: PathBuf::new(),
        include_dirty,
    }))
}

/// A checkpointed run's branch, worktree and metadata branch while it
/// executes; shared by its parallel branches, whose commits it serialises.
#[derive(Debug)]
pub(crate) struct RunGit {
    plan: GitPlan,
    run_id: String,
    branch: RunBranch,
    /// The run branch's head as the last checkpoint knows it, and what
    /// writes the checkpoints; the lock keeps two parallel branches'
    /// checkpoints from interleaving.
    head: Mutex<(String, Checkpointer)>,
}

/// What checkpointing one stage did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StageGit {
    /// The stage's commit; `None` when it changed nothing.
    pub commit: Option<String>,
    /// The run branch's head after the stage.
    pub head: String,
    pub patch: String,
    pub patch_complete: bool,
    /// The paths the stage added, changed or deleted.
    pub files: Vec<String>,
}

/// How the run's checkout started, for the notices at its start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Opened {
    /// Things the user should know (uncommitted changes left out,
    /// submodules not checked out, a shallow clone).
    pub notices: Vec<String>,
}

impl RunGit {
    /// The run's branch and worktree, ready for its next stage.
    ///
    /// - A new run: the branch at the plan's base and the worktree on it;
    ///   with `include_dirty`, the checkout's uncommitted changes copied in
    ///   and committed first; the metadata branch starts with the workflow.
    /// - A resumed run: the worktree reopened (added again if deleted,
    ///   stale locks cleared) and reset to `checkpoint_sha`, the head the
    ///   last checkpoint recorded, or to where the run started when nothing
    ///   was committed: a half-done stage leaves nothing behind.
    ///
    /// # Errors
    /// Git cannot create or reopen the branch or worktree.
    pub fn open(
        plan: &GitPlan,
        run_id: &str,
        resumed: bool,
        checkpoint_sha: Option<&str>,
        graph_source: &[u8],
    ) -> Result<(RunGit, Opened), GitError> {
        let mut opened = Opened::default();
        let branch = if resumed {
            let branch =
                RunBranch::reopen(&plan.repo, &plan.branch, &plan.base_sha, &plan.worktree)?;
            let target = match checkpoint_sha {
                Some(sha) => sha.to_string(),
                None => branch.start_sha()?,
            };
            branch.reset_to(&target)?;
            branch
        } else {
            let checkout = Checkout {
                root: plan.repo.clone(),
                head_sha: plan.base_sha.clone(),
                branch: None,
                dirty: false,
                shallow: false,
            };
            let branch = RunBranch::start(&checkout, &plan.branch, &plan.worktree)?;
            let now = match Checkout::discover(&plan.repo) {
                Ok(Discovery::Checkout(now)) => Some(now),
                _ => None,
            };
            if let Some(now) = &now {
                if now.shallow {
                    opened.notices.push(
                        "the repository is a shallow clone: the run's branch starts from its HEAD as usual, but history before it may be missing".to_string(),
                    );
                }
                if now.dirty && !plan.include_dirty {
                    opened.notices.push(format!(
                        "the checkout at {} has uncommitted changes; the run's worktree starts from the committed HEAD ({}) without them (commit or stash them, or run with --include-dirty)",
                        plan.repo.display(),
                        short(&plan.base_sha)
                    ));
                }
            }
            if plan.include_dirty {
                let copied = crate::git::dirty::copy_uncommitted(&plan.repo, &plan.worktree)?;
                if !copied.is_empty() {
                    let message = format!(
                        "weft({run_id}): the checkout's uncommitted changes\n\nWeft-Run: {run_id}\n"
                    );
                    branch.commit_stage(&message)?;
                    opened.notices.push(format!(
                        "--include-dirty: {} uncommitted file(s) of the checkout are in the run's worktree, committed as the run's first commit",
                        copied.len()
                    ));
                }
            }
            if has_submodules(&plan.repo) {
                opened.notices.push(
                    "the repository has submodules; they are not checked out in the run's worktree"
                        .to_string(),
                );
            }
            branch
        };
        let work_dir = plan.work_dir();
        if !work_dir.exists() {
            // The work dir is ignored or untracked in the checkout, so the
            // worktree lacks it.
            std::fs::create_dir_all(&work_dir)
                .map_err(|e| GitError(format!("cannot create {}: {e}", work_dir.display())))?;
        }
        let meta = MetadataBranch::new(&plan.repo, &plan.meta_branch);
        if !resumed {
            meta.write(
                &format!("weft({run_id}): started"),
                &[("graph.fabro", graph_source)],
            )?;
        }
        let head = branch.head_sha()?;
        Ok((
            RunGit {
                plan: plan.clone(),
                run_id: run_id.to_string(),
                branch: branch.clone(),
                head: Mutex::new((head, Checkpointer::new(branch, meta))),
            },
            opened,
        ))
    }

    /// The run branch's head as of the last checkpoint.
    #[must_use]
    pub fn head(&self) -> String {
        lock(&self.head).0.clone()
    }

    /// Checkpoints a stage: the metadata branch gets the checkpoint and the
    /// stage's outcome (`stages/{rank:04}-{node}@{visit}/outcome.json`),
    /// then the worktree's changes are committed on the run branch with
    /// the trailers, `Weft-Checkpoint` naming that metadata commit.
    ///
    /// # Errors
    /// Git cannot write either branch; the head stays where it was.
    pub fn commit_stage(
        &self,
        stage: &StageRef<'_>,
        checkpoint_json: &[u8],
        outcome_json: &[u8],
    ) -> Result<StageGit, GitError> {
        let mut head = lock(&self.head);
        let (head, checkpointer) = &mut *head;
        let folder = format!(
            "stages/{:04}-{}@{}",
            stage.completed,
            path_safe(stage.node),
            stage.visit
        );
        let outcome_path = format!("{folder}/outcome.json");
        let checkpoint = checkpointer.checkpoint(
            &format!("weft({}): {}@{}", self.run_id, stage.node, stage.visit),
            &[
                ("checkpoint.json", checkpoint_json),
                (&outcome_path, outcome_json),
            ],
            |metadata_sha| {
                stage_message(
                    &self.run_id,
                    stage.node,
                    stage.status,
                    stage.completed,
                    Some(metadata_sha),
                )
            },
        )?;
        let commit = checkpoint.stage;
        head.clone_from(&commit.head_sha);
        Ok(StageGit {
            commit: commit.sha,
            head: commit.head_sha,
            patch: commit.patch,
            patch_complete: commit.patch_complete,
            files: commit.files,
        })
    }

    /// The run's end: `final.patch` (base to head) written to `run_dir`,
    /// and the worktree removed when the run succeeded (kept for inspection
    /// after a failure, and while the run can still continue). Returns the
    /// head and the problems met, as notices.
    pub fn finish(&self, status: RunStatus, run_dir: &Path) -> (String, Vec<String>) {
        let mut notices = Vec::new();
        let head = self.head();
        match self.branch.final_patch() {
            Ok((patch, complete)) => {
                if let Err(e) =
                    crate::store::write_atomic(&run_dir.join("final.patch"), patch.as_bytes())
                {
                    notices.push(format!("could not write final.patch: {e}"));
                }
                if !complete {
                    notices.push(format!(
                        "final.patch is cut at {} MiB; `git diff {}..{}` shows it all",
                        self.branch.max_patch_bytes / (1024 * 1024),
                        short(&self.plan.base_sha),
                        self.plan.branch
                    ));
                }
            }
            Err(e) => notices.push(format!("could not write final.patch: {e}")),
        }
        if status == RunStatus::Succeeded
            && let Err(e) = self.branch.remove_worktree()
        {
            notices.push(format!("could not remove the run's worktree: {e}"));
        }
        (head, notices)
    }
}

/// The stage being checkpointed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StageRef<'a> {
    pub node: &'a str,
    pub visit: u32,
    pub status: &'a str,
    /// Stages completed, this one included.
    pub completed: u32,
}

/// The first 12 characters of a sha, as people read them.
#[must_use]
pub(crate) fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// A node id as one path component of the metadata branch.
fn path_safe(node: &str) -> String {
    node.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Whether the checkout declares submodules (a `.gitmodules` file).
fn has_submodules(repo: &Path) -> bool {
    repo.join(".gitmodules").is_file()
}
