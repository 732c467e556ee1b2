//! Asking a person, the way human gates do: the question is recorded, the
//! run shows as blocked while it waits, `interview.started` announces it
//! (the app's inbox, OS notifications, `weft questions`), and the run's
//! interviewer waits for the answer within the question's timeout and the
//! run's cancellation. Human gates ask their question so; so does an
//! external agent's permission request under `acp.permissions="ask"`.
//! Settling the question (its record and the closing event) is the
//! caller's: what an answer means differs.

use std::time::Duration;

use super::StageCx;
use crate::engine::interviewer::{Answer, AutoApprove, Interviewer, Question};
use crate::model::{EventKind, RunStatus};
use crate::store::QuestionRecord;

/// How asking ended.
pub(super) enum Asked {
    Answer(Answer),
    /// Nobody answered within the timeout (shown as given).
    TimedOut(String),
    Cancelled(String),
}

/// Asks `question`, recording `new` first when it is not recorded yet (a
/// question pending from before a restart is), bounded by `timeout`.
pub(super) async fn ask_recorded(
    cx: &StageCx<'_>,
    question: &Question,
    new: Option<&QuestionRecord>,
    timeout: Option<Duration>,
) -> Asked {
    // The run is blocked while any of its gates waits (parallel branches
    // can open several at once).
    let first = cx.recorder.gate_opened();
    {
        let mut store = cx.recorder.store();
        if let Some(record) = new {
            let _ = store.insert_question(record);
        }
        if first {
            let _ = store.set_status(&cx.run.run_id, RunStatus::Blocked, None);
        }
    }
    // The run pauses here: its stages' files are all on disk for whoever
    // looks while it waits.
    cx.recorder.flush_files();
    // Announced only once recorded: whoever reacts to the event (the app,
    // `weft answer`) finds the question and the blocked run.
    let _ = cx.recorder.emit(
        EventKind::InterviewStarted {
            question_id: question.id.clone(),
            question: question.text.clone(),
            options: question.choices.iter().map(|c| c.label.clone()).collect(),
            freeform: question.freeform,
            context: question.context.clone(),
            timeout_ms: question.timeout_ms,
            default_choice: question.default_choice.clone(),
            // A permission request is asked afresh each time (an agent's
            // session does not outlive its run's process), so only a new
            // question can be one.
            permission: new.and_then(|record| record.permission.clone()),
        },
        cx.at(),
    );
    let answer = ask(cx, question, timeout).await;
    if cx.recorder.gate_closed() {
        let _ = cx
            .recorder
            .store()
            .set_status(&cx.run.run_id, RunStatus::Running, None);
    }
    answer
}

/// Asks through the run's interviewer (the auto-approver under
/// `--dry-run`), bounded by `timeout` and the run's cancellation.
async fn ask(cx: &StageCx<'_>, question: &Question, timeout: Option<Duration>) -> Asked {
    let auto = AutoApprove;
    let interviewer: &dyn Interviewer = if cx.run.dry_run {
        &auto
    } else {
        cx.run.interviewer.as_ref()
    };
    let asking = async {
        match timeout {
            Some(t) => match tokio::time::timeout(t, interviewer.ask(question)).await {
                Ok(answer) => Asked::Answer(answer),
                Err(_) => Asked::TimedOut(crate::util::duration::setting(t)),
            },
            None => Asked::Answer(interviewer.ask(question).await),
        }
    };
    tokio::select! {
        asked = asking => asked,
        reason = cx.run.cancel.cancelled() => Asked::Cancelled(reason.to_string()),
    }
}
