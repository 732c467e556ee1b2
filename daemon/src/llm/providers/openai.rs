//! OpenAI Responses API: `POST {OPENAI_BASE_URL}/responses` with
//! `Authorization: Bearer`. `OPENAI_BASE_URL` includes `/v1`, as in
//! OpenAI's own SDKs.
//!
//! - Requests are stateless (`store: false`); the conversation is sent whole
//!   as `input` items. With `reasoning_effort`, encrypted reasoning is
//!   requested and sent back on the next turn so tool loops keep their
//!   reasoning.
//! - `reasoning_effort` → `reasoning: {effort}`; `max_tokens` →
//!   `max_output_tokens`; `speed` is ignored (OpenAI has no fast mode).
//! - Usage: `input_tokens` includes `cached_tokens`, `output_tokens` includes
//!   `reasoning_tokens`; cache writes are not reported.

use std::collections::BTreeMap;

use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};
use serde_json::{Map, Value, json};

use super::{
    ArgumentsText, Endpoint, HttpCall, ImageUrl, Wire, broken, encode_body, event_json, invalid,
    parse_arguments, schema_or_empty, str_at, u64_at,
};
use crate::llm::error::LlmError;
use crate::llm::sse::SseEvent;
use crate::llm::types::{
    FinishReason, Part, Reasoning, Request, Response, Role, StreamEvent, ToolCall, ToolChoice,
    Usage,
};

pub(crate) fn build(target: &Endpoint<'_>, request: &Request) -> Result<HttpCall, LlmError> {
    let url = format!("{}/responses", target.base_url);
    let mut body = Map::new();
    body.insert("model".into(), json!(target.model));
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        body.insert("instructions".into(), json!(system));
    }
    body.insert("store".into(), json!(false));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": schema_or_empty(&t.parameters),
                    "strict": false,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &request.tool_choice {
            ToolChoice::Auto => None,
            ToolChoice::None => Some(json!("none")),
            ToolChoice::Required => Some(json!("required")),
            ToolChoice::Tool(name) => Some(json!({"type": "function", "name": name})),
        };
        if let Some(choice) = choice {
            body.insert("tool_choice".into(), choice);
        }
    }
    if let Some(effort) = request.reasoning_effort {
        body.insert(
            "reasoning".into(),
            json!({"effort": effort.as_str(), "summary": "auto"}),
        );
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    if let Some(max) = request.max_tokens {
        body.insert("max_output_tokens".into(), json!(max));
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if request.stream {
        body.insert("stream".into(), json!(true));
    }
    let body = encode_body(&body, "input", &Input(request))?;
    Ok(HttpCall::bearer(url, target.api_key, body))
}

/// The conversation as `input` items, serialised from the borrowed request
/// (see [`encode_body`]). A user message's tool results are items of their
/// own, before its text and images; an assistant message is split into an
/// item per text, tool call and (this API's own, encrypted) reasoning.
struct Input<'a>(&'a Request);

impl Serialize for Input<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for message in &self.0.messages {
            match message.role {
                Role::User => {
                    for part in &message.parts {
                        if let Part::ToolResult(result) = part {
                            seq.serialize_element(&Item::FunctionCallOutput {
                                call_id: &result.call_id,
                                output: &result.content,
                            })?;
                        }
                    }
                    if message.parts.iter().any(|p| user_content(p).is_some()) {
                        seq.serialize_element(&UserMessage {
                            role: "user",
                            content: UserContent(&message.parts),
                        })?;
                    }
                }
                Role::Assistant => {
                    for part in &message.parts {
                        match part {
                            Part::Text(text) if !text.is_empty() => {
                                seq.serialize_element(&AssistantMessage {
                                    role: "assistant",
                                    content: text,
                                })?;
                            }
                            Part::ToolCall(call) => seq.serialize_element(&Item::FunctionCall {
                                call_id: &call.id,
                                name: &call.name,
                                arguments: ArgumentsText(&call.arguments),
                            })?,
                            Part::Reasoning(r) if r.wire == Some(Wire::OpenAi) => {
                                if let Some(encrypted) = &r.signature {
                                    seq.serialize_element(&Item::Reasoning {
                                        summary: [],
                                        encrypted_content: encrypted,
                                        id: r.id.as_deref(),
                                    })?;
                                }
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
        seq.end()
    }
}

/// The typed input items.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item<'a> {
    FunctionCallOutput {
        call_id: &'a str,
        output: &'a str,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: ArgumentsText<'a>,
    },
    Reasoning {
        summary: [&'a str; 0],
        encrypted_content: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
    },
}

#[derive(Serialize)]
struct UserMessage<'a> {
    role: &'static str,
    content: UserContent<'a>,
}

#[derive(Serialize)]
struct AssistantMessage<'a> {
    role: &'static str,
    content: &'a str,
}

/// A user message's texts (empty ones included) and images.
struct UserContent<'a>(&'a [Part]);

impl Serialize for UserContent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().filter_map(user_content))
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentPart<'a> {
    InputText { text: &'a str },
    InputImage { image_url: ImageUrl<'a> },
}

fn user_content(part: &Part) -> Option<ContentPart<'_>> {
    match part {
        Part::Text(text) => Some(ContentPart::InputText { text }),
        Part::Image(image) => Some(ContentPart::InputImage {
            image_url: ImageUrl(image),
        }),
        _ => None,
    }
}

pub(crate) fn parse(provider: &str, body: &Value) -> Result<Response, LlmError> {
    let output = body
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid(provider, "the reply has no `output` array"))?;
    let mut content = Vec::new();
    for item in output {
        content.extend(parts_of(provider, item)?);
    }
    Ok(finish_response(provider, body, content))
}

fn finish_response(provider: &str, body: &Value, content: Vec<Part>) -> Response {
    let has_calls = content.iter().any(|p| matches!(p, Part::ToolCall(_)));
    let finish = match (str_at(body, "status"), has_calls) {
        (_, true) => FinishReason::ToolUse,
        (Some("incomplete"), false) => {
            match body
                .get("incomplete_details")
                .and_then(|d| str_at(d, "reason"))
            {
                Some("max_output_tokens") => FinishReason::MaxTokens,
                Some("content_filter") => FinishReason::ContentFilter,
                Some(other) => FinishReason::Other(other.to_string()),
                None => FinishReason::Other("incomplete".to_string()),
            }
        }
        _ => FinishReason::Stop,
    };
    Response {
        id: str_at(body, "id").unwrap_or_default().to_string(),
        model: str_at(body, "model").unwrap_or_default().to_string(),
        provider: provider.to_string(),
        content,
        usage: usage(body.get("usage").unwrap_or(&Value::Null)),
        finish,
    }
}

fn parts_of(provider: &str, item: &Value) -> Result<Vec<Part>, LlmError> {
    let mut parts = Vec::new();
    match str_at(item, "type") {
        Some("message") => {
            for c in item
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match str_at(c, "type") {
                    Some("output_text") => {
                        parts.push(Part::Text(str_at(c, "text").unwrap_or_default().into()));
                    }
                    Some("refusal") => {
                        parts.push(Part::Text(str_at(c, "refusal").unwrap_or_default().into()));
                    }
                    _ => {}
                }
            }
        }
        Some("function_call") => parts.push(Part::ToolCall(ToolCall {
            id: str_at(item, "call_id")
                .or_else(|| str_at(item, "id"))
                .unwrap_or_default()
                .to_string(),
            name: str_at(item, "name").unwrap_or_default().to_string(),
            arguments: parse_arguments(provider, str_at(item, "arguments").unwrap_or_default())?,
            signature: None,
        })),
        Some("reasoning") => {
            let text: String = item
                .get("summary")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|s| str_at(s, "text"))
                .collect::<Vec<_>>()
                .join("\n\n");
            parts.push(Part::Reasoning(Reasoning {
                text,
                signature: str_at(item, "encrypted_content").map(str::to_string),
                id: str_at(item, "id").map(str::to_string),
                wire: Some(Wire::OpenAi),
            }));
        }
        _ => {}
    }
    Ok(parts)
}

fn usage(u: &Value) -> Usage {
    let detail = |key: &str, field: &str| u.get(key).map_or(0, |d| u64_at(d, field));
    Usage {
        input: u64_at(u, "input_tokens"),
        output: u64_at(u, "output_tokens"),
        reasoning: detail("output_tokens_details", "reasoning_tokens"),
        cache_read: detail("input_tokens_details", "cached_tokens"),
        cache_write: 0,
    }
}

/// An error reported inside a stream (`error` or `response.failed`).
fn stream_error(provider: &str, error: &Value) -> LlmError {
    let message = str_at(error, "message")
        .unwrap_or("the response failed")
        .to_string();
    let code = str_at(error, "code").or_else(|| str_at(error, "type"));
    let provider = provider.to_string();
    match code {
        Some("rate_limit_exceeded") => LlmError::RateLimited {
            provider,
            retry_after: None,
            message,
        },
        Some("insufficient_quota") => LlmError::QuotaExceeded { provider, message },
        Some("context_length_exceeded") => LlmError::ContextLength { provider, message },
        Some("invalid_request_error" | "invalid_prompt") => LlmError::BadRequest {
            provider,
            status: 400,
            message,
        },
        _ => LlmError::Server {
            provider,
            status: 500,
            message,
        },
    }
}

/// The state of one streamed Responses reply.
#[derive(Debug)]
pub(crate) struct StreamState {
    provider: String,
    /// Output items by index, as announced and completed.
    items: BTreeMap<u64, Value>,
    /// Text and argument deltas by output index, for items that never
    /// arrive complete.
    text: BTreeMap<u64, String>,
    arguments: BTreeMap<u64, String>,
    done: Option<Value>,
}

impl StreamState {
    pub(crate) fn new(provider: String) -> StreamState {
        StreamState {
            provider,
            items: BTreeMap::new(),
            text: BTreeMap::new(),
            arguments: BTreeMap::new(),
            done: None,
        }
    }

    pub(crate) fn event(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, LlmError> {
        let data = event_json(&self.provider, event)?;
        let kind = str_at(&data, "type")
            .or(event.event.as_deref())
            .unwrap_or_default()
            .to_string();
        let index = u64_at(&data, "output_index");
        let mut out = Vec::new();
        match kind.as_str() {
            "response.output_item.added" => {
                let item = data.get("item").cloned().unwrap_or(Value::Null);
                if str_at(&item, "type") == Some("function_call") {
                    out.push(StreamEvent::ToolCallStart {
                        id: call_id(&item),
                        name: str_at(&item, "name").unwrap_or_default().to_string(),
                    });
                }
                self.items.insert(index, item);
            }
            "response.output_item.done" => {
                let item = data.get("item").cloned().unwrap_or(Value::Null);
                self.items.insert(index, item);
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let delta = str_at(&data, "delta").unwrap_or_default();
                self.text.entry(index).or_default().push_str(delta);
                out.push(StreamEvent::TextDelta { text: delta.into() });
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let delta = str_at(&data, "delta").unwrap_or_default();
                out.push(StreamEvent::ReasoningDelta { text: delta.into() });
            }
            "response.function_call_arguments.delta" => {
                let delta = str_at(&data, "delta").unwrap_or_default();
                self.arguments.entry(index).or_default().push_str(delta);
                let id = self.items.get(&index).map(call_id).unwrap_or_default();
                out.push(StreamEvent::ToolCallDelta {
                    id,
                    arguments: delta.into(),
                });
            }
            "response.completed" | "response.incomplete" => {
                self.done = Some(data.get("response").cloned().unwrap_or(Value::Null));
            }
            "response.failed" => {
                let response = data.get("response").unwrap_or(&Value::Null);
                let error = response.get("error").unwrap_or(&Value::Null);
                return Err(stream_error(&self.provider, error));
            }
            "error" => {
                return Err(stream_error(
                    &self.provider,
                    data.get("error").unwrap_or(&data),
                ));
            }
            _ => {}
        }
        Ok(out)
    }

    pub(crate) fn finish(mut self) -> Result<Response, LlmError> {
        let Some(response) = self.done.take() else {
            return Err(broken(
                &self.provider,
                "the stream ended before `response.completed`",
            ));
        };
        // The final event carries the whole reply; servers that leave its
        // output empty are answered from the streamed items and deltas.
        let full = response
            .get("output")
            .and_then(Value::as_array)
            .is_some_and(|o| !o.is_empty());
        if full {
            return parse(&self.provider, &response);
        }
        let mut content = Vec::new();
        for (index, mut item) in std::mem::take(&mut self.items) {
            match str_at(&item, "type") {
                Some("message") if !has_content(&item) => {
                    let text = self.text.remove(&index).unwrap_or_default();
                    item["content"] = json!([{"type": "output_text", "text": text}]);
                }
                Some("function_call") if str_at(&item, "arguments").is_none_or(str::is_empty) => {
                    item["arguments"] = json!(self.arguments.remove(&index).unwrap_or_default());
                }
                _ => {}
            }
            content.extend(parts_of(&self.provider, &item)?);
        }
        Ok(finish_response(&self.provider, &response, content))
    }
}

fn call_id(item: &Value) -> String {
    str_at(item, "call_id")
        .or_else(|| str_at(item, "id"))
        .unwrap_or_default()
        .to_string()
}

fn has_content(item: &Value) -> bool {
    item.get("content")
        .and_then(Value::as_array)
        .is_some_and(|c| !c.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::providers::every_part_kind;
    use crate::llm::sse::SseParser;
    use crate::llm::types::{Message, ReasoningEffort, ToolResult, ToolSpec};

    fn endpoint() -> Endpoint<'static> {
        Endpoint {
            base_url: "http://h/v1",
            api_key: Some("sk-test"),
            model: "gpt-5.5",
            max_output: None,
        }
    }

    #[test]
    fn a_conversation_of_every_part_kind_is_sent_as_before() {
        // The JSON the `Value`-tree encoder produced, kept literally: the borrowed encoder must
        // send exactly the same. In short: tool results before the user's text, an item per
        // assistant part, only encrypted OpenAI reasoning, arguments as JSON text.
        let b = build(&endpoint(), &every_part_kind())
            .expect("encodes")
            .json();
        let expected = json!([
            {"content": [{"text": "look at \"this\"", "type": "input_text"}, {"text": "", "type": "input_text"}, {"image_url": "data:image/png;base64,iVBORw0K", "type": "input_image"}, {"image_url": "https://example.com/cat.png", "type": "input_image"}], "role": "user"},
            {"encrypted_content": "enc-1", "id": "rs_1", "summary": [], "type": "reasoning"},
            {"encrypted_content": "enc-2", "summary": [], "type": "reasoning"},
            {"content": "Reading.", "role": "assistant"},
            {"arguments": "{\"path\":\"a.rs\"}", "call_id": "call_1", "name": "read", "type": "function_call"},
            {"arguments": "{\"cmd\":\"ls\"}", "call_id": "run-2", "name": "run", "type": "function_call"},
            {"arguments": "{}", "call_id": "call_3", "name": "noop", "type": "function_call"},
            {"arguments": "[1,\"two\"]", "call_id": "call_4", "name": "list", "type": "function_call"},
            {"content": " Done.", "role": "assistant"},
            {"call_id": "call_1", "output": "fn main() {}", "type": "function_call_output"},
            {"call_id": "run-2", "output": "exit 1\nno such file", "type": "function_call_output"},
            {"call_id": "call_3", "output": "", "type": "function_call_output"},
            {"call_id": "call_4", "output": "[]", "type": "function_call_output"},
            {"content": [{"text": "before", "type": "input_text"}, {"text": "and now?", "type": "input_text"}], "role": "user"},
            {"content": [{"text": "", "type": "input_text"}], "role": "user"},
            {"arguments": "{}", "call_id": "call_5", "name": "read", "type": "function_call"},
            {"call_id": "call_5", "output": "", "type": "function_call_output"},
            {"content": [{"image_url": "https://example.com/dog.png", "type": "input_image"}], "role": "user"},
        ]);
        assert_eq!(b["input"], expected);
    }

    #[test]
    fn request_maps_effort_tokens_and_tools() {
        let mut req = Request::prompt("hi");
        req.system = Some("sys".into());
        req.reasoning_effort = Some(ReasoningEffort::High);
        req.max_tokens = Some(500);
        req.tools = vec![ToolSpec {
            name: "read".into(),
            description: "d".into(),
            parameters: Value::Null,
        }];
        req.tool_choice = ToolChoice::Required;
        let call = build(&endpoint(), &req).expect("encodes");
        assert_eq!(call.url, "http://h/v1/responses");
        assert!(
            call.headers
                .contains(&("authorization", "Bearer sk-test".into()))
        );
        let b = &call.json();
        assert_eq!(b["instructions"], "sys");
        assert_eq!(b["reasoning"]["effort"], "high");
        assert_eq!(b["max_output_tokens"], 500);
        assert_eq!(b["store"], false);
        assert_eq!(b["tool_choice"], "required");
        assert_eq!(b["tools"][0]["parameters"]["type"], "object");
        assert_eq!(
            b["input"],
            json!([{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}])
        );
    }

    #[test]
    fn tool_round_trip_items() {
        let mut req = Request::prompt("go");
        req.messages.push(Message {
            role: Role::Assistant,
            parts: vec![
                Part::Reasoning(Reasoning {
                    text: String::new(),
                    signature: Some("enc".into()),
                    id: Some("rs_1".into()),
                    wire: Some(Wire::OpenAi),
                }),
                Part::ToolCall(ToolCall {
                    id: "call_1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                    signature: None,
                }),
            ],
        });
        req.messages.push(Message::tool_results([ToolResult {
            call_id: "call_1".into(),
            name: "read".into(),
            content: "data".into(),
            is_error: false,
        }]));
        let b = build(&endpoint(), &req).expect("encodes").json();
        assert_eq!(
            b["input"][1],
            json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"})
        );
        assert_eq!(
            b["input"][2],
            json!({"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a\"}"})
        );
        assert_eq!(
            b["input"][3],
            json!({"type": "function_call_output", "call_id": "call_1", "output": "data"})
        );
    }

    #[test]
    fn parses_output_items_and_usage() {
        let body = json!({
            "id": "resp_1", "model": "gpt-5.5", "status": "completed",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thought"}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a\"}"},
            ],
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 60},
                      "output_tokens": 50, "output_tokens_details": {"reasoning_tokens": 30}},
        });
        let r = parse("openai", &body).expect("parse");
        assert_eq!(r.text(), "hi");
        assert_eq!(r.reasoning(), "thought");
        assert_eq!(r.tool_calls()[0].id, "call_1");
        assert_eq!(r.finish, FinishReason::ToolUse);
        assert_eq!(
            r.usage,
            Usage {
                input: 100,
                output: 50,
                reasoning: 30,
                cache_read: 60,
                cache_write: 0
            }
        );
        let cut = json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []});
        assert_eq!(
            parse("openai", &cut).expect("parse").finish,
            FinishReason::MaxTokens
        );
    }

    #[test]
    fn a_stream_assembles_from_deltas_when_the_final_output_is_empty() {
        let stream = "event: response.created
data: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\"}}

event: response.output_item.added
data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"message\",\"id\":\"m1\",\"content\":[]}}

event: response.output_text.delta
data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"Hel\"}

event: response.output_text.delta
data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"lo\"}

event: response.output_item.added
data: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"read\",\"arguments\":\"\"}}

event: response.function_call_arguments.delta
data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":1,\"delta\":\"{}\"}

event: response.completed
data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":4}}}

";
        let mut parser = SseParser::new();
        let mut state = StreamState::new("openai".into());
        let mut deltas = Vec::new();
        for e in parser.feed(stream.as_bytes()) {
            deltas.extend(state.event(&e).expect("event"));
        }
        assert_eq!(deltas[0], StreamEvent::TextDelta { text: "Hel".into() });
        assert!(deltas.contains(&StreamEvent::ToolCallDelta {
            id: "call_1".into(),
            arguments: "{}".into()
        }));
        let r = state.finish().expect("complete");
        assert_eq!(r.text(), "Hello");
        assert_eq!(r.tool_calls()[0].name, "read");
        assert_eq!(r.usage.output, 4);
        assert_eq!(
            StreamState::new("openai".into())
                .finish()
                .map_err(|e| e.code()),
            Err("llm.broken_stream")
        );
    }
}
