//! Wait (`insulator`): pauses for `duration`, then succeeds. Cancelling the
//! run ends the wait at once.

use std::time::Duration;

use super::StageCx;
use crate::model::{FailureClass, Outcome};

pub async fn run(cx: &StageCx<'_>) -> Outcome {
    let Some(duration) = cx
        .node
        .attrs
        .value("duration")
        .and_then(crate::lang::value::Value::as_duration)
    else {
        return Outcome::failed(
            FailureClass::Deterministic,
            "wait node has no valid `duration` (write e.g. duration=\"30s\")",
        );
    };
    let wait: Duration = duration.to_std();
    tokio::select! {
        () = cx.run.clock.sleep(wait) => Outcome::succeeded(),
        reason = cx.run.cancel.cancelled() => {
            Outcome::failed(FailureClass::Canceled, format!("cancelled: {reason}"))
        }
    }
}
