use serde_json::{Value, json};
use weft_fakellm::{FakeLlm, Finish, Reply, ToolCall, Usage};

use crate::support::{MODEL, Provider, key, send};

#[test]
fn gemini_generate_content_returns_a_candidate_and_usage_metadata() {
    let server = FakeLlm::start();
    let key = key("gemini-text");
    server.script(&key, [Reply::Text("Bonjour.".into())]);

    let body = Provider::Gemini.ask(&server, &key, "hi", false).json();

    let candidate = &body["candidates"][0];
    assert_eq!(candidate["content"]["role"], "model");
    assert_eq!(candidate["content"]["parts"], json!([{"text": "Bonjour."}]));
    assert_eq!(candidate["finishReason"], "STOP");
    assert_eq!(body["modelVersion"], MODEL, "the model comes from the path");
    let usage = &body["usageMetadata"];
    assert!(usage["promptTokenCount"].as_u64() > Some(0));
    assert!(usage["candidatesTokenCount"].as_u64() > Some(0));
    assert!(
        usage.get("thoughtsTokenCount").is_none(),
        "zero counts are left out"
    );
}

#[test]
fn gemini_stream_with_alt_sse_sends_crlf_delimited_chunks() {
    let server = FakeLlm::start();
    let key = key("gemini-stream");
    server.script(&key, [Reply::Text("uno dos tres".into())]);

    let response = Provider::Gemini.ask(&server, &key, "count", true);

    assert!(response.complete);
    assert!(
        response.text().contains("\r\n\r\n"),
        "Gemini's SSE lines end in CRLF"
    );
    let events = response.events();
    assert_eq!(events.len(), 3, "one chunk per word");
    assert_eq!(Provider::Gemini.streamed_text(&events), "uno dos tres");
    let chunks: Vec<Value> = events.iter().map(|e| e.json()).collect();
    assert!(
        chunks[..2]
            .iter()
            .all(|c| c["candidates"][0].get("finishReason").is_none())
    );
    assert_eq!(chunks[2]["candidates"][0]["finishReason"], "STOP");
    assert!(chunks[2]["usageMetadata"]["candidatesTokenCount"].as_u64() > Some(0));
}

#[test]
fn gemini_stream_without_alt_sse_is_one_json_array_of_chunks() {
    let server = FakeLlm::start();
    let key = key("gemini-array");
    server.script(&key, [Reply::Text("a b".into())]);

    let response = send(
        server.addr(),
        "POST",
        &format!("/v1beta/models/{MODEL}:streamGenerateContent"),
        &[("x-goog-api-key", &key)],
        Provider::Gemini.request("hi", true).to_string().as_bytes(),
    );

    assert_eq!(response.header("content-type"), Some("application/json"));
    let chunks = response.json();
    assert_eq!(chunks.as_array().map(Vec::len), Some(2));
    assert_eq!(chunks[1]["candidates"][0]["finishReason"], "STOP");
}

#[test]
fn gemini_function_calls_are_parts_with_object_args() {
    let server = FakeLlm::start();
    let key = key("gemini-tools");
    let args = json!({"location": "Paris", "unit": "celsius"});
    let turn = Reply::Turn {
        text: Some("Checking.".into()),
        tool_calls: vec![ToolCall::new("", "get_weather", args.clone())],
        usage: None,
        finish: None,
    };
    server.script(&key, [turn.clone(), turn]);

    let body = Provider::Gemini
        .ask(&server, &key, "weather?", false)
        .json();
    let parts = &body["candidates"][0]["content"]["parts"];
    assert_eq!(parts[0]["text"], "Checking.");
    assert_eq!(
        parts[1]["functionCall"],
        json!({"name": "get_weather", "args": args})
    );
    assert_eq!(body["candidates"][0]["finishReason"], "STOP");

    let events = Provider::Gemini
        .ask(&server, &key, "weather?", true)
        .events();
    let last = events.last().unwrap().json();
    assert_eq!(
        last["candidates"][0]["content"]["parts"][0]["functionCall"]["args"], args,
        "a function call arrives whole in one chunk"
    );
}

#[test]
fn gemini_key_may_come_from_the_query() {
    let server = FakeLlm::start();
    let key = key("gemini-query-key");
    server.script(&key, [Reply::Text("by query".into())]);

    let response = send(
        server.addr(),
        "POST",
        &format!("/v1beta/models/{MODEL}:generateContent?key={key}"),
        &[("Content-Type", "application/json")],
        Provider::Gemini.request("hi", false).to_string().as_bytes(),
    );

    assert_eq!(Provider::Gemini.text_of(&response.json()), "by query");
    assert_eq!(server.requests(&key).len(), 1);
}

#[test]
fn gemini_usage_reports_thoughts_apart_from_candidates() {
    let server = FakeLlm::start();
    let key = key("gemini-usage");
    server.script(
        &key,
        [Reply::Turn {
            text: Some("long".into()),
            tool_calls: vec![],
            usage: Some(Usage {
                input: 100,
                output: 50,
                reasoning: 30,
                cache_read: 64,
                cache_write: 3,
            }),
            finish: Some(Finish::MaxTokens),
        }],
    );

    let body = Provider::Gemini.ask(&server, &key, "q", false).json();

    assert_eq!(body["candidates"][0]["finishReason"], "MAX_TOKENS");
    assert_eq!(
        body["usageMetadata"],
        json!({
            "promptTokenCount": 100,
            "candidatesTokenCount": 20,
            "thoughtsTokenCount": 30,
            "cachedContentTokenCount": 64,
            "totalTokenCount": 150,
        })
    );
}
