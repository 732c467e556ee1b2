//! Exit (`Msquare`): the end. Goal gates are checked by the run loop before
//! the exit stage runs; the stage itself always succeeds.

use super::StageCx;
use crate::model::Outcome;

pub fn run(_cx: &StageCx<'_>) -> Outcome {
    Outcome::succeeded()
}
