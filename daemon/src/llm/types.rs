//! The one request/response model every provider speaks. Each provider module
//! translates it to and from its native wire format; nothing outside
//! `providers/` sees a provider's JSON.
//!
//! Conventions that hold for every provider:
//! - A conversation is `Request::system` plus alternating user and assistant
//!   [`Message`]s. Tool results travel in a user message as
//!   [`Part::ToolResult`]s, answering the [`Part::ToolCall`]s of the assistant
//!   message before it.
//! - [`Usage`] totals include their breakdowns: `input` counts every prompt
//!   token (cache reads and writes included) and `output` every generated
//!   token (reasoning included), whatever the provider reports natively.

pub use crate::model::Usage;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One model call, provider-neutral.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// A model id or alias (`claude-sonnet-4-5`, `sonnet`, `llama3.1`). `None`
    /// means the provider's default model (see `models.mdx`, "Default models").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A provider name (`anthropic`, `ollama`, ...). `None` infers it from the
    /// model, or from which API key is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    #[serde(default, skip_serializing_if = "ToolChoice::is_auto")]
    pub tool_choice: ToolChoice,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<Speed>,
    /// The most tokens to generate (reasoning included). Anthropic requires a
    /// value, so it gets the catalog's limit or 8192 when this is `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Stream the reply (server-sent events), reporting deltas as they come.
    /// The assembled [`Response`] is the same either way.
    #[serde(default)]
    pub stream: bool,
}

impl Request {
    /// A one-message request: `prompt` from the user.
    #[must_use]
    pub fn prompt(prompt: impl Into<String>) -> Request {
        Request {
            messages: vec![Message::user(prompt)],
            ..Request::default()
        }
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
}

impl Message {
    /// A user message of plain text.
    #[must_use]
    pub fn user(text: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            parts: vec![Part::Text(text.into())],
        }
    }

    /// An assistant message of plain text.
    #[must_use]
    pub fn assistant(text: impl Into<String>) -> Message {
        Message {
            role: Role::Assistant,
            parts: vec![Part::Text(text.into())],
        }
    }

    /// A user message answering tool calls.
    #[must_use]
    pub fn tool_results(results: impl IntoIterator<Item = ToolResult>) -> Message {
        Message {
            role: Role::User,
            parts: results.into_iter().map(Part::ToolResult).collect(),
        }
    }

    /// The concatenated text parts.
    #[must_use]
    pub fn text(&self) -> String {
        concat_text(&self.parts)
    }
}

/// A piece of a message. Serialised externally tagged: `{"text": "..."}`,
/// `{"tool_call": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    Text(String),
    Image(Image),
    /// The model's reasoning (a summary or the full thinking, per provider).
    /// Sent back only to the API that produced it.
    Reasoning(Reasoning),
    ToolCall(ToolCall),
    ToolResult(ToolResult),
}

/// An image in a user message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum Image {
    /// Inline bytes, base64-encoded, with their media type (`image/png`).
    Base64 { media_type: String, data: String },
    /// An image the provider fetches itself.
    Url { url: String },
}

/// Reasoning produced by a model. Providers need it back, with its opaque
/// signature, to continue a tool-use turn; other providers never see it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reasoning {
    pub text: String,
    /// Anthropic's thinking signature, OpenAI's encrypted reasoning content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The provider's id for the item (OpenAI reasoning items).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The API that produced it; other APIs drop it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<super::Wire>,
}

/// A call the model asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Matches the [`ToolResult::call_id`] that answers it.
    pub id: String,
    pub name: String,
    /// The arguments, parsed (an object per the tool's schema, unchecked).
    pub arguments: Value,
    /// Gemini's thought signature, which must accompany the call when the
    /// conversation is sent back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// The answer to a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    pub call_id: String,
    /// The tool's name (Gemini matches results by name).
    pub name: String,
    pub content: String,
    #[serde(default)]
    pub is_error: bool,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// A JSON Schema for the arguments (an object schema).
    pub parameters: Value,
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// This tool.
    Tool(String),
}

impl ToolChoice {
    fn is_auto(&self) -> bool {
        *self == ToolChoice::Auto
    }
}

/// How hard a reasoning model thinks (`reasoning_effort` in stylesheets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    Low,
    Medium,
    High,
}

impl ReasoningEffort {
    /// Parses `low`, `medium` or `high` (any case).
    #[must_use]
    pub fn parse(text: &str) -> Option<ReasoningEffort> {
        match text.trim().to_ascii_lowercase().as_str() {
            "low" => Some(ReasoningEffort::Low),
            "medium" => Some(ReasoningEffort::Medium),
            "high" => Some(ReasoningEffort::High),
            _ => None,
        }
    }

    /// The name providers with effort levels use.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }

    /// The thinking-token budget for providers that take one (Anthropic,
    /// Gemini).
    #[must_use]
    pub fn budget_tokens(self) -> u32 {
        match self {
            ReasoningEffort::Low => 1024,
            ReasoningEffort::Medium => 8192,
            ReasoningEffort::High => 24576,
        }
    }
}

/// Output speed mode (`speed` in stylesheets). `fast` is Anthropic's fast
/// mode (faster output at a higher price); other providers have no such mode
/// and ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Speed {
    Standard,
    Fast,
}

impl Speed {
    /// Parses `fast` or `standard` (any case).
    #[must_use]
    pub fn parse(text: &str) -> Option<Speed> {
        match text.trim().to_ascii_lowercase().as_str() {
            "fast" => Some(Speed::Fast),
            "standard" | "normal" => Some(Speed::Standard),
            _ => None,
        }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// It finished its answer.
    #[default]
    Stop,
    /// It wants tool results.
    ToolUse,
    /// It hit `max_tokens`.
    MaxTokens,
    /// A safety filter stopped it.
    ContentFilter,
    /// The provider's own reason, verbatim.
    Other(String),
}

/// A model's reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The provider's id for the reply (may be empty).
    pub id: String,
    /// The model that answered, as the provider names it.
    pub model: String,
    /// The provider it came from (`anthropic`, `ollama`, ...).
    pub provider: String,
    /// Text, reasoning and tool calls, in the order the model produced them.
    pub content: Vec<Part>,
    pub usage: Usage,
    pub finish: FinishReason,
}

impl Response {
    /// The concatenated text parts.
    #[must_use]
    pub fn text(&self) -> String {
        concat_text(&self.content)
    }

    /// The concatenated reasoning parts.
    #[must_use]
    pub fn reasoning(&self) -> String {
        self.content
            .iter()
            .filter_map(|p| match p {
                Part::Reasoning(r) => Some(r.text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls, in order.
    #[must_use]
    pub fn tool_calls(&self) -> Vec<&ToolCall> {
        self.content
            .iter()
            .filter_map(|p| match p {
                Part::ToolCall(call) => Some(call),
                _ => None,
            })
            .collect()
    }

    /// The reply as the assistant message to append to the conversation.
    #[must_use]
    pub fn to_message(&self) -> Message {
        Message {
            role: Role::Assistant,
            parts: self.content.clone(),
        }
    }
}

/// Something a streaming reply produced so far. Deltas of one attempt only:
/// after a [`super::CallEvent::Retry`] or [`super::CallEvent::Failover`] the
/// reply starts again from nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    TextDelta {
        text: String,
    },
    ReasoningDelta {
        text: String,
    },
    /// A tool call began.
    ToolCallStart {
        id: String,
        name: String,
    },
    /// More of a tool call's arguments (a fragment of JSON text).
    ToolCallDelta {
        id: String,
        arguments: String,
    },
}

fn concat_text(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_adds_field_by_field() {
        let a = Usage {
            input: 10,
            output: 5,
            reasoning: 2,
            cache_read: 3,
            cache_write: 1,
        };
        let mut b = a;
        b += a;
        assert_eq!(
            b,
            Usage {
                input: 20,
                output: 10,
                reasoning: 4,
                cache_read: 6,
                cache_write: 2
            }
        );
        assert_eq!(
            a.uncached_input(),
            6,
            "cache reads and writes are part of input"
        );
    }

    #[test]
    fn response_accessors_pick_their_parts() {
        let call = ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: serde_json::json!({"path": "a"}),
            signature: None,
        };
        let r = Response {
            content: vec![
                Part::Reasoning(Reasoning {
                    text: "hmm".into(),
                    ..Reasoning::default()
                }),
                Part::Text("a".into()),
                Part::ToolCall(call.clone()),
                Part::Text("b".into()),
            ],
            ..Response::default()
        };
        assert_eq!(r.text(), "ab");
        assert_eq!(r.reasoning(), "hmm");
        assert_eq!(r.tool_calls(), vec![&call]);
        assert_eq!(r.to_message().role, Role::Assistant);
    }

    #[test]
    fn messages_round_trip_through_json() {
        let m = Message {
            role: Role::User,
            parts: vec![
                Part::Text("look".into()),
                Part::Image(Image::Base64 {
                    media_type: "image/png".into(),
                    data: "AAAA".into(),
                }),
                Part::ToolResult(ToolResult {
                    call_id: "c1".into(),
                    name: "read".into(),
                    content: "ok".into(),
                    is_error: false,
                }),
            ],
        };
        let json = serde_json::to_string(&m).expect("serialise");
        let back: Message = serde_json::from_str(&json).expect("parse");
        assert_eq!(back, m);
    }

    #[test]
    fn effort_and_speed_parse_stylesheet_values() {
        assert_eq!(ReasoningEffort::parse("High"), Some(ReasoningEffort::High));
        assert_eq!(ReasoningEffort::parse("extreme"), None);
        assert_eq!(Speed::parse("fast"), Some(Speed::Fast));
        assert!(ReasoningEffort::Low.budget_tokens() < ReasoningEffort::High.budget_tokens());
    }
}
