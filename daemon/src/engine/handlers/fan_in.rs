//! Fan-in (`tripleoctagon`): merges the results of the parallel stage
//! before it. It picks the best branch — the first in branch order with the
//! best status (succeeded, then partially succeeded, then skipped, then
//! failed) — and records it as `parallel.fan_in.best_id` and
//! `parallel.fan_in.best_outcome`. It fails only when every branch failed.

use serde_json::Value;

use super::StageCx;
use crate::engine::checkpoint::BranchResult;
use crate::model::{FailureClass, Outcome, Status};

pub fn run(cx: &StageCx<'_>) -> Outcome {
    let Some(raw) = cx.context.get("parallel.results") else {
        return Outcome::failed(
            FailureClass::Deterministic,
            "no parallel results to merge: a fan-in node (tripleoctagon) must follow a parallel \
             node (component)",
        );
    };
    let value = match raw.as_str().and_then(crate::store::BlobRef::parse) {
        Some(blob) => cx.run.blobs.get_json(&blob).unwrap_or(Value::Null),
        None => raw.clone(),
    };
    let results: Vec<BranchResult> = match serde_json::from_value(value) {
        Ok(r) => r,
        Err(e) => {
            return Outcome::failed(
                FailureClass::Deterministic,
                format!("parallel.results is not a list of branch results: {e}"),
            );
        }
    };
    let rank = |s: Status| match s {
        Status::Succeeded => 3,
        Status::PartiallySucceeded => 2,
        Status::Skipped => 1,
        Status::Failed => 0,
    };
    // max_by_key keeps the last maximum; iterate in reverse so ties go to
    // the first branch.
    let Some(best) = results.iter().rev().max_by_key(|r| rank(r.status)) else {
        return Outcome::failed(
            FailureClass::Deterministic,
            "the parallel stage had no branches",
        );
    };
    let outcome = if results.iter().all(|r| r.status == Status::Failed) {
        Outcome::failed(
            FailureClass::Deterministic,
            format!("every one of the {} branches failed", results.len()),
        )
    } else {
        Outcome::succeeded()
    };
    outcome
        .update("parallel.fan_in.best_id", best.id.clone())
        .update("parallel.fan_in.best_outcome", best.status.as_str())
}
