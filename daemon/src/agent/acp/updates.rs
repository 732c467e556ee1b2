//! What an ACP agent reports while it works (`session/update`), applied
//! to the prompt's [`Turn`]: the same `agent.*` events and
//! `transcript.jsonl` as Weft's own agent. Unknown kinds are ignored, as
//! the protocol asks.

use std::path::Path;

use serde_json::Value;

use crate::agent::event::AgentEvent;
use crate::agent::record::Recorder;
use crate::agent::turn::Turn;

impl Turn {
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
                    described(update),
                    on_event,
                )?;
                self.maybe_complete(&id, update, root, recorder, on_event);
            }
            "tool_call_update" => {
                self.flush(on_event);
                self.tool_since_text = true;
                let id = text_of(update, "toolCallId");
                let mut retitled = false;
                if let Some(tool) = self.tools.get_mut(&id) {
                    if let Some(title) = update.get("title").and_then(Value::as_str) {
                        retitled = title != tool.title;
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
                if retitled || under_way(update) {
                    self.announce(&id, on_event);
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
}

fn text_of(update: &Value, key: &str) -> String {
    update
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Whether a new `tool_call` says what the call does: it has input, or it
/// is under way. Claude Code's adapter first announces a call as
/// "Preparing file…", pending, with empty input, and describes it in a
/// later update (a new title, or the call under way): `agent.tool.started`
/// waits for that.
fn described(update: &Value) -> bool {
    let input = match update.get("rawInput") {
        None | Some(Value::Null) => false,
        Some(Value::Object(o)) => !o.is_empty(),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    };
    input || under_way(update)
}

fn under_way(update: &Value) -> bool {
    matches!(
        update.get("status").and_then(Value::as_str),
        Some("in_progress" | "completed" | "failed")
    )
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
        let events = apply_all(
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
        let started: Vec<String> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ToolStarted { summary, .. } => Some(summary.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(started, ["Write a.txt"], "announced once described");
        assert_eq!(turn.calls.len(), 1);
        assert_eq!(turn.calls[0].name, "edit");
        assert_eq!(
            turn.calls[0].arguments,
            json!({"file_path": "/work/a.txt", "content": "x"})
        );
    }

    #[test]
    fn a_call_finished_without_being_described_is_still_started_before_it_completes() {
        let mut turn = Turn::new(1, None);
        let events = apply_all(
            &mut turn,
            &[
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "kind": "execute",
                       "title": "Run make", "status": "pending"}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                       "status": "completed"}),
            ],
        );
        let order: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ToolStarted { .. } => Some("started"),
                AgentEvent::ToolCompleted { .. } => Some("completed"),
                _ => None,
            })
            .collect();
        assert_eq!(order, ["started", "completed"]);
    }
}
