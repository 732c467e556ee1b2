//! `weft::llm` against the fake provider server (`weft-fakellm`): every
//! provider's wire format over real HTTP, streaming and not, with retries,
//! timeouts and failover.
//!
//! Hermetic: keys and base URLs come from explicit environment maps (never
//! this process's environment), every test scripts its own random key on a
//! loopback server, and retry waits are recorded instead of slept.

#![allow(clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use weft::llm::{
    CallEvent, Completion, FinishReason, LlmClient, LlmError, LlmSettings, Message,
    ReasoningEffort, Request, RetryPolicy, Sleeper, StreamEvent, Timeouts, ToolResult, ToolSpec,
    Usage,
};
use weft_fakellm::{Recorded, Reply, ToolCall as FakeCall, Usage as FakeUsage};

use super::apis::{Api, SETTINGS};
use super::harness::{fake_llm, fresh_key};

/// A client whose retries wait on a recording sleeper, with short timeouts.
fn client_for(env: &BTreeMap<String, String>) -> (LlmClient, Sleeper) {
    let settings = LlmSettings::parse(SETTINGS).expect("settings");
    let sleeper = Sleeper::recording();
    let client = LlmClient::new(env, &settings)
        .expect("client")
        .with_sleeper(sleeper.clone())
        .with_retry(RetryPolicy {
            initial_delay: Duration::from_millis(5),
            jitter: false,
            ..RetryPolicy::default()
        })
        .with_timeouts(Timeouts {
            request: Duration::from_millis(400),
            stream_idle: Duration::from_millis(400),
        });
    (client, sleeper)
}

/// One API's fixture: a fresh key, a client, a request builder.
struct Fixture {
    api: Api,
    key: String,
    client: LlmClient,
    sleeper: Sleeper,
}

impl Fixture {
    fn new(api: Api) -> Fixture {
        let key = fresh_key(api.provider());
        let mut env = BTreeMap::new();
        env.extend(api.env(&key));
        let (client, sleeper) = client_for(&env);
        Fixture {
            api,
            key,
            client,
            sleeper,
        }
    }

    fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        fake_llm().script(&self.key, replies);
    }

    fn requests(&self) -> Vec<Recorded> {
        fake_llm().requests(&self.key)
    }

    fn request(&self, prompt: &str, stream: bool) -> Request {
        Request {
            model: Some(self.api.model().into()),
            provider: Some(self.api.provider().into()),
            stream,
            ..Request::prompt(prompt)
        }
    }

    async fn call(&self, request: &Request) -> (Result<Completion, LlmError>, Vec<CallEvent>) {
        let mut events = Vec::new();
        let result = self.client.complete(request, |e| events.push(e)).await;
        (result, events)
    }
}

fn streamed_text(events: &[CallEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            CallEvent::Delta(StreamEvent::TextDelta { text }) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn retries(events: &[CallEvent]) -> Vec<(&'static str, Duration)> {
    events
        .iter()
        .filter_map(|e| match e {
            CallEvent::Retry { error, wait, .. } => Some((error.code(), *wait)),
            _ => None,
        })
        .collect()
}

fn read_file_tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        parameters: json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        }),
    }
}

/// The tool result of the second request, in the provider's own format.
fn tool_result_in(api: Api, body: &Value, call_id: &str) -> Value {
    let find = |items: &Value, pred: &dyn Fn(&Value) -> bool| {
        items
            .as_array()
            .and_then(|a| a.iter().find(|v| pred(v)).cloned())
            .unwrap_or(Value::Null)
    };
    match api {
        Api::Anthropic => {
            let last = body["messages"].as_array().and_then(|m| m.last()).cloned();
            last.map_or(Value::Null, |m| m["content"][0].clone())
        }
        Api::OpenAi => find(&body["input"], &|i| i["type"] == "function_call_output"),
        Api::Gemini => {
            let last = body["contents"].as_array().and_then(|m| m.last()).cloned();
            last.map_or(Value::Null, |m| m["parts"][0].clone())
        }
        Api::Compat => find(&body["messages"], &|m| {
            m["role"] == "tool" && m["tool_call_id"] == call_id
        }),
    }
}

fn expected_tool_result(api: Api, call_id: &str) -> Value {
    match api {
        Api::Anthropic => {
            json!({"type": "tool_result", "tool_use_id": call_id, "content": "hello from a.txt"})
        }
        Api::OpenAi => {
            json!({"type": "function_call_output", "call_id": call_id, "output": "hello from a.txt"})
        }
        Api::Gemini => {
            json!({"functionResponse": {"name": "read_file", "response": {"content": "hello from a.txt"}}})
        }
        Api::Compat => {
            json!({"role": "tool", "tool_call_id": call_id, "content": "hello from a.txt"})
        }
    }
}

// ---------------------------------------------------------------------------
// The acceptance checks, run for every API (see the macro at the bottom).

async fn text_reply(api: Api, stream: bool) {
    let f = Fixture::new(api);
    f.script([Reply::Text("The answer is forty-two.".into())]);
    let (result, events) = f.call(&f.request("What is the answer?", stream)).await;
    let done = result.expect("the call succeeds");
    assert_eq!(done.response.text(), "The answer is forty-two.");
    assert_eq!(done.response.finish, FinishReason::Stop);
    assert_eq!(done.response.provider, api.provider());
    assert_eq!(done.target.model, api.model());
    assert_eq!(done.attempts.len(), 1, "no retry was needed");
    let requests = f.requests();
    assert_eq!(requests.len(), 1);
    let auth = match api {
        Api::Anthropic => requests[0].header("x-api-key").map(str::to_string),
        Api::Gemini => requests[0].header("x-goog-api-key").map(str::to_string),
        Api::OpenAi | Api::Compat => requests[0]
            .header("authorization")
            .map(|v| v.trim_start_matches("Bearer ").to_string()),
    };
    assert_eq!(
        auth.as_deref(),
        Some(f.key.as_str()),
        "the key goes in the provider's header"
    );
    if stream {
        let deltas = events
            .iter()
            .filter(|e| matches!(e, CallEvent::Delta(StreamEvent::TextDelta { .. })))
            .count();
        assert!(deltas > 1, "text arrives in several deltas, got {deltas}");
        assert_eq!(
            streamed_text(&events),
            done.response.text(),
            "deltas add up to the reply"
        );
    } else {
        assert!(events.is_empty(), "no deltas without streaming: {events:?}");
    }
}

async fn tool_call_round_trip(api: Api, stream: bool) {
    let f = Fixture::new(api);
    f.script([
        Reply::ToolCalls(vec![FakeCall::new(
            "call_1",
            "read_file",
            json!({"path": "a.txt"}),
        )]),
        Reply::Text("The file says hello.".into()),
    ]);
    let mut request = f.request("Read a.txt", stream);
    request.tools = vec![read_file_tool()];
    let (first, _) = f.call(&request).await;
    let first = first.expect("first turn").response;
    assert_eq!(first.finish, FinishReason::ToolUse);
    let calls = first.tool_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "read_file");
    assert_eq!(calls[0].arguments, json!({"path": "a.txt"}));
    let call_id = calls[0].id.clone();
    assert!(!call_id.is_empty());

    request.messages.push(first.to_message());
    request.messages.push(Message::tool_results([ToolResult {
        call_id: call_id.clone(),
        name: "read_file".into(),
        content: "hello from a.txt".into(),
        is_error: false,
    }]));
    let (second, _) = f.call(&request).await;
    assert_eq!(
        second.expect("second turn").response.text(),
        "The file says hello."
    );

    let requests = f.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        tool_result_in(api, &requests[1].body, &call_id),
        expected_tool_result(api, &call_id),
        "the second request carries the tool result in the provider's format"
    );
    assert!(
        requests[0].body.to_string().contains("read_file"),
        "the first request declares the tool"
    );
}

async fn reasoning_effort_in_the_body(api: Api) {
    let f = Fixture::new(api);
    let mut request = f.request("Think hard", false);
    request.reasoning_effort = Some(ReasoningEffort::High);
    f.call(&request).await.0.expect("the call succeeds");
    let body = &f.requests()[0].body;
    match api {
        Api::Anthropic => {
            assert_eq!(
                body["thinking"],
                json!({"type": "enabled", "budget_tokens": 24576})
            );
            assert!(
                body["max_tokens"].as_u64() > Some(24576),
                "max_tokens must exceed the thinking budget: {}",
                body["max_tokens"]
            );
        }
        Api::OpenAi => assert_eq!(body["reasoning"]["effort"], "high"),
        Api::Gemini => assert_eq!(
            body["generationConfig"]["thinkingConfig"]["thinkingBudget"],
            24576
        ),
        Api::Compat => assert_eq!(body["reasoning_effort"], "high"),
    }
}

async fn usage_with_cache_tokens(api: Api, stream: bool) {
    let f = Fixture::new(api);
    let scripted = FakeUsage {
        input: 1000,
        output: 200,
        reasoning: 50,
        cache_read: 600,
        cache_write: 100,
    };
    f.script([Reply::Turn {
        text: Some("cached".into()),
        tool_calls: vec![],
        usage: Some(scripted),
        finish: None,
    }]);
    let (result, _) = f.call(&f.request("hi", stream)).await;
    let done = result.expect("the call succeeds");
    // What each API can report: Anthropic has no reasoning count, only
    // Anthropic reports cache writes (the others count them as plain input).
    let expected = Usage {
        input: 1000,
        output: 200,
        reasoning: if api == Api::Anthropic { 0 } else { 50 },
        cache_read: 600,
        cache_write: if api == Api::Anthropic { 100 } else { 0 },
    };
    assert_eq!(done.response.usage, expected);
    match api {
        Api::Compat => assert_eq!(done.cost, None, "llama3.1 has no price"),
        _ => {
            let info = f
                .client
                .catalog()
                .lookup(api.model())
                .expect("in the catalog");
            let cost = done.cost.expect("priced");
            assert_eq!(Some(cost), info.cost(&expected, None));
            assert!(cost > 0.0);
        }
    }
}

async fn rate_limit_honours_retry_after(api: Api) {
    let f = Fixture::new(api);
    f.script([
        Reply::Error {
            status: 429,
            retry_after: Some(7),
            message: "slow down".into(),
        },
        Reply::Text("after the wait".into()),
    ]);
    let (result, events) = f.call(&f.request("hi", false)).await;
    assert_eq!(result.expect("retried").response.text(), "after the wait");
    assert_eq!(
        f.sleeper.waits(),
        vec![Duration::from_secs(7)],
        "waited as asked"
    );
    assert_eq!(
        retries(&events),
        vec![("llm.rate_limited", Duration::from_secs(7))]
    );
    assert_eq!(f.requests().len(), 2);
}

async fn server_errors_are_retried(api: Api) {
    let f = Fixture::new(api);
    f.script([
        Reply::Error {
            status: 500,
            retry_after: None,
            message: "boom".into(),
        },
        Reply::Error {
            status: 503,
            retry_after: None,
            message: "unavailable".into(),
        },
        Reply::Text("third time".into()),
    ]);
    let (result, events) = f.call(&f.request("hi", false)).await;
    let done = result.expect("retried");
    assert_eq!(done.response.text(), "third time");
    assert_eq!(done.attempts.len(), 3);
    assert_eq!(
        f.sleeper.waits(),
        vec![Duration::from_millis(5), Duration::from_millis(10)],
        "exponential backoff"
    );
    assert_eq!(retries(&events).len(), 2);
}

async fn auth_errors_are_not_retried(api: Api) {
    let f = Fixture::new(api);
    f.script([Reply::Error {
        status: 401,
        retry_after: None,
        message: "invalid x-api-key".into(),
    }]);
    let (result, events) = f.call(&f.request("hi", false)).await;
    let error = result.expect_err("401 fails");
    assert_eq!(error.code(), "llm.auth");
    assert!(!error.is_retryable());
    assert_eq!(f.requests().len(), 1, "exactly one request");
    assert!(f.sleeper.waits().is_empty());
    assert!(
        !format!("{error} {error:?} {events:?}").contains(&f.key),
        "the key appears in no error or event"
    );
}

async fn broken_stream_is_retried(api: Api, stream: bool) {
    let f = Fixture::new(api);
    f.script([
        Reply::BreakStream {
            after_events: 3,
            text: "this reply will never be finished".into(),
        },
        Reply::Text("complete this time".into()),
    ]);
    let (result, events) = f.call(&f.request("hi", stream)).await;
    assert_eq!(
        result.expect("retried").response.text(),
        "complete this time"
    );
    let expected = if stream {
        "llm.broken_stream"
    } else {
        "llm.network"
    };
    assert_eq!(
        retries(&events).iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![expected]
    );
    assert_eq!(f.requests().len(), 2);
}

async fn hanging_server_times_out(api: Api, stream: bool) {
    let f = Fixture::new(api);
    f.script([Reply::Hang, Reply::Hang, Reply::Hang, Reply::Hang]);
    let started = std::time::Instant::now();
    let (result, events) = f.call(&f.request("hi", stream)).await;
    let error = result.expect_err("times out");
    assert_eq!(error.code(), "llm.timeout");
    assert_eq!(f.requests().len(), 4, "the first attempt and 3 retries");
    assert_eq!(retries(&events).len(), 3);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the timeout is honoured"
    );
}

async fn malformed_replies_are_not_retried(api: Api, stream: bool) {
    let f = Fixture::new(api);
    f.script([Reply::MalformedSse]);
    let (result, _) = f.call(&f.request("hi", stream)).await;
    assert_eq!(
        result.map(|_| ()).map_err(|e| e.code()),
        Err("llm.invalid_response")
    );
    assert_eq!(f.requests().len(), 1);
}

macro_rules! for_every_api {
    ($($module:ident => $api:expr),* $(,)?) => {$(
        mod $module {
            use super::*;

            #[tokio::test]
            async fn text() { text_reply($api, false).await }
            #[tokio::test]
            async fn streaming_text_with_deltas() { text_reply($api, true).await }
            #[tokio::test]
            async fn tool_call_round_trip() { super::tool_call_round_trip($api, false).await }
            #[tokio::test]
            async fn streaming_tool_call_round_trip() { super::tool_call_round_trip($api, true).await }
            #[tokio::test]
            async fn reasoning_effort_is_mapped() { reasoning_effort_in_the_body($api).await }
            #[tokio::test]
            async fn usage_includes_cache_tokens() { usage_with_cache_tokens($api, false).await }
            #[tokio::test]
            async fn streaming_usage_includes_cache_tokens() { usage_with_cache_tokens($api, true).await }
            #[tokio::test]
            async fn rate_limit_429_waits_for_retry_after() { rate_limit_honours_retry_after($api).await }
            #[tokio::test]
            async fn server_error_500_is_retried() { server_errors_are_retried($api).await }
            #[tokio::test]
            async fn auth_error_401_is_not_retried() { auth_errors_are_not_retried($api).await }
            #[tokio::test]
            async fn broken_stream_is_retried() { super::broken_stream_is_retried($api, true).await }
            #[tokio::test]
            async fn truncated_body_is_retried() { super::broken_stream_is_retried($api, false).await }
            #[tokio::test]
            async fn hang_times_out_after_retries() { hanging_server_times_out($api, false).await }
            #[tokio::test]
            async fn streaming_hang_times_out_after_retries() { hanging_server_times_out($api, true).await }
            #[tokio::test]
            async fn malformed_sse_is_an_invalid_response() { malformed_replies_are_not_retried($api, true).await }
            #[tokio::test]
            async fn malformed_json_is_an_invalid_response() { malformed_replies_are_not_retried($api, false).await }
        }
    )*};
}

for_every_api! {
    anthropic => Api::Anthropic,
    openai => Api::OpenAi,
    gemini => Api::Gemini,
    openai_compat => Api::Compat,
}

// ---------------------------------------------------------------------------
// Failover, resolution and the catalog.

/// Anthropic and OpenAI both pointed at the fake server, each with its key.
fn two_providers() -> (String, String, LlmClient, Sleeper) {
    let (a, o) = (fresh_key("primary"), fresh_key("fallback"));
    let mut env = BTreeMap::new();
    env.extend(Api::Anthropic.env(&a));
    env.extend(Api::OpenAi.env(&o));
    let (client, sleeper) = client_for(&env);
    (a, o, client, sleeper)
}

#[tokio::test]
async fn exhausted_server_errors_fail_over_to_the_next_provider() {
    let (primary, fallback, client, _) = two_providers();
    let error = || Reply::Error {
        status: 500,
        retry_after: None,
        message: "down".into(),
    };
    fake_llm().script(&primary, [error(), error(), error(), error()]);
    fake_llm().script(&fallback, [Reply::Text("from the fallback".into())]);
    let client = client.with_fallbacks(vec!["gemini".into(), "openai".into()]);
    let request = Request {
        model: Some("sonnet".into()),
        ..Request::prompt("hi")
    };
    let mut events = Vec::new();
    let done = client
        .complete(&request, |e| events.push(e))
        .await
        .expect("the fallback answers");
    assert_eq!(done.response.text(), "from the fallback");
    assert_eq!(
        done.target.to_string(),
        "openai/gpt-5.5",
        "a bare provider means its default model"
    );
    assert_eq!(
        fake_llm().requests(&primary).len(),
        4,
        "the primary got its retries first"
    );
    assert_eq!(done.attempts.len(), 5);
    let failovers: Vec<(String, String, &str)> = events
        .iter()
        .filter_map(|e| match e {
            CallEvent::Failover { from, to, error } => {
                Some((from.to_string(), to.to_string(), error.code()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        failovers,
        vec![(
            "anthropic/claude-sonnet-4-6".to_string(),
            "openai/gpt-5.5".to_string(),
            "llm.server"
        )],
        "the failover is reported"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, CallEvent::Warning(w) if w.contains("gemini"))),
        "gemini, which has no key here, is skipped with a warning"
    );
}

#[tokio::test]
async fn permanent_errors_do_not_fail_over() {
    let (primary, fallback, client, _) = two_providers();
    fake_llm().script(
        &primary,
        [Reply::Error {
            status: 400,
            retry_after: None,
            message: "bad request".into(),
        }],
    );
    let client = client.with_fallbacks(vec!["openai".into()]);
    let request = Request {
        provider: Some("anthropic".into()),
        ..Request::prompt("hi")
    };
    let error = client
        .complete(&request, |_| {})
        .await
        .expect_err("400 is final");
    assert_eq!(error.code(), "llm.bad_request");
    assert!(
        fake_llm().requests(&fallback).is_empty(),
        "no failover for a bad request"
    );
}

#[tokio::test]
async fn retry_after_beyond_the_cap_fails_over_at_once() {
    let (primary, fallback, client, sleeper) = two_providers();
    fake_llm().script(
        &primary,
        [Reply::Error {
            status: 429,
            retry_after: Some(3600),
            message: "come back in an hour".into(),
        }],
    );
    fake_llm().script(&fallback, [Reply::Text("ok".into())]);
    let client = client.with_fallbacks(vec!["openai/gpt-5.4-mini".into()]);
    let done = client
        .complete(&Request::prompt("hi"), |_| {})
        .await
        .expect("fallback");
    assert!(sleeper.waits().is_empty(), "an hour is not waited for");
    assert_eq!(done.target.to_string(), "openai/gpt-5.4-mini");
    assert_eq!(
        fake_llm().requests(&fallback)[0].body["model"],
        "gpt-5.4-mini"
    );
}

#[tokio::test]
async fn unknown_models_pass_through_with_a_warning() {
    let f = Fixture::new(Api::Compat);
    let request = Request {
        model: Some("my-custom-finetune".into()),
        provider: Some("local".into()),
        ..Request::prompt("hi")
    };
    let (result, events) = f.call(&request).await;
    let done = result.expect("an unknown model is no error");
    assert_eq!(
        f.requests()[0].body["model"],
        "my-custom-finetune",
        "sent as written"
    );
    assert!(done.response.text().starts_with("fake reply to: hi"));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, CallEvent::Warning(w) if w.contains("my-custom-finetune"))),
        "{events:?}"
    );
}

#[tokio::test]
async fn the_provider_is_inferred_from_the_catalog_alias() {
    let f = Fixture::new(Api::Gemini);
    let request = Request {
        model: Some("gemini-flash".into()),
        ..Request::prompt("hi")
    };
    let (result, events) = f.call(&request).await;
    assert_eq!(
        result.expect("ok").target.to_string(),
        "gemini/gemini-3-flash-preview"
    );
    assert!(events.is_empty(), "a known alias warns about nothing");
    assert!(
        f.requests()[0]
            .path
            .contains("/models/gemini-3-flash-preview:generateContent")
    );
}

#[tokio::test]
async fn without_model_or_provider_the_first_configured_key_wins() {
    // Only OpenAI and Gemini have keys: OpenAI comes before Gemini.
    let (o, g) = (fresh_key("detect-openai"), fresh_key("detect-gemini"));
    let mut env = BTreeMap::new();
    env.extend(Api::OpenAi.env(&o));
    env.extend(Api::Gemini.env(&g));
    let (client, _) = client_for(&env);
    let done = client
        .complete(&Request::prompt("hi"), |_| {})
        .await
        .expect("ok");
    assert_eq!(done.target.to_string(), "openai/gpt-5.5");
    assert_eq!(fake_llm().requests(&o).len(), 1);
    assert!(fake_llm().requests(&g).is_empty());
}

#[tokio::test]
async fn a_provider_in_settings_serves_its_models_without_naming_it() {
    let f = Fixture::new(Api::Compat);
    let request = Request {
        model: Some("llama3.1".into()),
        ..Request::prompt("hi")
    };
    let (result, events) = f.call(&request).await;
    assert_eq!(result.expect("ok").target.to_string(), "local/llama3.1");
    assert!(
        events.is_empty(),
        "a listed model is not unknown: {events:?}"
    );
    assert!(f.requests()[0].path.ends_with("/v1/chat/completions"));
}
