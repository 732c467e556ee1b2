//! What prompt nodes (`prompt.rs`) and agent nodes (`agent.rs`) share: the
//! prompt (fidelity preamble + the node's prompt), the model call's
//! settings from node attributes and the run's model choice, how a
//! response is read (routing directives, `output_schema` and its repair
//! turns), the context updates a response makes, and how model-call
//! events and failures are recorded (agents/prompts.mdx,
//! agents/outputs.mdx, execution/context.mdx).

use serde_json::{Value, json};

use super::StageCx;
use crate::engine::output::{self, SchemaProblem};
use crate::engine::preamble::{self, Fidelity, PreambleInput, StageSummary};
use crate::engine::retry::RetryPolicy;
use crate::llm::{CallEvent, LlmError, ReasoningEffort, Request, Speed};
use crate::model::{EventKind, FailureClass, LlmUsage, Outcome, Spend};
use crate::store::BlobRef;

/// `last_response` keeps this many characters of the response.
const LAST_RESPONSE_CHARS: usize = 200;

/// Repair turns when `output_retries` is not set.
const DEFAULT_OUTPUT_RETRIES: u32 = 2;

/// The text a model stage starts from: the fidelity preamble, then the
/// node's `prompt` (else its `label`, else its id). Written to `prompt.md`.
pub(super) struct Prompt {
    pub text: String,
    pub fidelity: Fidelity,
}

impl Prompt {
    /// Builds the stage's prompt and writes it to `prompt.md`.
    pub fn build(cx: &StageCx<'_>) -> Prompt {
        let node = cx.node;
        let fidelity = Fidelity::parse(&cx.context.text("internal.fidelity")).unwrap_or_default();
        let preamble = preamble::render(fidelity, &gather(cx));
        // The loader replaced `$goal` in `prompt` already; a label (or an
        // id) standing in for the prompt is expanded here, as the
        // Attractor spec does, and only here: the label stays as written
        // for display.
        let prompt = match node.attrs.non_empty("prompt") {
            Some(prompt) => prompt.into_owned(),
            None => {
                let stand_in = node
                    .attrs
                    .non_empty("label")
                    .map_or_else(|| node.id.to_string(), |l| l.into_owned());
                let goal = run_goal(cx).unwrap_or_default();
                // Loading charged this expansion to its budget already;
                // a goal changed since (a resumed run) is held to it too.
                let size = crate::lang::attractor::expanded_len(&stand_in, &goal) as u64;
                if size > crate::lang::parser::MAX_EXPANSION_BYTES {
                    cx.notice(format!(
                        "`$goal` in the label of {} was left as written: the goal would make the prompt larger than the limit",
                        node.id
                    ));
                    stand_in
                } else {
                    crate::lang::attractor::expand_goal(&stand_in, &goal).unwrap_or(stand_in)
                }
            }
        };
        let text = if preamble.is_empty() {
            prompt
        } else {
            format!("{preamble}\n{prompt}")
        };
        cx.write_file("prompt.md", text.as_bytes());
        Prompt { text, fidelity }
    }
}

/// The run's goal: the graph's (with `--goal` applied when loading), else
/// the context's `graph.goal`.
fn run_goal(cx: &StageCx<'_>) -> Option<String> {
    cx.graph
        .attrs
        .non_empty("goal")
        .map(|g| g.into_owned())
        .or_else(|| Some(cx.context.text("graph.goal")).filter(|g| !g.is_empty()))
}

/// The run's LLM client, or the stage's failure when it cannot be set up
/// (an invalid settings file, say).
pub(super) fn client<'r>(cx: &StageCx<'r>) -> Result<&'r crate::llm::LlmClient, Box<Outcome>> {
    cx.run.models.client().map_err(|why| {
        Box::new(Outcome::failed(
            FailureClass::Deterministic,
            format!("cannot set up language models: {why}"),
        ))
    })
}

/// The conversation thread a stage shares (execution/context.mdx, "Full
/// fidelity and threads"): `internal.thread_id` (the entering edge's
/// `thread_id`, else the node's, else the graph's `default_thread`), at full
/// fidelity only.
pub(super) fn thread(cx: &StageCx<'_>, fidelity: Fidelity) -> Option<String> {
    let thread = cx.context.text("internal.thread_id");
    (fidelity == Fidelity::Full && !thread.trim().is_empty()).then_some(thread)
}

/// A request without messages, with the node's model settings: `model`,
/// `provider` (else the run's `--model`/`--provider`/`[run.model]`),
/// `reasoning_effort`, `speed` and `max_tokens`.
pub(super) fn request(cx: &StageCx<'_>) -> Request {
    let node = cx.node;
    let choice = cx.run.models.choice();
    Request {
        model: node
            .attrs
            .non_empty("model")
            .map(|m| m.into_owned())
            .or_else(|| choice.model.clone()),
        provider: node
            .attrs
            .non_empty("provider")
            .map(|p| p.into_owned())
            .or_else(|| choice.provider.clone()),
        reasoning_effort: node
            .attrs
            .non_empty("reasoning_effort")
            .and_then(|e| ReasoningEffort::parse(&e)),
        speed: node.attrs.non_empty("speed").and_then(|s| Speed::parse(&s)),
        max_tokens: node
            .attrs
            .value("max_tokens")
            .and_then(crate::lang::value::Value::as_int)
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0),
        ..Request::default()
    }
}

/// What the node's output must be (`output_schema`).
pub(super) enum Schema {
    None,
    Routing,
    /// A JSON Schema file, relative to the workflow.
    Custom(String),
}

impl Schema {
    /// The node's `output_schema`.
    pub fn of(cx: &StageCx<'_>) -> Schema {
        match cx.node.attrs.non_empty("output_schema") {
            None => Schema::None,
            Some(s) if s.trim() == "routing" => Schema::Routing,
            Some(s) => Schema::Custom(s.trim().to_string()),
        }
    }
}

/// How many repair turns the node allows (`output_retries`, default 2).
pub(super) fn repair_turns(cx: &StageCx<'_>) -> u32 {
    cx.node
        .attrs
        .value("output_retries")
        .and_then(crate::lang::value::Value::as_int)
        .map_or(DEFAULT_OUTPUT_RETRIES, |n| {
            u32::try_from(n.max(0)).unwrap_or(0)
        })
}

/// Why a response was not accepted.
pub(super) enum Problem {
    /// Asking again may fix it.
    Repairable(String),
    /// It cannot be fixed by the model (the schema file is broken).
    Fatal(String),
}

/// The user message asking the model to repair a response that failed
/// `output_schema` for `why`.
pub(crate) fn repair_message(why: &str) -> String {
    format!(
        "Your last reply did not pass validation: {why}\n\
         Reply again with the corrected JSON object (it must be the last JSON object \
         in your reply)."
    )
}

/// Notes a repair turn as a `run.notice`.
pub(super) fn note_repair(cx: &StageCx<'_>, repaired: u32, repairs: u32, why: &str) {
    cx.notice(format!(
        "repair turn {repaired} of {repairs}: the response did not pass output_schema: {why}"
    ));
}

/// The failure when the response still fails the schema after `repaired`
/// repair turns.
pub(super) fn schema_failure(repaired: u32, why: &str) -> Outcome {
    Outcome::failed(
        FailureClass::Deterministic,
        format!("output schema validation failed after {repaired} repair attempt(s): {why}"),
    )
}

/// The outcome a response gives, or why it fails `schema`.
pub(super) fn check(cx: &StageCx<'_>, schema: &Schema, response: &str) -> Result<Outcome, Problem> {
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

/// The accepted response's context updates (`last_stage`, `last_response`,
/// `response.{node}`) added to `outcome`.
pub(super) fn with_response(cx: &StageCx<'_>, outcome: Outcome, response: &str) -> Outcome {
    let preview: String = response.chars().take(LAST_RESPONSE_CHARS).collect();
    outcome
        .update("last_stage", cx.node.id.to_string())
        .update("last_response", preview)
        .update(format!("response.{}", cx.node.id), json!(response))
}

/// The run event for a model call's retry, failover or warning; `None`
/// for what is not recorded (stream deltas).
pub(super) fn call_event(event: CallEvent) -> Option<EventKind> {
    Some(match event {
        CallEvent::Retry {
            target,
            retry,
            wait,
            error,
        } => EventKind::LlmRetry {
            provider: target.provider,
            model: target.model,
            retry,
            wait_ms: millis(wait),
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
        CallEvent::Delta(_) => return None,
    })
}

/// A duration in whole milliseconds, saturating.
pub(super) fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The stage's outcome for a call that failed for good (after the client's
/// own retries and failovers).
pub(super) fn llm_failure(cx: &StageCx<'_>, error: &LlmError) -> Outcome {
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

/// The stage's spend, named after the model that answered last
/// (`provider`, `model`); `None` before any call answered.
pub(super) fn usage(last: Option<(&str, &str)>, spend: &Spend) -> Option<LlmUsage> {
    last.map(|(provider, model)| LlmUsage {
        provider: provider.to_string(),
        model: model.to_string(),
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
            let llm = outcome.as_ref().and_then(|o| o.llm.as_ref());
            StageSummary {
                script: graph_node
                    .and_then(|n| n.attrs.non_empty("script"))
                    .map(|t| t.into_owned()),
                stdout: update("command.output"),
                stderr: update("command.stderr"),
                model: llm.map(|l| l.model.clone()),
                input_tokens: llm.map(|l| l.spend.usage.input),
                output_tokens: llm.map(|l| l.spend.usage.output),
                response: update(&format!("response.{}", s.node_id)),
                answer: update("human.gate.label"),
                failure_reason: s.failure_reason,
                duration_ms: s.duration_ms,
                node_id: s.node_id,
                visit: s.visit,
                handler: s.handler,
                status: s.status,
                files_touched: outcome.map(|o| o.files_touched).unwrap_or_default(),
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
