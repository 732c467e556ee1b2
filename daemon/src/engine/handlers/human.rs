//! Human gate (`hexagon`): asks a question whose options are the outgoing
//! edges' labels, and routes by the answer (workflows/human-in-the-loop.mdx).
//!
//! Gates fail closed: an interrupted or skipped question, or a timeout
//! without `human.default_choice`, fails the stage, and the routing rules
//! never let a failed gate fall through to an unconditional edge.

use serde_json::json;

use super::StageCx;
use super::ask::Asked;
use crate::engine::interviewer::{self, Answer, Question};
use crate::model::EventKind;
use crate::model::{FailureClass, Outcome};
use crate::store::{QuestionRecord, QuestionStatus};

/// How much of the previous stage's output is shown with the question.
const CONTEXT_CHARS: usize = 2000;

pub async fn run(cx: &StageCx<'_>) -> Outcome {
    let node = cx.node;
    let (choices, freeform) = interviewer::choices(cx.graph, &node.id);
    if choices.is_empty() && !freeform {
        return Outcome::failed(
            FailureClass::Deterministic,
            "human gate has no outgoing edges to choose from",
        );
    }
    // A question still pending from before a restart keeps its id, so an
    // answer addressed to it (from the app, say) still lands.
    let pending = cx
        .recorder
        .store()
        .questions(Some(&cx.run.run_id), true)
        .ok()
        .and_then(|qs| {
            qs.into_iter()
                .find(|q| *q.node_id == *node.id && q.visit == cx.visit)
        });
    let (timeout_ms, default_choice) = interviewer::wait_of(node);
    let question = Question {
        id: pending
            .as_ref()
            .map_or_else(|| ulid::Ulid::generate().to_string(), |q| q.id.clone()),
        node_id: node.id.to_string(),
        text: node.label().into_owned(),
        context: previous_output(cx),
        choices,
        freeform,
        timeout_ms,
        default_choice,
    };
    let at = cx.at();
    let record = QuestionRecord {
        id: question.id.clone(),
        run_id: cx.run.run_id.clone(),
        node_id: question.node_id.clone(),
        visit: cx.visit,
        text: question.text.clone(),
        options: question.choices.iter().map(|c| c.label.clone()).collect(),
        freeform,
        status: QuestionStatus::Pending,
        answer: None,
        asked_at: crate::store::timestamp(),
        answered_at: None,
        permission: None,
    };
    let timeout = cx
        .node
        .attrs
        .value("timeout")
        .and_then(crate::lang::value::Value::as_duration)
        .map(|t| t.to_std());
    let new = pending.is_none().then_some(&record);
    let answer = super::ask::ask_recorded(cx, &question, new, timeout).await;
    let settle = |status: QuestionStatus, answer: serde_json::Value| {
        let _ = cx
            .recorder
            .store()
            .answer_question(&question.id, status, Some(&answer));
    };

    match answer {
        Asked::Answer(Answer::Choice(i)) => match question.choices.get(i) {
            Some(choice) => {
                settle(QuestionStatus::Answered, json!({ "choice": choice.label }));
                let _ = cx.recorder.emit(
                    EventKind::InterviewCompleted {
                        question_id: question.id.clone(),
                        selected: choice.label.clone(),
                        text: None,
                    },
                    at,
                );
                chosen(choice)
            }
            None => Outcome::failed(FailureClass::Deterministic, "the answer named no option"),
        },
        Asked::Answer(Answer::Freeform(text)) => {
            settle(QuestionStatus::Answered, json!({ "text": text }));
            let _ = cx.recorder.emit(
                EventKind::InterviewCompleted {
                    question_id: question.id.clone(),
                    selected: "freeform".into(),
                    text: Some(text.clone()),
                },
                at,
            );
            freeform_outcome(cx, text)
        }
        Asked::Answer(Answer::Interrupted(why)) => {
            settle(QuestionStatus::Interrupted, json!({ "interrupted": why }));
            let _ = cx.recorder.emit(
                EventKind::InterviewInterrupted {
                    question_id: question.id.clone(),
                    reason: why.clone(),
                },
                at,
            );
            Outcome::failed(
                FailureClass::Canceled,
                format!("human gate not answered: {why}"),
            )
        }
        Asked::Answer(Answer::Skipped) => {
            settle(QuestionStatus::Interrupted, json!({ "skipped": true }));
            let _ = cx.recorder.emit(
                EventKind::InterviewInterrupted {
                    question_id: question.id.clone(),
                    reason: "skipped".into(),
                },
                at,
            );
            Outcome::failed(FailureClass::Canceled, "human gate skipped")
        }
        Asked::TimedOut(after) => {
            let default = node.attrs.non_empty("human.default_choice");
            let _ = cx.recorder.emit(
                EventKind::InterviewTimeout {
                    question_id: question.id.clone(),
                    default_choice: default.as_ref().map(|d| d.to_string()),
                },
                at,
            );
            let picked =
                default
                    .as_deref()
                    .and_then(|d| match interviewer::match_answer(&question, d) {
                        Some(Answer::Choice(i)) => question.choices.get(i),
                        _ => None,
                    });
            match (picked, default) {
                (Some(choice), Some(d)) => {
                    settle(QuestionStatus::TimedOut, json!({ "default_choice": d }));
                    let mut o = chosen(choice);
                    o.notes.push(format!(
                        "no answer within {after}; took human.default_choice `{d}`"
                    ));
                    o
                }
                (None, Some(d)) => {
                    settle(QuestionStatus::TimedOut, json!({ "default_choice": d }));
                    Outcome::failed(
                        FailureClass::Deterministic,
                        format!(
                            "human gate timed out after {after} and human.default_choice `{d}` \
                             matches none of its options"
                        ),
                    )
                }
                (_, None) => {
                    settle(QuestionStatus::TimedOut, json!(null));
                    Outcome::failed(
                        FailureClass::Deterministic,
                        format!("human gate timed out after {after} with no human.default_choice"),
                    )
                }
            }
        }
        Asked::Cancelled(reason) => {
            settle(QuestionStatus::Interrupted, json!({ "cancelled": reason }));
            Outcome::failed(FailureClass::Canceled, format!("cancelled: {reason}"))
        }
    }
}

/// The outcome of picking `choice`: its label is preferred and its target
/// suggested, so routing finds the edge either way.
fn chosen(choice: &interviewer::Choice) -> Outcome {
    let mut o = Outcome::succeeded()
        .update(
            "human.gate.selected",
            choice.key.clone().unwrap_or_else(|| choice.text.clone()),
        )
        .update("human.gate.label", choice.label.clone());
    o.preferred_label = Some(choice.label.clone());
    o.suggested_next_ids = vec![choice.target.clone()];
    o
}

fn freeform_outcome(cx: &StageCx<'_>, text: String) -> Outcome {
    let edge = cx.graph.edges_from(&cx.node.id).find(|e| {
        e.attrs
            .value("freeform")
            .and_then(crate::lang::value::Value::as_bool)
            == Some(true)
    });
    let mut o = Outcome::succeeded()
        .update("human.gate.selected", "freeform")
        .update("human.gate.text", text);
    if let Some(edge) = edge {
        let label = edge
            .label()
            .map_or_else(|| edge.to.to_string(), |l| l.into_owned());
        o = o.update("human.gate.label", label);
        o.suggested_next_ids = vec![edge.to.to_string()];
    }
    o
}

/// The previous stage's response or output, shown above the question.
fn previous_output(cx: &StageCx<'_>) -> Option<String> {
    let text = match cx.context.get("last_stage").and_then(|v| v.as_str()) {
        Some(stage) => match cx.context.get(&format!("response.{stage}")) {
            Some(v) => resolve(cx, v),
            None => cx
                .context
                .get("command.output")
                .and_then(|v| resolve(cx, v)),
        },
        None => None,
    }?;
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    // The last CONTEXT_CHARS characters, after the `…` that marks a cut.
    Some(crate::util::text::truncate_start(text, CONTEXT_CHARS + 1))
}

fn resolve(cx: &StageCx<'_>, value: &serde_json::Value) -> Option<String> {
    let text = value.as_str()?;
    match crate::store::BlobRef::parse(text) {
        Some(blob) => cx
            .run
            .blobs
            .get_json(&blob)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string)),
        None => Some(text.to_string()),
    }
}
