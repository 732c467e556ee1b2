//! A run's branch and worktree: created at the checkout's HEAD, and grown by
//! one commit per stage that changed something (execution/checkpoints.mdx,
//! "Run branch commits", "Worktrees").

use std::io::Write as _;
use std::path::{Path, PathBuf};

use git2::build::TreeUpdateBuilder;
use git2::{
    DiffFormat, DiffOptions, FileMode, Repository, Signature, Status, StatusOptions, Tree,
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
            // No branch without its worktree: a later try starts clean.
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
        // The stage's new objects (blobs, trees, the commit) are gathered in
        // memory and written as one pack: a loose object is a file of its
        // own, and creating some forty files per stage cost more than
        // everything else together (docs/performance.md, "Git checkpoints").
        let odb = repo
            .odb()
            .map_err(failed("cannot open the object database"))?;
        odb.add_new_mempack_backend(PENDING_OBJECTS_PRIORITY)
            .map_err(failed("cannot hold the stage's objects"))?;
        let mut index = repo.index().map_err(failed("cannot read the index"))?;
        let parent = repo
            .head()
            .and_then(|h| h.peel_to_commit())
            .map_err(failed("cannot read the branch's head"))?;
        let parent_tree = parent.tree().map_err(failed("cannot read a tree"))?;
        let changed = stage_changes(&repo, &mut index)?;
        let tree_id = match changed
            .as_ref()
            .map(|c| updated_tree(&repo, &index, &parent_tree, c))
        {
            Some(Ok(id)) => id,
            // Cases the update cannot express (a file become a directory or
            // the reverse, a path that is not UTF-8, a conflict) take the
            // whole index, which is always right, only slower.
            Some(Err(_)) | None => index
                .write_tree()
                .map_err(failed("cannot write the tree"))?,
        };
        if parent.tree_id() == tree_id {
            // Nothing to commit; the index keeps the stat data refreshed by
            // the scan. Every object it names exists already (its tree is
            // the head's).
            index.write().map_err(failed("cannot write the index"))?;
            return Ok(StageCommit {
                sha: None,
                head_sha: parent.id().to_string(),
                patch: String::new(),
                patch_complete: true,
                files: Vec::new(),
            });
        }
        let tree = repo
            .find_tree(tree_id)
            .map_err(failed("cannot read the tree"))?;
        let (diff, files) = stage_diff(&repo, &parent_tree, &tree)?;
        let (patch, patch_complete) = patch(&diff, self.max_patch_bytes)?;
        let author =
            Signature::now(AUTHOR_NAME, AUTHOR_EMAIL).map_err(failed("cannot sign the commit"))?;
        let commit_id = repo
            .commit(None, &author, &author, message, &tree, &[&parent])
            .map_err(failed("cannot commit the stage"))?;
        // Objects reach the disk before anything names them: first the
        // pack, then the index, then the branch.
        write_pack(&repo, &odb, &diff, &tree, commit_id)?;
        index.write().map_err(failed("cannot write the index"))?;
        let head = repo
            .head()
            .map_err(failed("cannot read the branch's head"))?;
        let branch = head
            .name()
            .ok_or_else(|| GitError("the branch's name is not UTF-8".to_string()))?;
        let summary = message.lines().next().unwrap_or_default();
        repo.reference_matching(
            branch,
            commit_id,
            true,
            parent.id(),
            &format!("commit: {summary}"),
        )
        .map_err(failed("cannot move the branch to the stage's commit"))?;
        let sha = commit_id.to_string();
        Ok(StageCommit {
            sha: Some(sha.clone()),
            head_sha: sha,
            patch,
            patch_complete,
            files,
        })
    }
}

/// The priority of the in-memory object store a stage's objects are
/// written to: above the repository's own stores, so it takes the writes.
const PENDING_OBJECTS_PRIORITY: i32 = 1000;

/// Stages what the status scan finds changed: new and modified files are
/// added, deleted ones removed. Only the changed paths are touched (an
/// `add_all` over the whole tree matches every path against a pathspec and
/// re-reads more than it needs). Returns every path whose entry may now
/// differ from the head's tree (changed in the worktree, or staged in the
/// index by someone else, e.g. `git add` in a command stage), or `None`
/// when one of them cannot be named (not UTF-8) or is in conflict.
fn stage_changes(
    repo: &Repository,
    index: &mut git2::Index,
) -> Result<Option<Vec<String>>, GitError> {
    let mut options = StatusOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo
        .statuses(Some(&mut options))
        .map_err(|e| GitError::from_git("cannot scan the worktree", &e))?;
    let mut changed = Some(Vec::with_capacity(statuses.len()));
    for entry in statuses.iter() {
        let status = entry.status();
        let Some(path) = entry.path() else {
            changed = None;
            continue;
        };
        if status.contains(Status::CONFLICTED) {
            changed = None;
        }
        let result = if status.contains(Status::WT_DELETED) {
            index.remove_path(Path::new(path))
        } else if status.intersects(
            Status::WT_NEW | Status::WT_MODIFIED | Status::WT_TYPECHANGE | Status::WT_RENAMED,
        ) {
            index.add_path(Path::new(path))
        } else {
            Ok(())
        };
        result.map_err(|e| GitError::from_git(&format!("cannot stage {path}"), &e))?;
        if let Some(changed) = changed.as_mut() {
            changed.push(path.to_string());
        }
    }
    Ok(changed)
}

/// The head's tree with the `changed` paths set as the index has them
/// (removed when it has none): only the directories on those paths are
/// rebuilt, where the index's `write_tree` re-reads the whole tree to
/// refresh its cache. Fails on what a tree update cannot do (a file
/// replaced by a directory or the reverse); the caller then takes the
/// index's tree.
fn updated_tree(
    repo: &Repository,
    index: &git2::Index,
    head: &Tree<'_>,
    changed: &[String],
) -> Result<git2::Oid, git2::Error> {
    let mut update = TreeUpdateBuilder::new();
    for path in changed {
        match index.get_path(Path::new(path), 0) {
            Some(entry) => {
                let mode = match entry.mode {
                    0o100644 => FileMode::Blob,
                    0o100755 => FileMode::BlobExecutable,
                    0o120000 => FileMode::Link,
                    0o160000 => FileMode::Commit,
                    _ => return Err(git2::Error::from_str("an unknown file mode")),
                };
                update.upsert(path.as_str(), entry.id, mode)
            }
            None => update.remove(path.as_str()),
        };
    }
    update.create_updated(repo, head)
}

/// The diff between the head's tree and the stage's, with the paths it
/// touches (sorted).
fn stage_diff<'r>(
    repo: &'r Repository,
    old: &Tree<'_>,
    new: &Tree<'_>,
) -> Result<(git2::Diff<'r>, Vec<String>), GitError> {
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
    Ok((diff, files))
}

/// Writes the objects the stage's commit adds to the repository as one
/// pack: the commit, its tree, the trees of the directories on a changed
/// path and the changed files' blobs. That is everything the commit can
/// reach that its parent cannot (an unchanged directory keeps its tree);
/// one left out would make the packer fail, not the repository lose it.
fn write_pack(
    repo: &Repository,
    odb: &git2::Odb<'_>,
    diff: &git2::Diff<'_>,
    tree: &Tree<'_>,
    commit: git2::Oid,
) -> Result<(), GitError> {
    let failed = |e: git2::Error| GitError::from_git("cannot write the stage's objects", &e);
    let mut packer = repo.packbuilder().map_err(failed)?;
    packer.set_threads(1);
    packer.insert_object(commit, None).map_err(failed)?;
    packer.insert_object(tree.id(), None).map_err(failed)?;
    let mut directories = std::collections::BTreeSet::new();
    for delta in diff.deltas() {
        let new = delta.new_file();
        if new.exists() && new.mode() != FileMode::Commit {
            packer.insert_object(new.id(), None).map_err(failed)?;
        }
        for path in [new.path(), delta.old_file().path()].into_iter().flatten() {
            directories.extend(
                path.ancestors()
                    .skip(1)
                    .filter(|d| !d.as_os_str().is_empty()),
            );
        }
    }
    for directory in directories {
        // A directory the stage emptied is gone from the new tree.
        if let Ok(entry) = tree.get_path(directory) {
            packer.insert_object(entry.id(), None).map_err(failed)?;
        }
    }
    let mut pack = git2::Buf::new();
    packer.write_buf(&mut pack).map_err(failed)?;
    let mut writer = odb.packwriter().map_err(failed)?;
    writer
        .write_all(&pack)
        .map_err(|e| GitError(format!("cannot write the stage's objects: {e}")))?;
    writer.commit().map_err(failed)?;
    Ok(())
}

/// The diff as a unified patch, cut at `max_patch_bytes` at a line's end;
/// false when it was cut.
fn patch(diff: &git2::Diff<'_>, max_patch_bytes: usize) -> Result<(String, bool), GitError> {
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
    Ok((String::from_utf8_lossy(&patch).into_owned(), !cut))
}

/// The name git keeps the worktree under (`.git/worktrees/{name}`): the
/// branch with its slashes made dashes.
fn worktree_name(branch: &str) -> String {
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
