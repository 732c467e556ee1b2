//! Bringing the user's uncommitted changes into a run's worktree, for a run
//! started with `--include-dirty`: every file the checkout's status scan
//! finds changed, new (not ignored) or deleted is copied over or removed, so
//! the worktree looks like the checkout, and the run commits that as its
//! first commit. The checkout itself is only read.

use std::path::Path;

use git2::{Repository, Status};

use super::GitError;

/// The most uncommitted files copied: a checkout with more is almost
/// certainly full of build output nobody ignored, and copying it would
/// take as long as the run.
pub const MAX_DIRTY_FILES: usize = 10_000;

/// Copies the uncommitted changes of the checkout at `root` into
/// `worktree` (on the same commit): modified and new files are copied
/// (symlinks as symlinks), deleted ones removed. Returns the paths, sorted.
///
/// # Errors
/// More than [`MAX_DIRTY_FILES`] files, or a file cannot be read or
/// written.
pub fn copy_uncommitted(root: &Path, worktree: &Path) -> Result<Vec<String>, GitError> {
    let repo =
        Repository::open(root).map_err(|e| GitError::from_git("cannot open the checkout", &e))?;
    let mut options = super::changes_options();
    let statuses = repo
        .statuses(Some(&mut options))
        .map_err(|e| GitError::from_git("cannot read the checkout's status", &e))?;
    if statuses.len() > MAX_DIRTY_FILES {
        return Err(GitError(format!(
            "the checkout has {} uncommitted files (at most {MAX_DIRTY_FILES} are copied with --include-dirty): commit or ignore some of them",
            statuses.len()
        )));
    }
    let mut paths = Vec::new();
    for entry in statuses.iter() {
        let status = entry.status();
        if status == Status::CURRENT || status.contains(Status::IGNORED) {
            continue;
        }
        let Some(path) = entry.path() else { continue };
        let from = root.join(path);
        let to = worktree.join(path);
        let failed = |what: &str, e: std::io::Error| GitError(format!("cannot {what}: {e}"));
        match std::fs::symlink_metadata(&from) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if to.symlink_metadata().is_ok() {
                    std::fs::remove_file(&to)
                        .map_err(|e| failed(&format!("remove {}", to.display()), e))?;
                }
            }
            Err(e) => return Err(failed(&format!("read {}", from.display()), e)),
            Ok(meta) => {
                if let Some(parent) = to.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| failed(&format!("create {}", parent.display()), e))?;
                }
                if to.symlink_metadata().is_ok() {
                    std::fs::remove_file(&to)
                        .map_err(|e| failed(&format!("replace {}", to.display()), e))?;
                }
                if meta.file_type().is_symlink() {
                    let target = std::fs::read_link(&from)
                        .map_err(|e| failed(&format!("read {}", from.display()), e))?;
                    std::os::unix::fs::symlink(target, &to)
                        .map_err(|e| failed(&format!("write {}", to.display()), e))?;
                } else if meta.is_file() {
                    std::fs::copy(&from, &to)
                        .map_err(|e| failed(&format!("copy {}", from.display()), e))?;
                } else {
                    continue; // a socket or FIFO: nothing git would commit
                }
            }
        }
        paths.push(path.to_string());
    }
    paths.sort();
    Ok(paths)
}
