use serde_json::{Value, json};
use weft_fakellm::{FakeLlm, Finish, Reply, ToolCall, Usage};

use crate::support::{MODEL, Provider, key};

#[test]
fn responses_text_reply_is_a_completed_response_with_output_text() {
    let server = FakeLlm::start();
    let key = key("responses-text");
    server.script(&key, [Reply::Text("Done.".into())]);

    let body = Provider::Responses.ask(&server, &key, "hi", false).json();

    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    assert_eq!(body["model"], MODEL);
    let output = body["output"].as_array().unwrap();
    assert_eq!(output.len(), 1);
    assert_eq!(output[0]["type"], "message");
    assert_eq!(output[0]["role"], "assistant");
    assert_eq!(output[0]["content"][0]["type"], "output_text");
    assert_eq!(output[0]["content"][0]["text"], "Done.");
    let usage = &body["usage"];
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(usage["input_tokens"].as_u64().unwrap() + usage["output_tokens"].as_u64().unwrap())
    );
    assert_eq!(usage["input_tokens_details"]["cached_tokens"], 0);
    assert_eq!(usage["output_tokens_details"]["reasoning_tokens"], 0);
}

#[test]
fn responses_stream_emits_semantic_events_ending_with_response_completed() {
    let server = FakeLlm::start();
    let key = key("responses-stream");
    server.script(&key, [Reply::Text("alpha beta".into())]);

    let response = Provider::Responses.ask(&server, &key, "hi", true);

    assert!(response.complete);
    let events = response.events();
    let names: Vec<&str> = events.iter().filter_map(|e| e.event.as_deref()).collect();
    assert_eq!(
        names,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    for (i, event) in events.iter().enumerate() {
        let data = event.json();
        assert_eq!(data["type"].as_str(), event.event.as_deref());
        assert_eq!(
            data["sequence_number"], i,
            "sequence numbers count up from 0"
        );
    }
    assert_eq!(Provider::Responses.streamed_text(&events), "alpha beta");
    let created = events[0].json();
    assert_eq!(created["response"]["status"], "in_progress");
    let completed = events.last().unwrap().json();
    assert_eq!(completed["response"]["status"], "completed");
    assert!(completed["response"]["usage"]["output_tokens"].as_u64() > Some(0));
    assert_eq!(
        completed["response"]["output"][0]["content"][0]["text"],
        "alpha beta"
    );
}

#[test]
fn responses_function_calls_carry_arguments_as_a_json_string() {
    let server = FakeLlm::start();
    let key = key("responses-tools");
    let arguments = json!({"command": "cargo test --workspace", "timeout_ms": 60000});
    let call = ToolCall::new("call_1", "shell", arguments.clone());
    server.script(
        &key,
        [
            Reply::ToolCalls(vec![call.clone()]),
            Reply::ToolCalls(vec![call]),
        ],
    );

    let body = Provider::Responses
        .ask(&server, &key, "test it", false)
        .json();
    let item = &body["output"][0];
    assert_eq!(item["type"], "function_call");
    assert_eq!(item["call_id"], "call_1");
    assert_eq!(item["name"], "shell");
    let parsed: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(parsed, arguments);

    let events = Provider::Responses
        .ask(&server, &key, "test it", true)
        .events();
    let added = events
        .iter()
        .find(|e| e.event.as_deref() == Some("response.output_item.added"))
        .unwrap()
        .json();
    assert_eq!(added["item"]["type"], "function_call");
    assert_eq!(added["item"]["call_id"], "call_1");
    let deltas: String = events
        .iter()
        .filter(|e| e.event.as_deref() == Some("response.function_call_arguments.delta"))
        .map(|e| e.json()["delta"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(serde_json::from_str::<Value>(&deltas).unwrap(), arguments);
    let done = events
        .iter()
        .find(|e| e.event.as_deref() == Some("response.output_item.done"))
        .unwrap()
        .json();
    assert_eq!(done["item"]["arguments"], arguments.to_string());
}

#[test]
fn responses_reasoning_usage_adds_a_reasoning_item_and_token_details() {
    let server = FakeLlm::start();
    let key = key("responses-reasoning");
    server.script(
        &key,
        [Reply::Turn {
            text: Some("42".into()),
            tool_calls: vec![],
            usage: Some(Usage {
                input: 50,
                output: 30,
                reasoning: 25,
                cache_read: 40,
                cache_write: 7,
            }),
            finish: None,
        }],
    );

    let body = Provider::Responses
        .ask(&server, &key, "think", false)
        .json();

    assert_eq!(body["output"][0]["type"], "reasoning");
    assert_eq!(body["output"][1]["type"], "message");
    assert_eq!(
        body["usage"],
        json!({
            "input_tokens": 50,
            "input_tokens_details": {"cached_tokens": 40},
            "output_tokens": 30,
            "output_tokens_details": {"reasoning_tokens": 25},
            "total_tokens": 80,
        })
    );
}

#[test]
fn responses_max_tokens_finish_is_an_incomplete_response() {
    let server = FakeLlm::start();
    let key = key("responses-incomplete");
    let cut = Reply::Turn {
        text: Some("and then".into()),
        tool_calls: vec![],
        usage: None,
        finish: Some(Finish::MaxTokens),
    };
    server.script(&key, [cut.clone(), cut]);

    let body = Provider::Responses
        .ask(&server, &key, "go on", false)
        .json();
    assert_eq!(body["status"], "incomplete");
    assert_eq!(body["incomplete_details"]["reason"], "max_output_tokens");

    let events = Provider::Responses
        .ask(&server, &key, "go on", true)
        .events();
    assert_eq!(
        events.last().unwrap().event.as_deref(),
        Some("response.incomplete")
    );
}
