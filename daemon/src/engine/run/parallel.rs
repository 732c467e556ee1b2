//! Parallel fan-out (`component`): every outgoing edge starts a branch. A
//! branch runs from its first node along its own edges, with the full
//! routing rules, until it reaches the join node: the fan-in
//! (`tripleoctagon`) that every branch reaches, else the first node every
//! branch reaches. Branches run concurrently, at most `max_parallel` (default
//! 4) at a time, each with its own deep copy of the context. Their results
//! become `parallel.results` for the join and everything after it.
//!
//! Each branch is a [`Runner`] of its own. Its stages are committed like any
//! other; the run's checkpoint stays on the parallel node and records each
//! branch's progress, so a resume continues unfinished branches and reuses
//! finished ones.
//!
//! A parallel stage, in steps:
//!
//! 1. [`Fanout::plan`]: the branches, the join policy, `max_parallel` and
//!    the join node; a fan-out that cannot run fails the stage.
//! 2. [`Runner::open_branches`]: each branch's progress, fresh or from a
//!    resumed run's checkpoint; `parallel.started`; branches a resume finds
//!    already over are settled from what they committed.
//! 3. [`Runner::run_branches`]: the unfinished branches run, each ending
//!    with `parallel.branch.completed`; their history folds into this
//!    runner.
//! 4. [`Runner::join_branches`]: the stage's outcome from the branches'
//!    results, `parallel.completed`, and a jump to the join.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::stream::{FuturesUnordered, StreamExt};
use serde_json::{Map, Value};

use super::branch::Branch;
use super::{Finish, MAX_NESTING, Runner, State, too_deep};
use crate::engine::checkpoint::{BranchProgress, BranchResult, ParallelProgress};
use crate::engine::context::Context;
use crate::engine::handlers::RunEnv;
use crate::exec::cancel::CancelReason;
use crate::lang::graph::{Graph, Handler, Node};
use crate::model::EventKind;
use crate::model::{FailureClass, Outcome, Status};
use crate::store::{BlobRef, StoreError};
use crate::util::lock::lock;

/// Branches running at once when the node does not say.
pub(crate) const DEFAULT_MAX_PARALLEL: u32 = 4;

/// A branch's output is put inline in `parallel.results` up to this size;
/// larger output stays a blob ref.
const INLINE_OUTPUT_BYTES: usize = 64 * 1024;

/// `wait_all` or `first_success`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JoinPolicy {
    WaitAll,
    FirstSuccess,
}

impl JoinPolicy {
    /// The name `join_policy` gives it.
    fn name(self) -> &'static str {
        match self {
            JoinPolicy::WaitAll => "wait_all",
            JoinPolicy::FirstSuccess => "first_success",
        }
    }
}

/// What a parallel node asks for, read from its edges and attributes.
#[derive(Debug)]
struct Fanout {
    /// Each branch's first node: the distinct targets of the node's edges,
    /// in edge order.
    starts: Vec<String>,
    policy: JoinPolicy,
    /// Branches running at once (`max_parallel`, at least 1).
    max_parallel: u32,
    /// Where the branches meet ([`find_join`]); `None` when they never do.
    join: Option<String>,
}

impl Fanout {
    /// Reads the fan-out of the parallel `node`.
    ///
    /// # Errors
    /// Why the fan-out cannot run, which fails the stage (deterministic): no
    /// outgoing edges, an unknown `join_policy`, or two branches that both
    /// reach a node before they join.
    fn plan(graph: &Graph, node: &Node) -> Result<Fanout, String> {
        let mut starts: Vec<String> = Vec::new();
        for edge in graph.edges_from(&node.id) {
            if !starts.iter().any(|s| *s == *edge.to) {
                starts.push(edge.to.to_string());
            }
        }
        if starts.is_empty() {
            return Err("parallel node has no outgoing edges to start branches from".into());
        }
        let policy = match node.attrs.text("join_policy").as_deref().map(str::trim) {
            None | Some("wait_all") => JoinPolicy::WaitAll,
            Some("first_success") => JoinPolicy::FirstSuccess,
            Some(other) => {
                return Err(format!(
                    "unknown join_policy `{other}`: use wait_all or first_success"
                ));
            }
        };
        let max_parallel = node
            .attrs
            .value("max_parallel")
            .and_then(crate::lang::value::Value::as_int)
            .map_or(DEFAULT_MAX_PARALLEL, |n| {
                u32::try_from(n.max(1)).unwrap_or(u32::MAX)
            });
        let join = find_join(graph, &node.id, &starts);
        if let Some(problem) = shared_nodes(graph, &node.id, &starts, join.as_deref()) {
            return Err(problem);
        }
        Ok(Fanout {
            starts,
            policy,
            max_parallel,
            join,
        })
    }
}

impl Runner<'_> {
    /// Runs a parallel node's branches (see the steps above) and returns
    /// the parallel stage's outcome. When the whole run is stopping, the
    /// stage is not over: it fails as cancelled and keeps the branches'
    /// progress, so a resume continues them. Errs only when the store fails.
    pub(super) async fn parallel(
        &mut self,
        node: &Node,
        visit: u32,
        dir: &Path,
    ) -> Result<Outcome, StoreError> {
        if self.nesting + 1 > MAX_NESTING {
            return Ok(too_deep("this parallel stage"));
        }
        let fanout = match Fanout::plan(self.graph, node) {
            Ok(fanout) => fanout,
            Err(problem) => return Ok(Outcome::failed(FailureClass::Deterministic, problem)),
        };
        let progress = self.open_branches(node, visit, &fanout)?;
        let progress = self.run_branches(node, visit, &fanout, progress).await?;
        if self.env.cancel.reason().is_some() {
            self.resume_parallel = Some(progress);
            return Ok(Outcome::failed(FailureClass::Canceled, "cancelled"));
        }
        self.join_branches(node, visit, dir, fanout, &progress)
    }

    /// Each branch's progress: from a resumed run's checkpoint when it
    /// names this node with as many branches, else every branch at its
    /// first node with a copy of the context. Records `parallel.started`,
    /// then settles the branches that need no more stages.
    fn open_branches(
        &mut self,
        node: &Node,
        visit: u32,
        fanout: &Fanout,
    ) -> Result<ParallelProgress, StoreError> {
        let resumed = self
            .resume_parallel
            .take()
            .filter(|p| p.node == *node.id && p.branches.len() == fanout.starts.len());
        let mut progress = resumed.unwrap_or_else(|| ParallelProgress {
            node: node.id.to_string(),
            visit,
            branches: fanout
                .starts
                .iter()
                .map(|s| BranchProgress {
                    id: s.clone(),
                    next: Some(s.clone()),
                    context: self.state.context.values().clone(),
                    nodes: Vec::new(),
                    result: None,
                })
                .collect(),
        });
        self.recorder.emit(
            EventKind::ParallelStarted {
                branches: fanout.starts.clone(),
                join: fanout.join.clone(),
                join_policy: fanout.policy.name().into(),
                max_parallel: fanout.max_parallel,
            },
            Some((&node.id, visit)),
        )?;
        // A branch that stopped just before the join (or at a dead end) but
        // whose result was not yet recorded when the run was interrupted
        // needs no more stages: settle it from what was committed.
        for branch in &mut progress.branches {
            if branch.result.is_none() && self.branch_is_over(branch, fanout.join.as_deref()) {
                let status = last_status(&self.state, &branch.nodes);
                branch.result = Some(self.result_of(branch, status, None));
            }
        }
        Ok(progress)
    }

    /// Runs the branches that are not over, each in a runner of its own
    /// (with its own cancel), at most `max_parallel` at once, and records
    /// each one's end in the progress and as `parallel.branch.completed`;
    /// under `first_success` the first success cancels the others. A branch
    /// stopped because the whole run is stopping stays unfinished. Folds
    /// the branch runners' history into this runner and returns the final
    /// progress.
    async fn run_branches(
        &mut self,
        node: &Node,
        visit: u32,
        fanout: &Fanout,
        progress: ParallelProgress,
    ) -> Result<ParallelProgress, StoreError> {
        let recorder = self.recorder;
        let at = Some((&*node.id, visit));
        let template = self.checkpoint_now(Some(&node.id), Some(&node.id));
        let shared = Arc::new(Mutex::new(progress.clone()));
        let envs: Vec<RunEnv> = progress
            .branches
            .iter()
            .map(|_| RunEnv {
                cancel: self.env.cancel.child(),
                ..self.env.clone()
            })
            .collect();
        let permits =
            tokio::sync::Semaphore::new(usize::try_from(fanout.max_parallel).unwrap_or(4));
        let mut running = FuturesUnordered::new();
        for (i, branch) in progress.branches.iter().enumerate() {
            if branch.result.is_some() {
                continue;
            }
            let Some(next) = branch.next.clone() else {
                continue;
            };
            let state = self.branch_state(branch);
            let mut runner = self.for_branch(
                &envs[i],
                state,
                Branch {
                    id: branch.id.clone(),
                    join: fanout.join.clone(),
                    progress: shared.clone(),
                    template: template.clone(),
                },
            );
            let permits = &permits;
            running.push(async move {
                let finish = match permits.acquire().await {
                    Ok(_permit) => runner.drive(next).await,
                    Err(_) => Ok(Finish::Cancelled("the branch could not start".into())),
                };
                (i, runner, finish)
            });
        }

        let mut runners = Vec::new();
        let mut failure: Option<StoreError> = None;
        let mut won = false;
        while let Some((i, runner, finish)) = running.next().await {
            let finish = finish.unwrap_or_else(|e| {
                failure.get_or_insert(e);
                Finish::Failed("the run store failed".into())
            });
            if matches!(finish, Finish::Cancelled(_) | Finish::Interrupted(_))
                && self.env.cancel.reason().is_some()
            {
                // The whole run is stopping: this branch is unfinished, not
                // skipped; its progress stays so a resume continues it.
                runners.push(runner);
                continue;
            }
            let (status, reason) = runner.branch_status(&finish);
            let mut guard = lock(&shared);
            if let Some(branch) = guard.branches.get_mut(i) {
                branch.next = None;
                branch.result = Some(runner.result_of(branch, status, reason.clone()));
                recorder.emit(
                    EventKind::ParallelBranchCompleted {
                        branch: branch.id.clone(),
                        status,
                        failure_reason: reason,
                    },
                    at,
                )?;
                if fanout.policy == JoinPolicy::FirstSuccess && is_success(status) && !won {
                    won = true;
                    for (j, env) in envs.iter().enumerate() {
                        if j != i {
                            env.cancel.cancel(CancelReason::User(format!(
                                "branch {} succeeded first (join_policy=first_success)",
                                branch.id
                            )));
                        }
                    }
                }
            }
            drop(guard);
            runners.push(runner);
        }
        if let Some(e) = failure {
            return Err(e);
        }
        let final_progress = lock(&shared).clone();
        for runner in runners {
            self.absorb(runner);
        }
        self.checkpoint_written = Some(Instant::now());
        Ok(final_progress)
    }

    /// A branch's starting state: its own context (naming the branch in
    /// `parallel.branch`) and a copy of this runner's per-node history; it
    /// counts only its own completed stages.
    fn branch_state(&self, branch: &BranchProgress) -> State {
        let mut state = State {
            context: Context::from_map(branch.context.clone()),
            visits: self.state.visits.clone(),
            retries: self.state.retries.clone(),
            outcomes: self.state.outcomes.clone(),
            completed: 0,
            loop_signatures: self.state.loop_signatures.clone(),
            restart_signatures: self.state.restart_signatures.clone(),
            git_commit_sha: None,
        };
        state.context.set("parallel.branch", branch.id.clone());
        state
    }

    /// The parallel stage's outcome from its branches' results: under
    /// `wait_all` succeeded when none failed, partially succeeded when some
    /// did, failed when all did; under `first_success` succeeded when any
    /// succeeded. Records `parallel.completed` and parallel_results.json;
    /// the outcome carries `parallel.results` and `parallel.branch_count`
    /// and jumps to the join node.
    fn join_branches(
        &self,
        node: &Node,
        visit: u32,
        dir: &Path,
        fanout: Fanout,
        progress: &ParallelProgress,
    ) -> Result<Outcome, StoreError> {
        let recorder = self.recorder;
        let at = Some((&*node.id, visit));
        let policy = fanout.policy;
        let results: Vec<BranchResult> = progress
            .branches
            .iter()
            .filter_map(|b| b.result.clone())
            .collect();
        let succeeded = results.iter().filter(|r| is_success(r.status)).count();
        let failed = results
            .iter()
            .filter(|r| r.status == Status::Failed)
            .count();
        let status = match policy {
            JoinPolicy::WaitAll if failed == 0 => Status::Succeeded,
            JoinPolicy::WaitAll if failed < results.len() => Status::PartiallySucceeded,
            JoinPolicy::WaitAll => Status::Failed,
            JoinPolicy::FirstSuccess if succeeded > 0 => Status::Succeeded,
            JoinPolicy::FirstSuccess => Status::Failed,
        };
        recorder.emit(
            EventKind::ParallelCompleted {
                status,
                succeeded: u32::try_from(succeeded).unwrap_or(u32::MAX),
                failed: u32::try_from(failed).unwrap_or(u32::MAX),
            },
            at,
        )?;
        let results_json = serde_json::to_value(&results).unwrap_or(Value::Null);
        let pretty = serde_json::to_vec_pretty(&results_json).unwrap_or_default();
        if let Err(e) = crate::store::write_atomic(&dir.join("parallel_results.json"), &pretty) {
            let _ = recorder.emit(
                EventKind::RunNotice {
                    message: format!("could not write parallel_results.json: {e}"),
                },
                at,
            );
        }
        let mut outcome = if status == Status::Failed {
            Outcome::failed(
                FailureClass::Deterministic,
                format!(
                    "{failed} of {} branches failed{}",
                    results.len(),
                    match policy {
                        JoinPolicy::FirstSuccess => " and none succeeded",
                        JoinPolicy::WaitAll => "",
                    }
                ),
            )
        } else {
            Outcome::with_status(status)
        };
        outcome = outcome
            .update("parallel.results", results_json)
            .update("parallel.branch_count", results.len());
        outcome.jump_to_node = fanout.join;
        Ok(outcome)
    }

    /// Whether a branch's saved progress shows it needs no more stages.
    fn branch_is_over(&self, branch: &BranchProgress, join: Option<&str>) -> bool {
        match branch.next.as_deref() {
            None => !branch.nodes.is_empty(),
            Some(next) => {
                Some(next) == join
                    || self
                        .graph
                        .node(next)
                        .is_some_and(|n| n.handler == Handler::Exit)
            }
        }
    }

    /// How a branch ended: its status and, for a failure, why.
    fn branch_status(&self, finish: &Finish) -> (Status, Option<String>) {
        let nodes = self
            .branch
            .as_ref()
            .map(|b| {
                lock(&b.progress)
                    .branches
                    .iter()
                    .find(|p| p.id == b.id)
                    .map(|p| p.nodes.clone())
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        match finish {
            Finish::Joined(_) | Finish::Succeeded { .. } => {
                let status = last_status(&self.state, &nodes);
                let reason = nodes
                    .last()
                    .and_then(|n| self.state.outcomes.get(n))
                    .filter(|o| o.status == Status::Failed)
                    .and_then(|o| o.failure_reason().map(str::to_string));
                (status, reason)
            }
            Finish::Failed(reason) => (Status::Failed, Some(reason.clone())),
            // Lost a first_success race: the branch was not needed.
            Finish::Cancelled(reason) | Finish::Interrupted(reason) => {
                (Status::Skipped, Some(reason.clone()))
            }
        }
    }

    /// The entry of `parallel.results` for a branch.
    fn result_of(
        &self,
        branch: &BranchProgress,
        status: Status,
        reason: Option<String>,
    ) -> BranchResult {
        let mut updates = Map::new();
        let parent = self.parent_context_snapshot();
        for (k, v) in &branch.context {
            if k == "current_node" || k.starts_with("internal.") || k == "parallel.branch" {
                continue;
            }
            if parent.get(k) != Some(v) {
                updates.insert(k.clone(), v.clone());
            }
        }
        let last = branch.nodes.last();
        let output = last.and_then(|node| {
            branch
                .context
                .get(&format!("response.{node}"))
                .or_else(|| branch.context.get("command.output"))
                .cloned()
                .map(|v| self.inline(v))
        });
        BranchResult {
            id: branch.id.clone(),
            status,
            nodes: branch.nodes.clone(),
            context_updates: updates,
            output,
            failure_reason: reason,
        }
    }

    /// The context the branches started from (the parallel stage's own).
    fn parent_context_snapshot(&self) -> Map<String, Value> {
        self.branch.as_ref().map_or_else(
            || self.state.context.values().clone(),
            |b| b.template.context_values.clone(),
        )
    }

    /// A blob ref read back as text when it is small enough to inline.
    fn inline(&self, value: Value) -> Value {
        let Some(blob) = value.as_str().and_then(BlobRef::parse) else {
            return value;
        };
        match self.env.blobs.get_json(&blob) {
            Ok(Value::String(text)) if text.len() <= INLINE_OUTPUT_BYTES => Value::String(text),
            _ => value,
        }
    }

    /// Folds a finished branch runner's per-node history into this runner.
    fn absorb(&mut self, branch: Runner<'_>) {
        for (node, visits) in branch.state.visits {
            let mine = self.state.visits.entry(node).or_insert(0);
            *mine = (*mine).max(visits);
        }
        for (node, retries) in branch.state.retries {
            let mine = self.state.retries.entry(node).or_insert(0);
            *mine = (*mine).max(retries);
        }
        for (node, outcome) in branch.state.outcomes {
            self.state.outcomes.insert(node, outcome);
        }
        for (sig, count) in branch.state.loop_signatures {
            let mine = self.state.loop_signatures.entry(sig).or_insert(0);
            *mine = (*mine).max(count);
        }
        self.state.completed = self.state.completed.saturating_add(branch.state.completed);
    }
}

fn is_success(status: Status) -> bool {
    matches!(status, Status::Succeeded | Status::PartiallySucceeded)
}

/// The status of the branch's last stage; a branch that ran nothing succeeded.
fn last_status(state: &State, nodes: &[String]) -> Status {
    nodes
        .last()
        .and_then(|n| state.outcomes.get(n))
        .map_or(Status::Succeeded, |o| o.status)
}

/// Breadth-first distances from `start`, not passing through `fork`.
fn distances(graph: &Graph, fork: &str, start: &str) -> BTreeMap<String, usize> {
    let mut dist = BTreeMap::new();
    let mut queue = VecDeque::from([(start.to_string(), 0usize)]);
    while let Some((node, d)) = queue.pop_front() {
        if node == fork || dist.contains_key(&node) {
            continue;
        }
        dist.insert(node.clone(), d);
        for edge in graph.edges_from(&node) {
            queue.push_back((edge.to.to_string(), d + 1));
        }
    }
    dist
}

/// The join node: the fan-in node every branch reaches (the nearest), else
/// the node every branch reaches first (smallest longest distance, then
/// smallest total, then id). `None` when the branches never meet.
#[must_use]
pub(crate) fn find_join(graph: &Graph, fork: &str, starts: &[String]) -> Option<String> {
    let dists: Vec<BTreeMap<String, usize>> =
        starts.iter().map(|s| distances(graph, fork, s)).collect();
    let first = dists.first()?;
    let mut common: Vec<(bool, usize, usize, String)> = first
        .keys()
        .filter(|n| dists.iter().all(|d| d.contains_key(*n)))
        .filter(|n| starts.len() > 1 || !starts.contains(n))
        .map(|n| {
            let far = dists.iter().map(|d| d[n]).max().unwrap_or(0);
            let total = dists.iter().map(|d| d[n]).sum();
            let fan_in = graph.node(n).is_some_and(|x| x.handler == Handler::FanIn);
            (!fan_in, far, total, n.clone())
        })
        .collect();
    common.sort();
    common.into_iter().next().map(|(_, _, _, n)| n)
}

/// A node that two branches would both run before the join makes their
/// stages collide; such a graph is refused with the node named.
fn shared_nodes(
    graph: &Graph,
    fork: &str,
    starts: &[String],
    join: Option<&str>,
) -> Option<String> {
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    for start in starts {
        let mut seen = BTreeSet::new();
        let mut queue = VecDeque::from([start.clone()]);
        while let Some(node) = queue.pop_front() {
            if node == fork || Some(node.as_str()) == join || !seen.insert(node.clone()) {
                continue;
            }
            if graph
                .node(&node)
                .is_some_and(|n| n.handler == Handler::Exit)
            {
                continue;
            }
            if let Some(other) = owner.get(&node)
                && other != start
            {
                return Some(format!(
                    "parallel branches {other} and {start} both reach node {node} before they join; \
                     give each branch its own nodes, or join them at a fan-in node (shape=tripleoctagon)"
                ));
            }
            owner.insert(node.clone(), start.clone());
            for edge in graph.edges_from(&node) {
                queue.push_back(edge.to.to_string());
            }
        }
    }
    None
}
