//! `question.list` and `question.answer`.

use serde_json::Value;

use super::{Handler, Session, read};
use crate::ipc::protocol::{QuestionAnswer, QuestionList, RpcError};
use crate::model::Code;
use crate::server::Daemon;
use crate::server::gates::{self, AnswerError, Given};
use crate::store::{QuestionRecord, QuestionStatus};

impl Handler for QuestionList {
    const LARGE: bool = true;

    async fn handle(self, session: &mut Session) -> Result<Vec<QuestionRecord>, RpcError> {
        read(&session.daemon, move |store| {
            let run = match &self.run {
                Some(prefix) => Some(store.find_run(prefix)?.id),
                None => None,
            };
            store.questions(run.as_deref(), self.pending_only)
        })
        .await
    }
}

impl Handler for QuestionAnswer {
    async fn handle(self, session: &mut Session) -> Result<QuestionRecord, RpcError> {
        answer(&session.daemon, &self)
    }
}

/// `question.answer`: delivers the answer to the waiting run (or keeps it
/// for a run here that has not asked yet), or, for a question answered
/// already, returns the recorded answer when it is the same one.
///
/// Runs on the event loop without awaiting, so no run can start or end
/// between the checks below; the run's own thread may ask its question at
/// any moment, which [`Gates::give`](crate::server::Gates) settles in one
/// step.
fn answer(daemon: &Daemon, params: &QuestionAnswer) -> Result<QuestionRecord, RpcError> {
    let Some(mut record) = daemon.store().question(&params.question)? else {
        return Err(RpcError::new(
            Code::QuestionNotFound,
            format!("no question {}", params.question),
        ));
    };
    let question = gates::question_of(&record);
    // What this answer means, whether or not it can still be given.
    let given = gates::resolve(&question, &params.answer).map_err(|e| from_answer_error(&e))?;
    let given_json = gates::recorded(&question, &given);
    if record.status != QuestionStatus::Pending {
        // Idempotent: the same answer again.
        if record.status == QuestionStatus::Answered && record.answer.as_ref() == Some(&given_json)
        {
            return Ok(record);
        }
        return Err(closed(&record));
    }
    // One step against the run, which asks on its own thread.
    match daemon.gates.give(
        &record.run_id,
        &record.id,
        given,
        daemon.is_active(&record.run_id),
    ) {
        Given::KeptBefore(early) => {
            record.status = QuestionStatus::Answered;
            record.answer = Some(gates::recorded(&question, &early));
            if record.answer.as_ref() == Some(&given_json) {
                return Ok(record);
            }
            return Err(closed(&record));
        }
        Given::Delivered => {
            // Recorded now, not when the run gets to it: every later answer
            // (a second client, a retry) finds it.
            daemon.store().answer_question(
                &record.id,
                QuestionStatus::Answered,
                Some(&given_json),
            )?;
            record.status = QuestionStatus::Answered;
            record.answer = Some(given_json);
            record.answered_at = Some(crate::store::timestamp());
            return Ok(record);
        }
        Given::Kept => {
            // Pending, and its run is queued or running here but has not
            // asked (again) yet: it takes this answer when it does.
            record.status = QuestionStatus::Answered;
            record.answer = Some(given_json);
            return Ok(record);
        }
        Given::NotHere => {}
    }
    let status = daemon
        .store()
        .run(&record.run_id)?
        .map_or("gone", |run| run.status.as_str());
    Err(RpcError::new(
        Code::QuestionNotWaiting,
        format!(
            "no run is waiting on question {}: run {} is {status}, not running in the daemon; \
             resume it (`weft resume {}`) and answer again",
            record.id, record.run_id, record.run_id
        ),
    ))
}

/// `question.closed`: the question was answered otherwise, timed out or
/// was interrupted; the message says what was recorded.
fn closed(record: &QuestionRecord) -> RpcError {
    let answer = record
        .answer
        .as_ref()
        .and_then(|a| {
            a.get("choice")
                .or_else(|| a.get("text"))
                .or_else(|| a.get("default_choice"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| {
            record
                .answer
                .as_ref()
                .map_or_else(String::new, Value::to_string)
        });
    let message = match record.status {
        QuestionStatus::Answered => format!(
            "question {} was already answered `{answer}`; the answer stands",
            record.id
        ),
        QuestionStatus::TimedOut if answer.is_empty() => {
            format!("question {} timed out unanswered", record.id)
        }
        QuestionStatus::TimedOut => format!(
            "question {} timed out and took its default `{answer}`",
            record.id
        ),
        QuestionStatus::Interrupted | QuestionStatus::Pending => format!(
            "question {} was closed unanswered (its run stopped at the gate)",
            record.id
        ),
    };
    RpcError::new(Code::QuestionClosed, message).with_detail(
        "question",
        serde_json::to_value(record).unwrap_or(Value::Null),
    )
}

fn from_answer_error(e: &AnswerError) -> RpcError {
    RpcError::new(e.code(), e.to_string())
}
