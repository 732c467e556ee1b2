//! `list_dir` (agents/tools.mdx). Not built yet: see the agent issue.

use serde_json::Value;

use super::{ToolOutput, Workspace};

pub(super) fn spec() -> (&'static str, Value) {
    (
        "List a directory. Directories end with /.",
        serde_json::json!({"type":"object","properties":{"path":{"type":"string","description":"Directory to list"},"depth":{"type":"integer","description":"How many levels to list (default 1)"}},"required":["path"]}),
    )
}

pub(super) fn run(_workspace: &Workspace, _arguments: &Value) -> ToolOutput {
    ToolOutput::error("list_dir is not available in this build")
}
