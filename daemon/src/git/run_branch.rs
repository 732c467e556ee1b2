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
use sha1::{Digest, Sha1};

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
        let odb = repo
            .odb()
            .map_err(failed("cannot open the object database"))?;
        let mut index = repo.index().map_err(failed("cannot read the index"))?;
        let parent = repo
            .head()
            .and_then(|h| h.peel_to_commit())
            .map_err(failed("cannot read the branch's head"))?;
        let parent_tree = parent.tree().map_err(failed("cannot read a tree"))?;
        let scan = scan(&repo, &self.worktree)?;
        // The stage's new objects (blobs, trees, the commit) are gathered in
        // memory and written as one pack: a loose object is a file of its
        // own, and creating some forty files per stage cost more than
        // everything else together (docs/performance.md, "Git checkpoints").
        // A stage that wrote more than memory should hold gets loose objects,
        // as git would write them.
        let packed = scan.bytes_to_stage <= MAX_PACKED_STAGE_BYTES;
        if packed {
            odb.add_new_mempack_backend(PENDING_OBJECTS_PRIORITY)
                .map_err(failed("cannot hold the stage's objects"))?;
        }
        for (path, change) in &scan.to_stage {
            let result = match change {
                Change::Deleted => index.remove_path(Path::new(path)),
                Change::Written => index.add_path(Path::new(path)),
            };
            result.map_err(|e| GitError::from_git(&format!("cannot stage {path}"), &e))?;
        }
        let changed = scan.changed;
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
        if packed {
            write_pack(&odb, &pack_contents(&diff, &tree, commit_id))?;
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

/// A stage's changed files are held in memory up to this many bytes
/// before they are written as one pack; past it, loose (a file each).
const MAX_PACKED_STAGE_BYTES: u64 = 64 * 1024 * 1024;

/// What the status scan found.
struct Scan {
    /// The worktree's changes to stage, by path.
    to_stage: Vec<(String, Change)>,
    /// Every path whose entry may differ from the head's tree once staged
    /// (changed in the worktree, or staged in the index by someone else,
    /// e.g. `git add` in a command stage); `None` when one of them cannot
    /// be named (not UTF-8) or is in conflict.
    changed: Option<Vec<String>>,
    /// The size of the files to stage.
    bytes_to_stage: u64,
}

enum Change {
    Written,
    Deleted,
}

/// The status scan: new and modified files are to be added, deleted ones
/// removed. Only the changed paths are then touched (an `add_all` over the
/// whole tree matches every path against a pathspec and re-reads more than
/// it needs).
fn scan(repo: &Repository, worktree: &Path) -> Result<Scan, GitError> {
    let mut options = StatusOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo
        .statuses(Some(&mut options))
        .map_err(|e| GitError::from_git("cannot scan the worktree", &e))?;
    let mut scan = Scan {
        to_stage: Vec::new(),
        changed: Some(Vec::with_capacity(statuses.len())),
        bytes_to_stage: 0,
    };
    for entry in statuses.iter() {
        let status = entry.status();
        let Some(path) = entry.path() else {
            scan.changed = None;
            continue;
        };
        if status.contains(Status::CONFLICTED) {
            scan.changed = None;
        }
        if status.contains(Status::WT_DELETED) {
            scan.to_stage.push((path.to_string(), Change::Deleted));
        } else if status.intersects(
            Status::WT_NEW | Status::WT_MODIFIED | Status::WT_TYPECHANGE | Status::WT_RENAMED,
        ) {
            scan.bytes_to_stage += std::fs::symlink_metadata(worktree.join(path))
                .map(|m| m.len())
                .unwrap_or(0);
            scan.to_stage.push((path.to_string(), Change::Written));
        }
        if let Some(changed) = scan.changed.as_mut() {
            changed.push(path.to_string());
        }
    }
    Ok(scan)
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
    let (diff, files) = stage_diff(repo, old, new)?;
    let (patch, complete) = patch(&diff, max_patch_bytes)?;
    Ok((patch, complete, files))
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

/// The objects the stage's commit adds to the repository: the commit, its
/// tree, the trees of the directories on a changed path and the changed
/// files' blobs. That is everything the commit can reach that its parent
/// cannot (an unchanged directory keeps its tree); one left out would
/// leave the branch naming an object that is not on disk, which is why the
/// tests run `git fsck` after every kind of change.
fn pack_contents(diff: &git2::Diff<'_>, tree: &Tree<'_>, commit: git2::Oid) -> Vec<git2::Oid> {
    let mut objects = vec![commit, tree.id()];
    let mut directories = std::collections::BTreeSet::new();
    for delta in diff.deltas() {
        let new = delta.new_file();
        if new.exists() && new.mode() != FileMode::Commit {
            objects.push(new.id());
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
            objects.push(entry.id());
        }
    }
    let mut seen = std::collections::HashSet::new();
    objects.retain(|id| seen.insert(*id));
    objects
}

/// Writes `objects` to the repository as one pack (git's pack format,
/// version 2: each object whole, zlib-compressed, no deltas; the
/// repository's own packer spends its time looking for deltas between
/// the trees). libgit2's indexer checks it and writes its index.
fn write_pack(odb: &git2::Odb<'_>, objects: &[git2::Oid]) -> Result<(), GitError> {
    let failed = |e: git2::Error| GitError::from_git("cannot write the stage's objects", &e);
    let count = u32::try_from(objects.len())
        .map_err(|_| GitError("a stage with too many objects to pack".to_string()))?;
    let mut pack = Vec::new();
    pack.extend_from_slice(b"PACK");
    pack.extend_from_slice(&2u32.to_be_bytes());
    pack.extend_from_slice(&count.to_be_bytes());
    for id in objects {
        let object = odb.read(*id).map_err(failed)?;
        let kind: u8 = match object.kind() {
            git2::ObjectType::Commit => 1,
            git2::ObjectType::Tree => 2,
            git2::ObjectType::Blob => 3,
            git2::ObjectType::Tag => 4,
            _ => return Err(GitError(format!("cannot pack the object {id}"))),
        };
        let data = object.data();
        // The header: the type and the size, 4 bits then 7 bits a byte,
        // the high bit saying another byte follows.
        let mut size = data.len();
        let mut byte = (kind << 4) | (size & 0x0f) as u8;
        size >>= 4;
        while size > 0 {
            pack.push(byte | 0x80);
            byte = (size & 0x7f) as u8;
            size >>= 7;
        }
        pack.push(byte);
        pack.extend_from_slice(&miniz_oxide::deflate::compress_to_vec_zlib(
            data,
            PACK_COMPRESSION,
        ));
    }
    let trailer = Sha1::digest(&pack);
    pack.extend_from_slice(&trailer);
    let mut writer = odb.packwriter().map_err(failed)?;
    writer
        .write_all(&pack)
        .map_err(|e| GitError(format!("cannot write the stage's objects: {e}")))?;
    writer.commit().map_err(failed)?;
    Ok(())
}

/// zlib's level for a stage's pack: the fastest, as git writes loose
/// objects (`core.looseCompression`), which these would otherwise be.
const PACK_COMPRESSION: u8 = 1;

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
