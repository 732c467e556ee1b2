//! Agent (`box`) nodes. Agents need tools (an agentic loop), which this
//! version of Weft does not have yet, so an agent stage fails with a clear
//! error; under `--dry-run` it is simulated like any model node
//! ([`super::dry_run`]). It never calls a model: a single model call is a
//! prompt node (`tab`, `prompt.rs`).

use super::StageCx;
use crate::model::{FailureClass, Outcome};

/// Runs one attempt of an agent stage: simulated in a dry run, else failed.
pub fn run(cx: &StageCx<'_>) -> Outcome {
    if cx.run.dry_run {
        return super::dry_run::simulate(cx);
    }
    Outcome::failed(
        FailureClass::Deterministic,
        format!(
            "{} node `{}` needs an agent with tools, which this version of Weft does \
             not have yet; use a prompt node (shape=tab) for a single model call, or run \
             with --dry-run to simulate it",
            cx.node.handler.name(),
            cx.node.id
        ),
    )
}
