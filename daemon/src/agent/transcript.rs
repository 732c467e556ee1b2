//! The stage's `transcript.jsonl`: one JSON object per line, appended as
//! the session goes, so a crash loses at most the line being written.
//! `weft logs RUN NODE` prints it; a tool output longer than its `summary`
//! is beside it in `tools/` (named in the `tool` entry).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::llm::Usage;

/// The file name in the stage directory.
pub const TRANSCRIPT_FILE: &str = "transcript.jsonl";
/// The directory of full tool outputs in the stage directory.
pub const TOOLS_DIR: &str = "tools";

/// One line of the transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    /// The session's start: who it talks to and with which tools.
    Session {
        provider: String,
        model: String,
        profile: String,
        tools: Vec<String>,
        permissions: String,
    },
    /// The system prompt.
    System {
        text: String,
    },
    /// A user message: the prompt, a repair request.
    User {
        text: String,
    },
    /// A model turn: what it said and which tools it asked for.
    Assistant {
        turn: u32,
        text: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reasoning: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<Call>,
        usage: Usage,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<f64>,
        duration_ms: u64,
    },
    /// A tool call's result.
    Tool {
        call_id: String,
        tool: String,
        is_error: bool,
        duration_ms: u64,
        /// The start of the output (what `weft logs` shows): all of it when
        /// it is 500 bytes or less.
        summary: String,
        /// The full output's size and, when `summary` is not all of it, its
        /// file (relative to the stage directory).
        output_bytes: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_file: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        touched: Vec<String>,
    },
    Steering {
        text: String,
    },
    Compaction {
        summary: String,
        original_turns: u32,
        preserved_turns: u32,
    },
    LoopDetected {
        message: String,
    },
    /// The session ended: `completed`, or why it stopped.
    End {
        reason: String,
    },
}

/// A tool call as the transcript shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}
