//! One scripted session written as each CLI's headless JSON stream:
//! claude `--output-format stream-json --verbose`, `codex exec --json`,
//! gemini `-o stream-json`. Field names and record order follow what the
//! real programs print; values are made up.

use std::io::Write;

use serde_json::{Value, json};

use crate::args::Flavor;

/// Token counts in Weft's terms: `input` includes `cache_read` and
/// `cache_write`, `output` includes `reasoning`.
#[derive(Debug, Clone, Copy)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub reasoning: u64,
}

/// How a scripted failure looks.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    /// claude only: an API error with this HTTP status, reported the buggy
    /// way (`subtype: "success"`, `is_error: true`, exit 0).
    pub api_status: Option<u64>,
}

pub struct Stream<W: Write> {
    flavor: Flavor,
    out: W,
    session_id: String,
    model: String,
    /// claude: the API message the next blocks belong to.
    message: u32,
    /// Tool calls and items so far, for ids.
    seq: u32,
    /// Model turns: one, plus one after each tool result.
    turns: u32,
    /// Assistant text since the last tool call (claude's `result`).
    last_text: String,
    /// Records written, for unique claude `uuid`s.
    records: u32,
}

impl<W: Write> Stream<W> {
    pub fn new(flavor: Flavor, out: W, session_id: String, model: String) -> Stream<W> {
        Stream {
            flavor,
            out,
            session_id,
            model,
            message: 1,
            seq: 0,
            turns: 1,
            last_text: String::new(),
            records: 0,
        }
    }

    /// One record, one line, flushed so a reader sees it at once.
    pub fn line(&mut self, record: &Value) {
        self.records += 1;
        let _ = writeln!(self.out, "{record}");
        let _ = self.out.flush();
    }

    /// Raw text (garbage) as one line.
    pub fn raw(&mut self, text: &str) {
        let _ = writeln!(self.out, "{text}");
        let _ = self.out.flush();
    }

    fn now(&self) -> String {
        // A fixed, well-formed timestamp: nothing reads it as a clock.
        "2026-01-01T00:00:00.000Z".to_owned()
    }

    pub fn start(&mut self, prompt: &str, cwd: &str) {
        match self.flavor {
            Flavor::Claude => self.line(&json!({
                "type": "system", "subtype": "init", "cwd": cwd,
                "session_id": self.session_id,
                "tools": ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write"],
                "mcp_servers": [], "model": self.model,
                "permissionMode": "bypassPermissions", "slash_commands": [],
                "apiKeySource": "ANTHROPIC_API_KEY", "claude_code_version": "2.1.240",
                "output_style": "default", "agents": [], "skills": [], "plugins": [],
                "uuid": "00000000-0000-4000-8000-000000000000"
            })),
            Flavor::Codex => {
                self.line(&json!({"type": "thread.started", "thread_id": self.session_id}));
                self.line(&json!({"type": "turn.started"}));
            }
            Flavor::Gemini => {
                let now = self.now();
                self.line(&json!({"type": "init", "timestamp": now,
                    "session_id": self.session_id, "model": self.model}));
                self.line(&json!({"type": "message", "timestamp": now,
                    "role": "user", "content": prompt}));
            }
        }
    }

    fn claude_assistant(&mut self, block: Value, stop_reason: Value) {
        let record = json!({
            "type": "assistant",
            "message": {
                "id": format!("msg_{:04}", self.message), "type": "message", "role": "assistant",
                "model": self.model, "content": [block], "stop_reason": stop_reason,
                "stop_sequence": null,
                "usage": {"input_tokens": 3, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0, "output_tokens": 10}
            },
            "parent_tool_use_id": null, "session_id": self.session_id,
            "uuid": format!("u-{}", self.records)
        });
        self.line(&record);
    }

    pub fn say(&mut self, text: &str) {
        self.last_text.push_str(text);
        match self.flavor {
            Flavor::Claude => {
                self.claude_assistant(json!({"type": "text", "text": text}), Value::Null);
            }
            Flavor::Codex => {
                let id = self.next_item();
                self.line(&json!({"type": "item.completed",
                    "item": {"id": id, "type": "agent_message", "text": text}}));
            }
            Flavor::Gemini => {
                let now = self.now();
                self.line(&json!({"type": "message", "timestamp": now,
                    "role": "assistant", "content": text, "delta": true}));
            }
        }
    }

    /// Gemini's stream has no thought records, so nothing is written there.
    pub fn think(&mut self, text: &str) {
        match self.flavor {
            Flavor::Claude => self.claude_assistant(
                json!({"type": "thinking", "thinking": text, "signature": "c2lnbmF0dXJl"}),
                Value::Null,
            ),
            Flavor::Codex => {
                let id = self.next_item();
                self.line(&json!({"type": "item.completed",
                    "item": {"id": id, "type": "reasoning", "text": text}}));
            }
            Flavor::Gemini => {}
        }
    }

    fn next_item(&mut self) -> String {
        let id = format!("item_{}", self.seq);
        self.seq += 1;
        id
    }

    /// A tool call and its result. Codex runs shell commands itself
    /// (`command_execution`); any other tool is reported as an MCP call.
    pub fn tool(&mut self, name: &str, input: &Value, output: &str, is_error: bool) {
        self.last_text.clear();
        match self.flavor {
            Flavor::Claude => {
                let id = format!("toolu_{:04}", self.seq);
                self.seq += 1;
                self.claude_assistant(
                    json!({"type": "tool_use", "id": id, "name": name, "input": input}),
                    json!("tool_use"),
                );
                self.line(&json!({
                    "type": "user",
                    "message": {"role": "user", "content": [
                        {"tool_use_id": id, "type": "tool_result", "content": output,
                         "is_error": is_error}]},
                    "parent_tool_use_id": null, "session_id": self.session_id,
                    "uuid": format!("r-{id}"),
                    "tool_use_result": {"stdout": output, "stderr": "", "interrupted": false,
                                        "isImage": false}
                }));
                self.message += 1;
            }
            Flavor::Codex => {
                let id = self.next_item();
                if let Some(command) = input.get("command").and_then(Value::as_str) {
                    let command = format!("bash -lc {command}");
                    self.line(&json!({"type": "item.started", "item": {"id": id,
                        "type": "command_execution", "command": command,
                        "aggregated_output": "", "exit_code": null, "status": "in_progress"}}));
                    self.line(&json!({"type": "item.completed", "item": {"id": id,
                        "type": "command_execution", "command": command,
                        "aggregated_output": output, "exit_code": i32::from(is_error),
                        "status": if is_error { "failed" } else { "completed" }}}));
                } else {
                    let started = json!({"type": "item.started", "item": {"id": id,
                        "type": "mcp_tool_call", "server": "fake", "tool": name,
                        "arguments": input, "result": null, "error": null,
                        "status": "in_progress"}});
                    self.line(&started);
                    let (result, error) = if is_error {
                        (Value::Null, json!({"message": output}))
                    } else {
                        (
                            json!({"content": [{"type": "text", "text": output}],
                                   "structured_content": null}),
                            Value::Null,
                        )
                    };
                    self.line(&json!({"type": "item.completed", "item": {"id": id,
                        "type": "mcp_tool_call", "server": "fake", "tool": name,
                        "arguments": input, "result": result, "error": error,
                        "status": if is_error { "failed" } else { "completed" }}}));
                }
            }
            Flavor::Gemini => {
                let id = format!("{name}-{}", self.seq);
                self.seq += 1;
                let now = self.now();
                self.line(
                    &json!({"type": "tool_use", "timestamp": now, "tool_name": name,
                    "tool_id": id, "parameters": input}),
                );
                if is_error {
                    self.line(
                        &json!({"type": "tool_result", "timestamp": now, "tool_id": id,
                        "status": "error", "output": output,
                        "error": {"type": "execution_failed", "message": output}}),
                    );
                } else {
                    self.line(
                        &json!({"type": "tool_result", "timestamp": now, "tool_id": id,
                        "status": "success", "output": output}),
                    );
                }
            }
        }
        self.turns += 1;
    }

    /// A file the agent wrote (already on disk), at its absolute path.
    pub fn wrote(&mut self, path: &str, content: &str, existed: bool) {
        match self.flavor {
            Flavor::Claude => self.tool(
                "Write",
                &json!({"file_path": path, "content": content}),
                &format!("File created successfully at: {path}"),
                false,
            ),
            Flavor::Codex => {
                self.last_text.clear();
                let id = self.next_item();
                let changes =
                    json!([{"path": path, "kind": if existed { "update" } else { "add" }}]);
                self.line(&json!({"type": "item.started", "item": {"id": id,
                    "type": "file_change", "changes": changes, "status": "in_progress"}}));
                self.line(&json!({"type": "item.completed", "item": {"id": id,
                    "type": "file_change", "changes": changes, "status": "completed"}}));
                self.turns += 1;
            }
            Flavor::Gemini => {
                // An edit's result carries no output in stream-json.
                self.last_text.clear();
                let id = format!("write_file-{}", self.seq);
                self.seq += 1;
                let now = self.now();
                self.line(&json!({"type": "tool_use", "timestamp": now,
                    "tool_name": "write_file", "tool_id": id,
                    "parameters": {"file_path": path, "content": content}}));
                self.line(
                    &json!({"type": "tool_result", "timestamp": now, "tool_id": id,
                    "status": "success"}),
                );
                self.turns += 1;
            }
        }
    }

    /// A non-fatal error record. Claude has none: it reports an API error
    /// as a synthetic assistant message first, which is what this writes.
    pub fn error(&mut self, message: &str) {
        match self.flavor {
            Flavor::Claude => self.claude_synthetic_error("unknown", message),
            Flavor::Codex => self.line(&json!({"type": "error", "message": message})),
            Flavor::Gemini => {
                let now = self.now();
                self.line(&json!({"type": "error", "timestamp": now,
                    "severity": "warning", "message": message}));
            }
        }
    }

    fn claude_synthetic_error(&mut self, code: &str, message: &str) {
        self.line(&json!({
            "type": "assistant",
            "message": {"id": format!("msg_err_{}", self.seq), "type": "message",
                "role": "assistant", "model": "<synthetic>",
                "content": [{"type": "text", "text": message}],
                "stop_reason": "stop_sequence", "stop_sequence": "",
                "usage": {"input_tokens": 0, "output_tokens": 0,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}},
            "parent_tool_use_id": null, "session_id": self.session_id,
            "uuid": format!("e-{}", self.seq), "error": code
        }));
        self.seq += 1;
    }

    fn claude_usage(tokens: Tokens) -> Value {
        json!({
            "input_tokens": tokens.input.saturating_sub(tokens.cache_read).saturating_sub(tokens.cache_write),
            "cache_creation_input_tokens": tokens.cache_write,
            "cache_read_input_tokens": tokens.cache_read,
            "output_tokens": tokens.output,
            "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
            "service_tier": "standard"
        })
    }

    fn gemini_stats(&self, tokens: Tokens, duration_ms: u64) -> Value {
        let uncached = tokens.input.saturating_sub(tokens.cache_read);
        let counts = json!({
            "total_tokens": tokens.input + tokens.output,
            "input_tokens": tokens.input, "output_tokens": tokens.output,
            "cached": tokens.cache_read, "input": uncached
        });
        let mut stats = counts.clone();
        if let Value::Object(map) = &mut stats {
            map.insert("duration_ms".to_owned(), json!(duration_ms));
            map.insert("tool_calls".to_owned(), json!(self.turns - 1));
            map.insert("models".to_owned(), json!({ self.model.clone(): counts }));
        }
        stats
    }

    /// The final record of a successful run.
    pub fn success(&mut self, tokens: Tokens, cost_usd: f64) {
        match self.flavor {
            Flavor::Claude => {
                let usage = Self::claude_usage(tokens);
                self.line(&json!({
                    "type": "result", "subtype": "success", "is_error": false,
                    "duration_ms": 1200, "duration_api_ms": 1000, "num_turns": self.turns,
                    "result": self.last_text, "stop_reason": "end_turn",
                    "session_id": self.session_id, "total_cost_usd": cost_usd,
                    "usage": usage,
                    "modelUsage": { self.model.clone(): {
                        "inputTokens": tokens.input.saturating_sub(tokens.cache_read).saturating_sub(tokens.cache_write),
                        "outputTokens": tokens.output,
                        "cacheReadInputTokens": tokens.cache_read,
                        "cacheCreationInputTokens": tokens.cache_write,
                        "webSearchRequests": 0, "costUSD": cost_usd,
                        "contextWindow": 200_000, "maxOutputTokens": 64_000 } },
                    "permission_denials": [], "terminal_reason": "completed",
                    "uuid": "ffffffff-0000-4000-8000-000000000000"
                }));
            }
            Flavor::Codex => {
                let mut usage = json!({"input_tokens": tokens.input,
                    "cached_input_tokens": tokens.cache_read, "output_tokens": tokens.output});
                if tokens.reasoning > 0
                    && let Value::Object(map) = &mut usage
                {
                    map.insert(
                        "reasoning_output_tokens".to_owned(),
                        json!(tokens.reasoning),
                    );
                }
                self.line(&json!({"type": "turn.completed", "usage": usage}));
            }
            Flavor::Gemini => {
                let now = self.now();
                let stats = self.gemini_stats(tokens, 1200);
                self.line(
                    &json!({"type": "result", "timestamp": now, "status": "success",
                    "stats": stats}),
                );
            }
        }
    }

    /// The final record(s) of a failed run; returns the exit code.
    pub fn fail(&mut self, failure: &Failure, tokens: Tokens, cost_usd: f64) -> i32 {
        let message = failure.message.as_str();
        match self.flavor {
            Flavor::Claude => {
                let usage = Self::claude_usage(tokens);
                if let Some(status) = failure.api_status {
                    let code = match status {
                        401 | 403 => "authentication_failed",
                        402 => "billing_error",
                        429 => "rate_limit",
                        400..=499 => "invalid_request",
                        _ => "server_error",
                    };
                    self.claude_synthetic_error(code, message);
                    self.line(&json!({
                        "type": "result", "subtype": "success", "is_error": true,
                        "api_error_status": status, "duration_ms": 300, "duration_api_ms": 0,
                        "num_turns": self.turns, "result": message, "stop_reason": "stop_sequence",
                        "session_id": self.session_id, "total_cost_usd": cost_usd,
                        "usage": usage, "modelUsage": {}, "permission_denials": [],
                        "terminal_reason": "api_error",
                        "uuid": "ffffffff-0000-4000-8000-000000000001"
                    }));
                    0
                } else {
                    self.line(&json!({
                        "type": "result", "subtype": "error_during_execution", "is_error": true,
                        "duration_ms": 300, "duration_api_ms": 0, "num_turns": self.turns,
                        "stop_reason": null, "session_id": self.session_id,
                        "total_cost_usd": cost_usd, "usage": usage, "modelUsage": {},
                        "permission_denials": [], "errors": [message],
                        "terminal_reason": "aborted_error",
                        "uuid": "ffffffff-0000-4000-8000-000000000001"
                    }));
                    1
                }
            }
            Flavor::Codex => {
                self.line(&json!({"type": "error", "message": message}));
                self.line(&json!({"type": "turn.failed", "error": {"message": message}}));
                1
            }
            Flavor::Gemini => {
                let now = self.now();
                let stats = self.gemini_stats(tokens, 0);
                self.line(
                    &json!({"type": "result", "timestamp": now, "status": "error",
                    "error": {"type": "FatalError", "message": message}, "stats": stats}),
                );
                1
            }
        }
    }
}
