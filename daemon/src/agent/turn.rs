//! One prompt of an external agent, whatever the transport (ACP's
//! `session/update`s, a headless CLI's JSON lines): its reply text,
//! reported as `agent.text` in batches; its thoughts; its tool calls, each
//! started and finished once, into `agent.tool.*` events and
//! `transcript.jsonl` (long outputs in `tools/`), so that `weft logs` and
//! the app show external agents as they show Weft's own.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::agent::event::AgentEvent;
use crate::agent::record::Recorder;
use crate::agent::transcript::{Call, Entry};
use crate::llm::Usage;

/// Text is reported at most this often…
const TEXT_EVERY: Duration = Duration::from_millis(100);
/// …or once this much has gathered.
const TEXT_BYTES: usize = 2 * 1024;
/// A tool call's output kept in the transcript line itself; the rest goes
/// to `tools/`.
const SUMMARY_BYTES: usize = 500;
/// The preview of `agent.tool.completed`.
const PREVIEW_BYTES: usize = 4 * 1024;
/// Tool calls one turn may report: past it the agent is flooding.
pub const MAX_TOOL_CALLS: usize = 10_000;
/// The reply and the thoughts of one turn, each, at most: past it the
/// agent is flooding (a reply is read whole, for routing and schemas).
pub const MAX_TURN_TEXT_BYTES: usize = 32 * 1024 * 1024;

#[derive(Debug)]
pub(crate) struct Tool {
    pub(crate) title: String,
    pub(crate) kind: String,
    started: Instant,
    done: bool,
    /// `agent.tool.started` went out (a call announced before its input
    /// is known waits for it).
    pub(crate) announced: bool,
}

/// One prompt's worth of updates.
#[derive(Debug)]
pub(crate) struct Turn {
    pub(crate) number: u32,
    /// The whole reply so far (every agent message chunk).
    pub(crate) text: String,
    reasoning: String,
    unsent: String,
    sent_at: Instant,
    started: Instant,
    pub(crate) tools: HashMap<String, Tool>,
    pub(crate) calls: Vec<Call>,
    tool_seq: u32,
    /// The session's cost so far, as the agent last reported it (ACP's
    /// `usage_update` carries a running total).
    pub(crate) session_cost: Option<f64>,
    /// The `messageId` of the last message chunk, when the agent sends one.
    pub(crate) message_id: Option<String>,
    /// A tool call was reported since the last message chunk.
    pub(crate) tool_since_text: bool,
}

impl Turn {
    pub(crate) fn new(number: u32, session_cost: Option<f64>) -> Turn {
        let now = Instant::now();
        Turn {
            number,
            text: String::new(),
            reasoning: String::new(),
            unsent: String::new(),
            sent_at: now,
            started: now,
            tools: HashMap::new(),
            calls: Vec::new(),
            tool_seq: 0,
            session_cost,
            message_id: None,
            tool_since_text: false,
        }
    }

    /// Reply text: kept whole, reported in batches. `Err` when the reply
    /// passes [`MAX_TURN_TEXT_BYTES`].
    pub(crate) fn message(
        &mut self,
        text: &str,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<(), String> {
        if self.text.len() + text.len() > MAX_TURN_TEXT_BYTES {
            return Err(too_much("reply"));
        }
        self.text.push_str(text);
        self.unsent.push_str(text);
        if self.unsent.len() >= TEXT_BYTES || self.sent_at.elapsed() >= TEXT_EVERY {
            self.flush(on_event);
        }
        Ok(())
    }

    /// Reasoning the agent showed, for the transcript.
    pub(crate) fn thought(&mut self, text: &str) -> Result<(), String> {
        if self.reasoning.len() + text.len() > MAX_TURN_TEXT_BYTES {
            return Err(too_much("thoughts"));
        }
        self.reasoning.push_str(text);
        Ok(())
    }

    /// A tool call began (reported once per id). `Err` past
    /// [`MAX_TOOL_CALLS`].
    pub(crate) fn tool_started(
        &mut self,
        id: &str,
        title: String,
        kind: String,
        arguments: Value,
        ready: bool,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<(), String> {
        self.flush(on_event);
        self.tool_since_text = true;
        if self.tools.contains_key(id) {
            return Ok(());
        }
        if self.tools.len() >= MAX_TOOL_CALLS {
            return Err(format!(
                "it reported more than {MAX_TOOL_CALLS} tool calls in one prompt"
            ));
        }
        self.calls.push(Call {
            id: id.to_string(),
            name: kind.clone(),
            arguments,
        });
        self.tools.insert(
            id.to_string(),
            Tool {
                title,
                kind,
                started: Instant::now(),
                done: false,
                announced: false,
            },
        );
        if ready {
            self.announce(id, on_event);
        }
        Ok(())
    }

    /// `agent.tool.started` for call `id`, with what is known of it now,
    /// once.
    pub(crate) fn announce(&mut self, id: &str, on_event: &mut (dyn FnMut(AgentEvent) + Send)) {
        let Some(tool) = self.tools.get_mut(id) else {
            return;
        };
        if tool.announced {
            return;
        }
        tool.announced = true;
        let arguments = self
            .calls
            .iter()
            .find(|c| c.id == id)
            .map_or(Value::Null, |c| c.arguments.clone());
        on_event(AgentEvent::ToolStarted {
            call_id: id.to_string(),
            tool: tool.kind.clone(),
            summary: tool.title.clone(),
            arguments,
        });
    }

    /// A started tool call ended: its transcript line (the full output in
    /// `tools/` when long) and `agent.tool.completed`, once per call.
    pub(crate) fn tool_finished(
        &mut self,
        id: &str,
        is_error: bool,
        output: &str,
        recorder: &mut Option<Recorder>,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) {
        self.flush(on_event);
        // Every completed call has its start, even one never described.
        self.announce(id, on_event);
        let Some(tool) = self.tools.get_mut(id) else {
            return;
        };
        if tool.done {
            return;
        }
        tool.done = true;
        let duration = tool.started.elapsed();
        self.tool_seq += 1;
        let output_file = if output.len() > SUMMARY_BYTES {
            recorder
                .as_mut()
                .and_then(|r| r.tool_output(self.tool_seq, &tool.kind, output))
        } else {
            None
        };
        if let Some(recorder) = recorder.as_mut() {
            recorder.entry(&Entry::Tool {
                call_id: id.to_string(),
                tool: tool.kind.clone(),
                is_error,
                duration_ms: millis(duration),
                summary: crate::util::text::truncate(output, SUMMARY_BYTES),
                output_bytes: output.len() as u64,
                output_file,
                touched: Vec::new(),
            });
        }
        on_event(AgentEvent::ToolCompleted {
            call_id: id.to_string(),
            tool: tool.kind.clone(),
            duration,
            is_error,
            preview: crate::util::text::truncate(output, PREVIEW_BYTES),
            output_bytes: output.len() as u64,
            touched: Vec::new(),
        });
    }

    /// Reports the text gathered since the last report.
    pub(crate) fn flush(&mut self, on_event: &mut (dyn FnMut(AgentEvent) + Send)) {
        if !self.unsent.is_empty() {
            on_event(AgentEvent::Text {
                turn: self.number,
                text: std::mem::take(&mut self.unsent),
            });
        }
        self.sent_at = Instant::now();
    }

    /// The turn's end: the last text, and its transcript line.
    pub(crate) fn finish(
        &mut self,
        usage: Usage,
        cost: Option<f64>,
        recorder: &mut Option<Recorder>,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) {
        self.flush(on_event);
        if let Some(recorder) = recorder.as_mut() {
            recorder.entry(&Entry::Assistant {
                turn: self.number,
                text: self.text.clone(),
                reasoning: self.reasoning.clone(),
                tool_calls: std::mem::take(&mut self.calls),
                usage,
                cost,
                duration_ms: millis(self.started.elapsed()),
            });
        }
    }

    /// When the text gathered but not yet reported is due (an agent that
    /// says something and then works silently is still heard).
    pub(crate) fn text_due(&self) -> Option<Instant> {
        (!self.unsent.is_empty()).then(|| self.sent_at + TEXT_EVERY)
    }

    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    pub(crate) fn tool_calls(&self) -> u32 {
        u32::try_from(self.tools.len()).unwrap_or(u32::MAX)
    }
}

fn too_much(what: &str) -> String {
    format!(
        "its {what} in one prompt passed {} MiB",
        MAX_TURN_TEXT_BYTES / (1024 * 1024)
    )
}
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
