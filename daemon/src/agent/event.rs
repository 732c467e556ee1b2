//! What a session reports while it works. The engine records each as a run
//! event (`agent.*`, `llm.*`), so the app and `weft events` see an agent
//! live and afterwards.

use std::time::Duration;

use serde_json::Value;

use crate::llm::{CallEvent, Usage};

#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    /// A model call begins (1 for the first).
    TurnStarted { turn: u32 },
    /// Assistant text as it streams, coalesced: at most one event per
    /// ~100 ms or 2 KB of text, never one per token.
    Text { turn: u32, text: String },
    /// A retry, failover or warning of the model call (never a delta).
    Call(CallEvent),
    /// A model call answered.
    ModelCompleted {
        provider: String,
        model: String,
        usage: Usage,
        /// US dollars, when priced.
        cost: Option<f64>,
        finish: String,
        duration: Duration,
    },
    /// A turn ended: its model call and the tools it asked for.
    TurnCompleted {
        turn: u32,
        tool_calls: u32,
        usage: Usage,
        duration: Duration,
    },
    ToolStarted {
        call_id: String,
        tool: String,
        /// One short line: the command, the path, the pattern.
        summary: String,
        arguments: Value,
    },
    ToolCompleted {
        call_id: String,
        tool: String,
        duration: Duration,
        is_error: bool,
        /// The start of what the model was given (a few KB at most).
        preview: String,
        /// The size of the full output.
        output_bytes: u64,
        /// Paths this call wrote, relative to the work dir.
        touched: Vec<String>,
    },
    /// Older turns were summarised to fit the context window.
    Compacted {
        original_turns: u32,
        preserved_turns: u32,
        estimated_tokens: u64,
        context_window: u64,
    },
    /// Compaction's model call failed; the session goes on uncompacted.
    CompactionFailed { error: String },
    /// The model repeated a pattern of tool calls; it was warned.
    LoopDetected {
        pattern_len: u32,
        tools: Vec<String>,
    },
    /// A steering message was given to the model.
    Steered { text: String },
}
