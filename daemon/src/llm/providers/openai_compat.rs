//! OpenAI-compatible Chat Completions: `POST {base_url}/chat/completions`
//! with `Authorization: Bearer` when the provider has a key. This is what
//! Ollama, llama.cpp's server, vLLM, LiteLLM and OpenRouter speak, and the
//! built-in kimi, zai, minimax and inception providers.
//!
//! - `reasoning_effort` → `reasoning_effort`; `max_tokens` → `max_tokens`
//!   (the field every compatible server knows); `speed` is ignored.
//! - Streaming asks for a final usage chunk (`stream_options.include_usage`).
//!   A stream is complete at `data: [DONE]`, or at its end once a choice
//!   carried a `finish_reason` (some servers omit `[DONE]`).
//! - Reasoning text comes back as `reasoning_content` (vLLM, DeepSeek,
//!   llama.cpp) or `reasoning` (OpenRouter, Ollama).
//! - Usage: `prompt_tokens` includes `cached_tokens`; `completion_tokens`
//!   includes `reasoning_tokens`.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};
use serde_json::{Map, Value, json};

use super::{
    ArgumentsText, Endpoint, HttpCall, ImageUrl, broken, encode_body, event_json, invalid,
    parse_arguments, schema_or_empty, str_at, u64_at,
};
use crate::llm::error::LlmError;
use crate::llm::sse::SseEvent;
use crate::llm::types::{
    FinishReason, Part, Reasoning, Request, Response, Role, StreamEvent, ToolCall, ToolChoice,
    Usage,
};

pub(crate) fn build(target: &Endpoint<'_>, request: &Request) -> Result<HttpCall, LlmError> {
    let url = format!("{}/chat/completions", target.base_url);
    let mut body = Map::new();
    body.insert("model".into(), json!(target.model));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": schema_or_empty(&t.parameters),
                    },
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &request.tool_choice {
            ToolChoice::Auto => None,
            ToolChoice::None => Some(json!("none")),
            ToolChoice::Required => Some(json!("required")),
            ToolChoice::Tool(name) => Some(json!({"type": "function", "function": {"name": name}})),
        };
        if let Some(choice) = choice {
            body.insert("tool_choice".into(), choice);
        }
    }
    if let Some(effort) = request.reasoning_effort {
        body.insert("reasoning_effort".into(), json!(effort.as_str()));
    }
    if let Some(max) = request.max_tokens {
        body.insert("max_tokens".into(), json!(max));
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if request.stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    let body = encode_body(&body, "messages", &Messages(request))?;
    Ok(HttpCall::bearer(url, target.api_key, body))
}

/// The conversation as `messages`, serialised from the borrowed request
/// (see [`encode_body`]): the system prompt first; a user message's tool
/// results as `tool` messages of their own, before its text and images; an
/// assistant message's texts joined, with its tool calls.
struct Messages<'a>(&'a Request);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = self.0;
        let mut seq = serializer.serialize_seq(None)?;
        if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
            seq.serialize_element(&MessageJson::System { content: system })?;
        }
        for message in &request.messages {
            let parts = &message.parts[..];
            match message.role {
                Role::User => {
                    for part in parts {
                        if let Part::ToolResult(result) = part {
                            seq.serialize_element(&MessageJson::Tool {
                                tool_call_id: &result.call_id,
                                content: &result.content,
                            })?;
                        }
                    }
                    if !parts
                        .iter()
                        .any(|p| matches!(p, Part::Text(_) | Part::Image(_)))
                    {
                        continue;
                    }
                    // Plain strings are what every server understands.
                    let content = if parts.iter().any(|p| matches!(p, Part::Image(_))) {
                        UserContent::Parts(ContentParts(parts))
                    } else {
                        UserContent::Text(JoinedText(parts))
                    };
                    seq.serialize_element(&MessageJson::User { content })?;
                }
                Role::Assistant => {
                    let has_text = parts
                        .iter()
                        .any(|p| matches!(p, Part::Text(t) if !t.is_empty()));
                    let has_calls = parts.iter().any(|p| matches!(p, Part::ToolCall(_)));
                    if !has_text && !has_calls {
                        continue;
                    }
                    seq.serialize_element(&MessageJson::Assistant {
                        content: has_text.then_some(JoinedText(parts)),
                        tool_calls: has_calls.then_some(ToolCalls(parts)),
                    })?;
                }
            }
        }
        seq.end()
    }
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum MessageJson<'a> {
    System {
        content: &'a str,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        /// `null` when the message is only tool calls.
        content: Option<JoinedText<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_calls: Option<ToolCalls<'a>>,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(JoinedText<'a>),
    Parts(ContentParts<'a>),
}

/// A message's texts as one string, written into the body piece by piece.
struct JoinedText<'a>(&'a [Part]);

impl fmt::Display for JoinedText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for part in self.0 {
            if let Part::Text(text) = part {
                f.write_str(text)?;
            }
        }
        Ok(())
    }
}

impl Serialize for JoinedText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A user message's texts (empty ones included) and images, as parts.
struct ContentParts<'a>(&'a [Part]);

impl Serialize for ContentParts<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().filter_map(|part| match part {
            Part::Text(text) => Some(ContentPart::Text { text }),
            Part::Image(image) => Some(ContentPart::ImageUrl {
                image_url: UrlJson {
                    url: ImageUrl(image),
                },
            }),
            _ => None,
        }))
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentPart<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: UrlJson<'a> },
}

#[derive(Serialize)]
struct UrlJson<'a> {
    url: ImageUrl<'a>,
}

/// An assistant message's tool calls.
struct ToolCalls<'a>(&'a [Part]);

impl Serialize for ToolCalls<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().filter_map(|part| match part {
            Part::ToolCall(call) => Some(ToolCallJson {
                id: &call.id,
                kind: "function",
                function: FunctionJson {
                    name: &call.name,
                    arguments: ArgumentsText(&call.arguments),
                },
            }),
            _ => None,
        }))
    }
}

#[derive(Serialize)]
struct ToolCallJson<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionJson<'a>,
}

#[derive(Serialize)]
struct FunctionJson<'a> {
    name: &'a str,
    arguments: ArgumentsText<'a>,
}

pub(crate) fn parse(provider: &str, body: &Value) -> Result<Response, LlmError> {
    let choice = body
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| invalid(provider, "the reply has no `choices`"))?;
    let message = choice.get("message").unwrap_or(&Value::Null);
    let mut content = Vec::new();
    if let Some(reasoning) = reasoning_text(message).filter(|r| !r.is_empty()) {
        content.push(Part::Reasoning(Reasoning {
            text: reasoning.to_string(),
            ..Reasoning::default()
        }));
    }
    if let Some(text) = str_at(message, "content").filter(|t| !t.is_empty()) {
        content.push(Part::Text(text.to_string()));
    }
    for call in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let function = call.get("function").unwrap_or(&Value::Null);
        content.push(Part::ToolCall(ToolCall {
            id: str_at(call, "id").unwrap_or_default().to_string(),
            name: str_at(function, "name").unwrap_or_default().to_string(),
            arguments: arguments_value(provider, function.get("arguments"))?,
            signature: None,
        }));
    }
    Ok(response(
        provider,
        body,
        content,
        str_at(choice, "finish_reason"),
        body.get("usage"),
    ))
}

fn response(
    provider: &str,
    body: &Value,
    content: Vec<Part>,
    finish_reason: Option<&str>,
    usage_json: Option<&Value>,
) -> Response {
    let has_calls = content.iter().any(|p| matches!(p, Part::ToolCall(_)));
    Response {
        id: str_at(body, "id").unwrap_or_default().to_string(),
        model: str_at(body, "model").unwrap_or_default().to_string(),
        provider: provider.to_string(),
        content,
        usage: usage_json.map(usage).unwrap_or_default(),
        finish: if has_calls {
            FinishReason::ToolUse
        } else {
            finish(finish_reason)
        },
    }
}

/// Arguments as a JSON string (the standard) or, from some servers, an object.
fn arguments_value(provider: &str, arguments: Option<&Value>) -> Result<Value, LlmError> {
    match arguments {
        Some(Value::String(text)) => parse_arguments(provider, text),
        Some(Value::Null) | None => Ok(json!({})),
        Some(other) => Ok(other.clone()),
    }
}

fn reasoning_text(v: &Value) -> Option<&str> {
    str_at(v, "reasoning_content").or_else(|| str_at(v, "reasoning"))
}

fn usage(u: &Value) -> Usage {
    let detail = |key: &str, field: &str| u.get(key).map_or(0, |d| u64_at(d, field));
    Usage {
        input: u64_at(u, "prompt_tokens"),
        output: u64_at(u, "completion_tokens"),
        reasoning: detail("completion_tokens_details", "reasoning_tokens"),
        cache_read: detail("prompt_tokens_details", "cached_tokens"),
        cache_write: 0,
    }
}

fn finish(reason: Option<&str>) -> FinishReason {
    match reason {
        None | Some("stop" | "eos" | "end_turn") => FinishReason::Stop,
        Some("tool_calls" | "function_call") => FinishReason::ToolUse,
        Some("length") => FinishReason::MaxTokens,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_string()),
    }
}

/// A tool call being streamed.
#[derive(Debug, Default)]
struct OpenCall {
    id: String,
    name: String,
    arguments: String,
}

/// The state of one streamed Chat Completions reply.
#[derive(Debug)]
pub(crate) struct StreamState {
    provider: String,
    head: Value,
    text: String,
    reasoning: String,
    calls: BTreeMap<u64, OpenCall>,
    finish_reason: Option<String>,
    usage: Option<Value>,
    done: bool,
}

impl StreamState {
    pub(crate) fn new(provider: String) -> StreamState {
        StreamState {
            provider,
            head: json!({}),
            text: String::new(),
            reasoning: String::new(),
            calls: BTreeMap::new(),
            finish_reason: None,
            usage: None,
            done: false,
        }
    }

    pub(crate) fn event(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, LlmError> {
        if event.data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        let data = event_json(&self.provider, event)?;
        if let Some(error) = data.get("error") {
            let message = str_at(error, "message").unwrap_or("error").to_string();
            return Err(LlmError::Server {
                provider: self.provider.clone(),
                status: u16::try_from(u64_at(error, "code"))
                    .ok()
                    .filter(|c| *c >= 500)
                    .unwrap_or(500),
                message,
            });
        }
        for key in ["id", "model"] {
            if let Some(v) = str_at(&data, key).filter(|v| !v.is_empty()) {
                self.head[key] = json!(v);
            }
        }
        if let Some(u) = data.get("usage").filter(|u| !u.is_null()) {
            self.usage = Some(u.clone());
        }
        let mut out = Vec::new();
        let choices = data.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            let delta = choice.get("delta").unwrap_or(&Value::Null);
            if let Some(r) = reasoning_text(delta).filter(|r| !r.is_empty()) {
                self.reasoning.push_str(r);
                out.push(StreamEvent::ReasoningDelta { text: r.into() });
            }
            if let Some(t) = str_at(delta, "content").filter(|t| !t.is_empty()) {
                self.text.push_str(t);
                out.push(StreamEvent::TextDelta { text: t.into() });
            }
            for call in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.call_delta(call, &mut out);
            }
            if let Some(reason) = str_at(choice, "finish_reason") {
                self.finish_reason = Some(reason.to_string());
            }
        }
        Ok(out)
    }

    fn call_delta(&mut self, call: &Value, out: &mut Vec<StreamEvent>) {
        let index = call
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(self.calls.len() as u64);
        let function = call.get("function").unwrap_or(&Value::Null);
        let open = self.calls.entry(index).or_default();
        let started = !open.id.is_empty() || !open.name.is_empty();
        if let Some(id) = str_at(call, "id").filter(|s| !s.is_empty()) {
            open.id = id.to_string();
        }
        if let Some(name) = str_at(function, "name").filter(|s| !s.is_empty()) {
            open.name = name.to_string();
        }
        if !started && (!open.id.is_empty() || !open.name.is_empty()) {
            out.push(StreamEvent::ToolCallStart {
                id: open.id.clone(),
                name: open.name.clone(),
            });
        }
        let fragment = match function.get("arguments") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        if !fragment.is_empty() {
            open.arguments.push_str(&fragment);
            out.push(StreamEvent::ToolCallDelta {
                id: open.id.clone(),
                arguments: fragment,
            });
        }
    }

    pub(crate) fn finish(self) -> Result<Response, LlmError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(broken(&self.provider, "the stream ended before `[DONE]`"));
        }
        let mut content = Vec::new();
        if !self.reasoning.is_empty() {
            content.push(Part::Reasoning(Reasoning {
                text: self.reasoning,
                ..Reasoning::default()
            }));
        }
        if !self.text.is_empty() {
            content.push(Part::Text(self.text));
        }
        for (n, call) in self.calls.into_values().enumerate() {
            let id = if call.id.is_empty() {
                format!("call_{n}")
            } else {
                call.id
            };
            content.push(Part::ToolCall(ToolCall {
                id,
                name: call.name,
                arguments: parse_arguments(&self.provider, &call.arguments)?,
                signature: None,
            }));
        }
        Ok(response(
            &self.provider,
            &self.head,
            content,
            self.finish_reason.as_deref(),
            self.usage.as_ref(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::providers::every_part_kind;
    use crate::llm::sse::SseParser;
    use crate::llm::types::{Image, Message, ReasoningEffort, ToolResult};

    fn endpoint() -> Endpoint<'static> {
        Endpoint {
            base_url: "http://localhost:11434/v1",
            api_key: None,
            model: "llama3.1",
            max_output: None,
        }
    }

    #[test]
    fn a_conversation_of_every_part_kind_is_sent_as_before() {
        // The JSON the `Value`-tree encoder produced, kept literally: the borrowed encoder must
        // send exactly the same. In short: the system prompt first, tool results before the user's
        // text, joined texts, plain string content without images.
        let b = build(&endpoint(), &every_part_kind())
            .expect("encodes")
            .json();
        let expected = json!([
            {"content": "be brief", "role": "system"},
            {"content": [{"text": "look at \"this\"", "type": "text"}, {"text": "", "type": "text"}, {"image_url": {"url": "data:image/png;base64,iVBORw0K"}, "type": "image_url"}, {"image_url": {"url": "https://example.com/cat.png"}, "type": "image_url"}], "role": "user"},
            {"content": "Reading. Done.", "role": "assistant", "tool_calls": [{"function": {"arguments": "{\"path\":\"a.rs\"}", "name": "read"}, "id": "call_1", "type": "function"}, {"function": {"arguments": "{\"cmd\":\"ls\"}", "name": "run"}, "id": "run-2", "type": "function"}, {"function": {"arguments": "{}", "name": "noop"}, "id": "call_3", "type": "function"}, {"function": {"arguments": "[1,\"two\"]", "name": "list"}, "id": "call_4", "type": "function"}]},
            {"content": "fn main() {}", "role": "tool", "tool_call_id": "call_1"},
            {"content": "exit 1\nno such file", "role": "tool", "tool_call_id": "run-2"},
            {"content": "", "role": "tool", "tool_call_id": "call_3"},
            {"content": "[]", "role": "tool", "tool_call_id": "call_4"},
            {"content": "beforeand now?", "role": "user"},
            {"content": "", "role": "user"},
            {"content": null, "role": "assistant", "tool_calls": [{"function": {"arguments": "{}", "name": "read"}, "id": "call_5", "type": "function"}]},
            {"content": "", "role": "tool", "tool_call_id": "call_5"},
            {"content": [{"image_url": {"url": "https://example.com/dog.png"}, "type": "image_url"}], "role": "user"},
        ]);
        assert_eq!(b["messages"], expected);
    }

    #[test]
    fn request_without_a_key_sends_no_authorization() {
        let mut req = Request::prompt("hi");
        req.system = Some("sys".into());
        req.reasoning_effort = Some(ReasoningEffort::Medium);
        req.max_tokens = Some(64);
        req.stream = true;
        let call = build(&endpoint(), &req).expect("encodes");
        assert_eq!(call.url, "http://localhost:11434/v1/chat/completions");
        assert!(call.headers.is_empty());
        let b = &call.json();
        assert_eq!(b["reasoning_effort"], "medium");
        assert_eq!(b["max_tokens"], 64);
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert_eq!(
            b["messages"],
            json!([{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}])
        );
    }

    #[test]
    fn tool_round_trip_and_images() {
        let mut req = Request::prompt("go");
        req.messages.push(Message {
            role: Role::Assistant,
            parts: vec![Part::ToolCall(ToolCall {
                id: "call_1".into(),
                name: "read".into(),
                arguments: json!({"path": "a"}),
                signature: None,
            })],
        });
        req.messages.push(Message {
            role: Role::User,
            parts: vec![
                Part::ToolResult(ToolResult {
                    call_id: "call_1".into(),
                    name: "read".into(),
                    content: "data".into(),
                    is_error: false,
                }),
                Part::Image(Image::Base64 {
                    media_type: "image/png".into(),
                    data: "AA".into(),
                }),
            ],
        });
        let b = build(&endpoint(), &req).expect("encodes").json();
        assert_eq!(
            b["messages"][1],
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}
            ]})
        );
        assert_eq!(
            b["messages"][2],
            json!({"role": "tool", "tool_call_id": "call_1", "content": "data"})
        );
        assert_eq!(
            b["messages"][3]["content"][0]["image_url"]["url"],
            "data:image/png;base64,AA"
        );
    }

    #[test]
    fn parses_a_reply_with_tool_calls_and_usage() {
        let body = json!({
            "id": "c1", "model": "llama3.1",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "reasoning_content": "think",
                "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}]},
                "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 8},
                      "completion_tokens_details": {"reasoning_tokens": 3}},
        });
        let r = parse("ollama", &body).expect("parse");
        assert_eq!(r.finish, FinishReason::ToolUse);
        assert_eq!(r.reasoning(), "think");
        assert_eq!(r.tool_calls()[0].arguments, json!({"path": "a"}));
        assert_eq!(
            r.usage,
            Usage {
                input: 20,
                output: 7,
                reasoning: 3,
                cache_read: 8,
                cache_write: 0
            }
        );
    }

    #[test]
    fn a_stream_assembles_calls_split_across_chunks() {
        let stream = "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"}}]}

data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"pa\"}}]}}]}

data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"th\\\":1}\"}}]},\"finish_reason\":\"tool_calls\"}]}

data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":6}}

data: [DONE]

";
        let mut parser = SseParser::new();
        let mut state = StreamState::new("vllm".into());
        let mut deltas = Vec::new();
        for e in parser.feed(stream.as_bytes()) {
            deltas.extend(state.event(&e).expect("event"));
        }
        assert_eq!(deltas[0], StreamEvent::TextDelta { text: "Hi".into() });
        assert_eq!(
            deltas[1],
            StreamEvent::ToolCallStart {
                id: "call_1".into(),
                name: "read".into()
            }
        );
        let r = state.finish().expect("complete");
        assert_eq!(r.text(), "Hi");
        assert_eq!(r.tool_calls()[0].arguments, json!({"path": 1}));
        assert_eq!(r.usage.output, 6);
        assert_eq!(
            StreamState::new("vllm".into())
                .finish()
                .map_err(|e| e.code()),
            Err("llm.broken_stream")
        );
    }
}
