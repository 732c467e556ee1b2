//! Model nodes (agent and prompt) under `--dry-run`: simulated, never sent
//! to a model. The stage succeeds with a placeholder response, written to
//! `response.md` and set as `last_response` and `response.{node}` as a real
//! response would be, so the rest of the workflow runs as it would.

use serde_json::json;

use super::StageCx;
use crate::model::Outcome;

/// `last_response` keeps this many characters of the response.
const LAST_RESPONSE_CHARS: usize = 200;

/// The simulated attempt of a model node: it always succeeds, writes the
/// node's prompt to `prompt.md` and a placeholder to `response.md`.
pub(crate) fn simulate(cx: &StageCx<'_>) -> Outcome {
    let kind = cx.node.handler.name();
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
