//! `glob` (agents/tools.mdx). Not built yet: see the agent issue.

use serde_json::Value;

use super::{ToolOutput, Workspace};

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Find files by name pattern (e.g. **/*.rs), honouring .gitignore. Returns paths relative to the working directory, newest first.",
        serde_json::json!({"type":"object","properties":{"pattern":{"type":"string","description":"Glob pattern to match files"},"path":{"type":"string","description":"Directory to search in (default: the working directory)"}},"required":["pattern"]}),
    )
}

pub(super) fn run(_workspace: &Workspace, _arguments: &Value) -> ToolOutput {
    ToolOutput::error("glob is not available in this build")
}
