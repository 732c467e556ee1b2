//! `grep` (agents/tools.mdx). Not built yet: see the agent issue.

use serde_json::Value;

use super::{ToolOutput, Workspace};

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Search file contents with a regular expression (ripgrep syntax), honouring .gitignore. Returns file:line:content lines.",
        serde_json::json!({"type":"object","properties":{"pattern":{"type":"string","description":"Regex pattern to search for"},"path":{"type":"string","description":"File or directory to search (default: the working directory)"},"glob_filter":{"type":"string","description":"Only search files matching this glob, e.g. *.rs"},"case_insensitive":{"type":"boolean","description":"Case-insensitive search (default false)"},"max_results":{"type":"integer","description":"Most matching lines to return (default 200)"}},"required":["pattern"]}),
    )
}

pub(super) fn run(_workspace: &Workspace, _arguments: &Value) -> ToolOutput {
    ToolOutput::error("grep is not available in this build")
}
