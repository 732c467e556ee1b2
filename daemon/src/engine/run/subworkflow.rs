//! Sub-workflow (`house`): runs a child workflow as a run of its own, nested
//! under the parent's stage (tutorials/sub-workflow.mdx).
//!
//! - The child comes from `stack.child_workflow` (alias
//!   `stack.child_dotfile`; a path relative to the parent's file) or
//!   `stack.child_dot_source` (inline text).
//! - It is recorded as a run with its own stages, events and checkpoints,
//!   linked to the parent stage (`options.parent`), with its run directory
//!   at `nodes/{node}/child/` under the parent's. It starts from a copy of
//!   the parent's context; when it ends, the keys it added or changed are
//!   merged back, and its outcome becomes the stage's.
//! - The manager polls every `manager.poll_interval` (default 45 s):
//!   `manager.stop_condition` is checked against the parent's context
//!   overlaid with the child's latest committed context (decision: the
//!   child's progress is what a stop condition usually watches); when it
//!   holds, the child is cancelled and the stage succeeds. After
//!   `manager.max_cycles` polls (default 1000) the child is cancelled and the
//!   stage fails.
//! - Resuming the parent resumes an unfinished child, and reuses a child
//!   that had already finished.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rand::RngExt;
use serde_json::{Map, Value};

use super::{MAX_NESTING, Runner, too_deep};
use crate::engine::checkpoint::Checkpoint;
use crate::engine::launch::{self, Conclusion, EngineError, RunRequest, Services};
use crate::exec::cancel::CancelReason;
use crate::lang::condition;
use crate::lang::graph::Node;
use crate::model::{EventKind, FailureClass, Outcome, ParentLink, RunStatus};
use crate::store::{RunFilter, RunRecord, StoreError};
use crate::util::lock::lock;

/// `manager.poll_interval` when unset.
pub(crate) const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(45);
/// `manager.max_cycles` when unset.
pub(crate) const DEFAULT_MAX_CYCLES: u64 = 1000;

/// The manager's settings from the node's `manager.*` attributes.
#[derive(Debug)]
struct Manager {
    stop_condition: Option<condition::Condition>,
    poll: Duration,
    max_cycles: u64,
}

/// Why the manager stopped the child.
#[derive(Debug, Clone, PartialEq)]
enum Stopped {
    Condition,
    MaxCycles(u64),
}

impl Runner<'_> {
    /// Runs a sub-workflow node's child run and returns the stage's outcome.
    pub(super) async fn subworkflow(
        &mut self,
        node: &Node,
        visit: u32,
        dir: &Path,
    ) -> Result<Outcome, StoreError> {
        let at = Some((&*node.id, visit));
        if self.nesting + 1 > MAX_NESTING {
            return Ok(too_deep("this sub-workflow"));
        }
        let (source, path, base_dir) = match self.child_source(node) {
            Ok(found) => found,
            Err(problem) => return Ok(Outcome::failed(FailureClass::Deterministic, problem)),
        };
        let link = ParentLink {
            run_id: self.env.run_id.clone(),
            node_id: node.id.to_string(),
            visit,
        };
        let existing = self.child_of(&link)?;
        let services = Services {
            home: self.env.home.clone(),
            caller_env: Some(self.env.models.env()),
            store: self.recorder.store_handle(),
            interviewer: self.env.interviewer.clone(),
            clock: self.env.clock.clone(),
            cancel: self.env.cancel.child(),
            observer: self.recorder.observer(),
            nesting: self.nesting + 1,
            agents: self.env.agents.clone(),
            budget: Some(self.env.budget.clone()),
            sandbox: self.env.sandbox.clone(),
        };
        let parent_context = self.state.context.values().clone();
        let stop_condition = node
            .attrs
            .non_empty("manager.stop_condition")
            .and_then(|text| condition::parse(&text).ok());
        let poll = node
            .attrs
            .value("manager.poll_interval")
            .and_then(crate::lang::value::Value::as_duration)
            .map_or(DEFAULT_POLL_INTERVAL, crate::lang::value::Duration::to_std)
            .max(Duration::from_millis(10));
        let max_cycles = node
            .attrs
            .value("manager.max_cycles")
            .and_then(crate::lang::value::Value::as_int)
            .map_or(DEFAULT_MAX_CYCLES, |n| {
                u64::try_from(n.max(1)).unwrap_or(u64::MAX)
            });
        let limits = Manager {
            stop_condition,
            poll,
            max_cycles,
        };

        let (result, stopped) = match existing {
            Some(record) if record.status.is_terminal() => (Ok(concluded(&record)), None),
            Some(record) => {
                let _ = self.recorder.emit(
                    EventKind::RunNotice {
                        message: format!("resuming child run {}", record.id),
                    },
                    at,
                );
                let child = launch::resume(&record, &services);
                self.manage(child, &services, &link, &parent_context, &limits)
                    .await
            }
            None => {
                let request = RunRequest {
                    workflow_path: path,
                    source,
                    goal: None,
                    inputs: self.env.inputs.clone(),
                    dry_run: self.env.dry_run,
                    auto_approve: false,
                    seed: Some(self.rng.random()),
                    work_dir: self.env.work_dir.clone(),
                    labels: Vec::new(),
                    parent: Some(link.clone()),
                    run_dir: Some(dir.join("child")),
                    context: Some(parent_context.clone()),
                    base_dir: Some(base_dir),
                    artifacts: self.env.artifacts.patterns().to_vec(),
                    // The whole environment, keys included: the child's
                    // prompt nodes call models as the parent's do (what is
                    // stored is filtered as always).
                    env: Some(self.env.models.env()),
                    env_policy: self.env.env_policy.clone(),
                    model: self.env.models.choice().clone(),
                    // A child run spends against its parent's budget
                    // (`services.budget`); its graph's own is not used.
                    budget: crate::model::Budget::default(),
                    agent: self.env.agent.clone(),
                    // A child works in its parent's worktree; the parent's
                    // stage commits what the child changed.
                    no_checkpoint: true,
                    include_dirty: false,
                    // The parent's retro covers its children.
                    retro: Some(false),
                    // Its commands run in the parent's sandbox
                    // (`services.sandbox`).
                    sandbox: crate::model::SandboxConfig::default(),
                };
                let child = launch::start(request, &services);
                self.manage(child, &services, &link, &parent_context, &limits)
                    .await
            }
        };
        Ok(self.outcome(result, stopped, &parent_context))
    }

    /// Runs the child while polling the stop condition and the cycle limit.
    async fn manage(
        &self,
        child: impl std::future::Future<Output = Result<Conclusion, EngineError>>,
        services: &Services,
        link: &ParentLink,
        parent_context: &Map<String, Value>,
        limits: &Manager,
    ) -> (Result<Conclusion, EngineError>, Option<Stopped>) {
        let Manager {
            stop_condition,
            poll,
            max_cycles,
        } = limits;
        let (poll, max_cycles) = (*poll, *max_cycles);
        let stop_condition = stop_condition.as_ref();
        let stopped: Mutex<Option<Stopped>> = Mutex::new(None);
        let manager = async {
            let mut cycles = 0u64;
            loop {
                tokio::time::sleep(poll).await;
                cycles += 1;
                if let Some(cond) = stop_condition {
                    let watched = self.watched_context(link, parent_context);
                    let env = condition::Env {
                        outcome: "",
                        preferred_label: "",
                        context: &watched,
                    };
                    if cond.evaluate(&env) {
                        set(&stopped, Stopped::Condition);
                        services
                            .cancel
                            .cancel(CancelReason::User("manager.stop_condition is met".into()));
                        return;
                    }
                }
                if cycles >= max_cycles {
                    set(&stopped, Stopped::MaxCycles(cycles));
                    services.cancel.cancel(CancelReason::User(format!(
                        "manager.max_cycles ({max_cycles}) reached"
                    )));
                    return;
                }
            }
        };
        tokio::pin!(child);
        tokio::pin!(manager);
        let mut manager_done = false;
        let result = loop {
            tokio::select! {
                result = &mut child => break result,
                () = &mut manager, if !manager_done => manager_done = true,
            }
        };
        let stopped = lock(&stopped).clone();
        (result, stopped)
    }

    /// The parent's context overlaid with the child's latest checkpoint.
    fn watched_context(
        &self,
        link: &ParentLink,
        parent_context: &Map<String, Value>,
    ) -> Map<String, Value> {
        let mut watched = parent_context.clone();
        let latest = self
            .child_of(link)
            .ok()
            .flatten()
            .and_then(|child| child.checkpoint)
            .and_then(|c| Checkpoint::parse(&c).ok());
        if let Some(cp) = latest {
            watched.extend(cp.context_values);
        }
        watched
    }

    /// The stage's outcome from how the child ended.
    fn outcome(
        &self,
        result: Result<Conclusion, EngineError>,
        stopped: Option<Stopped>,
        parent_context: &Map<String, Value>,
    ) -> Outcome {
        let conclusion = match result {
            Ok(c) => c,
            Err(EngineError::InvalidWorkflow(diagnostics)) => {
                let first = diagnostics
                    .iter()
                    .find(|d| d.severity == crate::lang::diagnostic::Severity::Error)
                    .map(|d| match d.span {
                        Some(span) => format!("{}:{}: {}", span.line, span.column, d.message),
                        None => d.message.clone(),
                    })
                    .unwrap_or_default();
                return Outcome::failed(
                    FailureClass::Deterministic,
                    format!("the child workflow is invalid: {first}"),
                );
            }
            Err(e) => {
                return Outcome::failed(
                    FailureClass::Deterministic,
                    format!("the child workflow could not run: {e}"),
                );
            }
        };
        let updates = self.child_updates(&conclusion.run_id, parent_context);
        let mut outcome = match (conclusion.status, &stopped) {
            (RunStatus::Succeeded, _) => Outcome::succeeded(),
            (RunStatus::Cancelled, Some(Stopped::Condition)) => {
                let mut o = Outcome::succeeded();
                o.notes
                    .push("manager.stop_condition was met; the child run was cancelled".into());
                o
            }
            (RunStatus::Cancelled, Some(Stopped::MaxCycles(n))) => Outcome::failed(
                FailureClass::Deterministic,
                format!(
                    "the child run was still going after {n} polls (manager.max_cycles); it was cancelled"
                ),
            ),
            (RunStatus::Cancelled, None) => Outcome::failed(
                FailureClass::Canceled,
                format!(
                    "child run {} was cancelled: {}",
                    conclusion.run_id,
                    conclusion
                        .failure_reason
                        .as_deref()
                        .unwrap_or("no reason given")
                ),
            ),
            (_, _) => Outcome::failed(
                FailureClass::Deterministic,
                format!(
                    "child run {} failed: {}",
                    conclusion.run_id,
                    conclusion
                        .failure_reason
                        .as_deref()
                        .unwrap_or("no reason given")
                ),
            ),
        };
        outcome.context_updates = updates;
        outcome.context_updates.insert(
            "stack.child.run_id".into(),
            conclusion.run_id.clone().into(),
        );
        outcome.context_updates.insert(
            "stack.child.status".into(),
            conclusion.status.as_str().into(),
        );
        outcome
    }

    /// The keys the child added or changed, from its last checkpoint.
    fn child_updates(
        &self,
        child_id: &str,
        parent_context: &Map<String, Value>,
    ) -> Map<String, Value> {
        let record = self.recorder.store().run(child_id).ok().flatten();
        let Some(cp) = record
            .and_then(|r| r.checkpoint)
            .and_then(|c| Checkpoint::parse(&c).ok())
        else {
            return Map::new();
        };
        cp.context_values
            .into_iter()
            .filter(|(k, v)| {
                !(k.starts_with("internal.")
                    || k.starts_with("graph.")
                    || k == "current_node"
                    || parent_context.get(k) == Some(v))
            })
            .collect()
    }

    /// The child's text, its path (when from a file) and where its `@file`
    /// references resolve.
    fn child_source(&self, node: &Node) -> Result<(String, Option<PathBuf>, PathBuf), String> {
        let file = node
            .attrs
            .non_empty("stack.child_workflow")
            .or_else(|| node.attrs.non_empty("stack.child_dotfile"));
        if let Some(written) = file {
            let path = crate::lang::workflow::resolve_path(
                &self.env.base_dir,
                written.trim().trim_start_matches('@'),
            );
            // Read as the loader checked it: inside the parent's tree, a
            // regular file, capped like any workflow.
            let text = crate::lang::files::Tree::of(&self.env.base_dir)
                .read_text(&path, crate::limits::MAX_WORKFLOW_BYTES)
                .map_err(|e| format!("cannot read the child workflow {}: {e}", path.display()))?;
            let base = path
                .parent()
                .map_or_else(|| self.env.base_dir.clone(), Path::to_path_buf);
            return Ok((text, Some(path), base));
        }
        if let Some(inline) = node.attrs.non_empty("stack.child_dot_source") {
            return Ok((inline.into_owned(), None, self.env.base_dir.clone()));
        }
        Err("sub-workflow node has neither stack.child_workflow nor stack.child_dot_source".into())
    }

    /// The child run already started for this parent stage, if any.
    fn child_of(&self, link: &ParentLink) -> Result<Option<RunRecord>, StoreError> {
        let runs = self.recorder.store().list_runs(&RunFilter::default())?;
        Ok(runs.into_iter().find(|r| {
            r.options
                .get("parent")
                .and_then(|p| serde_json::from_value::<ParentLink>(p.clone()).ok())
                .as_ref()
                == Some(link)
        }))
    }
}

fn set(slot: &Mutex<Option<Stopped>>, value: Stopped) {
    *lock(slot) = Some(value);
}

/// A conclusion rebuilt from a finished child's record.
fn concluded(record: &RunRecord) -> Conclusion {
    Conclusion {
        run_id: record.id.clone(),
        status: record.status,
        duration_ms: 0,
        failure_reason: record.failure_reason.clone(),
        run_dir: record.run_dir.clone(),
        stages: Vec::new(),
        failed_stages: record.failed_stages.clone(),
        exit_node: None,
    }
}
