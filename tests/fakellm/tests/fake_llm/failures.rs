use std::io::ErrorKind;
use std::time::Duration;

use weft_fakellm::{FakeLlm, Reply};

use crate::support::{ALL, Provider, key, send, try_send};

#[test]
fn error_replies_use_the_provider_error_format_and_retry_after() {
    let server = FakeLlm::start();
    for provider in ALL {
        let key = key(&format!("errors-{provider:?}"));
        server.script(
            &key,
            [
                Reply::Error {
                    status: 429,
                    retry_after: Some(7),
                    message: "slow down".into(),
                },
                Reply::Error {
                    status: 500,
                    retry_after: None,
                    message: "boom".into(),
                },
            ],
        );

        let limited = provider.ask(&server, &key, "hi", true);
        assert_eq!(
            limited.status, 429,
            "{provider:?}: errors come before any stream"
        );
        assert_eq!(limited.header("retry-after"), Some("7"));
        let body = limited.json();
        match provider {
            Provider::Anthropic => {
                assert_eq!(body["type"], "error");
                assert_eq!(body["error"]["type"], "rate_limit_error");
                assert_eq!(body["error"]["message"], "slow down");
            }
            Provider::Responses | Provider::Chat => {
                assert_eq!(body["error"]["code"], "rate_limit_exceeded");
                assert_eq!(body["error"]["message"], "slow down");
            }
            Provider::Gemini => {
                assert_eq!(body["error"]["code"], 429);
                assert_eq!(body["error"]["status"], "RESOURCE_EXHAUSTED");
                assert_eq!(body["error"]["message"], "slow down");
            }
        }

        let failed = provider.ask(&server, &key, "hi", false);
        assert_eq!(failed.status, 500);
        assert_eq!(failed.header("retry-after"), None);
        let failed = failed.json();
        let kind = match provider {
            Provider::Anthropic | Provider::Responses | Provider::Chat => &failed["error"]["type"],
            Provider::Gemini => &failed["error"]["status"],
        };
        let expected = match provider {
            Provider::Anthropic => "api_error",
            Provider::Responses | Provider::Chat => "server_error",
            Provider::Gemini => "INTERNAL",
        };
        assert_eq!(kind, expected, "{provider:?}");
    }
}

#[test]
fn break_stream_cuts_the_chunked_body_before_the_final_event() {
    let server = FakeLlm::start();
    for provider in ALL {
        let key = key(&format!("break-{provider:?}"));
        server.script(
            &key,
            [
                Reply::BreakStream {
                    after_events: 2,
                    text: "never finished at all".into(),
                },
                Reply::BreakStream {
                    after_events: 1000,
                    text: "almost but not quite".into(),
                },
            ],
        );

        let response = provider.ask(&server, &key, "hi", true);
        assert_eq!(response.status, 200);
        assert!(
            !response.complete,
            "{provider:?}: the chunked body never ends properly"
        );
        assert_eq!(response.events().len(), 2, "{provider:?}");

        let almost = provider.ask(&server, &key, "hi", true);
        assert!(!almost.complete);
        let events = almost.events();
        let last = events.last().unwrap();
        let final_event_seen = match provider {
            Provider::Anthropic => last.event.as_deref() == Some("message_stop"),
            Provider::Responses => last.event.as_deref() == Some("response.completed"),
            Provider::Chat => last.data == "[DONE]",
            Provider::Gemini => last.json()["candidates"][0].get("finishReason").is_some(),
        };
        assert!(
            !final_event_seen,
            "{provider:?}: the last event is never sent"
        );
    }
}

#[test]
fn break_stream_without_streaming_sends_half_the_declared_body() {
    let server = FakeLlm::start();
    let key = key("break-whole");
    server.script(
        &key,
        [Reply::BreakStream {
            after_events: 0,
            text: "cut".into(),
        }],
    );

    let response = Provider::Anthropic.ask(&server, &key, "hi", false);

    assert_eq!(response.status, 200);
    assert!(!response.complete, "fewer bytes than Content-Length");
    let declared: usize = response.header("content-length").unwrap().parse().unwrap();
    assert_eq!(response.body.len(), declared / 2);
    assert!(serde_json::from_slice::<serde_json::Value>(&response.body).is_err());
}

#[test]
fn hang_never_answers() {
    let server = FakeLlm::start();
    let key = key("hang");
    server.script(&key, [Reply::Hang]);
    let body = Provider::Chat.request("hi", false).to_string();
    let bearer = format!("Bearer {key}");

    let result = try_send(
        server.addr(),
        "POST",
        "/v1/chat/completions",
        &[("Authorization", &bearer)],
        body.as_bytes(),
        Duration::from_millis(300),
    );

    let error = result.expect_err("a hanging reply sends nothing");
    assert!(
        matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "the read timed out: {error}"
    );
    assert_eq!(
        server.requests(&key).len(),
        1,
        "the request was still recorded"
    );
}

#[test]
fn dropping_the_server_closes_hanging_connections() {
    use std::io::{Read, Write};

    let server = FakeLlm::start();
    let key = key("hang-drop");
    server.script(&key, [Reply::Hang]);
    let body = Provider::Chat.request("hi", false).to_string();
    let mut stream = std::net::TcpStream::connect(server.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nAuthorization: Bearer {key}\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // Wait until the server has the request, so the drop hits a hanging reply.
    while server.requests(&key).is_empty() {
        std::thread::sleep(Duration::from_millis(5));
    }

    drop(server);

    let mut rest = Vec::new();
    let read = stream.read_to_end(&mut rest);
    assert!(
        matches!(read, Ok(0))
            || read
                .as_ref()
                .is_err_and(|e| e.kind() == ErrorKind::ConnectionReset),
        "the connection ends without an answer: {read:?}"
    );
}

#[test]
fn malformed_sse_is_not_json() {
    let server = FakeLlm::start();
    let key = key("malformed");
    server.script(&key, [Reply::MalformedSse, Reply::MalformedSse]);

    let streamed = Provider::Anthropic.ask(&server, &key, "hi", true);
    assert_eq!(streamed.status, 200);
    assert!(streamed.complete);
    let events = streamed.events();
    assert!(!events.is_empty());
    assert!(
        events
            .iter()
            .all(|e| serde_json::from_str::<serde_json::Value>(&e.data).is_err()),
        "no event carries valid JSON"
    );

    let whole = Provider::Anthropic.ask(&server, &key, "hi", false);
    assert_eq!(whole.status, 200);
    assert!(serde_json::from_slice::<serde_json::Value>(&whole.body).is_err());
}

#[test]
fn raw_status_is_sent_as_given() {
    let server = FakeLlm::start();
    let key = key("raw");
    server.script(
        &key,
        [Reply::RawStatus {
            status: 502,
            body: "<html>bad gateway</html>".into(),
            headers: vec![
                ("Content-Type".into(), "text/html".into()),
                ("x-request-id".into(), "req_1".into()),
            ],
        }],
    );

    let response = Provider::Gemini.ask(&server, &key, "hi", false);

    assert_eq!(response.status, 502);
    assert_eq!(response.header("content-type"), Some("text/html"));
    assert_eq!(response.header("x-request-id"), Some("req_1"));
    assert_eq!(response.text(), "<html>bad gateway</html>");
}

#[test]
fn chunked_request_bodies_are_accepted() {
    let server = FakeLlm::start();
    let key = key("chunked-request");
    server.script(&key, [Reply::Text("got it".into())]);
    let body = Provider::Chat.request("chunked hello", false).to_string();
    let (a, b) = body.split_at(10);
    let chunked = format!("{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n", a.len(), b.len());
    let bearer = format!("Bearer {key}");

    let response = send(
        server.addr(),
        "POST",
        "/v1/chat/completions",
        &[("Authorization", &bearer), ("Transfer-Encoding", "chunked")],
        chunked.as_bytes(),
    );

    assert_eq!(Provider::Chat.text_of(&response.json()), "got it");
    assert_eq!(
        server.requests(&key)[0].body["messages"][1]["content"],
        "chunked hello"
    );
}

#[test]
fn break_in_tool_call_stops_after_the_first_call_starts() {
    let server = FakeLlm::start();
    for provider in ALL {
        let key = key(&format!("break-tool-{provider:?}"));
        let arguments = serde_json::json!({"file_path": "src/a/very/long/path/to/main.rs"});
        server.script(
            &key,
            [Reply::BreakInToolCall {
                tool_calls: vec![
                    weft_fakellm::ToolCall::new("", "read_file", arguments.clone()),
                    weft_fakellm::ToolCall::new("", "grep", serde_json::json!({})),
                ],
            }],
        );
        let response = provider.ask(&server, &key, "hi", true);
        assert_eq!(response.status, 200);
        assert!(!response.complete, "{provider:?}: the body never ends");
        let data: String = response.events().iter().map(|e| e.data.clone()).collect();
        assert!(
            data.contains("read_file"),
            "{provider:?}: the first call started: {data}"
        );
        assert!(
            !data.contains("\"grep\""),
            "{provider:?}: the second never did: {data}"
        );
        if !matches!(provider, Provider::Gemini) {
            assert!(
                !data.contains("main.rs"),
                "{provider:?}: the arguments are cut short: {data}"
            );
        }
    }
}
