//! Anthropic Messages API: `POST {ANTHROPIC_BASE_URL}/v1/messages` with
//! `x-api-key` and `anthropic-version: 2023-06-01`.
//!
//! - `reasoning_effort` becomes extended thinking with a token budget
//!   (`thinking: {type: "enabled", budget_tokens}`); `max_tokens` always
//!   exceeds the budget. Temperature is dropped with thinking (the API
//!   refuses both).
//! - `speed: fast` becomes `speed: "fast"` with the `fast-mode-2026-02-01`
//!   beta header.
//! - Usage: `input_tokens` excludes cache reads and writes, so `input` adds
//!   them back; thinking tokens are not reported separately.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};
use serde_json::{Map, Value, json};

use super::{
    Endpoint, HttpCall, Wire, broken, encode_body, event_json, invalid, parse_arguments,
    schema_or_empty, str_at, u64_at,
};
use crate::llm::error::LlmError;
use crate::llm::sse::SseEvent;
use crate::llm::types::{
    FinishReason, Image, Part, Reasoning, Request, Response, Role, Speed, StreamEvent, ToolCall,
    ToolChoice, Usage,
};

/// `max_tokens` when neither the request nor the catalog says (the API
/// requires one).
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 8192;

const VERSION: &str = "2023-06-01";
const FAST_MODE_BETA: &str = "fast-mode-2026-02-01";
/// The smallest thinking budget the API accepts.
const MIN_BUDGET: u32 = 1024;

pub(crate) fn build(target: &Endpoint<'_>, request: &Request) -> Result<HttpCall, LlmError> {
    let url = format!("{}/v1/messages", target.base_url);
    let mut body = Map::new();
    body.insert("model".into(), json!(target.model));

    let budget = request.reasoning_effort.map(|e| e.budget_tokens());
    let (max_tokens, thinking) = token_limits(request.max_tokens, target.max_output, budget);
    body.insert("max_tokens".into(), json!(max_tokens));
    if let Some(budget) = thinking {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    } else if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        body.insert("system".into(), json!(system));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": schema_or_empty(&t.parameters),
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &request.tool_choice {
            ToolChoice::Auto => None,
            ToolChoice::None => Some(json!({"type": "none"})),
            ToolChoice::Required => Some(json!({"type": "any"})),
            ToolChoice::Tool(name) => Some(json!({"type": "tool", "name": name})),
        };
        if let Some(choice) = choice {
            body.insert("tool_choice".into(), choice);
        }
    }
    let mut headers = vec![("anthropic-version", VERSION.to_string())];
    if let Some(key) = target.api_key {
        headers.push(("x-api-key", key.to_string()));
    }
    if request.speed == Some(Speed::Fast) {
        body.insert("speed".into(), json!("fast"));
        headers.push(("anthropic-beta", FAST_MODE_BETA.to_string()));
    }
    if request.stream {
        body.insert("stream".into(), json!(true));
    }
    Ok(HttpCall {
        url,
        headers,
        body: encode_body(&body, "messages", &Messages(request))?,
    })
}

/// `max_tokens` and the thinking budget. The budget must stay below
/// `max_tokens`: without an explicit limit, room for the answer is added on
/// top of the budget; with one, the budget shrinks to half of it, and
/// thinking is dropped when that is below the API's minimum.
fn token_limits(
    requested: Option<u32>,
    max_output: Option<u32>,
    budget: Option<u32>,
) -> (u32, Option<u32>) {
    let cap = max_output.unwrap_or(u32::MAX);
    match (requested, budget) {
        (Some(max), None) => (max, None),
        (None, None) => (DEFAULT_MAX_TOKENS.min(cap), None),
        (None, Some(budget)) => {
            let max = budget.saturating_add(DEFAULT_MAX_TOKENS).min(cap);
            let budget = if budget < max { budget } else { max / 2 };
            (max, (budget >= MIN_BUDGET).then_some(budget))
        }
        (Some(max), Some(budget)) => {
            let budget = budget.min(max / 2);
            (max, (budget >= MIN_BUDGET).then_some(budget))
        }
    }
}

/// The conversation as `messages`, serialised from the borrowed request
/// (see [`encode_body`]). Parts the API cannot take are dropped, and a
/// message left with none is skipped.
struct Messages<'a>(&'a Request);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for message in &self.0.messages {
            let role = message.role;
            if !message.parts.iter().any(|p| block(role, p).is_some()) {
                continue;
            }
            seq.serialize_element(&MessageJson {
                role: match role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                },
                content: Blocks {
                    role,
                    parts: &message.parts,
                },
            })?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct MessageJson<'a> {
    role: &'static str,
    content: Blocks<'a>,
}

/// A message's content blocks.
struct Blocks<'a> {
    role: Role,
    parts: &'a [Part],
}

impl Serialize for Blocks<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.parts.iter().filter_map(|p| block(self.role, p)))
    }
}

/// One content block, borrowing from the part it comes from.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    Image {
        source: ImageSource<'a>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Cow<'a, Value>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ImageSource<'a> {
    Base64 { media_type: &'a str, data: &'a str },
    Url { url: &'a str },
}

/// The block for `part` in a message of `role`, if the API takes it there:
/// no empty texts, images and tool results from the user only, tool calls
/// and this API's own signed reasoning from the assistant only.
fn block(role: Role, part: &Part) -> Option<Block<'_>> {
    match (role, part) {
        (_, Part::Text(text)) if text.is_empty() => None,
        (_, Part::Text(text)) => Some(Block::Text { text }),
        (Role::User, Part::Image(Image::Base64 { media_type, data })) => Some(Block::Image {
            source: ImageSource::Base64 { media_type, data },
        }),
        (Role::User, Part::Image(Image::Url { url })) => Some(Block::Image {
            source: ImageSource::Url { url },
        }),
        (Role::User, Part::ToolResult(result)) => Some(Block::ToolResult {
            tool_use_id: &result.call_id,
            content: &result.content,
            is_error: result.is_error,
        }),
        (Role::Assistant, Part::ToolCall(call)) => Some(Block::ToolUse {
            id: &call.id,
            name: &call.name,
            // `input` must be an object.
            input: if call.arguments.is_object() {
                Cow::Borrowed(&call.arguments)
            } else {
                Cow::Owned(json!({}))
            },
        }),
        (Role::Assistant, Part::Reasoning(r)) if r.wire == Some(Wire::Anthropic) => {
            r.signature.as_deref().map(|signature| {
                if r.text.is_empty() && r.id.as_deref() == Some("redacted") {
                    Block::RedactedThinking { data: signature }
                } else {
                    Block::Thinking {
                        thinking: &r.text,
                        signature,
                    }
                }
            })
        }
        _ => None,
    }
}

pub(crate) fn parse(provider: &str, body: &Value) -> Result<Response, LlmError> {
    let content = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid(provider, "the reply has no `content` array"))?;
    let mut parts = Vec::new();
    for b in content {
        if let Some(part) = part_of(provider, b, None)? {
            parts.push(part);
        }
    }
    Ok(Response {
        id: str_at(body, "id").unwrap_or_default().to_string(),
        model: str_at(body, "model").unwrap_or_default().to_string(),
        provider: provider.to_string(),
        content: parts,
        usage: usage(body.get("usage").unwrap_or(&Value::Null)),
        finish: finish(str_at(body, "stop_reason")),
    })
}

/// One content block as a part; `input_json` is the streamed arguments text
/// of a `tool_use` block.
fn part_of(provider: &str, b: &Value, input_json: Option<&str>) -> Result<Option<Part>, LlmError> {
    Ok(match str_at(b, "type") {
        Some("text") => Some(Part::Text(
            str_at(b, "text").unwrap_or_default().to_string(),
        )),
        Some("thinking") => Some(Part::Reasoning(Reasoning {
            text: str_at(b, "thinking").unwrap_or_default().to_string(),
            signature: str_at(b, "signature").map(str::to_string),
            id: None,
            wire: Some(Wire::Anthropic),
        })),
        Some("redacted_thinking") => Some(Part::Reasoning(Reasoning {
            text: String::new(),
            signature: str_at(b, "data").map(str::to_string),
            id: Some("redacted".to_string()),
            wire: Some(Wire::Anthropic),
        })),
        Some("tool_use") => {
            let arguments = match input_json {
                Some(text) => parse_arguments(provider, text)?,
                None => b.get("input").cloned().unwrap_or_else(|| json!({})),
            };
            Some(Part::ToolCall(ToolCall {
                id: str_at(b, "id").unwrap_or_default().to_string(),
                name: str_at(b, "name").unwrap_or_default().to_string(),
                arguments,
                signature: None,
            }))
        }
        _ => None,
    })
}

fn usage(u: &Value) -> Usage {
    let cache_read = u64_at(u, "cache_read_input_tokens");
    let cache_write = u64_at(u, "cache_creation_input_tokens");
    Usage {
        input: u64_at(u, "input_tokens") + cache_read + cache_write,
        output: u64_at(u, "output_tokens"),
        reasoning: 0,
        cache_read,
        cache_write,
    }
}

fn finish(reason: Option<&str>) -> FinishReason {
    match reason {
        None | Some("end_turn" | "stop_sequence" | "pause_turn") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolUse,
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::MaxTokens,
        Some("refusal") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_string()),
    }
}

/// An `error` event in a stream, classified like an HTTP error.
fn stream_error(provider: &str, data: &Value) -> LlmError {
    let error = data.get("error").unwrap_or(data);
    let message = str_at(error, "message")
        .unwrap_or("error event")
        .to_string();
    let provider = provider.to_string();
    match str_at(error, "type") {
        Some("overloaded_error") => LlmError::Server {
            provider,
            status: 529,
            message,
        },
        Some("rate_limit_error") => LlmError::RateLimited {
            provider,
            retry_after: None,
            message,
        },
        Some("api_error") | None => LlmError::Server {
            provider,
            status: 500,
            message,
        },
        Some("authentication_error" | "permission_error") => LlmError::Auth {
            provider,
            status: 401,
            message,
        },
        Some(_) => LlmError::BadRequest {
            provider,
            status: 400,
            message,
        },
    }
}

/// A content block being streamed.
#[derive(Debug)]
struct OpenBlock {
    start: Value,
    text: String,
    signature: Option<String>,
    json: String,
}

/// The state of one streamed Messages reply.
#[derive(Debug)]
pub(crate) struct StreamState {
    provider: String,
    id: String,
    model: String,
    blocks: BTreeMap<u64, OpenBlock>,
    usage: Value,
    stop_reason: Option<String>,
    done: bool,
}

impl StreamState {
    pub(crate) fn new(provider: String) -> StreamState {
        StreamState {
            provider,
            id: String::new(),
            model: String::new(),
            blocks: BTreeMap::new(),
            usage: json!({}),
            stop_reason: None,
            done: false,
        }
    }

    pub(crate) fn event(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, LlmError> {
        let data = event_json(&self.provider, event)?;
        let kind = str_at(&data, "type")
            .or(event.event.as_deref())
            .unwrap_or_default()
            .to_string();
        let mut out = Vec::new();
        match kind.as_str() {
            "message_start" => {
                let message = data.get("message").unwrap_or(&Value::Null);
                self.id = str_at(message, "id").unwrap_or_default().to_string();
                self.model = str_at(message, "model").unwrap_or_default().to_string();
                if let Some(u) = message.get("usage") {
                    merge_usage(&mut self.usage, u);
                }
            }
            "content_block_start" => {
                let index = u64_at(&data, "index");
                let start = data.get("content_block").cloned().unwrap_or(Value::Null);
                if str_at(&start, "type") == Some("tool_use") {
                    out.push(StreamEvent::ToolCallStart {
                        id: str_at(&start, "id").unwrap_or_default().to_string(),
                        name: str_at(&start, "name").unwrap_or_default().to_string(),
                    });
                }
                let text = str_at(&start, "text")
                    .or_else(|| str_at(&start, "thinking"))
                    .unwrap_or_default()
                    .to_string();
                self.blocks.insert(
                    index,
                    OpenBlock {
                        start,
                        text,
                        signature: None,
                        json: String::new(),
                    },
                );
            }
            "content_block_delta" => {
                let index = u64_at(&data, "index");
                let delta = data.get("delta").unwrap_or(&Value::Null);
                let Some(block) = self.blocks.get_mut(&index) else {
                    return Err(invalid(
                        &self.provider,
                        format!("delta for content block {index}, which never started"),
                    ));
                };
                match str_at(delta, "type") {
                    Some("text_delta") => {
                        let text = str_at(delta, "text").unwrap_or_default();
                        block.text.push_str(text);
                        out.push(StreamEvent::TextDelta { text: text.into() });
                    }
                    Some("thinking_delta") => {
                        let text = str_at(delta, "thinking").unwrap_or_default();
                        block.text.push_str(text);
                        out.push(StreamEvent::ReasoningDelta { text: text.into() });
                    }
                    Some("signature_delta") => {
                        let sig = str_at(delta, "signature").unwrap_or_default();
                        block
                            .signature
                            .get_or_insert_with(String::new)
                            .push_str(sig);
                    }
                    Some("input_json_delta") => {
                        let json = str_at(delta, "partial_json").unwrap_or_default();
                        block.json.push_str(json);
                        out.push(StreamEvent::ToolCallDelta {
                            id: str_at(&block.start, "id").unwrap_or_default().to_string(),
                            arguments: json.into(),
                        });
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = data.get("delta").and_then(|d| str_at(d, "stop_reason")) {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(u) = data.get("usage") {
                    merge_usage(&mut self.usage, u);
                }
            }
            "message_stop" => self.done = true,
            "error" => return Err(stream_error(&self.provider, &data)),
            _ => {} // ping, content_block_stop, and future event types
        }
        Ok(out)
    }

    pub(crate) fn finish(self) -> Result<Response, LlmError> {
        if !self.done {
            return Err(broken(
                &self.provider,
                "the stream ended before `message_stop`",
            ));
        }
        let mut content = Vec::new();
        for block in self.blocks.into_values() {
            let mut b = block.start;
            let kind = str_at(&b, "type").unwrap_or_default().to_string();
            match kind.as_str() {
                "text" => b["text"] = json!(block.text),
                "thinking" => {
                    b["thinking"] = json!(block.text);
                    if let Some(sig) = block.signature {
                        b["signature"] = json!(sig);
                    }
                }
                _ => {}
            }
            let json = (kind == "tool_use").then_some(block.json.as_str());
            if let Some(part) = part_of(&self.provider, &b, json)? {
                content.push(part);
            }
        }
        Ok(Response {
            id: self.id,
            model: self.model,
            provider: self.provider,
            content,
            usage: usage(&self.usage),
            finish: finish(self.stop_reason.as_deref()),
        })
    }
}

/// Later usage reports (in `message_delta`) carry cumulative counts that
/// replace earlier ones; fields they omit keep their values.
fn merge_usage(into: &mut Value, from: &Value) {
    if let (Some(into), Some(from)) = (into.as_object_mut(), from.as_object()) {
        for (k, v) in from {
            if !v.is_null() {
                into.insert(k.clone(), v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::providers::every_part_kind;
    use crate::llm::sse::SseParser;
    use crate::llm::types::{Message, ReasoningEffort, ToolResult, ToolSpec};

    fn endpoint() -> Endpoint<'static> {
        Endpoint {
            base_url: "http://h",
            api_key: Some("sk-test"),
            model: "claude-sonnet-4-5",
            max_output: Some(64_000),
        }
    }

    #[test]
    fn a_conversation_of_every_part_kind_is_sent_as_before() {
        // The JSON the `Value`-tree encoder produced, kept literally: the borrowed encoder must
        // send exactly the same. In short: only signed Anthropic reasoning, no empty texts or
        // messages, non-object arguments as `{}`.
        let b = build(&endpoint(), &every_part_kind())
            .expect("encodes")
            .json();
        let expected = json!([
            {"content": [{"text": "look at \"this\"", "type": "text"}, {"source": {"data": "iVBORw0K", "media_type": "image/png", "type": "base64"}, "type": "image"}, {"source": {"type": "url", "url": "https://example.com/cat.png"}, "type": "image"}], "role": "user"},
            {"content": [{"signature": "sig-a", "thinking": "need the file", "type": "thinking"}, {"data": "opaque", "type": "redacted_thinking"}, {"text": "Reading.", "type": "text"}, {"id": "call_1", "input": {"path": "a.rs"}, "name": "read", "type": "tool_use"}, {"id": "run-2", "input": {}, "name": "run", "type": "tool_use"}, {"id": "call_3", "input": {}, "name": "noop", "type": "tool_use"}, {"id": "call_4", "input": {}, "name": "list", "type": "tool_use"}, {"text": " Done.", "type": "text"}], "role": "assistant"},
            {"content": [{"text": "before", "type": "text"}, {"content": "fn main() {}", "tool_use_id": "call_1", "type": "tool_result"}, {"content": "exit 1\nno such file", "is_error": true, "tool_use_id": "run-2", "type": "tool_result"}, {"content": "", "tool_use_id": "call_3", "type": "tool_result"}, {"content": "[]", "tool_use_id": "call_4", "type": "tool_result"}, {"text": "and now?", "type": "text"}], "role": "user"},
            {"content": [{"signature": "sig-b", "thinking": "only thinking", "type": "thinking"}, {"id": "call_5", "input": {}, "name": "read", "type": "tool_use"}], "role": "assistant"},
            {"content": [{"content": "", "tool_use_id": "call_5", "type": "tool_result"}, {"source": {"type": "url", "url": "https://example.com/dog.png"}, "type": "image"}], "role": "user"},
        ]);
        assert_eq!(b["messages"], expected);
    }

    #[test]
    fn request_carries_system_tools_thinking_and_headers() {
        let mut req = Request::prompt("hi");
        req.system = Some("be brief".into());
        req.reasoning_effort = Some(ReasoningEffort::Medium);
        req.temperature = Some(0.2);
        req.speed = Some(Speed::Fast);
        req.tools = vec![ToolSpec {
            name: "read".into(),
            description: "read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }];
        let call = build(&endpoint(), &req).expect("encodes");
        assert_eq!(call.url, "http://h/v1/messages");
        assert!(call.headers.contains(&("x-api-key", "sk-test".into())));
        assert!(
            call.headers
                .contains(&("anthropic-version", "2023-06-01".into()))
        );
        assert!(
            call.headers
                .contains(&("anthropic-beta", FAST_MODE_BETA.into()))
        );
        let b = &call.json();
        assert_eq!(b["system"], "be brief");
        assert_eq!(
            b["thinking"],
            json!({"type": "enabled", "budget_tokens": 8192})
        );
        assert!(b["max_tokens"].as_u64() > b["thinking"]["budget_tokens"].as_u64());
        assert!(
            b.get("temperature").is_none(),
            "thinking forbids temperature"
        );
        assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
        assert_eq!(b["speed"], "fast");
        assert_eq!(
            b["messages"],
            json!([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
        );
    }

    #[test]
    fn max_tokens_always_exceeds_the_thinking_budget() {
        assert_eq!(token_limits(None, None, None), (8192, None));
        assert_eq!(token_limits(Some(100), None, None), (100, None));
        assert_eq!(
            token_limits(None, None, Some(24576)),
            (24576 + 8192, Some(24576))
        );
        assert_eq!(
            token_limits(None, Some(16_000), Some(24576)),
            (16_000, Some(8000))
        );
        assert_eq!(
            token_limits(Some(4000), None, Some(8192)),
            (4000, Some(2000))
        );
        assert_eq!(
            token_limits(Some(1500), None, Some(8192)),
            (1500, None),
            "too small to think"
        );
    }

    #[test]
    fn tool_round_trip_messages() {
        let mut req = Request::prompt("read a");
        req.messages.push(Message {
            role: Role::Assistant,
            parts: vec![
                Part::Reasoning(Reasoning {
                    text: "need file".into(),
                    signature: Some("sig".into()),
                    id: None,
                    wire: Some(Wire::Anthropic),
                }),
                Part::Reasoning(Reasoning {
                    text: "other api".into(),
                    signature: Some("x".into()),
                    id: None,
                    wire: Some(Wire::OpenAi),
                }),
                Part::ToolCall(ToolCall {
                    id: "toolu_1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                    signature: None,
                }),
            ],
        });
        req.messages.push(Message::tool_results([ToolResult {
            call_id: "toolu_1".into(),
            name: "read".into(),
            content: "contents".into(),
            is_error: true,
        }]));
        let b = build(&endpoint(), &req).expect("encodes").json();
        assert_eq!(
            b["messages"][1]["content"],
            json!([
                {"type": "thinking", "thinking": "need file", "signature": "sig"},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
            ]),
            "other APIs' reasoning is dropped"
        );
        assert_eq!(
            b["messages"][2]["content"],
            json!([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "contents", "is_error": true}])
        );
    }

    #[test]
    fn parses_a_reply_with_cache_usage() {
        let body = json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "s"},
                {"type": "text", "text": "Let me read it."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 20, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5},
        });
        let r = parse("anthropic", &body).expect("parse");
        assert_eq!(r.id, "msg_1");
        assert_eq!(r.text(), "Let me read it.");
        assert_eq!(r.reasoning(), "hmm");
        assert_eq!(r.tool_calls()[0].arguments, json!({"path": "a"}));
        assert_eq!(r.finish, FinishReason::ToolUse);
        assert_eq!(
            r.usage,
            Usage {
                input: 115,
                output: 20,
                reasoning: 0,
                cache_read: 100,
                cache_write: 5
            }
        );
        assert!(parse("anthropic", &json!({"id": "x"})).is_err());
    }

    const STREAM: &str = "event: message_start
data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-x\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1,\"cache_read_input_tokens\":4}}}

event: content_block_start
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}

event: ping
data: {\"type\":\"ping\"}

event: content_block_delta
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}

event: content_block_delta
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}

event: content_block_stop
data: {\"type\":\"content_block_stop\",\"index\":0}

event: content_block_start
data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"read\",\"input\":{}}}

event: content_block_delta
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\":\"}}

event: content_block_delta
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"a\\\"}\"}}

event: content_block_stop
data: {\"type\":\"content_block_stop\",\"index\":1}

event: message_delta
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":30}}

event: message_stop
data: {\"type\":\"message_stop\"}

";

    fn run(stream: &str) -> (Vec<StreamEvent>, Result<Response, LlmError>) {
        let mut parser = SseParser::new();
        let mut state = StreamState::new("anthropic".into());
        let mut deltas = Vec::new();
        for e in parser.feed(stream.as_bytes()) {
            match state.event(&e) {
                Ok(d) => deltas.extend(d),
                Err(e) => return (deltas, Err(e)),
            }
        }
        (deltas, state.finish())
    }

    #[test]
    fn a_stream_assembles_the_same_reply() {
        let (deltas, r) = run(STREAM);
        let r = r.expect("complete");
        assert_eq!(deltas[0], StreamEvent::TextDelta { text: "Hel".into() });
        assert!(deltas.contains(&StreamEvent::ToolCallStart {
            id: "toolu_1".into(),
            name: "read".into()
        }));
        assert_eq!(r.text(), "Hello");
        assert_eq!(r.tool_calls()[0].arguments, json!({"path": "a"}));
        assert_eq!(r.finish, FinishReason::ToolUse);
        assert_eq!(
            r.usage,
            Usage {
                input: 14,
                output: 30,
                reasoning: 0,
                cache_read: 4,
                cache_write: 0
            }
        );
    }

    #[test]
    fn a_stream_without_message_stop_is_broken() {
        let cut = &STREAM[..STREAM.find("event: message_delta").expect("marker")];
        let (_, r) = run(cut);
        assert_eq!(r.map_err(|e| e.code()), Err("llm.broken_stream"));
    }

    #[test]
    fn an_overloaded_error_event_is_a_retryable_server_error() {
        let (_, r) = run(
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
        );
        let e = r.expect_err("error event");
        assert!(e.is_retryable());
        assert_eq!(e.code(), "llm.server");
    }
}
