//! OpenAI Chat Completions, as OpenAI and the OpenAI-compatible servers
//! (Ollama, vLLM, llama.cpp…) speak it: `POST /v1/chat/completions`.
//! <https://platform.openai.com/docs/api-reference/chat>

use serde_json::{Value, json};

use super::{last_user_message_text, part_type_is};
use crate::reply::Finish;
use crate::turn::{Ctx, SseEvent, Turn, json_pieces, text_pieces};

const CREATED: u64 = 1_700_000_000;

pub(super) fn last_user_text(body: &Value) -> Option<String> {
    last_user_message_text(body.get("messages"), "content", |p| part_type_is(p, "text"))
}

fn finish_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop => "stop",
        Finish::ToolUse => "tool_calls",
        Finish::MaxTokens => "length",
    }
}

/// `prompt_tokens` and `completion_tokens` include the cached and reasoning
/// tokens their details break out. There is no field for tokens written to the cache.
fn usage(turn: &Turn) -> Value {
    let u = turn.usage;
    json!({
        "prompt_tokens": u.input,
        "completion_tokens": u.output,
        "total_tokens": u.input + u.output,
        "prompt_tokens_details": {"cached_tokens": u.cache_read},
        "completion_tokens_details": {"reasoning_tokens": u.reasoning},
    })
}

fn id(ctx: &Ctx) -> String {
    format!("chatcmpl-fake-{}", ctx.seq)
}

pub(super) fn body(turn: &Turn, ctx: &Ctx) -> Value {
    let mut message = json!({
        "role": "assistant",
        "content": turn.text,
        "refusal": null,
    });
    if !turn.tool_calls.is_empty() {
        let calls: Vec<Value> = turn
            .tool_calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments.to_string()},
                })
            })
            .collect();
        message["tool_calls"] = json!(calls);
    }
    json!({
        "id": id(ctx),
        "object": "chat.completion",
        "created": CREATED,
        "model": ctx.model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_reason(turn.finish),
        }],
        "usage": usage(turn),
    })
}

/// `data:`-only events: a role chunk, content deltas, for each tool call a
/// chunk naming it then argument fragments, a chunk with the finish reason,
/// a usage chunk with no choices when `stream_options.include_usage` was
/// set, and `[DONE]`.
pub(super) fn events(turn: &Turn, ctx: &Ctx) -> Vec<SseEvent> {
    let chunk = |delta: Value, finish: Option<&str>| {
        let mut chunk = json!({
            "id": id(ctx),
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": ctx.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        if ctx.include_usage {
            chunk["usage"] = Value::Null;
        }
        SseEvent::data(&chunk)
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    if let Some(text) = &turn.text {
        for piece in text_pieces(text) {
            events.push(chunk(json!({"content": piece}), None));
        }
    }
    for (index, call) in turn.tool_calls.iter().enumerate() {
        events.push(chunk(
            json!({"tool_calls": [{
                "index": index, "id": call.id, "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }]}),
            None,
        ));
        let arguments = call.arguments.to_string();
        for piece in json_pieces(&arguments) {
            events.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                None,
            ));
        }
    }
    events.push(chunk(json!({}), Some(finish_reason(turn.finish))));
    if ctx.include_usage {
        events.push(SseEvent::data(&json!({
            "id": id(ctx),
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": ctx.model,
            "choices": [],
            "usage": usage(turn),
        })));
    }
    events.push(SseEvent {
        event: None,
        data: "[DONE]".to_owned(),
    });
    events
}
