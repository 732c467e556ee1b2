//! A run's metadata branch (`weft/meta/{run_id}`, execution/checkpoints.mdx,
//! "Metadata branch"): an orphan branch whose commits hold the run's
//! checkpoint records, written straight into git's object database and never
//! checked out, so it costs no worktree and cannot touch the user's files.
//! Blob payloads stay in the run's blob store; what is written here refers
//! to them.

use std::path::{Path, PathBuf};

use git2::build::TreeUpdateBuilder;
use git2::{FileMode, Oid, Repository, Signature};

use super::GitError;
use super::pack::Pending;

/// A run's metadata branch in the repository at `repo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataBranch {
    repo: PathBuf,
    /// The branch's short name (`weft/meta/{run_id}`).
    pub branch: String,
}

impl MetadataBranch {
    /// The branch `branch` of the repository at `repo` (any directory in
    /// it); nothing is written until [`MetadataBranch::write`].
    #[must_use]
    pub fn new(repo: &Path, branch: &str) -> MetadataBranch {
        MetadataBranch {
            repo: repo.to_path_buf(),
            branch: branch.to_string(),
        }
    }

    /// Commits `files` (paths with `/` make directories) on the branch:
    /// the tree is the previous commit's with these files added or
    /// replaced; the first write starts the branch, with no parent.
    /// Returns the commit's sha.
    ///
    /// # Errors
    /// A path is empty or absolute, or git cannot write the objects.
    pub fn write(&self, message: &str, files: &[(&str, &[u8])]) -> Result<String, GitError> {
        let repo = Repository::open_ext(
            &self.repo,
            git2::RepositoryOpenFlags::empty(),
            [] as [&Path; 0],
        )
        .map_err(|e| GitError::from_git("cannot open the repository", &e))?;
        let bytes = files.iter().map(|(_, b)| b.len() as u64).sum();
        let mut pending = Pending::start(&repo, bytes)?;
        let commit = self.commit(&repo, &mut pending, message, files)?;
        pending.write(&repo)?;
        commit.publish(&repo)
    }

    /// Writes the objects of the branch's next commit through `repo` (any
    /// handle on the repository, a worktree's too) into `pending`, without
    /// moving the branch: [`MetadataCommit::publish`] does that once the
    /// objects are on disk.
    pub(super) fn commit(
        &self,
        repo: &Repository,
        pending: &mut Pending,
        message: &str,
        files: &[(&str, &[u8])],
    ) -> Result<MetadataCommit, GitError> {
        let failed = |what: &'static str| move |e: git2::Error| GitError::from_git(what, &e);
        let reference = format!("refs/heads/{}", self.branch);
        let parent = match repo.find_reference(&reference) {
            Ok(r) => Some(
                r.peel_to_commit()
                    .map_err(failed("cannot read the metadata branch"))?,
            ),
            Err(e) if e.code() == git2::ErrorCode::NotFound => None,
            Err(e) => return Err(GitError::from_git("cannot read the metadata branch", &e)),
        };
        let base = match &parent {
            Some(commit) => commit
                .tree()
                .map_err(failed("cannot read the metadata tree"))?,
            None => {
                let empty = repo
                    .treebuilder(None)
                    .and_then(|b| b.write())
                    .map_err(failed("cannot write an empty tree"))?;
                repo.find_tree(empty)
                    .map_err(failed("cannot read an empty tree"))?
            }
        };
        let mut update = TreeUpdateBuilder::new();
        for (path, bytes) in files {
            if path.is_empty()
                || path.starts_with('/')
                || path.split('/').any(|p| p.is_empty() || p == "..")
            {
                return Err(GitError(format!(
                    "{path:?} is not a path inside the metadata branch"
                )));
            }
            let blob: Oid = repo
                .blob(bytes)
                .map_err(failed("cannot write a metadata file"))?;
            update.upsert(*path, blob, FileMode::Blob);
        }
        let tree_id = update
            .create_updated(repo, &base)
            .map_err(failed("cannot write the metadata tree"))?;
        let tree = repo
            .find_tree(tree_id)
            .map_err(failed("cannot read the metadata tree"))?;
        let author = Signature::now(
            super::run_branch::AUTHOR_NAME,
            super::run_branch::AUTHOR_EMAIL,
        )
        .map_err(failed("cannot sign the metadata commit"))?;
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let id = repo
            .commit(None, &author, &author, message, &tree, &parents)
            .map_err(failed("cannot commit on the metadata branch"))?;
        pending.add_commit(id, &tree, files.iter().map(|(path, _)| Path::new(*path)));
        Ok(MetadataCommit {
            reference,
            id,
            parent: parent.map(|p| p.id()),
            summary: message.lines().next().unwrap_or_default().to_string(),
        })
    }
}

/// A metadata commit written but not yet on the branch.
pub(super) struct MetadataCommit {
    reference: String,
    pub(super) id: Oid,
    parent: Option<Oid>,
    summary: String,
}

impl MetadataCommit {
    /// Moves the branch to the commit, if it is still where the commit's
    /// parent found it (or starts it). Returns the commit's sha.
    pub(super) fn publish(&self, repo: &Repository) -> Result<String, GitError> {
        let log = format!("commit: {}", self.summary);
        let moved = match self.parent {
            Some(parent) => repo.reference_matching(&self.reference, self.id, true, parent, &log),
            None => repo.reference(&self.reference, self.id, false, &log),
        };
        moved.map_err(|e| GitError::from_git("cannot move the metadata branch", &e))?;
        Ok(self.id.to_string())
    }
}
