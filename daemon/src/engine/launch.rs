//! Starting and resuming runs: creating the record and the run directory,
//! restoring state from a checkpoint, the stall watchdog, and writing the
//! conclusion.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::checkpoint::{Checkpoint, CheckpointError};
use super::clock::Clock;
use super::context::Context;
use super::handlers::RunEnv;
use super::interviewer::Interviewer;
use super::models::Models;
use super::recorder::{Observer, Recorder};
use super::run::{DEFAULT_STALL_TIMEOUT_SECS, Finish, Runner, State, millis};
use super::run_git::{GitPlan, RunGit};
use crate::exec::cancel::{Cancel, CancelReason};
use crate::exec::environment;
use crate::lang::diagnostic::{Diagnostic, Severity};
use crate::lang::graph::Graph;
use crate::lang::workflow::{LoadOptions, Workflow};
use crate::model::SandboxConfig;
use crate::model::{
    AgentDefaults, Budget, Code, EnvPolicy, Event, EventKind, ModelChoice, ParentLink, RunStatus,
};
use crate::sandbox::run::{Finished, RunSandbox};
use crate::store::{Blobs, Home, NewRun, RunDir, RunRecord, Store, StoreError};
use crate::util::lock::lock;

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// The workflow file (absolute), when it came from a file.
    pub workflow_path: Option<PathBuf>,
    /// The workflow text as written (before templates).
    pub source: String,
    pub goal: Option<String>,
    pub inputs: BTreeMap<String, String>,
    pub dry_run: bool,
    pub auto_approve: bool,
    /// Seeds `selection="random"` and retry jitter; random when `None`.
    pub seed: Option<u64>,
    /// Where commands run.
    pub work_dir: PathBuf,
    pub labels: Vec<String>,
    /// For a child run: the parent stage it runs under.
    pub parent: Option<ParentLink>,
    /// For a child run: where its run directory goes (`nodes/{id}/child`
    /// under the parent's), instead of `runs/YYYYMMDD-{id}`.
    pub run_dir: Option<PathBuf>,
    /// For a child run: the context it starts from (a copy of the parent's).
    pub context: Option<Map<String, Value>>,
    /// For inline workflow text: where its `@file` references resolve.
    pub base_dir: Option<PathBuf>,
    /// `[run.artifacts] include`: files to capture after each stage.
    pub artifacts: Vec<String>,
    /// The caller's environment, for commands (the daemon runs runs for
    /// callers with other environments); `None` uses this process's.
    pub env: Option<Vec<(String, String)>>,
    /// `[run.env]`: variables to pass to commands or withhold from them.
    pub env_policy: EnvPolicy,
    /// The run-wide model (`--model`, `--provider`, `[run.model]`).
    pub model: ModelChoice,
    /// `[run.agent]`: defaults for the run's agent stages.
    pub agent: AgentDefaults,
    /// `--max-cost`, `--max-tokens`, `[run.budget]`: the run's spending
    /// limits, over the graph's and settings.toml's.
    pub budget: Budget,
    /// `--no-checkpoint`: run in the work dir itself, without a worktree
    /// and commits, even in a git repository.
    pub no_checkpoint: bool,
    /// `--include-dirty`: the run's worktree gets the checkout's
    /// uncommitted changes (committed as the run's first commit).
    pub include_dirty: bool,
    /// `--retro` / `--no-retro` / `[run] retros`: make a retro when the run
    /// ends; `None` leaves it to settings.toml (docs/engine.md, "Retros").
    pub retro: Option<bool>,
    /// `--sandbox`, `[run.sandbox]`: where commands run (docs/sandbox.md).
    pub sandbox: SandboxConfig,
}

/// The options stored with a run, so a resume behaves like the start.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct RunOptions {
    #[serde(default)]
    pub dry_run: bool,
    #[serde(default)]
    pub auto_approve: bool,
    #[serde(default)]
    pub seed: u64,
    /// Set for child runs of a sub-workflow stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentLink>,
    /// Artifact globs (`[run.artifacts] include`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    /// The environment commands got, without anything that looks like a
    /// secret ([`environment::storable`]), kept so a resume runs commands
    /// as the start did. `None`: the run used the environment of the
    /// process that executes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<(String, String)>>,
    /// `[run.env]` as the run was started with.
    #[serde(default, skip_serializing_if = "EnvPolicy::is_empty")]
    pub env_policy: EnvPolicy,
    /// The run-wide model choice.
    #[serde(default, skip_serializing_if = "ModelChoice::is_empty")]
    pub model: ModelChoice,
    /// `[run.agent]` as the run was started with.
    #[serde(default, skip_serializing_if = "AgentDefaults::is_empty")]
    pub agent: AgentDefaults,
    /// The spending limits the run was started with, or raised to since.
    #[serde(default, skip_serializing_if = "Budget::is_empty")]
    pub budget: Budget,
    /// Where the run is checkpointed in git; `None` when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitPlan>,
    /// The run's own choice about a retro (see [`RunRequest::retro`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retro: Option<bool>,
    /// Where commands run, with the engine's address resolved at the start
    /// (the caller's `DOCKER_HOST`), so a resume reaches the same engine.
    #[serde(default, skip_serializing_if = "SandboxConfig::is_empty")]
    pub sandbox: SandboxConfig,
}

/// What a run uses from its surroundings.
pub struct Services {
    pub home: Home,
    /// The whole environment of whoever asked for the run (API keys
    /// included), kept in memory only; `None` means this process's. A new
    /// run's request carries its own ([`RunRequest::env`]).
    pub caller_env: Option<Vec<(String, String)>>,
    pub store: Arc<Mutex<Store>>,
    pub interviewer: Arc<dyn Interviewer>,
    pub clock: Clock,
    pub cancel: Cancel,
    pub observer: Option<Observer>,
    /// How many runners enclose the runs started with these services: 0 for
    /// a top-level run, one more for each sub-workflow around it (see
    /// [`super::run::MAX_NESTING`]).
    pub nesting: usize,
    /// The agent stages running now, for steering (`run.steer`): the
    /// daemon shares one among all its runs.
    pub agents: super::steering::RunningAgents,
    /// The budget of the run these services start runs inside: a
    /// sub-workflow's child run spends against its parent's limits.
    /// `None` for a top-level run, which has a budget of its own.
    pub budget: Option<super::handlers::budget::RunBudget>,
    /// The sandbox of the run these services start runs inside: a child
    /// run's commands run in its parent's container. `None` for a
    /// top-level run, which has its own if its configuration asks.
    pub sandbox: Option<Arc<crate::sandbox::run::RunSandbox>>,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("home", &self.home)
            .finish_non_exhaustive()
    }
}

/// One stage in a conclusion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageSummary {
    pub node_id: String,
    pub visit: u32,
    pub outcome: String,
    pub duration_ms: Option<u64>,
}

/// How a run ended, as `weft run --json` prints it and conclusion.json holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conclusion {
    pub run_id: String,
    pub status: RunStatus,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    pub run_dir: PathBuf,
    pub stages: Vec<StageSummary>,
    /// The nodes whose latest visit failed, in the order they ran. In a run
    /// that succeeded these are the failures the default
    /// `on_failure="route"` policy routed past.
    #[serde(default)]
    pub failed_stages: Vec<String>,
    /// The exit node the run reached (a workflow may have several); absent
    /// when it did not end at one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_node: Option<String>,
}

/// Why a run could not start or resume.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("the workflow has {} error(s)", .0.iter().filter(|d| d.severity == Severity::Error).count())]
    InvalidWorkflow(Vec<Diagnostic>),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    NotResumable(#[from] NotResumable),
    #[error("cannot read the workflow: {0}")]
    Io(String),
    #[error("{0}")]
    Config(String),
}

impl EngineError {
    /// A stable, machine-readable code.
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            EngineError::InvalidWorkflow(_) => Code::WorkflowInvalid,
            EngineError::Store(e) => e.code(),
            EngineError::NotResumable(_) => Code::RunNotResumable,
            EngineError::Io(_) => Code::WorkflowIo,
            EngineError::Config(_) => Code::RunConfig,
        }
    }
}

/// Why a run cannot be resumed: the one answer the CLI, the daemon and
/// the engine's own resume give (code `run.not_resumable`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NotResumable {
    /// It succeeded or failed: only interrupted or cancelled runs continue.
    #[error(
        "run {run_id} already {status} at {}; only interrupted or cancelled runs can be resumed{}",
        .finished_at.as_deref().unwrap_or("an unknown time"),
        .failure_reason.as_deref().map(|r| format!(" (it failed: {r})")).unwrap_or_default()
    )]
    Ended {
        run_id: String,
        status: RunStatus,
        finished_at: Option<String>,
        failure_reason: Option<String>,
    },
    /// A live process other than this one is executing it.
    #[error(
        "run {run_id} is still running in process {pid}; wait for it to end, or stop that process first"
    )]
    StillRunning { run_id: String, pid: u32 },
    /// Its checkpoint is damaged and the events hold no earlier one.
    #[error(
        "run {run_id}'s checkpoint is damaged ({damage}) and no earlier checkpoint could be rebuilt from its events"
    )]
    DamagedCheckpoint {
        run_id: String,
        damage: CheckpointError,
    },
    /// Nothing was committed and the workflow has no start node to begin at.
    #[error("the workflow has no start node")]
    NoStartNode,
}

fn load(
    source: &str,
    path: Option<&Path>,
    base_dir: &Path,
    goal: Option<&str>,
    inputs: &BTreeMap<String, String>,
) -> Result<(Workflow, Graph), EngineError> {
    let file = path.map_or_else(|| "<workflow>".to_string(), |p| p.display().to_string());
    let mut wf = Workflow::from_bytes(
        &file,
        source.as_bytes(),
        base_dir,
        &LoadOptions {
            inputs: inputs.clone(),
            goal: goal.map(str::to_string),
        },
    );
    if !wf.is_valid() {
        return Err(EngineError::InvalidWorkflow(wf.diagnostics));
    }
    match wf.graph.take() {
        Some(graph) => Ok((wf, graph)),
        None => Err(EngineError::InvalidWorkflow(wf.diagnostics)),
    }
}

/// Starts a new run and drives it to its end.
pub async fn start(request: RunRequest, services: &Services) -> Result<Conclusion, EngineError> {
    prepare(request, services)?.run(services).await
}

/// A run that is recorded (status `queued`, run directory written) but not
/// executing yet: the daemon answers `run.start` with its id, then runs it
/// when a slot is free.
#[derive(Debug)]
pub struct Prepared {
    pub run_id: String,
    pub run_dir: PathBuf,
    graph: Graph,
    base_dir: PathBuf,
    run_dir_handle: RunDir,
    options: RunOptions,
    state: State,
    start: String,
    /// The caller's whole environment (not stored: it holds keys).
    caller_env: Option<Vec<(String, String)>>,
}

impl Prepared {
    /// Executes the run to its end.
    pub async fn run(self, services: &Services) -> Result<Conclusion, EngineError> {
        execute(
            services,
            &self.graph,
            &self.base_dir,
            &self.run_id,
            self.run_dir_handle,
            &self.options,
            (self.state, None),
            Ok(self.start),
            false,
            self.caller_env.or_else(|| services.caller_env.clone()),
        )
        .await
    }
}

/// Validates the workflow and records a new run without executing it.
pub fn prepare(request: RunRequest, services: &Services) -> Result<Prepared, EngineError> {
    let base_dir = request.base_dir.clone().unwrap_or_else(|| {
        request
            .workflow_path
            .as_deref()
            .and_then(Path::parent)
            .map_or_else(|| request.work_dir.clone(), Path::to_path_buf)
    });
    let (wf, graph) = load(
        &request.source,
        request.workflow_path.as_deref(),
        &base_dir,
        request.goal.as_deref(),
        &request.inputs,
    )?;
    // So is a working directory that is not there: every command would fail.
    check_work_dir(&request.work_dir)?;
    // A bad artifact or environment pattern is refused before anything is
    // recorded.
    super::artifacts::ArtifactRules::new(&request.artifacts)
        .map_err(|e| EngineError::Config(e.to_string()))?;
    request.env_policy.check().map_err(EngineError::Config)?;
    super::handlers::check_agent_defaults(&request.agent).map_err(EngineError::Config)?;
    request.budget.check().map_err(EngineError::Config)?;
    crate::sandbox::config::settings(&request.sandbox).map_err(EngineError::Config)?;
    graph_budget(&graph).map_err(EngineError::Config)?;
    let run_id = ulid::Ulid::generate().to_string();
    // A repository a run cannot branch from is refused before anything is
    // recorded; the worktree's place is known once the run dir is.
    let checkpointed = !(request.dry_run || request.parent.is_some() || request.no_checkpoint);
    let mut git = if checkpointed {
        super::run_git::plan(&request.work_dir, &run_id, request.include_dirty)
            .map_err(EngineError::Config)?
    } else {
        None
    };
    let seed = request.seed.unwrap_or_else(rand::random);
    let mut options = RunOptions {
        dry_run: request.dry_run,
        auto_approve: request.auto_approve,
        seed,
        parent: request.parent.clone(),
        artifacts: request.artifacts.clone(),
        env: request.env.as_ref().map(|env| {
            environment::storable(&environment::stage_env(env, &request.env_policy).vars)
        }),
        env_policy: request.env_policy.clone(),
        model: request.model.clone(),
        agent: request.agent.clone(),
        budget: request.budget,
        git: None,
        retro: request.retro,
        sandbox: resolved_sandbox(&request),
    };
    let run_dir = match &request.run_dir {
        Some(dir) => {
            crate::store::create_private_dir_all(&dir.join("nodes"))
                .map_err(|e| StoreError::io(format!("creating {}", dir.display()), e))?;
            RunDir::open(dir)
        }
        None => RunDir::create(&services.home.runs_dir(), &run_id)?,
    };
    if let Some(plan) = &mut git {
        plan.worktree = run_dir.path().join("worktree");
    }
    options.git.clone_from(&git);
    let goal = graph.attrs.text("goal").map(|g| g.into_owned());
    let inputs: Map<String, Value> = request
        .inputs
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let new = NewRun {
        id: run_id.clone(),
        // The graph was taken out of `wf`: name the run after it directly.
        workflow_name: if graph.name.is_empty() {
            wf.name()
        } else {
            graph.name.clone()
        },
        workflow_path: request.workflow_path.clone(),
        goal: goal.clone(),
        run_dir: run_dir.path().to_path_buf(),
        work_dir: request.work_dir.clone(),
        inputs,
        options: serde_json::to_value(&options).unwrap_or(Value::Null),
        labels: request.labels.clone(),
        node_count: u32::try_from(graph.nodes.len()).unwrap_or(u32::MAX),
        edge_count: u32::try_from(graph.edges.len()).unwrap_or(u32::MAX),
        created_at: crate::store::timestamp(),
    };
    lock(&services.store).create_run(&new)?;
    run_dir.write_file("graph.fabro", request.source.as_bytes())?;
    run_dir.write_json(
        "manifest.json",
        &json!({
            "run_id": run_id,
            "workflow_name": new.workflow_name,
            "workflow_path": new.workflow_path,
            "goal": goal,
            "start_time": new.created_at,
            "node_count": new.node_count,
            "edge_count": new.edge_count,
            "labels": new.labels,
            "inputs": new.inputs,
            "work_dir": new.work_dir,
            "dry_run": options.dry_run,
            "seed": seed,
            "run_branch": git.as_ref().map(|g| g.branch.clone()),
            "meta_branch": git.as_ref().map(|g| g.meta_branch.clone()),
            "base_sha": git.as_ref().map(|g| g.base_sha.clone()),
            "repo": git.as_ref().map(|g| g.repo.clone()),
        }),
    )?;

    let mut context = Context::from_map(request.context.clone().unwrap_or_default());
    for attr in graph.attrs.iter() {
        context.set(
            format!("graph.{}", attr.key.as_str()),
            attr.value.as_text().into_owned(),
        );
    }
    context.set("internal.run_id", run_id.clone());
    context.set(
        "internal.work_dir",
        git.as_ref()
            .map_or_else(|| request.work_dir.clone(), GitPlan::work_dir)
            .to_string_lossy()
            .into_owned(),
    );
    let state = State {
        context,
        ..State::default()
    };
    let Some(start) = graph.start().map(|n| n.id.to_string()) else {
        return Err(EngineError::InvalidWorkflow(wf.diagnostics));
    };
    Ok(Prepared {
        run_dir: run_dir.path().to_path_buf(),
        run_id,
        graph,
        base_dir,
        run_dir_handle: run_dir,
        options,
        state,
        start,
        caller_env: request.env,
    })
}

/// Whether `run` can be resumed, decided from its record alone: not when it
/// ended (succeeded or failed), nor while a live process other than this
/// one is executing it. Everything that resumes or offers to resume a run
/// asks this. Cheap: it reads no files of the run, so a server can answer a
/// resume request with it at once.
///
/// # Errors
/// [`NotResumable`], saying why; the run is left as it was.
pub fn resumable(run: &RunRecord) -> Result<(), NotResumable> {
    match run.status {
        RunStatus::Succeeded | RunStatus::Failed => Err(NotResumable::Ended {
            run_id: run.id.clone(),
            status: run.status,
            finished_at: run.finished_at.clone(),
            failure_reason: run.failure_reason.clone(),
        }),
        RunStatus::Running | RunStatus::Blocked => match run.pid {
            Some(pid)
                if pid != std::process::id()
                    && crate::os::process::still_alive(pid, run.pid_start) =>
            {
                Err(NotResumable::StillRunning {
                    run_id: run.id.clone(),
                    pid,
                })
            }
            _ => Ok(()),
        },
        RunStatus::Queued | RunStatus::Cancelled | RunStatus::Interrupted => Ok(()),
    }
}

/// Refuses a working directory that does not exist or is not a directory,
/// before a run starts or resumes: its commands could not run there, and a
/// run whose every stage fails to start, routed on by the default failure
/// policy, would otherwise "succeed".
fn check_work_dir(dir: &Path) -> Result<(), EngineError> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(EngineError::Config(format!(
            "the working directory {} is not a directory (--work-dir, or `working_dir` in run.toml)",
            dir.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(EngineError::Config(format!(
            "the working directory {} does not exist (--work-dir, or `working_dir` in run.toml); create it or name another",
            dir.display()
        ))),
        Err(e) => Err(EngineError::Config(format!(
            "the working directory {} cannot be used: {e}",
            dir.display()
        ))),
    }
}

/// Continues an interrupted or cancelled run from its last checkpoint.
///
/// A resume that cannot start (see [`resumable`], an unreadable
/// workflow, a damaged checkpoint) returns the error and leaves the run's
/// status and events as they were.
pub async fn resume(run: &RunRecord, services: &Services) -> Result<Conclusion, EngineError> {
    prepare_resume(run, services)?.run(services).await
}

/// A run about to resume: its workflow loaded again and its state restored
/// from the last checkpoint, with nothing executed yet.
#[derive(Debug)]
pub(crate) struct Resumable {
    run_id: String,
    graph: Graph,
    base_dir: PathBuf,
    run_dir: RunDir,
    options: RunOptions,
    state: State,
    resume_parallel: Option<super::checkpoint::ParallelProgress>,
    next: Result<String, Finish>,
}

impl Resumable {
    /// Executes the rest of the run.
    pub async fn run(self, services: &Services) -> Result<Conclusion, EngineError> {
        execute(
            services,
            &self.graph,
            &self.base_dir,
            &self.run_id,
            self.run_dir,
            &self.options,
            (self.state, self.resume_parallel),
            self.next,
            true,
            services.caller_env.clone(),
        )
        .await
    }
}

/// Everything [`resume`] does before executing: reads and loads the run's
/// workflow, restores its checkpoint, marks stages left in flight
/// interrupted and kills what is left of their commands. Reads files and
/// parses: a server calls it off its event loop.
///
/// # Errors
/// As for [`resume`]; the run is left as it was.
pub(crate) fn prepare_resume(
    run: &RunRecord,
    services: &Services,
) -> Result<Resumable, EngineError> {
    resumable(run)?;
    check_work_dir(&run.work_dir)?;
    let options: RunOptions = serde_json::from_value(run.options.clone()).unwrap_or_default();
    let run_dir = RunDir::open(&run.run_dir);
    let source = crate::limits::read_text_capped(
        &run.run_dir.join("graph.fabro"),
        crate::limits::MAX_WORKFLOW_BYTES,
    )
    .map_err(|e| {
        EngineError::Io(format!(
            "{}: {e}",
            run.run_dir.join("graph.fabro").display()
        ))
    })?;
    let base_dir = run
        .workflow_path
        .as_deref()
        .and_then(Path::parent)
        .map_or_else(|| run.work_dir.clone(), Path::to_path_buf);
    let inputs: BTreeMap<String, String> = run
        .inputs
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.as_str().map_or_else(|| v.to_string(), str::to_string),
            )
        })
        .collect();
    let (_, graph) = load(
        &source,
        run.workflow_path.as_deref(),
        &base_dir,
        run.goal.as_deref(),
        &inputs,
    )?;

    let (state, next, resume_parallel) = match restore(run, services)? {
        Some(cp) => {
            let stages = lock(&services.store).stages(&run.id)?;
            // No next node: the run had ended but its end was not recorded
            // (the process died in between). Record it now.
            let next = match cp.next_node_id.clone() {
                Some(next) => Ok(next),
                None => Err(ended(&graph, cp.current_node.as_deref(), &stages)),
            };
            let parallel = cp.parallel.clone();
            (State::restore(cp, &stages), next, parallel)
        }
        None => {
            // Nothing was committed: start over from the start node.
            let mut context = Context::new();
            for attr in graph.attrs.iter() {
                context.set(
                    format!("graph.{}", attr.key.as_str()),
                    attr.value.as_text().into_owned(),
                );
            }
            context.set("internal.run_id", run.id.clone());
            context.set(
                "internal.work_dir",
                options
                    .git
                    .as_ref()
                    .map_or_else(|| run.work_dir.clone(), GitPlan::work_dir)
                    .to_string_lossy()
                    .into_owned(),
            );
            let Some(start) = graph.start().map(|n| n.id.to_string()) else {
                return Err(NotResumable::NoStartNode.into());
            };
            (
                State {
                    context,
                    ..State::default()
                },
                Ok(start),
                None,
            )
        }
    };
    let stages = lock(&services.store).stages(&run.id)?;
    reap_leftover_groups(&run_dir, &stages);
    lock(&services.store).interrupt_running_stages(&run.id)?;
    // Committed stages whose files a crash kept from being written get
    // them now, from their rows.
    if let Ok(restored @ 1..) = lock(&services.store).restore_stage_files(&run.id, &run_dir) {
        let _ = run_dir.append_log(&format!(
            "restored {restored} stage files a stopped executor had not written"
        ));
    }
    let mut options = options;
    // Continue the random sequence differently from the first execution,
    // but deterministically for a given seed and progress.
    options.seed = options.seed.wrapping_add(u64::from(state.completed));
    Ok(Resumable {
        run_id: run.id.clone(),
        graph,
        base_dir,
        run_dir,
        options,
        state,
        resume_parallel,
        next,
    })
}

/// Kills what is left of the commands of stages a crashed executor had in
/// flight (`running`, or `interrupted` by a daemon's reconciliation), so a
/// resume never runs a stage alongside a leftover copy of it. The executor's
/// reaper normally did this when the executor died; see
/// [`crate::exec::process::reap_recorded_group`] for the fallback and its pid-reuse
/// guard.
fn reap_leftover_groups(run_dir: &RunDir, stages: &[crate::store::StageRecord]) {
    for stage in stages
        .iter()
        .filter(|s| s.status == "running" || s.status == "interrupted")
    {
        let record = run_dir
            .node_dir(&stage.node_id, stage.visit)
            .join(crate::exec::process::GROUP_RECORD);
        if let Some(pgid) = crate::exec::process::reap_recorded_group(&record) {
            let _ = run_dir.append_log(&format!(
                "killed process group {pgid} left running by stage {}@{}",
                stage.node_id, stage.visit
            ));
        }
    }
}

/// Records what an execution that ended in `error` leaves behind, so that
/// every status change has its event and a client following the run stops:
///
/// - The run had started executing in this process (it is `running` or
///   `blocked` with this pid), or was `queued` and never began: it
///   **failed**, with a `run.failed` event.
/// - A resume that could not start (the run is `interrupted` or
///   `cancelled`): the run stays as it was and resumable; the event of its
///   status is recorded again with the reason (`resume could not start:
///   …`), so a follower learns why and stops.
/// - A run another live process executes is left alone, with a
///   `run.notice` saying the resume was refused.
///
/// Returns the event it recorded, for the caller's live subscribers.
///
/// # Errors
/// When the store cannot be read or written.
pub(crate) fn record_execution_error(
    store: &Mutex<Store>,
    run_id: &str,
    error: &EngineError,
) -> Result<Option<Event>, StoreError> {
    let mut store = lock(store);
    let Some(run) = store.run(run_id)? else {
        return Ok(None);
    };
    let duration_ms = 0;
    let ours = run.pid == Some(std::process::id());
    let recorded = match run.status {
        RunStatus::Running | RunStatus::Blocked if !ours => store.append_event(
            run_id,
            &EventKind::RunNotice {
                message: format!("a resume was refused: {error}"),
            },
            None,
        )?,
        RunStatus::Running | RunStatus::Blocked | RunStatus::Queued => {
            let reason = error.to_string();
            let event = store.append_event(
                run_id,
                &EventKind::RunFailed {
                    reason: reason.clone(),
                    duration_ms,
                },
                None,
            )?;
            store.set_status(run_id, RunStatus::Failed, Some(&reason))?;
            event
        }
        RunStatus::Interrupted | RunStatus::Cancelled => {
            let reason = format!(
                "resume could not start: {error}; the run is still {}",
                run.status.as_str()
            );
            let kind = if run.status == RunStatus::Cancelled {
                EventKind::RunCancelled {
                    reason,
                    duration_ms,
                }
            } else {
                EventKind::RunInterrupted {
                    reason,
                    duration_ms,
                }
            };
            store.append_event(run_id, &kind, None)?
        }
        RunStatus::Succeeded | RunStatus::Failed => return Ok(None),
    };
    Ok(Some(recorded))
}

/// The checkpoint to resume from: the run's, or when that is damaged, the
/// last good one in the events table. `None` when nothing was committed.
fn restore(run: &RunRecord, services: &Services) -> Result<Option<Checkpoint>, EngineError> {
    let damage = match run.checkpoint.as_deref().map(Checkpoint::parse) {
        Some(Ok(cp)) => return Ok(Some(cp)),
        Some(Err(e)) => Some(e),
        None => None,
    };
    let events = lock(&services.store).events_named(&run.id, "checkpoint.saved");
    let from_events = events.ok().and_then(|events| {
        events.into_iter().rev().find_map(|e| match e.kind {
            EventKind::CheckpointSaved { checkpoint, .. } => {
                Checkpoint::from_value(checkpoint).ok()
            }
            _ => None,
        })
    });
    match (from_events, damage) {
        (Some(cp), _) => Ok(Some(cp)),
        (None, None) => Ok(None),
        (None, Some(e)) => Err(NotResumable::DamagedCheckpoint {
            run_id: run.id.clone(),
            damage: e,
        }
        .into()),
    }
}

#[allow(clippy::too_many_arguments)]
async fn execute(
    services: &Services,
    graph: &Graph,
    base_dir: &Path,
    run_id: &str,
    run_dir: RunDir,
    options: &RunOptions,
    (state, resume_parallel): (State, Option<super::checkpoint::ParallelProgress>),
    next: Result<String, Finish>,
    resumed: bool,
    caller_env: Option<Vec<(String, String)>>,
) -> Result<Conclusion, EngineError> {
    let started = Instant::now();
    let run_dir_path = run_dir.path().to_path_buf();
    let work_dir = state
        .context
        .get("internal.work_dir")
        .and_then(Value::as_str)
        .map_or_else(|| base_dir.to_path_buf(), PathBuf::from);
    run_dir.write_pid(std::process::id())?;
    lock(&services.store).mark_running(run_id, std::process::id())?;
    let git = match &options.git {
        Some(plan) => {
            // The run's own copy, parsed within the same cap when it was
            // recorded; kept on the metadata branch for the record.
            let source = crate::limits::read_capped(
                &run_dir.path().join("graph.fabro"),
                crate::limits::MAX_WORKFLOW_BYTES,
            )
            .unwrap_or_default();
            let checkpoint_sha = state.git_commit_sha.clone();
            let (git, opened) =
                RunGit::open(plan, run_id, resumed, checkpoint_sha.as_deref(), &source).map_err(
                    |e| {
                        EngineError::Config(format!(
                            "cannot set up the run's git worktree: {e} (run with --no-checkpoint to run without checkpoints)"
                        ))
                    },
                )?;
            Some((std::sync::Arc::new(git), opened))
        }
        None => None,
    };
    // The environment the run was started (or is resumed) with, keys
    // included; it stays in memory.
    let source_env = caller_env.unwrap_or_else(crate::secrets::process_env);
    let split = environment::stage_env(&source_env, &options.env_policy);
    let command_env = match &options.env {
        Some(stored) if resumed => {
            environment::resumed_env(stored, &source_env, &options.env_policy)
        }
        _ => split.vars,
    };
    let redactor = crate::secrets::Redactor::new(&source_env);
    let recorder = Recorder::new(
        run_id,
        services.store.clone(),
        run_dir,
        services.observer.clone(),
    )
    .with_redactor(redactor.clone());
    let artifacts = super::artifacts::ArtifactRules::new(&options.artifacts)
        .map_err(|e| EngineError::Config(e.to_string()))?;
    let budget_settings =
        super::handlers::budget::BudgetSettings::load(&services.home.settings_path())
            .map_err(EngineError::Config)?;
    // Read before the run starts, so that an invalid `retro_timeout` stops
    // it at once rather than surfacing only at its end.
    let retro_settings = super::retro::RetroSettings::load(&services.home.settings_path())
        .map_err(EngineError::Config)?;
    let own_budget = options
        .budget
        .or(graph_budget(graph).map_err(EngineError::Config)?);
    let budget = match &services.budget {
        Some(parent) => parent.clone(),
        None => super::handlers::budget::RunBudget::new(
            run_id,
            own_budget,
            &budget_settings,
            services.cancel.clone(),
        ),
    };
    // The run's own sandbox, or its parent's; one that cannot work fails
    // the run below, once it is recorded as started.
    let owns_sandbox = services.sandbox.is_none();
    let sandbox = match &services.sandbox {
        Some(parent) => Ok(Some(parent.clone())),
        // Boxed, as the sandbox's other calls here: this future is on the
        // stack once per sub-workflow level (see `MAX_NESTING`).
        None => {
            Box::pin(open_sandbox(
                &options.sandbox,
                run_id,
                &work_dir,
                &run_dir_path,
            ))
            .await
        }
    };
    let env = RunEnv {
        budget,
        artifacts: std::sync::Arc::new(artifacts),
        home: services.home.clone(),
        inputs: inputs_of(services, run_id),
        env: Some(command_env),
        env_policy: options.env_policy.clone(),
        agent: options.agent.clone(),
        agents: services.agents.clone(),
        redactor,
        run_id: run_id.to_string(),
        work_dir,
        base_dir: base_dir.to_path_buf(),
        dry_run: options.dry_run,
        interviewer: services.interviewer.clone(),
        clock: services.clock.clone(),
        cancel: services.cancel.clone(),
        blobs: Blobs::new(&services.home),
        models: Models::new(
            options.model.clone(),
            Some(source_env),
            services.home.settings_path(),
        ),
        git: git.as_ref().map(|(git, _)| git.clone()),
        acp_threads: super::handlers::acp_threads::AcpThreads::default(),
        sandbox: sandbox.as_ref().ok().cloned().flatten(),
    };
    recorder.emit(
        EventKind::RunStarted {
            workflow: graph.name.clone(),
            goal: graph.attrs.text("goal").map(|g| g.into_owned()),
            run_dir: run_dir_path.to_string_lossy().into_owned(),
            resumed,
        },
        None,
    )?;
    if !split.withheld.is_empty() {
        recorder.emit(
            EventKind::EnvWithheld {
                names: split.withheld,
            },
            None,
        )?;
    }
    if services.budget.is_some() && !own_budget.is_empty() {
        recorder.emit(
            EventKind::RunNotice {
                message: "this workflow's budget_* attributes are not used here: as a sub-workflow it spends against the budget of the run that started it".into(),
            },
            None,
        )?;
    }
    if let (Some(plan), Some((_, opened))) = (&options.git, &git) {
        let message = format!(
            "checkpoints: the run works in {} on branch {}, from {} ({})",
            plan.work_dir().display(),
            plan.branch,
            super::run_git::short(&plan.base_sha),
            if resumed {
                "reset to its last checkpoint"
            } else {
                "your checkout is not touched"
            }
        );
        recorder.emit(EventKind::RunNotice { message }, None)?;
        for message in &opened.notices {
            recorder.emit(
                EventKind::RunNotice {
                    message: message.clone(),
                },
                None,
            )?;
        }
    }
    match &sandbox {
        Err(why) => {
            return conclude(
                run_id,
                &recorder,
                run_dir_path,
                started,
                Finish::Failed(format!("the run's sandbox cannot start: {why}")),
                env.git.as_deref(),
            );
        }
        Ok(Some(sandbox)) if owns_sandbox => {
            let message = format!(
                "sandbox: commands run in a container of {} on the engine at {} \
                 (made when a stage first needs it), the work dir at {}",
                sandbox.image(),
                sandbox.engine(),
                crate::sandbox::WORK_DIR
            );
            recorder.emit(EventKind::RunNotice { message }, None)?;
        }
        Ok(_) => {}
    }
    let _ = recorder.run_dir().append_log(&format!(
        "run {run_id} {}",
        if resumed { "resumed" } else { "started" }
    ));

    let stall_secs = graph
        .attrs
        .value("stall_timeout")
        .and_then(|v| {
            v.as_duration()
                .map(|d| d.to_std().as_secs())
                .or_else(|| v.as_int().map(|n| u64::try_from(n.max(0)).unwrap_or(0)))
        })
        .unwrap_or(DEFAULT_STALL_TIMEOUT_SECS);

    let mut runner = Runner::new(
        graph,
        &env,
        &recorder,
        state,
        options.seed,
        services.nesting,
    );
    if resumed {
        runner = runner.resuming(resume_parallel);
    }
    let next = match next {
        Ok(node) => node,
        Err(finish) => {
            return conclude(
                run_id,
                &recorder,
                run_dir_path,
                started,
                finish,
                env.git.as_deref(),
            );
        }
    };
    let driving = runner.drive(next);
    let finish = if stall_secs == 0 {
        driving.await
    } else {
        let watchdog = watch(&recorder, &env.cancel, stall_secs);
        tokio::pin!(driving);
        tokio::pin!(watchdog);
        loop {
            tokio::select! {
                finish = &mut driving => break finish,
                () = &mut watchdog => {}
            }
        }
    };
    // Agents kept for threads end with the run, whatever ended it.
    env.acp_threads.stop_all().await;
    let finish = finish?;
    if owns_sandbox
        && let Some(sandbox) = &env.sandbox
        && !matches!(finish, Finish::Interrupted(_))
    {
        Box::pin(finish_sandbox(
            sandbox,
            &recorder,
            matches!(finish, Finish::Succeeded { .. }),
        ))
        .await;
    }

    runner.flush_checkpoint_file();
    let conclusion = conclude(
        run_id,
        &recorder,
        run_dir_path,
        started,
        finish,
        env.git.as_deref(),
    )?;
    // After the end is recorded: a crash or hang here loses nothing of the
    // run, and the run's slot is held at most the retro's time limit longer.
    if services.nesting == 0
        && options.parent.is_none()
        && !options.dry_run
        && super::retro::ends_with_retro(conclusion.status)
        && retro_settings.enabled(options.retro)
    {
        let timeout = retro_settings
            .timeout()
            .unwrap_or(super::retro::DEFAULT_RETRO_TIMEOUT);
        let making = super::retro::make(&services.store, run_id, &env.models, timeout);
        // A run a stall failed is already cancelled; only a cancel that
        // comes during the retro (the daemon stopping) abandons it.
        let made = if env.cancel.reason().is_some() {
            Some(making.await)
        } else {
            tokio::select! {
                made = making => Some(made),
                _ = env.cancel.cancelled() => None,
            }
        };
        let message = match made {
            Some(Ok(retro)) => super::retro::notice(&retro),
            Some(Err(e)) => format!("the retro could not be recorded: {e}"),
            None => "the retro was abandoned: the daemon is stopping".to_string(),
        };
        let _ = recorder.emit(EventKind::RunNotice { message }, None);
    }
    Ok(conclusion)
}

/// The sandbox `config` asks for, reached and checked (the engine answers,
/// it has the image); `Ok(None)` for the local provider.
async fn open_sandbox(
    config: &SandboxConfig,
    run_id: &str,
    work_dir: &Path,
    run_dir: &Path,
) -> Result<Option<Arc<RunSandbox>>, String> {
    let Some(settings) = crate::sandbox::config::settings(config)? else {
        return Ok(None);
    };
    let engine = config
        .engine
        .clone()
        .unwrap_or_else(|| crate::sandbox::docker::DEFAULT_DOCKER_HOST.to_string());
    RunSandbox::connect(
        &engine,
        settings,
        config.keep(),
        config.user.as_deref(),
        (run_id, work_dir, run_dir),
    )
    .await
    .map(|sandbox| Some(Arc::new(sandbox)))
    .map_err(|e| e.to_string())
}

/// Removes the run's container or keeps it, as its policy says, and
/// records which. A removal that fails is a notice: the container stays
/// recorded in `sandbox.json`, and the next daemon start removes it.
async fn finish_sandbox(sandbox: &RunSandbox, recorder: &Recorder, succeeded: bool) {
    let kind = match sandbox.finish(succeeded).await {
        Ok(Finished::None) => return,
        Ok(Finished::Removed { container }) => EventKind::SandboxRemoved { container },
        Ok(Finished::Kept { container }) => EventKind::SandboxKept {
            engine: sandbox.engine().to_string(),
            container,
        },
        Err(e) => EventKind::RunNotice {
            message: format!(
                "the run's container could not be removed: {e}; weftd tries again when it next starts"
            ),
        },
    };
    let _ = recorder.emit(kind, None);
}

/// The run's `[run.sandbox]` with the engine's address fixed: the
/// configuration's, else the caller's `DOCKER_HOST`, else the usual socket.
fn resolved_sandbox(request: &RunRequest) -> SandboxConfig {
    let mut config = request.sandbox.clone();
    if config.provider() == crate::model::sandbox::Provider::Docker && config.engine.is_none() {
        let caller = match &request.env {
            Some(env) => env
                .iter()
                .rev()
                .find(|(k, _)| k == "DOCKER_HOST")
                .map(|(_, v)| v.clone()),
            None => std::env::var("DOCKER_HOST").ok(),
        };
        config.engine = Some(
            caller
                .filter(|h| !h.trim().is_empty())
                .unwrap_or_else(|| crate::sandbox::docker::DEFAULT_DOCKER_HOST.to_string()),
        );
    }
    config
}

/// How a run whose checkpoint names no next node had ended: at the exit
/// node it succeeded; elsewhere its last stage decides.
fn ended(graph: &Graph, current: Option<&str>, stages: &[crate::store::StageRecord]) -> Finish {
    if let Some(exit) = current
        .and_then(|id| graph.node(id))
        .filter(|n| n.handler == crate::lang::graph::Handler::Exit)
    {
        return Finish::Succeeded {
            exit: Some(exit.id.to_string()),
        };
    }
    let last = stages.iter().rev().find(|s| s.outcome.is_some());
    match last {
        Some(stage) if stage.status == "failed" => Finish::Failed(format!(
            "stage {} failed: {}",
            stage.node_id,
            stage.failure_reason.as_deref().unwrap_or("no reason given")
        )),
        _ => Finish::Succeeded { exit: None },
    }
}

/// Records how the run ended: the final event, the status, conclusion.json.
fn conclude(
    run_id: &str,
    recorder: &Recorder,
    run_dir_path: PathBuf,
    started: Instant,
    finish: Finish,
    git: Option<&RunGit>,
) -> Result<Conclusion, EngineError> {
    // Whoever sees the end finds every stage's files.
    recorder.flush_files();
    let duration_ms = millis(started.elapsed());
    let failed_stages = recorder.store().failed_stages(run_id)?;
    let (status, reason, kind) = match &finish {
        Finish::Succeeded { exit } => (
            RunStatus::Succeeded,
            None,
            EventKind::RunCompleted {
                duration_ms,
                failed_stages: failed_stages.clone(),
                exit_node: exit.clone(),
            },
        ),
        Finish::Failed(why) => (
            RunStatus::Failed,
            Some(why.clone()),
            EventKind::RunFailed {
                reason: why.clone(),
                duration_ms,
            },
        ),
        // A run's own runner never joins; treat it as an end, defensively.
        Finish::Joined(_) => (
            RunStatus::Succeeded,
            None,
            EventKind::RunCompleted {
                duration_ms,
                failed_stages: failed_stages.clone(),
                exit_node: None,
            },
        ),
        Finish::Cancelled(why) => (
            RunStatus::Cancelled,
            Some(why.clone()),
            EventKind::RunCancelled {
                reason: why.clone(),
                duration_ms,
            },
        ),
        Finish::Interrupted(why) => (
            RunStatus::Interrupted,
            Some(why.clone()),
            EventKind::RunInterrupted {
                reason: why.clone(),
                duration_ms,
            },
        ),
    };
    // The run's changes are summed up before its end is recorded, so a
    // client that sees the end finds final.patch.
    let final_sha = git.map(|git| {
        let (head, notices) = git.finish(status, &run_dir_path);
        for message in notices {
            let _ = recorder.emit(EventKind::RunNotice { message }, None);
        }
        head
    });
    recorder.emit(kind, None)?;
    recorder
        .store()
        .set_status(run_id, status, reason.as_deref())?;
    let stages = recorder
        .store()
        .stages(run_id)?
        .into_iter()
        .filter(|s| s.status != "interrupted" && s.status != "running")
        .map(|s| StageSummary {
            node_id: s.node_id,
            visit: s.visit,
            outcome: s.status,
            duration_ms: s.duration_ms,
        })
        .collect();
    let exit_node = match &finish {
        Finish::Succeeded { exit } => exit.clone(),
        _ => None,
    };
    let conclusion = Conclusion {
        run_id: run_id.to_string(),
        status,
        duration_ms,
        failure_reason: reason,
        run_dir: run_dir_path,
        stages,
        failed_stages,
        exit_node,
    };
    {
        let dir = recorder.run_dir();
        // conclusion.json marks a run that ended; a cancelled run can still
        // be resumed, so it gets none.
        if !matches!(status, RunStatus::Cancelled | RunStatus::Interrupted) {
            dir.write_json(
                "conclusion.json",
                &json!({
                    "status": conclusion.status,
                    "duration_ms": conclusion.duration_ms,
                    "failure_reason": conclusion.failure_reason,
                    "failed_stages": conclusion.failed_stages,
                    "exit_node": conclusion.exit_node,
                    "final_git_commit_sha": final_sha,
                }),
            )?;
        }
        let _ = dir.append_log(&format!("run {run_id} ended: {}", status.as_str()));
        let _ = dir.remove_pid();
    }
    Ok(conclusion)
}

/// Cancels the run when no event has been recorded for `secs` seconds
/// (waiting on a human does not count). Never returns on its own.
async fn watch(recorder: &Recorder, cancel: &Cancel, secs: u64) {
    let tick = std::time::Duration::from_millis((secs * 1000 / 4).clamp(50, 1000));
    loop {
        tokio::time::sleep(tick).await;
        let idle = recorder.idle_secs();
        if idle >= secs && cancel.reason().is_none() {
            let _ = recorder.emit(EventKind::WatchdogTimeout { idle_secs: idle }, None);
            cancel.cancel(CancelReason::Stalled(idle));
        }
    }
}

/// A run's `--input` values, as recorded (child runs get the same).
fn inputs_of(services: &Services, run_id: &str) -> BTreeMap<String, String> {
    lock(&services.store)
        .run(run_id)
        .ok()
        .flatten()
        .map(|r| {
            r.inputs
                .into_iter()
                .map(|(k, v)| (k, v.as_str().map_or_else(|| v.to_string(), str::to_string)))
                .collect()
        })
        .unwrap_or_default()
}

/// The graph's `budget_max_cost`, `budget_max_tokens` and `budget_warn_at`.
///
/// # Errors
/// A value that is not a number in range, naming the attribute.
pub(crate) fn graph_budget(graph: &Graph) -> Result<Budget, String> {
    let number = |key: &str| -> Result<Option<f64>, String> {
        graph
            .attrs
            .non_empty(key)
            .map(|text| {
                text.trim()
                    .parse::<f64>()
                    .map_err(|_| format!("graph attribute {key}=\"{text}\" is not a number"))
            })
            .transpose()
    };
    let max_tokens = match number("budget_max_tokens")? {
        Some(n) if n >= 1.0 && n.fract() == 0.0 && n < 1e18 =>
        {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Some(n as u64)
        }
        Some(n) => {
            return Err(format!(
                "graph attribute budget_max_tokens must be a positive whole number of tokens, not {n}"
            ));
        }
        None => None,
    };
    let budget = Budget {
        max_cost: number("budget_max_cost")?,
        max_tokens,
        warn_at: number("budget_warn_at")?,
    };
    budget
        .check()
        .map_err(|e| format!("graph attribute budget_{e}"))?;
    Ok(budget)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run recorded in a real store in `home`, as `weft run` records one.
    fn recorded(home: &Home) -> (Store, String) {
        let mut store = Store::open(home).expect("store");
        let id = ulid::Ulid::generate().to_string();
        store
            .create_run(&NewRun {
                id: id.clone(),
                workflow_name: "wf".into(),
                workflow_path: None,
                goal: None,
                run_dir: home.runs_dir().join(&id),
                work_dir: home.runs_dir(),
                inputs: Map::new(),
                options: Value::Null,
                labels: Vec::new(),
                node_count: 2,
                edge_count: 1,
                created_at: crate::store::timestamp(),
            })
            .expect("create run");
        (store, id)
    }

    #[test]
    fn a_run_that_ended_is_not_resumable_and_the_refusal_says_when_and_why() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (mut store, id) = recorded(&Home::at(dir.path().join("home")));
        store
            .set_status(&id, RunStatus::Failed, Some("stage test failed"))
            .expect("status");
        let run = store.find_run(&id).expect("run");
        let refused = resumable(&run).expect_err("a failed run does not resume");
        assert!(matches!(refused, NotResumable::Ended { .. }), "{refused:?}");
        let said = refused.to_string();
        assert!(
            said.starts_with(&format!("run {id} already failed at 20"))
                && said.ends_with(
                    "; only interrupted or cancelled runs can be resumed (it failed: stage test failed)"
                ),
            "{said}"
        );
        assert_eq!(EngineError::from(refused).code(), "run.not_resumable");
    }

    #[test]
    fn only_a_run_another_live_process_executes_is_refused_as_still_running() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (mut store, id) = recorded(&Home::at(dir.path().join("home")));
        for status in [
            RunStatus::Queued,
            RunStatus::Cancelled,
            RunStatus::Interrupted,
        ] {
            store.set_status(&id, status, None).expect("status");
            let run = store.find_run(&id).expect("run");
            assert_eq!(resumable(&run), Ok(()), "{status} resumes");
        }
        // This process (a daemon resuming what it runs itself) is not "another".
        store
            .mark_running(&id, std::process::id())
            .expect("running");
        let run = store.find_run(&id).expect("run");
        assert_eq!(resumable(&run), Ok(()));

        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        store.mark_running(&id, other.id()).expect("running");
        let run = store.find_run(&id).expect("run");
        let refused = resumable(&run);
        let _ = other.kill();
        let _ = other.wait();
        assert_eq!(
            refused,
            Err(NotResumable::StillRunning {
                run_id: id.clone(),
                pid: other.id()
            })
        );
        // Killed and reaped: a crashed executor's run resumes.
        assert_eq!(resumable(&run), Ok(()));
    }
}
