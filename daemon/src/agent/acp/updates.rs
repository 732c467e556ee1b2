//! What an ACP agent reports while it works (`session/update`), turned into
//! Weft's agent events and transcript: the same `agent.*` events and
//! `transcript.jsonl` as Weft's own agent, so `weft logs` and the app show
//! both alike. Unknown kinds are ignored, as the protocol asks.
//!
//! [`Turn`]'s typed methods (text, thoughts, a tool call's start and end)
//! serve the headless CLI backend ([`crate::agent::cli`]) as well.

use std::collections::HashMap;
use std::path::Path;
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
struct Tool {
    title: String,
    kind: String,
    started: Instant,
    done: bool,
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
    tools: HashMap<String, Tool>,
    calls: Vec<Call>,
    tool_seq: u32,
    /// The session's cost so far, as the agent last reported it (ACP's
    /// `usage_update` carries a running total).
    pub(crate) session_cost: Option<f64>,
    /// The `messageId` of the last message chunk, when the agent sends one.
    message_id: Option<String>,
    /// A tool call was reported since the last message chunk.
    tool_since_text: bool,
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

    /// Applies one `session/update`'s `update` object. `Err` when the agent
    /// floods (more tool calls than any turn makes).
    pub(super) fn apply(
        &mut self,
        update: &Value,
        root: &Path,
        recorder: &mut Option<Recorder>,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<(), String> {
        let kind = update
            .get("sessionUpdate")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match kind {
            "agent_message_chunk" => {
                let mut text = self.message_break(update).to_string();
                text.push_str(&content_text(update.get("content")));
                self.message(&text, on_event)?;
            }
            "agent_thought_chunk" => {
                self.thought(&content_text(update.get("content")))?;
            }
            "tool_call" => {
                let id = text_of(update, "toolCallId");
                self.tool_started(
                    &id,
                    text_of(update, "title"),
                    kind_of(update),
                    update.get("rawInput").cloned().unwrap_or(Value::Null),
                    on_event,
                )?;
                self.maybe_complete(&id, update, root, recorder, on_event);
            }
            "tool_call_update" => {
                self.flush(on_event);
                self.tool_since_text = true;
                let id = text_of(update, "toolCallId");
                if let Some(tool) = self.tools.get_mut(&id) {
                    if let Some(title) = update.get("title").and_then(Value::as_str) {
                        title.clone_into(&mut tool.title);
                    }
                    if update.get("kind").is_some() {
                        tool.kind = kind_of(update);
                    }
                    // Claude Code's adapter announces a call with empty
                    // input and sends the input in later updates: the
                    // transcript keeps the last.
                    if let Some(call) = self.calls.iter_mut().find(|c| c.id == id) {
                        call.name.clone_from(&tool.kind);
                        if let Some(input) = update.get("rawInput") {
                            call.arguments = input.clone();
                        }
                    }
                }
                self.maybe_complete(&id, update, root, recorder, on_event);
            }
            "usage_update" => {
                if let Some(cost) = update
                    .get("cost")
                    .and_then(|c| c.get("amount"))
                    .and_then(Value::as_f64)
                {
                    self.session_cost = Some(cost);
                }
            }
            // plan, available_commands_update, current_mode_update,
            // user_message_chunk, session_info_update and kinds newer than
            // this client: nothing to record.
            _ => {}
        }
        Ok(())
    }

    /// What goes before a message chunk: a paragraph break when it starts
    /// another message than the text so far (a tool call came between, or
    /// its `messageId` differs), so that separate messages of one turn do
    /// not run together in the reply.
    fn message_break(&mut self, update: &Value) -> &'static str {
        let id = update.get("messageId").and_then(Value::as_str);
        let other_message = match (&self.message_id, id) {
            (Some(last), Some(id)) => last != id,
            _ => false,
        };
        let separate = !self.text.is_empty() && (self.tool_since_text || other_message);
        self.tool_since_text = false;
        if let Some(id) = id {
            self.message_id = Some(id.to_string());
        }
        if !separate || self.text.ends_with("\n\n") {
            ""
        } else if self.text.ends_with('\n') {
            "\n"
        } else {
            "\n\n"
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
            arguments: arguments.clone(),
        });
        on_event(AgentEvent::ToolStarted {
            call_id: id.to_string(),
            tool: kind.clone(),
            summary: title.clone(),
            arguments,
        });
        self.tools.insert(
            id.to_string(),
            Tool {
                title,
                kind,
                started: Instant::now(),
                done: false,
            },
        );
        Ok(())
    }

    /// A tool call whose status became `completed` or `failed` is reported
    /// (once).
    fn maybe_complete(
        &mut self,
        id: &str,
        update: &Value,
        root: &Path,
        recorder: &mut Option<Recorder>,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) {
        let status = update.get("status").and_then(Value::as_str);
        if !matches!(status, Some("completed" | "failed")) {
            return;
        }
        let output = tool_output(update, root);
        self.tool_finished(id, status == Some("failed"), &output, recorder, on_event);
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

fn text_of(update: &Value, key: &str) -> String {
    update
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The tool's kind (`read`, `edit`, `execute`, …), `other` when unknown.
fn kind_of(update: &Value) -> String {
    update
        .get("kind")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
        .unwrap_or("other")
        .to_string()
}

/// A content block's text: text blocks as they are, others named.
pub(super) fn content_text(block: Option<&Value>) -> String {
    let Some(block) = block else {
        return String::new();
    };
    match block.get("type").and_then(Value::as_str) {
        Some("text") => text_of(block, "text"),
        Some("resource_link") => format!("[{}]", text_of(block, "uri")),
        Some("resource") => block
            .get("resource")
            .and_then(|r| r.get("text"))
            .and_then(Value::as_str)
            .map_or_else(|| "[resource]".to_string(), str::to_string),
        Some(other) => format!("[{other}]"),
        None => String::new(),
    }
}

/// A tool call's output as text: its content blocks, diffs named by path
/// (relative to `root` when under it), terminals by id.
fn tool_output(update: &Value, root: &Path) -> String {
    let Some(items) = update.get("content").and_then(Value::as_array) else {
        return update
            .get("rawOutput")
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .unwrap_or_default();
    };
    let mut out = String::new();
    for item in items {
        let piece = match item.get("type").and_then(Value::as_str) {
            Some("content") => content_text(item.get("content")),
            Some("diff") => {
                let path = text_of(item, "path");
                let shown = Path::new(&path)
                    .strip_prefix(root)
                    .map_or(path.clone(), |p| p.display().to_string());
                format!("edited {shown}")
            }
            Some("terminal") => format!("[terminal {}]", text_of(item, "terminalId")),
            _ => continue,
        };
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&piece);
    }
    out
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn apply_all(turn: &mut Turn, updates: &[Value]) -> Vec<AgentEvent> {
        let mut events = Vec::new();
        let mut recorder = None;
        for update in updates {
            let applied = turn.apply(update, Path::new("/work"), &mut recorder, &mut |e| {
                events.push(e);
            });
            assert!(applied.is_ok(), "{applied:?}");
        }
        turn.flush(&mut |e| events.push(e));
        events
    }

    fn chunk(text: &str, message_id: Option<&str>) -> Value {
        let mut update = json!({
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": text},
        });
        if let Some(id) = message_id {
            update["messageId"] = json!(id);
        }
        update
    }

    #[test]
    fn chunks_of_one_message_join_as_they_come() {
        let mut turn = Turn::new(1, None);
        apply_all(
            &mut turn,
            &[
                chunk("one ", None),
                chunk("two", None),
                chunk(" three", Some("m1")),
                chunk(" four", Some("m1")),
            ],
        );
        assert_eq!(turn.text, "one two three four");
    }

    #[test]
    fn messages_parted_by_a_tool_call_or_a_new_message_id_are_separate_paragraphs() {
        // As Claude Code's adapter sends them: a notice, a tool call, then
        // the reply with its own message id.
        let mut turn = Turn::new(1, None);
        let events = apply_all(
            &mut turn,
            &[
                chunk("A notice.", None),
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "kind": "edit",
                       "title": "Write a.txt", "status": "pending"}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                       "status": "completed"}),
                chunk("I ", Some("msg_2")),
                chunk("wrote a.txt.\n", Some("msg_2")),
                chunk("Done.", Some("msg_3")),
            ],
        );
        assert_eq!(turn.text, "A notice.\n\nI wrote a.txt.\n\nDone.");
        let reported: String = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(reported, turn.text, "the events carry the same breaks");
    }

    #[test]
    fn a_tool_call_s_input_sent_in_a_later_update_is_the_one_recorded() {
        // Claude Code's adapter announces a call with `rawInput: {}` and
        // sends the input as it streams in.
        let mut turn = Turn::new(1, None);
        apply_all(
            &mut turn,
            &[
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "kind": "edit",
                       "title": "Preparing file…", "rawInput": {}, "status": "pending"}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                       "rawInput": {"content": "x"}}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                       "title": "Write a.txt",
                       "rawInput": {"file_path": "/work/a.txt", "content": "x"}}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                       "status": "completed"}),
            ],
        );
        assert_eq!(turn.calls.len(), 1);
        assert_eq!(turn.calls[0].name, "edit");
        assert_eq!(
            turn.calls[0].arguments,
            json!({"file_path": "/work/a.txt", "content": "x"})
        );
    }
}
