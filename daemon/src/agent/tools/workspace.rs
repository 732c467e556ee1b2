//! Where an agent's tools work: the work dir (and any extra roots a node
//! allows), which files the session has read, and what `shell` inherits.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use super::{ToolOutput, WebSearch};
use crate::exec::cancel::Cancel;
use crate::util::lock::lock;

/// The files and processes one session may touch.
#[derive(Debug)]
pub struct Workspace {
    /// The work dir, canonical: relative paths resolve against it.
    root: PathBuf,
    /// Canonical directories tools may read and write besides `root`.
    extra_roots: Vec<PathBuf>,
    /// Canonical paths of files the session has read (`read_file`,
    /// `read_many_files`, `grep` hits, `edit_file`'s own read).
    read: Mutex<HashSet<PathBuf>>,
    /// What `shell` inherits: the run's environment with secrets withheld.
    pub env: Vec<(String, String)>,
    /// Stops running tools (run cancel, a lost race, the stage timeout).
    pub cancel: Cancel,
    /// `shell` calls without `timeout_ms` get this.
    pub shell_default_timeout: Duration,
    /// No `shell` call runs longer.
    pub shell_max_timeout: Duration,
    /// Where `shell` keeps each call's full output while it runs (the
    /// stage directory's `tools/`); a temporary directory when `None`.
    pub scratch_dir: Option<PathBuf>,
    /// Where `web_search` asks and with which key (from the session's
    /// `web_search_key`); `None`: the tool answers that it is not set up.
    pub web_search: Option<WebSearch>,
}

impl Workspace {
    /// A workspace rooted at `work_dir`, which must exist.
    ///
    /// # Errors
    /// When `work_dir` (or an extra root) cannot be resolved.
    pub fn new(work_dir: &Path, extra_roots: &[PathBuf], cancel: Cancel) -> std::io::Result<Workspace> {
        let root = work_dir.canonicalize()?;
        let extra_roots = extra_roots
            .iter()
            .map(|p| p.canonicalize())
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Workspace {
            root,
            extra_roots,
            read: Mutex::new(HashSet::new()),
            env: Vec::new(),
            cancel,
            shell_default_timeout: Duration::from_secs(120),
            shell_max_timeout: Duration::from_secs(600),
            scratch_dir: None,
            web_search: None,
        })
    }

    /// The work dir (canonical).
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path the model gave (absolute, or relative to the work
    /// dir) to a canonical path inside the workspace. Symlinks are resolved
    /// before the check, so a link pointing outside is refused; a path that
    /// does not exist yet is resolved through its deepest existing parent.
    ///
    /// # Errors
    /// A message for the model when the path leaves the workspace or is
    /// empty.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolOutput> {
        if path.trim().is_empty() {
            return Err(ToolOutput::error("the path is empty"));
        }
        if path.contains('\0') {
            return Err(ToolOutput::error("the path contains a NUL byte"));
        }
        let given = Path::new(path);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.root.join(given)
        };
        let resolved = resolve_existing_prefix(&joined).map_err(|e| {
            ToolOutput::error(format!("cannot resolve `{path}`: {e}"))
        })?;
        if self.contains(&resolved) {
            Ok(resolved)
        } else {
            Err(ToolOutput::error(format!(
                "`{path}` is outside the work directory {}; tools may only use files under it",
                self.root.display()
            )))
        }
    }

    fn contains(&self, path: &Path) -> bool {
        path.starts_with(&self.root) || self.extra_roots.iter().any(|r| path.starts_with(r))
    }

    /// `path` relative to the work dir when it is under it, else as is.
    #[must_use]
    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    /// Notes that the session has seen `path` (canonical).
    pub fn mark_read(&self, path: &Path) {
        lock(&self.read).insert(path.to_path_buf());
    }

    /// Whether the session has seen `path` (canonical).
    #[must_use]
    pub fn was_read(&self, path: &Path) -> bool {
        lock(&self.read).contains(path)
    }

    /// The read-before-write guardrail: writing (or deleting) an existing
    /// file needs a read of it first; a new file is always allowed.
    ///
    /// # Errors
    /// A message telling the model to read the file first.
    pub fn check_write(&self, path: &Path) -> Result<(), ToolOutput> {
        if path.exists() && !self.was_read(path) {
            return Err(ToolOutput::error(format!(
                "Cannot write to '{}': file exists but has not been read.\n\
                 Use read_file to read the file before writing to it.",
                self.relative(path)
            )));
        }
        Ok(())
    }
}

/// Canonicalises the longest existing prefix of `path` and appends the
/// rest, refusing `..` in the part that does not exist (it could climb out
/// after the check).
fn resolve_existing_prefix(path: &Path) -> std::io::Result<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(canonical) => {
                let mut out = canonical;
                for part in rest.iter().rev() {
                    out.push(part);
                }
                return Ok(out);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let Some(name) = existing.file_name().map(std::ffi::OsStr::to_os_string) else {
                    return Err(e);
                };
                if existing.components().next_back() == Some(Component::ParentDir) {
                    return Err(std::io::Error::other("`..` after a missing directory"));
                }
                rest.push(name);
                if !existing.pop() {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().expect("temp");
        let ws = Workspace::new(dir.path(), &[], Cancel::new()).expect("workspace");
        (dir, ws)
    }

    #[test]
    fn paths_resolve_inside_the_work_dir_and_nowhere_else() {
        let (dir, ws) = workspace();
        std::fs::create_dir(dir.path().join("src")).expect("dir");
        let inside = ws.resolve("src/new.rs").expect("a new file under the root");
        assert!(inside.starts_with(ws.root()));
        assert!(ws.resolve("../escape.txt").is_err());
        assert!(ws.resolve("src/../../escape.txt").is_err());
        assert!(ws.resolve("/etc/passwd").is_err());
        assert!(ws.resolve("missing/../../x").is_err(), "`..` after a missing dir");
        assert!(ws.resolve("").is_err());
        let absolute = ws.root().join("src/a.rs");
        assert!(ws.resolve(absolute.to_str().expect("utf-8")).is_ok());
    }

    #[test]
    fn a_symlink_pointing_outside_is_refused() {
        let (dir, ws) = workspace();
        let outside = tempfile::tempdir().expect("temp");
        std::fs::write(outside.path().join("secret"), "s").expect("write");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).expect("link");
        assert!(ws.resolve("link/secret").is_err());
        assert!(ws.resolve("link/new-file").is_err());
    }

    #[test]
    fn writing_an_existing_file_needs_a_read_first() {
        let (dir, ws) = workspace();
        std::fs::write(dir.path().join("a.txt"), "a").expect("write");
        let existing = ws.resolve("a.txt").expect("resolve");
        let message = ws.check_write(&existing).expect_err("unread").content;
        assert!(message.contains("has not been read") && message.contains("read_file"), "{message}");
        ws.mark_read(&existing);
        ws.check_write(&existing).expect("read first");
        ws.check_write(&ws.resolve("new.txt").expect("resolve")).expect("a new file");
    }
}
