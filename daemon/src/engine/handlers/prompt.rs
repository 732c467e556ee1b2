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

use serde_json::{Value, json};

use super::StageCx;
use crate::engine::output::{self, SchemaProblem};
use crate::engine::preamble::{self, Fidelity, PreambleInput, StageSummary};
use crate::engine::retry::RetryPolicy;
use crate::llm::{CallEvent, Completion, LlmError, Message, ReasoningEffort, Request, Speed};
use crate::model::EventKind;
use crate::model::Spend;
use crate::model::{FailureClass, LlmUsage, Outcome};
use crate::store::BlobRef;

/// `last_response` keeps this many characters of the response.
const LAST_RESPONSE_CHARS: usize = 200;

/// Repair turns when `output_retries` is not set.
const DEFAULT_OUTPUT_RETRIES: u32 = 2;

/// What the node's output must be.
enum Schema {
    None,
    Routing,
    Custom(String),
}

pub async fn run(cx: &StageCx<'_>) -> Outcome {
    if cx.run.dry_run {
        return super::dry_run::simulate(cx);
    }
    let node = cx.node;
    let client = match cx.run.models.client() {
        Ok(client) => client,
        Err(why) => {
            return Outcome::failed(
                FailureClass::Deterministic,
                format!("cannot set up language models: {why}"),
            );
        }
    };
    let fidelity = Fidelity::parse(&cx.context.text("internal.fidelity")).unwrap_or_default();
    let preamble = preamble::render(fidelity, &gather(cx));
    let prompt = node
        .attrs
        .non_empty("prompt")
        .or_else(|| node.attrs.non_empty("label"))
        .map(|p| p.into_owned())
        .unwrap_or_else(|| node.id.to_string());
    let text = if preamble.is_empty() {
        prompt
    } else {
        format!("{preamble}\n{prompt}")
    };
    cx.write_file("prompt.md", text.as_bytes());

    let choice = cx.run.models.choice();
    // At full fidelity, nodes sharing a `thread_id` share one conversation.
    let thread = (fidelity == Fidelity::Full)
        .then(|| node.attrs.non_empty("thread_id").map(|t| t.into_owned()))
        .flatten();
    let mut request = Request::prompt(text.clone());
    if let Some(thread) = &thread {
        let mut messages = cx.run.models.thread(thread);
        messages.append(&mut request.messages);
        request.messages = messages;
    }
    request.model = node
        .attrs
        .non_empty("model")
        .map(|m| m.into_owned())
        .or_else(|| choice.model.clone());
    request.provider = node
        .attrs
        .non_empty("provider")
        .map(|p| p.into_owned())
        .or_else(|| choice.provider.clone());
    request.reasoning_effort = node
        .attrs
        .non_empty("reasoning_effort")
        .and_then(|e| ReasoningEffort::parse(&e));
    request.speed = node.attrs.non_empty("speed").and_then(|s| Speed::parse(&s));
    request.max_tokens = node
        .attrs
        .value("max_tokens")
        .and_then(crate::lang::value::Value::as_int)
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n > 0);

    let schema = match node.attrs.non_empty("output_schema") {
        None => Schema::None,
        Some(s) if s.trim() == "routing" => Schema::Routing,
        Some(s) => Schema::Custom(s.trim().to_string()),
    };
    let repairs = node
        .attrs
        .value("output_retries")
        .and_then(crate::lang::value::Value::as_int)
        .map_or(DEFAULT_OUTPUT_RETRIES, |n| {
            u32::try_from(n.max(0)).unwrap_or(0)
        });

    let mut spend = Spend::default();
    let mut last: Option<Completion> = None;
    let mut repaired = 0u32;
    let (mut outcome, response) = loop {
        let completion = match call(cx, client, &request).await {
            Ok(c) => c,
            Err(failure) => {
                let mut outcome = failure;
                outcome.llm = usage(last.as_ref(), &spend);
                return outcome;
            }
        };
        spend.add_call(completion.response.usage, completion.cost);
        let response = completion.response.text();
        last = Some(completion);
        match check(cx, &schema, &response) {
            Ok(outcome) => break (outcome, response),
            Err(Problem::Fatal(why)) => {
                cx.write_file("response.md", response.as_bytes());
                let mut outcome = Outcome::failed(FailureClass::Deterministic, why);
                outcome.llm = usage(last.as_ref(), &spend);
                return outcome;
            }
            Err(Problem::Repairable(why)) if repaired < repairs => {
                repaired += 1;
                cx.notice(format!(
                    "repair turn {repaired} of {repairs}: the response did not pass output_schema: {why}"
                ));
                request.messages.push(Message::assistant(response));
                request.messages.push(Message::user(format!(
                    "Your last reply did not pass validation: {why}\n\
                     Reply again with the corrected JSON object (it must be the last JSON object \
                     in your reply)."
                )));
            }
            Err(Problem::Repairable(why)) => {
                cx.write_file("response.md", response.as_bytes());
                let mut outcome = Outcome::failed(
                    FailureClass::Deterministic,
                    format!(
                        "output schema validation failed after {repaired} repair attempt(s): {why}"
                    ),
                );
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
    let preview: String = response.chars().take(LAST_RESPONSE_CHARS).collect();
    outcome = outcome
        .update("last_stage", node.id.to_string())
        .update("last_response", preview)
        .update(format!("response.{}", node.id), json!(response));
    outcome.llm = usage(last.as_ref(), &spend);
    outcome
}

/// Why a response was not accepted.
enum Problem {
    /// Asking again may fix it.
    Repairable(String),
    /// It cannot be fixed by the model (the schema file is broken).
    Fatal(String),
}

/// The outcome a response gives, or why it fails `schema`.
fn check(cx: &StageCx<'_>, schema: &Schema, response: &str) -> Result<Outcome, Problem> {
    let mut outcome = Outcome::succeeded();
    match schema {
        Schema::None => {
            if let Some(directive) = output::last_routing_object(response)
                && let Err(why) = output::apply_routing(&directive, &mut outcome)
            {
                // Without a schema a malformed directive is ignored, as the
                // reference says, but not silently.
                cx.notice(format!("ignored a malformed routing directive: {why}"));
                outcome = Outcome::succeeded();
            }
        }
        Schema::Routing => {
            let directive = output::last_routing_object(response).ok_or_else(|| {
                Problem::Repairable(
                    "output_schema=\"routing\": the response has no JSON object with a routing \
                     field (outcome, preferred_next_label, suggested_next_ids, context_updates, \
                     failure_reason)"
                        .into(),
                )
            })?;
            output::apply_routing(&directive, &mut outcome).map_err(|why| {
                Problem::Repairable(format!(
                    "output_schema=\"routing\": invalid routing JSON: {why}"
                ))
            })?;
        }
        Schema::Custom(file) => {
            let value = output::check_schema(&cx.run.base_dir, file, response, "the response has")
                .map_err(|p| match p {
                    SchemaProblem::Schema(why) => Problem::Fatal(why),
                    SchemaProblem::Invalid(why) => Problem::Repairable(why),
                })?;
            outcome
                .context_updates
                .insert(format!("output.{}", cx.node.id), value);
            // The response may still route.
            if let Some(directive) = output::last_routing_object(response) {
                let _ = output::apply_routing(&directive, &mut outcome);
            }
        }
    }
    Ok(outcome)
}

/// One call, recording its retries, failovers and completion as events.
/// A failure comes back as the stage's outcome.
async fn call(
    cx: &StageCx<'_>,
    client: &crate::llm::LlmClient,
    request: &Request,
) -> Result<Completion, Outcome> {
    let at = cx.at();
    let on_event = |event: CallEvent| {
        let kind = match event {
            CallEvent::Retry {
                target,
                retry,
                wait,
                error,
            } => EventKind::LlmRetry {
                provider: target.provider,
                model: target.model,
                retry,
                wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                code: error.code().to_string(),
                error: error.to_string(),
            },
            CallEvent::Failover { from, to, error } => EventKind::LlmFailover {
                from: from.to_string(),
                to: to.to_string(),
                code: error.code().to_string(),
                error: error.to_string(),
            },
            CallEvent::Warning(message) => EventKind::RunNotice { message },
            CallEvent::Delta(_) => return,
        };
        let _ = cx.recorder.emit(kind, at);
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
                    duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                },
                at,
            );
            Ok(completion)
        }
        Err(error) => Err(failure(cx, &error)),
    }
}

/// The stage's outcome for a call that failed for good (after the client's
/// own retries and failovers).
fn failure(cx: &StageCx<'_>, error: &LlmError) -> Outcome {
    let class = match error.failure_class() {
        crate::llm::FailureClass::TransientInfra => FailureClass::TransientInfra,
        crate::llm::FailureClass::Deterministic => FailureClass::Deterministic,
        crate::llm::FailureClass::BudgetExhausted => FailureClass::BudgetExhausted,
    };
    let outcome = Outcome::failed(class, format!("model call failed: {error}"));
    // The client already retried; the stage itself retries only when the
    // node asks (`max_retries`, `retry_policy`), as commands do.
    if class == FailureClass::TransientInfra && RetryPolicy::explicit(cx.node) {
        outcome.retryable()
    } else {
        outcome
    }
}

/// The stage's spend, named after the model that answered last.
fn usage(last: Option<&Completion>, spend: &Spend) -> Option<LlmUsage> {
    last.map(|c| LlmUsage {
        provider: c.target.provider.clone(),
        model: c.target.model.clone(),
        spend: *spend,
    })
}

/// What the preamble is built from: the committed stages (from the run
/// store) and the context, blob refs read back into their text.
fn gather(cx: &StageCx<'_>) -> PreambleInput {
    let resolve = |value: &Value| -> Value {
        match value.as_str().and_then(BlobRef::parse) {
            Some(blob) => cx.run.blobs.get_json(&blob).unwrap_or(Value::Null),
            None => value.clone(),
        }
    };
    let text_of = |value: Option<&Value>| -> Option<String> {
        let value = resolve(value?);
        match value {
            Value::Null => None,
            Value::String(s) => Some(s),
            other => Some(other.to_string()),
        }
    };
    let stages = cx
        .recorder
        .store()
        .stages(&cx.run.run_id)
        .unwrap_or_default();
    let stages = stages
        .into_iter()
        .filter(|s| s.status != "running" && s.status != "interrupted")
        .map(|s| {
            let outcome: Option<Outcome> = s
                .outcome
                .as_ref()
                .and_then(|o| serde_json::from_value(o.clone()).ok());
            let updates = outcome.as_ref().map(|o| &o.context_updates);
            let update = |key: &str| text_of(updates.and_then(|u| u.get(key)));
            let graph_node = cx.graph.node(&s.node_id);
            StageSummary {
                script: graph_node
                    .and_then(|n| n.attrs.non_empty("script"))
                    .map(|t| t.into_owned()),
                stdout: update("command.output"),
                stderr: update("command.stderr"),
                model: outcome
                    .as_ref()
                    .and_then(|o| o.llm.as_ref())
                    .map(|l| l.model.clone()),
                input_tokens: outcome
                    .as_ref()
                    .and_then(|o| o.llm.as_ref())
                    .map(|l| l.spend.usage.input),
                output_tokens: outcome
                    .as_ref()
                    .and_then(|o| o.llm.as_ref())
                    .map(|l| l.spend.usage.output),
                response: update(&format!("response.{}", s.node_id)),
                answer: update("human.gate.label"),
                failure_reason: s.failure_reason,
                duration_ms: s.duration_ms,
                node_id: s.node_id,
                visit: s.visit,
                handler: s.handler,
                status: s.status,
                files_touched: Vec::new(),
            }
        })
        .collect();
    PreambleInput {
        goal: cx
            .graph
            .attrs
            .non_empty("goal")
            .map(|g| g.into_owned())
            .or_else(|| text_of(cx.context.get("graph.goal"))),
        run_id: cx.run.run_id.clone(),
        stages,
        context: cx
            .context
            .values()
            .iter()
            .map(|(k, v)| (k.clone(), resolve(v)))
            .collect(),
    }
}
