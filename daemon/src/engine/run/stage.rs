//! One stage of the run loop, in the order it happens:
//!
//! 1. [`Runner::open_stage`]: the context names the node, its visit and its
//!    fidelity; the stage row is recorded as running; its directory exists.
//! 2. [`Runner::run_stage`]: the handler's attempts with retries
//!    ([`Runner::attempts`]), or the nested runners of a parallel or
//!    sub-workflow stage. A cancel stops the stage here, uncommitted.
//! 3. [`Runner::take_outcome`]: the outcome redacted, large values
//!    offloaded, its context updates merged.
//! 4. [`Runner::route`]: edge selection over the merged context.
//! 5. [`Runner::tally`]: the run's state records the stage; the circuit
//!    breaker.
//! 6. [`Runner::follow`]: where the run goes (the chosen edge, a loop
//!    restart, `on_failure=exit`, a dead end, the exit).
//! 7. [`Runner::commit`]: the stage row, its closing events and the
//!    checkpoint in one transaction; then [`Runner::write_status_file`].

use std::path::{Path, PathBuf};
use std::time::Instant;

use rand::RngExt;
use serde_json::{Map, Value, json};

use super::{Finish, Runner, Step, cancelled, checkpoint_event, millis};
use crate::engine::checkpoint::Checkpoint;
use crate::engine::context::{Context, OFFLOAD_BYTES};
use crate::engine::handlers::{self, StageCx};
use crate::engine::preamble::Fidelity;
use crate::engine::retry::RetryPolicy;
use crate::engine::routing::{self, Route, Subject};
use crate::engine::run_git::{StageGit, StageRef};
use crate::lang::graph::{Handler, Node};
use crate::model::EventKind;
use crate::model::{FailureClass, LlmUsage, Outcome, Spend, Status, failure_signature};
use crate::store::{BlobRef, StageCommit, StoreError};

/// A stage's closing events, each with its node and visit.
type Events<'n> = Vec<(EventKind, Option<(&'n str, u32)>)>;

/// Where a stage leads: the next node, or how the run ends, and the events
/// that say so (`edge.selected`, `loop.restart`).
struct Leaving<'n> {
    next: Option<String>,
    finish: Option<Finish>,
    events: Events<'n>,
}

/// What a stage came to, as it is committed: the outcome after routing, the
/// attempts it took and how long it ran.
struct Ran {
    outcome: Outcome,
    attempts: u32,
    duration_ms: u64,
    /// What checkpointing it in git did, in checkpoint mode.
    git: Option<Result<StageGit, String>>,
}

impl Runner<'_> {
    /// Runs one stage of `node`, its `visit`-th, from start to commit (see
    /// the steps above) and says where the run goes next. A stage stopped
    /// by a cancel is not committed: the checkpoint still names it, so a
    /// resume runs it again. Errs only when the store fails.
    pub(super) async fn stage(&mut self, node: &Node, visit: u32) -> Result<Step, StoreError> {
        let started = Instant::now();
        let dir = self.open_stage(node, visit)?;
        let (mut outcome, attempts) = self.run_stage(node, visit, &dir).await?;
        if let Some(reason) = self.env.cancel.reason() {
            self.recorder
                .store()
                .interrupt_running_stages(self.recorder.run_id())?;
            // Not committed, but what the stage wrote so far is shown.
            let files = self.recorder.take_stage_files(&dir);
            self.recorder.write_stage_files(dir, files);
            return Ok(Step::Finish(cancelled(reason)));
        }
        self.take_outcome(&mut outcome);
        let route = self.route(node, &mut outcome);
        let tripped = self.tally(node, visit, &outcome);
        let leaving = self.follow(node, visit, &route, &outcome, tripped);
        let mut ran = Ran {
            outcome,
            attempts,
            duration_ms: millis(started.elapsed()),
            git: None,
        };
        self.commit(
            node,
            visit,
            &dir,
            &mut ran,
            leaving.events,
            leaving.next.as_deref(),
        )?;
        Ok(match (leaving.finish, leaving.next) {
            (Some(finish), _) => Step::Finish(finish),
            (None, Some(target)) => Step::Next(target),
            (None, None) => Step::Finish(Finish::Succeeded { exit: None }),
        })
    }

    /// Opens the stage: the context names the node (`current_node`), its
    /// visit and the fidelity it runs at; the stage row is recorded as
    /// running (in its branch, if any), with its first `stage.started`, and
    /// the stage's directory exists (a command stage's once something is
    /// written). Returns the directory.
    fn open_stage(&mut self, node: &Node, visit: u32) -> Result<PathBuf, StoreError> {
        let id: &str = &node.id;
        self.state.context.set("current_node", id);
        self.state.context.set("internal.node_visit_count", visit);
        self.set_fidelity(node);
        let branch = self.branch.as_ref().map(|b| b.id.clone());
        // The stage's row and its first `stage.started` (a parallel or
        // sub-workflow stage's only one; a handler's first attempt's) in
        // one transaction.
        self.recorder.start_stage(
            id,
            visit,
            node.handler.name(),
            branch.as_deref(),
            &EventKind::StageStarted {
                handler: node.handler.name().to_string(),
                attempt: 1,
                branch: branch.clone(),
            },
        )?;
        // A command stage's directory is made by whatever first writes
        // into it (its process group record, overlapping the shell's start;
        // its first output; or the file writer after the commit), so a
        // quiet command creates nothing on the run's critical path.
        let dir = if node.handler == Handler::Command {
            self.recorder.run_dir().node_dir(id, visit)
        } else {
            self.recorder.run_dir().ensure_node_dir(id, visit)?
        };
        Ok(dir)
    }

    /// Records the fidelity the stage of `node` runs at as
    /// `internal.fidelity`: the entering edge's, else the node's, else the
    /// graph's `default_fidelity`, else `compact`; and the conversation
    /// thread it joins as `internal.thread_id`: the entering edge's, else
    /// the node's, else the graph's `default_thread` (a model stage uses it
    /// at full fidelity only).
    fn set_fidelity(&mut self, node: &Node) {
        let graph = self.graph;
        let edge = self.entered_by.take().and_then(|i| graph.edges.get(i));
        let on_edge = |key: &str| edge.and_then(|e| e.attrs.non_empty(key));
        let mut fidelity = Fidelity::resolve(
            on_edge("fidelity").as_deref(),
            node.attrs.non_empty("fidelity").as_deref(),
            graph.attrs.non_empty("default_fidelity").as_deref(),
        );
        if std::mem::take(&mut self.resumed) {
            fidelity = fidelity.after_resume();
        }
        let context = &mut self.state.context;
        context.set("internal.fidelity", fidelity.as_str());
        let thread = on_edge("thread_id")
            .or_else(|| node.attrs.non_empty("thread_id"))
            .or_else(|| graph.attrs.non_empty("default_thread"));
        match thread {
            Some(thread) => context.set("internal.thread_id", thread.into_owned()),
            None => context.remove("internal.thread_id"),
        }
    }

    /// Does the stage's work: a parallel stage's branches or a
    /// sub-workflow's child run (once each), else the handler's attempts.
    /// Returns the outcome and how many attempts it took.
    async fn run_stage(
        &mut self,
        node: &Node,
        visit: u32,
        dir: &Path,
    ) -> Result<(Outcome, u32), StoreError> {
        match node.handler {
            Handler::Parallel => Ok((self.parallel(node, visit, dir).await?, 1)),
            Handler::SubWorkflow => Ok((Box::pin(self.subworkflow(node, visit, dir)).await?, 1)),
            _ => self.attempts(node, visit, dir).await,
        }
    }

    /// Runs the handler, retrying per the node's policy (with jittered
    /// backoff on the run's clock, each retry a `stage.retrying` event and
    /// counted in `internal.retry_count.{node}`). Stops at a cancel, an
    /// outcome that does not want a retry, or the last attempt, where
    /// `allow_partial=true` makes a failure partially succeeded. The
    /// outcome's model spend is the sum over the attempts.
    async fn attempts(
        &mut self,
        node: &Node,
        visit: u32,
        dir: &Path,
    ) -> Result<(Outcome, u32), StoreError> {
        let policy = RetryPolicy::for_node(node, self.graph);
        let mut attempt = 1u32;
        // Model spend of the attempts so far: the stage's is their sum.
        let mut spent: Option<LlmUsage> = None;
        loop {
            // The first attempt's was recorded with the stage's row.
            if attempt > 1 {
                self.recorder.emit(
                    EventKind::StageStarted {
                        handler: node.handler.name().to_string(),
                        attempt,
                        branch: self.branch.as_ref().map(|b| b.id.clone()),
                    },
                    Some((&node.id, visit)),
                )?;
            }
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
                let mut total = outcome.llm.take().unwrap_or(LlmUsage {
                    spend: Spend::default(),
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
                if crate::engine::output::is_retry_request(&outcome)
                    && let Some(failure) = &mut outcome.failure
                {
                    failure.message = format!(
                        "{}; no attempt left after {attempt} (the budget is the node's max_retries or retry_policy, else the graph's default_max_retries)",
                        failure.message
                    );
                }
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

    /// Makes the handler's outcome the run's: secrets redacted (from here
    /// on no secret value goes further: the outcome is recorded and merged
    /// into the context), context values over 100 KB offloaded to the blob
    /// store, and its context updates merged into the context.
    fn take_outcome(&mut self, outcome: &mut Outcome) {
        outcome.redact(&self.env.redactor);
        let mut updates = std::mem::take(&mut outcome.context_updates);
        self.offload(&mut updates);
        self.state.context.merge(&updates);
        outcome.context_updates = updates;
    }

    /// Selects the edge out of `node` ([`routing::select`]) over the merged
    /// context, with the blob values its conditions mention read back. A
    /// diamond's edges read the previous stage's outcome and label, which
    /// the context still holds. Routing may rewrite `outcome`
    /// (`on_failure="succeed"`).
    fn route(&mut self, node: &Node, outcome: &mut Outcome) -> Route {
        let previous_outcome = self.state.context.text("outcome");
        let previous_label = self.state.context.text("preferred_label");
        let subject = (node.handler == Handler::Conditional).then_some(Subject {
            outcome: if previous_outcome.is_empty() {
                "succeeded"
            } else {
                &previous_outcome
            },
            preferred_label: &previous_label,
        });
        let conditions_context = self.resolved_for_conditions(node);
        routing::select(
            self.graph,
            node,
            outcome,
            conditions_context
                .as_ref()
                .unwrap_or(self.state.context.values()),
            subject,
            &mut self.rng,
        )
    }

    /// Records the stage in the run's state, as the checkpoint carries it:
    /// the outcome keys (not for a diamond, which leaves the previous
    /// stage's), the count of a failure's signature, the node's visits, the
    /// stages completed and the node's latest outcome. Returns the run's
    /// failure when the circuit breaker trips: the same failure signature
    /// [`Runner::signature_limit`] times.
    fn tally(&mut self, node: &Node, visit: u32, outcome: &Outcome) -> Option<Finish> {
        let id: &str = &node.id;
        if node.handler != Handler::Conditional {
            self.record_outcome_keys(node, outcome);
        }
        let mut tripped = None;
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
                    tripped = Some(Finish::Failed(format!(
                        "{} failure cycle detected: signature {signature} repeated {count} times (limit {limit}; raise it with the graph attribute loop_restart_signature_limit)",
                        failure.class
                    )));
                }
            }
        }
        *self.state.visits.entry(id.to_string()).or_insert(0) = visit;
        self.state.completed += 1;
        self.state.outcomes.insert(id.to_string(), outcome.clone());
        tripped
    }

    /// Acts on the route, unless the run already ends (`finish`, from the
    /// circuit breaker): along the chosen edge (an `edge.selected` event;
    /// across a `loop_restart` edge the context starts afresh, or the run
    /// fails when the restart is not allowed), or stop for
    /// `on_failure="exit"`, or end at a node with nowhere to go. The exit
    /// node always ends the run.
    fn follow<'n>(
        &mut self,
        node: &'n Node,
        visit: u32,
        route: &Route,
        outcome: &Outcome,
        mut finish: Option<Finish>,
    ) -> Leaving<'n> {
        let id: &str = &node.id;
        let at = Some((id, visit));
        let mut events: Events<'n> = Vec::new();
        let mut next: Option<String> = None;
        if finish.is_none() {
            match route {
                Route::Next(sel) => {
                    let edge = sel.edge.and_then(|i| self.graph.edges.get(i));
                    let restart = edge.is_some_and(|e| {
                        e.attrs
                            .value("loop_restart")
                            .and_then(crate::lang::value::Value::as_bool)
                            == Some(true)
                    });
                    events.push((
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
                        match self.loop_restart(id, outcome) {
                            Ok(()) => events.push((
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
                    finish = Some(self.end_without_edge(node, outcome));
                }
            }
        }
        if node.handler == Handler::Exit && finish.is_none() {
            finish = Some(Finish::Succeeded {
                exit: Some(node.id.to_string()),
            });
            next = None;
        }
        Leaving {
            next,
            finish,
            events,
        }
    }

    /// Commits the stage in one transaction: its row, its closing events
    /// (`stage.completed` or `stage.failed`, `artifact.captured` when files
    /// were captured, then `events`, then `checkpoint.saved`) and the
    /// checkpoint naming `next`; then mirrors the checkpoint to
    /// checkpoint.json. In a branch, the run's checkpoint stays on the
    /// parallel node and records this branch's progress; the branch lock is
    /// held through the commit so that branches' checkpoints land in order.
    fn commit<'n>(
        &mut self,
        node: &'n Node,
        visit: u32,
        dir: &Path,
        ran: &mut Ran,
        mut events: Events<'n>,
        next: Option<&str>,
    ) -> Result<(), StoreError> {
        let id: &str = &node.id;
        let at = Some((id, visit));
        let progress = self.branch.as_ref().map(|b| b.progress.clone());
        let mut progress_guard = progress.as_ref().map(|p| crate::util::lock::lock(p));
        let mut checkpoint = match (&self.branch, progress_guard.as_deref_mut()) {
            (Some(branch), Some(progress)) => {
                branch.record(progress, &self.state.context, id, next)
            }
            _ => self.state.checkpoint(Some(id), next),
        };
        ran.git = self.checkpoint_in_git(node, visit, &mut ran.outcome, &mut checkpoint);
        let Ran {
            outcome,
            attempts,
            duration_ms,
            ..
        } = &*ran;
        let (attempts, duration_ms) = (*attempts, *duration_ms);
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
        events.insert(0, (stage_event, at));
        if let Some(captured) = self.capture_artifacts(id, visit) {
            events.insert(1, (captured, at));
        }
        if let Some(Err(message)) = &ran.git {
            events.push((
                EventKind::RunNotice {
                    message: message.clone(),
                },
                at,
            ));
        }
        let outcome_json = serde_json::to_value(outcome).unwrap_or(Value::Null);
        events.push(checkpoint_event(&checkpoint));
        let mut files = self.recorder.take_stage_files(dir);
        files.insert("status.json".into(), Some(status_file(ran)));
        self.recorder.commit_stage(&StageCommit {
            run_id: self.recorder.run_id(),
            node_id: id,
            visit,
            status: outcome.status.as_str(),
            attempts,
            duration_ms,
            failure_reason: outcome.failure_reason(),
            outcome: outcome_json,
            events,
            checkpoint: checkpoint.to_json(),
            files: Some(&files),
        })?;
        drop(progress_guard);
        // Committed: the files can follow while the next stage runs.
        self.recorder.write_stage_files(dir.to_path_buf(), files);
        self.write_checkpoint_file(&checkpoint);
        Ok(())
    }

    /// In git checkpoint mode, checkpoints the stage in git before the
    /// store commits it: the stage's changes become a commit on the run
    /// branch (with its metadata on the metadata branch), the checkpoint
    /// records the branch's head, the stage's `diff.patch` is written (empty
    /// when it changed nothing) and, when the handler named none (a command
    /// stage, whose writes Weft does not see), the commit's paths become the
    /// outcome's `files_touched`. `None` outside checkpoint mode; an error
    /// is the notice to record (the run goes on, and the checkpoint keeps
    /// the previous head).
    fn checkpoint_in_git(
        &self,
        node: &Node,
        visit: u32,
        outcome: &mut Outcome,
        checkpoint: &mut Checkpoint,
    ) -> Option<Result<StageGit, String>> {
        let git = self.env.git.as_ref()?;
        let stage = StageRef {
            node: &node.id,
            visit,
            status: outcome.status.as_str(),
            completed: checkpoint.completed,
        };
        let outcome_json = serde_json::to_vec_pretty(&*outcome).unwrap_or_default();
        let result = git.commit_stage(&stage, checkpoint.to_json().as_bytes(), &outcome_json);
        checkpoint.git_commit_sha = Some(git.head());
        let dir = self.recorder.run_dir().node_dir(&node.id, visit);
        Some(match result {
            Ok(committed) => {
                let written = crate::store::create_private_dir_all(&dir)
                    .map_err(|e| e.to_string())
                    .and_then(|()| {
                        crate::store::write_atomic(
                            &dir.join("diff.patch"),
                            committed.patch.as_bytes(),
                        )
                        .map_err(|e| e.to_string())
                    });
                if let Err(e) = written {
                    return Some(Err(format!("could not write diff.patch: {e}")));
                }
                if outcome.files_touched.is_empty() {
                    outcome.files_touched.clone_from(&committed.files);
                }
                Ok(committed)
            }
            Err(e) => Err(format!(
                "the git checkpoint of {}@{visit} failed, the run goes on without it: {e}",
                node.id
            )),
        })
    }

    /// Captures the files `[run.artifacts] include` names, after a stage.
    /// Problems become notices: artifacts never fail a stage.
    fn capture_artifacts(&self, node: &str, visit: u32) -> Option<EventKind> {
        if self.env.artifacts.is_empty() {
            return None;
        }
        let report = {
            let mut store = self.recorder.store();
            crate::engine::artifacts::capture(
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
            return Finish::Succeeded {
                exit: Some(node.id.to_string()),
            };
        }
        // A dead end: the run is over. Goal gates still decide success.
        match self.unsatisfied_goal_gate() {
            Some(gate) => Finish::Failed(format!(
                "the run ended at {} (no outgoing edge) with goal gate {} unsatisfied",
                node.id, gate.id
            )),
            None => Finish::Succeeded { exit: None },
        }
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
        for edge in self.graph.edges_from(&node.id) {
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
}

/// The stage's status.json (outcome, attempts, duration, and in git
/// checkpoint mode its commit), for people and tools. Beside Weft's own
/// fields it carries those of the Attractor spec's status file (its
/// appendix C): `outcome` in that spec's spelling and `preferred_next_label`.
fn status_file(ran: &Ran) -> String {
    let outcome = &ran.outcome;
    let mut status_file = json!({
        "status": outcome.status,
        "outcome": outcome.status.attractor_name(),
        "preferred_next_label": outcome.preferred_label,
        "notes": outcome.notes,
        "failure_reason": outcome.failure_reason(),
        "failure_class": outcome.failure.as_ref().map(|f| f.class),
        "preferred_label": outcome.preferred_label,
        "suggested_next_ids": outcome.suggested_next_ids,
        "context_updates": outcome.context_updates,
        "files_touched": outcome.files_touched,
        "attempts": ran.attempts,
        "duration_ms": ran.duration_ms,
        "timestamp": crate::store::timestamp(),
    });
    // In git checkpoint mode: the stage's commit (null when it changed
    // nothing) and whether its diff.patch is whole.
    if let (Some(Ok(git)), Some(fields)) = (&ran.git, status_file.as_object_mut()) {
        fields.insert("git_commit_sha".into(), json!(git.commit));
        fields.insert("patch_complete".into(), json!(git.patch_complete));
    }
    serde_json::to_string_pretty(&status_file).unwrap_or_default()
}
