//! The run loop: start → handler → outcome → edge selection → checkpoint →
//! next node, until the exit node (where goal gates are checked) or until
//! the run fails, is cancelled or has nowhere to go.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rand::RngExt;
use rand::rngs::SmallRng;
use serde_json::{Map, Value, json};

use super::cancel::CancelReason;
use super::checkpoint::{CHECKPOINT_VERSION, Checkpoint};
use super::context::{Context, OFFLOAD_BYTES};
use super::handlers::{self, RunEnv, StageCx};
use super::recorder::Recorder;
use super::retry::RetryPolicy;
use super::routing::{self, Route, Selection, Subject};
use crate::lang::graph::{Graph, Handler, Node};
use crate::model::{EdgeReason, EventKind};
use crate::model::{FailureClass, Outcome, Status, failure_signature};
use crate::store::{BlobRef, StageCommit, StageRecord, StoreError};

/// The circuit breaker's default limit (execution/failures.mdx).
pub const DEFAULT_SIGNATURE_LIMIT: u32 = 3;

/// The graph-wide visit limit of a dry run.
pub const DRY_RUN_VISIT_LIMIT: u32 = 10;

/// The stall watchdog's default, in seconds.
pub const DEFAULT_STALL_TIMEOUT_SECS: u64 = 1800;

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    Succeeded,
    Failed(String),
    Cancelled(String),
    /// A parallel branch reached its join node (never the run's own end).
    Joined(String),
    /// Stopped by a daemon shutdown; resumable.
    Interrupted(String),
}

/// A run's mutable state: the checkpoint plus the per-node history that
/// the stages table holds.
#[derive(Debug, Default)]
pub struct State {
    pub context: Context,
    pub visits: BTreeMap<String, u32>,
    pub retries: BTreeMap<String, u32>,
    /// Each node's latest outcome (goal gates read it).
    pub outcomes: BTreeMap<String, Outcome>,
    /// Stages committed so far.
    pub completed: u32,
    pub loop_signatures: BTreeMap<String, u32>,
    pub restart_signatures: BTreeMap<String, u32>,
}

impl State {
    /// The state a checkpoint and the run's committed stages describe.
    #[must_use]
    pub fn restore(cp: Checkpoint, stages: &[StageRecord]) -> State {
        let mut state = State {
            context: Context::from_map(cp.context_values),
            completed: cp.completed,
            loop_signatures: cp.loop_failure_signatures,
            restart_signatures: cp.restart_failure_signatures,
            ..State::default()
        };
        // Stages come in rank order, so later visits overwrite earlier ones.
        for stage in stages {
            let Some(outcome) = stage
                .outcome
                .clone()
                .and_then(|o| serde_json::from_value::<Outcome>(o).ok())
            else {
                continue; // running or interrupted: not committed
            };
            let visits = state.visits.entry(stage.node_id.clone()).or_insert(0);
            *visits = (*visits).max(stage.visit);
            *state.retries.entry(stage.node_id.clone()).or_insert(0) +=
                stage.attempts.saturating_sub(1);
            state.outcomes.insert(stage.node_id.clone(), outcome);
        }
        state
    }

    pub(super) fn checkpoint(&self, current: Option<&str>, next: Option<&str>) -> Checkpoint {
        Checkpoint {
            version: CHECKPOINT_VERSION,
            timestamp: crate::store::timestamp(),
            current_node: current.map(str::to_string),
            next_node_id: next.map(str::to_string),
            completed: self.completed,
            context_values: self.context.values().clone(),
            loop_failure_signatures: self.loop_signatures.clone(),
            restart_failure_signatures: self.restart_signatures.clone(),
            parallel: None,
        }
    }
}

/// Everything one execution of a run needs.
pub struct Runner<'a> {
    pub graph: &'a Graph,
    pub env: &'a RunEnv,
    pub recorder: &'a Recorder,
    pub state: State,
    pub rng: SmallRng,
    /// When checkpoint.json was last written, and a newer checkpoint not
    /// yet written to it.
    pub checkpoint_written: Option<Instant>,
    pub pending_checkpoint: Option<Checkpoint>,
    /// Set when this runner executes one branch of a parallel stage.
    pub branch: Option<super::parallel::Branch>,
    /// Branch progress from the checkpoint of a resumed run, for the
    /// parallel node it names.
    pub resume_parallel: Option<super::checkpoint::ParallelProgress>,
    /// The edge that led to the next node (its `fidelity` applies there);
    /// `None` at the start, after a jump or a resume.
    pub entered_by: Option<usize>,
    /// Set until the first stage after a resume has started: it cannot
    /// continue a conversation that is no longer in memory, so `full`
    /// fidelity degrades to `summary:high` there (execution/context.mdx).
    pub resumed: bool,
    /// How many runners this one runs inside: parallel branches and
    /// sub-workflow runs each add one (see [`MAX_NESTING`]).
    pub nesting: usize,
}

/// How deeply parallel fan-outs and sub-workflows may nest, counted
/// together. Each level runs inside the one around it, on one thread's
/// stack (about 150 KB a level in a debug build, far less in release), so
/// without a limit a workflow that runs itself as its own child, or a
/// generated chain of fan-outs inside fan-outs, would overflow the stack and
/// take the daemon down with every run in it. Real workflows nest a few
/// levels.
pub const MAX_NESTING: usize = 16;

/// The failure of a parallel or sub-workflow stage that would nest one
/// level too deep.
pub(super) fn too_deep(what: &str) -> Outcome {
    Outcome::failed(
        FailureClass::Deterministic,
        format!(
            "{what} would nest more than {MAX_NESTING} levels of parallel fan-outs and sub-workflows (does a workflow run itself as its own child?)"
        ),
    )
}

impl<'a> Runner<'a> {
    /// Records the fidelity the stage of `node` runs at as
    /// `internal.fidelity`: the entering edge's, else the node's, else the
    /// graph's `default_fidelity`, else `compact`.
    fn set_fidelity(&mut self, node: &Node) {
        let graph = self.graph;
        let edge = self
            .entered_by
            .take()
            .and_then(|i| graph.edges.get(i))
            .and_then(|e| e.attrs.non_empty("fidelity"));
        let mut fidelity = super::preamble::Fidelity::resolve(
            edge.as_deref(),
            node.attrs.non_empty("fidelity").as_deref(),
            graph.attrs.non_empty("default_fidelity").as_deref(),
        );
        if std::mem::take(&mut self.resumed) {
            fidelity = fidelity.after_resume();
        }
        self.state
            .context
            .set("internal.fidelity", fidelity.as_str());
    }

    /// Runs from `next` until the run ends.
    pub async fn drive(&mut self, mut next: String) -> Result<Finish, StoreError> {
        loop {
            if let Some(reason) = self.env.cancel.reason() {
                return Ok(cancelled(reason));
            }
            let graph = self.graph;
            let Some(node) = graph.node(&next) else {
                return Ok(Finish::Failed(format!(
                    "the next node `{next}` does not exist in the workflow"
                )));
            };
            if let Some(branch) = &self.branch
                && (branch.join.as_deref() == Some(&*next) || node.handler == Handler::Exit)
            {
                // A branch ends where the branches meet (or at the exit,
                // which belongs to the run, not to one branch).
                return Ok(Finish::Joined(next));
            }
            if node.handler == Handler::Exit
                && let Some(jump) = self.check_goal_gates(node)?
            {
                match jump {
                    Ok(target) => {
                        next = target;
                        continue;
                    }
                    Err(reason) => return Ok(Finish::Failed(reason)),
                }
            }
            let visit = self.state.visits.get(&*node.id).copied().unwrap_or(0) + 1;
            if let Some(reason) = self.visit_limit_reached(node, visit) {
                return Ok(Finish::Failed(reason));
            }
            match self.stage(node, visit).await? {
                Step::Next(target) => next = target,
                Step::Finish(finish) => return Ok(finish),
            }
        }
    }

    /// `max_visits` on the node, else graph `max_node_visits`, else 10 in a
    /// dry run, else unlimited. Zero means unlimited, as the reference says
    /// of `max_node_visits`; a node's `max_visits=0` lifts the graph's (and
    /// the dry run's) limit for that node.
    fn visit_limit_reached(&self, node: &Node, visit: u32) -> Option<String> {
        let int = |v: Option<&crate::lang::value::Value>| {
            v.and_then(crate::lang::value::Value::as_int)
                .filter(|n| *n >= 0)
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
        };
        let (limit, scope) = match int(node.attrs.value("max_visits")) {
            Some(0) => return None,
            Some(n) => (n, "node"),
            None => match int(self.graph.attrs.value("max_node_visits")) {
                Some(0) => return None,
                Some(n) => (n, "graph"),
                None if self.env.dry_run => (DRY_RUN_VISIT_LIMIT, "dry-run"),
                None => return None,
            },
        };
        (visit > limit).then(|| {
            format!(
                "node \"{}\" visited {limit} times ({scope} limit {limit}); run is stuck in a cycle",
                node.id
            )
        })
    }

    /// At the exit: every `goal_gate=true` node must have last succeeded or
    /// partially succeeded (a gate that never ran is unsatisfied). Returns
    /// `None` when all are satisfied, else the retry target to jump to or
    /// the run's failure reason.
    fn check_goal_gates(
        &mut self,
        exit: &Node,
    ) -> Result<Option<Result<String, String>>, StoreError> {
        let graph = self.graph;
        let Some(gate) = self.unsatisfied_goal_gate() else {
            return Ok(None);
        };
        let status = self
            .state
            .outcomes
            .get(&*gate.id)
            .map_or("never ran".to_string(), |o| format!("last {}", o.status));
        let Some(Selection { target, .. }) = routing::retry_target(graph, gate) else {
            return Ok(Some(Err(format!(
                "goal gate unsatisfied for node {} ({status}) and no retry target",
                gate.id
            ))));
        };
        let checkpoint = self.state.checkpoint(Some(&exit.id), Some(&target));
        let events = [
            (
                EventKind::RunNotice {
                    message: format!(
                        "goal gate {} is unsatisfied ({status}); jumping to its retry target {target}",
                        gate.id
                    ),
                },
                None,
            ),
            (
                EventKind::EdgeSelected {
                    from_node: exit.id.to_string(),
                    to_node: target.clone(),
                    label: None,
                    condition: None,
                    reason: EdgeReason::GoalGateRetry,
                },
                None,
            ),
            checkpoint_event(&checkpoint),
        ];
        self.recorder
            .save_checkpoint(&checkpoint.to_json(), &events)?;
        self.write_checkpoint_file(&checkpoint);
        Ok(Some(Ok(target)))
    }

    /// Runs one stage (with its retries), routes, and commits.
    async fn stage(&mut self, node: &Node, visit: u32) -> Result<Step, StoreError> {
        let id: &str = &node.id;
        let started = Instant::now();
        self.state.context.set("current_node", id);
        self.state.context.set("internal.node_visit_count", visit);
        self.set_fidelity(node);
        let branch = self.branch.as_ref().map(|b| b.id.clone());
        self.recorder.store().stage_started_in(
            self.recorder.run_id(),
            id,
            visit,
            node.handler.name(),
            branch.as_deref(),
        )?;
        let dir = self.recorder.run_dir().ensure_node_dir(id, visit)?;

        if matches!(node.handler, Handler::Parallel | Handler::SubWorkflow) {
            // These drive nested runners instead of attempts; they start once.
            self.recorder.emit(
                EventKind::StageStarted {
                    handler: node.handler.name().to_string(),
                    attempt: 1,
                    branch: self.branch.as_ref().map(|b| b.id.clone()),
                },
                Some((id, visit)),
            )?;
        }
        let (mut outcome, attempts) = if node.handler == Handler::Parallel {
            (self.parallel(node, visit, &dir).await?, 1)
        } else if node.handler == Handler::SubWorkflow {
            (Box::pin(self.subworkflow(node, visit, &dir)).await?, 1)
        } else {
            self.attempts(node, visit, &dir).await?
        };

        if let Some(reason) = self.env.cancel.reason() {
            // The stage did not finish: it is not committed, and the
            // checkpoint still names it, so a resume runs it again.
            self.recorder
                .store()
                .interrupt_running_stages(self.recorder.run_id())?;
            return Ok(Step::Finish(cancelled(reason)));
        }

        // From here on the outcome is recorded and merged into the context:
        // no secret value goes further.
        outcome.redact(&self.env.redactor);
        let transparent = node.handler == Handler::Conditional;
        let mut updates = std::mem::take(&mut outcome.context_updates);
        self.offload(&mut updates);
        self.state.context.merge(&updates);
        outcome.context_updates = updates;

        // Routing sees the merged context. A diamond's edges read the
        // previous stage's outcome, which the context still holds.
        let previous_outcome = self.state.context.text("outcome");
        let previous_label = self.state.context.text("preferred_label");
        let subject = transparent.then_some(Subject {
            outcome: if previous_outcome.is_empty() {
                "succeeded"
            } else {
                &previous_outcome
            },
            preferred_label: &previous_label,
        });
        let conditions_context = self.resolved_for_conditions(node);
        let route = routing::select(
            self.graph,
            node,
            &mut outcome,
            conditions_context
                .as_ref()
                .unwrap_or(self.state.context.values()),
            subject,
            &mut self.rng,
        );

        // Bookkeeping the checkpoint carries.
        let mut finish: Option<Finish> = None;
        if !transparent {
            self.record_outcome_keys(node, &outcome);
        }
        if outcome.status == Status::Failed
            && let Some(failure) = &outcome.failure
        {
            let signature = failure_signature(id, failure);
            if failure.class.counts_for_circuit_breaker() {
                let limit = self.signature_limit();
                let count = self
                    .state
                    .loop_signatures
                    .entry(signature.clone())
                    .or_insert(0);
                *count += 1;
                if *count >= limit {
                    finish = Some(Finish::Failed(format!(
                        "{} failure cycle detected: signature {signature} repeated {count} times (limit {limit}; raise it with the graph attribute loop_restart_signature_limit)",
                        failure.class
                    )));
                }
            }
        }
        *self.state.visits.entry(id.to_string()).or_insert(0) = visit;
        self.state.completed += 1;
        self.state.outcomes.insert(id.to_string(), outcome.clone());

        // Where next.
        let mut closing: Vec<(EventKind, Option<(&str, u32)>)> = Vec::new();
        let at = Some((id, visit));
        let mut next: Option<String> = None;
        if finish.is_none() {
            match &route {
                Route::Next(sel) => {
                    let edge = sel.edge.and_then(|i| self.graph.edges.get(i));
                    let restart = edge.is_some_and(|e| {
                        e.attrs
                            .value("loop_restart")
                            .and_then(crate::lang::value::Value::as_bool)
                            == Some(true)
                    });
                    closing.push((
                        EventKind::EdgeSelected {
                            from_node: id.to_string(),
                            to_node: sel.target.clone(),
                            label: edge.and_then(|e| e.label().map(|l| l.into_owned())),
                            condition: edge.and_then(|e| e.condition().map(|c| c.into_owned())),
                            reason: sel.reason,
                        },
                        at,
                    ));
                    if restart {
                        match self.loop_restart(id, &outcome) {
                            Ok(()) => closing.push((
                                EventKind::LoopRestart {
                                    from_node: id.to_string(),
                                    to_node: sel.target.clone(),
                                },
                                at,
                            )),
                            Err(reason) => finish = Some(Finish::Failed(reason)),
                        }
                    }
                    if finish.is_none() {
                        next = Some(sel.target.clone());
                        self.entered_by = sel.edge;
                    }
                }
                Route::Stop => {
                    finish = Some(Finish::Failed(format!(
                        "stage {id} failed and on_failure=exit stopped the run: {}",
                        outcome.failure_reason().unwrap_or("no reason given")
                    )));
                }
                Route::End => {
                    finish = Some(self.end_without_edge(node, &outcome));
                }
            }
        }
        if node.handler == Handler::Exit && finish.is_none() {
            finish = Some(Finish::Succeeded);
            next = None;
        }

        let duration_ms = millis(started.elapsed());
        let stage_event = if outcome.status == Status::Failed {
            EventKind::StageFailed {
                status: outcome.status,
                duration_ms,
                attempts,
                outcome: outcome.clone(),
            }
        } else {
            EventKind::StageCompleted {
                status: outcome.status,
                duration_ms,
                attempts,
                outcome: outcome.clone(),
            }
        };
        closing.insert(0, (stage_event, at));
        if let Some(captured) = self.capture_artifacts(id, visit) {
            closing.insert(1, (captured, at));
        }
        let outcome_json = serde_json::to_value(&outcome).unwrap_or(Value::Null);
        // In a branch, the run's checkpoint stays on the parallel node and
        // records this branch's progress; the branch lock is held through
        // the commit so that branches' checkpoints land in order.
        let progress = self.branch.as_ref().map(|b| b.progress.clone());
        let mut progress_guard = progress.as_ref().map(|p| crate::util::lock::lock(p));
        let checkpoint = match (&self.branch, progress_guard.as_deref_mut()) {
            (Some(branch), Some(progress)) => {
                branch.record(progress, &self.state, id, next.as_deref())
            }
            _ => self.state.checkpoint(Some(id), next.as_deref()),
        };
        closing.push(checkpoint_event(&checkpoint));
        self.recorder.commit_stage(&StageCommit {
            run_id: self.recorder.run_id(),
            node_id: id,
            visit,
            status: outcome.status.as_str(),
            attempts,
            duration_ms,
            failure_reason: outcome.failure_reason(),
            outcome: outcome_json.clone(),
            events: closing,
            checkpoint: checkpoint.to_json(),
        })?;
        drop(progress_guard);
        self.write_checkpoint_file(&checkpoint);
        let status_file = json!({
            "status": outcome.status,
            "notes": outcome.notes,
            "failure_reason": outcome.failure_reason(),
            "failure_class": outcome.failure.as_ref().map(|f| f.class),
            "preferred_label": outcome.preferred_label,
            "suggested_next_ids": outcome.suggested_next_ids,
            "context_updates": outcome.context_updates,
            "attempts": attempts,
            "duration_ms": duration_ms,
            "timestamp": crate::store::timestamp(),
        });
        let bytes = serde_json::to_vec_pretty(&status_file).unwrap_or_default();
        if let Err(e) = crate::store::write_atomic(&dir.join("status.json"), &bytes) {
            let _ = self.recorder.emit(
                EventKind::RunNotice {
                    message: format!("could not write status.json: {e}"),
                },
                at,
            );
        }

        Ok(match (finish, next) {
            (Some(finish), _) => Step::Finish(finish),
            (None, Some(target)) => Step::Next(target),
            (None, None) => Step::Finish(Finish::Succeeded),
        })
    }

    /// Runs the handler, retrying per the node's policy.
    async fn attempts(
        &mut self,
        node: &Node,
        visit: u32,
        dir: &std::path::Path,
    ) -> Result<(Outcome, u32), StoreError> {
        let policy = RetryPolicy::for_node(node, self.graph);
        let mut attempt = 1u32;
        // Model spend of the attempts so far: the stage's is their sum.
        let mut spent: Option<crate::model::LlmUsage> = None;
        loop {
            self.recorder.emit(
                EventKind::StageStarted {
                    handler: node.handler.name().to_string(),
                    attempt,
                    branch: self.branch.as_ref().map(|b| b.id.clone()),
                },
                Some((&node.id, visit)),
            )?;
            let cx = StageCx {
                graph: self.graph,
                node,
                visit,
                attempt,
                context: &self.state.context,
                run: self.env,
                dir,
                recorder: self.recorder,
            };
            let mut outcome = handlers::execute(&cx).await;
            if let Some(before) = spent.take() {
                let mut total = outcome.llm.take().unwrap_or(crate::model::LlmUsage {
                    spend: crate::model::Spend::default(),
                    ..before.clone()
                });
                total.spend.merge(&before.spend);
                outcome.llm = Some(total);
            }
            spent.clone_from(&outcome.llm);
            if self.env.cancel.reason().is_some() || !outcome.wants_retry() {
                return Ok((outcome, attempt));
            }
            if attempt >= policy.max_attempts {
                if node
                    .attrs
                    .value("allow_partial")
                    .and_then(crate::lang::value::Value::as_bool)
                    == Some(true)
                {
                    outcome.status = Status::PartiallySucceeded;
                    outcome.notes.push(format!(
                        "retries exhausted after {attempt} attempt(s); allow_partial made it partially_succeeded"
                    ));
                }
                return Ok((outcome, attempt));
            }
            let jitter = self.rng.random_range(0.5..1.5);
            let delay = policy.delay(attempt, jitter);
            self.recorder.emit(
                EventKind::StageRetrying {
                    attempt,
                    delay_ms: millis(delay),
                    reason: outcome.failure_reason().unwrap_or("failed").to_string(),
                },
                Some((&node.id, visit)),
            )?;
            let retries = self.state.retries.entry(node.id.to_string()).or_insert(0);
            *retries += 1;
            let used = *retries;
            self.state
                .context
                .set(format!("internal.retry_count.{}", node.id), used);
            tokio::select! {
                () = self.env.clock.sleep(delay) => {}
                _ = self.env.cancel.cancelled() => return Ok((outcome, attempt)),
            }
            attempt += 1;
        }
    }

    /// Captures the files `[run.artifacts] include` names, after a stage.
    /// Problems become notices: artifacts never fail a stage.
    fn capture_artifacts(&self, node: &str, visit: u32) -> Option<EventKind> {
        if self.env.artifacts.is_empty() {
            return None;
        }
        let report = {
            let mut store = self.recorder.store();
            super::artifacts::capture(
                &self.env.artifacts,
                &self.env.work_dir,
                &mut store,
                &self.env.blobs,
                &self.env.run_id,
                node,
                visit,
            )
        };
        match report {
            Ok(report) if !report.captured.is_empty() || !report.skipped.is_empty() => {
                Some(EventKind::ArtifactCaptured {
                    paths: report.captured.iter().map(|a| a.path.clone()).collect(),
                    skipped: u32::try_from(report.skipped.len()).unwrap_or(u32::MAX),
                })
            }
            Ok(_) => None,
            Err(e) => Some(EventKind::RunNotice {
                message: format!("artifact capture failed: {e}"),
            }),
        }
    }

    /// The keys the engine sets after every stage but a diamond's.
    fn record_outcome_keys(&mut self, node: &Node, outcome: &Outcome) {
        let ctx = &mut self.state.context;
        ctx.set("outcome", outcome.status.as_str());
        ctx.set("last_stage", node.id.to_string());
        match &outcome.preferred_label {
            Some(label) => ctx.set("preferred_label", label.clone()),
            None => ctx.remove("preferred_label"),
        }
        match (&outcome.failure, outcome.status) {
            (Some(failure), Status::Failed) => {
                ctx.set("failure_class", failure.class.as_str());
                ctx.set("failure_signature", failure_signature(&node.id, failure));
            }
            _ => {
                ctx.remove("failure_class");
                ctx.remove("failure_signature");
            }
        }
    }

    /// Crossing a `loop_restart` edge: only after success or a transient
    /// failure; the context starts afresh (graph and internal keys kept).
    fn loop_restart(&mut self, node_id: &str, outcome: &Outcome) -> Result<(), String> {
        if outcome.status == Status::Failed {
            let failure = outcome.failure.as_ref();
            let class = failure.map_or(FailureClass::Deterministic, |f| f.class);
            if class != FailureClass::TransientInfra {
                return Err(format!(
                    "loop_restart blocked: failure_class={class} (requires transient_infra)"
                ));
            }
            if let Some(failure) = failure {
                let signature = failure_signature(node_id, failure);
                let limit = self.signature_limit();
                let count = self
                    .state
                    .restart_signatures
                    .entry(signature.clone())
                    .or_insert(0);
                *count += 1;
                if *count >= limit {
                    return Err(format!(
                        "loop_restart failure cycle detected: signature {signature} repeated {count} times (limit {limit}; raise it with the graph attribute loop_restart_signature_limit)"
                    ));
                }
            }
        }
        let kept: Map<String, Value> = self
            .state
            .context
            .values()
            .iter()
            .filter(|(k, _)| {
                k.starts_with("graph.") || *k == "internal.run_id" || *k == "internal.work_dir"
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        self.state.context = Context::from_map(kept);
        Ok(())
    }

    /// The run ends at a node with nowhere to go.
    fn end_without_edge(&self, node: &Node, outcome: &Outcome) -> Finish {
        if outcome.status == Status::Failed {
            return Finish::Failed(format!(
                "stage {} failed: {}",
                node.id,
                outcome.failure_reason().unwrap_or("no reason given")
            ));
        }
        if node.handler == Handler::Exit {
            return Finish::Succeeded;
        }
        // A dead end: the run is over. Goal gates still decide success.
        match self.unsatisfied_goal_gate() {
            Some(gate) => Finish::Failed(format!(
                "the run ended at {} (no outgoing edge) with goal gate {} unsatisfied",
                node.id, gate.id
            )),
            None => Finish::Succeeded,
        }
    }

    /// The first `goal_gate=true` node (in declaration order) whose latest
    /// outcome is neither succeeded nor partially succeeded; one that never
    /// ran counts as unsatisfied.
    fn unsatisfied_goal_gate(&self) -> Option<&'a Node> {
        self.graph.nodes.iter().find(|n| {
            n.attrs
                .value("goal_gate")
                .and_then(crate::lang::value::Value::as_bool)
                == Some(true)
                && !self
                    .state
                    .outcomes
                    .get(&*n.id)
                    .is_some_and(|o| o.status.satisfies_goal_gate())
        })
    }

    fn signature_limit(&self) -> u32 {
        self.graph
            .attrs
            .value("loop_restart_signature_limit")
            .and_then(crate::lang::value::Value::as_int)
            .filter(|n| *n > 0)
            .map_or(DEFAULT_SIGNATURE_LIMIT, |n| {
                u32::try_from(n).unwrap_or(u32::MAX)
            })
    }

    /// Values over 100 KB of JSON move to the blob store; the context keeps
    /// a `blob://sha256/…` ref.
    fn offload(&self, updates: &mut Map<String, Value>) {
        for (key, value) in updates.iter_mut() {
            if value.as_str().is_some_and(|s| BlobRef::parse(s).is_some()) {
                continue;
            }
            let Ok(json) = serde_json::to_vec(value) else {
                continue;
            };
            if json.len() <= OFFLOAD_BYTES {
                continue;
            }
            match self.env.blobs.put(&json) {
                Ok((blob, new)) => {
                    if new {
                        let _ = self
                            .recorder
                            .store()
                            .record_blob(blob.hex(), u64::try_from(json.len()).unwrap_or(u64::MAX));
                    }
                    *value = Value::String(blob.uri());
                }
                Err(e) => {
                    let _ = self.recorder.emit(
                        EventKind::RunNotice {
                            message: format!("could not offload {key} to the blob store: {e}"),
                        },
                        None,
                    );
                }
            }
        }
    }

    /// The context with blob refs read back for the keys that this node's
    /// edge conditions mention, so `command.output contains PASS` works.
    /// `None` when nothing needs resolving (the common case).
    fn resolved_for_conditions(&self, node: &Node) -> Option<Map<String, Value>> {
        let mut keys: Vec<String> = Vec::new();
        for edge in self.graph.edges.iter().filter(|e| *e.from == *node.id) {
            if let Some(text) = edge.condition()
                && let Ok(cond) = crate::lang::condition::parse(&text)
            {
                for key in cond.keys() {
                    let key = key.strip_prefix("context.").unwrap_or(key);
                    keys.push(key.to_string());
                }
            }
        }
        let values = self.state.context.values();
        let refs: Vec<(String, BlobRef)> = keys
            .into_iter()
            .filter_map(|k| {
                let blob = values.get(&k)?.as_str().and_then(BlobRef::parse)?;
                Some((k, blob))
            })
            .collect();
        if refs.is_empty() {
            return None;
        }
        let mut resolved = values.clone();
        for (key, blob) in refs {
            if let Ok(value) = self.env.blobs.get_json(&blob) {
                resolved.insert(key, value);
            }
        }
        Some(resolved)
    }

    /// Mirrors the checkpoint to checkpoint.json for people and tools. The
    /// database holds the authoritative copy (resume reads it), so the file
    /// is refreshed at most every [`CHECKPOINT_FILE_INTERVAL`] and always
    /// when the run stops ([`Runner::flush_checkpoint_file`]): replacing a
    /// file allocates an inode and frees one, and on file systems without a
    /// journal the allocator then scans past every recently freed inode, so
    /// a rename per stage made long runs slower with every stage.
    fn write_checkpoint_file(&mut self, checkpoint: &Checkpoint) {
        let due = self
            .checkpoint_written
            .is_none_or(|at| at.elapsed() >= CHECKPOINT_FILE_INTERVAL);
        if due {
            self.checkpoint_written = Some(Instant::now());
            self.pending_checkpoint = None;
            self.write_checkpoint_now(checkpoint);
        } else {
            self.pending_checkpoint = Some(checkpoint.clone());
        }
    }

    /// Writes a checkpoint that [`Runner::write_checkpoint_file`] deferred.
    pub fn flush_checkpoint_file(&mut self) {
        if let Some(checkpoint) = self.pending_checkpoint.take() {
            self.write_checkpoint_now(&checkpoint);
        }
    }

    fn write_checkpoint_now(&self, checkpoint: &Checkpoint) {
        let dir = self.recorder.run_dir();
        if let Err(e) = dir.write_json("checkpoint.json", checkpoint) {
            drop(dir);
            let _ = self.recorder.emit(
                EventKind::RunNotice {
                    message: format!("could not write checkpoint.json: {e}"),
                },
                None,
            );
        }
    }
}

/// How often checkpoint.json is refreshed at most (see
/// [`Runner::write_checkpoint_file`]).
pub const CHECKPOINT_FILE_INTERVAL: Duration = Duration::from_millis(100);

enum Step {
    Next(String),
    Finish(Finish),
}

fn cancelled(reason: CancelReason) -> Finish {
    match reason {
        CancelReason::User(why) => Finish::Cancelled(why),
        CancelReason::Shutdown(why) => Finish::Interrupted(why),
        stalled @ CancelReason::Stalled(_) => Finish::Failed(stalled.to_string()),
    }
}

fn checkpoint_event<'a>(checkpoint: &Checkpoint) -> (EventKind, Option<(&'a str, u32)>) {
    (
        EventKind::CheckpointSaved {
            next_node: checkpoint.next_node_id.clone(),
            completed: checkpoint.completed,
            checkpoint: serde_json::to_value(checkpoint).unwrap_or(Value::Null),
        },
        None,
    )
}

/// Milliseconds, saturating.
#[must_use]
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
