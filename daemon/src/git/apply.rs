//! Bringing a run's result into the user's checkout (`weft apply`): the
//! run branch merged into one of the user's branches — a fast-forward when
//! that branch has not moved since the run started, else a merge commit
//! computed in memory — or the run's final patch applied to the working
//! tree, uncommitted.
//!
//! All or nothing: a dirty checkout, a merge with conflicts or a patch that
//! does not apply is found before anything is written, and refused with
//! what to do instead. Only the target branch moves; a branch checked out
//! here also gets its working tree and index updated (safely: the checkout
//! is clean, so nothing of the user's can be overwritten).

use std::path::Path;

use git2::build::CheckoutBuilder;
use git2::{
    ApplyLocation, ApplyOptions, BranchType, Commit, Diff, ErrorCode, Oid, Repository,
    RepositoryState, Signature,
};
use serde::{Deserialize, Serialize};

use super::checkout::dirty_paths;
use super::run_branch::{AUTHOR_EMAIL, AUTHOR_NAME};

/// Weft's own branches (`weft/run/…`, `weft/meta/…`) are under this
/// prefix; a run is never applied to one of them.
pub const WEFT_BRANCH_PREFIX: &str = "weft/";

/// A refusal names at most this many paths (dirty files, conflicts), then
/// says how many more there are.
const MAX_NAMED_PATHS: usize = 10;

/// What to bring where.
#[derive(Debug, Clone, Copy)]
pub struct ApplyRequest<'a> {
    /// The top of the user's checkout (manifest.json's `repo`).
    pub root: &'a Path,
    /// The run's branch (`weft/run/{run_id}`).
    pub run_branch: &'a str,
    /// The commit the run started from.
    pub base_sha: &'a str,
    /// The branch to merge into; `None` for the branch HEAD is on. Not
    /// used by [`ApplyMode::Patch`], which changes the working tree only.
    pub to: Option<&'a str>,
    pub mode: ApplyMode<'a>,
}

/// How the run's result is brought in.
#[derive(Debug, Clone, Copy)]
pub enum ApplyMode<'a> {
    /// Merge the run branch into the target: a fast-forward when the
    /// target is an ancestor of it, else a merge commit with `message`.
    Merge { message: &'a str },
    /// Apply `patch` (the run's final.patch, base → the run's last commit)
    /// to the working tree, committing nothing.
    Patch { patch: &'a str },
}

/// What applying did, for the user and for `--json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Applied {
    /// The branch has the run's work already; nothing changed.
    UpToDate { branch: String, sha: String },
    /// The branch moved from `from` to the run's last commit `to`.
    FastForwarded {
        branch: String,
        from: String,
        to: String,
        /// Whether the working tree and index were updated (the branch is
        /// the one checked out).
        worktree_updated: bool,
    },
    /// A merge commit of `from` (the branch's head before) and the run's
    /// last commit, now the branch's head.
    Merged {
        branch: String,
        from: String,
        commit: String,
        worktree_updated: bool,
    },
    /// The patch was applied to the working tree, uncommitted; `files` are
    /// the paths it changed (empty when the run changed nothing).
    Patched { files: Vec<String> },
}

/// Why nothing was applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyErrorKind {
    /// The working tree or index has changes (`paths`, the first few).
    Dirty { paths: Vec<String> },
    /// A merge, rebase, cherry-pick… is under way in the checkout.
    OperationInProgress,
    /// The run branch is not in the repository (any more).
    NoRunBranch,
    /// HEAD is detached and no target was named.
    Detached,
    /// The target is a Weft branch (the run's own, or another run's).
    WeftBranch,
    /// The target branch does not exist.
    NoSuchBranch,
    /// The target is checked out in another worktree, whose files would
    /// no longer match its branch.
    CheckedOutElsewhere,
    /// Merging conflicts in `paths` (the first few).
    Conflicts { paths: Vec<String> },
    /// The patch cannot be read, has binary changes without their
    /// contents, or does not apply to the working tree.
    PatchDoesNotApply,
    /// Git failed (cannot read or write the repository).
    Git,
}

/// Why nothing was applied, worded for the user: what, why and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyError {
    pub kind: ApplyErrorKind,
    pub message: String,
}

impl std::fmt::Display for ApplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApplyError {}

impl ApplyError {
    fn new(kind: ApplyErrorKind, message: impl Into<String>) -> ApplyError {
        ApplyError {
            kind,
            message: message.into(),
        }
    }

    /// `what` failed because of libgit2's `error`.
    fn git(what: &str, error: &git2::Error) -> ApplyError {
        ApplyError::new(ApplyErrorKind::Git, format!("{what}: {}", error.message()))
    }
}

/// A closure for `map_err` that makes a libgit2 error an [`ApplyErrorKind::Git`].
fn failed(what: &str) -> impl FnOnce(git2::Error) -> ApplyError + '_ {
    move |e| ApplyError::git(what, &e)
}

/// Brings the run's result into the checkout at `request.root` as
/// `request.mode` says. Nothing is changed when it is refused.
///
/// # Errors
/// Refusals, each with its reason and what to do (see
/// [`ApplyErrorKind`]), and failures to read or write the repository.
pub fn apply(request: &ApplyRequest<'_>) -> Result<Applied, ApplyError> {
    let repo = Repository::open(request.root).map_err(|e| {
        ApplyError::git(
            &format!("cannot open the repository at {}", request.root.display()),
            &e,
        )
    })?;
    if repo.state() != RepositoryState::Clean {
        return Err(ApplyError::new(
            ApplyErrorKind::OperationInProgress,
            format!(
                "a {} is under way in {}: finish or abort it first, then apply the run",
                operation(repo.state()),
                request.root.display()
            ),
        ));
    }
    match request.mode {
        ApplyMode::Merge { message } => merge(&repo, request, message),
        ApplyMode::Patch { patch } => patch_working_tree(&repo, request, patch),
    }
}

fn merge(
    repo: &Repository,
    request: &ApplyRequest<'_>,
    message: &str,
) -> Result<Applied, ApplyError> {
    let root = request.root.display();
    let run_branch = request.run_branch;
    let run_commit = match repo.find_branch(run_branch, BranchType::Local) {
        Ok(branch) => branch
            .get()
            .peel_to_commit()
            .map_err(failed("cannot read the run branch's commit"))?,
        Err(e) if e.code() == ErrorCode::NotFound => {
            return Err(ApplyError::new(
                ApplyErrorKind::NoRunBranch,
                format!(
                    "the run's branch {run_branch} is not in {root} (was it deleted?): there \
                     is nothing to merge; --patch applies the run's final.patch instead"
                ),
            ));
        }
        Err(e) => return Err(ApplyError::git("cannot read the run branch", &e)),
    };
    let head_branch = head_branch(repo)?;
    let target = match (request.to, &head_branch) {
        (Some(to), _) => to.to_string(),
        (None, Some(branch)) => branch.clone(),
        (None, None) => {
            return Err(ApplyError::new(
                ApplyErrorKind::Detached,
                format!(
                    "HEAD is detached in {root}, so there is no branch to merge the run into: \
                     name one with --to BRANCH, or use --patch to apply the run's changes to \
                     the working tree without committing"
                ),
            ));
        }
    };
    if target == run_branch || target.starts_with(WEFT_BRANCH_PREFIX) {
        return Err(ApplyError::new(
            ApplyErrorKind::WeftBranch,
            format!(
                "{target} is a Weft branch (runs keep their work and metadata under \
                 {WEFT_BRANCH_PREFIX}): apply the run to one of your own branches, with --to \
                 BRANCH or by checking it out"
            ),
        ));
    }
    let target_branch = match repo.find_branch(&target, BranchType::Local) {
        Ok(branch) => branch,
        Err(e) if e.code() == ErrorCode::NotFound => {
            return Err(ApplyError::new(
                ApplyErrorKind::NoSuchBranch,
                format!(
                    "there is no branch {target} in {root}: `git branch {target} {run_branch}` \
                     makes one at the run's result"
                ),
            ));
        }
        Err(e) => return Err(ApplyError::git(&format!("cannot read {target}"), &e)),
    };
    let checked_out_here = head_branch.as_deref() == Some(target.as_str());
    if checked_out_here {
        refuse_if_dirty(repo, request.root)?;
    } else if let Some(elsewhere) = checked_out_elsewhere(repo, &target) {
        return Err(ApplyError::new(
            ApplyErrorKind::CheckedOutElsewhere,
            format!(
                "{target} is checked out in the worktree {elsewhere}, whose files would no \
                 longer match it: apply the run from there (or check out another branch \
                 there first)"
            ),
        ));
    }
    let refname = target_branch
        .get()
        .name()
        .map(str::to_string)
        .ok_or_else(|| ApplyError::new(ApplyErrorKind::Git, "the target's name is not UTF-8"))?;
    let target_commit = target_branch
        .get()
        .peel_to_commit()
        .map_err(failed("cannot read the target branch's commit"))?;
    let (from, theirs) = (target_commit.id(), run_commit.id());
    let contains = |commit: Oid, ancestor: Oid| {
        repo.graph_descendant_of(commit, ancestor)
            .map_err(failed("cannot compare the branches' histories"))
    };
    if from == theirs || contains(from, theirs)? {
        return Ok(Applied::UpToDate {
            branch: target,
            sha: from.to_string(),
        });
    }
    if contains(theirs, from)? {
        let log = format!("weft apply: fast-forward to {run_branch}");
        move_branch(
            repo,
            &refname,
            &target_commit,
            &run_commit,
            checked_out_here,
            &log,
        )?;
        return Ok(Applied::FastForwarded {
            branch: target,
            from: from.to_string(),
            to: theirs.to_string(),
            worktree_updated: checked_out_here,
        });
    }
    let mut index = repo
        .merge_commits(&target_commit, &run_commit, None)
        .map_err(failed("cannot merge the run's branch"))?;
    if index.has_conflicts() {
        let paths = conflicting_paths(&index)?;
        return Err(ApplyError::new(
            ApplyErrorKind::Conflicts {
                paths: paths.clone(),
            },
            format!(
                "merging {run_branch} into {target} conflicts in {}; nothing was changed. \
                 Merge it with git to resolve them (`git merge {run_branch}`), or use --patch \
                 to see which hunks apply",
                name_paths(&paths)
            ),
        ));
    }
    let tree_id = index
        .write_tree_to(repo)
        .map_err(failed("cannot write the merged tree"))?;
    let tree = repo
        .find_tree(tree_id)
        .map_err(failed("cannot read the merged tree"))?;
    let author = merge_author(repo)?;
    let commit_id = repo
        .commit(
            None,
            &author,
            &author,
            message,
            &tree,
            &[&target_commit, &run_commit],
        )
        .map_err(failed("cannot write the merge commit"))?;
    let commit = repo
        .find_commit(commit_id)
        .map_err(failed("cannot read the merge commit"))?;
    let log = format!("weft apply: merge {run_branch}");
    move_branch(
        repo,
        &refname,
        &target_commit,
        &commit,
        checked_out_here,
        &log,
    )?;
    Ok(Applied::Merged {
        branch: target,
        from: from.to_string(),
        commit: commit_id.to_string(),
        worktree_updated: checked_out_here,
    })
}

/// Moves the branch `refname` from `from` to `to` — only if it is still at
/// `from`, so a concurrent change is never lost. When it is checked out
/// here, the working tree and index are brought to `to` first (a safe
/// checkout: a file it would overwrite stops it before anything is
/// written), and back again should the branch have moved meanwhile.
fn move_branch(
    repo: &Repository,
    refname: &str,
    from: &Commit<'_>,
    to: &Commit<'_>,
    checked_out_here: bool,
    log: &str,
) -> Result<(), ApplyError> {
    if checked_out_here {
        let mut options = CheckoutBuilder::new();
        options.safe().overwrite_ignored(false);
        repo.checkout_tree(to.as_object(), Some(&mut options))
            .map_err(|e| {
                ApplyError::git(
                    "cannot update the working tree (a file the run changes is in the way; \
                     nothing was changed)",
                    &e,
                )
            })?;
    }
    if let Err(e) = repo.reference_matching(refname, to.id(), true, from.id(), log) {
        if checked_out_here {
            // The files are the run's now, the branch is not: put them back
            // (they are what this function wrote a moment ago).
            let mut options = CheckoutBuilder::new();
            options.force();
            let _ = repo.checkout_tree(from.as_object(), Some(&mut options));
        }
        return Err(ApplyError::git(
            "cannot move the branch (did it change meanwhile? nothing was applied)",
            &e,
        ));
    }
    Ok(())
}

fn patch_working_tree(
    repo: &Repository,
    request: &ApplyRequest<'_>,
    patch: &str,
) -> Result<Applied, ApplyError> {
    refuse_if_dirty(repo, request.root)?;
    let does_not_apply = |why: String| ApplyError::new(ApplyErrorKind::PatchDoesNotApply, why);
    if patch.trim().is_empty() {
        refuse_if_incomplete(repo, request, &[])?;
        return Ok(Applied::Patched { files: Vec::new() });
    }
    let diff = Diff::from_buffer(patch.as_bytes()).map_err(|e| {
        does_not_apply(format!(
            "the run's final.patch cannot be read as a patch ({}); nothing was changed",
            e.message()
        ))
    })?;
    let mut files = Vec::new();
    let mut binary = Vec::new();
    for delta in diff.deltas() {
        let path = delta
            .new_file()
            .path()
            .or_else(|| delta.old_file().path())
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        if delta.flags().is_binary() {
            binary.push(path.clone());
        }
        files.push(path);
    }
    files.sort();
    files.dedup();
    if !binary.is_empty() {
        return Err(does_not_apply(format!(
            "the run's final.patch changes binary files ({}) without their contents, so it \
             cannot make them; nothing was changed. Merge the run's branch instead (without \
             --patch)",
            name_paths(&binary)
        )));
    }
    refuse_if_incomplete(repo, request, &files)?;
    let mut check = ApplyOptions::new();
    check.check(true);
    if let Err(e) = repo.apply(&diff, ApplyLocation::WorkDir, Some(&mut check)) {
        let head = repo
            .head()
            .ok()
            .and_then(|h| h.target())
            .map_or_else(|| "?".to_string(), |id| short(&id.to_string()));
        return Err(does_not_apply(format!(
            "the run's final.patch does not apply to {} ({}); nothing was changed. The run \
             started from {} and HEAD is at {head}: merging the run's branch (without --patch) \
             takes both histories into account",
            request.root.display(),
            e.message(),
            short(request.base_sha)
        )));
    }
    repo.apply(&diff, ApplyLocation::WorkDir, None)
        .map_err(failed("cannot apply the run's final.patch"))?;
    Ok(Applied::Patched { files })
}

/// Refuses a patch that lacks files the run branch changed since its base:
/// the engine cuts final.patch at 32 MiB (at a line's end, which may be
/// between two files, leaving a patch that parses and applies but is not
/// the run's whole work), or the branch got commits after the run. Without
/// the run branch there is nothing to compare with, and the patch is taken
/// as it is.
fn refuse_if_incomplete(
    repo: &Repository,
    request: &ApplyRequest<'_>,
    files: &[String],
) -> Result<(), ApplyError> {
    let Ok(branch) = repo.find_branch(request.run_branch, BranchType::Local) else {
        return Ok(());
    };
    let head = branch
        .get()
        .peel_to_tree()
        .map_err(failed("cannot read the run branch's commit"))?;
    let base = repo
        .revparse_single(request.base_sha)
        .and_then(|o| o.peel_to_tree())
        .map_err(failed("cannot read the run's base commit"))?;
    let diff = repo
        .diff_tree_to_tree(Some(&base), Some(&head), None)
        .map_err(failed("cannot diff the run branch"))?;
    let missing: Vec<String> = diff
        .deltas()
        .filter_map(|d| d.new_file().path().or_else(|| d.old_file().path()))
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|path| files.binary_search(path).is_err())
        .take(MAX_NAMED_PATHS + 1)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(ApplyError::new(
        ApplyErrorKind::PatchDoesNotApply,
        format!(
            "the run's final.patch lacks changes its branch {} has ({}): the patch was cut at \
             its size limit, or the branch moved since the run; nothing was changed. Merge \
             the run's branch instead (without --patch)",
            request.run_branch,
            name_paths(&missing)
        ),
    ))
}

/// Refuses a checkout whose working tree or index has changes: applying
/// could mix them with the run's work or overwrite them.
fn refuse_if_dirty(repo: &Repository, root: &Path) -> Result<(), ApplyError> {
    let paths = dirty_paths(repo, MAX_NAMED_PATHS + 1)
        .map_err(|e| ApplyError::new(ApplyErrorKind::Git, e.0))?;
    if paths.is_empty() {
        return Ok(());
    }
    let named = name_paths(&paths);
    Err(ApplyError::new(
        ApplyErrorKind::Dirty { paths },
        format!(
            "the checkout at {} has uncommitted changes ({named}), which applying the run \
             could mix with its work or overwrite: commit or stash them (`git stash -u`) and \
             try again, or merge into a branch that is not checked out with --to BRANCH",
            root.display()
        ),
    ))
}

/// The branch HEAD is on (also when it has no commits yet); `None` when
/// HEAD is detached.
fn head_branch(repo: &Repository) -> Result<Option<String>, ApplyError> {
    let head = repo
        .find_reference("HEAD")
        .map_err(failed("cannot read HEAD"))?;
    Ok(head
        .symbolic_target()
        .and_then(|target| target.strip_prefix("refs/heads/"))
        .map(str::to_string))
}

/// The worktree other than this one where `branch` is checked out, if any
/// (git refuses to check a branch out twice for the same reason: a moved
/// branch would leave that worktree's files behind).
fn checked_out_elsewhere(repo: &Repository, branch: &str) -> Option<String> {
    let here = repo.path().canonicalize().ok();
    let on_branch = |other: &Repository| {
        let other_dir = other.path().canonicalize().ok();
        other_dir != here && head_branch(other).ok().flatten().as_deref() == Some(branch)
    };
    // The main worktree, when this is a linked one.
    if repo.is_worktree()
        && let Ok(main) = Repository::open(repo.commondir())
        && on_branch(&main)
    {
        return Some(main.workdir().unwrap_or(main.path()).display().to_string());
    }
    let names = repo.worktrees().ok()?;
    names.iter().flatten().find_map(|name| {
        let worktree = repo.find_worktree(name).ok()?;
        let other = Repository::open_from_worktree(&worktree).ok()?;
        on_branch(&other).then(|| worktree.path().display().to_string())
    })
}

/// The paths with conflicts in a merged index, sorted, at most
/// [`MAX_NAMED_PATHS`] + 1 (enough to say there are more).
fn conflicting_paths(index: &git2::Index) -> Result<Vec<String>, ApplyError> {
    let conflicts = index
        .conflicts()
        .map_err(failed("cannot read the merge's conflicts"))?;
    let mut paths = Vec::new();
    for conflict in conflicts {
        let conflict = conflict.map_err(failed("cannot read the merge's conflicts"))?;
        let entry = conflict.our.or(conflict.their).or(conflict.ancestor);
        if let Some(entry) = entry {
            paths.push(String::from_utf8_lossy(&entry.path).into_owned());
        }
        if paths.len() > MAX_NAMED_PATHS {
            break;
        }
    }
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// `a, b, c` — the first [`MAX_NAMED_PATHS`], then `…` when there are more.
fn name_paths(paths: &[String]) -> String {
    if paths.len() > MAX_NAMED_PATHS {
        format!("{}, …", paths[..MAX_NAMED_PATHS].join(", "))
    } else {
        paths.join(", ")
    }
}

/// The user's identity from git's configuration, as `git merge` would
/// use; Weft's own when none is configured (a merge should not fail for
/// want of `user.name`).
fn merge_author(repo: &Repository) -> Result<Signature<'static>, ApplyError> {
    match repo.signature() {
        Ok(signature) => Ok(signature),
        Err(_) => Signature::now(AUTHOR_NAME, AUTHOR_EMAIL)
            .map_err(failed("cannot sign the merge commit")),
    }
}

/// What the repository is in the middle of, in git's words.
fn operation(state: RepositoryState) -> &'static str {
    match state {
        RepositoryState::Merge => "merge",
        RepositoryState::Revert | RepositoryState::RevertSequence => "revert",
        RepositoryState::CherryPick | RepositoryState::CherryPickSequence => "cherry-pick",
        RepositoryState::Bisect => "bisect",
        RepositoryState::Rebase
        | RepositoryState::RebaseInteractive
        | RepositoryState::RebaseMerge => "rebase",
        RepositoryState::ApplyMailbox | RepositoryState::ApplyMailboxOrRebase => "git am",
        RepositoryState::Clean => "nothing",
    }
}

/// The first 12 hex digits of a sha.
fn short(sha: &str) -> String {
    sha.chars().take(12).collect()
}
