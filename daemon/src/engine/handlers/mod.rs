//! Stage handlers, one file per node type. A handler runs one attempt of a
//! stage and returns its [`Outcome`]; the run loop does retries, routing and
//! recording around it.

mod acp_agent;
pub(crate) mod acp_threads;
mod agent;
mod ask;
pub(crate) mod budget;
mod cli_agent;
mod command;
mod conditional;
mod dry_run;
mod exit;
mod fan_in;
mod human;
mod model_stage;
pub(crate) use model_stage::repair_message;
mod prompt;
mod reported_status;
mod start;
mod wait;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::clock::Clock;
use super::context::Context;
use super::interviewer::Interviewer;
use super::recorder::Recorder;
use crate::exec::cancel::Cancel;
use crate::lang::graph::{Graph, Handler, Node};
use crate::model::{FailureClass, Outcome};
use crate::store::Blobs;

pub(crate) use agent::check_defaults as check_agent_defaults;
pub(crate) use agent::kept_name as kept_transcript_name;

/// What stays the same for every stage of a run.
#[derive(Clone)]
pub(crate) struct RunEnv {
    pub home: crate::store::Home,
    /// Files to capture after each stage (empty: none).
    pub artifacts: Arc<crate::engine::artifacts::ArtifactRules>,
    /// The run's `--input` values (a child run gets the same).
    pub inputs: std::collections::BTreeMap<String, String>,
    /// The environment commands inherit: the caller's (or this process's)
    /// with secrets withheld by the run's policy
    /// ([`crate::exec::environment`]).
    pub env: Option<Vec<(String, String)>>,
    /// `[run.env]`, which child runs of sub-workflow stages inherit.
    pub env_policy: crate::model::EnvPolicy,
    /// `[run.agent]`: defaults for agent stages, which child runs inherit.
    pub agent: crate::model::AgentDefaults,
    /// The run's spending limits, which every model call consults.
    pub budget: budget::RunBudget,
    /// Where a running agent stage registers its steering handle.
    pub agents: super::steering::RunningAgents,
    /// Takes secrets out of what the run records (command output blobs).
    pub redactor: crate::secrets::Redactor,
    pub run_id: String,
    /// Where commands run.
    pub work_dir: PathBuf,
    /// The workflow file's directory: `@file` references resolve against it.
    pub base_dir: PathBuf,
    /// Simulate LLM nodes; pick the first option at human gates.
    pub dry_run: bool,
    pub interviewer: Arc<dyn Interviewer>,
    pub clock: Clock,
    pub cancel: Cancel,
    pub blobs: Blobs,
    /// The run's language models (prompt and agent nodes).
    pub models: super::models::Models,
    /// ACP agents kept between the stages of a `thread_id`.
    pub acp_threads: acp_threads::AcpThreads,
    /// The run's branch and worktree when it is checkpointed in git.
    pub git: Option<Arc<super::run_git::RunGit>>,
    /// The run's container when `[run.sandbox]` asks for one (a child
    /// run's is its parent's): command stages and the agent's `shell` run
    /// there.
    pub sandbox: Option<Arc<crate::sandbox::run::RunSandbox>>,
}

impl std::fmt::Debug for RunEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunEnv")
            .field("run_id", &self.run_id)
            .field("work_dir", &self.work_dir)
            .finish_non_exhaustive()
    }
}

/// One attempt of one stage.
pub(crate) struct StageCx<'a> {
    pub graph: &'a Graph,
    pub node: &'a Node,
    pub visit: u32,
    pub attempt: u32,
    pub context: &'a Context,
    pub run: &'a RunEnv,
    /// The stage's directory (`nodes/{id}` or `nodes/{id}-visit_{N}`).
    pub dir: &'a Path,
    pub recorder: &'a Recorder,
}

impl StageCx<'_> {
    /// The node id and visit, as events carry them.
    #[must_use]
    pub fn at(&self) -> Option<(&str, u32)> {
        Some((&self.node.id, self.visit))
    }

    /// Writes a file into the stage directory; a failure becomes a notice
    /// rather than failing the stage (the database has the record).
    pub fn write_file(&self, name: &str, bytes: &[u8]) {
        if let Err(e) = crate::store::write_atomic(&self.dir.join(name), bytes) {
            self.notice(format!("could not write {name}: {e}"));
        }
    }

    /// Names one of the stage's own files (see [`Recorder::stage_file`]):
    /// written after the stage is committed, off the run's critical path.
    pub fn stage_file(&self, name: &str, text: Option<String>) {
        self.recorder.stage_file(self.dir, name, text);
    }

    /// The run's sandbox, its container up for this stage's commands and
    /// recorded (`sandbox.ready`) as where the stage runs; `Ok(None)` when
    /// commands run on the host.
    ///
    /// # Errors
    /// The stage's failure when the container cannot be made or reached.
    pub async fn sandbox(&self) -> Result<Option<&Arc<crate::sandbox::run::RunSandbox>>, Outcome> {
        let Some(sandbox) = self.run.sandbox.as_ref() else {
            return Ok(None);
        };
        // Boxed: a stage's future is on the stack once per sub-workflow
        // level, and the engine's requests are large.
        match Box::pin(sandbox.ready()).await {
            Ok(ready) => {
                // For `weft logs`, which reads stage folders, not events.
                let record = crate::sandbox::run::RanIn {
                    container: ready.container.clone(),
                    image: ready.image.clone(),
                    engine: ready.engine.clone(),
                };
                self.stage_file(
                    crate::sandbox::run::STAGE_RECORD,
                    serde_json::to_string_pretty(&record).ok(),
                );
                let _ = self.recorder.emit(
                    crate::model::EventKind::SandboxReady {
                        container: ready.container,
                        image: ready.image,
                        engine: ready.engine,
                        attach: ready.attach.as_str().to_string(),
                    },
                    self.at(),
                );
                Ok(Some(sandbox))
            }
            Err(e) => Err(Outcome::failed(
                FailureClass::TransientInfra,
                format!("the run's sandbox is not available: {e}"),
            )),
        }
    }

    /// Records a `run.notice` for this stage.
    pub fn notice(&self, message: String) {
        let _ = self
            .recorder
            .emit(crate::model::EventKind::RunNotice { message }, self.at());
    }
}

/// Runs one attempt of the stage.
pub(crate) async fn execute(cx: &StageCx<'_>) -> Outcome {
    match cx.node.handler {
        Handler::Start => start::run(cx),
        Handler::Exit => exit::run(cx),
        Handler::Conditional => conditional::run(cx),
        Handler::Wait => wait::run(cx).await,
        Handler::Command => command::run(cx).await,
        Handler::Human => human::run(cx).await,
        Handler::Prompt => prompt::run(cx).await,
        // The node's (or its stylesheet's) `backend`, else the run's.
        Handler::Agent => match cx
            .node
            .attrs
            .non_empty("backend")
            .map(|b| b.into_owned())
            .or_else(|| cx.run.agent.backend.clone())
            .as_deref()
        {
            // Boxed: agent stages' futures are large, and a stage's future
            // is on the stack once per sub-workflow level while it is polled.
            None | Some("api") => Box::pin(agent::run(cx)).await,
            Some("acp") => Box::pin(acp_agent::run(cx)).await,
            Some("cli") => Box::pin(cli_agent::run(cx)).await,
            Some(other) => Outcome::failed(
                FailureClass::Deterministic,
                format!("unknown backend `{other}`: use `api` (Weft's own agent), `acp` or `cli`"),
            ),
        },
        Handler::FanIn => fan_in::run(cx),
        // The run loop drives these itself (nested runners, started once),
        // so they never get here; if one did, its stage fails rather than
        // the run.
        Handler::Parallel | Handler::SubWorkflow => Outcome::failed(
            FailureClass::Deterministic,
            format!(
                "{} nodes are run by the run loop, not by a stage handler",
                cx.node.handler.name()
            ),
        ),
    }
}
