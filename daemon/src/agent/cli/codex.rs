//! `codex exec --json` (codex 0.44 and later): `thread.started`,
//! `turn.started`, `item.started` / `item.updated` / `item.completed` with a
//! typed item, and a final `turn.completed` (usage) or `turn.failed`.
//!
//! A top-level `error` is not fatal (retried reconnects are reported that
//! way too); only `turn.failed`, or no `turn.*` at all, fails the run.
//! `agent_message` and `reasoning` items arrive only as `item.completed`;
//! the others start and complete under the same item id.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::{
    CliEvent, MAX_NOTE_BYTES, MAX_OUTPUT_BYTES, MAX_REPLY_BYTES, Summary, clip, content_text,
    str_at, summarise, u64_at,
};
use crate::llm::Usage;

/// Items whose start was reported; far more than any run makes.
const MAX_ITEMS: usize = 100_000;

#[derive(Debug, Default)]
pub(super) struct State {
    /// Items reported as `ToolStarted`, so a completion without a start
    /// still gets one and a repeated start does not.
    started: HashSet<String>,
    /// The last `agent_message`: codex's reply.
    last_message: Option<String>,
}

impl State {
    pub(super) fn record(
        &mut self,
        record: &Value,
        summary: &mut Summary,
        out: &mut Vec<CliEvent>,
    ) {
        match str_at(record, "type") {
            "thread.started" => {
                let id = str_at(record, "thread_id").to_owned();
                summary.session_id = Some(id.clone());
                out.push(CliEvent::Started {
                    session_id: id,
                    model: None,
                });
            }
            "turn.started" => {
                summary.turns = Some(summary.turns.unwrap_or(0).saturating_add(1));
            }
            "item.started" => {
                if let Some(item) = record.get("item") {
                    self.start(item, out);
                }
            }
            "item.completed" => {
                if let Some(item) = record.get("item") {
                    self.complete(item, summary, out);
                }
            }
            "turn.completed" => {
                summary.completed = true;
                summary.is_error = false;
                summary.error = None;
                summary.reply.clone_from(&self.last_message);
                if let Some(usage) = record.get("usage") {
                    // The thread's total so far, not this turn's.
                    summary.usage = Usage {
                        input: u64_at(usage, "input_tokens"),
                        output: u64_at(usage, "output_tokens"),
                        reasoning: u64_at(usage, "reasoning_output_tokens"),
                        cache_read: u64_at(usage, "cached_input_tokens"),
                        cache_write: 0,
                    };
                }
                out.push(CliEvent::Usage {
                    usage: summary.usage,
                    cost_usd: None,
                });
            }
            "turn.failed" => {
                summary.completed = true;
                summary.is_error = true;
                let message = record
                    .get("error")
                    .map(|e| str_at(e, "message"))
                    .filter(|m| !m.is_empty())
                    .map(|m| clip(m, MAX_NOTE_BYTES))
                    .or_else(|| summary.last_error.clone())
                    .unwrap_or_else(|| "codex reported a failed turn".to_owned());
                summary.error = Some(message);
            }
            "error" => {
                let message = clip(str_at(record, "message"), MAX_NOTE_BYTES);
                summary.last_error = Some(message.clone());
                out.push(CliEvent::Error(message));
            }
            // `item.updated` (todo lists, patches in progress),
            // `item.plan.delta`, `request_user_input` and newer types.
            _ => {}
        }
    }

    fn start(&mut self, item: &Value, out: &mut Vec<CliEvent>) {
        let id = str_at(item, "id").to_owned();
        if self.started.contains(&id) || self.started.len() >= MAX_ITEMS {
            return;
        }
        let Some((tool, arguments)) = tool_of(item) else {
            return;
        };
        self.started.insert(id.clone());
        out.push(CliEvent::ToolStarted {
            call_id: id,
            summary: summarise(&tool, &arguments),
            tool,
            arguments,
        });
    }

    fn complete(&mut self, item: &Value, summary: &mut Summary, out: &mut Vec<CliEvent>) {
        match str_at(item, "type") {
            "agent_message" => {
                let text = str_at(item, "text");
                self.last_message = Some(clip(text, MAX_REPLY_BYTES));
                out.push(CliEvent::Text(text.to_owned()));
                return;
            }
            "reasoning" => {
                let text = str_at(item, "text");
                if !text.is_empty() {
                    out.push(CliEvent::Thinking(text.to_owned()));
                }
                return;
            }
            "error" => {
                let message = clip(str_at(item, "message"), MAX_NOTE_BYTES);
                summary.last_error = Some(message.clone());
                out.push(CliEvent::Error(message));
                return;
            }
            _ => {}
        }
        if tool_of(item).is_none() {
            return;
        }
        self.start(item, out);
        let status = str_at(item, "status");
        let (is_error, output) = match str_at(item, "type") {
            "command_execution" => (
                status != "completed"
                    || item
                        .get("exit_code")
                        .and_then(Value::as_i64)
                        .is_some_and(|code| code != 0),
                str_at(item, "aggregated_output").to_owned(),
            ),
            "mcp_tool_call" => match item.get("error").filter(|e| !e.is_null()) {
                Some(error) => (true, str_at(error, "message").to_owned()),
                None => (
                    status == "failed",
                    content_text(item.get("result").and_then(|r| r.get("content"))),
                ),
            },
            "file_change" => {
                let paths = changed_paths(item);
                let output = paths.join("\n");
                if status == "completed" && !paths.is_empty() {
                    out.push(CliEvent::FilesChanged(paths));
                }
                (status == "failed", output)
            }
            _ => (status == "failed", String::new()),
        };
        out.push(CliEvent::ToolCompleted {
            call_id: str_at(item, "id").to_owned(),
            is_error,
            output: clip(&output, MAX_OUTPUT_BYTES),
        });
    }

    pub(super) fn fallback_reply(&self) -> String {
        self.last_message.clone().unwrap_or_default()
    }
}

/// The tool name and arguments of an item that is a tool call; `None` for
/// messages, reasoning, todo lists, plans and unknown types.
fn tool_of(item: &Value) -> Option<(String, Value)> {
    let kind = str_at(item, "type");
    let found = match kind {
        "command_execution" => (
            "command_execution".to_owned(),
            json!({ "command": item.get("command").cloned().unwrap_or(Value::Null) }),
        ),
        "file_change" => (
            "file_change".to_owned(),
            json!({
                "changes": item.get("changes").cloned().unwrap_or(Value::Null),
                // For the one-line summary.
                "path": changed_paths(item).join(" "),
            }),
        ),
        "mcp_tool_call" => (
            format!("{}.{}", str_at(item, "server"), str_at(item, "tool")),
            item.get("arguments").cloned().unwrap_or(Value::Null),
        ),
        "web_search" => (
            "web_search".to_owned(),
            json!({ "query": item.get("query").cloned().unwrap_or(Value::Null) }),
        ),
        "collab_tool_call" => (
            format!("collab.{}", str_at(item, "tool")),
            json!({ "prompt": item.get("prompt").cloned().unwrap_or(Value::Null) }),
        ),
        _ => return None,
    };
    Some(found)
}

fn changed_paths(item: &Value) -> Vec<String> {
    item.get("changes")
        .and_then(Value::as_array)
        .map(|changes| {
            changes
                .iter()
                .filter_map(|c| c.get("path").and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}
