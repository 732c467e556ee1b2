//! What a test scripts: the replies, and their JSON form for `POST /_fake/script/{key}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One scripted answer. It is rendered in the wire format of the endpoint that
/// was called, streamed or not as the request asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "ReplyJson", into = "ReplyJson")]
pub enum Reply {
    /// Assistant text, finish reason "stop", default usage.
    Text(String),
    /// One or more tool calls and no text, finish reason "tool use", default usage.
    ToolCalls(Vec<ToolCall>),
    /// The general form. `text` comes before the tool calls in the output;
    /// `usage` defaults as described in the crate docs; `finish` defaults to
    /// [`Finish::ToolUse`] when there are tool calls, else [`Finish::Stop`].
    Turn {
        text: Option<String>,
        tool_calls: Vec<ToolCall>,
        usage: Option<Usage>,
        finish: Option<Finish>,
    },
    /// An HTTP error with the body in the provider's error format; the error
    /// type is chosen from the status. `retry_after` (seconds) is sent as a
    /// `Retry-After` header.
    Error {
        status: u16,
        retry_after: Option<u64>,
        message: String,
    },
    /// Read the request and never answer. The connection stays open until the
    /// client closes it or the server is dropped.
    Hang,
    /// Streaming: send at most `after_events` events of a normal reply with
    /// this text (never the last event) then close the connection without
    /// ending the chunked body. Non-streaming: send the headers and the first
    /// half of the body, then close.
    BreakStream { after_events: usize, text: String },
    /// A turn making these tool calls, broken off in the middle of the first
    /// one. Streaming: the events up to the one that starts the first call
    /// (the first naming it), and one more (an argument fragment; never the
    /// last event), then the connection closes. Gemini sends a call whole, so
    /// there the stream breaks after the call and before the finish.
    /// Non-streaming: like [`Reply::BreakStream`], half the body.
    BreakInToolCall { tool_calls: Vec<ToolCall> },
    /// Streaming: a 200 `text/event-stream` whose events are neither valid
    /// JSON nor well-formed SSE. Non-streaming: a 200 `application/json` whose
    /// body is not JSON.
    MalformedSse,
    /// Exactly this status, body and headers (`Content-Type` defaults to
    /// `application/json`; `Content-Length` is always computed).
    RawStatus {
        status: u16,
        body: String,
        headers: Vec<(String, String)>,
    },
}

/// A tool call the assistant makes. An empty `id` is replaced by a generated
/// one (`call_fake_N`), so scripts may leave it out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    #[serde(default)]
    pub id: String,
    pub name: String,
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

impl ToolCall {
    /// A tool call with the given id, name and JSON arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// Token counts, in provider-neutral terms: `input` counts every prompt token
/// including the cached ones (`cache_read` and `cache_write` are parts of it),
/// and `output` counts every generated token including `reasoning`. Each wire
/// format then reports them its own way (see the crate docs), so a client that
/// normalises correctly gets back the same numbers from every provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub reasoning: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

/// Why the turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    Stop,
    ToolUse,
    MaxTokens,
}

/// The JSON form of [`Reply`]: externally tagged, snake_case, with the unit
/// variants written `{"hang": true}` and `{"malformed_sse": true}`.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum ReplyJson {
    Text(String),
    ToolCalls(Vec<ToolCall>),
    Turn {
        #[serde(default)]
        text: Option<String>,
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
        #[serde(default)]
        usage: Option<Usage>,
        #[serde(default)]
        finish: Option<Finish>,
    },
    Error {
        status: u16,
        #[serde(default)]
        retry_after: Option<u64>,
        #[serde(default)]
        message: String,
    },
    /// Any value is accepted (`true` by convention).
    Hang(Value),
    BreakStream {
        after_events: usize,
        #[serde(default)]
        text: String,
    },
    BreakInToolCall {
        tool_calls: Vec<ToolCall>,
    },
    /// Any value is accepted (`true` by convention).
    MalformedSse(Value),
    RawStatus {
        status: u16,
        #[serde(default)]
        body: String,
        #[serde(default)]
        headers: Vec<(String, String)>,
    },
}

impl From<ReplyJson> for Reply {
    fn from(json: ReplyJson) -> Reply {
        match json {
            ReplyJson::Text(text) => Reply::Text(text),
            ReplyJson::ToolCalls(calls) => Reply::ToolCalls(calls),
            ReplyJson::Turn {
                text,
                tool_calls,
                usage,
                finish,
            } => Reply::Turn {
                text,
                tool_calls,
                usage,
                finish,
            },
            ReplyJson::Error {
                status,
                retry_after,
                message,
            } => Reply::Error {
                status,
                retry_after,
                message,
            },
            ReplyJson::Hang(_) => Reply::Hang,
            ReplyJson::BreakStream { after_events, text } => {
                Reply::BreakStream { after_events, text }
            }
            ReplyJson::BreakInToolCall { tool_calls } => Reply::BreakInToolCall { tool_calls },
            ReplyJson::MalformedSse(_) => Reply::MalformedSse,
            ReplyJson::RawStatus {
                status,
                body,
                headers,
            } => Reply::RawStatus {
                status,
                body,
                headers,
            },
        }
    }
}

impl From<Reply> for ReplyJson {
    fn from(reply: Reply) -> ReplyJson {
        match reply {
            Reply::Text(text) => ReplyJson::Text(text),
            Reply::ToolCalls(calls) => ReplyJson::ToolCalls(calls),
            Reply::Turn {
                text,
                tool_calls,
                usage,
                finish,
            } => ReplyJson::Turn {
                text,
                tool_calls,
                usage,
                finish,
            },
            Reply::Error {
                status,
                retry_after,
                message,
            } => ReplyJson::Error {
                status,
                retry_after,
                message,
            },
            Reply::Hang => ReplyJson::Hang(Value::Bool(true)),
            Reply::BreakStream { after_events, text } => {
                ReplyJson::BreakStream { after_events, text }
            }
            Reply::BreakInToolCall { tool_calls } => ReplyJson::BreakInToolCall { tool_calls },
            Reply::MalformedSse => ReplyJson::MalformedSse(Value::Bool(true)),
            Reply::RawStatus {
                status,
                body,
                headers,
            } => ReplyJson::RawStatus {
                status,
                body,
                headers,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_reply_round_trips_through_its_json_form() {
        let replies = vec![
            Reply::Text("hi".into()),
            Reply::ToolCalls(vec![ToolCall::new("c1", "read", json!({"path": "a"}))]),
            Reply::Turn {
                text: Some("t".into()),
                tool_calls: vec![],
                usage: Some(Usage {
                    input: 1,
                    output: 2,
                    reasoning: 3,
                    cache_read: 4,
                    cache_write: 5,
                }),
                finish: Some(Finish::MaxTokens),
            },
            Reply::Error {
                status: 429,
                retry_after: Some(2),
                message: "slow down".into(),
            },
            Reply::Hang,
            Reply::BreakStream {
                after_events: 3,
                text: "x".into(),
            },
            Reply::BreakInToolCall {
                tool_calls: vec![ToolCall::new("c2", "grep", json!({"pattern": "x"}))],
            },
            Reply::MalformedSse,
            Reply::RawStatus {
                status: 418,
                body: "teapot".into(),
                headers: vec![("x-a".into(), "b".into())],
            },
        ];
        let json = serde_json::to_value(&replies).unwrap();
        let back: Vec<Reply> = serde_json::from_value(json).unwrap();
        assert_eq!(back, replies, "the JSON form must carry every field");
    }

    #[test]
    fn short_json_forms_fill_in_defaults() {
        let replies: Vec<Reply> = serde_json::from_value(json!([
            {"hang": true},
            {"malformed_sse": true},
            {"error": {"status": 500}},
            {"tool_calls": [{"name": "ls"}]},
            {"turn": {"text": "only text"}},
        ]))
        .unwrap();
        assert_eq!(replies[0], Reply::Hang);
        assert_eq!(replies[1], Reply::MalformedSse);
        assert_eq!(
            replies[2],
            Reply::Error {
                status: 500,
                retry_after: None,
                message: String::new()
            }
        );
        assert_eq!(
            replies[3],
            Reply::ToolCalls(vec![ToolCall::new("", "ls", json!({}))]),
            "a tool call without id or arguments gets an empty id and {{}}"
        );
        assert_eq!(
            replies[4],
            Reply::Turn {
                text: Some("only text".into()),
                tool_calls: vec![],
                usage: None,
                finish: None
            }
        );
    }
}
