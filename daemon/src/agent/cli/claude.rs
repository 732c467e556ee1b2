//! Claude Code's `--output-format stream-json`: `system` (`init` first),
//! `assistant` (one Messages API message, often split over several lines
//! sharing `message.id`), `user` (tool results) and a final `result`.
//!
//! Failure is decided by `result.is_error` alone: API errors have been seen
//! with `subtype: "success"`, `is_error: true` and exit code 0.

use std::collections::HashMap;

use serde_json::Value;

use super::{
    CliEvent, MAX_NOTE_BYTES, MAX_OUTPUT_BYTES, Summary, clip, content_text, str_at, summarise,
    u64_at,
};
use crate::llm::Usage;

#[derive(Debug, Default)]
pub(super) struct State {
    /// The latest usage of each API message: a message split over several
    /// lines repeats (and updates) its usage on each.
    message_usage: HashMap<String, Usage>,
    /// Ids in arrival order, to bound the map.
    message_order: Vec<String>,
    /// Text of the last top-level assistant message, for a run that ended
    /// without its `result`.
    last_message_id: String,
    last_message_text: String,
}

/// Messages whose usage is remembered; far more than any run makes.
const MAX_MESSAGES: usize = 100_000;

impl State {
    pub(super) fn record(
        &mut self,
        record: &Value,
        summary: &mut Summary,
        out: &mut Vec<CliEvent>,
    ) {
        if summary.session_id.is_none()
            && let Some(id) = record.get("session_id").and_then(Value::as_str)
        {
            summary.session_id = Some(id.to_owned());
        }
        match str_at(record, "type") {
            "system" if str_at(record, "subtype") == "init" => {
                let model = record
                    .get("model")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                summary.model.clone_from(&model);
                out.push(CliEvent::Started {
                    session_id: str_at(record, "session_id").to_owned(),
                    model,
                });
            }
            "assistant" => self.assistant(record, summary, out),
            "user" => user(record, out),
            "result" => result(record, summary, out),
            // Other `system` subtypes, `stream_event`, `rate_limit_event`,
            // `conversation_reset` and whatever comes next.
            _ => {}
        }
    }

    fn assistant(&mut self, record: &Value, summary: &mut Summary, out: &mut Vec<CliEvent>) {
        let Some(message) = record.get("message") else {
            return;
        };
        // A subagent's (Task tool) messages: its tool calls are shown, its
        // text is not part of the reply.
        let top_level = record.get("parent_tool_use_id").is_none_or(Value::is_null);
        // An API failure arrives as a synthetic message with an `error`
        // code and the error's text as its content.
        if let Some(code) = record.get("error").and_then(Value::as_str) {
            let text = content_text(message.get("content"));
            let error = clip(&format!("{code}: {text}"), MAX_NOTE_BYTES);
            summary.last_error = Some(error.clone());
            out.push(CliEvent::Error(error));
            return;
        }
        let id = str_at(message, "id").to_owned();
        if top_level && id != self.last_message_id {
            self.last_message_id.clone_from(&id);
            self.last_message_text.clear();
        }
        if let Some(blocks) = message.get("content").and_then(Value::as_array) {
            for block in blocks {
                match str_at(block, "type") {
                    "text" => {
                        let text = str_at(block, "text");
                        if top_level && !text.is_empty() {
                            if self.last_message_text.len() < super::MAX_REPLY_BYTES {
                                self.last_message_text.push_str(text);
                            }
                            out.push(CliEvent::Text(text.to_owned()));
                        }
                    }
                    "thinking" => {
                        let text = str_at(block, "thinking");
                        if !text.is_empty() {
                            out.push(CliEvent::Thinking(text.to_owned()));
                        }
                    }
                    "tool_use" | "server_tool_use" => {
                        let tool = str_at(block, "name").to_owned();
                        let arguments = block.get("input").cloned().unwrap_or(Value::Null);
                        out.push(CliEvent::ToolStarted {
                            call_id: str_at(block, "id").to_owned(),
                            summary: summarise(&tool, &arguments),
                            tool,
                            arguments,
                        });
                    }
                    _ => {}
                }
            }
        }
        if let Some(usage) = message.get("usage").filter(|u| u.is_object()) {
            if !self.message_usage.contains_key(&id) {
                if self.message_order.len() >= MAX_MESSAGES {
                    return;
                }
                self.message_order.push(id.clone());
            }
            let usage = usage_of(usage);
            if self.message_usage.insert(id, usage) != Some(usage) {
                out.push(CliEvent::Usage {
                    usage: self.total(),
                    cost_usd: None,
                });
            }
        }
    }

    fn total(&self) -> Usage {
        self.message_usage
            .values()
            .fold(Usage::default(), |sum, u| sum + *u)
    }

    /// The reply and tokens of a run that ended without its `result`.
    pub(super) fn fallback_reply(&self, summary: &mut Summary) -> String {
        if !summary.completed {
            summary.usage = self.total();
        }
        self.last_message_text.clone()
    }
}

fn user(record: &Value, out: &mut Vec<CliEvent>) {
    let Some(blocks) = record
        .get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
    else {
        return;
    };
    for block in blocks {
        if str_at(block, "type") != "tool_result" {
            continue;
        }
        out.push(CliEvent::ToolCompleted {
            call_id: str_at(block, "tool_use_id").to_owned(),
            is_error: block
                .get("is_error")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            output: clip(&content_text(block.get("content")), MAX_OUTPUT_BYTES),
        });
    }
}

fn result(record: &Value, summary: &mut Summary, out: &mut Vec<CliEvent>) {
    summary.completed = true;
    summary.is_error = record
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let text = record.get("result").and_then(Value::as_str);
    if !summary.is_error {
        summary.reply = text.map(str::to_owned);
    }
    if let Some(turns) = record.get("num_turns").and_then(Value::as_u64) {
        summary.turns = Some(u32::try_from(turns).unwrap_or(u32::MAX));
    }
    summary.cost_usd = record
        .get("total_cost_usd")
        .and_then(Value::as_f64)
        .filter(|c| c.is_finite() && *c >= 0.0);
    if let Some(usage) = record.get("usage").filter(|u| u.is_object()) {
        summary.usage = usage_of(usage);
    }
    out.push(CliEvent::Usage {
        usage: summary.usage,
        cost_usd: summary.cost_usd,
    });
    if summary.is_error {
        summary.error = Some(error_of(record, text, summary.last_error.as_deref()));
    }
}

/// Why a `result` with `is_error` failed, in words: its `errors`, else its
/// text (API errors put the message there), else the synthetic message's,
/// with the subtype or terminal reason and the HTTP status when given.
fn error_of(record: &Value, text: Option<&str>, last_error: Option<&str>) -> String {
    let errors: Vec<&str> = record
        .get("errors")
        .and_then(Value::as_array)
        .map(|e| e.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut message = if !errors.is_empty() {
        errors.join("; ")
    } else if let Some(text) = text.filter(|t| !t.trim().is_empty()) {
        text.to_owned()
    } else if let Some(last) = last_error {
        last.to_owned()
    } else {
        "claude reported an error".to_owned()
    };
    let reason = match str_at(record, "subtype") {
        "success" | "" => str_at(record, "terminal_reason"),
        subtype => subtype,
    };
    let status = u64_at(record, "api_error_status");
    match (reason.is_empty(), status) {
        (true, 0) => {}
        (false, 0) => message.push_str(&format!(" ({reason})")),
        (true, status) => message.push_str(&format!(" (HTTP {status})")),
        (false, status) => message.push_str(&format!(" ({reason}, HTTP {status})")),
    }
    clip(&message, MAX_NOTE_BYTES)
}

/// Anthropic's split (`input_tokens` excludes the cache) into Weft's,
/// where `input` includes both cache reads and writes.
fn usage_of(usage: &Value) -> Usage {
    let cache_read = u64_at(usage, "cache_read_input_tokens");
    let cache_write = u64_at(usage, "cache_creation_input_tokens");
    Usage {
        input: u64_at(usage, "input_tokens")
            .saturating_add(cache_read)
            .saturating_add(cache_write),
        output: u64_at(usage, "output_tokens"),
        reasoning: 0,
        cache_read,
        cache_write,
    }
}
