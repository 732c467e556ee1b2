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
///
/// Both under one lock: a run asks on its own thread while answers arrive
/// on the daemon's, and "is it waiting? else keep the answer early" must be
/// one step, or an ask landing between the two waits for an answer that
/// sits unseen among the early ones.
#[derive(Debug, Default)]
pub struct Gates {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Asked by a run here, by question id.
    waiting: HashMap<String, (Question, oneshot::Sender<Answer>)>,
    /// Answered before a run here asked them, by question id, with the run.
    early: HashMap<String, (String, Answer)>,
}

/// What became of an answer given to [`Gates::give`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Given {
    /// The run was waiting on the question and has the answer.
    Delivered,
    /// The run has not asked yet: it takes the answer when it does.
    Kept,
    /// An answer was kept for the question already: this one.
    KeptBefore(Answer),
    /// No run here waits on the question or will ask it.
    NotHere,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
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
            AnswerError::NoSuchOption { .. } => Code::QuestionNoSuchOption,
        }
    }
}

impl Gates {
    /// Whether `question` is waiting here.
    #[cfg(test)]
    fn is_waiting(&self, question: &str) -> bool {
        lock(&self.state).waiting.contains_key(question)
    }

    /// Gives `answer` to `question` of run `run_id` in one step: to the run
    /// if it waits on it, else kept for it if the run is `active` here (it
    /// takes the answer when it asks), unless an answer was kept already.
    pub(crate) fn give(&self, run_id: &str, question: &str, answer: Answer, active: bool) -> Given {
        let mut state = lock(&self.state);
        if let Some((_, kept)) = state.early.get(question) {
            return Given::KeptBefore(kept.clone());
        }
        if let Some((_, tx)) = state.waiting.remove(question) {
            let _ = tx.send(answer);
            return Given::Delivered;
        }
        if !active {
            return Given::NotHere;
        }
        state
            .early
            .insert(question.to_string(), (run_id.to_string(), answer));
        Given::Kept
    }

    /// Drops the early answers of run `run_id` (it has stopped; a later
    /// resume asks its questions again).
    pub(crate) fn forget_run(&self, run_id: &str) {
        lock(&self.state).early.retain(|_, (run, _)| run != run_id);
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
        let (tx, rx) = oneshot::channel();
        let early = {
            let mut state = lock(&self.gates.state);
            // An early answer the question cannot take is dropped, and the
            // question waits as if there were none.
            let early = state
                .early
                .remove(&question.id)
                .map(|(_, answer)| answer)
                .filter(|answer| fits(question, answer));
            if early.is_none() {
                state
                    .waiting
                    .insert(question.id.clone(), (question.clone(), tx));
            }
            early
        };
        if let Some(answer) = early {
            if let Some(store) = &self.store {
                let _ = lock(store).answer_question(
                    &question.id,
                    QuestionStatus::Answered,
                    Some(&recorded(question, &answer)),
                );
            }
            return Box::pin(std::future::ready(answer));
        }
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
        lock(&self.gates.state).waiting.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

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
                let answer = resolve(&question(), &by).expect("an option");
                (gates.give("R", "Q1", answer.clone(), true), answer)
            };
            let (answer, (given, sent)) = tokio::join!(asking, answering);
            assert_eq!(given, Given::Delivered);
            assert_eq!(sent, Answer::Choice(want));
            assert_eq!(answer, Answer::Choice(want));
            assert!(!interviewer.gates.is_waiting("Q1"));
        }
    }

    #[test]
    fn an_unknown_option_or_question_is_refused_and_the_question_keeps_waiting() {
        let interviewer = SocketInterviewer::default();
        let q = question();
        let asking = interviewer.ask(&q);
        let err = resolve(&q, &AnswerBy::Key("Z".into())).expect_err("no such key");
        assert_eq!(err.code(), "question.no_such_option");
        assert!(interviewer.gates.is_waiting("Q1"));
        assert_eq!(
            interviewer.gates.give("R", "Q9", Answer::Choice(0), false),
            Given::NotHere,
            "a question nobody asks, of a run not here"
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
        let gates = &interviewer.gates;
        assert_eq!(gates.give("R", "Q1", Answer::Choice(1), true), Given::Kept);
        assert_eq!(
            gates.give("R", "Q1", Answer::Choice(0), true),
            Given::KeptBefore(Answer::Choice(1)),
            "the first answer kept stands"
        );
        let answer = interviewer.ask(&q).await;
        assert_eq!(answer, Answer::Choice(1), "no wait: the answer was there");
        assert!(!gates.is_waiting("Q1"));
        assert_eq!(
            gates.give("R", "Q1", Answer::Choice(0), false),
            Given::NotHere,
            "taken once"
        );
    }

    #[test]
    fn an_answer_given_while_the_run_asks_on_another_thread_always_reaches_it() {
        // The run asks on its own thread while the daemon's thread gives
        // the answer: whichever gets there first, the ask ends with it.
        for i in 0..500 {
            let interviewer = SocketInterviewer::default();
            let gates = interviewer.gates.clone();
            let giver = std::thread::spawn(move || {
                if i % 2 == 0 {
                    std::thread::yield_now();
                }
                gates.give("R", "Q1", Answer::Choice(1), true)
            });
            let q = question();
            let answer = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .expect("runtime")
                .block_on(async {
                    tokio::time::timeout(Duration::from_secs(60), interviewer.ask(&q)).await
                });
            let given = giver.join().expect("giver");
            assert!(matches!(given, Given::Delivered | Given::Kept), "{given:?}");
            assert_eq!(answer, Ok(Answer::Choice(1)), "round {i}: {given:?}");
        }
    }

    #[test]
    fn an_early_answer_the_question_cannot_take_is_dropped_and_the_question_waits() {
        let interviewer = SocketInterviewer::default();
        let q = question();
        assert_eq!(
            interviewer.gates.give("R", "Q1", Answer::Choice(7), true),
            Given::Kept
        );
        let asking = interviewer.ask(&q);
        assert!(interviewer.gates.is_waiting("Q1"));
        drop(asking);
    }

    #[test]
    fn early_answers_of_a_run_that_stopped_are_forgotten() {
        let gates = Gates::default();
        gates.give("R1", "Q1", Answer::Choice(0), true);
        gates.give("R2", "Q2", Answer::Choice(0), true);
        gates.forget_run("R1");
        assert_eq!(
            gates.give("R1", "Q1", Answer::Choice(1), false),
            Given::NotHere
        );
        assert_eq!(
            gates.give("R2", "Q2", Answer::Choice(1), false),
            Given::KeptBefore(Answer::Choice(0))
        );
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
