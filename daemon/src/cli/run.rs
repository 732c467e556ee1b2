//! `weft run FILE` and `weft resume RUN`: read the arguments and the run
//! configuration, then hand the run to weftd, which executes it while this
//! command follows it (`remote.rs`); with `--no-daemon`, execute it in this
//! process instead, with the same live progress on stderr.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use crate::model::{AgentDefaults, Budget, EnvPolicy, ModelChoice};

use super::exit::{CliError, CliResult, run_exit};
use super::progress::{Gates, Progress};
use super::report::{self, Style};
use super::{ResumeArgs, RunArgs};
use crate::engine::clock::Clock;
use crate::engine::interviewer::{Answer, AutoApprove, Console, Interviewer, Question};
use crate::engine::{Conclusion, EngineError, RunRequest, Services};
use crate::exec::cancel::{Cancel, CancelReason};
use crate::store::{Home, Store};

/// A run configuration file (execution/run-configuration.mdx): the parts
/// Weft reads. Other keys are ignored with a warning naming their position
/// (see [`crate::config::warnings`]).
#[derive(Debug, Default, Deserialize)]
struct RunConfig {
    #[serde(rename = "_version", default)]
    version: Option<i64>,
    #[serde(default)]
    workflow: WorkflowSection,
    #[serde(default)]
    run: RunSection,
}

#[derive(Debug, Default, Deserialize)]
struct WorkflowSection {
    graph: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct RunSection {
    goal: Option<String>,
    working_dir: Option<String>,
    #[serde(default)]
    inputs: BTreeMap<String, toml::Value>,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    artifacts: crate::engine::artifacts::ArtifactsConfig,
    #[serde(default)]
    model: ModelSection,
    /// `[run.env]`: variables to pass to commands or withhold from them.
    #[serde(default)]
    env: EnvPolicy,
    /// `[run.agent]`: limits and permissions for agent stages.
    #[serde(default)]
    agent: AgentDefaults,
    /// `[run.checkpoint]`: git checkpoint mode.
    #[serde(default)]
    checkpoint: CheckpointSection,
    /// `[run.budget]`: spending limits.
    #[serde(default)]
    budget: Budget,
    /// `retros = true|false`: a retrospective when the run ends.
    retros: Option<bool>,
    /// `[run.sandbox]`: where commands run (docs/sandbox.md).
    #[serde(default)]
    sandbox: crate::model::SandboxConfig,
}

/// `[run.checkpoint]`: `enabled = false` is `--no-checkpoint`,
/// `include_dirty = true` is `--include-dirty` (docs/git.md).
#[derive(Debug, Deserialize)]
struct CheckpointSection {
    #[serde(default = "enabled")]
    enabled: bool,
    #[serde(default)]
    include_dirty: bool,
}

impl Default for CheckpointSection {
    fn default() -> CheckpointSection {
        CheckpointSection {
            enabled: true,
            include_dirty: false,
        }
    }
}

fn enabled() -> bool {
    true
}

/// `[run.model]` (core-concepts/models.mdx).
#[derive(Debug, Default, Deserialize)]
struct ModelSection {
    name: Option<String>,
    provider: Option<String>,
    #[serde(default)]
    fallbacks: Vec<String>,
}

/// `weft run`.
pub fn run(args: &RunArgs) -> CliResult {
    // This process runs the stages (--no-daemon) or is the parent of the
    // daemon it starts: no keys in its environment, where commands could
    // read them.
    crate::secrets::protect_process("weft");
    if let Ok(home) = Home::from_env() {
        report::warn_about_settings(&home);
    }
    let request = request(args).map_err(CliError::Usage)?;
    if !args.no_daemon {
        return super::block_on(super::remote::run(request, args.json, args.detach));
    }
    // Gates of a dry run answer themselves (the engine auto-approves them).
    let auto = args.auto_approve || args.dry_run;
    let shown = (
        request
            .workflow_path
            .as_deref()
            .map_or_else(String::new, |p| p.display().to_string()),
        request.source.clone(),
    );
    execute(args.json, auto, shown, |services| {
        Box::pin(crate::engine::start(request, services))
    })
}

/// `weft resume`.
pub fn resume(args: &ResumeArgs) -> CliResult {
    crate::secrets::protect_process("weft");
    raise_budget(args)?;
    if !args.no_daemon {
        return super::block_on(super::remote::resume(
            &args.run,
            args.auto_approve,
            args.json,
        ));
    }
    let home = super::home()?;
    let record = Store::open(&home)
        .and_then(|s| s.find_run(&args.run))
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let stored_auto = record
        .options
        .get("auto_approve")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let stored_dry_run = record
        .options
        .get("dry_run")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let auto = args.auto_approve || stored_auto || stored_dry_run;
    let shown = (
        record.run_dir.join("graph.fabro").display().to_string(),
        crate::limits::read_text_capped(
            &record.run_dir.join("graph.fabro"),
            crate::limits::MAX_WORKFLOW_BYTES,
        )
        .unwrap_or_default(),
    );
    execute(args.json, auto, shown, move |services| {
        Box::pin(async move { crate::engine::resume(&record, services).await })
    })
}

type Launch<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Conclusion, EngineError>> + 'a>>;

/// Asks on this terminal and tells the progress display when the answer
/// typed here has ended the prompt's line. A question whose wait times out
/// drops the `ask` before that: its prompt line is still open, and the
/// display ends it before printing the timeout notice.
struct Prompting {
    console: Console,
    progress: Progress,
}

impl Interviewer for Prompting {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Answer> + Send + 'a>> {
        Box::pin(async move {
            let answer = self.console.ask(question).await;
            self.progress.prompt_closed();
            answer
        })
    }
}

/// Sets up the store, progress display and signals, then runs.
/// `auto`: gates answer themselves (`--auto-approve`, `--dry-run`);
/// otherwise they are asked on this terminal.
fn execute(
    json: bool,
    auto: bool,
    (file, source): (String, String),
    launch: impl for<'a> FnOnce(&'a Services) -> Launch<'a>,
) -> CliResult {
    let home = super::home()?;
    let mut store = Store::open(&home)
        .map_err(|e| CliError::Usage(format!("cannot open the run store: {e}")))?;
    // A long run commits thousands of times: checkpoints go to a thread.
    store
        .checkpoint_off_thread()
        .map_err(|e| CliError::Usage(format!("cannot open the run store: {e}")))?;
    let progress = Progress::stderr(if auto { Gates::Auto } else { Gates::Here });
    let interviewer: Arc<dyn Interviewer> = if auto {
        Arc::new(AutoApprove)
    } else {
        Arc::new(Prompting {
            console: Console::stdio(),
            progress: progress.clone(),
        })
    };
    let cancel = Cancel::new();
    let services = Services {
        home,
        caller_env: None,
        store: Arc::new(Mutex::new(store)),
        interviewer,
        clock: Clock::System,
        cancel: cancel.clone(),
        observer: Some(progress.observer()),
        nesting: 0,
        agents: crate::engine::steering::RunningAgents::default(),
        budget: None,
        sandbox: None,
    };
    super::block_on(async {
        let signals = tokio::spawn(forward_signals(cancel.clone()));
        let ticker = progress.spawn_ticker();
        let result = launch(&services).await;
        signals.abort();
        ticker.abort();
        progress.finish();
        match result {
            Ok(conclusion) => {
                if json {
                    println!(
                        "{}",
                        serde_json::to_string(&conclusion).unwrap_or_else(|_| "{}".into())
                    );
                }
                Ok(run_exit(conclusion.status))
            }
            Err(EngineError::InvalidWorkflow(diagnostics)) => Err(CliError::InvalidWorkflow {
                file,
                text: source,
                diagnostics,
            }),
            Err(e) => Err(CliError::Usage(e.to_string())),
        }
    })
}

/// Ctrl-C and SIGTERM cancel the run; its stage's processes are killed and
/// the run is recorded as cancelled, resumable.
async fn forward_signals(cancel: Cancel) {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => cancel.cancel(CancelReason::User("interrupted (Ctrl-C)".into())),
        () = term => cancel.cancel(CancelReason::User("terminated (SIGTERM)".into())),
    }
}

/// The run request from the arguments and, for a `.toml` file, the run
/// configuration. Flags override the file.
fn request(args: &RunArgs) -> Result<RunRequest, String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    let file = absolute(&cwd, &args.file);
    let mut goal = None;
    let mut inputs = BTreeMap::new();
    let mut labels = Vec::new();
    let mut work_dir = None;
    let mut artifacts = Vec::new();
    let mut model = ModelChoice::default();
    let mut env_policy = EnvPolicy::default();
    let mut agent = AgentDefaults::default();
    let mut budget = Budget::default();
    let mut checkpoint = CheckpointSection::default();
    let mut retro = None;
    let mut sandbox = crate::model::SandboxConfig::default();
    let workflow_path = if file.extension().is_some_and(|e| e == "toml") {
        let text = crate::config::read(&file)?
            .ok_or_else(|| format!("cannot read `{}`: no such file", file.display()))?;
        let (config, skipped): (RunConfig, _) =
            crate::config::parse(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let shown = file.display().to_string();
        for d in crate::config::warnings(&shown, &text, &skipped) {
            eprintln!("{}", report::human(&d, &shown, &text, Style::for_stderr()));
        }
        if let Some(v) = config.version
            && v != 1
        {
            return Err(format!(
                "{}: _version = {v} is not supported (this Weft reads version 1)",
                file.display()
            ));
        }
        let dir = file.parent().map_or_else(|| cwd.clone(), Path::to_path_buf);
        goal = config.run.goal;
        labels = config.run.labels;
        artifacts = config.run.artifacts.include;
        env_policy = config.run.env;
        env_policy
            .check()
            .map_err(|e| format!("{}: {e}", file.display()))?;
        agent = config.run.agent;
        checkpoint = config.run.checkpoint;
        budget = config.run.budget;
        budget
            .check()
            .map_err(|e| format!("{}: [run.budget] {e}", file.display()))?;
        retro = config.run.retros;
        sandbox = config.run.sandbox;
        crate::engine::handlers::check_agent_defaults(&agent)
            .map_err(|e| format!("{}: {e}", file.display()))?;
        model = ModelChoice {
            model: config.run.model.name,
            provider: config.run.model.provider,
            fallbacks: config.run.model.fallbacks,
        };
        work_dir = config
            .run
            .working_dir
            .map(|w| absolute(&dir, Path::new(&w)));
        for (k, v) in config.run.inputs {
            let text = match v {
                toml::Value::String(s) => s,
                other => serde_json::to_value(&other)
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
            };
            inputs.insert(k, text);
        }
        absolute(
            &dir,
            Path::new(config.workflow.graph.as_deref().unwrap_or("workflow.fabro")),
        )
    } else {
        file
    };
    let source = crate::limits::read_text_capped(&workflow_path, crate::limits::MAX_WORKFLOW_BYTES)
        .map_err(|e| format!("cannot read `{}`: {e}", workflow_path.display()))?;
    for (k, v) in &args.load.inputs {
        inputs.insert(k.clone(), v.clone());
    }
    if args.load.goal.is_some() {
        goal.clone_from(&args.load.goal);
    }
    labels.extend(args.labels.iter().cloned());
    if let Some(dir) = &args.work_dir {
        work_dir = Some(absolute(&cwd, dir));
    }
    // Flags override the file, as for the goal and inputs.
    if args.model.is_some() {
        model.model.clone_from(&args.model);
    }
    if args.provider.is_some() {
        model.provider.clone_from(&args.provider);
    }
    let flags = Budget {
        max_cost: args.max_cost,
        max_tokens: args.max_tokens,
        warn_at: None,
    };
    flags
        .check()
        .map_err(|e| format!("--{}", e.replacen('_', "-", 1)))?;
    let budget = flags.or(budget);
    let sandbox = crate::model::SandboxConfig {
        provider: args.sandbox,
        image: args.sandbox_image.clone(),
        keep: args
            .preserve_sandbox
            .then_some(crate::model::sandbox::Keep::Always),
        ..crate::model::SandboxConfig::default()
    }
    .or(sandbox);
    crate::sandbox::config::settings(&sandbox).map_err(|e| match args.file.extension() {
        Some(ext) if ext == "toml" => format!("{}: {e}", args.file.display()),
        _ => e,
    })?;
    Ok(RunRequest {
        workflow_path: Some(workflow_path),
        source,
        goal,
        inputs,
        dry_run: args.dry_run,
        auto_approve: args.auto_approve,
        seed: args.seed,
        work_dir: work_dir.unwrap_or(cwd),
        labels,
        artifacts,
        model,
        env_policy,
        agent,
        budget,
        no_checkpoint: args.no_checkpoint || (!args.include_dirty && !checkpoint.enabled),
        include_dirty: args.include_dirty || (!args.no_checkpoint && checkpoint.include_dirty),
        retro: match (args.retro, args.no_retro) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => retro,
        },
        sandbox,
        ..RunRequest::default()
    })
}

fn absolute(base: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

/// `weft resume --max-cost/--max-tokens`: records the new limits with the
/// run before it resumes (the run is not executing, so its stored options
/// are this command's to change), keeping the limits not given.
fn raise_budget(args: &ResumeArgs) -> Result<(), CliError> {
    if args.max_cost.is_none() && args.max_tokens.is_none() {
        return Ok(());
    }
    let flags = Budget {
        max_cost: args.max_cost,
        max_tokens: args.max_tokens,
        warn_at: None,
    };
    flags
        .check()
        .map_err(|e| CliError::Usage(format!("--{}", e.replacen('_', "-", 1))))?;
    let home = super::home()?;
    let mut store = Store::open(&home).map_err(|e| CliError::Usage(e.to_string()))?;
    let record = store
        .find_run(&args.run)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    crate::engine::launch::resumable(&record).map_err(|e| CliError::Usage(e.to_string()))?;
    let stored: Budget = record
        .options
        .get("budget")
        .and_then(|b| serde_json::from_value(b.clone()).ok())
        .unwrap_or_default();
    store
        .set_budget(&record.id, &flags.or(stored))
        .map_err(|e| CliError::Usage(e.to_string()))?;
    Ok(())
}
