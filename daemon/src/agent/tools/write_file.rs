//! `write_file` (agents/tools.mdx): creates or overwrites a file, making
//! its parent directories. Overwriting needs a read first.

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
    if path.is_dir() {
        return Err(ToolOutput::error(format!("{shown} is a directory")));
    }
    workspace.check_write(&path)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| ToolOutput::error(format!("cannot create {}: {e}", parent.display())))?;
    }
    std::fs::write(&path, content)
        .map_err(|e| ToolOutput::error(format!("cannot write {shown}: {e}")))?;
    // What the model wrote, it knows: later writes need no new read.
    workspace.mark_read(&path);
    Ok(ToolOutput {
        content: format!("Wrote {} bytes to {shown}", content.len()),
        is_error: false,
        touched: vec![shown],
    })
}
