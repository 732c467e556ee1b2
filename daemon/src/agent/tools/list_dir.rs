//! `list_dir` (agents/tools.mdx, Gemini profile): a directory's entries,
//! sorted, directories suffixed `/`, down to `depth` levels.
//!
//! Symbolic links are listed as `name -> target` and never entered, so a
//! listing cannot leave the workspace or loop; `.git` is listed but not
//! entered. Depth and entry count are capped, with a note saying so.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::{ToolOutput, Workspace, json_kind, optional_u64};

/// Levels listed when `depth` is not given: the directory's own entries.
const DEFAULT_DEPTH: u64 = 1;
/// The deepest listing one call gives.
const MAX_DEPTH: u64 = 5;
/// Entries one call lists.
const MAX_ENTRIES: usize = 2_000;
/// Entries read from one directory (they must all be read to be sorted).
const MAX_DIR_ENTRIES: usize = 10_000;
/// Directories listed but never entered: their contents are noise to the
/// model and can be huge.
const NOT_ENTERED: [&str; 1] = [".git"];

pub(super) fn spec() -> (&'static str, Value) {
    (
        "List a directory. Directories end with /.",
        serde_json::json!({"type":"object","properties":{"path":{"type":"string","description":"Directory to list"},"depth":{"type":"integer","description":"How many levels to list (default 1)"}},"required":["path"]}),
    )
}

pub(super) fn run(workspace: &Workspace, arguments: &Value) -> ToolOutput {
    match list(workspace, arguments) {
        Ok(output) | Err(output) => output,
    }
}

/// What a walk found so far.
#[derive(Default)]
struct Listing {
    out: String,
    entries: usize,
    /// The walk stopped at [`MAX_ENTRIES`].
    full: bool,
    /// Directories with more than [`MAX_DIR_ENTRIES`] entries.
    crowded: Vec<String>,
}

fn list(workspace: &Workspace, arguments: &Value) -> Result<ToolOutput, ToolOutput> {
    // The reference makes `path` required; the work dir is the only sensible
    // default when a model leaves it out.
    let given = match arguments.get("path") {
        None | Some(Value::Null) => ".",
        Some(Value::String(path)) => path.as_str(),
        Some(other) => {
            return Err(ToolOutput::error(format!(
                "`path` must be a string, not {}",
                json_kind(other)
            )));
        }
    };
    let asked = optional_u64(arguments, "depth")?
        .unwrap_or(DEFAULT_DEPTH)
        .max(1);
    let depth = asked.min(MAX_DEPTH);
    let dir = workspace.resolve(given)?;
    let shown = workspace.relative(&dir);
    match std::fs::metadata(&dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(meta) => {
            return Err(ToolOutput::error(format!(
                "{shown} is {}, not a directory (use read_file to read a file)",
                crate::limits::file_kind(&meta.file_type())
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ToolOutput::error(format!("{shown} does not exist")));
        }
        Err(e) => return Err(ToolOutput::error(format!("cannot list {shown}: {e}"))),
    }
    let mut listing = Listing::default();
    walk(&dir, "", 1, depth, &mut listing);
    let mut out = listing.out;
    if listing.entries == 0 && out.is_empty() {
        out.push_str("(the directory is empty)\n");
    }
    if listing.full {
        let _ = writeln!(
            out,
            "[listing stopped at {MAX_ENTRIES} entries: list a subdirectory, or a smaller depth]"
        );
    }
    for dir in &listing.crowded {
        let _ = writeln!(
            out,
            "[{dir} has more than {MAX_DIR_ENTRIES} entries; only {MAX_DIR_ENTRIES} were read: use glob to find files in it]"
        );
    }
    if asked > MAX_DEPTH {
        let _ = writeln!(out, "[depth {asked} was capped at {MAX_DEPTH}]");
    }
    Ok(ToolOutput::ok(out))
}

/// Lists `dir` (shown as `prefix`) into `listing`, entering directories
/// while `level < depth`.
fn walk(dir: &Path, prefix: &str, level: u64, depth: u64, listing: &mut Listing) {
    let reader = match std::fs::read_dir(dir) {
        Ok(reader) => reader,
        Err(e) => {
            let _ = writeln!(listing.out, "{prefix} [cannot list: {e}]");
            return;
        }
    };
    let mut entries: Vec<(String, std::fs::FileType)> = Vec::new();
    for entry in reader.flatten() {
        if entries.len() == MAX_DIR_ENTRIES {
            listing.crowded.push(if prefix.is_empty() {
                ".".into()
            } else {
                prefix.to_string()
            });
            break;
        }
        // DirEntry::file_type does not follow symlinks.
        if let Ok(kind) = entry.file_type() {
            entries.push((entry.file_name().to_string_lossy().into_owned(), kind));
        }
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, kind) in entries {
        if listing.entries == MAX_ENTRIES {
            listing.full = true;
            return;
        }
        listing.entries += 1;
        let path = dir.join(&name);
        if kind.is_symlink() {
            let target = std::fs::read_link(&path)
                .map(|t| crate::util::text::truncate(&t.to_string_lossy(), 200))
                .unwrap_or_default();
            let _ = writeln!(listing.out, "{prefix}{name} -> {target}");
        } else if kind.is_dir() {
            let _ = writeln!(listing.out, "{prefix}{name}/");
            if level < depth && !NOT_ENTERED.contains(&name.as_str()) {
                walk(
                    &path,
                    &format!("{prefix}{name}/"),
                    level + 1,
                    depth,
                    listing,
                );
                if listing.full {
                    return;
                }
            }
        } else {
            let _ = writeln!(listing.out, "{prefix}{name}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::agent::tools::workspace::scratch as workspace;

    fn tree(dir: &tempfile::TempDir, paths: &[&str]) {
        for path in paths {
            let full = dir.path().join(path);
            if path.ends_with('/') {
                std::fs::create_dir_all(&full).expect("dir");
            } else {
                std::fs::create_dir_all(full.parent().expect("parent")).expect("dir");
                std::fs::write(&full, "x").expect("write");
            }
        }
    }

    #[test]
    fn entries_are_sorted_with_directories_suffixed_and_depth_one_by_default() {
        let (dir, ws) = workspace();
        tree(&dir, &["b.txt", "a/", "a/inner.rs", "c/d/e.rs", ".hidden"]);
        let out = run(&ws, &json!({"path": "."}));
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.content, ".hidden\na/\nb.txt\nc/\n");
        let out = run(&ws, &json!({"path": ".", "depth": 3}));
        assert_eq!(
            out.content,
            ".hidden\na/\na/inner.rs\nb.txt\nc/\nc/d/\nc/d/e.rs\n"
        );
        let out = run(&ws, &json!({"path": "c"}));
        assert_eq!(out.content, "d/\n");
        let out = run(&ws, &json!({}));
        assert!(
            out.content.starts_with(".hidden\n"),
            "no path lists the work dir: {}",
            out.content
        );
    }

    #[test]
    fn symlinks_are_shown_and_never_entered_and_git_is_not_entered() {
        let (dir, ws) = workspace();
        let outside = tempfile::tempdir().expect("temp");
        std::fs::write(outside.path().join("secret"), "s").expect("write");
        tree(&dir, &[".git/HEAD", ".git/objects/", "src/lib.rs"]);
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).expect("link");
        std::os::unix::fs::symlink(".", dir.path().join("self")).expect("link");
        let out = run(&ws, &json!({"path": ".", "depth": 5}));
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content.contains(".git/\n") && !out.content.contains("HEAD"),
            "{}",
            out.content
        );
        assert!(out.content.contains("src/lib.rs\n"));
        assert!(
            out.content.contains("self -> .\n") && !out.content.contains("self/"),
            "{}",
            out.content
        );
        assert!(!out.content.contains("secret"), "{}", out.content);
        let out = run(&ws, &json!({"path": "out"}));
        assert!(
            out.is_error && out.content.contains("outside the work directory"),
            "{}",
            out.content
        );
    }

    #[test]
    fn depth_and_entry_count_are_capped_with_a_note() {
        let (dir, ws) = workspace();
        tree(&dir, &["1/2/3/4/5/6/7/deep.txt"]);
        let out = run(&ws, &json!({"path": ".", "depth": 1000}));
        assert!(
            out.content.contains("1/2/3/4/5/\n") && !out.content.contains("6/"),
            "{}",
            out.content
        );
        assert!(
            out.content.contains("[depth 1000 was capped at 5]"),
            "{}",
            out.content
        );
        let many = dir.path().join("many");
        std::fs::create_dir(&many).expect("dir");
        for i in 0..MAX_ENTRIES + 5 {
            std::fs::write(many.join(format!("f{i:05}")), "").expect("write");
        }
        let out = run(&ws, &json!({"path": "many"}));
        assert_eq!(
            out.content.lines().filter(|l| l.starts_with('f')).count(),
            MAX_ENTRIES
        );
        assert!(
            out.content.contains("[listing stopped at 2000 entries"),
            "{}",
            &out.content[out.content.len() - 200..]
        );
    }

    #[test]
    fn hostile_and_wrong_arguments_are_errors() {
        let (dir, ws) = workspace();
        tree(&dir, &["f.txt"]);
        for path in ["..", "/", "/etc", "a/../../.."] {
            let out = run(&ws, &json!({"path": path}));
            assert!(out.is_error, "{path}: {}", out.content);
        }
        let out = run(&ws, &json!({"path": "f.txt"}));
        assert!(
            out.is_error && out.content.contains("not a directory"),
            "{}",
            out.content
        );
        let out = run(&ws, &json!({"path": "nope"}));
        assert!(
            out.is_error && out.content.contains("does not exist"),
            "{}",
            out.content
        );
        let out = run(&ws, &json!({"path": 3}));
        assert!(
            out.is_error && out.content.contains("must be a string"),
            "{}",
            out.content
        );
        let out = run(&ws, &json!({"path": ".", "depth": "deep"}));
        assert!(
            out.is_error && out.content.contains("non-negative integer"),
            "{}",
            out.content
        );
        std::fs::create_dir(dir.path().join("empty")).expect("dir");
        assert_eq!(
            run(&ws, &json!({"path": "empty"})).content,
            "(the directory is empty)\n"
        );
    }
}
