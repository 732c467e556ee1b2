//! Gemini CLI's `-o stream-json` (0.11 and later): `init`, `message`
//! (the user's prompt echoed once, then assistant deltas), `tool_use`,
//! `tool_result`, `error` (a warning, not fatal) and a final `result` whose
//! `status` says how the run ended. Tokens only; no cost.

use serde_json::Value;

use super::{
    CliEvent, MAX_NOTE_BYTES, MAX_OUTPUT_BYTES, MAX_REPLY_BYTES, Summary, clip, str_at, summarise,
    u64_at,
};
use crate::llm::Usage;

#[derive(Debug, Default)]
pub(super) struct State {
    /// Every assistant chunk.
    all_text: String,
    /// Assistant text since the last tool call: the reply, as a final
    /// message is for the other two.
    last_text: String,
}

impl State {
    pub(super) fn record(
        &mut self,
        record: &Value,
        summary: &mut Summary,
        out: &mut Vec<CliEvent>,
    ) {
        match str_at(record, "type") {
            "init" => {
                let id = str_at(record, "session_id").to_owned();
                let model = record
                    .get("model")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                summary.session_id = Some(id.clone());
                summary.model.clone_from(&model);
                out.push(CliEvent::Started {
                    session_id: id,
                    model,
                });
            }
            "message" if str_at(record, "role") == "assistant" => {
                let text = str_at(record, "content");
                if !text.is_empty() {
                    for kept in [&mut self.all_text, &mut self.last_text] {
                        if kept.len() < MAX_REPLY_BYTES {
                            kept.push_str(text);
                        }
                    }
                    out.push(CliEvent::Text(text.to_owned()));
                }
            }
            "tool_use" => {
                self.last_text.clear();
                let tool = str_at(record, "tool_name").to_owned();
                let arguments = record.get("parameters").cloned().unwrap_or(Value::Null);
                out.push(CliEvent::ToolStarted {
                    call_id: str_at(record, "tool_id").to_owned(),
                    summary: summarise(&tool, &arguments),
                    tool,
                    arguments,
                });
            }
            "tool_result" => {
                let is_error = str_at(record, "status") != "success";
                let output = match record.get("output").and_then(Value::as_str) {
                    Some(output) => output.to_owned(),
                    None => record
                        .get("error")
                        .map(|e| str_at(e, "message").to_owned())
                        .unwrap_or_default(),
                };
                out.push(CliEvent::ToolCompleted {
                    call_id: str_at(record, "tool_id").to_owned(),
                    is_error,
                    output: clip(&output, MAX_OUTPUT_BYTES),
                });
            }
            "error" => {
                let severity = str_at(record, "severity");
                let message = clip(str_at(record, "message"), MAX_NOTE_BYTES);
                let message = if severity.is_empty() {
                    message
                } else {
                    format!("{severity}: {message}")
                };
                summary.last_error = Some(message.clone());
                out.push(CliEvent::Error(message));
            }
            "result" => {
                summary.completed = true;
                summary.is_error = str_at(record, "status") != "success";
                if let Some(stats) = record.get("stats").filter(|s| s.is_object()) {
                    // `input_tokens` includes the cached ones; `input` is
                    // the uncached part.
                    summary.usage = Usage {
                        input: u64_at(stats, "input_tokens"),
                        output: u64_at(stats, "output_tokens"),
                        reasoning: 0,
                        cache_read: u64_at(stats, "cached"),
                        cache_write: 0,
                    };
                }
                out.push(CliEvent::Usage {
                    usage: summary.usage,
                    cost_usd: None,
                });
                if summary.is_error {
                    let message = record
                        .get("error")
                        .map(|e| {
                            let kind = str_at(e, "type");
                            let message = str_at(e, "message");
                            if kind.is_empty() {
                                message.to_owned()
                            } else {
                                format!("{message} ({kind})")
                            }
                        })
                        .filter(|m| !m.trim().is_empty())
                        .or_else(|| summary.last_error.clone())
                        .unwrap_or_else(|| "gemini reported an error".to_owned());
                    summary.error = Some(clip(&message, MAX_NOTE_BYTES));
                } else {
                    summary.reply = Some(self.fallback_reply());
                }
            }
            // The echoed user message and newer types.
            _ => {}
        }
    }

    pub(super) fn fallback_reply(&self) -> String {
        if self.last_text.trim().is_empty() {
            self.all_text.clone()
        } else {
            self.last_text.clone()
        }
    }
}
