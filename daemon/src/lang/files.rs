//! The files a workflow names: `@file` references (`prompt`, `goal`),
//! imports, output schemas and child workflows. Each is resolved against the
//! directory of the file that names it, must lie inside the workflow's
//! [`Tree`], must be a regular file, and is read with a size cap
//! ([`crate::limits`]).
//!
//! Why confine them: a workflow is code that someone else (or an agent) may
//! have written. `goal="@/proc/self/environ"` or `prompt="@~/.ssh/id_rsa"`
//! would copy secrets into the run's records and into model prompts. A
//! workflow may read what lives beside it, in its own directory tree or the
//! git work tree around it, and nothing else.
//!
//! The check runs on the canonical path (symlinks resolved), so a symlink in
//! the tree that points outside it is refused too. A file swapped for a
//! symlink between the check and the read is not guarded against: whoever
//! can do that can read the file already.

use std::path::{Component, Path, PathBuf};

use crate::limits::{self, ReadError};

/// The rule id of a reference to a file outside the workflow's tree.
pub(crate) const FILE_OUTSIDE_TREE: &str = "file_outside_tree";

/// Directories whose files are interfaces to the kernel, not data: their
/// "regular" files (`/proc/self/environ`) report a size of 0 and hand out
/// the process's secrets. Refused even when the tree contains them.
const KERNEL_DIRS: &[&str] = &["/proc", "/sys", "/dev"];

/// Where a workflow's file references may point: the git work tree the
/// workflow lives in (the nearest directory above it holding `.git`), or,
/// outside any repository, the workflow's own directory and everything
/// below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tree {
    /// Canonical (absolute, symlinks resolved) when the directory exists.
    root: PathBuf,
}

/// Why a referenced file was not read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RefError {
    /// The file (its canonical path) is outside the tree.
    #[error("it is outside the workflow's tree `{}`", root.display())]
    Outside { root: PathBuf },
    /// Under `/proc`, `/sys` or `/dev`.
    #[error("it is a special file (under `{dir}`)")]
    Kernel { dir: &'static str },
    /// Missing, not a regular file, too large, unreadable.
    #[error("{0}")]
    Read(#[from] ReadError),
    /// Within its own cap, but the files one load reads together would
    /// pass `cap` ([`super::budget::MAX_READ_BYTES`]).
    #[error("with the other files the workflow reads, it passes the limit of {} for one load", limits::human_bytes(*cap))]
    OverBudget { cap: u64 },
}

impl RefError {
    /// The hint for a diagnostic about this refusal.
    #[must_use]
    pub fn hint(&self, resolved: &Path) -> String {
        match self {
            RefError::Outside { root } => format!(
                "a workflow may read files only inside its own directory tree or git repository (`{}`); `{}` is not: copy the file into the tree",
                root.display(),
                resolved.display()
            ),
            RefError::Kernel { .. } => {
                "a workflow may read only ordinary files; put the text in a file beside the workflow".to_string()
            }
            RefError::Read(ReadError::TooLarge { .. }) | RefError::OverBudget { .. } => {
                "shorten the file, or split it (only workflows and their references are capped; see docs/language.md, \"Limits\")".to_string()
            }
            RefError::Read(_) => format!(
                "paths are relative to the workflow file's directory; this one resolves to `{}`",
                resolved.display()
            ),
        }
    }

    /// True for the refusals of confinement (rule [`FILE_OUTSIDE_TREE`]),
    /// as opposed to files that are missing or unreadable.
    #[must_use]
    pub(crate) fn is_confinement(&self) -> bool {
        matches!(self, RefError::Outside { .. } | RefError::Kernel { .. })
    }
}

impl Tree {
    /// The tree of a workflow loaded from `base_dir`: the git work tree
    /// around it, else `base_dir` itself. A directory that cannot be
    /// canonicalized (it does not exist) is its own tree: nothing in it can
    /// be read anyway.
    #[must_use]
    pub fn of(base_dir: &Path) -> Tree {
        let dir = if base_dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            base_dir
        };
        let Ok(canonical) = std::fs::canonicalize(dir) else {
            return Tree {
                root: absolute(dir),
            };
        };
        // `.git` is a directory in a clone and a file in a linked worktree
        // or submodule; either marks the top of a work tree. The walk is
        // bounded by the path's depth.
        let root = canonical
            .ancestors()
            .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
            .unwrap_or(&canonical)
            .to_path_buf();
        Tree { root }
    }

    /// Where `path` really is (canonical), when it exists inside the tree
    /// and outside the kernel's directories. Says nothing about its type.
    pub(crate) fn confine(&self, path: &Path) -> Result<PathBuf, RefError> {
        let canonical = std::fs::canonicalize(path).map_err(ReadError::from)?;
        if let Some(dir) = KERNEL_DIRS.iter().find(|dir| canonical.starts_with(dir)) {
            return Err(RefError::Kernel { dir });
        }
        if !canonical.starts_with(&self.root) {
            return Err(RefError::Outside {
                root: self.root.clone(),
            });
        }
        Ok(canonical)
    }

    /// Checks that `path` is a regular file inside the tree, at most `cap`
    /// bytes long, without reading it. Returns its canonical path.
    pub fn check(&self, path: &Path, cap: u64) -> Result<PathBuf, RefError> {
        let canonical = self.confine(path)?;
        let meta = std::fs::metadata(&canonical).map_err(ReadError::from)?;
        let kind = limits::file_kind(&meta.file_type());
        if !meta.is_file() {
            return Err(ReadError::NotRegular { kind }.into());
        }
        if meta.len() > cap {
            return Err(ReadError::TooLarge { cap }.into());
        }
        Ok(canonical)
    }

    /// Reads the regular file at `path`, inside the tree, of at most `cap`
    /// bytes (see [`limits::read_capped`]).
    pub fn read(&self, path: &Path, cap: u64) -> Result<Vec<u8>, RefError> {
        let canonical = self.confine(path)?;
        Ok(limits::read_capped(&canonical, cap)?)
    }

    /// [`Tree::read`] for UTF-8 text.
    pub(crate) fn read_text(&self, path: &Path, cap: u64) -> Result<String, RefError> {
        let canonical = self.confine(path)?;
        Ok(limits::read_text_capped(&canonical, cap)?)
    }
}

/// `dir` made absolute against the current directory, `.` and `..`
/// folded, without touching the file system.
fn absolute(dir: &Path) -> PathBuf {
    let joined = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir().map_or_else(|_| dir.to_path_buf(), |cwd| cwd.join(dir))
    };
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("flows/parts")).expect("mkdir");
        dir
    }

    #[test]
    fn outside_a_repository_the_tree_is_the_workflows_directory() {
        let dir = repo();
        let tree = Tree::of(&dir.path().join("flows"));
        let canonical = std::fs::canonicalize(dir.path().join("flows")).expect("canonical");
        assert_eq!(tree.root, canonical);
        std::fs::write(dir.path().join("secret.txt"), "s").expect("write");
        std::fs::write(dir.path().join("flows/parts/p.md"), "p").expect("write");
        assert_eq!(
            tree.read_text(&dir.path().join("flows/parts/p.md"), 100)
                .expect("inside"),
            "p"
        );
        let err = tree
            .read(&dir.path().join("flows/../secret.txt"), 100)
            .expect_err("outside");
        assert!(matches!(err, RefError::Outside { .. }), "{err:?}");
        assert!(err.is_confinement());
    }

    #[test]
    fn inside_a_repository_the_tree_is_the_work_tree() {
        let dir = repo();
        std::fs::create_dir(dir.path().join(".git")).expect("mkdir .git");
        std::fs::create_dir(dir.path().join("prompts")).expect("mkdir");
        std::fs::write(dir.path().join("prompts/plan.md"), "plan").expect("write");
        let tree = Tree::of(&dir.path().join("flows/parts"));
        assert_eq!(
            tree.read_text(&dir.path().join("flows/parts/../../prompts/plan.md"), 100)
                .expect("inside the repository"),
            "plan"
        );
    }

    #[test]
    fn a_symlink_leading_out_of_the_tree_is_refused() {
        let dir = repo();
        let outside = tempfile::tempdir().expect("temp dir");
        std::fs::write(outside.path().join("key"), "secret").expect("write");
        std::os::unix::fs::symlink(outside.path().join("key"), dir.path().join("flows/key"))
            .expect("symlink");
        let tree = Tree::of(&dir.path().join("flows"));
        let err = tree
            .read(&dir.path().join("flows/key"), 100)
            .expect_err("escapes");
        assert!(matches!(err, RefError::Outside { .. }), "{err:?}");
    }

    #[test]
    fn kernel_files_are_refused_even_inside_the_tree() {
        let tree = Tree::of(Path::new("/"));
        let err = tree
            .read(Path::new("/proc/self/environ"), 100)
            .expect_err("kernel file");
        assert!(matches!(err, RefError::Kernel { dir: "/proc" }), "{err:?}");
        let err = tree.read(Path::new("/dev/zero"), 100).expect_err("device");
        assert!(matches!(err, RefError::Kernel { dir: "/dev" }), "{err:?}");
    }

    #[test]
    fn check_refuses_large_and_special_files_without_reading_them() {
        let dir = repo();
        let tree = Tree::of(&dir.path().join("flows"));
        let big = dir.path().join("flows/big.json");
        std::fs::write(&big, vec![b' '; 2048]).expect("write");
        assert!(matches!(
            tree.check(&big, 1024),
            Err(RefError::Read(ReadError::TooLarge { cap: 1024 }))
        ));
        assert!(matches!(
            tree.check(&dir.path().join("flows/parts"), 1024),
            Err(RefError::Read(ReadError::NotRegular { .. }))
        ));
        assert!(matches!(
            tree.check(&dir.path().join("flows/none.json"), 1024),
            Err(RefError::Read(ReadError::NotFound))
        ));
    }
}
