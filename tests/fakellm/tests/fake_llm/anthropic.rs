use serde_json::{Value, json};
use weft_fakellm::{FakeLlm, Finish, Reply, ToolCall, Usage};

use crate::support::{MODEL, Provider, key, send};

#[test]
fn anthropic_text_reply_is_a_message_with_one_text_block() {
    let server = FakeLlm::start();
    let key = key("anthropic-text");
    server.script(&key, [Reply::Text("Hello there.".into())]);

    let response = Provider::Anthropic.ask(&server, &key, "hi", false);

    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    let body = response.json();
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert_eq!(body["model"], MODEL, "the reply names the requested model");
    assert_eq!(
        body["content"],
        json!([{"type": "text", "text": "Hello there."}])
    );
    assert_eq!(body["stop_reason"], "end_turn");
    for field in [
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    ] {
        assert!(
            body["usage"][field].is_u64(),
            "usage.{field} is always present"
        );
    }
}

#[test]
fn anthropic_stream_follows_the_messages_event_sequence() {
    let server = FakeLlm::start();
    let key = key("anthropic-stream");
    server.script(&key, [Reply::Text("one two three".into())]);

    let response = Provider::Anthropic.ask(&server, &key, "count", true);

    assert_eq!(response.status, 200);
    assert!(response.complete, "the chunked body ends properly");
    let events = response.events();
    let names: Vec<&str> = events.iter().filter_map(|e| e.event.as_deref()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    for event in &events {
        assert_eq!(
            event.json()["type"].as_str(),
            event.event.as_deref(),
            "each event's data repeats its name as `type`"
        );
    }
    assert_eq!(Provider::Anthropic.streamed_text(&events), "one two three");
    let start = events[0].json();
    assert!(start["message"]["usage"]["input_tokens"].as_u64() > Some(0));
    let delta = events[7].json();
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert!(delta["usage"]["output_tokens"].as_u64() > Some(0));
}

#[test]
fn anthropic_tool_calls_stream_as_input_json_deltas() {
    let server = FakeLlm::start();
    let key = key("anthropic-tools-stream");
    let arguments = json!({"path": "src/main.rs", "pattern": "fn main", "context_lines": 3});
    server.script(
        &key,
        [Reply::Turn {
            text: Some("Let me look.".into()),
            tool_calls: vec![ToolCall::new("toolu_1", "grep", arguments.clone())],
            usage: None,
            finish: None,
        }],
    );

    let events = Provider::Anthropic
        .ask(&server, &key, "find main", true)
        .events();

    let starts: Vec<Value> = events
        .iter()
        .map(|e| e.json())
        .filter(|d| d["type"] == "content_block_start")
        .collect();
    assert_eq!(starts.len(), 2, "a text block, then a tool_use block");
    assert_eq!(starts[1]["index"], 1);
    assert_eq!(
        starts[1]["content_block"],
        json!({"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {}})
    );
    let partial: Vec<String> = events
        .iter()
        .map(|e| e.json())
        .filter(|d| d["delta"]["type"] == "input_json_delta")
        .map(|d| {
            d["delta"]["partial_json"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert!(partial.len() > 1, "arguments arrive in several fragments");
    let joined: Value = serde_json::from_str(&partial.concat()).unwrap();
    assert_eq!(joined, arguments);
    let message_delta = events
        .iter()
        .find(|e| e.event.as_deref() == Some("message_delta"))
        .unwrap()
        .json();
    assert_eq!(message_delta["delta"]["stop_reason"], "tool_use");
}

#[test]
fn anthropic_tool_calls_are_tool_use_blocks_with_object_input() {
    let server = FakeLlm::start();
    let key = key("anthropic-tools");
    server.script(
        &key,
        [Reply::ToolCalls(vec![
            ToolCall::new("toolu_a", "read", json!({"path": "a.txt"})),
            ToolCall::new("", "read", json!({"path": "b.txt"})),
        ])],
    );

    let body = Provider::Anthropic
        .ask(&server, &key, "read both", false)
        .json();

    assert_eq!(body["stop_reason"], "tool_use");
    let content = body["content"].as_array().unwrap();
    assert_eq!(content.len(), 2);
    assert_eq!(
        content[0],
        json!({"type": "tool_use", "id": "toolu_a", "name": "read", "input": {"path": "a.txt"}})
    );
    let generated = content[1]["id"].as_str().unwrap();
    assert!(
        !generated.is_empty(),
        "an empty id is replaced by a generated one"
    );
}

#[test]
fn anthropic_usage_reports_cache_tokens_apart_from_input_tokens() {
    let server = FakeLlm::start();
    let key = key("anthropic-usage");
    let usage = Usage {
        input: 100,
        output: 20,
        reasoning: 5,
        cache_read: 60,
        cache_write: 10,
    };
    server.script(
        &key,
        [
            Reply::Turn {
                text: Some("x".into()),
                tool_calls: vec![],
                usage: Some(usage),
                finish: Some(Finish::MaxTokens),
            },
            Reply::Turn {
                text: Some("x".into()),
                tool_calls: vec![],
                usage: Some(usage),
                finish: Some(Finish::MaxTokens),
            },
        ],
    );

    let body = Provider::Anthropic.ask(&server, &key, "q", false).json();
    assert_eq!(
        body["usage"],
        json!({
            "input_tokens": 30,
            "cache_read_input_tokens": 60,
            "cache_creation_input_tokens": 10,
            "output_tokens": 20,
        })
    );
    assert_eq!(body["stop_reason"], "max_tokens");

    let events = Provider::Anthropic.ask(&server, &key, "q", true).events();
    let start = events[0].json();
    assert_eq!(start["message"]["usage"]["input_tokens"], 30);
    assert_eq!(start["message"]["usage"]["cache_read_input_tokens"], 60);
    let delta = events[events.len() - 2].json();
    assert_eq!(delta["usage"]["output_tokens"], 20);
    assert_eq!(delta["delta"]["stop_reason"], "max_tokens");
}

#[test]
fn anthropic_request_without_version_header_is_refused_without_consuming_a_reply() {
    let server = FakeLlm::start();
    let key = key("anthropic-no-version");
    server.script(&key, [Reply::Text("kept".into())]);

    let response = send(
        server.addr(),
        "POST",
        "/v1/messages",
        &[("x-api-key", &key)],
        Provider::Anthropic
            .request("hi", false)
            .to_string()
            .as_bytes(),
    );

    assert_eq!(response.status, 400);
    assert_eq!(response.json()["error"]["type"], "invalid_request_error");
    assert_eq!(
        server.pending(&key),
        1,
        "a refused request leaves the script alone"
    );
}

#[test]
fn a_messages_call_with_a_query_is_answered_and_recorded_with_it() {
    // Claude Code calls `/v1/messages?beta=true`.
    let server = FakeLlm::start();
    let key = key("anthropic-beta-query");
    server.script(&key, [Reply::Text("beta reply".into())]);
    let body = Provider::Anthropic.request("hi", true);
    let response = send(
        server.addr(),
        "POST",
        "/v1/messages?beta=true",
        &[
            ("Content-Type", "application/json"),
            ("x-api-key", &key),
            ("anthropic-version", "2023-06-01"),
        ],
        body.to_string().as_bytes(),
    );
    assert_eq!(response.status, 200);
    assert_eq!(
        Provider::Anthropic.streamed_text(&response.events()),
        "beta reply"
    );
    let recorded = server.requests(&key);
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].path, "/v1/messages?beta=true");
}
