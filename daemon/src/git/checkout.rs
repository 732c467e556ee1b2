//! Which repository a work dir belongs to, and whether a run there can be
//! checkpointed: a run needs a commit to start its branch from and a
//! working tree to copy, so a bare repository or one without commits is
//! refused with the reason (checkpoints are then off for the run).

use std::path::{Path, PathBuf};

use git2::{Repository, RepositoryOpenFlags, Status, StatusOptions};

use super::GitError;

/// The user's checkout a run starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkout {
    /// The top of the working tree.
    pub root: PathBuf,
    /// The commit HEAD points at: the run's base.
    pub head_sha: String,
    /// The branch HEAD is on; `None` when HEAD is detached.
    pub branch: Option<String>,
    /// Whether the working tree or index has changes the base lacks
    /// (untracked files that are not ignored count).
    pub dirty: bool,
    /// A shallow clone: history before the base may be missing.
    pub shallow: bool,
}

/// What looking for a repository found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Discovery {
    /// The work dir is in no repository: checkpoints are off.
    NotARepository,
    /// A checkout a run can start from.
    Checkout(Checkout),
}

impl Checkout {
    /// Looks for the repository `dir` is in, searching its parents.
    ///
    /// # Errors
    /// The repository is bare or has no commits yet, or git cannot read it;
    /// the message says which and what to do.
    pub fn discover(dir: &Path) -> Result<Discovery, GitError> {
        let repo = match Repository::open_ext(dir, RepositoryOpenFlags::empty(), [] as [&Path; 0]) {
            Ok(repo) => repo,
            Err(e) if e.code() == git2::ErrorCode::NotFound => {
                return Ok(Discovery::NotARepository);
            }
            Err(e) => return Err(GitError::from_git("cannot open the repository", &e)),
        };
        let Some(root) = repo.workdir().map(Path::to_path_buf) else {
            return Err(GitError(format!(
                "{} is a bare repository: a run needs a working tree to copy",
                repo.path().display()
            )));
        };
        let head = match repo.head() {
            Ok(head) => head,
            Err(e) if e.code() == git2::ErrorCode::UnbornBranch => {
                return Err(GitError(format!(
                    "the repository at {} has no commits yet: commit something first, \
                     or run with --no-checkpoint",
                    root.display()
                )));
            }
            Err(e) => return Err(GitError::from_git("cannot read HEAD", &e)),
        };
        let head_sha = head
            .peel_to_commit()
            .map_err(|e| GitError::from_git("HEAD is not a commit", &e))?
            .id()
            .to_string();
        let branch = head
            .is_branch()
            .then(|| head.shorthand().map(str::to_string))
            .flatten();
        let dirty = is_dirty(&repo)?;
        Ok(Discovery::Checkout(Checkout {
            root,
            head_sha,
            branch,
            dirty,
            shallow: repo.is_shallow(),
        }))
    }
}

/// Whether anything in the index or working tree differs from HEAD.
fn is_dirty(repo: &Repository) -> Result<bool, GitError> {
    Ok(!dirty_paths(repo, 1)?.is_empty())
}

/// Up to `limit` paths whose index or working-tree state differs from HEAD
/// (untracked files that are not ignored count; submodules do not), in
/// the status scan's order: what makes the checkout dirty, for messages.
pub(super) fn dirty_paths(repo: &Repository, limit: usize) -> Result<Vec<String>, GitError> {
    let mut options = StatusOptions::new();
    options
        .include_untracked(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo
        .statuses(Some(&mut options))
        .map_err(|e| GitError::from_git("cannot read the checkout's status", &e))?;
    Ok(statuses
        .iter()
        .filter(|s| s.status() != Status::CURRENT && !s.status().contains(Status::IGNORED))
        .take(limit)
        .map(|s| String::from_utf8_lossy(s.path_bytes()).into_owned())
        .collect())
}
