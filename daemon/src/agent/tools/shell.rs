//! `shell` (agents/tools.mdx). Not built yet: see the agent issue.

use serde_json::Value;

use super::{ToolOutput, Workspace};

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Run a shell command with /bin/bash -c in the working directory. Returns the exit code, stdout and stderr. Default timeout 120 seconds, at most 600; the process group is killed on timeout and the output so far returned.",
        serde_json::json!({"type":"object","properties":{"command":{"type":"string","description":"The shell command to execute"},"timeout_ms":{"type":"integer","description":"Timeout in milliseconds"},"description":{"type":"string","description":"What the command does"}},"required":["command"]}),
    )
}

pub(super) async fn run(_workspace: &Workspace, _arguments: &Value) -> ToolOutput {
    ToolOutput::error("shell is not available in this build")
}
