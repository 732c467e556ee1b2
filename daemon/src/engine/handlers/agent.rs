//! Agent (`box`) nodes: Weft's own coding agent ([`crate::agent`]) works on
//! the node's prompt with tools until it ends a turn without calling one
//! (core-concepts/agents.mdx). Under `--dry-run` the stage is simulated
//! like any model node ([`super::dry_run`]).
//!
//! The prompt, the model settings, the reading of the final reply (routing
//! directives, `output_schema` with repair turns, which go to the same
//! conversation) and the context updates are those of prompt nodes
//! ([`super::model_stage`]). Besides them an agent stage has:
//! - limits: `max_turns`, `max_tool_rounds`, `max_stage_tokens` and
//!   `timeout` on the node, else `[run.agent]`, else the agent's defaults;
//!   reaching one fails the stage (`budget_exhausted`) naming the limit;
//! - `permissions` (`read-only`, `read-write`, `full`), likewise;
//! - events while it works (`agent.*`, `llm.*`), `transcript.jsonl` and the
//!   full tool outputs in the stage directory, and `files_touched` on the
//!   outcome;
//! - steering: the session is registered in [`crate::engine::steering`]
//!   while it runs, so `run.steer` reaches it.
//!
//! - `thread_id` at full fidelity: the session goes on from the thread's
//!   conversation (tool calls included) and, when the stage succeeds, the
//!   thread goes on from the session's. A prompt node of the thread sees
//!   its text only.

use std::time::Duration;

use serde_json::Value;

use super::StageCx;
use super::model_stage::{self, Problem, Prompt, Schema};
use crate::agent::tools::{WebSearch, Workspace};
use crate::agent::transcript::{Entry, TOOLS_DIR, TRANSCRIPT_FILE};
use crate::agent::{
    AgentEvent, Limits, Permissions, Session, SessionConfig, SessionError, SessionErrorKind,
};
use crate::model::{AgentDefaults, EventKind, FailureClass, Outcome};

/// `web_search` is offered only when the run's environment has this key.
const SEARCH_KEY_VAR: &str = "BRAVE_SEARCH_API_KEY";

/// A string argument of `agent.tool.started` longer than this is cut (the
/// whole call is in the transcript): a `write_file` of a large file must
/// not put it in the events table and every subscriber's stream.
const ARGUMENT_STRING_BYTES: usize = 2 * 1024;

/// Nesting kept of an argument value in `agent.tool.started`; deeper parts
/// become `"…"`.
const ARGUMENT_DEPTH: usize = 8;

/// Items kept of an array or object in `agent.tool.started`.
const ARGUMENT_ITEMS: usize = 50;

/// `preview` of `agent.tool.completed`, at most.
const PREVIEW_BYTES: usize = 4 * 1024;

/// How long a cancelled session gets to stop on its own (it kills its
/// tools, ends its transcript) before it is dropped.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// Earlier attempts' transcripts kept in a stage directory, at most.
const KEPT_TRANSCRIPTS: u32 = 1000;

/// Runs one attempt of an agent stage.
pub async fn run(cx: &StageCx<'_>) -> Outcome {
    if cx.run.dry_run {
        return super::dry_run::simulate(cx);
    }
    let client = match model_stage::client(cx) {
        Ok(client) => client,
        Err(failure) => return *failure,
    };
    let (limits, permissions) = match settings(cx) {
        Ok(settings) => settings,
        Err(why) => return Outcome::failed(FailureClass::Deterministic, why),
    };
    let Prompt { text, fidelity } = Prompt::build(cx);
    let thread = model_stage::thread(cx, fidelity);
    keep_earlier_transcript(cx);

    let mut workspace = match workspace(cx) {
        Ok(workspace) => workspace,
        Err(failure) => return *failure,
    };
    workspace.env = tool_env(cx);
    // `shell` runs in the run's container; the file tools act on the work
    // dir, which the container mounts, as they do without one.
    workspace.sandbox = match cx.sandbox().await {
        Ok(sandbox) => sandbox.cloned(),
        Err(outcome) => return outcome,
    };
    workspace.shell_default_timeout = limits.shell_default_timeout;
    workspace.shell_max_timeout = limits.shell_max_timeout;
    workspace.scratch_dir = Some(cx.dir.join(TOOLS_DIR));
    // The caller's environment, keys included (not the tools' one).
    let web_search_key = cx
        .run
        .models
        .env()
        .into_iter()
        .find(|(k, v)| k == SEARCH_KEY_VAR && !v.trim().is_empty())
        .map(|(_, v)| v);
    workspace.web_search = web_search_key.clone().map(WebSearch::brave);
    let mut request = model_stage::request(cx);
    request.stream = true;
    let config = SessionConfig {
        request,
        limits,
        permissions,
        instructions_from: cx.run.work_dir.clone(),
        web_search_key,
        record_dir: Some(cx.dir.to_path_buf()),
    };
    let gate = BudgetGate(cx);
    let mut session = Session::new(config, client, workspace).gated(&gate);
    if let Some(thread) = &thread {
        session = session.continuing(cx.run.models.thread(thread));
    }
    let _steerable =
        cx.run
            .agents
            .register(&cx.run.run_id, &cx.node.id, cx.visit, session.steering());

    let schema = Schema::of(cx);
    let repairs = model_stage::repair_turns(cx);
    let mut tally = Tally::default();
    let mut message = text;
    let mut repaired = 0u32;
    let (outcome, response) = loop {
        let reply = match send(cx, &mut session, &message, &mut tally).await {
            Ok(reply) => reply,
            Err(error) => {
                let outcome = session_failure(cx, &error);
                return tally.finish(outcome, &session);
            }
        };
        let response = reply.text;
        match model_stage::check(cx, &schema, &response) {
            Ok(outcome) => break (outcome, response),
            Err(Problem::Fatal(why)) => {
                cx.write_file("response.md", response.as_bytes());
                let outcome = Outcome::failed(FailureClass::Deterministic, why);
                return tally.finish(outcome, &session);
            }
            Err(Problem::Repairable(why)) if repaired < repairs => {
                repaired += 1;
                model_stage::note_repair(cx, repaired, repairs, &why);
                message = model_stage::repair_message(&why);
            }
            Err(Problem::Repairable(why)) => {
                cx.write_file("response.md", response.as_bytes());
                let outcome = model_stage::schema_failure(repaired, &why);
                return tally.finish(outcome, &session);
            }
        }
    };
    cx.write_file("response.md", response.as_bytes());
    if let Some(thread) = &thread {
        cx.run
            .models
            .set_thread(thread, session.conversation().to_vec());
    }
    let outcome = model_stage::with_response(cx, outcome, &response);
    tally.finish(outcome, &session)
}

/// The run's budget, asked before each turn of the session.
struct BudgetGate<'c, 'x>(&'c StageCx<'x>);

impl crate::agent::CallGate for BudgetGate<'_, '_> {
    fn before_call<'g>(
        &'g self,
        spent: crate::model::Spend,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + 'g>> {
        Box::pin(async move {
            super::budget::check(self.0, &spent)
                .await
                .map_err(|stopped| {
                    stopped
                        .failure
                        .map_or_else(|| "stopped at its budget".to_string(), |f| f.message)
                })
        })
    }
}

/// Which model answered last, from the session's `ModelCompleted` reports
/// (the stage's spend is named after it).
#[derive(Default)]
struct Tally {
    /// The provider and model.
    last: Option<(String, String)>,
}

impl Tally {
    /// `outcome` with the stage's spend (every call, compaction's too) and
    /// the files the session wrote (also when it failed: they were
    /// written).
    fn finish(&self, mut outcome: Outcome, session: &Session<'_>) -> Outcome {
        outcome.llm = model_stage::usage(
            self.last.as_ref().map(|(p, m)| (p.as_str(), m.as_str())),
            &session.spend(),
        );
        outcome.files_touched = session.files_touched();
        outcome
    }
}

/// Sends `text` to the session, recording what it reports as run events.
/// A run cancel gives the session [`CANCEL_GRACE`] to stop by itself.
async fn send(
    cx: &StageCx<'_>,
    session: &mut Session<'_>,
    text: &str,
    tally: &mut Tally,
) -> Result<crate::agent::Reply, SessionError> {
    let at = cx.at();
    let recorder = cx.recorder;
    let mut on_event = |event: AgentEvent| {
        if let AgentEvent::ModelCompleted {
            provider, model, ..
        } = &event
        {
            tally.last = Some((provider.clone(), model.clone()));
        }
        if let AgentEvent::ModelCompleted { model, cost, .. } = &event {
            super::budget::note_unpriced(cx, model, *cost);
        }
        if let Some(kind) = event_kind(event) {
            let _ = recorder.emit(kind, at);
        }
    };
    let cancelled = cx.run.cancel.clone();
    let send = session.send(text, &mut on_event);
    tokio::pin!(send);
    tokio::select! {
        result = &mut send => result,
        reason = cancelled.cancelled() => {
            match tokio::time::timeout(CANCEL_GRACE, &mut send).await {
                Ok(result) => result,
                Err(_) => Err(SessionError {
                    kind: SessionErrorKind::Cancelled,
                    message: format!("cancelled ({reason:?})"),
                }),
            }
        }
    }
}

/// The run event for what a session reported; `None` for nothing to record.
pub(super) fn event_kind(event: AgentEvent) -> Option<EventKind> {
    Some(match event {
        AgentEvent::TurnStarted { turn } => EventKind::AgentTurnStarted { turn },
        AgentEvent::Text { turn, text } => EventKind::AgentText { turn, text },
        AgentEvent::Call(call) => return model_stage::call_event(call),
        AgentEvent::ModelCompleted {
            provider,
            model,
            usage,
            cost,
            finish,
            duration,
        } => EventKind::LlmCompleted {
            provider,
            model,
            input_tokens: usage.input,
            output_tokens: usage.output,
            reasoning_tokens: usage.reasoning,
            cache_read_tokens: usage.cache_read,
            cache_write_tokens: usage.cache_write,
            cost,
            finish,
            duration_ms: model_stage::millis(duration),
        },
        AgentEvent::TurnCompleted {
            turn,
            tool_calls,
            usage,
            duration,
        } => EventKind::AgentTurnCompleted {
            turn,
            tool_calls,
            input_tokens: usage.input,
            output_tokens: usage.output,
            duration_ms: model_stage::millis(duration),
        },
        AgentEvent::ToolStarted {
            call_id,
            tool,
            summary,
            arguments,
        } => EventKind::AgentToolStarted {
            call_id,
            tool,
            summary: cut(&summary, ARGUMENT_STRING_BYTES),
            arguments: cut_arguments(&arguments, 0),
        },
        AgentEvent::ToolCompleted {
            call_id,
            tool,
            duration,
            is_error,
            preview,
            output_bytes,
            touched,
        } => EventKind::AgentToolCompleted {
            call_id,
            tool,
            duration_ms: model_stage::millis(duration),
            is_error,
            preview: cut(&preview, PREVIEW_BYTES),
            output_bytes,
            touched,
        },
        AgentEvent::Compacted {
            original_turns,
            preserved_turns,
            estimated_tokens,
            context_window,
        } => EventKind::AgentCompaction {
            original_turns,
            preserved_turns,
            estimated_tokens,
            context_window,
        },
        AgentEvent::CompactionFailed { error } => EventKind::RunNotice {
            message: format!(
                "the agent's conversation could not be compacted, so it goes on uncompacted: {error}"
            ),
        },
        AgentEvent::LoopDetected { pattern_len, tools } => {
            EventKind::AgentLoopDetected { pattern_len, tools }
        }
        AgentEvent::Steered { text } => EventKind::AgentSteered { text },
    })
}

/// `text` cut to at most `max` bytes (on a character boundary), saying how
/// much was cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes cut]", &text[..end], text.len() - end)
}

/// Tool arguments as `agent.tool.started` records them: long strings cut,
/// large arrays and objects shortened, deep nesting elided.
fn cut_arguments(value: &Value, depth: usize) -> Value {
    if depth >= ARGUMENT_DEPTH {
        return Value::String("…".into());
    }
    match value {
        Value::String(s) => Value::String(cut(s, ARGUMENT_STRING_BYTES)),
        Value::Array(items) => {
            let mut out: Vec<Value> = items
                .iter()
                .take(ARGUMENT_ITEMS)
                .map(|v| cut_arguments(v, depth + 1))
                .collect();
            if items.len() > ARGUMENT_ITEMS {
                out.push(Value::String(format!(
                    "… [{} more]",
                    items.len() - ARGUMENT_ITEMS
                )));
            }
            Value::Array(out)
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .take(ARGUMENT_ITEMS)
                .map(|(k, v)| (cut(k, 200), cut_arguments(v, depth + 1)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The stage's outcome for a session that stopped before the model
/// finished.
fn session_failure(cx: &StageCx<'_>, error: &SessionError) -> Outcome {
    match &error.kind {
        SessionErrorKind::Limit => {
            Outcome::failed(FailureClass::BudgetExhausted, error.message.clone())
        }
        SessionErrorKind::Loop => {
            Outcome::failed(FailureClass::CompilationLoop, error.message.clone())
        }
        SessionErrorKind::Llm(e) => model_stage::llm_failure(cx, e),
        SessionErrorKind::Cancelled => {
            Outcome::failed(FailureClass::Canceled, error.message.clone())
        }
    }
}

/// What the agent's `shell` inherits: the run's environment with secrets
/// withheld (as commands get it), and the stage's `WEFT_*` variables.
pub(super) fn tool_env(cx: &StageCx<'_>) -> Vec<(String, String)> {
    let mut env = cx.run.env.clone().unwrap_or_else(|| {
        crate::exec::environment::stage_env(
            &crate::secrets::process_env(),
            &crate::model::EnvPolicy::default(),
        )
        .vars
    });
    let own = [
        ("WEFT_RUN_ID", cx.run.run_id.clone()),
        ("WEFT_NODE_ID", cx.node.id.to_string()),
        ("WEFT_VISIT", cx.visit.to_string()),
    ];
    env.retain(|(k, _)| !own.iter().any(|(name, _)| k == name));
    env.extend(own.into_iter().map(|(k, v)| (k.to_string(), v)));
    env
}

/// The stage's workspace: the run's work dir, its tools stopped with the
/// run.
pub(super) fn workspace(cx: &StageCx<'_>) -> Result<Workspace, Box<Outcome>> {
    Workspace::new(&cx.run.work_dir, &[], cx.run.cancel.child()).map_err(|e| {
        Box::new(Outcome::failed(
            FailureClass::Deterministic,
            format!(
                "cannot use the work directory {}: {e}",
                cx.run.work_dir.display()
            ),
        ))
    })
}

/// An earlier attempt of this stage (a retry, or an attempt a crash cut
/// short) left its transcript: it is kept as `transcript.{n}.jsonl` (and
/// its tool outputs as `tools.{n}/`), numbered in order, so the new
/// attempt starts its own.
pub(super) fn keep_earlier_transcript(cx: &StageCx<'_>) {
    let current = cx.dir.join(TRANSCRIPT_FILE);
    if !current.exists() {
        return;
    }
    let Some(n) = (1..=KEPT_TRANSCRIPTS).find(|n| !cx.dir.join(kept_name(*n)).exists()) else {
        cx.notice(format!(
            "{KEPT_TRANSCRIPTS} earlier transcripts are kept already; this attempt's replaces the last"
        ));
        return;
    };
    let kept = kept_name(n);
    mark_unfinished(&current);
    if let Err(e) = std::fs::rename(&current, cx.dir.join(&kept)) {
        cx.notice(format!(
            "could not keep the earlier transcript as {kept}: {e}"
        ));
        return;
    }
    let tools = cx.dir.join(TOOLS_DIR);
    if tools.is_dir() {
        let _ = std::fs::rename(&tools, cx.dir.join(format!("{TOOLS_DIR}.{n}")));
    }
    cx.notice(format!("an earlier attempt's transcript is kept as {kept}"));
}

/// Ends a transcript whose session never ended (the process running it
/// stopped: a crash, a kill) with an `end` line saying so, so that it
/// reads as the failed attempt it was. Only its last line is read.
fn mark_unfinished(path: &std::path::Path) {
    const TAIL: u64 = 64 * 1024;
    let Ok(tail) = crate::limits::read_tail(path, TAIL) else {
        return;
    };
    let text = String::from_utf8_lossy(&tail);
    let last = text.trim_end().lines().next_back().unwrap_or_default();
    if matches!(serde_json::from_str(last), Ok(Entry::End { .. })) {
        return;
    }
    let end = Entry::End {
        reason: "lost: the process running this attempt stopped before it ended".into(),
    };
    let Ok(mut line) = serde_json::to_string(&end) else {
        return;
    };
    // A line the crash cut short is ended first, so the new one parses.
    if !text.is_empty() && !text.ends_with('\n') {
        line.insert(0, '\n');
    }
    line.push('\n');
    let _ = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut file| std::io::Write::write_all(&mut file, line.as_bytes()));
}

/// The name an earlier transcript is kept under.
pub(crate) fn kept_name(n: u32) -> String {
    format!("transcript.{n}.jsonl")
}

/// The session's limits and permissions: the node's attributes, else
/// `[run.agent]`, else the defaults.
fn settings(cx: &StageCx<'_>) -> Result<(Limits, Permissions), String> {
    let attrs = &cx.node.attrs;
    let run = &cx.run.agent;
    let positive = |key: &str| -> Result<Option<u64>, String> {
        match attrs.value(key) {
            None => Ok(None),
            Some(v) => match v.as_int().and_then(|n| u64::try_from(n).ok()) {
                Some(n) if n > 0 => Ok(Some(n)),
                _ => Err(format!("`{key}` must be a whole number of 1 or more")),
            },
        }
    };
    let mut limits = Limits::default();
    if let Some(n) = positive("max_turns")?.or(run.max_turns.map(u64::from)) {
        limits.max_turns = u32::try_from(n).unwrap_or(u32::MAX);
    }
    if let Some(n) = positive("max_tool_rounds")?.or(run.max_tool_rounds.map(u64::from)) {
        limits.max_tool_rounds = u32::try_from(n).unwrap_or(u32::MAX);
    }
    limits.max_tokens = positive("max_stage_tokens")?.or(run.max_stage_tokens);
    limits.timeout = match attrs
        .value("timeout")
        .and_then(crate::lang::value::Value::as_duration)
    {
        Some(d) => Some(d.to_std()),
        None => run_timeout(run)?,
    };
    let permissions = match attrs.non_empty("permissions") {
        Some(text) => Permissions::parse(&text).ok_or_else(|| bad_permissions(&text))?,
        None => match &run.permissions {
            Some(text) => Permissions::parse(text).ok_or_else(|| bad_permissions(text))?,
            None => Permissions::default(),
        },
    };
    Ok((limits, permissions))
}

fn bad_permissions(text: &str) -> String {
    format!("invalid permissions `{text}`: use `read-only`, `read-write` or `full`")
}

fn run_timeout(run: &AgentDefaults) -> Result<Option<Duration>, String> {
    run.timeout
        .as_deref()
        .map(|t| {
            crate::lang::value::Duration::parse(t)
                .map(crate::lang::value::Duration::to_std)
                .ok_or_else(|| {
                    format!("[run.agent] timeout = \"{t}\" is not a duration (write e.g. \"30m\")")
                })
        })
        .transpose()
}

/// Checks `[run.agent]` before a run starts: counts of 1 or more, a
/// duration, a permission level.
///
/// # Errors
/// The first problem, worded for the user.
pub(crate) fn check_defaults(agent: &AgentDefaults) -> Result<(), String> {
    for (key, value) in [
        ("max_turns", agent.max_turns.map(u64::from)),
        ("max_tool_rounds", agent.max_tool_rounds.map(u64::from)),
        ("max_stage_tokens", agent.max_stage_tokens),
    ] {
        if value == Some(0) {
            return Err(format!("[run.agent] {key} must be 1 or more"));
        }
    }
    run_timeout(agent)?;
    if let Some(p) = &agent.permissions
        && Permissions::parse(p).is_none()
    {
        return Err(format!("[run.agent] {}", bad_permissions(p)));
    }
    if let Some(backend) = &agent.backend
        && !["api", "acp", "cli"].contains(&backend.as_str())
    {
        return Err(format!(
            "[run.agent] backend = \"{backend}\": use \"api\" (Weft's own agent), \"acp\" or \"cli\""
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_argument_strings_are_cut_and_say_how_much() {
        let content = "é".repeat(ARGUMENT_STRING_BYTES);
        let args = serde_json::json!({"path": "a.txt", "content": content});
        let cut = cut_arguments(&args, 0);
        let kept = cut["content"].as_str().expect("a string");
        assert!(kept.len() < ARGUMENT_STRING_BYTES + 40, "{}", kept.len());
        assert!(kept.ends_with("bytes cut]"), "{kept}");
        assert_eq!(cut["path"], "a.txt", "short strings are kept");
    }

    #[test]
    fn deep_and_wide_arguments_are_bounded() {
        let mut deep = serde_json::json!("bottom");
        for _ in 0..50 {
            deep = serde_json::json!([deep]);
        }
        let text = cut_arguments(&deep, 0).to_string();
        assert!(!text.contains("bottom"), "nesting past the limit is elided");
        let wide = Value::Array((0..500).map(Value::from).collect());
        let cut = cut_arguments(&wide, 0);
        assert_eq!(cut.as_array().map(Vec::len), Some(ARGUMENT_ITEMS + 1));
    }

    #[test]
    fn run_agent_defaults_are_checked() {
        assert!(check_defaults(&AgentDefaults::default()).is_ok());
        let zero = AgentDefaults {
            max_turns: Some(0),
            ..AgentDefaults::default()
        };
        assert!(
            check_defaults(&zero)
                .expect_err("zero")
                .contains("max_turns")
        );
        let perms = AgentDefaults {
            permissions: Some("admin".into()),
            ..AgentDefaults::default()
        };
        assert!(
            check_defaults(&perms)
                .expect_err("bad")
                .contains("read-only")
        );
        let timeout = AgentDefaults {
            timeout: Some("soon".into()),
            ..AgentDefaults::default()
        };
        assert!(
            check_defaults(&timeout)
                .expect_err("bad")
                .contains("duration")
        );
    }

    #[test]
    fn a_transcript_cut_short_is_ended_as_lost_and_an_ended_one_is_left_alone() {
        let dir = tempfile::tempdir().expect("temp");
        let cut = dir.path().join("cut.jsonl");
        std::fs::write(&cut, "{\"type\":\"user\",\"text\":\"x\"}\n{\"type\":\"assi")
            .expect("write");
        mark_unfinished(&cut);
        let text = std::fs::read_to_string(&cut).expect("read");
        let last = text.lines().last().expect("a line");
        assert!(
            matches!(serde_json::from_str(last), Ok(Entry::End { reason }) if reason.starts_with("lost")),
            "{text}"
        );
        let ended = dir.path().join("ended.jsonl");
        let done = "{\"type\":\"end\",\"reason\":\"completed\"}\n";
        std::fs::write(&ended, done).expect("write");
        mark_unfinished(&ended);
        assert_eq!(std::fs::read_to_string(&ended).expect("read"), done);
    }
}
