//! A run's branch and worktree: created at the checkout's HEAD, and grown by
//! one commit per stage that changed something (execution/checkpoints.mdx,
//! "Run branch commits", "Worktrees").

use std::path::{Path, PathBuf};

use super::pack::Pending;
use super::scan::{Change, ScanKind, scan};
use super::{Checkout, GitError, MetadataBranch};
use git2::build::TreeUpdateBuilder;
use git2::{DiffFormat, DiffOptions, FileMode, Repository, Signature, Tree, WorktreeAddOptions};

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
        self.commit(None, &|_| message.to_string(), None)
            .map(|committed| committed.stage)
    }

    /// [`RunBranch::commit_stage`], with the metadata branch's commit
    /// (`metadata`: the branch, its message and files) written first when
    /// there is one, so that `message` can name it, and both commits'
    /// objects written as one pack. `last` is what the previous call left:
    /// while the branch's head and the worktree's index are as it left
    /// them, the index is known to match the head's tree, and the scan
    /// compares only the worktree with the index.
    pub(super) fn commit(
        &self,
        metadata: Option<MetadataWrite<'_>>,
        message: &dyn Fn(Option<&str>) -> String,
        last: Option<&Written>,
    ) -> Result<Committed, GitError> {
        let repo = Repository::open(&self.worktree)
            .map_err(|e| GitError::from_git("cannot open the run's worktree", &e))?;
        let failed = |what: &str| {
            let what = what.to_string();
            move |e: git2::Error| GitError::from_git(&what, &e)
        };
        let mut index = repo.index().map_err(failed("cannot read the index"))?;
        let parent = repo
            .head()
            .and_then(|h| h.peel_to_commit())
            .map_err(failed("cannot read the branch's head"))?;
        let parent_tree = parent.tree().map_err(failed("cannot read a tree"))?;
        let index_path = repo.path().join("index");
        let index_matches_head = last.is_some_and(|last| {
            last.head == parent.id()
                && index_checksum(&index_path).as_ref() == Some(&last.index_checksum)
        });
        let scan = scan(&repo, &index, &self.worktree, index_matches_head)?;
        let metadata_bytes: u64 = metadata
            .map(|(_, _, files)| files.iter().map(|(_, b)| b.len() as u64).sum())
            .unwrap_or(0);
        let mut pending = Pending::start(&repo, scan.bytes_to_stage + metadata_bytes)?;
        let metadata = match metadata {
            Some((branch, message, files)) => {
                Some(branch.commit(&repo, &mut pending, message, files)?)
            }
            None => None,
        };
        let metadata_sha = metadata.as_ref().map(|m| m.id.to_string());
        for (path, change) in &scan.to_stage {
            let result = match change {
                Change::Deleted => index.remove_path(Path::new(path)),
                Change::Written => index.add_path(Path::new(path)),
            };
            result.map_err(|e| GitError::from_git(&format!("cannot stage {path}"), &e))?;
        }
        let tree_id = match scan
            .changed
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
        // Objects reach the disk before anything names them: first the
        // pack, then the metadata branch, the index and the run branch.
        // The index then matches the new head's tree: it matched the
        // parent's except where the scan found changes, and those are the
        // paths the tree was updated with.
        if parent.tree_id() == tree_id {
            // Nothing to commit. Every object the index names exists
            // already (its tree is the head's).
            pending.write(&repo)?;
            if let Some(metadata) = &metadata {
                metadata.publish(&repo)?;
            }
            index.write().map_err(failed("cannot write the index"))?;
            return Ok(Committed {
                stage: StageCommit {
                    sha: None,
                    head_sha: parent.id().to_string(),
                    patch: String::new(),
                    patch_complete: true,
                    files: Vec::new(),
                },
                metadata_sha,
                scan: scan.kind,
                written: Written::now(parent.id(), &index_path),
            });
        }
        let tree = repo
            .find_tree(tree_id)
            .map_err(failed("cannot read the tree"))?;
        let (diff, files) = stage_diff(&repo, &parent_tree, &tree, scan.changed.as_deref())?;
        let (patch, patch_complete) = patch(&diff, self.max_patch_bytes)?;
        let author =
            Signature::now(AUTHOR_NAME, AUTHOR_EMAIL).map_err(failed("cannot sign the commit"))?;
        let message = message(metadata_sha.as_deref());
        let commit_id = repo
            .commit(None, &author, &author, &message, &tree, &[&parent])
            .map_err(failed("cannot commit the stage"))?;
        pending.add_commit(commit_id, &tree, files.iter().map(Path::new));
        pending.write(&repo)?;
        if let Some(metadata) = &metadata {
            metadata.publish(&repo)?;
        }
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
        Ok(Committed {
            stage: StageCommit {
                sha: Some(sha.clone()),
                head_sha: sha,
                patch,
                patch_complete,
                files,
            },
            metadata_sha,
            scan: scan.kind,
            written: Written::now(commit_id, &index_path),
        })
    }
}

/// A metadata commit to write with a stage's: the branch, the message and
/// the files.
pub(super) type MetadataWrite<'a> = (&'a MetadataBranch, &'a str, &'a [(&'a str, &'a [u8])]);

/// What [`RunBranch::commit`] did.
pub(super) struct Committed {
    pub(super) stage: StageCommit,
    /// The metadata branch's new commit, when one was asked for.
    pub(super) metadata_sha: Option<String>,
    pub(super) scan: ScanKind,
    pub(super) written: Option<Written>,
}

/// The branch's head and the worktree's index as a commit left them, the
/// index then matching the head's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Written {
    head: git2::Oid,
    index_checksum: Vec<u8>,
}

impl Written {
    fn now(head: git2::Oid, index_path: &Path) -> Option<Written> {
        index_checksum(index_path).map(|index_checksum| Written {
            head,
            index_checksum,
        })
    }
}

/// The checksum git ends an index file with (over all that precedes it):
/// equal checksums, equal indexes. The last 32 bytes are read: all of the
/// checksum in a SHA-256 repository, and more than it in a SHA-1 one.
fn index_checksum(path: &Path) -> Option<Vec<u8>> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let length = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(length.saturating_sub(32))).ok()?;
    let mut tail = Vec::with_capacity(32);
    file.take(32).read_to_end(&mut tail).ok()?;
    Some(tail)
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

/// The unified diff between two trees, cut at `max_patch_bytes` at a
/// line's end (false when it was cut), and the paths it touches.
pub(super) fn diff(
    repo: &Repository,
    old: &Tree<'_>,
    new: &Tree<'_>,
    max_patch_bytes: usize,
) -> Result<(String, bool, Vec<String>), GitError> {
    let (diff, files) = stage_diff(repo, old, new, None)?;
    let (patch, complete) = patch(&diff, max_patch_bytes)?;
    Ok((patch, complete, files))
}

/// The diff between the head's tree and the stage's, with the paths it
/// touches (sorted). `only`: every path where the trees may differ, when
/// known; the diff then reads only the directories on them (it otherwise
/// reads both trees whole).
fn stage_diff<'r>(
    repo: &'r Repository,
    old: &Tree<'_>,
    new: &Tree<'_>,
    only: Option<&[String]>,
) -> Result<(git2::Diff<'r>, Vec<String>), GitError> {
    let mut options = DiffOptions::new();
    options.show_binary(false);
    if let Some(paths) = only {
        // Exact paths, not patterns: a name with `*` in it is itself.
        options.disable_pathspec_match(true);
        for path in paths {
            options.pathspec(path.as_str());
        }
    }
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
