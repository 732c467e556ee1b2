//! The methods: one params struct per method implementing [`Method`],
//! which names the method and its result type, and [`Call`], which gathers
//! them for the server's dispatch. Both come from one table (the
//! `methods!` macro), so the list of methods exists exactly once. Results
//! reuse the store's and the model's types ([`RunRecord`], [`StageRecord`],
//! [`QuestionRecord`], [`Event`]) instead of redefining them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::envelope::{Id, Rejection, Request, Version};
use super::error::RpcError;
pub use crate::engine::apply::RunApplied;
use crate::engine::fork::Forked;
use crate::ipc::codec::MAX_FRAME_BYTES;
use crate::model::{
    AgentDefaults, Budget, Code, EnvPolicy, Event, ModelChoice, RunStatus, RunSummary,
    SandboxConfig,
};
use crate::store::{QuestionRecord, RunFilter, RunRecord, StageRecord, TimelineEntry};

/// The protocol's own version, reported by `daemon.status`. Bumped when a
/// change would break an existing client (a removed method or field).
pub const PROTOCOL_VERSION: u32 = 1;

// ----- methods -------------------------------------------------------------

/// One method of the protocol: the params type names the method and the
/// type of its result, so `Client::call(RunGet { .. })` returns a
/// [`RunDetail`].
pub trait Method: Serialize + DeserializeOwned + Into<Call> {
    /// The method name on the wire (`run.start`).
    const NAME: &'static str;
    /// What a successful call returns.
    type Output: Serialize + DeserializeOwned;
}

/// The one table of methods: generates [`Call`], its parser and the
/// [`Method`] impls, so no method can be in one and missing from another.
macro_rules! methods {
    ($( $(#[$doc:meta])* $name:literal => $variant:ident($params:ident) -> $output:ty; )*) => {
        /// A typed request: one variant per method, holding its params.
        // One per request, parsed and moved once and never stored in bulk:
        // boxing `run.start`'s params would buy nothing.
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Call {
            $( $(#[$doc])* $variant($params), )*
        }

        impl Call {
            /// Every method name, in the order of the protocol doc.
            pub(crate) const METHODS: &'static [&'static str] = &[$($name),*];

            /// Types a request: `params` absent or `null` means `{}`.
            /// Unknown method → `rpc.method_not_found`; params that do not
            /// fit the method → `rpc.invalid_params`.
            pub fn parse(method: &str, params: Option<Value>) -> Result<Call, RpcError> {
                let params = match params {
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(params) => params,
                };
                match method {
                    $( $name => serde_json::from_value(params)
                        .map(Call::$variant)
                        .map_err(|e| RpcError::invalid_params(format!("invalid params for `{method}`: {e}"))), )*
                    _ => Err(RpcError::method_not_found(method)),
                }
            }

            /// The method name on the wire.
            #[must_use]
            pub fn name(&self) -> &'static str {
                match self {
                    $( Call::$variant(_) => $name, )*
                }
            }
        }

        $(
            impl Method for $params {
                const NAME: &'static str = $name;
                type Output = $output;
            }

            impl From<$params> for Call {
                fn from(params: $params) -> Call {
                    Call::$variant(params)
                }
            }
        )*
    };
}

methods! {
    /// Start a run; returns at once with its id (it runs in the background).
    "run.start" => RunStart(RunStart) -> RunStarted;
    /// List runs, newest first.
    "run.list" => RunList(RunList) -> Vec<RunSummary>;
    /// One run (by id or unique prefix) with its stages.
    "run.get" => RunGet(RunGet) -> RunDetail;
    /// Archive or unarchive a run (the app's list hides archived runs).
    "run.archive" => RunArchive(RunArchive) -> RunSummary;
    /// Ask a queued, running or blocked run to stop.
    "run.cancel" => RunCancel(RunCancel) -> CancelRequested;
    /// Continue an interrupted or cancelled run from its checkpoint.
    "run.resume" => RunResume(RunResume) -> RunStarted;
    /// A page of a run's recorded events.
    "run.events" => RunEvents(RunEvents) -> EventPage;
    /// A run's checkpoint timeline: each committed stage and its checkpoint.
    "run.timeline" => RunTimeline(RunTimeline) -> Vec<TimelineEntry>;
    /// A new run from one of a run's checkpoints (a rewind also archives
    /// the source); resume it to continue.
    "run.fork" => RunFork(RunFork) -> Forked;
    /// Queue a message for a running agent stage, delivered before its
    /// next model turn (steering).
    "run.steer" => RunSteer(RunSteer) -> SteerQueued;
    /// Bring a checkpointed run's result into the user's checkout (merge
    /// its branch, or apply its final.patch), as `weft apply` does.
    "run.apply" => RunApply(RunApply) -> RunApplied;
    /// Receive live events as `event` notifications.
    "subscribe" => Subscribe(Subscribe) -> Subscribed;
    /// Stop a subscription.
    "unsubscribe" => Unsubscribe(Unsubscribe) -> Unsubscribed;
    /// Human-gate questions.
    "question.list" => QuestionList(QuestionList) -> Vec<QuestionRecord>;
    /// Answer a question (idempotent).
    "question.answer" => QuestionAnswer(QuestionAnswer) -> QuestionRecord;
    /// The daemon's version, load and paths.
    "daemon.status" => DaemonStatus(DaemonStatus) -> DaemonInfo;
    /// Shut the daemon down gracefully (running runs are interrupted).
    "daemon.stop" => DaemonStop(DaemonStop) -> DaemonStopping;
    /// Pause or resume the daemon's desktop notifications (in memory, until
    /// weftd restarts); `paused` absent only reports.
    "notifications.pause" => NotificationsPause(NotificationsPause) -> NotificationsState;
}

// ----- run.start / run.resume ----------------------------------------------

/// Where the workflow of a new run comes from. On the wire:
/// `{"path": "/abs/flow.fabro"}` or `{"source": "digraph { … }"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum WorkflowSource {
    /// An absolute path; the daemon reads the file (it runs as the same
    /// user as its clients).
    Path(PathBuf),
    /// The workflow text itself; `@file` references resolve against
    /// `base_dir` (or `work_dir`).
    Source(String),
}

/// The caller's environment: `[["NAME", "value"], …]`. A run started from
/// the CLI runs with the caller's environment, as a script run from their
/// shell would (secrets are still filtered from child processes by the
/// engine). Variables whose name or value is not UTF-8 are not sent.
///
/// Its `Debug` shows names only, so logging a request never leaks a secret.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CallerEnv(pub Vec<(String, String)>);

impl CallerEnv {
    /// This process's environment (skipping non-UTF-8 variables), with
    /// the keys it holds in memory ([`crate::secrets::process_env`]).
    #[must_use]
    pub fn current() -> CallerEnv {
        CallerEnv(crate::secrets::process_env())
    }

    /// True when nothing was sent (the daemon then uses its own environment).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for CallerEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| format!("{name}=…")))
            .finish()
    }
}

/// `run.start` params. Paths must be absolute: the daemon's working
/// directory is not the caller's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunStart {
    pub workflow: WorkflowSource,
    /// Where commands run (the caller's working directory for `weft run`).
    pub work_dir: PathBuf,
    /// Where `@file` references of inline source resolve; defaults to the
    /// workflow file's directory, else `work_dir`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<PathBuf>,
    /// Replaces the graph's `goal` attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    /// Template inputs (`--input NAME=VALUE`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, String>,
    #[serde(default)]
    pub dry_run: bool,
    #[serde(default)]
    pub auto_approve: bool,
    /// Seeds random edge selection and retry jitter; random when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Artifact globs (`[run.artifacts] include`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    /// The run-wide model: `{"model": "sonnet", "provider": "anthropic",
    /// "fallbacks": ["openai"]}`, every field optional.
    #[serde(default, skip_serializing_if = "ModelChoice::is_empty")]
    pub model: ModelChoice,
    /// `[run.env]`: `{"pass": ["GH_TOKEN"], "deny": ["FOO_*"]}`, both
    /// optional; which variables commands get despite the secret rules.
    #[serde(default, skip_serializing_if = "EnvPolicy::is_empty")]
    pub env_policy: EnvPolicy,
    /// `[run.agent]`: `{"max_turns": 50, "permissions": "read-write", …}`,
    /// every field optional; defaults for the run's agent stages.
    #[serde(default, skip_serializing_if = "AgentDefaults::is_empty")]
    pub agent: AgentDefaults,
    /// Spending limits: `{"max_cost": 5.0, "max_tokens": 2000000,
    /// "warn_at": 0.8}`, every field optional (docs/llm.md, "Budgets").
    #[serde(default, skip_serializing_if = "Budget::is_empty")]
    #[ts(as = "Option<Budget>", optional)]
    pub budget: Budget,
    /// Run in `work_dir` itself, without a git worktree and checkpoint
    /// commits, even in a repository (`--no-checkpoint`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[ts(as = "Option<bool>", optional)]
    pub no_checkpoint: bool,
    /// Copy the checkout's uncommitted changes into the run's worktree
    /// (`--include-dirty`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[ts(as = "Option<bool>", optional)]
    pub include_dirty: bool,
    /// Make a retro when the run ends (`--retro`, `--no-retro`, `[run]
    /// retros`); absent leaves it to settings.toml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub retro: Option<bool>,
    /// `--sandbox`, `[run.sandbox]`: `{"provider": "docker", "image":
    /// "…", "memory": "2GiB", …}`, every field optional; where commands run
    /// (docs/sandbox.md).
    #[serde(default, skip_serializing_if = "SandboxConfig::is_empty")]
    #[ts(as = "Option<SandboxConfig>", optional)]
    pub sandbox: SandboxConfig,
    /// The caller's environment; empty means the daemon's own.
    #[serde(default, skip_serializing_if = "CallerEnv::is_empty")]
    #[ts(as = "Option<Vec<(String, String)>>", optional)]
    pub env: CallerEnv,
}

impl RunStart {
    /// A request to run `workflow` in `work_dir` with every option at its
    /// default and no caller environment.
    #[must_use]
    pub fn new(workflow: WorkflowSource, work_dir: impl Into<PathBuf>) -> RunStart {
        RunStart {
            workflow,
            work_dir: work_dir.into(),
            base_dir: None,
            goal: None,
            inputs: BTreeMap::new(),
            dry_run: false,
            auto_approve: false,
            seed: None,
            labels: Vec::new(),
            artifacts: Vec::new(),
            model: ModelChoice::default(),
            env_policy: EnvPolicy::default(),
            agent: AgentDefaults::default(),
            budget: Budget::default(),
            no_checkpoint: false,
            include_dirty: false,
            retro: None,
            sandbox: SandboxConfig::default(),
            env: CallerEnv::default(),
        }
    }
}

/// The result of `run.start` and `run.resume`, sent as soon as the run is
/// recorded (before it executes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunStarted {
    pub run_id: String,
    pub run_dir: PathBuf,
    /// `queued` when the concurrency limit is reached, else `running`.
    pub status: RunStatus,
}

/// `run.resume` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunResume {
    /// A run id or a unique prefix of one.
    pub run: String,
    /// Approve every gate from now on (also when the run was started
    /// without it).
    #[serde(default)]
    pub auto_approve: bool,
    /// The caller's environment; empty means the daemon's own.
    #[serde(default, skip_serializing_if = "CallerEnv::is_empty")]
    #[ts(as = "Option<Vec<(String, String)>>", optional)]
    pub env: CallerEnv,
}

// ----- run.list / run.get / run.cancel / run.events ------------------------

/// `run.list` params; absent filters match everything, filters combine with
/// AND.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunList {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RunStatus>,
    /// The workflow's name, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// Runs carrying this label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Substring of goal, workflow name or run id, ignoring ASCII case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Skip this many of the newest matching runs (paging).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u32>,
    /// Only archived (`true`) or only unarchived (`false`) runs; absent for
    /// both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<bool>,
}

impl RunList {
    /// The store filter for these params: every filter, label and archived
    /// included, is applied in SQL before `limit`/`offset`.
    #[must_use]
    pub fn filter(&self) -> RunFilter {
        RunFilter {
            status: self.status,
            workflow: self.workflow.clone(),
            label: self.label.clone(),
            text: self.text.clone(),
            archived: self.archived,
            limit: self.limit,
            offset: self.offset,
        }
    }
}

/// `run.get` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunGet {
    /// A run id or a unique prefix of one.
    pub run: String,
}

/// The result of `run.get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDetail {
    pub run: RunRecord,
    /// In execution order (`rank`).
    pub stages: Vec<StageRecord>,
}

/// `run.cancel` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCancel {
    /// A run id or a unique prefix of one.
    pub run: String,
}

/// The result of `run.cancel`: the run's status when the daemon replied.
/// A queued run is `cancelled` at once; a running one stays `running` until
/// its stage stops, and its subscribers then see `run.cancelled`. Cancelling
/// a run that already ended changes nothing and returns its final status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct CancelRequested {
    pub run_id: String,
    pub status: RunStatus,
}

/// `run.events` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEvents {
    /// A run id or a unique prefix of one.
    pub run: String,
    /// Only events with a larger `seq` (0: from the first).
    #[serde(default)]
    pub after_seq: u64,
    /// At most this many events (the daemon caps it at
    /// [`crate::store::EVENTS_PAGE_MAX`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// About how many bytes of events one `run.events` page (or one backlog
/// read of a subscription) holds: half the message limit, so a page of
/// large events still fits in one message with room to spare.
pub(crate) const EVENTS_PAGE_BYTES: usize = MAX_FRAME_BYTES / 2;

/// The result of `run.events`: events in `seq` order. A page holds at most
/// `limit` events, at most [`crate::store::EVENTS_PAGE_MAX`], and
/// stops early once it holds [`EVENTS_PAGE_BYTES`] of events, so it always
/// fits in a message; read on from the last `seq` until a page comes back
/// empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventPage {
    /// The full run id (the request may have used a prefix).
    pub run_id: String,
    pub events: Vec<Event>,
}

// ----- run.steer ------------------------------------------------------------

/// `run.steer` params: a message for a running agent stage of a run this
/// daemon executes (human-tools/steering.mdx). The agent gets it as a user
/// message before its next model call, and the run records
/// `agent.steered` when it does. A run executed by another process (`weft
/// run --no-daemon`) cannot be steered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunSteer {
    /// A run id or a unique prefix of one.
    pub run: String,
    /// The agent node to steer; absent for the run's only running agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The message, at most [`crate::engine::steering::MAX_STEERING_BYTES`].
    pub text: String,
}

/// The result of `run.steer`: the agent stage the message was queued for.
/// Errors: `agent.not_running` (no agent of the run is running now, or not
/// the one named; `data.running` lists those that are), `agent.ambiguous`
/// (several are and none was named; `data.running`),
/// `rpc.invalid_params` (an empty or oversized message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct SteerQueued {
    pub run_id: String,
    pub node_id: String,
    pub visit: u32,
}

// ----- run.apply ------------------------------------------------------------

/// `run.apply` params: bring a checkpointed run's result into its checkout
/// (manifest.json's `repo`), as `weft apply` does: merge the run branch
/// into `to` (default: the branch checked out; a fast-forward when it has
/// not moved, else a merge commit), or with `patch` apply the run's
/// final.patch to the working tree, uncommitted. Errors, each changing
/// nothing: `apply.not_checkpointed`, `apply.run_not_ended`,
/// `apply.needs_force` (a failed, cancelled or interrupted run without
/// `force`), `apply.dirty` and `apply.conflicts` (`data.paths`),
/// `apply.patch_does_not_apply`, `apply.no_target`, `apply.failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunApply {
    /// A run id or a unique prefix of one.
    pub run: String,
    /// The branch to merge into; absent for the one checked out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Apply final.patch to the working tree instead of merging.
    #[serde(default)]
    #[ts(as = "Option<bool>", optional)]
    pub patch: bool,
    /// Apply a failed, cancelled or interrupted run too.
    #[serde(default)]
    #[ts(as = "Option<bool>", optional)]
    pub force: bool,
}

// ----- subscribe / unsubscribe ---------------------------------------------

/// `subscribe` params. The client picks the subscription id, so it can
/// route `event` notifications that arrive before the reply.
///
/// For one run, the daemon first sends every recorded event with
/// `seq > after_seq`, then live ones: each event exactly once, in `seq`
/// order, with no gap. Subscribing after `run.start` with `after_seq: 0`
/// therefore misses nothing. For all runs (`run` absent) only events
/// recorded after the subscription are sent and `after_seq` is ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subscribe {
    /// Unique among this connection's live subscriptions.
    pub subscription: String,
    /// A run id or a unique prefix of one; absent for every run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    #[serde(default)]
    pub after_seq: u64,
}

/// The result of `subscribe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subscribed {
    pub subscription: String,
    /// The full id of the subscribed run; `None` for all runs.
    pub run_id: Option<String>,
}

/// `unsubscribe` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unsubscribe {
    pub subscription: String,
}

/// The result of `unsubscribe`. No `event` for it is sent after this reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unsubscribed {
    /// False when there was no such subscription (unsubscribing twice is
    /// not an error).
    pub existed: bool,
}

// ----- questions -----------------------------------------------------------

/// `question.list` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct QuestionList {
    /// A run id or a unique prefix of one; absent for every run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Only questions still waiting for an answer (the default).
    #[serde(default = "yes")]
    pub pending_only: bool,
}

impl Default for QuestionList {
    fn default() -> QuestionList {
        QuestionList {
            run: None,
            pending_only: true,
        }
    }
}

fn yes() -> bool {
    true
}

/// How a question is answered. On the wire: `{"key": "A"}`,
/// `{"label": "Approve"}` or `{"text": "ship it, but …"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum AnswerBy {
    /// An option's accelerator key (`A` of `[A] Approve`), ignoring case.
    Key(String),
    /// An option's label, with or without its accelerator.
    Label(String),
    /// Free text: matched against the options like typed input, else the
    /// gate's freeform answer.
    Text(String),
}

/// `question.answer` params. Answering a question that was already
/// answered with the same choice (or text) returns the recorded answer
/// unchanged; another choice, or a question that timed out or was
/// interrupted, is `question.closed` with the record in `data.question`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct QuestionAnswer {
    /// The question id (from `question.list` or an `interview.started`
    /// event).
    pub question: String,
    pub answer: AnswerBy,
}

// ----- daemon --------------------------------------------------------------

/// `daemon.status` params (none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonStatus {}

/// The result of `daemon.status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct DaemonInfo {
    /// The weftd crate version.
    pub version: String,
    /// [`PROTOCOL_VERSION`] of the daemon.
    pub protocol: u32,
    pub pid: u32,
    pub uptime_ms: u64,
    pub runs_running: u32,
    pub runs_queued: u32,
    pub home: PathBuf,
    pub db_path: PathBuf,
    pub socket_path: PathBuf,
    /// Desktop notifications are paused (`notifications.pause`); absent
    /// from a daemon older than the pause, which never pauses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub notifications_paused: Option<bool>,
}

/// `notifications.pause` params: `true` pauses the daemon's desktop
/// notifications, `false` resumes them, absent only asks. The pause lives
/// in the daemon's memory: a restarted weftd notifies again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct NotificationsPause {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub paused: Option<bool>,
}

/// The result of `notifications.pause`: whether notifications are paused
/// now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct NotificationsState {
    pub paused: bool,
}

/// `run.timeline` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunTimeline {
    /// A run id or a unique prefix of one.
    pub run: String,
}

/// `run.fork` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunFork {
    /// A run id or a unique prefix of one.
    pub run: String,
    /// The checkpoint: `node` (its latest visit), `node@visit` or `@N` (the
    /// Nth on the timeline); absent for the latest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub target: Option<String>,
    /// Rewind: the source must have ended, and is archived.
    #[serde(default)]
    pub rewind: bool,
}

/// `run.archive` params. Archiving changes nothing about the run itself:
/// it only hides it from the app's list unless archived runs are asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunArchive {
    /// A run id or a unique prefix of one.
    pub run: String,
    /// True to archive, false to bring it back.
    pub archived: bool,
}

/// `daemon.stop` params (none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonStop {}

/// The result of `daemon.stop`, sent before the daemon shuts down.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonStopping {
    /// The daemon's pid, so the caller can wait for it to exit.
    pub pid: u32,
    /// Runs that will be checkpointed as interrupted.
    pub runs_interrupted: u32,
}

// ----- typing a request -----------------------------------------------------

impl Request {
    /// The request calling method `M` with `params` under `id`.
    ///
    /// Fails only if `params` cannot be serialised (a map with non-string
    /// keys, which no params type here has).
    pub fn new<M: Method>(id: impl Into<Id>, params: &M) -> Result<Request, serde_json::Error> {
        let params = serde_json::to_value(params)?;
        Ok(Request {
            jsonrpc: Version,
            id: Some(id.into()),
            method: M::NAME.to_string(),
            params: Some(params),
        })
    }

    /// The typed call: [`RpcError::method_not_found`] for an unknown
    /// method, [`RpcError::invalid_params`] when the params do not fit.
    pub fn call(&self) -> Result<Call, RpcError> {
        Call::parse(&self.method, self.params.clone())
    }
}

/// Reads one request line's JSON value (already parsed by the codec) into
/// its id and typed call, or the error to reply with: `-32600` for anything
/// that is not a single JSON-RPC 2.0 request object (batches are not
/// supported), `-32601` for an unknown method, `-32602` for bad params.
///
/// The id is recovered whenever it is a valid id (a string, a number or
/// `null`), so even an invalid request gets its error under its own id.
pub(crate) fn decode_request(value: Value) -> Result<(Option<Id>, Call), Rejection> {
    let id = match &value {
        Value::Object(map) => map.get("id").and_then(|id| Id::deserialize(id).ok()),
        _ => None,
    };
    if value.is_array() {
        return Err(Rejection {
            id,
            error: RpcError::invalid_request(
                "batch requests are not supported; send one request per line",
            ),
        });
    }
    let request: Request = serde_json::from_value(value).map_err(|e| Rejection {
        id: id.clone(),
        error: RpcError::invalid_request(format!("not a JSON-RPC 2.0 request: {e}")),
    })?;
    match request.call() {
        Ok(call) => Ok((request.id, call)),
        Err(error) => Err(Rejection {
            id: request.id,
            error,
        }),
    }
}

impl RpcError {
    /// `-32601 rpc.method_not_found`, listing the methods there are.
    #[must_use]
    pub fn method_not_found(method: &str) -> RpcError {
        RpcError::new(
            Code::RpcMethodNotFound,
            format!(
                "no method `{method}`; the methods are {}",
                Call::METHODS.join(", ")
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caller_env_debug_output_hides_values() {
        let env = CallerEnv(vec![("ANTHROPIC_API_KEY".into(), "sk-secret".into())]);
        let shown = format!(
            "{:?}",
            RunStart {
                env,
                ..RunStart::new(WorkflowSource::Source(String::new()), "/w")
            }
        );
        assert!(shown.contains("ANTHROPIC_API_KEY"), "{shown}");
        assert!(
            !shown.contains("sk-secret"),
            "a logged request must not leak secrets: {shown}"
        );
    }

    #[test]
    fn run_list_filters_map_onto_the_store_filter() {
        let list = RunList {
            status: Some(RunStatus::Blocked),
            workflow: Some("ship".into()),
            label: Some("nightly".into()),
            text: Some("x".into()),
            limit: Some(5),
            offset: Some(10),
            archived: Some(true),
        };
        let filter = list.filter();
        assert_eq!(filter.status, Some(RunStatus::Blocked));
        assert_eq!(filter.workflow.as_deref(), Some("ship"));
        assert_eq!(filter.label.as_deref(), Some("nightly"));
        assert_eq!(filter.archived, Some(true));
        assert_eq!(filter.text.as_deref(), Some("x"));
        assert_eq!((filter.limit, filter.offset), (Some(5), Some(10)));
    }
}
