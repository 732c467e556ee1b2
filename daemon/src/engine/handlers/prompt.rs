//! Prompt nodes (`shape=tab`): one language-model call with no tools
//! (agents/prompts.mdx, agents/outputs.mdx).
//!
//! The prompt is the fidelity preamble (execution/context.mdx) followed by
//! the node's `prompt` (templates were rendered when the workflow loaded).
//! The model, provider, reasoning effort and speed come from the node's
//! attributes (which include what the model stylesheet gave it), else the
//! run's `--model`/`--provider`/`[run.model]`, else the catalog's defaults.
//!
//! The response sets `last_stage`, `last_response` (its first 200
//! characters) and `response.{node}`; a routing directive in it (the last
//! JSON object with a routing field) sets the outcome, label, suggestions
//! and context updates. With `output_schema`, output that does not match is
//! sent back for repair in the same conversation, `output_retries` times
//! (default 2), before the node fails.

use super::StageCx;
use super::model_stage::{self, Problem, Prompt, Schema};
use crate::llm::{Completion, Message, Request};
use crate::model::EventKind;
use crate::model::Spend;
use crate::model::{FailureClass, LlmUsage, Outcome};

pub async fn run(cx: &StageCx<'_>) -> Outcome {
    if cx.run.dry_run {
        return super::dry_run::simulate(cx);
    }
    let client = match model_stage::client(cx) {
        Ok(client) => client,
        Err(failure) => return *failure,
    };
    let Prompt { text, fidelity } = Prompt::build(cx);

    let thread = model_stage::thread(cx, fidelity);
    let mut request = model_stage::request(cx);
    if let Some(thread) = &thread {
        // Without the tool calls agents of the thread made: a request that
        // offers no tools may not carry them.
        request.messages = cx.run.models.thread_text(thread);
    }
    request.messages.push(Message::user(text.clone()));

    let schema = Schema::of(cx);
    let repairs = model_stage::repair_turns(cx);

    let mut spend = Spend::default();
    let mut last: Option<Completion> = None;
    let mut repaired = 0u32;
    let (outcome, response) = loop {
        if let Err(mut stopped) = super::budget::check(cx, &spend).await {
            stopped.llm = usage(last.as_ref(), &spend);
            return stopped;
        }
        let completion = match call(cx, client, &request).await {
            Ok(c) => c,
            Err(failure) => {
                let mut outcome = failure;
                outcome.llm = usage(last.as_ref(), &spend);
                return outcome;
            }
        };
        spend.add_call(completion.response.usage, completion.cost);
        super::budget::note_unpriced(cx, &completion.target.model, completion.cost);
        let response = completion.response.text();
        last = Some(completion);
        match model_stage::check(cx, &schema, &response) {
            Ok(outcome) => break (outcome, response),
            Err(Problem::Fatal(why)) => {
                cx.write_file("response.md", response.as_bytes());
                let mut outcome = Outcome::failed(FailureClass::Deterministic, why);
                outcome.llm = usage(last.as_ref(), &spend);
                return outcome;
            }
            Err(Problem::Repairable(why)) if repaired < repairs => {
                repaired += 1;
                model_stage::note_repair(cx, repaired, repairs, &why);
                request.messages.push(Message::assistant(response));
                request
                    .messages
                    .push(Message::user(model_stage::repair_message(&why)));
            }
            Err(Problem::Repairable(why)) => {
                cx.write_file("response.md", response.as_bytes());
                let mut outcome = model_stage::schema_failure(repaired, &why);
                outcome.llm = usage(last.as_ref(), &spend);
                return outcome;
            }
        }
    };
    cx.write_file("response.md", response.as_bytes());
    if let Some(thread) = &thread {
        cx.run.models.extend_thread(
            thread,
            [Message::user(text), Message::assistant(response.clone())],
        );
    }
    let mut outcome = model_stage::with_response(cx, outcome, &response);
    outcome.llm = usage(last.as_ref(), &spend);
    outcome
}

/// One call, recording its retries, failovers and completion as events.
/// A failure comes back as the stage's outcome.
async fn call(
    cx: &StageCx<'_>,
    client: &crate::llm::LlmClient,
    request: &Request,
) -> Result<Completion, Outcome> {
    let at = cx.at();
    let on_event = |event| {
        if let Some(kind) = model_stage::call_event(event) {
            let _ = cx.recorder.emit(kind, at);
        }
    };
    let started = std::time::Instant::now();
    let result = tokio::select! {
        result = client.complete(request, on_event) => result,
        _ = cx.run.cancel.cancelled() => {
            return Err(Outcome::failed(FailureClass::Canceled, "cancelled during the model call"));
        }
    };
    match result {
        Ok(completion) => {
            let usage = completion.response.usage;
            let _ = cx.recorder.emit(
                EventKind::LlmCompleted {
                    provider: completion.target.provider.clone(),
                    model: completion.target.model.clone(),
                    input_tokens: usage.input,
                    output_tokens: usage.output,
                    reasoning_tokens: usage.reasoning,
                    cache_read_tokens: usage.cache_read,
                    cache_write_tokens: usage.cache_write,
                    cost: completion.cost,
                    finish: format!("{:?}", completion.response.finish).to_lowercase(),
                    duration_ms: model_stage::millis(started.elapsed()),
                },
                at,
            );
            Ok(completion)
        }
        Err(error) => Err(model_stage::llm_failure(cx, &error)),
    }
}

/// The stage's spend, named after the model that answered last.
fn usage(last: Option<&Completion>, spend: &Spend) -> Option<LlmUsage> {
    model_stage::usage(
        last.map(|c| (c.target.provider.as_str(), c.target.model.as_str())),
        spend,
    )
}
