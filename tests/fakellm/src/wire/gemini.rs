//! Gemini API: `POST /v1beta/models/{model}:generateContent` and
//! `:streamGenerateContent` (`?alt=sse` for server-sent events).
//! <https://ai.google.dev/api/generate-content>

use serde_json::{Map, Value, json};

use super::content_text;
use crate::reply::Finish;
use crate::turn::{Ctx, SseEvent, Turn, text_pieces};

/// `(model, method)` from a path ending in `/models/{model}:{method}`, where
/// method is `generateContent` or `streamGenerateContent`.
pub(super) fn model_and_method(route: &str) -> Option<(&str, &str)> {
    let (_, tail) = route.rsplit_once("/models/")?;
    let (model, method) = tail.split_once(':')?;
    let known = matches!(method, "generateContent" | "streamGenerateContent");
    (known && !model.is_empty() && !model.contains('/')).then_some((model, method))
}

/// The last entry of `contents` whose role is `user` (or absent, which means
/// user) and that has `text` parts; thought parts and function responses are not text.
pub(super) fn last_user_text(body: &Value) -> Option<String> {
    body.get("contents")?
        .as_array()?
        .iter()
        .rev()
        .filter(|c| c.get("role").and_then(Value::as_str).unwrap_or("user") == "user")
        .find_map(|c| {
            content_text(c.get("parts"), |p| {
                p.get("thought") != Some(&Value::Bool(true))
            })
        })
}

fn finish_reason(finish: Finish) -> &'static str {
    match finish {
        // Gemini has no finish reason of its own for function calls.
        Finish::Stop | Finish::ToolUse => "STOP",
        Finish::MaxTokens => "MAX_TOKENS",
    }
}

/// `promptTokenCount` includes the cached tokens; `candidatesTokenCount`
/// excludes the thinking tokens, which `thoughtsTokenCount` reports. Counts
/// that are zero are left out, as Gemini does. There is no field for tokens
/// written to a cache.
fn usage(turn: &Turn) -> Value {
    let u = turn.usage;
    let mut usage = Map::new();
    usage.insert("promptTokenCount".into(), json!(u.input));
    usage.insert(
        "candidatesTokenCount".into(),
        json!(u.output.saturating_sub(u.reasoning)),
    );
    if u.reasoning > 0 {
        usage.insert("thoughtsTokenCount".into(), json!(u.reasoning));
    }
    if u.cache_read > 0 {
        usage.insert("cachedContentTokenCount".into(), json!(u.cache_read));
    }
    usage.insert("totalTokenCount".into(), json!(u.input + u.output));
    Value::Object(usage)
}

fn response(parts: Vec<Value>, finish: Option<&str>, usage: Value, ctx: &Ctx) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(finish) = finish {
        candidate["finishReason"] = json!(finish);
    }
    json!({
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": ctx.model,
        "responseId": format!("fake-{}", ctx.seq),
    })
}

fn call_part(name: &str, args: &Value) -> Value {
    json!({"functionCall": {"name": name, "args": args}})
}

pub(super) fn body(turn: &Turn, ctx: &Ctx) -> Value {
    let mut parts = Vec::new();
    if let Some(text) = &turn.text {
        parts.push(json!({"text": text}));
    }
    for call in &turn.tool_calls {
        parts.push(call_part(&call.name, &call.arguments));
    }
    response(parts, Some(finish_reason(turn.finish)), usage(turn), ctx)
}

/// One chunk per word of text, then one per function call (Gemini never
/// splits a call's arguments); the last chunk carries the finish reason and
/// the full usage, the earlier ones only the prompt count.
pub(super) fn events(turn: &Turn, ctx: &Ctx) -> Vec<SseEvent> {
    let mut parts: Vec<Value> = Vec::new();
    if let Some(text) = &turn.text {
        parts.extend(text_pieces(text).into_iter().map(|p| json!({"text": p})));
    }
    for call in &turn.tool_calls {
        parts.push(call_part(&call.name, &call.arguments));
    }
    if parts.is_empty() {
        parts.push(json!({"text": ""}));
    }
    let early_usage = json!({
        "promptTokenCount": turn.usage.input,
        "totalTokenCount": turn.usage.input,
    });
    let last = parts.len() - 1;
    parts
        .into_iter()
        .enumerate()
        .map(|(i, part)| {
            let chunk = if i == last {
                response(
                    vec![part],
                    Some(finish_reason(turn.finish)),
                    usage(turn),
                    ctx,
                )
            } else {
                response(vec![part], None, early_usage.clone(), ctx)
            };
            SseEvent::data(&chunk)
        })
        .collect()
}

/// <https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes>
pub(super) fn error(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        500 => "INTERNAL",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ if status >= 500 => "UNAVAILABLE",
        _ => "FAILED_PRECONDITION",
    };
    json!({"error": {"code": status, "message": message, "status": kind}})
}
