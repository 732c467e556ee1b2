//! A run's branch and worktree: created at the checkout's HEAD, and grown by
//! one commit per stage that changed something (execution/checkpoints.mdx,
//! "Run branch commits", "Worktrees").

use std::path::{Path, PathBuf};

use git2::{
    Commit, DiffFormat, DiffOptions, Repository, Signature, Status, StatusOptions, Tree,
    WorktreeAddOptions,
};

use super::{Checkout, GitError};

/// Who checkpoint commits are by: Weft, not the user, whose identity may
/// not be configured and whose signing key is not needed for bookkeeping.
pub(super) const AUTHOR_NAME: &str = "Weft";
pub(super) const AUTHOR_EMAIL: &str = "weft@localhost";

/// The message of a stage's commit on the run branch: the subject
/// `weft({run_id}): {node} ({status})` and the trailers `Weft-Run`,
/// `Weft-Completed` (stages completed so far) and, when the metadata branch
/// has the checkpoint, `Weft-Checkpoint` (its commit).
#[must_use]
pub fn stage_message(
    run_id: &str,
    node: &str,
    status: &str,
    completed: u32,
    checkpoint: Option<&str>,
) -> String {
    let mut message = format!(
        "weft({run_id}): {node} ({status})\n\nWeft-Run: {run_id}\nWeft-Completed: {completed}\n"
    );
    if let Some(sha) = checkpoint {
        message.push_str(&format!("Weft-Checkpoint: {sha}\n"));
    }
    message
}

/// A run's branch and the worktree checked out on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunBranch {
    /// The branch's short name (`weft/run/{run_id}`).
    pub branch: String,
    /// The commit the run started from.
    pub base_sha: String,
    /// Where the run works.
    pub worktree: PathBuf,
    /// A stage's patch is kept up to this size (a stage may write a huge
    /// file; the commit has it whole).
    pub max_patch_bytes: usize,
}

/// [`RunBranch::max_patch_bytes`] unless changed.
pub const MAX_PATCH_BYTES: usize = 32 * 1024 * 1024;

/// What committing a stage did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageCommit {
    /// The new commit; `None` when the stage changed nothing (no commit is
    /// made for it).
    pub sha: Option<String>,
    /// The branch's head after the stage.
    pub head_sha: String,
    /// The stage's changes as a unified diff (empty when none), cut at
    /// [`RunBranch::max_patch_bytes`] at a line's end.
    pub patch: String,
    /// False when `patch` was cut (`git diff` between the commit and its
    /// parent has it all).
    pub patch_complete: bool,
    /// The paths the stage added, changed or deleted, relative to the
    /// worktree, sorted.
    pub files: Vec<String>,
}

impl RunBranch {
    /// Creates `branch` at the checkout's HEAD and a worktree on it at
    /// `worktree`, which must not exist yet. The user's checkout is left as
    /// it is; its uncommitted changes are not in the worktree.
    ///
    /// # Errors
    /// The branch exists already, the worktree's place is taken, or git
    /// cannot write the repository.
    pub fn start(
        checkout: &Checkout,
        branch: &str,
        worktree: &Path,
    ) -> Result<RunBranch, GitError> {
        let repo = Repository::open(&checkout.root)
            .map_err(|e| GitError::from_git("cannot open the repository", &e))?;
        if repo.find_branch(branch, git2::BranchType::Local).is_ok() {
            return Err(GitError(format!(
                "the branch {branch} exists already in {}: delete it or start a new run",
                checkout.root.display()
            )));
        }
        if worktree.exists() {
            return Err(GitError(format!(
                "{} exists already: a run's worktree must be a new directory",
                worktree.display()
            )));
        }
        let base = repo
            .revparse_single(&checkout.head_sha)
            .and_then(|o| o.peel_to_commit())
            .map_err(|e| GitError::from_git("cannot find the base commit", &e))?;
        if let Some(parent) = worktree.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| GitError(format!("cannot create {}: {e}", parent.display())))?;
        }
        let mut created = repo
            .branch(branch, &base, false)
            .map_err(|e| GitError::from_git(&format!("cannot create the branch {branch}"), &e))?;
        let mut options = WorktreeAddOptions::new();
        options.reference(Some(created.get()));
        if let Err(e) = repo.worktree(&worktree_name(branch), worktree, Some(&options)) {
            // No branch without its worktree: a later try starts clean. A
            // worktree that failed half-way (a path too long to check out)
            // is registered already and holds the branch, so it goes first.
            if let Ok(half) = repo.find_worktree(&worktree_name(branch)) {
                let mut prune = git2::WorktreePruneOptions::new();
                prune.valid(true).locked(true).working_tree(true);
                let _ = half.prune(Some(&mut prune));
            }
            let _ = std::fs::remove_dir_all(worktree);
            let _ = created.delete();
            return Err(GitError::from_git(
                &format!("cannot add a worktree at {}", worktree.display()),
                &e,
            ));
        }
        Ok(RunBranch {
            branch: branch.to_string(),
            base_sha: checkout.head_sha.clone(),
            worktree: worktree.to_path_buf(),
            max_patch_bytes: MAX_PATCH_BYTES,
        })
    }

    /// Stages every change in the worktree (files .gitignore ignores are
    /// left out; deletions count) and, when there is one, commits it on
    /// the branch with `message`.
    ///
    /// # Errors
    /// Git cannot read the worktree or write the commit.
    pub fn commit_stage(&self, message: &str) -> Result<StageCommit, GitError> {
        let repo = Repository::open(&self.worktree)
            .map_err(|e| GitError::from_git("cannot open the run's worktree", &e))?;
        let failed = |what: &str| {
            let what = what.to_string();
            move |e: git2::Error| GitError::from_git(&what, &e)
        };
        let mut index = repo.index().map_err(failed("cannot read the index"))?;
        stage_changes(&repo, &mut index)?;
        index.write().map_err(failed("cannot write the index"))?;
        let tree_id = index
            .write_tree()
            .map_err(failed("cannot write the tree"))?;
        let tree = repo
            .find_tree(tree_id)
            .map_err(failed("cannot read the tree"))?;
        let parent = repo
            .head()
            .and_then(|h| h.peel_to_commit())
            .map_err(failed("cannot read the branch's head"))?;
        if parent.tree_id() == tree_id {
            return Ok(StageCommit {
                sha: None,
                head_sha: parent.id().to_string(),
                patch: String::new(),
                patch_complete: true,
                files: Vec::new(),
            });
        }
        let (patch, patch_complete, files) = diff(
            &repo,
            &parent.tree().map_err(failed("cannot read a tree"))?,
            &tree,
            self.max_patch_bytes,
        )?;
        let sha = commit(&repo, message, &tree, &parent)?;
        Ok(StageCommit {
            sha: Some(sha.clone()),
            head_sha: sha,
            patch,
            patch_complete,
            files,
        })
    }
}

/// Stages what the status scan finds changed: new and modified files are
/// added, deleted ones removed. Only the changed paths are touched (an
/// `add_all` over the whole tree matches every path against a pathspec and
/// re-reads more than it needs).
fn stage_changes(repo: &Repository, index: &mut git2::Index) -> Result<(), GitError> {
    let mut options = StatusOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo
        .statuses(Some(&mut options))
        .map_err(|e| GitError::from_git("cannot scan the worktree", &e))?;
    for entry in statuses.iter() {
        let status = entry.status();
        let Some(path) = entry.path().map(Path::new) else {
            continue;
        };
        let result = if status.contains(Status::WT_DELETED) {
            index.remove_path(path)
        } else if status.intersects(
            Status::WT_NEW | Status::WT_MODIFIED | Status::WT_TYPECHANGE | Status::WT_RENAMED,
        ) {
            index.add_path(path)
        } else {
            Ok(())
        };
        result.map_err(|e| GitError::from_git(&format!("cannot stage {}", path.display()), &e))?;
    }
    Ok(())
}

fn commit(
    repo: &Repository,
    message: &str,
    tree: &Tree<'_>,
    parent: &Commit<'_>,
) -> Result<String, GitError> {
    let author = Signature::now(AUTHOR_NAME, AUTHOR_EMAIL)
        .map_err(|e| GitError::from_git("cannot sign the commit", &e))?;
    repo.commit(Some("HEAD"), &author, &author, message, tree, &[parent])
        .map(|id| id.to_string())
        .map_err(|e| GitError::from_git("cannot commit the stage", &e))
}

/// The unified diff between two trees and the paths it touches.
pub(super) fn diff(
    repo: &Repository,
    old: &Tree<'_>,
    new: &Tree<'_>,
    max_patch_bytes: usize,
) -> Result<(String, bool, Vec<String>), GitError> {
    let mut options = DiffOptions::new();
    options.show_binary(false);
    let diff = repo
        .diff_tree_to_tree(Some(old), Some(new), Some(&mut options))
        .map_err(|e| GitError::from_git("cannot diff the stage", &e))?;
    let mut files: Vec<String> = diff
        .deltas()
        .filter_map(|d| {
            d.new_file()
                .path()
                .or_else(|| d.old_file().path())
                .map(|p| p.to_string_lossy().into_owned())
        })
        .collect();
    files.sort();
    files.dedup();
    let mut patch = Vec::new();
    let mut cut = false;
    let printed = diff.print(DiffFormat::Patch, |_, _, line| {
        let origin = matches!(line.origin(), '+' | '-' | ' ');
        if patch.len() + usize::from(origin) + line.content().len() > max_patch_bytes {
            cut = true;
            return false;
        }
        if origin {
            patch.push(line.origin() as u8);
        }
        patch.extend_from_slice(line.content());
        true
    });
    match printed {
        // Stopped by the callback: the patch is cut, not broken.
        Err(_) if cut => {}
        Err(e) => return Err(GitError::from_git("cannot print the stage's diff", &e)),
        Ok(()) => {}
    }
    Ok((String::from_utf8_lossy(&patch).into_owned(), !cut, files))
}

/// The name git keeps the worktree under (`.git/worktrees/{name}`): the
/// branch with its slashes made dashes.
pub(super) fn worktree_name(branch: &str) -> String {
    branch
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}
