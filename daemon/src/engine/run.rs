//! The run loop: start → handler → outcome → edge selection → commit
//! (stage + events + checkpoint) → next node, until the exit node (where
//! goal gates are checked) or until the run fails, is cancelled or has
//! nowhere to go.
//!
//! - This file: the [`Runner`] (how it is built, its [`State`]), the loop
//!   itself ([`Runner::drive`]: cancel, branch end, goal gates, visit
//!   limits) and the checkpoint.json mirror.
//! - `stage.rs`: one stage in named steps, from start to commit.
//! - `parallel.rs` and `subworkflow.rs`: the stages that drive nested
//!   runners (fan-out branches, child runs); `branch.rs`: what a branch
//!   runner knows about its branch.

mod branch;
mod parallel;
mod stage;
mod subworkflow;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use serde_json::Value;

use self::branch::Branch;
use super::checkpoint::{CHECKPOINT_VERSION, Checkpoint, ParallelProgress};
use super::context::Context;
use super::handlers::RunEnv;
use super::recorder::Recorder;
use super::routing::{self, Selection};
use crate::exec::cancel::CancelReason;
use crate::lang::graph::{Graph, Handler, Node};
use crate::model::{EdgeReason, EventKind};
use crate::model::{FailureClass, Outcome};
use crate::store::{StageRecord, StoreError};

/// The circuit breaker's default limit (execution/failures.mdx).
pub(crate) const DEFAULT_SIGNATURE_LIMIT: u32 = 3;

/// The graph-wide visit limit of a dry run.
pub(crate) const DRY_RUN_VISIT_LIMIT: u32 = 10;

/// The stall watchdog's default, in seconds.
pub(crate) const DEFAULT_STALL_TIMEOUT_SECS: u64 = 1800;

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    /// The run succeeded; `exit` names the exit node it reached (`None`
    /// when it ended at a stage with no way out).
    Succeeded {
        exit: Option<String>,
    },
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
    /// The run branch's head at the checkpoint the state was restored from
    /// (git checkpoint mode); the run's [`crate::engine::run_git::RunGit`]
    /// keeps the current one.
    pub git_commit_sha: Option<String>,
}

impl State {
    /// The state a checkpoint and the run's committed stages describe.
    #[must_use]
    pub(crate) fn restore(cp: Checkpoint, stages: &[StageRecord]) -> State {
        let mut state = State {
            context: Context::from_map(cp.context_values),
            completed: cp.completed,
            loop_signatures: cp.loop_failure_signatures,
            restart_signatures: cp.restart_failure_signatures,
            git_commit_sha: cp.git_commit_sha,
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
            git_commit_sha: self.git_commit_sha.clone(),
            parallel: None,
        }
    }
}

/// One execution of a graph: a run's own ([`Runner::new`], then
/// [`Runner::resuming`] for a resumed run), or one branch of a parallel
/// stage (`Runner::for_branch`). Its fields belong to the run loop.
pub(crate) struct Runner<'a> {
    graph: &'a Graph,
    env: &'a RunEnv,
    recorder: &'a Recorder,
    state: State,
    /// Draws `selection="random"` edges, retry jitter and the seeds of
    /// branches and child runs.
    rng: SmallRng,
    /// When checkpoint.json was last written, and a newer checkpoint not
    /// yet written to it.
    checkpoint_written: Option<Instant>,
    pending_checkpoint: Option<Checkpoint>,
    /// Set when this runner executes one branch of a parallel stage.
    branch: Option<Branch>,
    /// Branch progress from the checkpoint of a resumed run, for the
    /// parallel node it names.
    resume_parallel: Option<ParallelProgress>,
    /// The edge that led to the next node (its `fidelity` applies there);
    /// `None` at the start, after a jump or a resume.
    entered_by: Option<usize>,
    /// Set until the first stage after a resume has started: it cannot
    /// continue a conversation that is no longer in memory, so `full`
    /// fidelity degrades to `summary:high` there (execution/context.mdx).
    resumed: bool,
    /// How many runners this one runs inside: parallel branches and
    /// sub-workflow runs each add one (see [`MAX_NESTING`]).
    nesting: usize,
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
fn too_deep(what: &str) -> Outcome {
    Outcome::failed(
        FailureClass::Deterministic,
        format!(
            "{what} would nest more than {MAX_NESTING} levels of parallel fan-outs and sub-workflows (does a workflow run itself as its own child?)"
        ),
    )
}

impl<'a> Runner<'a> {
    /// A runner for a run's own graph, from `state` (a new run's, or one
    /// restored from a checkpoint), recording through `recorder`. `seed`
    /// starts its random sequence; `nesting` counts the runners around it
    /// (0 for a top-level run, one more per sub-workflow; see
    /// [`MAX_NESTING`]).
    #[must_use]
    pub fn new(
        graph: &'a Graph,
        env: &'a RunEnv,
        recorder: &'a Recorder,
        state: State,
        seed: u64,
        nesting: usize,
    ) -> Runner<'a> {
        Runner {
            graph,
            env,
            recorder,
            state,
            rng: SmallRng::seed_from_u64(seed),
            checkpoint_written: None,
            pending_checkpoint: None,
            branch: None,
            resume_parallel: None,
            entered_by: None,
            resumed: false,
            nesting,
        }
    }

    /// The runner continuing a resumed run: its first stage runs `full`
    /// fidelity as `summary:high` (the conversation is no longer in
    /// memory), and `parallel`, the branch progress the checkpoint recorded,
    /// lets the parallel node it names continue its unfinished branches.
    #[must_use]
    pub fn resuming(mut self, parallel: Option<ParallelProgress>) -> Runner<'a> {
        self.resumed = true;
        self.resume_parallel = parallel;
        self
    }

    /// A runner for one branch of the parallel stage this runner is in: the
    /// same graph and recorder, the branch's own `env` (with its own cancel)
    /// and `state`, a random sequence seeded from this runner's, one level
    /// deeper; it stops where `branch` joins.
    fn for_branch<'b>(&mut self, env: &'b RunEnv, state: State, branch: Branch) -> Runner<'b>
    where
        'a: 'b,
    {
        Runner {
            graph: self.graph,
            env,
            recorder: self.recorder,
            state,
            rng: SmallRng::seed_from_u64(self.rng.random()),
            checkpoint_written: self.checkpoint_written,
            pending_checkpoint: None,
            branch: Some(branch),
            resume_parallel: None,
            entered_by: None,
            resumed: false,
            nesting: self.nesting + 1,
        }
    }

    /// Runs from `next`, stage after stage, until the run ends (or, in a
    /// branch, until it reaches the join or the exit). Before each stage:
    /// a cancel stops the run; the exit node first checks the goal gates
    /// (and may jump to a retry target); the node's visit limit may fail the
    /// run. Errs only when the store fails.
    pub(crate) async fn drive(&mut self, mut next: String) -> Result<Finish, StoreError> {
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
        let checkpoint = self.checkpoint_now(Some(&exit.id), Some(&target));
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

    /// The run's checkpoint now, naming `current` and `next`, with the run
    /// branch's head when the run is checkpointed in git.
    fn checkpoint_now(&self, current: Option<&str>, next: Option<&str>) -> Checkpoint {
        let mut checkpoint = self.state.checkpoint(current, next);
        if let Some(git) = &self.env.git {
            checkpoint.git_commit_sha = Some(git.head());
        }
        checkpoint
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

    /// How many times one failure signature may repeat before the run
    /// stops (the circuit breaker, and across `loop_restart` edges): the
    /// graph's `loop_restart_signature_limit`, else
    /// [`DEFAULT_SIGNATURE_LIMIT`].
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
    pub(crate) fn flush_checkpoint_file(&mut self) {
        if let Some(checkpoint) = self.pending_checkpoint.take() {
            self.write_checkpoint_now(&checkpoint);
        }
    }

    /// Writes checkpoint.json now; a failure is a notice (the database has
    /// the checkpoint).
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
pub(crate) const CHECKPOINT_FILE_INTERVAL: Duration = Duration::from_millis(100);

/// Where the run goes after a stage.
enum Step {
    Next(String),
    Finish(Finish),
}

/// How a run stopped by `reason` ends: a user's cancel is `cancelled`, a
/// daemon shutdown `interrupted` (resumable), a stall `failed`.
fn cancelled(reason: CancelReason) -> Finish {
    match reason {
        CancelReason::User(why) => Finish::Cancelled(why),
        CancelReason::Shutdown(why) => Finish::Interrupted(why),
        stalled @ CancelReason::Stalled(_) => Finish::Failed(stalled.to_string()),
    }
}

/// The `checkpoint.saved` event for `checkpoint`.
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
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
