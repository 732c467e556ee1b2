//! Gemini `generateContent`: `POST {GEMINI_BASE_URL}/v1beta/models/{model}:generateContent`
//! (streaming: `:streamGenerateContent?alt=sse`) with `x-goog-api-key`.
//!
//! - `reasoning_effort` → `generationConfig.thinkingConfig.thinkingBudget`
//!   (with `includeThoughts`, so thought summaries come back as reasoning);
//!   `max_tokens` → `generationConfig.maxOutputTokens`; `speed` is ignored.
//! - Tool parameters go as `parametersJsonSchema` (full JSON Schema, not the
//!   OpenAPI subset of `parameters`).
//! - Function calls may carry no id; Weft then names them `{name}-{n}`.
//!   Results go back as `functionResponse` parts matched by name (and id).
//!   Thought signatures ride on the [`ToolCall`] and are sent back with it,
//!   as Gemini 3 requires.
//! - Usage: `promptTokenCount` includes `cachedContentTokenCount`; thoughts
//!   (`thoughtsTokenCount`) are added to `output`.
//! - A stream has no end marker: it is complete when a chunk carried a
//!   `finishReason`.

use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};
use serde_json::{Map, Value, json};

use super::{
    Endpoint, HttpCall, broken, encode_body, event_json, invalid, schema_or_empty, str_at, u64_at,
};
use crate::llm::error::LlmError;
use crate::llm::sse::SseEvent;
use crate::llm::types::{
    FinishReason, Image, Part, Reasoning, Request, Response, Role, StreamEvent, ToolCall,
    ToolChoice, Usage,
};

pub(crate) fn build(target: &Endpoint<'_>, request: &Request) -> Result<HttpCall, LlmError> {
    let url = if request.stream {
        format!(
            "{}/v1beta/models/{}:streamGenerateContent?alt=sse",
            target.base_url, target.model
        )
    } else {
        format!(
            "{}/v1beta/models/{}:generateContent",
            target.base_url, target.model
        )
    };
    let mut body = Map::new();
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}]}),
        );
    }
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "parametersJsonSchema": schema_or_empty(&t.parameters),
                })
            })
            .collect();
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations}]),
        );
        let config = match &request.tool_choice {
            ToolChoice::Auto => None,
            ToolChoice::None => Some(json!({"mode": "NONE"})),
            ToolChoice::Required => Some(json!({"mode": "ANY"})),
            ToolChoice::Tool(name) => Some(json!({"mode": "ANY", "allowedFunctionNames": [name]})),
        };
        if let Some(config) = config {
            body.insert(
                "toolConfig".into(),
                json!({"functionCallingConfig": config}),
            );
        }
    }
    let mut generation = Map::new();
    if let Some(max) = request.max_tokens {
        generation.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(t) = request.temperature {
        generation.insert("temperature".into(), json!(t));
    }
    if let Some(effort) = request.reasoning_effort {
        generation.insert(
            "thinkingConfig".into(),
            json!({"thinkingBudget": effort.budget_tokens(), "includeThoughts": true}),
        );
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    let mut headers = Vec::new();
    if let Some(key) = target.api_key {
        headers.push(("x-goog-api-key", key.to_string()));
    }
    Ok(HttpCall {
        url,
        headers,
        body: encode_body(&body, "contents", &Contents(request))?,
    })
}

/// The conversation as `contents`, serialised from the borrowed request
/// (see [`encode_body`]); a message left with no parts is skipped.
struct Contents<'a>(&'a Request);

impl Serialize for Contents<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for message in &self.0.messages {
            if !message.parts.iter().any(|p| part_json(p).is_some()) {
                continue;
            }
            seq.serialize_element(&Content {
                role: match message.role {
                    Role::User => "user",
                    Role::Assistant => "model",
                },
                parts: PartsJson(&message.parts),
            })?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct Content<'a> {
    role: &'static str,
    parts: PartsJson<'a>,
}

struct PartsJson<'a>(&'a [Part]);

impl Serialize for PartsJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().filter_map(part_json))
    }
}

/// One part, borrowing from the neutral part it comes from. Each variant is
/// an object with its own key (`text`, `inlineData`, ...).
#[derive(Serialize)]
#[serde(untagged)]
enum PartJson<'a> {
    Text {
        text: &'a str,
    },
    InlineData {
        #[serde(rename = "inlineData")]
        inline_data: Blob<'a>,
    },
    FileData {
        #[serde(rename = "fileData")]
        file_data: FileData<'a>,
    },
    FunctionCall {
        #[serde(rename = "functionCall")]
        function_call: FunctionCall<'a>,
        #[serde(rename = "thoughtSignature", skip_serializing_if = "Option::is_none")]
        thought_signature: Option<&'a str>,
    },
    FunctionResponse {
        #[serde(rename = "functionResponse")]
        function_response: FunctionResponse<'a>,
    },
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Blob<'a> {
    mime_type: &'a str,
    data: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FileData<'a> {
    file_uri: &'a str,
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    name: &'a str,
    args: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
}

#[derive(Serialize)]
struct FunctionResponse<'a> {
    name: &'a str,
    response: ResponseJson<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
}

/// `{"content": ...}`, or `{"error": ...}` for a failed call.
#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
enum ResponseJson<'a> {
    Content(&'a str),
    Error(&'a str),
}

fn part_json(part: &Part) -> Option<PartJson<'_>> {
    match part {
        Part::Text(text) if text.is_empty() => None,
        Part::Text(text) => Some(PartJson::Text { text }),
        Part::Image(Image::Base64 { media_type, data }) => Some(PartJson::InlineData {
            inline_data: Blob {
                mime_type: media_type,
                data,
            },
        }),
        Part::Image(Image::Url { url }) => Some(PartJson::FileData {
            file_data: FileData { file_uri: url },
        }),
        Part::ToolCall(call) => Some(PartJson::FunctionCall {
            function_call: FunctionCall {
                name: &call.name,
                args: &call.arguments,
                id: (!is_generated_id(&call.id, &call.name)).then_some(call.id.as_str()),
            },
            thought_signature: call.signature.as_deref(),
        }),
        Part::ToolResult(result) => Some(PartJson::FunctionResponse {
            function_response: FunctionResponse {
                name: &result.name,
                response: if result.is_error {
                    ResponseJson::Error(&result.content)
                } else {
                    ResponseJson::Content(&result.content)
                },
                id: (!is_generated_id(&result.call_id, &result.name))
                    .then_some(result.call_id.as_str()),
            },
        }),
        // Thought summaries are not sent back: the signatures that matter
        // travel with the function calls.
        Part::Reasoning(_) => None,
    }
}

/// Ids Weft made up for calls Gemini sent without one (`{name}-{n}`).
fn is_generated_id(id: &str, name: &str) -> bool {
    id.strip_prefix(name)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

pub(crate) fn parse(provider: &str, body: &Value) -> Result<Response, LlmError> {
    let mut state = StreamState::new(provider.to_string());
    state.chunk(body, &mut Vec::new())?;
    if state.candidates == 0 {
        let reason = body
            .get("promptFeedback")
            .and_then(|f| str_at(f, "blockReason"));
        return match reason {
            Some(reason) => Ok(Response {
                finish: FinishReason::ContentFilter,
                ..state.response(Some(reason))
            }),
            None => Err(invalid(provider, "the reply has no candidates")),
        };
    }
    Ok(state.response(None))
}

fn usage(u: &Value) -> Usage {
    let thoughts = u64_at(u, "thoughtsTokenCount");
    Usage {
        input: u64_at(u, "promptTokenCount"),
        output: u64_at(u, "candidatesTokenCount") + thoughts,
        reasoning: thoughts,
        cache_read: u64_at(u, "cachedContentTokenCount"),
        cache_write: 0,
    }
}

fn finish(reason: &str) -> FinishReason {
    match reason {
        "STOP" | "FINISH_REASON_UNSPECIFIED" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::MaxTokens,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" => {
            FinishReason::ContentFilter
        }
        other => FinishReason::Other(other.to_string()),
    }
}

/// The state of one streamed reply; a non-streaming reply is one chunk.
#[derive(Debug)]
pub(crate) struct StreamState {
    provider: String,
    id: String,
    model: String,
    content: Vec<Part>,
    usage: Usage,
    finish: Option<String>,
    candidates: usize,
    calls: usize,
}

impl StreamState {
    pub(crate) fn new(provider: String) -> StreamState {
        StreamState {
            provider,
            id: String::new(),
            model: String::new(),
            content: Vec::new(),
            usage: Usage::default(),
            finish: None,
            candidates: 0,
            calls: 0,
        }
    }

    pub(crate) fn event(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, LlmError> {
        let data = event_json(&self.provider, event)?;
        if let Some(error) = data.get("error") {
            return Err(stream_error(&self.provider, error));
        }
        let mut out = Vec::new();
        self.chunk(&data, &mut out)?;
        Ok(out)
    }

    /// Folds one `GenerateContentResponse` into the reply.
    fn chunk(&mut self, data: &Value, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if let Some(id) = str_at(data, "responseId") {
            self.id = id.to_string();
        }
        if let Some(model) = str_at(data, "modelVersion") {
            self.model = model.to_string();
        }
        if let Some(u) = data.get("usageMetadata") {
            self.usage = usage(u);
        }
        let Some(candidate) = data
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            return Ok(());
        };
        self.candidates += 1;
        let parts = candidate
            .get("content")
            .and_then(|c| c.get("parts"))
            .and_then(Value::as_array);
        for p in parts.into_iter().flatten() {
            self.part(p, out)?;
        }
        if let Some(reason) = str_at(candidate, "finishReason") {
            self.finish = Some(reason.to_string());
        }
        Ok(())
    }

    fn part(&mut self, p: &Value, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if let Some(call) = p.get("functionCall") {
            let name = str_at(call, "name")
                .ok_or_else(|| invalid(&self.provider, "a function call without a name"))?
                .to_string();
            self.calls += 1;
            let id =
                str_at(call, "id").map_or_else(|| format!("{name}-{}", self.calls), str::to_string);
            let arguments = call.get("args").cloned().unwrap_or_else(|| json!({}));
            out.push(StreamEvent::ToolCallStart {
                id: id.clone(),
                name: name.clone(),
            });
            out.push(StreamEvent::ToolCallDelta {
                id: id.clone(),
                arguments: arguments.to_string(),
            });
            self.content.push(Part::ToolCall(ToolCall {
                id,
                name,
                arguments,
                signature: str_at(p, "thoughtSignature").map(str::to_string),
            }));
        } else if let Some(text) = str_at(p, "text") {
            let thought = p.get("thought").and_then(Value::as_bool) == Some(true);
            if thought {
                out.push(StreamEvent::ReasoningDelta { text: text.into() });
                match self.content.last_mut() {
                    Some(Part::Reasoning(r)) => r.text.push_str(text),
                    _ => self.content.push(Part::Reasoning(Reasoning {
                        text: text.to_string(),
                        signature: None,
                        id: None,
                        wire: Some(super::Wire::Gemini),
                    })),
                }
            } else {
                out.push(StreamEvent::TextDelta { text: text.into() });
                match self.content.last_mut() {
                    Some(Part::Text(t)) => t.push_str(text),
                    _ => self.content.push(Part::Text(text.to_string())),
                }
            }
        }
        Ok(())
    }

    fn response(self, finish_override: Option<&str>) -> Response {
        let has_calls = self.content.iter().any(|p| matches!(p, Part::ToolCall(_)));
        let reason = finish_override
            .map(str::to_string)
            .or(self.finish)
            .unwrap_or_default();
        Response {
            id: self.id,
            model: self.model,
            provider: self.provider,
            content: self.content,
            usage: self.usage,
            finish: if has_calls {
                FinishReason::ToolUse
            } else {
                finish(&reason)
            },
        }
    }

    pub(crate) fn finish(self) -> Result<Response, LlmError> {
        if self.finish.is_none() {
            return Err(broken(
                &self.provider,
                "the stream ended before a chunk with `finishReason`",
            ));
        }
        Ok(self.response(None))
    }
}

/// An error object inside a stream, classified by its status.
fn stream_error(provider: &str, error: &Value) -> LlmError {
    let message = str_at(error, "message").unwrap_or("error").to_string();
    let provider = provider.to_string();
    match (u64_at(error, "code"), str_at(error, "status")) {
        (429, _) | (_, Some("RESOURCE_EXHAUSTED")) => LlmError::RateLimited {
            provider,
            retry_after: None,
            message,
        },
        (401 | 403, _) => LlmError::Auth {
            provider,
            status: 401,
            message,
        },
        (400, _) => LlmError::BadRequest {
            provider,
            status: 400,
            message,
        },
        (code, _) => LlmError::Server {
            provider,
            status: u16::try_from(code).unwrap_or(500).max(500),
            message,
        },
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
            api_key: Some("g-key"),
            model: "gemini-3-flash-preview",
            max_output: None,
        }
    }

    #[test]
    fn a_conversation_of_every_part_kind_is_sent_as_before() {
        // The JSON the `Value`-tree encoder produced, kept literally: the borrowed encoder must
        // send exactly the same. In short: no reasoning, empty texts or messages; arguments as they
        // are, no ids Weft made up.
        let b = build(&endpoint(), &every_part_kind())
            .expect("encodes")
            .json();
        let expected = json!([
            {"parts": [{"text": "look at \"this\""}, {"inlineData": {"data": "iVBORw0K", "mimeType": "image/png"}}, {"fileData": {"fileUri": "https://example.com/cat.png"}}], "role": "user"},
            {"parts": [{"text": "Reading."}, {"functionCall": {"args": {"path": "a.rs"}, "id": "call_1", "name": "read"}, "thoughtSignature": "ts-1"}, {"functionCall": {"args": "{\"cmd\":\"ls\"}", "name": "run"}}, {"functionCall": {"args": null, "id": "call_3", "name": "noop"}}, {"functionCall": {"args": [1, "two"], "id": "call_4", "name": "list"}}, {"text": " Done."}], "role": "model"},
            {"parts": [{"text": "before"}, {"functionResponse": {"id": "call_1", "name": "read", "response": {"content": "fn main() {}"}}}, {"functionResponse": {"name": "run", "response": {"error": "exit 1\nno such file"}}}, {"functionResponse": {"id": "call_3", "name": "noop", "response": {"content": ""}}}, {"functionResponse": {"id": "call_4", "name": "list", "response": {"content": "[]"}}}, {"text": "and now?"}], "role": "user"},
            {"parts": [{"functionCall": {"args": {}, "id": "call_5", "name": "read"}}], "role": "model"},
            {"parts": [{"functionResponse": {"id": "call_5", "name": "read", "response": {"content": ""}}}, {"fileData": {"fileUri": "https://example.com/dog.png"}}], "role": "user"},
        ]);
        assert_eq!(b["contents"], expected);
    }

    #[test]
    fn request_maps_effort_tokens_tools_and_url() {
        let mut req = Request::prompt("hi");
        req.system = Some("sys".into());
        req.reasoning_effort = Some(ReasoningEffort::Low);
        req.max_tokens = Some(100);
        req.tools = vec![ToolSpec {
            name: "read".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        }];
        let call = build(&endpoint(), &req).expect("encodes");
        assert_eq!(
            call.url,
            "http://h/v1beta/models/gemini-3-flash-preview:generateContent"
        );
        assert!(call.headers.contains(&("x-goog-api-key", "g-key".into())));
        let b = &call.json();
        assert_eq!(b["systemInstruction"]["parts"][0]["text"], "sys");
        assert_eq!(
            b["generationConfig"]["thinkingConfig"]["thinkingBudget"],
            1024
        );
        assert_eq!(b["generationConfig"]["maxOutputTokens"], 100);
        assert_eq!(b["tools"][0]["functionDeclarations"][0]["name"], "read");
        assert_eq!(
            b["contents"],
            json!([{"role": "user", "parts": [{"text": "hi"}]}])
        );
        req.stream = true;
        assert!(
            build(&endpoint(), &req)
                .expect("encodes")
                .url
                .ends_with(":streamGenerateContent?alt=sse")
        );
    }

    #[test]
    fn calls_without_ids_round_trip_by_name() {
        let body = json!({
            "candidates": [{"content": {"role": "model", "parts": [
                {"text": "plan", "thought": true},
                {"functionCall": {"name": "read", "args": {"path": "a"}}, "thoughtSignature": "sig"},
            ]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "thoughtsTokenCount": 5, "cachedContentTokenCount": 40},
            "modelVersion": "gemini-x", "responseId": "r1",
        });
        let r = parse("gemini", &body).expect("parse");
        assert_eq!(r.finish, FinishReason::ToolUse);
        assert_eq!(r.reasoning(), "plan");
        assert_eq!(
            r.usage,
            Usage {
                input: 100,
                output: 15,
                reasoning: 5,
                cache_read: 40,
                cache_write: 0
            }
        );
        let call = r.tool_calls()[0].clone();
        assert_eq!(call.id, "read-1");
        let mut req = Request::prompt("go");
        req.messages.push(r.to_message());
        req.messages.push(Message::tool_results([ToolResult {
            call_id: call.id.clone(),
            name: "read".into(),
            content: "data".into(),
            is_error: false,
        }]));
        let b = build(&endpoint(), &req).expect("encodes").json();
        assert_eq!(
            b["contents"][1],
            json!({"role": "model", "parts": [{"functionCall": {"name": "read", "args": {"path": "a"}}, "thoughtSignature": "sig"}]})
        );
        assert_eq!(
            b["contents"][2],
            json!({"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {"content": "data"}}}]})
        );
    }

    #[test]
    fn a_stream_is_complete_only_with_a_finish_reason() {
        let stream = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}]}}]}\r\n\r\n\
                      data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"lo\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":3,\"candidatesTokenCount\":2}}\r\n\r\n";
        let mut parser = SseParser::new();
        let events = parser.feed(stream.as_bytes());
        let mut state = StreamState::new("gemini".into());
        let first = state.event(&events[0]).expect("chunk");
        assert_eq!(first, vec![StreamEvent::TextDelta { text: "Hel".into() }]);
        let mut cut = StreamState::new("gemini".into());
        cut.event(&events[0]).expect("chunk");
        assert_eq!(cut.finish().map_err(|e| e.code()), Err("llm.broken_stream"));
        state.event(&events[1]).expect("chunk");
        let r = state.finish().expect("complete");
        assert_eq!(r.text(), "Hello");
        assert_eq!(r.finish, FinishReason::Stop);
        assert_eq!(r.usage.output, 2);
    }
}
