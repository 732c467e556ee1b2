//! `web_search` (agents/tools.mdx). Not built yet: see the agent issue.

use serde_json::Value;

use super::{ToolOutput, Workspace};

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Search the web (Brave Search). Returns numbered results with title, URL and description.",
        serde_json::json!({"type":"object","properties":{"query":{"type":"string","description":"Search query"},"max_results":{"type":"integer","description":"Most results (default 5, at most 20)"}},"required":["query"]}),
    )
}

pub(super) async fn run(_workspace: &Workspace, _arguments: &Value) -> ToolOutput {
    ToolOutput::error("web_search is not available in this build")
}
