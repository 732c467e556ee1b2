//! `write_file` (agents/tools.mdx): creates or overwrites a file, making
//! its parent directories. Overwriting needs a read first. This file also
//! holds [`write_regular`], the one way the file tools write.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde_json::Value;

use super::{ToolOutput, Workspace, required_str};

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Create a file or overwrite one with the given content. An existing file must be read \
         first (read_file). Prefer edit_file or apply_patch for changes to existing files.",
        serde_json::json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path to the file (absolute, or relative to the working directory)"},
                "content": {"type": "string", "description": "The content to write"}
            },
            "required": ["file_path", "content"]
        }),
    )
}

pub(super) fn run(workspace: &Workspace, arguments: &Value) -> ToolOutput {
    match write(workspace, arguments) {
        Ok(output) | Err(output) => output,
    }
}

fn write(workspace: &Workspace, arguments: &Value) -> Result<ToolOutput, ToolOutput> {
    let path = workspace.resolve(required_str(arguments, "file_path")?)?;
    let content = required_str(arguments, "content")?;
    let shown = workspace.relative(&path);
    let existed = match std::fs::symlink_metadata(&path) {
        Ok(meta) if !meta.is_file() => return Err(not_regular(&shown, &meta.file_type())),
        Ok(_) => true,
        Err(_) => false,
    };
    workspace.check_write(&path)?;
    write_regular(workspace, &path, content.as_bytes())?;
    // What the model wrote, it knows: later writes need no new read.
    workspace.mark_read(&path);
    let verb = if existed { "Overwrote" } else { "Created" };
    Ok(ToolOutput {
        content: format!("{verb} {shown} ({} bytes)", content.len()),
        is_error: false,
        touched: vec![shown],
    })
}

/// Writes `bytes` to the regular file at `path` (resolved by the
/// workspace), creating it and its parent directories. Anything there that
/// is not a regular file (a directory, a FIFO, a device) is refused without
/// blocking, and a symlink swapped in since the path was resolved is not
/// followed.
///
/// # Errors
/// A message for the model naming the path.
pub(super) fn write_regular(
    workspace: &Workspace,
    path: &Path,
    bytes: &[u8],
) -> Result<(), ToolOutput> {
    let shown = workspace.relative(path);
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && !meta.is_file()
    {
        return Err(not_regular(&shown, &meta.file_type()));
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| {
            ToolOutput::error(format!(
                "cannot create the directory {}: {e}",
                workspace.relative(parent)
            ))
        })?;
    }
    // O_NONBLOCK: opening a FIFO would wait for a reader. O_NOFOLLOW: the
    // path was checked with its links resolved; a link put there since is
    // refused rather than followed out of the workspace.
    let flags =
        rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::NOFOLLOW;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(i32::try_from(flags.bits()).unwrap_or(0))
        .open(path)
        .map_err(|e| ToolOutput::error(format!("cannot write {shown}: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| ToolOutput::error(format!("cannot write {shown}: {e}")))?;
    if !meta.is_file() {
        return Err(not_regular(&shown, &meta.file_type()));
    }
    file.set_len(0)
        .and_then(|()| std::io::Write::write_all(&mut file, bytes))
        .map_err(|e| ToolOutput::error(format!("cannot write {shown}: {e}")))
}

fn not_regular(shown: &str, kind: &std::fs::FileType) -> ToolOutput {
    ToolOutput::error(format!(
        "{shown} is {}, not a regular file; the file tools write regular files only",
        crate::limits::file_kind(kind)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::agent::tools::workspace::scratch as workspace;

    fn write(ws: &Workspace, arguments: Value) -> ToolOutput {
        run(ws, &arguments)
    }

    #[test]
    fn a_new_file_is_created_with_its_parents_and_touched() {
        let (dir, ws) = workspace();
        let out = write(&ws, json!({"file_path": "a/b/c.txt", "content": "hi\n"}));
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.touched, vec!["a/b/c.txt".to_string()]);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a/b/c.txt")).expect("read"),
            "hi\n"
        );
        let again = write(&ws, json!({"file_path": "a/b/c.txt", "content": "ho\n"}));
        assert!(
            !again.is_error,
            "a file the session wrote needs no read: {}",
            again.content
        );
        assert!(
            again.content.starts_with("Overwrote a/b/c.txt"),
            "{}",
            again.content
        );
    }

    #[test]
    fn an_existing_file_is_overwritten_only_after_a_read() {
        let (dir, ws) = workspace();
        std::fs::write(dir.path().join("old.txt"), "old").expect("write");
        let out = write(&ws, json!({"file_path": "old.txt", "content": "new"}));
        assert!(
            out.is_error && out.content.contains("has not been read"),
            "{}",
            out.content
        );
        assert!(out.touched.is_empty());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("old.txt")).expect("read"),
            "old"
        );
        ws.mark_read(&ws.resolve("old.txt").expect("resolve"));
        let out = write(&ws, json!({"file_path": "old.txt", "content": "new"}));
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("old.txt")).expect("read"),
            "new"
        );
    }

    #[test]
    fn directories_fifos_and_files_in_the_way_are_refused_without_blocking() {
        let (dir, ws) = workspace();
        std::fs::create_dir(dir.path().join("sub")).expect("dir");
        let out = write(&ws, json!({"file_path": "sub", "content": "x"}));
        assert!(
            out.is_error && out.content.contains("a directory"),
            "{}",
            out.content
        );
        let fifo = dir.path().join("pipe");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .expect("mkfifo")
                .success()
        );
        let out = write(&ws, json!({"file_path": "pipe", "content": "x"}));
        assert!(
            out.is_error && out.content.contains("a FIFO"),
            "{}",
            out.content
        );
        std::fs::write(dir.path().join("file"), "f").expect("write");
        let out = write(&ws, json!({"file_path": "file/child.txt", "content": "x"}));
        assert!(
            out.is_error && out.content.contains("Not a directory"),
            "{}",
            out.content
        );
    }

    #[test]
    fn paths_outside_the_work_dir_are_refused_and_nothing_is_written_there() {
        let (dir, ws) = workspace();
        let outside = tempfile::tempdir().expect("temp");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out-dir")).expect("link");
        std::os::unix::fs::symlink(outside.path().join("new.txt"), dir.path().join("dangling"))
            .expect("link");
        for path in [
            "../escape.txt".to_string(),
            outside
                .path()
                .join("abs.txt")
                .to_string_lossy()
                .into_owned(),
            "out-dir/new.txt".to_string(),
            "dangling".to_string(),
            "missing/../../escape.txt".to_string(),
        ] {
            let out = write(&ws, json!({"file_path": path, "content": "x"}));
            assert!(out.is_error, "{path}: {}", out.content);
        }
        let left: Vec<_> = std::fs::read_dir(outside.path()).expect("list").collect();
        assert!(left.is_empty(), "nothing was written outside: {left:?}");
    }

    #[test]
    fn wrong_argument_types_are_errors() {
        let (_dir, ws) = workspace();
        let out = write(&ws, json!({"file_path": "a.txt", "content": 12}));
        assert!(
            out.is_error
                && out
                    .content
                    .contains("`content` must be a string, not a number"),
            "{}",
            out.content
        );
        let out = write(&ws, json!({"file_path": ["a.txt"], "content": ""}));
        assert!(
            out.is_error && out.content.contains("not an array"),
            "{}",
            out.content
        );
        let out = write(&ws, json!({"file_path": "a.txt"}));
        assert!(
            out.is_error
                && out
                    .content
                    .contains("missing required string argument `content`")
        );
        assert!(!ws.root().join("a.txt").exists());
    }
}
