//! `weft::agent::Session` against the fake provider server: the agent loop
//! over real HTTP in each provider's wire format, with real tools in a
//! temporary work dir — limits, loop detection, compaction, steering,
//! cancellation and the transcript.

#![allow(clippy::expect_used)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use weft::agent::tools::Workspace;
use weft::agent::transcript::Entry;
use weft::agent::{
    AgentEvent, Limits, Permissions, Reply, Session, SessionConfig, SessionError, SessionErrorKind,
};
use weft::exec::cancel::{Cancel, CancelReason};
use weft::llm::{LlmClient, LlmSettings, Request, RetryPolicy, Sleeper};
use weft_fakellm::{Recorded, Reply as Fake, ToolCall, Usage as FakeUsage};

use super::apis::{Api, SETTINGS};
use super::harness::{fake_llm, fresh_key};

/// One test's agent: a fresh key on the shared fake server, a client, a
/// work dir and a stage directory.
struct Fixture {
    api: Api,
    key: String,
    client: LlmClient,
    work: tempfile::TempDir,
    stage: tempfile::TempDir,
    cancel: Cancel,
}

/// What a session gave back.
struct Outcome {
    result: Result<Reply, SessionError>,
    events: Vec<AgentEvent>,
    files_touched: Vec<String>,
    usage: weft::llm::Usage,
}

impl Fixture {
    fn new(api: Api) -> Fixture {
        let key = fresh_key(&format!("agent-{}", api.provider()));
        let settings = LlmSettings::parse(SETTINGS).expect("settings");
        let client = LlmClient::new(&api.env(&key), &settings)
            .expect("client")
            .with_sleeper(Sleeper::recording())
            .with_retry(RetryPolicy {
                initial_delay: Duration::from_millis(1),
                jitter: false,
                ..RetryPolicy::default()
            });
        Fixture {
            api,
            key,
            client,
            work: tempfile::tempdir().expect("work dir"),
            stage: tempfile::tempdir().expect("stage dir"),
            cancel: Cancel::new(),
        }
    }

    fn script(&self, replies: impl IntoIterator<Item = Fake>) {
        fake_llm().script(&self.key, replies);
    }

    fn requests(&self) -> Vec<Recorded> {
        fake_llm().requests(&self.key)
    }

    fn write(&self, path: &str, text: &str) {
        std::fs::write(self.work.path().join(path), text).expect("write a work file");
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.work.path().join(path)).expect("read a work file")
    }

    fn config(&self, stream: bool) -> SessionConfig {
        SessionConfig {
            request: Request {
                model: Some(self.api.model().into()),
                provider: Some(self.api.provider().into()),
                stream,
                ..Request::default()
            },
            limits: Limits::default(),
            permissions: Permissions::Full,
            instructions_from: self.work.path().to_path_buf(),
            web_search_key: None,
            record_dir: Some(self.stage.path().to_path_buf()),
        }
    }

    fn workspace(&self) -> Workspace {
        Workspace::new(self.work.path(), &[], self.cancel.clone()).expect("workspace")
    }

    async fn run(&self, config: SessionConfig, prompt: &str) -> Outcome {
        self.run_with(config, prompt, |_, _| {}).await
    }

    /// Runs a session; `react` sees each event with the session's steering
    /// handle.
    async fn run_with(
        &self,
        config: SessionConfig,
        prompt: &str,
        mut react: impl FnMut(&AgentEvent, &weft::agent::Steering) + Send,
    ) -> Outcome {
        let mut session = Session::new(config, &self.client, self.workspace());
        let steering = session.steering();
        let events = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&events);
        let mut on_event = move |event: AgentEvent| {
            react(&event, &steering);
            seen.lock().expect("events").push(event);
        };
        let result = session.send(prompt, &mut on_event).await;
        let events = std::mem::take(&mut *events.lock().expect("events"));
        Outcome {
            result,
            events,
            files_touched: session.files_touched(),
            usage: session.usage(),
        }
    }

    fn transcript(&self) -> Vec<Entry> {
        let text = std::fs::read_to_string(self.stage.path().join("transcript.jsonl"))
            .expect("the transcript is written");
        text.lines()
            .map(|l| serde_json::from_str(l).expect("each line is an entry"))
            .collect()
    }

    fn tool_file(&self, relative: &str) -> PathBuf {
        self.stage.path().join(relative)
    }
}

fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall::new("", name, arguments)
}

fn error_kind(outcome: &Outcome) -> (SessionErrorKind, String) {
    let e = outcome.result.clone().expect_err("the session fails");
    (e.kind, e.message)
}

fn tools_completed(events: &[AgentEvent]) -> Vec<(String, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCompleted { tool, is_error, .. } => Some((tool.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

/// A request body as text, for "the model was sent X" checks that hold in
/// every wire format.
fn body_text(request: &Recorded) -> String {
    request.body.to_string()
}

// --- The loop on each provider ----------------------------------------------

/// The profile's editing tool: `apply_patch` for OpenAI, else `edit_file`.
fn edit_tool(api: Api) -> &'static str {
    match api {
        Api::OpenAi => "apply_patch",
        _ => "edit_file",
    }
}

/// A call changing `hello world` to `hello weft` in greeting.txt with
/// [`edit_tool`].
fn edit_call(api: Api) -> ToolCall {
    match api {
        Api::OpenAi => call(
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Update File: greeting.txt\n@@\n-hello world\n+hello weft\n*** End Patch\n"}),
        ),
        _ => call(
            "edit_file",
            json!({"file_path": "greeting.txt", "old_string": "hello world", "new_string": "hello weft"}),
        ),
    }
}

async fn read_edit_reply(api: Api, stream: bool) {
    let f = Fixture::new(api);
    f.write("greeting.txt", "hello world\n");
    f.script([
        Fake::Turn {
            text: Some("Let me look at the file.".into()),
            tool_calls: vec![call("read_file", json!({"file_path": "greeting.txt"}))],
            usage: None,
            finish: None,
        },
        Fake::ToolCalls(vec![edit_call(api)]),
        Fake::ToolCalls(vec![call(
            "shell",
            json!({"command": "grep -c weft greeting.txt && echo checked"}),
        )]),
        Fake::Text("I changed the greeting.".into()),
    ]);
    let out = f
        .run(f.config(stream), "Change the greeting to weft.")
        .await;
    let reply = out.result.expect("the session completes");
    assert_eq!(reply.text, "I changed the greeting.");
    assert_eq!(
        f.read("greeting.txt"),
        "hello weft\n",
        "the model's write happened"
    );
    assert_eq!(out.files_touched, ["greeting.txt"]);

    let requests = f.requests();
    assert_eq!(requests.len(), 4, "four model turns");
    let first = body_text(&requests[0]);
    assert!(
        first.contains("Change the greeting to weft."),
        "the prompt is sent"
    );
    assert!(
        first.contains("<environment>"),
        "the system prompt is sent: {first}"
    );
    assert!(
        first.contains(edit_tool(api)) && first.contains("read_file") && first.contains("shell"),
        "the profile's tools are declared"
    );
    assert!(
        body_text(&requests[1]).contains("1 | hello world"),
        "the second turn carries the read result"
    );
    assert!(
        body_text(&requests[2]).contains("greeting.txt"),
        "the edit's confirmation is sent back"
    );
    assert!(
        body_text(&requests[3]).contains("checked"),
        "the shell's output is sent back"
    );
    assert_eq!(
        tools_completed(&out.events),
        [
            ("read_file".to_string(), false),
            (edit_tool(api).to_string(), false),
            ("shell".to_string(), false)
        ]
    );
    let turns: Vec<u32> = out
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TurnCompleted { turn, .. } => Some(*turn),
            _ => None,
        })
        .collect();
    assert_eq!(turns, [1, 2, 3, 4]);
    let models = out
        .events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ModelCompleted { .. }))
        .count();
    assert_eq!(models, 4);
    assert!(
        out.usage.input > 0 && out.usage.output > 0,
        "usage is summed"
    );
    if stream {
        let text: String = out
            .events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            text, "Let me look at the file.I changed the greeting.",
            "streamed text arrives as coalesced events"
        );
        let text_events = out
            .events
            .iter()
            .filter(|e| matches!(e, AgentEvent::Text { .. }))
            .count();
        assert!(
            text_events <= 4,
            "coalesced, not one event per word: {text_events}"
        );
    }
}

macro_rules! per_provider {
    ($($name:ident: $api:expr;)*) => {$(
        mod $name {
            use super::*;
            #[tokio::test]
            async fn reads_edits_and_replies() { read_edit_reply($api, false).await }
            #[tokio::test]
            async fn streaming_reads_edits_and_replies() { read_edit_reply($api, true).await }
            #[tokio::test]
            async fn several_calls_in_one_turn_are_answered_in_order() {
                parallel_reads($api, true).await
            }
            #[tokio::test]
            async fn a_tool_error_is_fed_back() { tool_error_fed_back($api).await }
            #[tokio::test]
            async fn a_stream_broken_mid_tool_call_is_retried() {
                broken_mid_tool_call($api).await
            }
        }
    )*};
}

per_provider! {
    anthropic: Api::Anthropic;
    openai: Api::OpenAi;
    gemini: Api::Gemini;
    compat: Api::Compat;
}

async fn parallel_reads(api: Api, stream: bool) {
    let f = Fixture::new(api);
    for name in ["a", "b", "c"] {
        f.write(&format!("{name}.txt"), &format!("content of {name}\n"));
    }
    f.script([
        Fake::ToolCalls(vec![
            call("read_file", json!({"file_path": "a.txt"})),
            call("read_file", json!({"file_path": "b.txt"})),
            call("read_file", json!({"file_path": "c.txt"})),
        ]),
        Fake::Text("read them".into()),
    ]);
    let out = f.run(f.config(stream), "read a, b and c").await;
    out.result.expect("completes");
    // The three reads ran as one batch: all started before any completed.
    let order: Vec<&str> = out
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolStarted { .. } => Some("start"),
            AgentEvent::ToolCompleted { .. } => Some("done"),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["start", "start", "start", "done", "done", "done"]);
    let second = body_text(&f.requests()[1]);
    let positions: Vec<usize> = ["content of a", "content of b", "content of c"]
        .iter()
        .map(|t| second.find(t).expect("every result is sent back"))
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "in the calls' order: {positions:?}"
    );
}

async fn tool_error_fed_back(api: Api) {
    let f = Fixture::new(api);
    f.script([
        Fake::ToolCalls(vec![call("read_file", json!({"file_path": "missing.txt"}))]),
        Fake::Text("the file is missing".into()),
    ]);
    let out = f.run(f.config(false), "read missing.txt").await;
    assert_eq!(out.result.expect("completes").text, "the file is missing");
    assert_eq!(
        tools_completed(&out.events),
        [("read_file".to_string(), true)]
    );
    let second = body_text(&f.requests()[1]);
    assert!(second.contains("missing.txt does not exist"), "{second}");
    if api == Api::Anthropic {
        assert!(
            second.contains(r#""is_error":true"#),
            "Anthropic marks the result: {second}"
        );
    }
}

async fn broken_mid_tool_call(api: Api) {
    let f = Fixture::new(api);
    f.write("a.txt", "alpha\n");
    let read = || vec![call("read_file", json!({"file_path": "a.txt"}))];
    f.script([
        Fake::BreakInToolCall { tool_calls: read() },
        Fake::ToolCalls(read()),
        Fake::Text("read it".into()),
    ]);
    let out = f.run(f.config(true), "read a.txt").await;
    assert_eq!(out.result.expect("completes").text, "read it");
    let retried = out
        .events
        .iter()
        .filter(|e| matches!(e, AgentEvent::Call(weft::llm::CallEvent::Retry { .. })))
        .count();
    assert_eq!(retried, 1, "the broken attempt is retried once");
    assert_eq!(
        tools_completed(&out.events),
        [("read_file".to_string(), false)],
        "the half-streamed call is never run"
    );
}

// --- Guardrails the model recovers from ---------------------------------------

#[tokio::test]
async fn a_write_before_read_is_refused_and_the_model_recovers() {
    let f = Fixture::new(Api::Anthropic);
    f.write("notes.md", "old\n");
    f.script([
        Fake::ToolCalls(vec![call(
            "write_file",
            json!({"file_path": "notes.md", "content": "new\n"}),
        )]),
        Fake::ToolCalls(vec![call("read_file", json!({"file_path": "notes.md"}))]),
        Fake::ToolCalls(vec![call(
            "write_file",
            json!({"file_path": "notes.md", "content": "new\n"}),
        )]),
        Fake::Text("done".into()),
    ]);
    let out = f.run(f.config(false), "rewrite notes.md").await;
    out.result.expect("completes");
    assert_eq!(f.read("notes.md"), "new\n");
    assert_eq!(
        tools_completed(&out.events),
        [
            ("write_file".to_string(), true),
            ("read_file".to_string(), false),
            ("write_file".to_string(), false)
        ]
    );
    assert!(body_text(&f.requests()[1]).contains("has not been read"));
    assert_eq!(
        out.files_touched,
        ["notes.md"],
        "only the successful write counts"
    );
}

#[tokio::test]
async fn unknown_tools_forbidden_tools_and_bad_arguments_are_error_results() {
    let f = Fixture::new(Api::OpenAi);
    f.script([
        Fake::ToolCalls(vec![
            call("teleport", json!({"to": "mars"})),
            call("write_file", json!({"file_path": "x.txt", "content": "x"})),
            call("read_file", json!(["not", "an", "object"])),
        ]),
        Fake::Text("I give up".into()),
    ]);
    let mut config = f.config(false);
    config.permissions = Permissions::ReadOnly;
    let out = f.run(config, "try things").await;
    assert_eq!(out.result.expect("completes").text, "I give up");
    assert!(
        tools_completed(&out.events).iter().all(|(_, error)| *error),
        "{:?}",
        tools_completed(&out.events)
    );
    let second = body_text(&f.requests()[1]);
    assert!(second.contains("unknown tool `teleport`"), "{second}");
    assert!(second.contains("`write_file` is not allowed"), "{second}");
    assert!(second.contains("must be a JSON object"), "{second}");
    assert!(
        !f.work.path().join("x.txt").exists(),
        "a forbidden tool never runs"
    );
    let first = body_text(&f.requests()[0]);
    assert!(
        !first.contains("\"write_file\""),
        "a read-only agent is not offered write_file"
    );
}

// --- Limits -------------------------------------------------------------------

fn reads(n: usize) -> Vec<Fake> {
    (0..n)
        .map(|i| {
            Fake::ToolCalls(vec![call(
                "read_file",
                json!({"file_path": "f.txt", "offset": i + 1}),
            )])
        })
        .collect()
}

#[tokio::test]
async fn the_turn_limit_stops_the_session_naming_it() {
    let f = Fixture::new(Api::Anthropic);
    f.write("f.txt", "x\n");
    f.script(reads(10));
    let mut config = f.config(false);
    config.limits.max_turns = 3;
    let out = f.run(config, "go").await;
    let (kind, message) = error_kind(&out);
    assert_eq!(kind, SessionErrorKind::Limit);
    assert_eq!(message, "reached max_turns (3)");
    assert_eq!(f.requests().len(), 3);
}

#[tokio::test]
async fn a_model_that_never_stops_hits_the_tool_round_limit() {
    let f = Fixture::new(Api::Gemini);
    f.write("f.txt", "x\n");
    f.script(reads(3));
    // Then the same call for ever (a loop, but the limit comes first).
    fake_llm().script_forever(
        &f.key,
        Fake::ToolCalls(vec![call("read_file", json!({"file_path": "f.txt"}))]),
    );
    let mut config = f.config(true);
    config.limits.max_tool_rounds = 5;
    let out = f.run(config, "go").await;
    let (kind, message) = error_kind(&out);
    assert_eq!(kind, SessionErrorKind::Limit);
    assert_eq!(message, "reached max_tool_rounds (5)");
    assert_eq!(f.requests().len(), 6, "the sixth turn's calls are not run");
    assert_eq!(tools_completed(&out.events).len(), 5);
}

#[tokio::test]
async fn the_token_budget_counts_input_and_output_of_every_call() {
    let f = Fixture::new(Api::Compat);
    f.write("f.txt", "x\n");
    let usage = Some(FakeUsage {
        input: 60,
        output: 10,
        ..FakeUsage::default()
    });
    f.script((0..3).map(|i| Fake::Turn {
        text: None,
        tool_calls: vec![call(
            "read_file",
            json!({"file_path": "f.txt", "offset": i + 1}),
        )],
        usage,
        finish: None,
    }));
    let mut config = f.config(false);
    config.limits.max_tokens = Some(100);
    let out = f.run(config, "go").await;
    let (kind, message) = error_kind(&out);
    assert_eq!(kind, SessionErrorKind::Limit);
    assert_eq!(message, "reached max_stage_tokens (100): 140 tokens used");
    assert_eq!(f.requests().len(), 2);
}

#[tokio::test]
async fn the_timeout_stops_a_hanging_model_call() {
    let f = Fixture::new(Api::Anthropic);
    f.script([Fake::Hang]);
    let mut config = f.config(true);
    config.limits.timeout = Some(Duration::from_millis(300));
    let out = f.run(config, "go").await;
    let (kind, message) = error_kind(&out);
    assert_eq!(kind, SessionErrorKind::Limit);
    assert!(message.starts_with("reached the timeout"), "{message}");
}

/// A command that starts a background `sleep 60`, writes its pid to
/// `sleeper.pid` and waits for it.
fn long_shell() -> Fake {
    Fake::ToolCalls(vec![call(
        "shell",
        json!({"command": "sleep 60 & echo $! > sleeper.pid; wait"}),
    )])
}

/// The pid in `sleeper.pid`, once the shell has written it.
async fn sleeper_pid(f_work: &std::path::Path) -> u32 {
    let file = f_work.join("sleeper.pid");
    for _ in 0..2_000 {
        if let Some(pid) = std::fs::read_to_string(&file)
            .ok()
            .filter(|t| t.ends_with('\n'))
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the shell never started the sleeper");
}

/// Waits (up to 20 s) until process `pid` is gone or a zombie.
async fn assert_gone(pid: u32) {
    for _ in 0..2_000 {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit(')').next().map(|r| r.trim().chars().next()))
            .flatten();
        if matches!(state, None | Some('Z' | 'X')) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("process {pid} outlived the session");
}

#[tokio::test]
async fn cancelling_during_a_long_shell_call_kills_the_command() {
    let f = Fixture::new(Api::Anthropic);
    f.script([long_shell()]);
    let cancel = f.cancel.clone();
    let work = f.work.path().to_path_buf();
    let canceller = tokio::spawn(async move {
        let pid = sleeper_pid(&work).await;
        cancel.cancel(CancelReason::User("stop".into()));
        pid
    });
    let out = f.run(f.config(true), "wait").await;
    let pid = canceller.await.expect("canceller");
    let (kind, message) = error_kind(&out);
    assert_eq!(kind, SessionErrorKind::Cancelled);
    assert_eq!(message, "cancelled: stop");
    assert_gone(pid).await;
    assert_eq!(f.requests().len(), 1, "no model call after the cancel");
}

#[tokio::test]
async fn the_timeout_during_a_long_shell_call_kills_the_command() {
    let f = Fixture::new(Api::Gemini);
    f.script([long_shell()]);
    let mut config = f.config(false);
    config.limits.timeout = Some(Duration::from_secs(2));
    let out = f.run(config, "wait").await;
    let (kind, message) = error_kind(&out);
    assert_eq!(kind, SessionErrorKind::Limit);
    assert!(message.starts_with("reached the timeout"), "{message}");
    assert_gone(sleeper_pid(f.work.path()).await).await;
}

/// Cancellation while the model is answering: the stream is dropped at
/// once.
#[tokio::test]
async fn cancelling_stops_a_model_call_in_flight() {
    let f = Fixture::new(Api::OpenAi);
    f.script([Fake::Hang]);
    let cancel = f.cancel.clone();
    let key = f.key.clone();
    let canceller = tokio::spawn(async move {
        // Wait for the request to reach the server, then cancel.
        while fake_llm().requests(&key).is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        cancel.cancel(CancelReason::User("stop".into()));
    });
    let out = f.run(f.config(true), "go").await;
    canceller.await.expect("canceller");
    let (kind, message) = error_kind(&out);
    assert_eq!(kind, SessionErrorKind::Cancelled);
    assert_eq!(message, "cancelled: stop");
}

#[tokio::test]
async fn a_failed_model_call_is_an_llm_error() {
    let f = Fixture::new(Api::Anthropic);
    f.script([Fake::Error {
        status: 401,
        retry_after: None,
        message: "bad key".into(),
    }]);
    let out = f.run(f.config(false), "go").await;
    let (kind, _) = error_kind(&out);
    assert!(
        matches!(kind, SessionErrorKind::Llm(ref e) if e.code() == "llm.auth"),
        "{kind:?}"
    );
}

// --- Loop detection -------------------------------------------------------------

#[tokio::test]
async fn a_looping_model_is_warned_then_stopped() {
    let f = Fixture::new(Api::Anthropic);
    f.write("f.txt", "x\n");
    let same = || Fake::ToolCalls(vec![call("read_file", json!({"file_path": "f.txt"}))]);
    f.script((0..30).map(|_| same()));
    let out = f.run(f.config(false), "go").await;
    let (kind, message) = error_kind(&out);
    assert_eq!(kind, SessionErrorKind::Loop, "{message}");
    assert!(message.contains("read_file"), "{message}");
    let requests = f.requests();
    assert_eq!(
        requests.len(),
        20,
        "warned after 10 turns, stopped after 10 more"
    );
    assert!(
        body_text(&requests[10]).contains("[Loop detected]"),
        "the warning reaches the model"
    );
    assert!(!body_text(&requests[9]).contains("[Loop detected]"));
    let detected = out
        .events
        .iter()
        .filter(|e| matches!(e, AgentEvent::LoopDetected { pattern_len: 1, .. }))
        .count();
    assert_eq!(detected, 1);
    let transcript = f.transcript();
    assert!(transcript.iter().any(
        |e| matches!(e, Entry::LoopDetected { message } if message.contains("[Loop detected]"))
    ));
    assert!(
        matches!(transcript.last(), Some(Entry::End { reason }) if *reason == message),
        "the end line gives the reason"
    );
}

// --- Steering -------------------------------------------------------------------

#[tokio::test]
async fn a_steering_message_reaches_the_model_at_its_next_turn() {
    let f = Fixture::new(Api::Gemini);
    f.write("f.txt", "x\n");
    f.script([
        Fake::ToolCalls(vec![call("read_file", json!({"file_path": "f.txt"}))]),
        Fake::Text("ok".into()),
    ]);
    let out = f
        .run_with(f.config(false), "go", |event, steering| {
            if matches!(event, AgentEvent::ToolStarted { .. }) {
                steering.send("use tabs, not spaces");
            }
        })
        .await;
    out.result.expect("completes");
    let requests = f.requests();
    assert!(!body_text(&requests[0]).contains("use tabs"));
    assert!(body_text(&requests[1]).contains("[Steering] use tabs, not spaces"));
    assert!(
        out.events
            .iter()
            .any(|e| matches!(e, AgentEvent::Steered { text } if text == "use tabs, not spaces"))
    );
    assert!(
        f.transcript()
            .iter()
            .any(|e| matches!(e, Entry::Steering { .. }))
    );
}

// --- Compaction -----------------------------------------------------------------

/// Seven turns reading 20,000 characters each: about 5,000 tokens a turn
/// against a window of 20,000 (tiny-context), so compaction is due from the
/// third turn and possible (more than six turns) after the seventh.
fn big_reads(f: &Fixture) -> Vec<Fake> {
    for i in 0..7 {
        f.write(
            &format!("big{i}.txt"),
            &format!("line {i}\n").repeat(20_000 / 7),
        );
    }
    (0..7)
        .map(|i| {
            Fake::ToolCalls(vec![call(
                "read_file",
                json!({"file_path": format!("big{i}.txt")}),
            )])
        })
        .collect()
}

/// Scripts seven big reads, the summary and a last answer, and returns a
/// config whose model's window makes the summary due after the seventh.
fn scripted_compaction(f: &Fixture) -> SessionConfig {
    let mut replies = big_reads(f);
    replies.push(Fake::Text("## Goal\nread the big files".into()));
    replies.push(Fake::Text("all read".into()));
    f.script(replies);
    let mut config = f.config(true);
    config.request.model = Some("tiny-context".into());
    config
}

#[tokio::test]
async fn a_conversation_near_the_context_window_is_compacted() {
    let f = Fixture::new(Api::Compat);
    let config = scripted_compaction(&f);
    let out = f.run(config, "read every big file").await;
    assert_eq!(out.result.expect("completes").text, "all read");
    let requests = f.requests();
    assert_eq!(requests.len(), 9, "seven turns, the summary, the last turn");
    let summary_call = &requests[7].body;
    assert_ne!(
        summary_call["stream"],
        json!(true),
        "the summary is not streamed"
    );
    assert!(summary_call["tools"].is_null(), "and offers no tools");
    let after = body_text(&requests[8]);
    assert!(after.contains("[Context Summary]") && after.contains("read the big files"));
    assert!(
        !after.contains("read every big file\""),
        "the old turns are gone"
    );
    let compacted = out.events.iter().find_map(|e| match e {
        AgentEvent::Compacted {
            original_turns,
            preserved_turns,
            context_window,
            ..
        } => Some((*original_turns, *preserved_turns, *context_window)),
        _ => None,
    });
    assert_eq!(compacted, Some((7, 6, 20_000)));
    let recorded = f.transcript().into_iter().find_map(|e| match e {
        Entry::Compaction {
            summary,
            original_turns,
            preserved_turns,
        } => Some((summary, original_turns, preserved_turns)),
        _ => None,
    });
    assert_eq!(
        recorded,
        Some(("## Goal\nread the big files".to_string(), 7, 6))
    );
}

/// A gate that lets `allowed` model calls through and refuses the rest, as
/// a run's budget does once it is spent.
struct CountingGate {
    allowed: usize,
    asked: Mutex<usize>,
}

impl weft::agent::CallGate for CountingGate {
    fn before_call<'g>(
        &'g self,
        _spent: weft::model::Spend,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'g>> {
        let mut asked = self.asked.lock().expect("count");
        *asked += 1;
        let verdict = if *asked > self.allowed {
            Err("budget reached".to_string())
        } else {
            Ok(())
        };
        Box::pin(std::future::ready(verdict))
    }
}

#[tokio::test]
async fn the_gate_is_asked_before_a_compaction_summary_too() {
    let f = Fixture::new(Api::Compat);
    let config = scripted_compaction(&f);
    // Seven turns pass; the eighth call would be the summary.
    let gate = CountingGate {
        allowed: 7,
        asked: Mutex::new(0),
    };
    let mut session = Session::new(config, &f.client, f.workspace()).gated(&gate);
    let result = session.send("read every big file", &mut |_| {}).await;
    let error = result.expect_err("the gate stops the summary");
    assert_eq!(error.kind, SessionErrorKind::Cancelled, "{error}");
    assert_eq!(error.message, "budget reached");
    assert_eq!(f.requests().len(), 7, "no summary call was made");
}

// --- The transcript -------------------------------------------------------------

#[tokio::test]
async fn the_transcript_records_the_session_line_by_line() {
    let f = Fixture::new(Api::Anthropic);
    // 300 lines of 400 characters: grep's 200 hits are over its 30,000
    // characters for the model.
    f.write("a.txt", &format!("{}\n", "x".repeat(400)).repeat(300));
    f.script([
        Fake::ToolCalls(vec![call("grep", json!({"pattern": "x"}))]),
        Fake::Text("done".into()),
    ]);
    let out = f.run(f.config(false), "read a.txt").await;
    out.result.expect("completes");
    let entries = f.transcript();
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| match e {
            Entry::Session { .. } => "session",
            Entry::System { .. } => "system",
            Entry::User { .. } => "user",
            Entry::Assistant { .. } => "assistant",
            Entry::Tool { .. } => "tool",
            Entry::Steering { .. } => "steering",
            Entry::Compaction { .. } => "compaction",
            Entry::LoopDetected { .. } => "loop_detected",
            Entry::End { .. } => "end",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "session",
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "end"
        ]
    );
    let Entry::Tool {
        output_file: Some(file),
        output_bytes,
        ..
    } = &entries[4]
    else {
        panic!("a tool line naming its output file: {:?}", entries[4]);
    };
    let full = std::fs::read_to_string(f.tool_file(file)).expect("the full output is kept");
    assert_eq!(full.len() as u64, *output_bytes);
    assert_eq!(file, "tools/0001-grep.txt");
    let sent = body_text(&f.requests()[1]);
    assert!(
        sent.contains("characters cut; the whole output is in tools/0001-grep.txt"),
        "the model gets a cut output naming the file"
    );
    assert!(matches!(&entries[6], Entry::End { reason } if reason == "completed"));
    let Entry::Session {
        provider, tools, ..
    } = &entries[0]
    else {
        panic!("session first");
    };
    assert_eq!(provider, "anthropic");
    assert!(tools.contains(&"edit_file".to_string()));
}

#[tokio::test]
async fn a_short_tool_output_is_whole_in_its_transcript_line_without_a_file() {
    let f = Fixture::new(Api::Anthropic);
    f.write("a.txt", "one line\n");
    f.script([
        Fake::ToolCalls(vec![call("read_file", json!({"file_path": "a.txt"}))]),
        Fake::Text("done".into()),
    ]);
    let out = f.run(f.config(false), "read a.txt").await;
    out.result.expect("completes");
    let tool = f
        .transcript()
        .into_iter()
        .find(|e| matches!(e, Entry::Tool { .. }))
        .expect("a tool line");
    let Entry::Tool {
        output_file: None,
        summary,
        output_bytes,
        ..
    } = &tool
    else {
        panic!("no output file for a short output: {tool:?}");
    };
    assert_eq!(summary.len() as u64, *output_bytes, "the whole output");
    assert!(summary.contains("one line"));
    assert!(
        !f.tool_file("tools").exists(),
        "no tools/ folder when every output fits its line"
    );
}

#[tokio::test]
async fn project_instructions_are_in_the_system_prompt() {
    let f = Fixture::new(Api::OpenAi);
    std::fs::create_dir_all(f.work.path().join(".codex")).expect("dir");
    f.write("AGENTS.md", "Always run the linter.");
    f.write(".codex/instructions.md", "Codex: prefer small patches.");
    f.write("CLAUDE.md", "Claude only.");
    f.script([Fake::Text("ok".into())]);
    f.run(f.config(false), "hi")
        .await
        .result
        .expect("completes");
    let first = body_text(&f.requests()[0]);
    assert!(first.contains("Always run the linter.") && first.contains("prefer small patches"));
    assert!(!first.contains("Claude only."), "CLAUDE.md is Anthropic's");
}

#[test]
fn a_session_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let f = Fixture::new(Api::Anthropic);
    let mut session = Session::new(f.config(false), &f.client, f.workspace());
    let mut on_event = |_: AgentEvent| {};
    let future = session.send("hi", &mut on_event);
    assert_send(&future);
}

#[tokio::test]
async fn a_failed_compaction_is_reported_and_the_session_goes_on() {
    let f = Fixture::new(Api::Compat);
    let mut replies = big_reads(&f);
    replies.push(Fake::Error {
        status: 400,
        retry_after: None,
        message: "summaries are not allowed".into(),
    });
    replies.push(Fake::Text("all read".into()));
    f.script(replies);
    let mut config = f.config(false);
    config.request.model = Some("tiny-context".into());
    let out = f.run(config, "read every big file").await;
    assert_eq!(out.result.expect("completes").text, "all read");
    let failed = out.events.iter().find_map(|e| match e {
        AgentEvent::CompactionFailed { error } => Some(error.clone()),
        _ => None,
    });
    assert!(
        failed.is_some_and(|e| e.contains("summaries are not allowed")),
        "{:?}",
        out.events.last()
    );
    assert!(
        !out.events
            .iter()
            .any(|e| matches!(e, AgentEvent::Compacted { .. }))
    );
    let last = body_text(f.requests().last().expect("requests"));
    assert!(
        last.contains("read every big file"),
        "the history is left whole"
    );
}

#[tokio::test]
async fn a_final_answer_that_crosses_the_token_budget_is_kept() {
    let f = Fixture::new(Api::Compat);
    f.script([Fake::Turn {
        text: Some("done".into()),
        tool_calls: vec![],
        usage: Some(FakeUsage {
            input: 150,
            output: 50,
            ..FakeUsage::default()
        }),
        finish: None,
    }]);
    let mut config = f.config(false);
    config.limits.max_tokens = Some(100);
    let out = f.run(config, "go").await;
    assert_eq!(out.result.expect("the answer stands").text, "done");
    assert_eq!(out.usage.input + out.usage.output, 200);
}
