//! One module per provider API, each translating the neutral model of
//! `types.rs` to its native JSON and back. They are pure: building a request,
//! parsing a reply and decoding stream events touch no network, so each is
//! unit-tested on JSON alone. `transport.rs` does the HTTP.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::LlmError;
use super::sse::SseEvent;
use super::types::{Request, Response, StreamEvent};

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

    /// The HTTP request for `request` (whose model is already resolved).
    pub(crate) fn build(self, target: &Endpoint<'_>, request: &Request) -> HttpCall {
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

/// One HTTP request to make: POST `url` with `headers` and the JSON `body`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HttpCall {
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Value,
}

impl HttpCall {
    /// A call authenticated the OpenAI way (`Authorization: Bearer KEY`),
    /// or with no key at all for local servers that need none.
    pub(crate) fn bearer(
        url: String,
        api_key: Option<&str>,
        body: serde_json::Map<String, Value>,
    ) -> HttpCall {
        HttpCall {
            url,
            headers: api_key
                .map(|key| ("authorization", format!("Bearer {key}")))
                .into_iter()
                .collect(),
            body: Value::Object(body),
        }
    }
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

/// Tool-call arguments as JSON text (what OpenAI-style APIs send).
pub(crate) fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::Null => "{}".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
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
