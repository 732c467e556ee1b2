//! `edit_file` (agents/tools.mdx). Not built yet: see the agent issue.

use serde_json::Value;

use super::{ToolOutput, Workspace};

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Replace an exact string in an existing file. old_string must match the file exactly and be unique unless replace_all is true. Reads the file itself, so no read_file is needed first.",
        serde_json::json!({"type":"object","properties":{"file_path":{"type":"string","description":"Path to the file (absolute, or relative to the working directory)"},"old_string":{"type":"string","description":"The exact text to find"},"new_string":{"type":"string","description":"The replacement text"},"replace_all":{"type":"boolean","description":"Replace every occurrence (default false)"}},"required":["file_path","old_string","new_string"]}),
    )
}

pub(super) fn run(_workspace: &Workspace, _arguments: &Value) -> ToolOutput {
    ToolOutput::error("edit_file is not available in this build")
}
