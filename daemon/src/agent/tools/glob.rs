//! `glob` (agents/tools.mdx): files whose path, relative to the search
//! directory, matches a glob pattern; newest first. Listing files is not
//! reading them: no file is marked read.
//!
//! The walk here is also `grep`'s ([`walk`]): the same files are visible to
//! both, so a file `glob` finds is a file `grep` searches.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use globset::GlobBuilder;
use ignore::WalkBuilder;
use serde_json::Value;

use super::{ToolOutput, Workspace, required_str};

/// Paths returned at most; the rest are counted in a note.
const MAX_PATHS: usize = 1_000;
/// Directory entries a walk visits at most (files and directories), so a
/// search of a huge tree ends in bounded time; the output says when the
/// walk stopped early.
pub(super) const MAX_WALK_ENTRIES: usize = 200_000;
/// How deep a walk descends below its start.
const MAX_WALK_DEPTH: usize = 64;

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Find files by name pattern (e.g. **/*.rs), honouring .gitignore and .ignore and skipping \
         hidden files. The pattern is matched against paths relative to `path`; `*` does not \
         cross `/`, `**` does. Returns paths relative to the working directory, newest first, at \
         most 1000. Finding a file does not count as reading it.",
        serde_json::json!({"type":"object","properties":{"pattern":{"type":"string","description":"Glob pattern to match files, relative to `path`"},"path":{"type":"string","description":"Directory to search in (default: the working directory)"}},"required":["pattern"]}),
    )
}

pub(super) fn run(workspace: &Workspace, arguments: &Value) -> ToolOutput {
    match find(workspace, arguments) {
        Ok(output) | Err(output) => output,
    }
}

fn find(workspace: &Workspace, arguments: &Value) -> Result<ToolOutput, ToolOutput> {
    let pattern = required_str(arguments, "pattern")?;
    let dir = search_path(workspace, arguments)?;
    if !dir.is_dir() {
        return Err(ToolOutput::error(format!(
            "`{}` is not a directory; give the directory to search in as `path`",
            workspace.relative(&dir)
        )));
    }
    let matcher = glob_matcher(pattern)?;
    let mut found: Vec<(SystemTime, PathBuf)> = Vec::new();
    let walked = walk(workspace, &dir, None, |path| {
        let relative = path.strip_prefix(&dir).unwrap_or(path);
        if matcher.is_match(relative) {
            let modified = path
                .symlink_metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            found.push((modified, path.to_path_buf()));
        }
        true
    });
    // Newest first; equal times by path, so the order is stable.
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    let mut out = String::new();
    for (_, path) in found.iter().take(MAX_PATHS) {
        out.push_str(&workspace.relative(path));
        out.push('\n');
    }
    if total == 0 {
        out.push_str(&format!(
            "No files match `{pattern}` in {}.\n",
            shown_dir(workspace, &dir)
        ));
    }
    if total > MAX_PATHS {
        out.push_str(&format!(
            "[{total} files matched; the {MAX_PATHS} newest are shown. Narrow the pattern or path.]\n"
        ));
    }
    out.push_str(&walked.note());
    Ok(ToolOutput::ok(out))
}

/// The `path` argument resolved in the workspace, the work dir when absent.
pub(super) fn search_path(workspace: &Workspace, arguments: &Value) -> Result<PathBuf, ToolOutput> {
    match arguments.get("path") {
        None | Some(Value::Null) => Ok(workspace.root().to_path_buf()),
        Some(Value::String(path)) if path.trim().is_empty() => Ok(workspace.root().to_path_buf()),
        Some(Value::String(path)) => {
            let resolved = workspace.resolve(path)?;
            if resolved.exists() {
                Ok(resolved)
            } else {
                Err(ToolOutput::error(format!("`{path}` does not exist")))
            }
        }
        Some(_) => Err(ToolOutput::error("`path` must be a string")),
    }
}

/// `dir` as shown to the model: `.` for the work dir itself.
pub(super) fn shown_dir(workspace: &Workspace, dir: &Path) -> String {
    let shown = workspace.relative(dir);
    if shown.is_empty() {
        ".".to_string()
    } else {
        shown
    }
}

/// A glob pattern the model gave, compiled: `*` and `?` stay within one
/// path component, `{a,b}` alternates.
///
/// # Errors
/// An absolute pattern, one with a `..` component, or one that does not
/// parse.
pub(super) fn glob_matcher(pattern: &str) -> Result<globset::GlobMatcher, ToolOutput> {
    if pattern.trim().is_empty() {
        return Err(ToolOutput::error("the pattern is empty"));
    }
    if pattern.starts_with('/') {
        return Err(ToolOutput::error(format!(
            "`{pattern}` is absolute; give a pattern relative to `path` (e.g. **/*.rs) and the directory as `path`"
        )));
    }
    if pattern.split('/').any(|part| part == "..") {
        return Err(ToolOutput::error(format!(
            "`{pattern}` contains `..`; patterns match below `path` only"
        )));
    }
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|e| ToolOutput::error(format!("invalid glob pattern `{pattern}`: {e}")))
}

/// How a walk ended.
#[derive(Debug, Default)]
pub(super) struct Walked {
    /// It stopped at [`MAX_WALK_ENTRIES`].
    pub entry_cap: bool,
    /// The session was cancelled during it.
    pub cancelled: bool,
}

impl Walked {
    /// A line for the model when the walk did not cover everything.
    pub fn note(&self) -> String {
        if self.cancelled {
            "[The search was cancelled before it finished.]\n".to_string()
        } else if self.entry_cap {
            format!(
                "[The search stopped after {MAX_WALK_ENTRIES} directory entries; results are incomplete. Search a narrower path.]\n"
            )
        } else {
            String::new()
        }
    }
}

/// Walks the regular files under `start` (or `start` itself when it is a
/// file) in name order, as ripgrep does by default: `.gitignore`,
/// `.ignore` and `.git/info/exclude` honoured (a repository is not
/// required), hidden files and directories skipped (`.git` among them),
/// symlinks not followed, at most [`MAX_WALK_DEPTH`] deep and
/// [`MAX_WALK_ENTRIES`] entries. `overrides` narrows the files to those
/// matching a glob (`grep`'s `glob_filter`). `visit` gets each file's path
/// (under the canonical `start`, so inside the workspace) and returns
/// whether to go on.
pub(super) fn walk(
    workspace: &Workspace,
    start: &Path,
    overrides: Option<ignore::overrides::Override>,
    mut visit: impl FnMut(&Path) -> bool,
) -> Walked {
    let mut builder = WalkBuilder::new(start);
    builder
        .hidden(true)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        // The user's global excludes are not the project's: results must
        // not depend on who runs the workflow.
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .max_depth(Some(MAX_WALK_DEPTH))
        .sort_by_file_name(std::ffi::OsStr::cmp);
    if let Some(overrides) = overrides {
        builder.overrides(overrides);
    }
    let mut walked = Walked::default();
    for (seen, entry) in builder.build().enumerate() {
        if seen >= MAX_WALK_ENTRIES {
            walked.entry_cap = true;
            break;
        }
        if seen % 1024 == 0 && workspace.cancel.reason().is_some() {
            walked.cancelled = true;
            break;
        }
        // An unreadable directory or a broken ignore file: skip it, as rg does.
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if !visit(entry.path()) {
            break;
        }
    }
    walked
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::fs;

    use crate::agent::tools::workspace::scratch as workspace;

    fn set_mtime(path: &Path, secs: u64) {
        let file = fs::File::options().write(true).open(path).expect("open");
        file.set_modified(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs))
            .expect("mtime");
    }

    fn lines(output: &ToolOutput) -> Vec<&str> {
        output.content.lines().collect()
    }

    #[test]
    fn matches_are_relative_to_the_work_dir_newest_first() {
        let (dir, ws) = workspace();
        fs::create_dir_all(dir.path().join("src/deep")).expect("dirs");
        for (name, secs) in [
            ("src/a.rs", 100),
            ("src/deep/b.rs", 300),
            ("src/c.txt", 400),
            ("top.rs", 200),
        ] {
            fs::write(dir.path().join(name), "x").expect("write");
            set_mtime(&dir.path().join(name), secs);
        }
        let out = run(&ws, &json!({"pattern": "**/*.rs"}));
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(lines(&out), ["src/deep/b.rs", "top.rs", "src/a.rs"]);

        // Relative to `path`, yet shown relative to the work dir; `*` stays
        // in one directory.
        let out = run(&ws, &json!({"pattern": "*.rs", "path": "src"}));
        assert_eq!(lines(&out), ["src/a.rs"], "{}", out.content);
    }

    #[test]
    fn ignored_hidden_and_git_files_are_not_listed() {
        let (dir, ws) = workspace();
        fs::create_dir_all(dir.path().join(".git")).expect("git");
        fs::create_dir_all(dir.path().join("target")).expect("target");
        fs::write(dir.path().join(".gitignore"), "target/\n").expect("write");
        fs::write(dir.path().join(".ignore"), "*.log\n").expect("write");
        fs::write(dir.path().join(".git/config"), "x").expect("write");
        fs::write(dir.path().join("target/out.rs"), "x").expect("write");
        fs::write(dir.path().join(".hidden.rs"), "x").expect("write");
        fs::write(dir.path().join("run.log"), "x").expect("write");
        fs::write(dir.path().join("main.rs"), "x").expect("write");
        let out = run(&ws, &json!({"pattern": "**/*"}));
        assert_eq!(lines(&out), ["main.rs"], "{}", out.content);
    }

    #[test]
    fn listing_files_does_not_count_as_reading_them() {
        let (dir, ws) = workspace();
        fs::write(dir.path().join("a.rs"), "x").expect("write");
        let out = run(&ws, &json!({"pattern": "*.rs"}));
        assert_eq!(lines(&out), ["a.rs"]);
        assert!(!ws.was_read(&ws.resolve("a.rs").expect("resolve")));
    }

    #[test]
    fn results_are_capped_with_a_note() {
        let (dir, ws) = workspace();
        for i in 0..(MAX_PATHS + 5) {
            fs::write(dir.path().join(format!("f{i:04}.txt")), "").expect("write");
        }
        let out = run(&ws, &json!({"pattern": "*.txt"}));
        assert_eq!(
            out.content.lines().filter(|l| l.ends_with(".txt")).count(),
            MAX_PATHS
        );
        assert!(
            out.content
                .contains(&format!("{} files matched", MAX_PATHS + 5)),
            "{}",
            out.content
        );
    }

    #[test]
    fn paths_and_links_out_of_the_work_dir_are_refused() {
        let (dir, ws) = workspace();
        let outside = tempfile::tempdir().expect("temp");
        fs::write(outside.path().join("secret.rs"), "x").expect("write");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).expect("link");
        std::os::unix::fs::symlink(outside.path().join("secret.rs"), dir.path().join("file.rs"))
            .expect("link");
        for path in ["..", "/", "link", outside.path().to_str().expect("utf-8")] {
            let out = run(&ws, &json!({"pattern": "**/*", "path": path}));
            assert!(
                out.is_error && out.content.contains("outside"),
                "{path}: {}",
                out.content
            );
        }
        // A link inside the tree is not followed out of it.
        let out = run(&ws, &json!({"pattern": "**/*.rs"}));
        assert!(!out.content.contains("secret"), "{}", out.content);
        for pattern in ["../*", "/etc/*", "a/../../*"] {
            let out = run(&ws, &json!({"pattern": pattern}));
            assert!(out.is_error, "{pattern}: {}", out.content);
        }
    }

    #[test]
    fn bad_arguments_are_errors_the_model_can_read() {
        let (dir, ws) = workspace();
        fs::write(dir.path().join("a.rs"), "x").expect("write");
        let cases = [
            (json!({}), "pattern"),
            (json!({"pattern": 7}), "pattern"),
            (json!({"pattern": "a[", "path": "."}), "invalid glob"),
            (json!({"pattern": "*", "path": 3}), "must be a string"),
            (json!({"pattern": "*", "path": "a.rs"}), "not a directory"),
            (json!({"pattern": "*", "path": "missing"}), "does not exist"),
        ];
        for (arguments, expected) in cases {
            let out = run(&ws, &arguments);
            assert!(
                out.is_error && out.content.contains(expected),
                "{arguments}: {}",
                out.content
            );
        }
    }

    #[test]
    fn nothing_found_says_so() {
        let (_dir, ws) = workspace();
        let out = run(&ws, &json!({"pattern": "*.zig"}));
        assert!(
            !out.is_error && out.content.contains("No files match"),
            "{}",
            out.content
        );
    }
}
