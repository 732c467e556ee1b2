//! Agent (`box`) nodes, and every LLM node under `--dry-run`, where they
//! are simulated: succeeded, with a placeholder response. Agents need tools
//! (an agentic loop), which this version of Weft does not have yet, so a
//! real agent stage fails with a clear error; prompt nodes (`tab`) make
//! real calls (see `prompt.rs`).

use serde_json::json;

use super::StageCx;
use crate::model::{FailureClass, Outcome};

/// `last_response` keeps this many characters of the response.
const LAST_RESPONSE_CHARS: usize = 200;

pub fn run(cx: &StageCx<'_>) -> Outcome {
    let kind = cx.node.handler.name();
    if !cx.run.dry_run {
        return Outcome::failed(
            FailureClass::Deterministic,
            format!(
                "{kind} node `{}` needs an agent with tools, which this version of Weft does \
                 not have yet; use a prompt node (shape=tab) for a single model call, or run \
                 with --dry-run to simulate it",
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
