//! A run's checkpoints, stage after stage: for each, a commit on the
//! metadata branch and one on the run branch naming it, their objects
//! written as one pack. It remembers what the last checkpoint left, so
//! that while nothing else moved the branch or touched the worktree's
//! index, the next scan compares only the worktree with the index.

use super::run_branch::Written;
use super::{GitError, MetadataBranch, RunBranch, ScanKind, StageCommit};

/// Checkpoints one run's stages; one at a time (the caller serialises
/// them, as parallel branches share the worktree).
#[derive(Debug)]
pub struct Checkpointer {
    branch: RunBranch,
    metadata: MetadataBranch,
    last: Option<Written>,
}

/// What a checkpoint wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The metadata branch's new commit.
    pub metadata_sha: String,
    /// The run branch's side: the stage's commit (if it changed
    /// anything), its patch and paths.
    pub stage: StageCommit,
    /// How the stage's changes were found.
    pub scan: ScanKind,
}

impl Checkpointer {
    /// Checkpoints on `branch`, with `metadata` as the metadata branch.
    #[must_use]
    pub fn new(branch: RunBranch, metadata: MetadataBranch) -> Checkpointer {
        // libgit2 hashes every object it reads again to check it; git
        // itself does not (`git fsck` does), and at a checkpoint's scale it
        // is a tenth of the time. Process-wide, hence once.
        static READ_OBJECTS_UNCHECKED: std::sync::Once = std::sync::Once::new();
        READ_OBJECTS_UNCHECKED.call_once(|| git2::opts::strict_hash_verification(false));
        Checkpointer {
            branch,
            metadata,
            last: None,
        }
    }

    /// Commits `files` on the metadata branch with `metadata_message`,
    /// then the worktree's changes on the run branch (as
    /// [`RunBranch::commit_stage`]) with the message `message` makes from
    /// the metadata commit's sha.
    ///
    /// # Errors
    /// Git cannot read the worktree or write either commit; neither branch
    /// then moved unless the metadata commit was published before the
    /// failure (a checkpoint without its stage commit, as after a crash).
    pub fn checkpoint(
        &mut self,
        metadata_message: &str,
        files: &[(&str, &[u8])],
        message: impl Fn(&str) -> String,
    ) -> Result<Checkpoint, GitError> {
        let last = self.last.take();
        let committed = self.branch.commit(
            Some((&self.metadata, metadata_message, files)),
            &|sha| message(sha.unwrap_or_default()),
            last.as_ref(),
        )?;
        self.last = committed.written;
        Ok(Checkpoint {
            metadata_sha: committed.metadata_sha.unwrap_or_default(),
            stage: committed.stage,
            scan: committed.scan,
        })
    }
}
