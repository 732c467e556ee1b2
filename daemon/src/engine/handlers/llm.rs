//! Agent (`box`) and prompt (`tab`) nodes. Until Weft has LLM providers
//! they fail with a clear error, except under `--dry-run`, where they are
//! simulated: succeeded, with a placeholder response.

use serde_json::json;

use super::StageCx;
use crate::engine::outcome::{FailureClass, Outcome};

/// `last_response` keeps this many characters of the response.
const LAST_RESPONSE_CHARS: usize = 200;

pub fn run(cx: &StageCx<'_>) -> Outcome {
    let kind = cx.node.handler.name();
    if !cx.run.dry_run {
        return Outcome::failed(
            FailureClass::Deterministic,
            format!(
                "no LLM provider configured: {kind} node `{}` needs a language model, and this \
                 version of Weft has no providers yet; run with --dry-run to simulate LLM nodes",
                cx.node.id
            ),
        );
    }
    let prompt = cx
        .node
        .attrs
        .text("prompt")
        .unwrap_or_default()
        .into_owned();
    let response = format!(
        "[dry run] Simulated response from {kind} node `{}`. No model was called.",
        cx.node.id
    );
    cx.write_file("prompt.md", prompt.as_bytes());
    cx.write_file("response.md", response.as_bytes());
    let preview: String = response.chars().take(LAST_RESPONSE_CHARS).collect();
    Outcome::succeeded()
        .update("last_response", preview)
        .update(format!("response.{}", cx.node.id), json!(response))
}
