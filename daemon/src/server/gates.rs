//! Human gates of the daemon's runs: questions wait here until a client
//! answers them over the socket (`question.answer`).
//!
//! An answer is kept whatever order the engine, the store and the clients
//! get there in. A question that waits here takes the answer at once; one
//! that is recorded as pending but not asked here yet (its run is queued,
//! or is being resumed after a restart and has not reached the gate again)
//! keeps the answer as an early answer, which the run takes the moment it
//! asks. Either way the answer is recorded in the store when it is taken, so
//! every later `question.answer` finds it.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::engine::interviewer::{
    Answer, Choice, Interviewer, Question, match_answer, parse_accelerator,
};
use crate::ipc::protocol::AnswerBy;
use crate::model::Code;
use crate::store::{QuestionRecord, QuestionStatus, Store};
use crate::util::lock::lock;

/// Questions waiting for an answer, and answers waiting for their question.
#[derive(Debug, Default)]
pub struct Gates {
    /// Asked by a run here, by question id.
    waiting: Mutex<HashMap<String, (Question, oneshot::Sender<Answer>)>>,
    /// Answered before a run here asked them, by question id, with the run.
    early: Mutex<HashMap<String, (String, Answer)>>,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// No run here is waiting on this question nor will ask it (the run
    /// is not running in this daemon).
    #[error("no run is waiting on question {0}")]
    NotWaiting(String),
    /// The answer names none of the options and the gate takes no free text.
    #[error("`{answer}` is not an option of question {question}; the options are: {options}")]
    NoSuchOption {
        question: String,
        answer: String,
        options: String,
    },
}

impl AnswerError {
    /// A stable, machine-readable code.
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            AnswerError::NotWaiting(_) => Code::QuestionNotWaiting,
            AnswerError::NoSuchOption { .. } => Code::QuestionNoSuchOption,
        }
    }
}

impl Gates {
    /// Whether `question` is waiting here.
    #[must_use]
    pub(crate) fn is_waiting(&self, question: &str) -> bool {
        lock(&self.waiting).contains_key(question)
    }

    /// Delivers an answer to the run waiting on `question`.
    pub fn answer(&self, question: &str, by: &AnswerBy) -> Result<Answer, AnswerError> {
        let mut waiting = lock(&self.waiting);
        let Some((q, _)) = waiting.get(question) else {
            return Err(AnswerError::NotWaiting(question.to_string()));
        };
        let answer = resolve(q, by)?;
        if let Some((_, tx)) = waiting.remove(question) {
            let _ = tx.send(answer.clone());
        }
        Ok(answer)
    }

    /// Keeps `answer` for `question` of run `run_id`, which has not asked it
    /// yet: the run takes it when it does.
    pub(crate) fn keep_early(&self, run_id: &str, question: &str, answer: Answer) {
        lock(&self.early).insert(question.to_string(), (run_id.to_string(), answer));
    }

    /// The early answer kept for `question`, if any.
    #[must_use]
    pub(crate) fn early_answer(&self, question: &str) -> Option<Answer> {
        lock(&self.early).get(question).map(|(_, a)| a.clone())
    }

    /// Drops the early answers of run `run_id` (it has stopped; a later
    /// resume asks its questions again).
    pub(crate) fn forget_run(&self, run_id: &str) {
        lock(&self.early).retain(|_, (run, _)| run != run_id);
    }

    fn take_early(&self, question: &Question) -> Option<Answer> {
        let (_, answer) = lock(&self.early).remove(&question.id)?;
        fits(question, &answer).then_some(answer)
    }
}

/// What `by` answers to `question`, or why it answers nothing.
pub fn resolve(question: &Question, by: &AnswerBy) -> Result<Answer, AnswerError> {
    let answer = match by {
        AnswerBy::Key(key) => question
            .choices
            .iter()
            .position(|c| {
                c.key
                    .as_deref()
                    .is_some_and(|k| k.eq_ignore_ascii_case(key.trim()))
            })
            .map(Answer::Choice),
        AnswerBy::Label(label) => {
            let wanted = crate::engine::routing::normalise_label(label);
            question
                .choices
                .iter()
                .position(|c| crate::engine::routing::normalise_label(&c.label) == wanted)
                .map(Answer::Choice)
        }
        AnswerBy::Text(text) => match_answer(question, text),
    };
    answer.ok_or_else(|| {
        let given = match by {
            AnswerBy::Key(s) | AnswerBy::Label(s) | AnswerBy::Text(s) => s.clone(),
        };
        AnswerError::NoSuchOption {
            question: question.id.clone(),
            answer: given,
            options: question
                .choices
                .iter()
                .map(|c| c.label.clone())
                .collect::<Vec<_>>()
                .join(", "),
        }
    })
}

/// Whether `answer` is one `question` can take.
fn fits(question: &Question, answer: &Answer) -> bool {
    match answer {
        Answer::Choice(i) => *i < question.choices.len(),
        Answer::Freeform(_) => question.freeform,
        Answer::Interrupted(_) | Answer::Skipped => false,
    }
}

/// The question a stored record asks, as the run asks it (the options are
/// the recorded labels, in order).
#[must_use]
pub(crate) fn question_of(record: &QuestionRecord) -> Question {
    Question {
        id: record.id.clone(),
        node_id: record.node_id.clone(),
        text: record.text.clone(),
        context: None,
        choices: record
            .options
            .iter()
            .map(|label| {
                let (key, text) = parse_accelerator(label);
                Choice {
                    key,
                    label: label.clone(),
                    text,
                    target: String::new(),
                }
            })
            .collect(),
        freeform: record.freeform,
        // Not recorded with the question; matching an answer needs neither.
        timeout_ms: None,
        default_choice: None,
    }
}

/// An answer as the store records it: `{"choice": LABEL}` or
/// `{"text": TEXT}` (the human handler writes the same).
#[must_use]
pub fn recorded(question: &Question, answer: &Answer) -> Value {
    match answer {
        Answer::Choice(i) => json!({
            "choice": question.choices.get(*i).map(|c| c.label.clone()).unwrap_or_default()
        }),
        Answer::Freeform(text) => json!({ "text": text }),
        Answer::Interrupted(_) | Answer::Skipped => Value::Null,
    }
}

/// The interviewer of daemon runs: asking parks the question in [`Gates`],
/// or takes the early answer kept for it.
#[derive(Debug, Clone, Default)]
pub(crate) struct SocketInterviewer {
    pub gates: Arc<Gates>,
    /// Where a taken early answer is recorded at once (`None` in tests).
    pub store: Option<Arc<Mutex<Store>>>,
}

impl Interviewer for SocketInterviewer {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        if let Some(answer) = self.gates.take_early(question) {
            if let Some(store) = &self.store {
                let _ = lock(store).answer_question(
                    &question.id,
                    QuestionStatus::Answered,
                    Some(&recorded(question, &answer)),
                );
            }
            return Box::pin(std::future::ready(answer));
        }
        let (tx, rx) = oneshot::channel();
        lock(&self.gates.waiting).insert(question.id.clone(), (question.clone(), tx));
        // Dropped (a timeout, a cancel), even before it is first polled:
        // the question no longer waits.
        let guard = Unpark {
            gates: self.gates.clone(),
            id: question.id.clone(),
        };
        Box::pin(async move {
            let answer = rx
                .await
                .unwrap_or_else(|_| Answer::Interrupted("the daemon stopped".into()));
            drop(guard);
            answer
        })
    }
}

/// Removes a question from the waiting list when its ask ends either way.
struct Unpark {
    gates: Arc<Gates>,
    id: String,
}

impl Drop for Unpark {
    fn drop(&mut self) {
        lock(&self.gates.waiting).remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question() -> Question {
        let choice = |key: &str, text: &str, target: &str| Choice {
            key: Some(key.into()),
            label: format!("[{key}] {text}"),
            text: text.into(),
            target: target.into(),
        };
        Question {
            id: "Q1".into(),
            node_id: "approve".into(),
            text: "Ship?".into(),
            context: None,
            choices: vec![choice("Y", "Yes", "ship"), choice("N", "No", "hold")],
            freeform: false,
            timeout_ms: None,
            default_choice: None,
        }
    }

    #[tokio::test]
    async fn an_answer_by_key_label_or_text_reaches_the_waiting_run() {
        for (by, want) in [
            (AnswerBy::Key("n".into()), 1),
            (AnswerBy::Label("Yes".into()), 0),
            (AnswerBy::Label("[N] No".into()), 1),
            (AnswerBy::Text("2".into()), 1),
        ] {
            let interviewer = SocketInterviewer::default();
            let q = question();
            let asking = interviewer.ask(&q);
            let gates = interviewer.gates.clone();
            let answering = async move {
                tokio::task::yield_now().await;
                gates.answer("Q1", &by)
            };
            let (answer, sent) = tokio::join!(asking, answering);
            assert_eq!(sent, Ok(Answer::Choice(want)));
            assert_eq!(answer, Answer::Choice(want));
            assert!(!interviewer.gates.is_waiting("Q1"));
        }
    }

    #[test]
    fn an_unknown_option_or_question_is_refused_and_the_question_keeps_waiting() {
        let interviewer = SocketInterviewer::default();
        let q = question();
        let asking = interviewer.ask(&q);
        let err = interviewer
            .gates
            .answer("Q1", &AnswerBy::Key("Z".into()))
            .expect_err("no such key");
        assert_eq!(err.code(), "question.no_such_option");
        assert!(interviewer.gates.is_waiting("Q1"));
        assert_eq!(
            interviewer.gates.answer("Q9", &AnswerBy::Key("Y".into())),
            Err(AnswerError::NotWaiting("Q9".into()))
        );
        drop(asking);
        assert!(
            !interviewer.gates.is_waiting("Q1"),
            "a dropped ask stops waiting"
        );
    }

    #[tokio::test]
    async fn an_answer_kept_before_the_question_is_asked_is_taken_when_it_is() {
        let interviewer = SocketInterviewer::default();
        let q = question();
        interviewer.gates.keep_early("R", "Q1", Answer::Choice(1));
        assert_eq!(
            interviewer.gates.early_answer("Q1"),
            Some(Answer::Choice(1))
        );
        let answer = interviewer.ask(&q).await;
        assert_eq!(answer, Answer::Choice(1), "no wait: the answer was there");
        assert!(!interviewer.gates.is_waiting("Q1"));
        assert_eq!(interviewer.gates.early_answer("Q1"), None, "taken once");
    }

    #[test]
    fn early_answers_of_a_run_that_stopped_are_forgotten() {
        let gates = Gates::default();
        gates.keep_early("R1", "Q1", Answer::Choice(0));
        gates.keep_early("R2", "Q2", Answer::Choice(0));
        gates.forget_run("R1");
        assert_eq!(gates.early_answer("Q1"), None);
        assert_eq!(gates.early_answer("Q2"), Some(Answer::Choice(0)));
    }

    #[test]
    fn a_stored_question_resolves_answers_as_the_run_asks_it() {
        let record = QuestionRecord {
            id: "Q1".into(),
            run_id: "R".into(),
            node_id: "approve".into(),
            visit: 1,
            text: "Ship?".into(),
            options: vec!["[Y] Yes".into(), "[N] No".into()],
            freeform: false,
            status: QuestionStatus::Pending,
            answer: None,
            asked_at: String::new(),
            answered_at: None,
            permission: None,
        };
        let stored = question_of(&record);
        for by in [
            AnswerBy::Key("n".into()),
            AnswerBy::Label("No".into()),
            AnswerBy::Text("2".into()),
        ] {
            let answer = resolve(&stored, &by).expect("an option");
            assert_eq!(answer, resolve(&question(), &by).expect("an option"));
            assert_eq!(recorded(&stored, &answer), json!({"choice": "[N] No"}));
        }
    }
}
