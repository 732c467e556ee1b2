//! Agent nodes with `backend="cli"`: a coding agent's own headless command
//! line (`claude -p`, `codex exec`, `gemini -p`) does the stage's work in
//! the work dir, one process per turn, driven through
//! [`crate::agent::cli`]. See docs/agents.md, "Headless CLI agents".
//!
//! Shared with the ACP backend: the prompt, the reading of the reply
//! (routing, `output_schema` with repair turns), the `agent.*` events and
//! `transcript.jsonl`, the provider keys of each agent (passed to its
//! process alone), `files_touched` from a git snapshot. Its own:
//! - which program: `cli.agent`, else the node's provider (`anthropic` →
//!   `claude`, `openai` → `codex`, `gemini` → `gemini`); `cli.command`
//!   replaces the program's path, never Weft's flags;
//! - no permission questions: each program runs with its own "approve
//!   everything" mode, confined to the work dir as far as it confines
//!   itself (see docs);
//! - a repair turn resumes the program's session (`--resume <id>`, codex
//!   `exec resume <id>`).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use super::StageCx;
use super::model_stage::{self, Problem, Prompt, Schema};
use crate::agent::cli::{CliAgent, CliConfig, CliError, CliErrorKind, Flavor};
use crate::agent::external::ExternalAgent;
use crate::agent::{AgentEvent, transcript::Entry};
use crate::exec::interactive::Program;
use crate::model::{FailureClass, Outcome, Spend};

/// After SIGTERM (a cancelled run, a stall), how long the program gets to
/// exit before its group is killed.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// Runs one attempt of a CLI agent stage.
pub async fn run(cx: &StageCx<'_>) -> Outcome {
    if cx.run.dry_run {
        return super::dry_run::simulate(cx);
    }
    let flavor = match flavor_of(cx) {
        Ok(flavor) => flavor,
        Err(why) => return Outcome::failed(FailureClass::Deterministic, why),
    };
    let stall_timeout = match super::acp_agent::stall_timeout(cx, "cli.stall_timeout") {
        Ok(timeout) => timeout,
        Err(why) => return Outcome::failed(FailureClass::Deterministic, why),
    };
    let profile = match cx.run.models.external_agents() {
        Ok(agents) => agents.get(flavor.program()).cloned(),
        Err(why) => return Outcome::failed(FailureClass::Deterministic, why),
    };
    // `cli.command` (a path), else the agent's `cli_command` of
    // settings.toml, else the program's usual name.
    let mut words = match cx.node.attrs.non_empty("cli.command") {
        Some(command) => vec![command.to_string()],
        None => profile
            .as_ref()
            .map(|p| p.cli_command.clone())
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| vec![flavor.program().to_string()]),
    }
    .into_iter();
    let command = words.next().unwrap_or_else(|| flavor.program().to_string());
    let model = cx
        .node
        .attrs
        .non_empty("model")
        .map(|m| m.to_string())
        .or_else(|| profile.as_ref().and_then(|p| p.model.clone()));
    let Prompt { text, .. } = Prompt::build(cx);
    super::agent::keep_earlier_transcript(cx);
    let workspace = match super::agent::workspace(cx) {
        Ok(workspace) => workspace,
        Err(failure) => return *failure,
    };
    let config = CliConfig {
        flavor,
        program: Program {
            program: command.clone(),
            args: words.collect(),
            work_dir: workspace.root().to_path_buf(),
            base_env: base_env(cx, flavor),
            env: child_env(cx, flavor, profile.as_ref()),
            group_record: Some(cx.dir.join(crate::exec::process::GROUP_RECORD)),
        },
        name: command.clone(),
        model: model.clone(),
        stall_timeout,
        cancel_grace: CANCEL_GRACE,
        record_dir: Some(cx.dir.to_path_buf()),
    };
    let before = crate::git::snapshot::changed_files(&cx.run.work_dir);
    let mut agent = CliAgent::new(config);
    cx.notice(format!(
        "the CLI agent {} ({command}) works in {}",
        flavor.program(),
        cx.run.work_dir.display()
    ));
    agent.record(&Entry::Session {
        provider: "cli".to_string(),
        model: model
            .clone()
            .unwrap_or_else(|| flavor.program().to_string()),
        profile: command.clone(),
        tools: Vec::new(),
        permissions: permissions(flavor).to_string(),
    });
    let schema = Schema::of(cx);
    let repairs = model_stage::repair_turns(cx);
    let mut spend = Spend::default();
    let mut answered_by = model.unwrap_or_else(|| flavor.program().to_string());
    let mut message = text;
    let mut repaired = 0u32;
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
        let reply = match agent.prompt(&message, &cx.run.cancel, &mut on_event).await {
            Ok(reply) => reply,
            Err(error) => break Err(failure(&error)),
        };
        spend.add_call(reply.usage, reply.cost);
        if let Some(model) = reply.model {
            answered_by = model;
        }
        super::budget::note_unpriced(cx, &answered_by, reply.cost);
        let response = reply.text;
        match model_stage::check(cx, &schema, &response) {
            Ok(outcome) => break Ok((outcome, response)),
            Err(Problem::Fatal(why)) => {
                cx.write_file("response.md", response.as_bytes());
                break Err(Outcome::failed(FailureClass::Deterministic, why));
            }
            // A repair must continue the same conversation: without the
            // program's session id there is none to resume.
            Err(Problem::Repairable(why)) if repaired < repairs && agent.session_id().is_some() => {
                repaired += 1;
                model_stage::note_repair(cx, repaired, repairs, &why);
                message = model_stage::repair_message(&why);
            }
            Err(Problem::Repairable(why)) => {
                if repaired < repairs {
                    cx.notice(format!(
                        "{command} named no session to resume, so the reply cannot be repaired"
                    ));
                }
                cx.write_file("response.md", response.as_bytes());
                break Err(model_stage::schema_failure(repaired, &why));
            }
        }
    };
    agent.record(&Entry::End {
        reason: match &ended {
            Ok(_) => "completed".to_string(),
            Err(outcome) => outcome
                .failure
                .as_ref()
                .map_or_else(|| "failed".to_string(), |f| f.message.clone()),
        },
    });
    let mut outcome = match ended {
        Ok((outcome, response)) => {
            cx.write_file("response.md", response.as_bytes());
            model_stage::with_response(cx, outcome, &response)
        }
        Err(outcome) => outcome,
    };
    let mut touched: BTreeSet<String> = agent
        .files_changed()
        .iter()
        .map(|path| workspace.relative(Path::new(path)))
        .collect();
    if let (Some(before), Some(after)) = (
        before,
        crate::git::snapshot::changed_files(&cx.run.work_dir),
    ) {
        touched.extend(crate::git::snapshot::touched(&before, &after));
    }
    outcome.files_touched = touched.into_iter().collect();
    if spend.calls > 0 {
        outcome.llm = model_stage::usage(Some(("cli", &answered_by)), &spend);
    }
    outcome
}

/// The program: `cli.agent`, else the one of the node's provider.
fn flavor_of(cx: &StageCx<'_>) -> Result<Flavor, String> {
    let attrs = &cx.node.attrs;
    if let Some(name) = attrs.non_empty("cli.agent") {
        return Flavor::from_name(&name)
            .ok_or_else(|| format!("unknown `cli.agent` `{name}`: use claude, codex or gemini"));
    }
    let provider = attrs
        .non_empty("provider")
        .map(|p| p.into_owned())
        .or_else(|| cx.run.models.choice().provider.clone());
    match provider.as_deref() {
        Some("anthropic") => Ok(Flavor::Claude),
        Some("openai") => Ok(Flavor::Codex),
        Some("gemini") => Ok(Flavor::Gemini),
        _ => Err(
            "an agent with backend=\"cli\" needs `cli.agent` (claude, codex or gemini) or a provider of one of them (anthropic, openai, gemini)"
                .to_string(),
        ),
    }
}

/// The stage's environment (the run's, secrets withheld, and `WEFT_*`)
/// without what misleads the program.
fn base_env(cx: &StageCx<'_>, flavor: Flavor) -> Vec<(String, String)> {
    let mut env = super::agent::tool_env(cx);
    env.retain(|(k, _)| !flavor.env_remove().contains(&k.as_str()));
    env
}

/// What the program gets on top of the stage's environment: what the
/// flavor needs, its agent's keys from the caller's environment (for this
/// process alone) and `env` (settings.toml), and for claude run as root
/// `IS_SANDBOX=1`, without which it refuses `--permission-mode
/// bypassPermissions` ("cannot be used with root/sudo privileges") unless
/// told it runs in a sandbox, as a container running Weft as root is.
fn child_env(
    cx: &StageCx<'_>,
    flavor: Flavor,
    agent: Option<&ExternalAgent>,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = flavor
        .env()
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    if flavor == Flavor::Claude && rustix::process::geteuid().is_root() {
        env.push(("IS_SANDBOX".to_string(), "1".to_string()));
    }
    if let Some(agent) = agent {
        env.extend(
            cx.run
                .models
                .env()
                .into_iter()
                .filter(|(k, v)| agent.keys.contains(k) && !v.is_empty()),
        );
        env.extend(agent.env.iter().cloned());
    }
    env
}

/// The permission mode the program runs in, for the transcript.
fn permissions(flavor: Flavor) -> &'static str {
    match flavor {
        Flavor::Claude => "bypassPermissions",
        Flavor::Codex => "workspace-write",
        Flavor::Gemini => "yolo",
    }
}

/// The stage's outcome for a turn that failed.
fn failure(error: &CliError) -> Outcome {
    let class = match error.kind {
        CliErrorKind::Cancelled => FailureClass::Canceled,
        // A crash or a hang may not happen again.
        CliErrorKind::Exited | CliErrorKind::Stalled => FailureClass::TransientInfra,
        CliErrorKind::Start | CliErrorKind::Failed | CliErrorKind::Protocol => {
            FailureClass::Deterministic
        }
    };
    Outcome::failed(class, error.message.clone())
}
