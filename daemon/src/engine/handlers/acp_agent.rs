//! Agent nodes with `backend="acp"`: an external coding agent (Claude Code,
//! Codex, Gemini CLI through their ACP adapters, or any program speaking
//! the Agent Client Protocol) does the stage's work in the work dir, driven
//! through [`crate::agent::acp`]. See docs/agents.md, "External agents".
//!
//! Shared with Weft's own agent: the prompt (preamble + prompt), the
//! reading of the reply (routing directives, `output_schema` with repair
//! turns, sent as further prompts of the same session), the `agent.*`
//! events and `transcript.jsonl`, earlier attempts' transcripts kept.
//! Its own:
//! - which program: `acp.command`, else the profile `acp.agent`, else the
//!   profile of the node's provider (`anthropic` → `claude`, `openai` →
//!   `codex`, `gemini` → `gemini`);
//! - its permission requests, decided by `acp.permissions`;
//! - `files_touched`: what it wrote through `fs/write_text_file`, merged
//!   with what a git snapshot of the work dir before and after shows (it
//!   may write files itself);
//! - a `thread_id` at full fidelity keeps the agent and its session for the
//!   thread's next stage ([`super::acp_threads`]).

use std::collections::BTreeSet;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::StageCx;
use super::model_stage::{self, Problem, Prompt, Schema};
use crate::agent::acp::{
    AcpAgent, AcpConfig, AcpError, AcpErrorKind, Host, PermissionAnswer, PermissionOption,
    PermissionRequest, Setting,
};
use crate::agent::{AgentEvent, transcript::Entry};
use crate::engine::interviewer::{Answer, Choice, Question};
use crate::exec::interactive::Program;
use crate::model::EventKind;
use crate::model::{FailureClass, Outcome, Spend};
use crate::store::{QuestionRecord, QuestionStatus};

/// The agent says nothing for this long while Weft waits: it hangs
/// (`acp.stall_timeout` changes it; `cli.stall_timeout` for the CLI
/// backend).
const STALL_TIMEOUT: Duration = Duration::from_secs(300);

/// `initialize` and `session/new` must be done within this (an adapter
/// may start a Node.js program and its bundled CLI).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// After `session/cancel`, how long the agent gets to end its turn.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// After the stage, how long the agent gets to exit once its stdin closes.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// The program a stage runs, and what goes with it.
#[derive(Debug)]
struct Agent {
    name: String,
    program: String,
    args: Vec<String>,
    /// The caller's variables it may see.
    keys: Vec<String>,
    /// Variables set for it (its profile's `env`).
    env: Vec<(String, String)>,
    /// `acp.model`, else its profile's.
    model: Option<String>,
    /// `acp.mode`, else its profile's.
    mode: Option<String>,
    /// Its profile's policy, when the node sets none.
    permissions: Option<String>,
}

/// Runs one attempt of an ACP agent stage.
pub async fn run(cx: &StageCx<'_>) -> Outcome {
    if cx.run.dry_run {
        return super::dry_run::simulate(cx);
    }
    let agent = match agent_of(cx) {
        Ok(agent) => agent,
        Err(why) => return Outcome::failed(FailureClass::Deterministic, why),
    };
    let policy = match Policy::of(cx, agent.permissions.as_deref()) {
        Ok(policy) => policy,
        Err(why) => return Outcome::failed(FailureClass::Deterministic, why),
    };
    let stall_timeout = match stall_timeout(cx, "acp.stall_timeout") {
        Ok(timeout) => timeout,
        Err(why) => return Outcome::failed(FailureClass::Deterministic, why),
    };
    let Prompt { text, fidelity } = Prompt::build(cx);
    let thread = model_stage::thread(cx, fidelity);
    super::agent::keep_earlier_transcript(cx);
    let workspace = match super::agent::workspace(cx) {
        Ok(workspace) => workspace,
        Err(failure) => return *failure,
    };
    let base_env = super::agent::tool_env(cx);
    let caller = cx.run.models.env();
    let mut env: Vec<(String, String)> = caller
        .into_iter()
        .filter(|(k, v)| agent.keys.contains(k) && !v.is_empty())
        .collect();
    env.extend(agent.env.iter().cloned());
    let config = AcpConfig {
        program: Program {
            program: agent.program.clone(),
            args: agent.args.clone(),
            work_dir: workspace.root().to_path_buf(),
            base_env: base_env.clone(),
            env,
            group_record: Some(cx.dir.join(crate::exec::process::GROUP_RECORD)),
        },
        name: agent.name.clone(),
        stall_timeout,
        start_timeout: START_TIMEOUT,
        cancel_grace: CANCEL_GRACE,
        record_dir: Some(cx.dir.to_path_buf()),
        terminal_env: base_env,
    };
    let before = crate::git::snapshot::changed_files(&cx.run.work_dir);
    let group_record = cx.dir.join(crate::exec::process::GROUP_RECORD);
    let kept = thread.as_deref().and_then(|t| cx.run.acp_threads.take(t));
    let (mut session, continued) = match kept {
        Some(mut kept)
            if kept.config().program.program == config.program.program
                && kept.config().program.args == config.program.args =>
        {
            kept.continue_in(cx.dir, Some(&group_record));
            (kept, true)
        }
        other => {
            // A thread's agent replaced by another program ends here.
            if let Some(other) = other {
                other.stop(EXIT_GRACE).await;
            }
            match AcpAgent::start(config, workspace, &cx.run.cancel).await {
                Ok(session) => (session, false),
                Err(error) => return failure(&error),
            }
        }
    };
    if !continued {
        let settings = [(Setting::Mode, &agent.mode), (Setting::Model, &agent.model)];
        for (what, value) in settings {
            let Some(value) = value else { continue };
            match session.choose(what, value, &cx.run.cancel).await {
                Ok(true) => {}
                Ok(false) => cx.notice(format!(
                    "the agent {} offers no choice of {}; `{value}` not applied",
                    agent.name,
                    if what == Setting::Model {
                        "model"
                    } else {
                        "mode"
                    }
                )),
                Err(error) => {
                    session.stop(EXIT_GRACE).await;
                    return failure(&error);
                }
            }
        }
    }
    if let (Some(thread), true) = (&thread, continued) {
        cx.notice(format!(
            "the agent {} continues its session of thread `{thread}`",
            agent.name
        ));
    }
    record_session_start(cx, &mut session, &agent, policy);
    interrupt_stale_questions(cx);
    let host = StageHost {
        cx,
        policy,
        agent: agent.name.clone(),
    };
    let schema = Schema::of(cx);
    let repairs = model_stage::repair_turns(cx);
    let mut spend = Spend::default();
    let mut message = text;
    let mut repaired = 0u32;
    // The session failed (exited, stalled, cancelled…): never kept.
    let mut broken = false;
    let ended = loop {
        // External agents report their spend per prompt: the budget is
        // held before each one.
        if let Err(stopped) = super::budget::check(cx, &spend).await {
            break Err(stopped);
        }
        let at = cx.at();
        let mut on_event = |event: AgentEvent| {
            if let Some(kind) = super::agent::event_kind(event) {
                let _ = cx.recorder.emit(kind, at);
            }
        };
        let reply = match session
            .prompt(&message, &host, &cx.run.cancel, &mut on_event)
            .await
        {
            Ok(reply) => reply,
            Err(error) => {
                broken = true;
                break Err(failure(&error));
            }
        };
        spend.add_call(reply.usage, reply.cost);
        super::budget::note_unpriced(cx, &agent.name, reply.cost);
        let response = reply.text;
        if reply.stop_reason == "refusal" {
            cx.write_file("response.md", response.as_bytes());
            break Err(Outcome::failed(
                FailureClass::Deterministic,
                format!("the agent {} refused the prompt", agent.name),
            ));
        }
        match model_stage::check(cx, &schema, &response) {
            Ok(outcome) => break Ok((outcome, response)),
            Err(Problem::Fatal(why)) => {
                cx.write_file("response.md", response.as_bytes());
                break Err(Outcome::failed(FailureClass::Deterministic, why));
            }
            Err(Problem::Repairable(why)) if repaired < repairs => {
                repaired += 1;
                model_stage::note_repair(cx, repaired, repairs, &why);
                message = model_stage::repair_message(&why);
            }
            Err(Problem::Repairable(why)) => {
                cx.write_file("response.md", response.as_bytes());
                break Err(model_stage::schema_failure(repaired, &why));
            }
        }
    };
    let written = session.files_written();
    session.record(&Entry::End {
        reason: match &ended {
            Ok(_) => "completed".to_string(),
            Err(outcome) => outcome
                .failure
                .as_ref()
                .map_or_else(|| "failed".to_string(), |f| f.message.clone()),
        },
    });
    match &thread {
        Some(thread) if !broken => cx.run.acp_threads.keep(thread, session).await,
        _ => session.stop(EXIT_GRACE).await,
    }
    let mut outcome = match ended {
        Ok((outcome, response)) => {
            cx.write_file("response.md", response.as_bytes());
            model_stage::with_response(cx, outcome, &response)
        }
        Err(outcome) => outcome,
    };
    let mut touched: BTreeSet<String> = written.into_iter().collect();
    if let (Some(before), Some(after)) = (
        before,
        crate::git::snapshot::changed_files(&cx.run.work_dir),
    ) {
        touched.extend(crate::git::snapshot::touched(&before, &after));
    }
    outcome.files_touched = touched.into_iter().collect();
    outcome.llm = model_stage::usage(Some(("acp", &agent.name)), &spend);
    outcome
}

/// The node's stall timeout `attr` (`acp.stall_timeout`,
/// `cli.stall_timeout`), else [`STALL_TIMEOUT`].
pub(super) fn stall_timeout(cx: &StageCx<'_>, attr: &str) -> Result<Duration, String> {
    match cx.node.attrs.value(attr) {
        None => Ok(STALL_TIMEOUT),
        Some(v) => match v.as_duration() {
            Some(d) if d.to_std() > Duration::ZERO => Ok(d.to_std()),
            _ => Err(format!("`{attr}` must be a duration such as 5m")),
        },
    }
}

/// The stage's outcome for a session that failed.
fn failure(error: &AcpError) -> Outcome {
    let class = match error.kind {
        AcpErrorKind::Cancelled => FailureClass::Canceled,
        // A crash or a hang may not happen again.
        AcpErrorKind::Exited | AcpErrorKind::Stalled => FailureClass::TransientInfra,
        AcpErrorKind::Start | AcpErrorKind::Protocol | AcpErrorKind::Failed => {
            FailureClass::Deterministic
        }
    };
    Outcome::failed(class, error.message.clone())
}

/// The program of the stage: `acp.command`, else the ACP program of the
/// external agent `acp.agent` (else the one of the node's provider), with
/// that agent's keys, environment, model and policy.
fn agent_of(cx: &StageCx<'_>) -> Result<Agent, String> {
    let attrs = &cx.node.attrs;
    let agents = cx.run.models.external_agents()?;
    let command = attrs.non_empty("acp.command");
    let name = match attrs.non_empty("acp.agent") {
        Some(name) => Some(name.to_string()),
        None if command.is_some() => None,
        None => match attrs
            .non_empty("provider")
            .map(|p| p.into_owned())
            .or_else(|| cx.run.models.choice().provider.clone())
            .as_deref()
        {
            Some("anthropic") => Some("claude".to_string()),
            Some("openai") => Some("codex".to_string()),
            Some("gemini") => Some("gemini".to_string()),
            _ => {
                return Err(
                    "an agent with backend=\"acp\" needs `acp.agent` (claude, codex, gemini or an agent of settings.toml) or `acp.command` (the program and its arguments)"
                        .to_string(),
                );
            }
        },
    };
    let profile = match name.as_deref() {
        None => None,
        Some(name) => Some(agents.get(name).ok_or_else(|| {
            format!(
                "unknown `acp.agent` `{name}`: use {} (settings.toml's [agents.NAME] adds more), or give the program with `acp.command`",
                agents.names().join(", ")
            )
        })?),
    };
    let words = match (&command, profile) {
        (Some(command), _) => split_command(command)?,
        (None, Some(profile)) => profile.command.clone(),
        (None, None) => Vec::new(),
    };
    let mut words = words.into_iter();
    let program = words.next().ok_or_else(|| match &name {
        Some(name) if command.is_none() => format!(
            "the agent {name} has no ACP program: give it `command` under [agents.{name}] in settings.toml, or set `acp.command`"
        ),
        _ => "`acp.command` is empty".to_string(),
    })?;
    let program_name = std::path::Path::new(&program)
        .file_name()
        .map_or_else(|| program.clone(), |n| n.to_string_lossy().into_owned());
    Ok(Agent {
        name: name.unwrap_or(program_name),
        program,
        args: words.collect(),
        keys: profile.map(|p| p.keys.clone()).unwrap_or_default(),
        env: profile.map(|p| p.env.clone()).unwrap_or_default(),
        model: attrs
            .non_empty("acp.model")
            .map(|m| m.to_string())
            .or_else(|| profile.and_then(|p| p.model.clone())),
        mode: attrs
            .non_empty("acp.mode")
            .map(|m| m.to_string())
            .or_else(|| profile.and_then(|p| p.mode.clone())),
        permissions: profile.and_then(|p| p.permissions.clone()),
    })
}

/// A command line split into words: spaces separate, single and double
/// quotes group, a backslash escapes the next character. No expansion.
fn split_command(command: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (Some(q), c) if c == q => quote = None,
            (Some('\''), c) => word.push(c),
            (_, '\\') => {
                in_word = true;
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            (_, c) => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if quote.is_some() {
        return Err(format!("`acp.command` has an unclosed quote: {command}"));
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// How the stage answers the agent's permission requests
/// (`acp.permissions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Policy {
    /// Yes, when everything it names is inside the work dir; otherwise no.
    /// The default: the agent works in the run's work dir (a worktree of
    /// its own in checkpoint mode), as Weft's own agent does.
    Allow,
    /// Always no.
    Deny,
    /// A person decides, as at a human gate; `acp.permission_timeout`
    /// bounds the wait, after which `acp.permission_default` (`reject`
    /// unless set to `allow`) answers.
    Ask {
        timeout: Option<Duration>,
        allow_by_default: bool,
    },
}

impl Policy {
    /// The node's `acp.permissions`, else its agent's `permissions`.
    fn of(cx: &StageCx<'_>, agent_default: Option<&str>) -> Result<Policy, String> {
        let attrs = &cx.node.attrs;
        let chosen = attrs
            .non_empty("acp.permissions")
            .map(|p| p.to_string())
            .or_else(|| agent_default.map(str::to_string));
        match chosen.as_deref() {
            None | Some("allow") => Ok(Policy::Allow),
            Some("deny") => Ok(Policy::Deny),
            Some("ask") => {
                let timeout = match attrs.value("acp.permission_timeout") {
                    None => None,
                    Some(v) => match v.as_duration() {
                        Some(d) if d.to_std() > Duration::ZERO => Some(d.to_std()),
                        _ => {
                            return Err("`acp.permission_timeout` must be a duration such as 10m"
                                .to_string());
                        }
                    },
                };
                let allow_by_default = match attrs.non_empty("acp.permission_default").as_deref() {
                    None | Some("reject") => false,
                    Some("allow") => true,
                    Some(other) => {
                        return Err(format!(
                            "invalid `acp.permission_default` `{other}`: use `allow` or `reject`"
                        ));
                    }
                };
                Ok(Policy::Ask {
                    timeout,
                    allow_by_default,
                })
            }
            Some(other) => Err(format!(
                "invalid `acp.permissions` `{other}`: use `allow`, `deny` or `ask`"
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Policy::Allow => "allow",
            Policy::Deny => "deny",
            Policy::Ask { .. } => "ask",
        }
    }
}

/// The option of one of `kinds` (in order of preference).
fn option_of<'r>(request: &'r PermissionRequest, kinds: &[&str]) -> Option<&'r PermissionOption> {
    kinds
        .iter()
        .find_map(|kind| request.options.iter().find(|o| o.kind == *kind))
}

const ALLOW: &[&str] = &["allow_once", "allow_always"];
const REJECT: &[&str] = &["reject_once", "reject_always"];

struct StageHost<'a, 'b> {
    cx: &'a StageCx<'b>,
    policy: Policy,
    /// The agent's name, for the question.
    agent: String,
}

impl Host for StageHost<'_, '_> {
    fn permission(&self, request: PermissionRequest) -> BoxFuture<'_, PermissionAnswer> {
        Box::pin(async move {
            if let Policy::Ask {
                timeout,
                allow_by_default,
            } = self.policy
            {
                return ask_person(self.cx, &self.agent, &request, timeout, allow_by_default).await;
            }
            let root = self
                .cx
                .run
                .work_dir
                .canonicalize()
                .unwrap_or_else(|_| self.cx.run.work_dir.clone());
            // Absolute, under the work dir, and no `..` that could climb out
            // of it (`starts_with` compares components as written).
            let inside = request.locations.iter().all(|path| {
                let path = std::path::Path::new(path);
                path.is_absolute()
                    && path.starts_with(&root)
                    && !path
                        .components()
                        .any(|c| matches!(c, std::path::Component::ParentDir))
            });
            let allow = self.policy == Policy::Allow && inside;
            let wanted = if allow {
                ["allow_once", "allow_always"]
            } else {
                ["reject_once", "reject_always"]
            };
            let pick = option_of(&request, &wanted);
            let answer = match pick {
                Some(option) => PermissionAnswer::Selected(option.id.clone()),
                None => PermissionAnswer::Cancelled,
            };
            let said = match &answer {
                PermissionAnswer::Selected(id) => format!("`{id}`"),
                PermissionAnswer::Cancelled => "no option fits, so cancelled".to_string(),
            };
            let why = if self.policy == Policy::Allow && !inside {
                " (it names a path outside the work dir)"
            } else {
                ""
            };
            self.cx.notice(format!(
                "the agent asked for permission: {}; answered {said} by acp.permissions={}{why}",
                request.title,
                self.policy.name()
            ));
            answer
        })
    }
}

/// The transcript's first line for the session and a notice of who runs.
fn record_session_start(cx: &StageCx<'_>, session: &mut AcpAgent, agent: &Agent, policy: Policy) {
    cx.notice(format!(
        "the external agent {} ({}) works in {}",
        agent.name,
        agent.program,
        cx.run.work_dir.display()
    ));
    session.record(&Entry::Session {
        provider: "acp".to_string(),
        model: agent.model.clone().unwrap_or_else(|| agent.name.clone()),
        profile: agent.program.clone(),
        tools: Vec::new(),
        permissions: policy.name().to_string(),
    });
}

/// A permission request put to a person as a question of the stage: its
/// options are the agent's, the answer goes back to it. A timeout takes the
/// default; a question nobody can answer (interrupted, skipped) is a
/// rejection; a cancelled run cancels it.
async fn ask_person(
    cx: &StageCx<'_>,
    agent: &str,
    request: &PermissionRequest,
    timeout: Option<Duration>,
    allow_by_default: bool,
) -> PermissionAnswer {
    let default = option_of(request, if allow_by_default { ALLOW } else { REJECT });
    let mut context = format!("The agent {agent} wants to {}", request.kind);
    if !request.locations.is_empty() {
        context.push_str(&format!(" ({})", request.locations.join(", ")));
    }
    if !request.raw_input.is_null() {
        context.push_str(&format!(
            "\n{}",
            crate::util::text::truncate(&request.raw_input.to_string(), 1500)
        ));
    }
    let question = Question {
        id: ulid::Ulid::generate().to_string(),
        node_id: cx.node.id.to_string(),
        text: format!("{agent} asks permission: {}", request.title),
        context: Some(context),
        choices: request
            .options
            .iter()
            .map(|o| Choice {
                key: None,
                label: o.name.clone(),
                text: o.name.clone(),
                target: String::new(),
            })
            .collect(),
        freeform: false,
        timeout_ms: timeout.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        default_choice: timeout.and(default.map(|o| o.name.clone())),
    };
    // The same request in parts, for the app to show as a permission
    // request rather than a plain question.
    let (command, input) = crate::model::PermissionAsk::input_of(&request.raw_input);
    let permission = crate::model::PermissionAsk {
        agent: agent.to_string(),
        tool_kind: request.kind.clone(),
        title: request.title.clone(),
        locations: request.locations.clone(),
        command,
        input,
        options: request
            .options
            .iter()
            .map(|o| crate::model::PermissionChoice {
                label: o.name.clone(),
                kind: o.kind.clone(),
            })
            .collect(),
    };
    let record = QuestionRecord {
        id: question.id.clone(),
        run_id: cx.run.run_id.clone(),
        node_id: question.node_id.clone(),
        visit: cx.visit,
        text: question.text.clone(),
        options: question.choices.iter().map(|c| c.label.clone()).collect(),
        freeform: false,
        status: QuestionStatus::Pending,
        answer: None,
        asked_at: crate::store::timestamp(),
        answered_at: None,
        permission: Some(permission),
    };
    let asked = super::ask::ask_recorded(cx, &question, Some(&record), timeout).await;
    let settle = |status: QuestionStatus, answer: serde_json::Value| {
        let _ = cx
            .recorder
            .store()
            .answer_question(&question.id, status, Some(&answer));
    };
    let reject = || {
        option_of(request, REJECT).map_or(PermissionAnswer::Cancelled, |o| {
            PermissionAnswer::Selected(o.id.clone())
        })
    };
    match asked {
        super::ask::Asked::Answer(Answer::Choice(i)) => match request.options.get(i) {
            Some(option) => {
                settle(
                    QuestionStatus::Answered,
                    serde_json::json!({"choice": option.name}),
                );
                let _ = cx.recorder.emit(
                    EventKind::InterviewCompleted {
                        question_id: question.id.clone(),
                        selected: option.name.clone(),
                        text: None,
                    },
                    cx.at(),
                );
                PermissionAnswer::Selected(option.id.clone())
            }
            None => reject(),
        },
        super::ask::Asked::Answer(
            Answer::Freeform(_) | Answer::Skipped | Answer::Interrupted(_),
        ) => {
            settle(
                QuestionStatus::Interrupted,
                serde_json::json!({"interrupted": "no option was chosen"}),
            );
            let _ = cx.recorder.emit(
                EventKind::InterviewInterrupted {
                    question_id: question.id.clone(),
                    reason: "no option was chosen; the agent is refused".to_string(),
                },
                cx.at(),
            );
            reject()
        }
        super::ask::Asked::TimedOut(after) => {
            settle(
                QuestionStatus::TimedOut,
                serde_json::json!({"default_choice": default.map(|o| o.name.clone())}),
            );
            let _ = cx.recorder.emit(
                EventKind::InterviewTimeout {
                    question_id: question.id.clone(),
                    default_choice: default.map(|o| o.name.clone()),
                },
                cx.at(),
            );
            cx.notice(format!(
                "no answer to the agent's permission request within {after}; answered `{}` (acp.permission_default)",
                default.map_or("cancelled", |o| o.id.as_str())
            ));
            default.map_or(PermissionAnswer::Cancelled, |o| {
                PermissionAnswer::Selected(o.id.clone())
            })
        }
        super::ask::Asked::Cancelled(reason) => {
            settle(
                QuestionStatus::Interrupted,
                serde_json::json!({"cancelled": reason}),
            );
            PermissionAnswer::Cancelled
        }
    }
}

/// Permission questions of this stage visit left pending by an attempt
/// that stopped (a crash, a kill): the agent that asked is gone, so they
/// are closed rather than left in the inbox.
fn interrupt_stale_questions(cx: &StageCx<'_>) {
    let pending = cx
        .recorder
        .store()
        .questions(Some(&cx.run.run_id), true)
        .unwrap_or_default();
    for question in pending
        .iter()
        .filter(|q| *q.node_id == *cx.node.id && q.visit == cx.visit)
    {
        let _ = cx.recorder.store().answer_question(
            &question.id,
            QuestionStatus::Interrupted,
            Some(&serde_json::json!({"interrupted": "the agent that asked was stopped"})),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::split_command;

    #[test]
    fn a_command_splits_on_spaces_with_quotes_grouping_and_backslashes_escaping() {
        let words = |c: &str| split_command(c).expect("valid");
        assert_eq!(words("agent --acp  --fast"), ["agent", "--acp", "--fast"]);
        assert_eq!(
            words(r#"'/opt/my agent/bin' "--name=a b" c\ d"#),
            ["/opt/my agent/bin", "--name=a b", "c d"]
        );
        assert_eq!(words(r#"a "" 'b'"#), ["a", "", "b"]);
        assert_eq!(words(r#"'$HOME' "x\"y""#), ["$HOME", "x\"y"]);
        assert_eq!(words("   "), Vec::<String>::new());
        assert!(
            split_command("agent 'open")
                .expect_err("unclosed")
                .contains("unclosed quote")
        );
    }
}
