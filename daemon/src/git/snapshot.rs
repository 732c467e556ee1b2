//! The seed's way of finding what an external agent changed
//! (agents/outputs.mdx, "CLI and ACP backends"): the work dir's changed and
//! untracked files (not ignored) before and after the agent, and the
//! difference. Weft cannot see an external agent's writes, only their
//! traces in the working tree.

use std::collections::BTreeSet;
use std::path::Path;

use git2::Repository;

/// The most paths a snapshot holds: past it, the work dir is full of
/// output nobody ignored, and the snapshot is given up on.
const MAX_PATHS: usize = 100_000;

/// The files under `dir` that differ from the repository's HEAD or are
/// untracked (not ignored), relative to `dir`; `None` when `dir` is in no
/// repository (or has too many).
#[must_use]
pub fn changed_files(dir: &Path) -> Option<BTreeSet<String>> {
    let repo = Repository::discover(dir).ok()?;
    let root = repo.workdir()?.canonicalize().ok()?;
    let dir = dir.canonicalize().ok()?;
    let prefix = dir.strip_prefix(&root).ok()?.to_path_buf();
    let mut options = super::changes_options();
    if !prefix.as_os_str().is_empty() {
        options.pathspec(prefix.to_string_lossy().as_ref());
    }
    let statuses = repo.statuses(Some(&mut options)).ok()?;
    if statuses.len() > MAX_PATHS {
        return None;
    }
    Some(
        statuses
            .iter()
            .filter_map(|entry| {
                let path = Path::new(entry.path()?);
                Some(
                    path.strip_prefix(&prefix)
                        .ok()?
                        .to_string_lossy()
                        .into_owned(),
                )
            })
            .collect(),
    )
}

/// What a snapshot taken after the agent adds to the one before: the
/// files it changed (a file already changed before and changed again is
/// not seen, as in the seed).
#[must_use]
pub fn touched(before: &BTreeSet<String>, after: &BTreeSet<String>) -> Vec<String> {
    after.difference(before).cloned().collect()
}
