//! `read_file` (agents/tools.mdx): a file's lines with line numbers, from
//! `offset` (1-based), at most `limit` lines (default 2,000).

use std::fmt::Write as _;

use serde_json::Value;

use super::{ToolOutput, Workspace, optional_u64, required_str};

/// Lines returned when `limit` is not given.
const DEFAULT_LIMIT: u64 = 2_000;
/// Files larger than this are not read whole: the model is told to page.
pub(super) const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Read a text file. Returns its lines numbered like `  12 | text`. Use offset (1-based \
         line) and limit (default 2000 lines) for large files. Read a file before editing it.",
        serde_json::json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path to the file (absolute, or relative to the working directory)"},
                "offset": {"type": "integer", "description": "1-based line number to start from"},
                "limit": {"type": "integer", "description": "Number of lines to read (default 2000)"}
            },
            "required": ["file_path"]
        }),
    )
}

pub(super) fn run(workspace: &Workspace, arguments: &Value) -> ToolOutput {
    match read(workspace, arguments) {
        Ok(output) | Err(output) => output,
    }
}

fn read(workspace: &Workspace, arguments: &Value) -> Result<ToolOutput, ToolOutput> {
    let path = workspace.resolve(required_str(arguments, "file_path")?)?;
    let offset = optional_u64(arguments, "offset")?.unwrap_or(1).max(1);
    let limit = optional_u64(arguments, "limit")?.unwrap_or(DEFAULT_LIMIT).max(1);
    let text = read_text(workspace, &path)?;
    workspace.mark_read(&path);
    let total = text.lines().count();
    let mut out = String::new();
    let first = usize::try_from(offset - 1).unwrap_or(usize::MAX);
    let count = usize::try_from(limit).unwrap_or(usize::MAX);
    let width = total.max(1).to_string().len().max(3);
    for (i, line) in text.lines().enumerate().skip(first).take(count) {
        let _ = writeln!(out, "{:>width$} | {line}", i + 1);
    }
    let shown_to = first.saturating_add(count).min(total);
    if text.is_empty() {
        out.push_str("(the file is empty)\n");
    } else if first >= total {
        let _ = writeln!(out, "(offset {offset} is past the end: the file has {total} lines)");
    } else if shown_to < total {
        let _ = writeln!(
            out,
            "(lines {offset}-{shown_to} of {total}; use offset={} to read on)",
            shown_to + 1
        );
    }
    Ok(ToolOutput::ok(out))
}

/// The text of a regular file in the workspace, or an error for the model
/// (missing, a directory, too large, binary). Invalid UTF-8 is replaced.
pub(super) fn read_text(workspace: &Workspace, path: &std::path::Path) -> Result<String, ToolOutput> {
    let shown = workspace.relative(path);
    let bytes = crate::limits::read_capped(path, MAX_FILE_BYTES).map_err(|e| {
        ToolOutput::error(format!("cannot read {shown}: {}", e.into_io()))
    })?;
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return Err(ToolOutput::error(format!(
            "{shown} is a binary file ({} bytes); it cannot be shown as text",
            bytes.len()
        )));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
