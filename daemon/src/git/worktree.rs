//! A run's worktree over the rest of its life, after
//! [`RunBranch::start`]: opened again when the run resumes (recreated if it
//! was deleted, its stale lock files cleared, reset to the last checkpoint),
//! its base diffed against the branch's head at the end, and removed when
//! the run no longer needs it. The branch itself always stays.

use std::path::{Path, PathBuf};

use git2::{BranchType, Repository, WorktreeAddOptions, WorktreePruneOptions};

use super::run_branch::{diff, worktree_name};
use super::{GitError, RunBranch};

/// How far [`RunBranch::start_sha`] walks back looking for the commit the
/// run started from: more stage commits than any run makes.
const MAX_WALK: usize = 100_000;

impl RunBranch {
    /// The run branch `branch` of the repository whose checkout is at
    /// `repo`, worked on in `worktree`, started from `base_sha`, as it was
    /// left: the worktree is added again when it is gone (deleted by hand,
    /// or removed when the run ended), and lock files a killed process left
    /// in the branch's refs and the worktree's index are removed, with
    /// temporary packs a killed writer left over an hour ago. Nothing
    /// else runs on a run's branch, so a lock there is always stale.
    ///
    /// # Errors
    /// The branch is gone, or git cannot add the worktree.
    pub fn reopen(
        repo: &Path,
        branch: &str,
        base_sha: &str,
        worktree: &Path,
    ) -> Result<RunBranch, GitError> {
        let repository = Repository::open(repo)
            .map_err(|e| GitError::from_git("cannot open the repository", &e))?;
        let common = repository.commondir().to_path_buf();
        let name = worktree_name(branch);
        remove_stale_locks(&common, branch, &name);
        let found = repository.find_branch(branch, BranchType::Local).map_err(|_| {
            GitError(format!(
                "the run's branch {branch} is gone from {}: the run cannot continue its checkpoints",
                repo.display()
            ))
        })?;
        if !worktree.join(".git").exists() {
            // Whatever git recorded for the old worktree is stale now.
            if let Ok(old) = repository.find_worktree(&name) {
                let mut prune = WorktreePruneOptions::new();
                prune.valid(true).locked(true).working_tree(false);
                let _ = old.prune(Some(&mut prune));
            }
            if worktree.exists() {
                std::fs::remove_dir_all(worktree)
                    .map_err(|e| GitError(format!("cannot clear {}: {e}", worktree.display())))?;
            }
            if let Some(parent) = worktree.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| GitError(format!("cannot create {}: {e}", parent.display())))?;
            }
            let mut options = WorktreeAddOptions::new();
            options.reference(Some(found.get()));
            repository
                .worktree(&name, worktree, Some(&options))
                .map_err(|e| {
                    GitError::from_git(
                        &format!("cannot add the worktree again at {}", worktree.display()),
                        &e,
                    )
                })?;
        }
        Ok(RunBranch {
            branch: branch.to_string(),
            base_sha: base_sha.to_string(),
            worktree: worktree.to_path_buf(),
            max_patch_bytes: super::run_branch::MAX_PATCH_BYTES,
        })
    }

    /// Makes the worktree and the branch exactly `sha`: the branch moves
    /// there (dropping commits after it, which belong to a stage that was
    /// not completed), and every change in the worktree, untracked files
    /// included, is discarded. Files .gitignore ignores are left alone.
    ///
    /// # Errors
    /// `sha` is not a commit, or git cannot write the worktree.
    pub fn reset_to(&self, sha: &str) -> Result<(), GitError> {
        let repo = self.open()?;
        let target = repo
            .revparse_single(sha)
            .map_err(|e| GitError::from_git(&format!("cannot find the commit {sha}"), &e))?;
        repo.reset(&target, git2::ResetType::Hard, None)
            .map_err(|e| GitError::from_git(&format!("cannot reset the worktree to {sha}"), &e))?;
        let mut options = git2::StatusOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(false)
            .include_ignored(false)
            .exclude_submodules(true);
        let statuses = repo
            .statuses(Some(&mut options))
            .map_err(|e| GitError::from_git("cannot scan the worktree", &e))?;
        for entry in statuses.iter() {
            if !entry.status().contains(git2::Status::WT_NEW) {
                continue;
            }
            let Some(path) = entry.path() else { continue };
            let full = self.worktree.join(path);
            let removed = match std::fs::symlink_metadata(&full) {
                Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&full),
                Ok(_) => std::fs::remove_file(&full),
                Err(_) => Ok(()),
            };
            removed.map_err(|e| GitError(format!("cannot remove {}: {e}", full.display())))?;
        }
        Ok(())
    }

    /// The commit the run's stages started from: the base, or the snapshot
    /// of the checkout's uncommitted changes committed on top of it. Found
    /// by walking back from the branch's head past the stage commits (the
    /// ones with a `Weft-Completed` trailer).
    ///
    /// # Errors
    /// Git cannot read the branch.
    pub fn start_sha(&self) -> Result<String, GitError> {
        let repo = self.open()?;
        let mut commit = repo
            .find_branch(&self.branch, BranchType::Local)
            .and_then(|b| b.get().peel_to_commit())
            .map_err(|e| GitError::from_git("cannot read the run's branch", &e))?;
        for _ in 0..MAX_WALK {
            let id = commit.id().to_string();
            let is_stage = commit
                .message_raw()
                .is_some_and(|m| m.contains("\nWeft-Completed: "));
            if id == self.base_sha || !is_stage {
                return Ok(id);
            }
            commit = match commit.parent(0) {
                Ok(parent) => parent,
                Err(_) => return Ok(id),
            };
        }
        Ok(self.base_sha.clone())
    }

    /// The branch's head.
    ///
    /// # Errors
    /// Git cannot read the branch.
    pub fn head_sha(&self) -> Result<String, GitError> {
        let repo = self.open()?;
        repo.find_branch(&self.branch, BranchType::Local)
            .and_then(|b| b.get().peel_to_commit())
            .map(|c| c.id().to_string())
            .map_err(|e| GitError::from_git("cannot read the run's branch", &e))
    }

    /// The whole run's changes: the unified diff from the base to the
    /// branch's head, cut at [`RunBranch::max_patch_bytes`]; with whether
    /// it is complete.
    ///
    /// # Errors
    /// Git cannot read the commits.
    pub fn final_patch(&self) -> Result<(String, bool), GitError> {
        let repo = self.open()?;
        let tree = |sha: &str| {
            repo.revparse_single(sha)
                .and_then(|o| o.peel_to_tree())
                .map_err(|e| GitError::from_git(&format!("cannot read the commit {sha}"), &e))
        };
        let head = self.head_sha()?;
        let (patch, complete, _) = diff(
            &repo,
            &tree(&self.base_sha)?,
            &tree(&head)?,
            self.max_patch_bytes,
        )?;
        Ok((patch, complete))
    }

    /// Removes the worktree (its files and git's record of it); the branch
    /// stays, so the run's commits remain reachable.
    ///
    /// # Errors
    /// The files cannot be removed.
    pub fn remove_worktree(&self) -> Result<(), GitError> {
        let repo = self.open()?;
        let common: PathBuf = repo.commondir().to_path_buf();
        drop(repo);
        if self.worktree.exists() {
            std::fs::remove_dir_all(&self.worktree)
                .map_err(|e| GitError(format!("cannot remove {}: {e}", self.worktree.display())))?;
        }
        let main = Repository::open(&common)
            .map_err(|e| GitError::from_git("cannot open the repository", &e))?;
        if let Ok(old) = main.find_worktree(&worktree_name(&self.branch)) {
            let mut prune = WorktreePruneOptions::new();
            prune.valid(true).locked(true).working_tree(false);
            old.prune(Some(&mut prune))
                .map_err(|e| GitError::from_git("cannot forget the worktree", &e))?;
        }
        Ok(())
    }

    fn open(&self) -> Result<Repository, GitError> {
        Repository::open(&self.worktree)
            .map_err(|e| GitError::from_git("cannot open the run's worktree", &e))
    }
}

/// Creates the branch `branch` at the commit `sha` of the repository at
/// `repo`: the run branch of a run forked from another's checkpoint. Its
/// worktree is added when that run resumes ([`RunBranch::reopen`]).
///
/// # Errors
/// The branch exists already, or `sha` is not a commit there.
pub fn create_branch(repo: &Path, branch: &str, sha: &str) -> Result<(), GitError> {
    let repository =
        Repository::open(repo).map_err(|e| GitError::from_git("cannot open the repository", &e))?;
    if repository.find_branch(branch, BranchType::Local).is_ok() {
        return Err(GitError(format!(
            "the branch {branch} exists already in {}",
            repo.display()
        )));
    }
    let commit = repository
        .revparse_single(sha)
        .and_then(|o| o.peel_to_commit())
        .map_err(|e| GitError::from_git(&format!("cannot find the commit {sha}"), &e))?;
    repository
        .branch(branch, &commit, false)
        .map(|_| ())
        .map_err(|e| GitError::from_git(&format!("cannot create the branch {branch}"), &e))
}

/// Removes the lock files a process killed in the middle of a checkpoint
/// leaves: the run branch's and metadata branch's ref locks (under the
/// common git directory) and the worktree's index lock.
fn remove_stale_locks(common: &Path, branch: &str, worktree_name: &str) {
    let mut locks = vec![
        common.join(format!("refs/heads/{branch}.lock")),
        common
            .join("worktrees")
            .join(worktree_name)
            .join("index.lock"),
        common
            .join("worktrees")
            .join(worktree_name)
            .join("HEAD.lock"),
    ];
    if let Some(run_id) = branch.strip_prefix("weft/run/") {
        locks.push(common.join(format!("refs/heads/weft/meta/{run_id}.lock")));
    }
    for lock in locks {
        let _ = std::fs::remove_file(lock);
    }
    remove_abandoned_packs(&common.join("objects/pack"));
}

/// A pack whose writer was killed stays behind as a temporary file
/// (libgit2 names them `pack_git2_*`). Another process may be writing one
/// right now, so only those untouched for an hour are removed, as `git gc`
/// leaves recent temporary files alone.
fn remove_abandoned_packs(pack_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(pack_dir) else {
        return;
    };
    let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for entry in entries.flatten() {
        let abandoned = entry
            .file_name()
            .to_string_lossy()
            .starts_with("pack_git2_")
            && entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|modified| modified < an_hour_ago);
        if abandoned {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
