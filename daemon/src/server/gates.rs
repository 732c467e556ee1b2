//! Human gates of the daemon's runs: questions wait here until a client
//! answers them over the socket (`question.answer`).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use crate::engine::interviewer::{Answer, Interviewer, Question, match_answer};
use crate::ipc::protocol::AnswerBy;

/// Questions waiting for an answer, by question id.
#[derive(Debug, Default)]
pub struct Gates {
    waiting: Mutex<HashMap<String, (Question, oneshot::Sender<Answer>)>>,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// No run is waiting on this question (unknown, or from before a
    /// restart and not asked again yet).
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
    pub fn code(&self) -> &'static str {
        match self {
            AnswerError::NotWaiting(_) => "question.not_waiting",
            AnswerError::NoSuchOption { .. } => "question.no_such_option",
        }
    }
}

impl Gates {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, (Question, oneshot::Sender<Answer>)>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `question` is waiting here.
    #[must_use]
    pub fn is_waiting(&self, question: &str) -> bool {
        self.lock().contains_key(question)
    }

    /// Delivers an answer to the run waiting on `question`.
    pub fn answer(&self, question: &str, by: &AnswerBy) -> Result<Answer, AnswerError> {
        let mut waiting = self.lock();
        let Some((q, _)) = waiting.get(question) else {
            return Err(AnswerError::NotWaiting(question.to_string()));
        };
        let answer = match by {
            AnswerBy::Key(key) => q
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
                q.choices
                    .iter()
                    .position(|c| crate::engine::routing::normalise_label(&c.label) == wanted)
                    .map(Answer::Choice)
            }
            AnswerBy::Text(text) => match_answer(q, text),
        };
        let Some(answer) = answer else {
            let given = match by {
                AnswerBy::Key(s) | AnswerBy::Label(s) | AnswerBy::Text(s) => s.clone(),
            };
            return Err(AnswerError::NoSuchOption {
                question: question.to_string(),
                answer: given,
                options: q
                    .choices
                    .iter()
                    .map(|c| c.label.clone())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        if let Some((_, tx)) = waiting.remove(question) {
            let _ = tx.send(answer.clone());
        }
        Ok(answer)
    }
}

/// The interviewer of daemon runs: asking parks the question in [`Gates`].
#[derive(Debug, Clone, Default)]
pub struct SocketInterviewer {
    pub gates: Arc<Gates>,
}

impl Interviewer for SocketInterviewer {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        let (tx, rx) = oneshot::channel();
        self.gates
            .lock()
            .insert(question.id.clone(), (question.clone(), tx));
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
        self.gates.lock().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::interviewer::Choice;

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
}
