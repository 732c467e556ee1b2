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
    /// The run's container, when `shell` runs there instead of on the host
    /// (`[run.sandbox]`); the file tools act on the work dir either way.
    pub sandbox: Option<std::sync::Arc<crate::sandbox::run::RunSandbox>>,
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
    pub fn new(
        work_dir: &Path,
        extra_roots: &[PathBuf],
        cancel: Cancel,
    ) -> std::io::Result<Workspace> {
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
            sandbox: None,
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
        let shown = shown_path(path);
        if path.len() > MAX_PATH_BYTES {
            return Err(ToolOutput::error(format!(
                "the path `{shown}` is {} bytes long; paths may have at most {MAX_PATH_BYTES}",
                path.len()
            )));
        }
        let given = Path::new(path);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.root.join(given)
        };
        let resolved = resolve_existing_prefix(&joined)
            .map_err(|e| ToolOutput::error(format!("cannot resolve `{shown}`: {e}")))?;
        if self.contains(&resolved) {
            Ok(resolved)
        } else {
            Err(ToolOutput::error(format!(
                "`{shown}` is outside the work directory {}; tools may only use files under it",
                self.root.display()
            )))
        }
    }

    fn contains(&self, path: &Path) -> bool {
        path.starts_with(&self.root) || self.extra_roots.iter().any(|r| path.starts_with(r))
    }

    /// `path` relative to the work dir when it is under it (`.` for the
    /// work dir itself), else as is.
    #[must_use]
    pub fn relative(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rest) if rest.as_os_str().is_empty() => ".".to_string(),
            Ok(rest) => rest.to_string_lossy().into_owned(),
            Err(_) => path.to_string_lossy().into_owned(),
        }
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

/// The longest path a tool accepts, in bytes (Linux's `PATH_MAX`): a
/// longer one cannot be opened anyway, and echoing it back would waste the
/// model's context.
const MAX_PATH_BYTES: usize = 4096;

/// Symbolic links followed while resolving one path, as the kernel allows
/// (`ELOOP` past 40).
const MAX_LINK_HOPS: usize = 40;

/// `path` cut for an error message.
fn shown_path(path: &str) -> String {
    crate::util::text::truncate(path, 200)
}

/// Canonicalises the longest existing prefix of `path` and appends the
/// rest, refusing `..` in the part that does not exist (it could climb out
/// after the check). A dangling symlink in the path is followed to where
/// it points (a write through it would land there), so a link to a missing
/// file outside the workspace resolves outside and is refused.
fn resolve_existing_prefix(path: &Path) -> std::io::Result<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    let mut hops = 0;
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
                if existing
                    .symlink_metadata()
                    .is_ok_and(|m| m.file_type().is_symlink())
                {
                    // A link whose target is missing: carry on from its target.
                    hops += 1;
                    if hops > MAX_LINK_HOPS {
                        return Err(std::io::Error::other("too many levels of symbolic links"));
                    }
                    let target = std::fs::read_link(&existing)?;
                    existing.pop();
                    existing.push(target);
                    continue;
                }
                if existing.components().next_back() == Some(Component::ParentDir) {
                    return Err(std::io::Error::other("`..` after a missing directory"));
                }
                let Some(name) = existing.file_name().map(std::ffi::OsStr::to_os_string) else {
                    return Err(e);
                };
                rest.push(name);
                if !existing.pop() {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// A workspace over a fresh temporary work dir, for the tools' tests.
#[cfg(test)]
pub(crate) fn scratch() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().expect("temp");
    let ws = Workspace::new(dir.path(), &[], Cancel::new()).expect("workspace");
    (dir, ws)
}

#[cfg(test)]
mod tests {

    use super::scratch as workspace;

    #[test]
    fn paths_resolve_inside_the_work_dir_and_nowhere_else() {
        let (dir, ws) = workspace();
        std::fs::create_dir(dir.path().join("src")).expect("dir");
        let inside = ws.resolve("src/new.rs").expect("a new file under the root");
        assert!(inside.starts_with(ws.root()));
        assert!(ws.resolve("../escape.txt").is_err());
        assert!(ws.resolve("src/../../escape.txt").is_err());
        assert!(ws.resolve("/etc/passwd").is_err());
        assert!(
            ws.resolve("missing/../../x").is_err(),
            "`..` after a missing dir"
        );
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
        assert!(
            message.contains("has not been read") && message.contains("read_file"),
            "{message}"
        );
        ws.mark_read(&existing);
        ws.check_write(&existing).expect("read first");
        ws.check_write(&ws.resolve("new.txt").expect("resolve"))
            .expect("a new file");
    }

    #[test]
    fn a_dangling_symlink_is_followed_to_where_a_write_would_land() {
        let (dir, ws) = workspace();
        let outside = tempfile::tempdir().expect("temp");
        let target = outside.path().join("not-yet");
        std::os::unix::fs::symlink(&target, dir.path().join("out")).expect("link");
        let message = ws.resolve("out").expect_err("points outside").content;
        assert!(message.contains("outside the work directory"), "{message}");
        std::os::unix::fs::symlink("missing-inside.txt", dir.path().join("in")).expect("link");
        assert_eq!(
            ws.resolve("in").expect("points inside"),
            ws.root().join("missing-inside.txt")
        );
    }

    #[test]
    fn a_symlink_loop_is_an_error_not_a_hang() {
        let (dir, ws) = workspace();
        std::os::unix::fs::symlink("b", dir.path().join("a")).expect("link");
        std::os::unix::fs::symlink("a", dir.path().join("b")).expect("link");
        let message = ws.resolve("a").expect_err("loop").content;
        assert!(message.contains("cannot resolve"), "{message}");
        assert!(ws.resolve("a/x").is_err());
    }

    #[test]
    fn nul_bytes_and_overlong_paths_are_refused_with_a_short_message() {
        let (_dir, ws) = workspace();
        assert!(ws.resolve("a\0b").expect_err("NUL").content.contains("NUL"));
        let long = "x/".repeat(5000);
        let message = ws.resolve(&long).expect_err("too long").content;
        assert!(message.contains("at most 4096"), "{message}");
        assert!(
            message.len() < 500,
            "the path is not echoed whole: {} bytes",
            message.len()
        );
        let long_name = "y".repeat(300);
        let message = ws.resolve(&long_name).expect_err("name too long").content;
        assert!(message.contains("cannot resolve"), "{message}");
    }

    #[test]
    fn parent_steps_are_resolved_before_the_check() {
        let (dir, ws) = workspace();
        std::fs::create_dir_all(dir.path().join("a/b")).expect("dirs");
        assert_eq!(
            ws.resolve("a/b/../c.txt").expect("inside"),
            ws.root().join("a/c.txt")
        );
        assert_eq!(ws.resolve("a/..").expect("the root"), ws.root());
        assert!(ws.resolve("a/b/../../..").is_err());
        assert!(
            ws.resolve("nope/..").is_err(),
            "`..` after a missing directory"
        );
    }
}
