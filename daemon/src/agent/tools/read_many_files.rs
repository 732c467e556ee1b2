//! `read_many_files` (agents/tools.mdx). Not built yet: see the agent issue.

use serde_json::Value;

use super::{ToolOutput, Workspace};

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Read several files in one call. Each file is returned prefixed with === path ===.",
        serde_json::json!({"type":"object","properties":{"paths":{"type":"array","items":{"type":"string"},"description":"Paths of the files to read"}},"required":["paths"]}),
    )
}

pub(super) fn run(_workspace: &Workspace, _arguments: &Value) -> ToolOutput {
    ToolOutput::error("read_many_files is not available in this build")
}
