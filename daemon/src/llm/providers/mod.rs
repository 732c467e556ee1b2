//! One module per provider API, each translating the neutral model of
//! `types.rs` to its native JSON and back. They are pure: building a request,
//! parsing a reply and decoding stream events touch no network, so each is
//! unit-tested on JSON alone. `transport.rs` does the HTTP.

use std::fmt;

use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::LlmError;
use super::sse::SseEvent;
use super::types::{Image, Request, Response, StreamEvent};

pub mod anthropic;
pub mod gemini;
pub mod openai;
pub mod openai_compat;

/// The API a provider speaks (`kind` in settings.toml).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Wire {
    /// Anthropic Messages API (`POST {base}/v1/messages`).
    #[serde(rename = "anthropic")]
    Anthropic,
    /// OpenAI Responses API (`POST {base}/responses`).
    #[serde(rename = "openai")]
    OpenAi,
    /// Gemini `generateContent` (`POST {base}/v1beta/models/{model}:generateContent`).
    #[serde(rename = "gemini")]
    Gemini,
    /// OpenAI-compatible Chat Completions (`POST {base}/chat/completions`):
    /// Ollama, llama.cpp, vLLM, LiteLLM, OpenRouter, and the built-in
    /// kimi, zai, minimax and inception providers.
    #[serde(rename = "openai_compat")]
    OpenAiCompat,
}

impl Wire {
    /// The name used in settings.toml.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Wire::Anthropic => "anthropic",
            Wire::OpenAi => "openai",
            Wire::Gemini => "gemini",
            Wire::OpenAiCompat => "openai_compat",
        }
    }

    /// The HTTP request for `request` (whose model is already resolved),
    /// its body encoded once for all attempts.
    pub(crate) fn build(
        self,
        target: &Endpoint<'_>,
        request: &Request,
    ) -> Result<HttpCall, LlmError> {
        match self {
            Wire::Anthropic => anthropic::build(target, request),
            Wire::OpenAi => openai::build(target, request),
            Wire::Gemini => gemini::build(target, request),
            Wire::OpenAiCompat => openai_compat::build(target, request),
        }
    }

    /// Parses a complete (non-streaming) reply body.
    pub(crate) fn parse(self, provider: &str, body: &Value) -> Result<Response, LlmError> {
        match self {
            Wire::Anthropic => anthropic::parse(provider, body),
            Wire::OpenAi => openai::parse(provider, body),
            Wire::Gemini => gemini::parse(provider, body),
            Wire::OpenAiCompat => openai_compat::parse(provider, body),
        }
    }

    /// A decoder for one streamed reply.
    pub(crate) fn decoder(self, provider: &str) -> Decoder {
        let provider = provider.to_string();
        match self {
            Wire::Anthropic => Decoder::Anthropic(anthropic::StreamState::new(provider)),
            Wire::OpenAi => Decoder::OpenAi(openai::StreamState::new(provider)),
            Wire::Gemini => Decoder::Gemini(gemini::StreamState::new(provider)),
            Wire::OpenAiCompat => Decoder::OpenAiCompat(openai_compat::StreamState::new(provider)),
        }
    }

    /// The provider's error message in an error reply body (every API nests
    /// it under `error.message`, give or take), for error reports.
    pub(crate) fn error_message(body: &Value) -> Option<String> {
        let error = body.get("error").unwrap_or(body);
        match error {
            Value::String(s) => Some(s.clone()),
            _ => error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string),
        }
    }
}

/// Where a request goes and as which model.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Endpoint<'a> {
    /// The base URL, without a trailing slash.
    pub base_url: &'a str,
    pub api_key: Option<&'a str>,
    /// The model id to send.
    pub model: &'a str,
    /// The catalog's output limit for the model, if known.
    pub max_output: Option<u32>,
}

/// One HTTP request to make: POST `url` with `headers` and `body`, the
/// request's JSON already encoded (retries send the same bytes again).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HttpCall {
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl HttpCall {
    /// A call authenticated the OpenAI way (`Authorization: Bearer KEY`),
    /// or with no key at all for local servers that need none.
    pub(crate) fn bearer(url: String, api_key: Option<&str>, body: Vec<u8>) -> HttpCall {
        HttpCall {
            url,
            headers: api_key
                .map(|key| ("authorization", format!("Bearer {key}")))
                .into_iter()
                .collect(),
            body,
        }
    }

    /// The body parsed back, for tests to inspect.
    #[cfg(test)]
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the body is JSON")
    }
}

/// Encodes a request body: the small per-request `fields` (model, limits,
/// tools...) plus the conversation under `key`, written straight from the
/// borrowed request by `conversation`'s `Serialize`.
///
/// Why not one `Value` tree: every turn of an agent sends the whole
/// conversation, and a tree of it allocates (and then frees) several small
/// objects per message part. That cost grows with the session, and glibc
/// makes it worse: the small frees pile up in its fastbins, and the next
/// large allocation walks them all. Serialising from borrowed structs keeps
/// each turn's overhead flat: one growing buffer, whatever the history.
pub(crate) fn encode_body<C: Serialize>(
    fields: &Map<String, Value>,
    key: &str,
    conversation: &C,
) -> Result<Vec<u8>, LlmError> {
    struct Body<'a, C> {
        fields: &'a Map<String, Value>,
        key: &'a str,
        conversation: &'a C,
    }
    impl<C: Serialize> Serialize for Body<'_, C> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(Some(self.fields.len() + 1))?;
            for (k, v) in self.fields {
                map.serialize_entry(k, v)?;
            }
            map.serialize_entry(self.key, self.conversation)?;
            map.end()
        }
    }
    let body = Body {
        fields,
        key,
        conversation,
    };
    serde_json::to_vec(&body)
        .map_err(|e| LlmError::Config(format!("cannot encode the request: {e}")))
}

/// The state of one streamed reply, per API.
#[derive(Debug)]
pub(crate) enum Decoder {
    Anthropic(anthropic::StreamState),
    OpenAi(openai::StreamState),
    Gemini(gemini::StreamState),
    OpenAiCompat(openai_compat::StreamState),
}

impl Decoder {
    /// Takes one server-sent event; returns the deltas it carried.
    pub(crate) fn event(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, LlmError> {
        match self {
            Decoder::Anthropic(s) => s.event(event),
            Decoder::OpenAi(s) => s.event(event),
            Decoder::Gemini(s) => s.event(event),
            Decoder::OpenAiCompat(s) => s.event(event),
        }
    }

    /// The stream ended: the assembled reply, or `BrokenStream` when the
    /// final event never came.
    pub(crate) fn finish(self) -> Result<Response, LlmError> {
        match self {
            Decoder::Anthropic(s) => s.finish(),
            Decoder::OpenAi(s) => s.finish(),
            Decoder::Gemini(s) => s.finish(),
            Decoder::OpenAiCompat(s) => s.finish(),
        }
    }
}

// Small helpers for reading provider JSON, shared by the modules.

pub(crate) fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

pub(crate) fn u64_at(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

pub(crate) fn invalid(provider: &str, message: impl Into<String>) -> LlmError {
    LlmError::InvalidResponse {
        provider: provider.to_string(),
        message: message.into(),
    }
}

pub(crate) fn broken(provider: &str, message: impl Into<String>) -> LlmError {
    LlmError::BrokenStream {
        provider: provider.to_string(),
        message: message.into(),
    }
}

/// Parses one event's JSON data; bad JSON is an invalid reply.
pub(crate) fn event_json(provider: &str, event: &SseEvent) -> Result<Value, LlmError> {
    serde_json::from_str(&event.data)
        .map_err(|e| invalid(provider, format!("stream event is not JSON ({e})")))
}

/// Tool-call arguments as JSON text (what OpenAI-style APIs send): a JSON
/// string is sent as it is, null as `{}`, anything else encoded. Encoded
/// through `collect_str`, which serde_json writes straight into the body
/// (no string per call per turn).
pub(crate) struct ArgumentsText<'a>(pub &'a Value);

impl Serialize for ArgumentsText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Null => serializer.serialize_str("{}"),
            Value::String(s) => serializer.serialize_str(s),
            // `Value`'s `Display` is its compact JSON.
            other => serializer.collect_str(other),
        }
    }
}

/// An image as a URL (what OpenAI-style APIs send): a `data:` URL for
/// inline bytes, written into the body without an intermediate string.
pub(crate) struct ImageUrl<'a>(pub &'a Image);

impl Serialize for ImageUrl<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl fmt::Display for ImageUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Image::Base64 { media_type, data } => write!(f, "data:{media_type};base64,{data}"),
            Image::Url { url } => f.write_str(url),
        }
    }
}

/// Tool-call arguments from JSON text; empty text is `{}`.
pub(crate) fn parse_arguments(provider: &str, text: &str) -> Result<Value, LlmError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(text)
        .map_err(|e| invalid(provider, format!("tool-call arguments are not JSON ({e})")))
}

/// A tool's parameter schema, defaulting to an empty object schema.
pub(crate) fn schema_or_empty(parameters: &Value) -> Value {
    if parameters.is_null() {
        serde_json::json!({"type": "object", "properties": {}})
    } else {
        parameters.clone()
    }
}

/// A conversation with every kind of part each API must translate: texts
/// (one empty), both kinds of image, tool calls whose arguments are an
/// object, a JSON string, null and an array, tool results with and without
/// an error, reasoning of each wire and of none, messages that end up empty.
#[cfg(test)]
pub(crate) fn every_part_kind() -> Request {
    use super::types::{Image, Message, Part, Reasoning, Role, ToolCall, ToolResult};
    use serde_json::json;

    let reasoning = |text: &str, signature: Option<&str>, id: Option<&str>, wire| {
        Part::Reasoning(Reasoning {
            text: text.into(),
            signature: signature.map(Into::into),
            id: id.map(Into::into),
            wire,
        })
    };
    let call = |id: &str, name: &str, arguments, signature: Option<&str>| {
        Part::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            signature: signature.map(Into::into),
        })
    };
    let result = |call_id: &str, name: &str, content: &str, is_error| {
        Part::ToolResult(ToolResult {
            call_id: call_id.into(),
            name: name.into(),
            content: content.into(),
            is_error,
        })
    };
    let mut request = Request::prompt("unused");
    request.system = Some("be brief".into());
    request.messages = vec![
        Message {
            role: Role::User,
            parts: vec![
                Part::Text("look at \"this\"".into()),
                Part::Text(String::new()),
                Part::Image(Image::Base64 {
                    media_type: "image/png".into(),
                    data: "iVBORw0K".into(),
                }),
                Part::Image(Image::Url {
                    url: "https://example.com/cat.png".into(),
                }),
            ],
        },
        Message {
            role: Role::Assistant,
            parts: vec![
                reasoning("need the file", Some("sig-a"), None, Some(Wire::Anthropic)),
                reasoning("", Some("opaque"), Some("redacted"), Some(Wire::Anthropic)),
                reasoning("unsigned", None, None, Some(Wire::Anthropic)),
                reasoning("summary", Some("enc-1"), Some("rs_1"), Some(Wire::OpenAi)),
                reasoning("", Some("enc-2"), None, Some(Wire::OpenAi)),
                reasoning("thought", Some("g"), None, Some(Wire::Gemini)),
                reasoning("local", None, None, None),
                Part::Text(String::new()),
                Part::Text("Reading.".into()),
                call("call_1", "read", json!({"path": "a.rs"}), Some("ts-1")),
                call("run-2", "run", json!("{\"cmd\":\"ls\"}"), None),
                call("call_3", "noop", Value::Null, None),
                call("call_4", "list", json!([1, "two"]), None),
                Part::Text(" Done.".into()),
            ],
        },
        Message {
            role: Role::User,
            parts: vec![
                Part::Text("before".into()),
                result("call_1", "read", "fn main() {}", false),
                result("run-2", "run", "exit 1\nno such file", true),
                result("call_3", "noop", "", false),
                result("call_4", "list", "[]", false),
                Part::Text("and now?".into()),
            ],
        },
        Message {
            role: Role::Assistant,
            parts: vec![Part::Text(String::new())],
        },
        Message {
            role: Role::User,
            parts: vec![Part::Text(String::new())],
        },
        Message {
            role: Role::Assistant,
            parts: vec![
                reasoning("only thinking", Some("sig-b"), None, Some(Wire::Anthropic)),
                call("call_5", "read", json!({}), None),
            ],
        },
        Message {
            role: Role::User,
            parts: vec![
                result("call_5", "read", "", false),
                Part::Image(Image::Url {
                    url: "https://example.com/dog.png".into(),
                }),
            ],
        },
    ];
    request
}
