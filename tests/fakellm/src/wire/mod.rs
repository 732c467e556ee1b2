//! The four providers' wire formats: which path is whose, where the API key
//! is, what the user said last, and how a turn or an error looks on the wire.

mod anthropic;
mod gemini;
mod openai_chat;
mod openai_responses;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::http::Request;
use crate::turn::{Ctx, SseEvent, Turn};

/// The provider API a request was addressed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Wire {
    /// `POST …/v1/messages`
    #[serde(rename = "anthropic")]
    Anthropic,
    /// `POST …/v1/responses`
    #[serde(rename = "openai_responses")]
    OpenAiResponses,
    /// `POST …/v1/chat/completions`
    #[serde(rename = "openai_chat")]
    OpenAiChat,
    /// `POST …/models/{model}:generateContent` and `:streamGenerateContent`
    #[serde(rename = "gemini")]
    Gemini,
}

/// How the reply body is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// One JSON document.
    Whole,
    /// Server-sent events.
    Sse,
    /// Gemini's `:streamGenerateContent` without `alt=sse`: the chunks as one JSON array.
    JsonArray,
}

impl Wire {
    /// The provider whose endpoint this path (without query) names. Any
    /// prefix before the endpoint's own path is allowed.
    pub(crate) fn from_route(route: &str) -> Option<Wire> {
        if route.ends_with("/v1/messages") {
            Some(Wire::Anthropic)
        } else if route.ends_with("/responses") {
            Some(Wire::OpenAiResponses)
        } else if route.ends_with("/chat/completions") {
            Some(Wire::OpenAiChat)
        } else if gemini::model_and_method(route).is_some() {
            Some(Wire::Gemini)
        } else {
            None
        }
    }

    /// The API key, from where this provider's clients send it.
    pub(crate) fn api_key(self, request: &Request) -> Option<String> {
        let key = match self {
            Wire::Anthropic => request.header("x-api-key").map(str::to_owned),
            Wire::OpenAiResponses | Wire::OpenAiChat => request
                .header("authorization")
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(|k| k.trim().to_owned()),
            Wire::Gemini => request
                .header("x-goog-api-key")
                .map(str::to_owned)
                .or_else(|| request.query("key")),
        };
        key.filter(|k| !k.is_empty())
    }

    /// A complaint about the request that the real API would reject it for,
    /// beyond a missing key: `(status, message)`.
    pub(crate) fn reject(self, request: &Request, body: &Value) -> Option<(u16, String)> {
        if self == Wire::Anthropic && request.header("anthropic-version").is_none() {
            return Some((400, "anthropic-version: header is required".to_owned()));
        }
        if !body.is_object() {
            return Some((400, "the request body is not a JSON object".to_owned()));
        }
        None
    }

    /// How the reply to this request is framed.
    pub(crate) fn framing(self, request: &Request, body: &Value) -> Framing {
        match self {
            Wire::Gemini => match gemini::model_and_method(request.route()) {
                Some((_, "streamGenerateContent"))
                    if request.query("alt").as_deref() == Some("sse") =>
                {
                    Framing::Sse
                }
                Some((_, "streamGenerateContent")) => Framing::JsonArray,
                _ => Framing::Whole,
            },
            _ if body.get("stream") == Some(&Value::Bool(true)) => Framing::Sse,
            _ => Framing::Whole,
        }
    }

    /// The model the request asked for.
    pub(crate) fn model(self, request: &Request, body: &Value) -> String {
        match self {
            Wire::Gemini => gemini::model_and_method(request.route())
                .map(|(model, _)| model.to_owned())
                .unwrap_or_default(),
            _ => body
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        }
    }

    /// The text of the last user message that has any text (its text parts
    /// joined by newlines); tool results are not text.
    pub(crate) fn last_user_text(self, body: &Value) -> Option<String> {
        match self {
            Wire::Anthropic => anthropic::last_user_text(body),
            Wire::OpenAiResponses => openai_responses::last_user_text(body),
            Wire::OpenAiChat => openai_chat::last_user_text(body),
            Wire::Gemini => gemini::last_user_text(body),
        }
    }

    /// Whether Chat Completions should end the stream with a usage chunk.
    pub(crate) fn include_usage(self, body: &Value) -> bool {
        self == Wire::OpenAiChat
            && body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true))
    }

    /// The non-streaming reply body.
    pub(crate) fn body(self, turn: &Turn, ctx: &Ctx) -> Value {
        match self {
            Wire::Anthropic => anthropic::body(turn, ctx),
            Wire::OpenAiResponses => openai_responses::body(turn, ctx),
            Wire::OpenAiChat => openai_chat::body(turn, ctx),
            Wire::Gemini => gemini::body(turn, ctx),
        }
    }

    /// The streamed reply, event by event; the last event is the one that
    /// tells the client the reply is complete.
    pub(crate) fn events(self, turn: &Turn, ctx: &Ctx) -> Vec<SseEvent> {
        match self {
            Wire::Anthropic => anthropic::events(turn, ctx),
            Wire::OpenAiResponses => openai_responses::events(turn, ctx),
            Wire::OpenAiChat => openai_chat::events(turn, ctx),
            Wire::Gemini => gemini::events(turn, ctx),
        }
    }

    /// An error body in this provider's format, its type chosen from the status.
    pub(crate) fn error(self, status: u16, message: &str) -> Value {
        match self {
            Wire::Anthropic => anthropic::error(status, message),
            Wire::OpenAiResponses | Wire::OpenAiChat => openai_error(status, message),
            Wire::Gemini => gemini::error(status, message),
        }
    }

    /// Line ending of this provider's SSE: Gemini's is CRLF, the others LF.
    pub(crate) fn line_end(self) -> &'static str {
        match self {
            Wire::Gemini => "\r\n",
            _ => "\n",
        }
    }
}

/// Both OpenAI APIs share one error shape: `{"error":{"message","type","param","code"}}`.
fn openai_error(status: u16, message: &str) -> Value {
    let (kind, code) = match status {
        401 => ("invalid_request_error", Value::from("invalid_api_key")),
        403 => (
            "invalid_request_error",
            Value::from("unsupported_country_region_territory"),
        ),
        404 => ("invalid_request_error", Value::from("model_not_found")),
        429 => ("requests", Value::from("rate_limit_exceeded")),
        500..=599 => ("server_error", Value::from("server_error")),
        _ => ("invalid_request_error", Value::Null),
    };
    serde_json::json!({
        "error": {"message": message, "type": kind, "param": null, "code": code}
    })
}

/// The text parts of a message's content: a string is one part; in an array,
/// the parts `is_text` accepts contribute their `"text"`. Joined by newlines.
fn content_text(content: Option<&Value>, is_text: impl Fn(&Value) -> bool) -> Option<String> {
    let text = match content? {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| is_text(p))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// The last message in `messages` with `role == "user"` that has text.
fn last_user_message_text(
    messages: Option<&Value>,
    content_key: &str,
    is_text: impl Fn(&Value) -> bool,
) -> Option<String> {
    messages?
        .as_array()?
        .iter()
        .rev()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .find_map(|m| content_text(m.get(content_key), &is_text))
}

fn part_type_is(part: &Value, kind: &str) -> bool {
    part.get("type").and_then(Value::as_str) == Some(kind)
}
