//! Run events: one typed enum, serialised as the envelope of
//! execution/observability.mdx (`event` name plus `properties`), with a
//! per-run sequence number. The same events go to the database's `events`
//! table, to `progress.jsonl` and to live subscribers.

use serde::{Deserialize, Serialize};

use super::outcome::{Outcome, Status};
use super::permission::PermissionAsk;

/// One recorded event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Event {
    /// 1-based, gap-free within a run.
    pub seq: u64,
    /// UTC, RFC 3339 with milliseconds.
    pub ts: String,
    pub run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// The node's visit number (1 for the first execution).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visit: Option<u32>,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Why an edge (or a jump without an edge) was chosen
/// (workflows/transitions.mdx, in selection order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum EdgeReason {
    Jump,
    Condition,
    PreferredLabel,
    SuggestedNext,
    Unconditional,
    RetryTarget,
    /// A goal gate was unsatisfied at the exit; its retry target was taken.
    GoalGateRetry,
}

/// Which output stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    Stdout,
    Stderr,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "event", content = "properties")]
pub enum EventKind {
    #[serde(rename = "run.started")]
    RunStarted {
        workflow: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        goal: Option<String>,
        run_dir: String,
        /// True when this start continues an earlier run from its checkpoint.
        #[serde(default)]
        resumed: bool,
    },
    #[serde(rename = "run.completed")]
    RunCompleted {
        duration_ms: u64,
        /// The nodes whose latest visit failed, routed past by the default
        /// `on_failure="route"` policy; absent when none did.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        #[ts(as = "Option<Vec<String>>", optional)]
        failed_stages: Vec<String>,
        /// The exit node the run reached (a workflow may have several);
        /// absent when it ended at a stage with no way out, and in events
        /// recorded before it was kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_node: Option<String>,
    },
    #[serde(rename = "run.failed")]
    RunFailed { reason: String, duration_ms: u64 },
    #[serde(rename = "run.cancelled")]
    RunCancelled { reason: String, duration_ms: u64 },
    /// The process running it stopped (a daemon shutdown); it resumes later.
    #[serde(rename = "run.interrupted")]
    RunInterrupted { reason: String, duration_ms: u64 },
    /// Something the user should know that does not stop the run.
    #[serde(rename = "run.notice")]
    RunNotice { message: String },
    /// A stage's commands run in the run's container (docs/sandbox.md):
    /// `container` is its short id, `attach` how the stage found it
    /// (`created`, `reused` after a crash, `running`).
    #[serde(rename = "sandbox.ready")]
    SandboxReady {
        container: String,
        image: String,
        engine: String,
        attach: String,
    },
    /// The run ended and its container was removed.
    #[serde(rename = "sandbox.removed")]
    SandboxRemoved { container: String },
    /// The run ended and its container was kept, as its `keep` policy
    /// says: `docker exec -it CONTAINER bash` reaches it.
    #[serde(rename = "sandbox.kept")]
    SandboxKept { engine: String, container: String },
    /// The run's spend passed the warning share of a limit (once per
    /// limit): `limit` is `run.cost`, `run.tokens`, `day.cost` or
    /// `day.tokens`; `max` and `spent` are dollars or tokens.
    #[serde(rename = "budget.warning")]
    BudgetWarning {
        limit: String,
        max: f64,
        spent: f64,
        message: String,
    },
    /// Variables of the run's environment that commands do not get: they
    /// look like secrets, or `[run.env] deny` names them. Names only, never
    /// values; emitted right after `run.started` when there are any.
    #[serde(rename = "run.env_withheld")]
    EnvWithheld { names: Vec<String> },
    #[serde(rename = "stage.started")]
    StageStarted {
        handler: String,
        attempt: u32,
        /// The parallel branch the stage runs in, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        branch: Option<String>,
    },
    /// An attempt failed and another will run after `delay_ms`.
    #[serde(rename = "stage.retrying")]
    StageRetrying {
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
    /// The stage finished with any status but `failed`.
    #[serde(rename = "stage.completed")]
    StageCompleted {
        status: Status,
        duration_ms: u64,
        attempts: u32,
        outcome: Outcome,
    },
    /// The stage finished `failed`.
    #[serde(rename = "stage.failed")]
    StageFailed {
        status: Status,
        duration_ms: u64,
        attempts: u32,
        outcome: Outcome,
    },
    #[serde(rename = "edge.selected")]
    EdgeSelected {
        from_node: String,
        to_node: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        condition: Option<String>,
        reason: EdgeReason,
    },
    /// The checkpoint naming the next node was committed. It carries the
    /// whole checkpoint so that a damaged `runs.checkpoint` can be rebuilt
    /// from the events table.
    #[serde(rename = "checkpoint.saved")]
    CheckpointSaved {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_node: Option<String>,
        completed: u32,
        checkpoint: serde_json::Value,
    },
    #[serde(rename = "command.output")]
    CommandOutput { stream: Stream, text: String },
    #[serde(rename = "interview.started")]
    InterviewStarted {
        question_id: String,
        question: String,
        options: Vec<String>,
        freeform: bool,
        /// The end of the previous stage's output or response, shown above
        /// the question (at most 2,000 characters).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context: Option<String>,
        /// How long the gate waits (its `timeout`), if it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
        /// What a timeout picks (`human.default_choice`), if set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default_choice: Option<String>,
        /// The external agent's request, when the question is a permission
        /// request (`acp.permissions="ask"`); absent for a human gate.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        permission: Option<PermissionAsk>,
    },
    #[serde(rename = "interview.completed")]
    InterviewCompleted {
        question_id: String,
        /// The option label chosen, or `freeform`.
        selected: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    #[serde(rename = "interview.timeout")]
    InterviewTimeout {
        question_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default_choice: Option<String>,
    },
    #[serde(rename = "interview.interrupted")]
    InterviewInterrupted { question_id: String, reason: String },
    #[serde(rename = "loop.restart")]
    LoopRestart { from_node: String, to_node: String },
    /// Files matching `[run.artifacts] include` were captured after a stage.
    #[serde(rename = "artifact.captured")]
    ArtifactCaptured {
        paths: Vec<String>,
        #[serde(default)]
        skipped: u32,
    },
    #[serde(rename = "parallel.started")]
    ParallelStarted {
        branches: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        join: Option<String>,
        join_policy: String,
        max_parallel: u32,
    },
    #[serde(rename = "parallel.branch.completed")]
    ParallelBranchCompleted {
        branch: String,
        status: Status,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure_reason: Option<String>,
    },
    #[serde(rename = "parallel.completed")]
    ParallelCompleted {
        status: Status,
        succeeded: u32,
        failed: u32,
    },
    #[serde(rename = "watchdog.timeout")]
    WatchdogTimeout { idle_secs: u64 },
    /// A language-model call answered (one per call; a repair turn is a
    /// call of its own).
    #[serde(rename = "llm.completed")]
    LlmCompleted {
        provider: String,
        model: String,
        input_tokens: u64,
        output_tokens: u64,
        #[serde(default)]
        reasoning_tokens: u64,
        #[serde(default)]
        cache_read_tokens: u64,
        #[serde(default)]
        cache_write_tokens: u64,
        /// US dollars; absent when the catalog has no price for the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<f64>,
        finish: String,
        duration_ms: u64,
    },
    /// A call failed and is tried again after `wait_ms`.
    #[serde(rename = "llm.retry")]
    LlmRetry {
        provider: String,
        model: String,
        retry: u32,
        wait_ms: u64,
        /// The error's stable code (`llm.rate_limited`, ...) and message,
        /// which never holds a key.
        code: String,
        error: String,
    },
    /// A provider failed for good; the call moves to a fallback
    /// (`[run.model] fallbacks`).
    #[serde(rename = "llm.failover")]
    LlmFailover {
        from: String,
        to: String,
        code: String,
        error: String,
    },
    /// An agent's model call begins (agent stages; 1 for the first).
    #[serde(rename = "agent.turn.started")]
    AgentTurnStarted { turn: u32 },
    /// Assistant text as it streams, coalesced (never one event per token).
    #[serde(rename = "agent.text")]
    AgentText { turn: u32, text: String },
    /// An agent turn ended: its model call and the tools it asked for.
    #[serde(rename = "agent.turn.completed")]
    AgentTurnCompleted {
        turn: u32,
        tool_calls: u32,
        input_tokens: u64,
        output_tokens: u64,
        duration_ms: u64,
    },
    /// An agent's tool call began.
    #[serde(rename = "agent.tool.started")]
    AgentToolStarted {
        call_id: String,
        tool: String,
        /// One short line: the command, the path, the pattern.
        summary: String,
        /// The arguments (long strings cut to a few KB).
        arguments: serde_json::Value,
    },
    /// An agent's tool call finished (an error is the model's to handle;
    /// it does not fail the stage).
    #[serde(rename = "agent.tool.completed")]
    AgentToolCompleted {
        call_id: String,
        tool: String,
        duration_ms: u64,
        is_error: bool,
        /// The start of the output (a few KB at most); the whole is in the
        /// stage directory's `tools/`.
        preview: String,
        output_bytes: u64,
        /// Paths the call wrote, relative to the work dir.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        touched: Vec<String>,
    },
    /// Older turns of an agent's conversation were summarised to fit the
    /// model's context window (execution/context.mdx).
    #[serde(rename = "agent.compaction")]
    AgentCompaction {
        original_turns: u32,
        preserved_turns: u32,
        estimated_tokens: u64,
        context_window: u64,
    },
    /// An agent repeated a pattern of tool calls and was warned.
    #[serde(rename = "agent.loop_detected")]
    AgentLoopDetected {
        pattern_len: u32,
        tools: Vec<String>,
    },
    /// A steering message reached a running agent (human-tools/steering.mdx).
    #[serde(rename = "agent.steered")]
    AgentSteered { text: String },
}

impl EventKind {
    /// The event's dotted name, as stored in the `event` column.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::RunStarted { .. } => "run.started",
            EventKind::RunCompleted { .. } => "run.completed",
            EventKind::RunFailed { .. } => "run.failed",
            EventKind::RunCancelled { .. } => "run.cancelled",
            EventKind::RunInterrupted { .. } => "run.interrupted",
            EventKind::RunNotice { .. } => "run.notice",
            EventKind::SandboxReady { .. } => "sandbox.ready",
            EventKind::SandboxRemoved { .. } => "sandbox.removed",
            EventKind::SandboxKept { .. } => "sandbox.kept",
            EventKind::BudgetWarning { .. } => "budget.warning",
            EventKind::EnvWithheld { .. } => "run.env_withheld",
            EventKind::StageStarted { .. } => "stage.started",
            EventKind::StageRetrying { .. } => "stage.retrying",
            EventKind::StageCompleted { .. } => "stage.completed",
            EventKind::StageFailed { .. } => "stage.failed",
            EventKind::EdgeSelected { .. } => "edge.selected",
            EventKind::CheckpointSaved { .. } => "checkpoint.saved",
            EventKind::CommandOutput { .. } => "command.output",
            EventKind::LlmCompleted { .. } => "llm.completed",
            EventKind::LlmRetry { .. } => "llm.retry",
            EventKind::LlmFailover { .. } => "llm.failover",
            EventKind::InterviewStarted { .. } => "interview.started",
            EventKind::InterviewCompleted { .. } => "interview.completed",
            EventKind::InterviewTimeout { .. } => "interview.timeout",
            EventKind::InterviewInterrupted { .. } => "interview.interrupted",
            EventKind::LoopRestart { .. } => "loop.restart",
            EventKind::ArtifactCaptured { .. } => "artifact.captured",
            EventKind::ParallelStarted { .. } => "parallel.started",
            EventKind::ParallelBranchCompleted { .. } => "parallel.branch.completed",
            EventKind::ParallelCompleted { .. } => "parallel.completed",
            EventKind::WatchdogTimeout { .. } => "watchdog.timeout",
            EventKind::AgentTurnStarted { .. } => "agent.turn.started",
            EventKind::AgentText { .. } => "agent.text",
            EventKind::AgentTurnCompleted { .. } => "agent.turn.completed",
            EventKind::AgentToolStarted { .. } => "agent.tool.started",
            EventKind::AgentToolCompleted { .. } => "agent.tool.completed",
            EventKind::AgentCompaction { .. } => "agent.compaction",
            EventKind::AgentLoopDetected { .. } => "agent.loop_detected",
            EventKind::AgentSteered { .. } => "agent.steered",
        }
    }

    /// The `properties` object alone, as stored in the `properties` column.
    #[must_use]
    pub fn properties(&self) -> serde_json::Value {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(mut map)) => {
                map.remove("properties").unwrap_or(serde_json::Value::Null)
            }
            _ => serde_json::Value::Null,
        }
    }

    /// Rebuilds a kind from its stored name and properties.
    pub fn from_parts(name: &str, properties: serde_json::Value) -> serde_json::Result<EventKind> {
        serde_json::from_value(serde_json::json!({ "event": name, "properties": properties }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialise_as_envelopes_with_properties() {
        let event = Event {
            seq: 3,
            ts: "2026-12-02T12:00:00.000Z".into(),
            run_id: "01J".into(),
            node_id: Some("test".into()),
            visit: Some(1),
            kind: EventKind::StageStarted {
                handler: "command".into(),
                attempt: 1,
                branch: None,
            },
        };
        let json = serde_json::to_value(&event).expect("serialises");
        assert_eq!(json["event"], "stage.started");
        assert_eq!(json["properties"]["handler"], "command");
        assert_eq!(json["node_id"], "test");
        let back: Event = serde_json::from_value(json).expect("reads back");
        assert_eq!(back, event);
    }

    #[test]
    fn a_kind_reads_back_from_its_name_and_properties() {
        let kind = EventKind::RunFailed {
            reason: "x".into(),
            duration_ms: 5,
        };
        let back = EventKind::from_parts(kind.name(), kind.properties()).expect("reads back");
        assert_eq!(back, kind);
    }

    #[test]
    fn a_run_completed_event_recorded_before_exit_nodes_were_kept_still_reads() {
        let old = EventKind::from_parts("run.completed", serde_json::json!({"duration_ms": 5}))
            .expect("reads");
        assert_eq!(
            old,
            EventKind::RunCompleted {
                duration_ms: 5,
                failed_stages: Vec::new(),
                exit_node: None,
            }
        );
        let new = EventKind::RunCompleted {
            duration_ms: 5,
            failed_stages: Vec::new(),
            exit_node: Some("failed_exit".into()),
        };
        assert_eq!(new.properties()["exit_node"], "failed_exit");
    }

    fn gate_question(permission: Option<PermissionAsk>) -> EventKind {
        EventKind::InterviewStarted {
            question_id: "Q1".into(),
            question: "claude asks permission: Run cargo publish".into(),
            options: vec!["Allow".into(), "Reject".into()],
            freeform: false,
            context: None,
            timeout_ms: None,
            default_choice: None,
            permission,
        }
    }

    #[test]
    fn a_permission_question_carries_the_request_and_a_gate_s_has_no_such_key() {
        let permission = PermissionAsk {
            agent: "claude".into(),
            tool_kind: "execute".into(),
            title: "Run cargo publish".into(),
            locations: vec!["/w/Cargo.toml".into()],
            command: Some("cargo publish".into()),
            input: Some("{\"command\": \"cargo publish\"}".into()),
            options: vec![
                crate::model::PermissionChoice {
                    label: "Allow".into(),
                    kind: "allow_once".into(),
                },
                crate::model::PermissionChoice {
                    label: "Reject".into(),
                    kind: "reject_once".into(),
                },
            ],
        };
        let asked = gate_question(Some(permission));
        let properties = asked.properties();
        assert_eq!(properties["permission"]["tool_kind"], "execute");
        assert_eq!(
            properties["permission"]["options"][1]["kind"],
            "reject_once"
        );
        assert_eq!(
            EventKind::from_parts(asked.name(), properties).expect("reads back"),
            asked
        );

        let gate = gate_question(None);
        assert!(gate.properties().get("permission").is_none());
        // An event recorded before the field existed reads as a gate's.
        let old = serde_json::json!({
            "question_id": "Q1", "question": "Ship?", "options": ["Yes"], "freeform": false
        });
        let EventKind::InterviewStarted { permission, .. } =
            EventKind::from_parts("interview.started", old).expect("reads")
        else {
            panic!("not a question");
        };
        assert_eq!(permission, None);
    }
}
