use serde_json::{Value, json};
use weft_fakellm::{FakeLlm, Reply, Wire};

use crate::support::{ALL, Provider, key, send};

#[test]
fn unscripted_requests_get_the_deterministic_default_reply() {
    let server = FakeLlm::start();
    let key = key("default-reply");
    for provider in ALL {
        let whole = provider.ask(&server, &key, "What is 2+2?", false);
        assert_eq!(
            provider.text_of(&whole.json()),
            "fake reply to: What is 2+2?",
            "{provider:?} whole"
        );
        let streamed = provider.ask(&server, &key, "What is 2+2?", true);
        assert_eq!(
            provider.streamed_text(&streamed.events()),
            "fake reply to: What is 2+2?",
            "{provider:?} streamed"
        );
    }
}

#[test]
fn default_reply_quotes_the_last_user_text_not_tool_results() {
    let server = FakeLlm::start();
    let key = key("default-after-tools");
    let anthropic = json!({
        "model": "m", "max_tokens": 10,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "a.txt"}]},
        ],
    });
    let reply = Provider::Anthropic
        .send(&server, &key, false, &anthropic)
        .json();
    assert_eq!(
        Provider::Anthropic.text_of(&reply),
        "fake reply to: first\nsecond"
    );

    let responses = json!({
        "model": "m",
        "input": [
            {"role": "user", "content": "list files"},
            {"type": "function_call", "call_id": "c", "name": "ls", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "a.txt"},
        ],
    });
    let reply = Provider::Responses
        .send(&server, &key, false, &responses)
        .json();
    assert_eq!(
        Provider::Responses.text_of(&reply),
        "fake reply to: list files"
    );

    let gemini = json!({"contents": [
        {"parts": [{"text": "no role means user"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {}}}]},
    ]});
    let reply = Provider::Gemini.send(&server, &key, false, &gemini).json();
    assert_eq!(
        Provider::Gemini.text_of(&reply),
        "fake reply to: no role means user"
    );

    let long = "é".repeat(250);
    let reply = Provider::Chat.ask(&server, &key, &long, false).json();
    assert_eq!(
        Provider::Chat.text_of(&reply),
        format!("fake reply to: {}", "é".repeat(200)),
        "the quote stops at 200 characters"
    );
}

#[test]
fn default_usage_is_a_quarter_of_the_request_and_reply_characters() {
    let server = FakeLlm::start();
    let key = key("default-usage");
    let request = Provider::Chat.request("abcd", false);
    let request_chars = request.to_string().chars().count() as u64;

    let body = Provider::Chat.send(&server, &key, false, &request).json();

    assert_eq!(body["usage"]["prompt_tokens"], request_chars.div_ceil(4));
    let reply_chars = "fake reply to: abcd".len() as u64;
    assert_eq!(body["usage"]["completion_tokens"], reply_chars.div_ceil(4));
}

#[test]
fn replies_are_queued_per_api_key() {
    let server = FakeLlm::start();
    let (alice, bob) = (key("isolation-alice"), key("isolation-bob"));
    server.script(
        &alice,
        [Reply::Text("alice 1".into()), Reply::Text("alice 2".into())],
    );
    server.script(&bob, [Reply::Text("bob 1".into())]);

    let ask =
        |key: &str| Provider::Chat.text_of(&Provider::Chat.ask(&server, key, "hi", false).json());
    assert_eq!(ask(&bob), "bob 1");
    assert_eq!(ask(&alice), "alice 1");
    assert_eq!(ask(&bob), "fake reply to: hi", "bob's queue is empty now");
    assert_eq!(ask(&alice), "alice 2");
    assert_eq!(server.requests(&alice).len(), 2);
    assert_eq!(server.requests(&bob).len(), 2);
    assert_eq!(server.pending(&alice), 0);
}

#[test]
fn parallel_clients_each_get_their_own_replies() {
    let server = FakeLlm::start();
    std::thread::scope(|scope| {
        for i in 0..8 {
            let server = &server;
            scope.spawn(move || {
                let key = key(&format!("parallel-{i}"));
                server.script(&key, [Reply::Text(format!("reply {i}"))]);
                let provider = ALL[i % 4];
                let events = provider.ask(server, &key, "hi", true).events();
                assert_eq!(provider.streamed_text(&events), format!("reply {i}"));
            });
        }
    });
}

#[test]
fn requests_are_recorded_with_lowercased_headers_and_json_body() {
    let server = FakeLlm::start();
    let key = key("recording");
    Provider::Anthropic.ask(&server, &key, "first", false);
    Provider::Gemini.ask(&server, &key, "second", true);

    let recorded = server.requests(&key);

    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[0].method, "POST");
    assert_eq!(recorded[0].path, "/v1/messages");
    assert_eq!(recorded[0].provider, Wire::Anthropic);
    assert_eq!(recorded[0].header("anthropic-version"), Some("2023-06-01"));
    assert!(
        recorded[0].headers.iter().any(|(n, _)| n == "content-type"),
        "header names are lowercased"
    );
    assert_eq!(recorded[0].body["messages"][0]["content"], "first");
    assert_eq!(recorded[1].provider, Wire::Gemini);
    assert!(
        recorded[1].path.ends_with(":streamGenerateContent?alt=sse"),
        "the query is kept"
    );
    assert_eq!(
        recorded[1].body["contents"][0]["parts"][0]["text"],
        "second"
    );
}

#[test]
fn scripting_over_http_queues_replies_and_lists_requests() {
    let server = FakeLlm::start();
    let key = key("http-script");
    let script = json!([
        {"text": "from http"},
        {"tool_calls": [{"id": "c1", "name": "ls", "arguments": {"dir": "."}}]},
        {"error": {"status": 503, "message": "down"}},
    ]);

    let scripted = send(
        server.addr(),
        "POST",
        &format!("/_fake/script/{key}"),
        &[("Content-Type", "application/json")],
        script.to_string().as_bytes(),
    );
    assert_eq!(scripted.status, 200);
    assert_eq!(scripted.json(), json!({"queued": 3, "pending": 3}));

    let first = Provider::Responses.ask(&server, &key, "hi", false).json();
    assert_eq!(Provider::Responses.text_of(&first), "from http");
    let second = Provider::Responses.ask(&server, &key, "hi", false).json();
    assert_eq!(second["output"][0]["name"], "ls");
    assert_eq!(
        Provider::Responses.ask(&server, &key, "hi", false).status,
        503
    );

    let listed = send(
        server.addr(),
        "GET",
        &format!("/_fake/requests/{key}"),
        &[],
        b"",
    );
    let listed: Vec<Value> = serde_json::from_slice(&listed.body).unwrap();
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0]["provider"], "openai_responses");
    assert_eq!(listed[0]["path"], "/v1/responses");
    assert_eq!(listed[0]["body"]["input"][0]["content"][0]["text"], "hi");

    let bad = send(
        server.addr(),
        "POST",
        &format!("/_fake/script/{key}"),
        &[],
        b"[{\"nope\": 1}]",
    );
    assert_eq!(bad.status, 400, "an unknown reply kind is refused");
}

#[test]
fn unknown_paths_get_a_json_404() {
    let server = FakeLlm::start();

    let response = send(
        server.addr(),
        "POST",
        "/v2/complete",
        &[("x-api-key", "k")],
        b"{}",
    );

    assert_eq!(response.status, 404);
    assert!(
        response.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/v2/complete")
    );
}

#[test]
fn head_on_any_path_is_an_empty_200_and_consumes_no_reply() {
    // Claude Code probes its base URL with `HEAD /api/hello` at start.
    let server = FakeLlm::start();
    let key = key("head-probe");
    server.script(&key, [Reply::Text("kept".into())]);
    for path in ["/", "/api/hello", "/v1/messages"] {
        let response = send(server.addr(), "HEAD", path, &[("x-api-key", &key)], b"");
        assert_eq!(response.status, 200, "{path}");
        assert!(response.body.is_empty(), "{path}");
    }
    assert_eq!(server.pending(&key), 1);
    assert!(server.requests(&key).is_empty(), "a probe is not a request");
}

#[test]
fn requests_without_an_api_key_get_401_in_the_provider_format() {
    let server = FakeLlm::start();
    for provider in ALL {
        let response = send(
            server.addr(),
            "POST",
            &provider.path(false),
            &[("anthropic-version", "2023-06-01")],
            provider.request("hi", false).to_string().as_bytes(),
        );
        assert_eq!(response.status, 401, "{provider:?}");
        let body = response.json();
        match provider {
            Provider::Anthropic => {
                assert_eq!(body["type"], "error");
                assert_eq!(body["error"]["type"], "authentication_error");
            }
            Provider::Responses | Provider::Chat => {
                assert_eq!(body["error"]["code"], "invalid_api_key");
            }
            Provider::Gemini => assert_eq!(body["error"]["status"], "UNAUTHENTICATED"),
        }
    }
    assert_eq!(
        server.requests("").len(),
        4,
        "keyless requests are recorded under \"\""
    );
}

#[tokio::test]
async fn serves_from_inside_an_async_test() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let server = FakeLlm::start();
    let key = key("async");
    server.script(&key, [Reply::Text("async ok".into())]);
    let body = Provider::Chat.request("hi", false).to_string();
    let mut stream = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();

    assert!(raw.starts_with("HTTP/1.1 200 OK\r\n"));
    assert!(raw.contains("\"content\":\"async ok\""));
    drop(server);
}

#[test]
fn a_forever_reply_answers_once_the_queue_is_empty() {
    let server = FakeLlm::start();
    let key = key("forever");
    server.script(&key, [Reply::Text("first".into())]);
    server.script_forever(&key, Reply::Text("again".into()));
    let ask =
        |key: &str| Provider::Chat.text_of(&Provider::Chat.ask(&server, key, "hi", false).json());
    assert_eq!(ask(&key), "first", "the queue comes first");
    for _ in 0..3 {
        assert_eq!(ask(&key), "again");
    }
    assert_eq!(server.pending(&key), 0);

    // Over HTTP, for other processes.
    let other = self::key("forever-http");
    let body = json!({"text": "over http"}).to_string();
    let response = send(
        server.addr(),
        "POST",
        &format!("/_fake/forever/{other}"),
        &[],
        body.as_bytes(),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(ask(&other), "over http");
    assert_eq!(ask(&other), "over http");
}

#[test]
fn a_responder_chooses_each_reply_from_the_request_after_the_queue_and_before_forever() {
    let server = FakeLlm::start();
    let key = key("responder");
    server.script(&key, [Reply::Text("queued".into())]);
    server.script_forever(&key, Reply::Text("forever".into()));
    server.respond_with(&key, |request| {
        let asked = request.body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_uppercase();
        Reply::Text(format!("{asked} via {:?}", request.provider))
    });
    let ask = |prompt: &str| {
        Provider::Chat.text_of(&Provider::Chat.ask(&server, &key, prompt, false).json())
    };
    assert_eq!(ask("one"), "queued", "the queue comes first");
    assert_eq!(ask("two"), "TWO via OpenAiChat");
    assert_eq!(ask("three"), "THREE via OpenAiChat", "for every request");
    assert_eq!(server.requests(&key).len(), 3, "each request is recorded");
}
