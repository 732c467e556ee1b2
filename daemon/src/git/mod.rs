//! Git checkpoints (execution/checkpoints.mdx), with libgit2 through `git2`:
//! a run in a git repository works in a worktree of its own, on a branch of
//! its own, and each stage's changes become a commit there. The user's
//! checkout (HEAD, index, working tree) is never touched.
//!
//! This layer knows repositories, not runs: the engine names the branch,
//! the worktree's place and the commit messages.
//!
//! - [`checkout`]: finding the repository a work dir is in, and whether a
//!   run can be checkpointed there.
//! - [`run_branch`]: the run's branch and worktree, and a stage's commit
//!   with its patch and trailers.
//! - [`worktree`]: the worktree after its start: reopened on resume,
//!   reset to a checkpoint, diffed at the end, removed.
//! - [`dirty`]: copying the checkout's uncommitted changes into a
//!   worktree (`--include-dirty`).
//! - [`metadata`]: the run's metadata branch, written without a checkout.
//! - [`checkpointer`]: a stage's checkpoint, on both branches; `pack`
//!   writes a checkpoint's objects as one pack, `scan` finds what a stage
//!   changed in the worktree.
//! - [`apply`]: bringing a run's result into the user's checkout (a merge
//!   of the run branch, or its final patch on the working tree).

pub mod apply;
pub mod checkout;
pub mod checkpointer;
pub mod dirty;
pub mod metadata;
mod pack;
pub mod run_branch;
mod scan;
pub mod snapshot;
pub mod worktree;

pub use apply::{Applied, ApplyError, ApplyErrorKind, ApplyMode, ApplyRequest, apply};
pub use checkout::{Checkout, Discovery};
pub use checkpointer::{Checkpoint, Checkpointer};
pub use metadata::MetadataBranch;
pub use run_branch::{RunBranch, StageCommit, stage_message};
pub use scan::ScanKind;

/// Status options that list every change `git add -A` would stage: new
/// files in untracked directories one by one, ignored files left out,
/// submodules left alone.
pub(crate) fn changes_options() -> git2::StatusOptions {
    let mut options = git2::StatusOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    options
}

/// A git operation that failed, worded for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitError(pub String);

impl std::fmt::Display for GitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for GitError {}

impl GitError {
    /// `what` failed because of libgit2's `error`.
    pub(crate) fn from_git(what: &str, error: &git2::Error) -> GitError {
        GitError(format!("{what}: {}", error.message()))
    }
}
