use serde_json::{Value, json};
use weft_fakellm::{FakeLlm, Reply, ToolCall, Usage};

use crate::support::{MODEL, Provider, key, send};

#[test]
fn chat_text_reply_is_a_chat_completion() {
    let server = FakeLlm::start();
    let key = key("chat-text");
    server.script(&key, [Reply::Text("Sure.".into())]);

    let body = Provider::Chat.ask(&server, &key, "hi", false).json();

    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], MODEL);
    let choice = &body["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "Sure.");
    assert!(
        choice["message"].get("tool_calls").is_none(),
        "no tool_calls without calls"
    );
    assert_eq!(choice["finish_reason"], "stop");
    let usage = &body["usage"];
    assert!(usage["prompt_tokens"].as_u64() > Some(0));
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 0);
    assert_eq!(usage["completion_tokens_details"]["reasoning_tokens"], 0);
}

#[test]
fn chat_stream_sends_deltas_then_the_finish_reason_then_done() {
    let server = FakeLlm::start();
    let key = key("chat-stream");
    server.script(&key, [Reply::Text("red green blue".into())]);

    let response = Provider::Chat.ask(&server, &key, "colours", true);

    assert!(response.complete);
    let events = response.events();
    assert!(
        events.iter().all(|e| e.event.is_none()),
        "chat streams data-only events"
    );
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| e.json())
        .collect();
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk")
    );
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(Provider::Chat.streamed_text(&events), "red green blue");
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert!(
        chunks.iter().all(|c| c.get("usage").is_none()),
        "no usage unless stream_options.include_usage"
    );
}

#[test]
fn chat_stream_ends_with_a_usage_chunk_when_asked() {
    let server = FakeLlm::start();
    let key = key("chat-usage");
    server.script(
        &key,
        [Reply::Turn {
            text: Some("ok".into()),
            tool_calls: vec![],
            usage: Some(Usage {
                input: 10,
                output: 4,
                reasoning: 2,
                cache_read: 8,
                cache_write: 0,
            }),
            finish: None,
        }],
    );
    let mut request = Provider::Chat.request("hi", true);
    request["stream_options"] = json!({"include_usage": true});

    let events = Provider::Chat.send(&server, &key, true, &request).events();

    let usage_chunk = events[events.len() - 2].json();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(
        usage_chunk["usage"],
        json!({
            "prompt_tokens": 10,
            "completion_tokens": 4,
            "total_tokens": 14,
            "prompt_tokens_details": {"cached_tokens": 8},
            "completion_tokens_details": {"reasoning_tokens": 2},
        })
    );
    let finish_chunk = events[events.len() - 3].json();
    assert_eq!(finish_chunk["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        finish_chunk["usage"],
        Value::Null,
        "other chunks carry usage: null"
    );
}

#[test]
fn chat_tool_calls_stream_by_index_with_argument_fragments() {
    let server = FakeLlm::start();
    let key = key("chat-tools");
    let first = json!({"path": "README.md", "offset": 0, "limit": 200});
    let second = json!({"query": "fake llm server"});
    let calls = vec![
        ToolCall::new("call_a", "read_file", first.clone()),
        ToolCall::new("call_b", "search", second.clone()),
    ];
    server.script(
        &key,
        [Reply::ToolCalls(calls.clone()), Reply::ToolCalls(calls)],
    );

    let body = Provider::Chat.ask(&server, &key, "look", false).json();
    let message = &body["choices"][0]["message"];
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(message["content"], Value::Null);
    assert_eq!(message["tool_calls"][1]["id"], "call_b");
    assert_eq!(message["tool_calls"][1]["type"], "function");
    assert_eq!(message["tool_calls"][1]["function"]["name"], "search");
    assert_eq!(
        message["tool_calls"][1]["function"]["arguments"],
        second.to_string()
    );

    let events = Provider::Chat.ask(&server, &key, "look", true).events();
    let mut ids = [String::new(), String::new()];
    let mut arguments = [String::new(), String::new()];
    for event in events.iter().filter(|e| e.data != "[DONE]") {
        let data = event.json();
        for call in data["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let index = call["index"].as_u64().unwrap() as usize;
            if let Some(id) = call["id"].as_str() {
                ids[index] = id.to_owned();
            }
            arguments[index].push_str(call["function"]["arguments"].as_str().unwrap_or_default());
        }
    }
    assert_eq!(ids, ["call_a", "call_b"]);
    assert_eq!(serde_json::from_str::<Value>(&arguments[0]).unwrap(), first);
    assert_eq!(
        serde_json::from_str::<Value>(&arguments[1]).unwrap(),
        second
    );
}

#[test]
fn chat_key_comes_from_the_bearer_header() {
    let server = FakeLlm::start();
    let key = key("chat-bearer");
    server.script(&key, [Reply::Text("with key".into())]);

    let without = send(
        server.addr(),
        "POST",
        "/v1/chat/completions",
        &[("x-api-key", &key)],
        Provider::Chat.request("hi", false).to_string().as_bytes(),
    );
    assert_eq!(
        without.status, 401,
        "x-api-key is not how OpenAI clients send keys"
    );
    assert_eq!(without.json()["error"]["code"], "invalid_api_key");

    let with = Provider::Chat.ask(&server, &key, "hi", false);
    assert_eq!(Provider::Chat.text_of(&with.json()), "with key");
}
