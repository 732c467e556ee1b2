//! OpenAI Responses API: `POST /v1/responses`.
//! <https://platform.openai.com/docs/api-reference/responses> and its
//! streaming events.

use serde_json::{Value, json};

use super::{content_text, part_type_is};
use crate::reply::Finish;
use crate::turn::{Ctx, SseEvent, Turn, json_pieces, text_pieces};

const CREATED_AT: u64 = 1_700_000_000;

/// `input` is a string, or a list of items of which the user messages have
/// string content or `input_text` parts.
pub(super) fn last_user_text(body: &Value) -> Option<String> {
    match body.get("input")? {
        Value::String(s) => (!s.is_empty()).then(|| s.clone()),
        Value::Array(items) => items
            .iter()
            .rev()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .find_map(|m| content_text(m.get("content"), |p| part_type_is(p, "input_text"))),
        _ => None,
    }
}

/// `input_tokens` and `output_tokens` include the cached and reasoning tokens
/// their details break out. There is no field for tokens written to the cache.
fn usage(turn: &Turn) -> Value {
    let u = turn.usage;
    json!({
        "input_tokens": u.input,
        "input_tokens_details": {"cached_tokens": u.cache_read},
        "output_tokens": u.output,
        "output_tokens_details": {"reasoning_tokens": u.reasoning},
        "total_tokens": u.input + u.output,
    })
}

/// One output item, finished, and how to stream it.
enum Item {
    Reasoning {
        id: String,
    },
    Message {
        id: String,
        text: String,
    },
    FunctionCall {
        id: String,
        call_id: String,
        name: String,
        arguments: String,
    },
}

impl Item {
    fn done(&self) -> Value {
        match self {
            Item::Reasoning { id } => json!({"type": "reasoning", "id": id, "summary": []}),
            Item::Message { id, text } => json!({
                "type": "message", "id": id, "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }),
            Item::FunctionCall {
                id,
                call_id,
                name,
                arguments,
            } => json!({
                "type": "function_call", "id": id, "call_id": call_id, "name": name,
                "arguments": arguments, "status": "completed",
            }),
        }
    }

    fn added(&self) -> Value {
        match self {
            Item::Reasoning { .. } => self.done(),
            Item::Message { id, .. } => json!({
                "type": "message", "id": id, "status": "in_progress", "role": "assistant",
                "content": [],
            }),
            Item::FunctionCall {
                id, call_id, name, ..
            } => json!({
                "type": "function_call", "id": id, "call_id": call_id, "name": name,
                "arguments": "", "status": "in_progress",
            }),
        }
    }
}

/// A reasoning item when the usage reports reasoning tokens, then the
/// message, then the function calls.
fn items(turn: &Turn, ctx: &Ctx) -> Vec<Item> {
    let mut items = Vec::new();
    if turn.usage.reasoning > 0 {
        items.push(Item::Reasoning {
            id: format!("rs_fake_{}", ctx.seq),
        });
    }
    if let Some(text) = &turn.text {
        items.push(Item::Message {
            id: format!("msg_fake_{}", ctx.seq),
            text: text.clone(),
        });
    }
    for (i, call) in turn.tool_calls.iter().enumerate() {
        items.push(Item::FunctionCall {
            id: format!("fc_fake_{}_{i}", ctx.seq),
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.to_string(),
        });
    }
    items
}

/// The response object; `output` and `usage` are left empty while in progress.
fn response(turn: &Turn, ctx: &Ctx, items: Option<&[Item]>) -> Value {
    let (status, incomplete, output, usage) = match items {
        None => ("in_progress", Value::Null, Vec::new(), Value::Null),
        Some(items) => {
            let output = items.iter().map(Item::done).collect();
            match turn.finish {
                Finish::MaxTokens => (
                    "incomplete",
                    json!({"reason": "max_output_tokens"}),
                    output,
                    usage(turn),
                ),
                Finish::Stop | Finish::ToolUse => ("completed", Value::Null, output, usage(turn)),
            }
        }
    };
    json!({
        "id": format!("resp_fake_{}", ctx.seq),
        "object": "response",
        "created_at": CREATED_AT,
        "status": status,
        "error": null,
        "incomplete_details": incomplete,
        "model": ctx.model,
        "output": output,
        "usage": usage,
    })
}

pub(super) fn body(turn: &Turn, ctx: &Ctx) -> Value {
    response(turn, ctx, Some(&items(turn, ctx)))
}

pub(super) fn events(turn: &Turn, ctx: &Ctx) -> Vec<SseEvent> {
    let items = items(turn, ctx);
    let mut stream = Stream::default();
    let in_progress = response(turn, ctx, None);
    stream.push("response.created", json!({"response": in_progress}));
    stream.push("response.in_progress", json!({"response": in_progress}));
    for (output_index, item) in items.iter().enumerate() {
        stream.push(
            "response.output_item.added",
            json!({"output_index": output_index, "item": item.added()}),
        );
        match item {
            Item::Reasoning { .. } => {}
            Item::Message { id, text } => {
                let empty_part = json!({"type": "output_text", "text": "", "annotations": []});
                let part = json!({"type": "output_text", "text": text, "annotations": []});
                let at = json!({"item_id": id, "output_index": output_index, "content_index": 0});
                stream.push("response.content_part.added", with(&at, "part", empty_part));
                for piece in text_pieces(text) {
                    stream.push(
                        "response.output_text.delta",
                        with(&at, "delta", json!(piece)),
                    );
                }
                stream.push("response.output_text.done", with(&at, "text", json!(text)));
                stream.push("response.content_part.done", with(&at, "part", part));
            }
            Item::FunctionCall { id, arguments, .. } => {
                let at = json!({"item_id": id, "output_index": output_index});
                for piece in json_pieces(arguments) {
                    stream.push(
                        "response.function_call_arguments.delta",
                        with(&at, "delta", json!(piece)),
                    );
                }
                stream.push(
                    "response.function_call_arguments.done",
                    with(&at, "arguments", json!(arguments)),
                );
            }
        }
        stream.push(
            "response.output_item.done",
            json!({"output_index": output_index, "item": item.done()}),
        );
    }
    let last = match turn.finish {
        Finish::MaxTokens => "response.incomplete",
        Finish::Stop | Finish::ToolUse => "response.completed",
    };
    stream.push(last, json!({"response": response(turn, ctx, Some(&items))}));
    stream.events
}

fn with(base: &Value, key: &str, value: Value) -> Value {
    let mut object = base.clone();
    if let Some(map) = object.as_object_mut() {
        map.insert(key.to_owned(), value);
    }
    object
}

/// Events with their `type` and `sequence_number` filled in.
#[derive(Default)]
struct Stream {
    events: Vec<SseEvent>,
}

impl Stream {
    fn push(&mut self, kind: &'static str, mut data: Value) {
        if let Some(map) = data.as_object_mut() {
            map.insert("type".to_owned(), json!(kind));
            map.insert("sequence_number".to_owned(), json!(self.events.len()));
        }
        self.events.push(SseEvent::named(kind, &data));
    }
}
