//! Anthropic Messages API: `POST /v1/messages`.
//! <https://docs.anthropic.com/en/api/messages> and
//! <https://docs.anthropic.com/en/docs/build-with-claude/streaming>.

use serde_json::{Value, json};

use super::{last_user_message_text, part_type_is};
use crate::reply::Finish;
use crate::turn::{Ctx, SseEvent, Turn, json_pieces, text_pieces};

pub(super) fn last_user_text(body: &Value) -> Option<String> {
    last_user_message_text(body.get("messages"), "content", |p| part_type_is(p, "text"))
}

fn stop_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop => "end_turn",
        Finish::ToolUse => "tool_use",
        Finish::MaxTokens => "max_tokens",
    }
}

/// `input_tokens` excludes the cached prompt tokens, which have fields of their own.
fn usage(turn: &Turn, output_tokens: u64) -> Value {
    let u = turn.usage;
    json!({
        "input_tokens": u.input.saturating_sub(u.cache_read).saturating_sub(u.cache_write),
        "cache_creation_input_tokens": u.cache_write,
        "cache_read_input_tokens": u.cache_read,
        "output_tokens": output_tokens,
    })
}

fn message_id(ctx: &Ctx) -> String {
    format!("msg_fake_{}", ctx.seq)
}

pub(super) fn body(turn: &Turn, ctx: &Ctx) -> Value {
    let mut content = Vec::new();
    if let Some(text) = &turn.text {
        content.push(json!({"type": "text", "text": text}));
    }
    for call in &turn.tool_calls {
        content.push(json!({
            "type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments,
        }));
    }
    json!({
        "id": message_id(ctx),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": stop_reason(turn.finish),
        "stop_sequence": null,
        "usage": usage(turn, turn.usage.output),
    })
}

pub(super) fn events(turn: &Turn, ctx: &Ctx) -> Vec<SseEvent> {
    let mut events = vec![
        SseEvent::named(
            "message_start",
            &json!({
                "type": "message_start",
                "message": {
                    "id": message_id(ctx),
                    "type": "message",
                    "role": "assistant",
                    "model": ctx.model,
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": usage(turn, 1),
                },
            }),
        ),
        SseEvent::named("ping", &json!({"type": "ping"})),
    ];
    let mut index = 0;
    if let Some(text) = &turn.text {
        events.push(SseEvent::named(
            "content_block_start",
            &json!({
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }),
        ));
        for piece in text_pieces(text) {
            events.push(SseEvent::named(
                "content_block_delta",
                &json!({
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": piece},
                }),
            ));
        }
        events.push(block_stop(index));
        index += 1;
    }
    for call in &turn.tool_calls {
        events.push(SseEvent::named(
            "content_block_start",
            &json!({
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}},
            }),
        ));
        let arguments = call.arguments.to_string();
        for piece in json_pieces(&arguments) {
            events.push(SseEvent::named(
                "content_block_delta",
                &json!({
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }),
            ));
        }
        events.push(block_stop(index));
        index += 1;
    }
    events.push(SseEvent::named(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(turn.finish), "stop_sequence": null},
            "usage": {"output_tokens": turn.usage.output},
        }),
    ));
    events.push(SseEvent::named(
        "message_stop",
        &json!({"type": "message_stop"}),
    ));
    events
}

fn block_stop(index: usize) -> SseEvent {
    SseEvent::named(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    )
}

/// <https://docs.anthropic.com/en/api/errors>
pub(super) fn error(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ if status >= 500 => "api_error",
        _ => "invalid_request_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}
