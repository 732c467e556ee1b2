//! `apply_patch` (agents/tools.mdx). Not built yet: see the agent issue.

use serde_json::Value;

use super::{ToolOutput, Workspace};

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Apply a patch in the v4a format: *** Begin Patch / *** End Patch around *** Add File:, *** Update File: (with context hunks, optionally *** Move to:) and *** Delete File: sections.",
        serde_json::json!({"type":"object","properties":{"patch":{"type":"string","description":"The patch, in v4a format"}},"required":["patch"]}),
    )
}

pub(super) fn run(_workspace: &Workspace, _arguments: &Value) -> ToolOutput {
    ToolOutput::error("apply_patch is not available in this build")
}

/// `Add a.rs, Update b.rs`: the files a patch names.
pub(super) fn summarize(patch: &str) -> String {
    patch
        .lines()
        .filter_map(|line| {
            ["*** Add File: ", "*** Update File: ", "*** Delete File: "]
                .iter()
                .find_map(|p| line.strip_prefix(p).map(|rest| (p, rest)))
        })
        .map(|(p, rest)| format!("{} {}", p[4..].split(' ').next().unwrap_or(""), rest.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}
