//! `web_fetch` (agents/tools.mdx). Not built yet: see the agent issue.

use serde_json::Value;

use super::{ToolOutput, Workspace};

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Fetch an http:// or https:// URL. HTML is converted to Markdown; output is capped at 100 KB.",
        serde_json::json!({"type":"object","properties":{"url":{"type":"string","description":"URL to fetch (http:// or https://)"},"prompt":{"type":"string","description":"A question about the page (not used: the page is returned)"},"timeout_ms":{"type":"integer","description":"Timeout in milliseconds (default 30000, at most 60000)"}},"required":["url"]}),
    )
}

pub(super) async fn run(_workspace: &Workspace, _arguments: &Value) -> ToolOutput {
    ToolOutput::error("web_fetch is not available in this build")
}
