//! Conditional (`diamond`): a routing point. It does nothing and always
//! succeeds; its edges' conditions read the previous stage's outcome (the
//! run loop arranges that; see docs/engine.md).

use super::StageCx;
use crate::model::Outcome;

pub fn run(_cx: &StageCx<'_>) -> Outcome {
    Outcome::succeeded()
}
