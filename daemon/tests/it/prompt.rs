//! Prompt nodes (`shape=tab`) in real runs against the fake provider server
//! over loopback HTTP: what is sent (model, reasoning effort, preamble),
//! what the response does (context keys, files, routing directives,
//! output schemas with repair turns), what is recorded (usage, cost,
//! retries, failover) and what never is (the API key).
//!
//! Hermetic: keys and base URLs are given to each run as its caller
//! environment; each test scripts its own random key. The run harness and
//! the fake server are shared with the other tests (`harness.rs`).

#![allow(clippy::expect_used)]

use std::path::Path;

use serde_json::Value;
use weft::model::EventKind;
use weft::model::ModelChoice;
use weft::model::RunStatus;

use weft_fakellm::{Recorded, Reply, ToolCall, Usage as FakeUsage};

use super::harness::{Options, Run, fake_llm, fresh_key, run_in};

/// Who the run's caller is: keys and base URLs of the fake server.
fn caller(key: &str) -> Vec<(String, String)> {
    let url = fake_llm().url();
    vec![
        ("ANTHROPIC_API_KEY".into(), key.into()),
        ("ANTHROPIC_BASE_URL".into(), url.clone()),
        ("OPENAI_API_KEY".into(), key.into()),
        ("OPENAI_BASE_URL".into(), format!("{url}/v1")),
        ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
    ]
}

async fn run(source: &str, key: &str, settings: &str, model: ModelChoice) -> Run {
    run_with(source, key, settings, model, &[]).await
}

/// Runs `source` as `flow.fabro` in a fresh working directory holding
/// `files` too, with `settings` as settings.toml and the fake server's keys
/// as the caller's environment.
async fn run_with(
    source: &str,
    key: &str,
    settings: &str,
    model: ModelChoice,
    files: &[(&str, &str)],
) -> Run {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    std::fs::write(home.path().join("settings.toml"), settings).expect("settings");
    for (name, contents) in files {
        std::fs::write(work.path().join(name), contents).expect("file");
    }
    let path = work.path().join("flow.fabro");
    std::fs::write(&path, source).expect("workflow");
    let options = Options {
        seed: Some(1),
        env: Some(caller(key)),
        model,
        ..Options::default()
    };
    run_in(path, options, home, work).await
}

fn bodies(key: &str) -> Vec<Value> {
    fake_llm()
        .requests(key)
        .into_iter()
        .map(|r: Recorded| r.body)
        .collect()
}

/// Every file under `dir`, as bytes.
fn every_file(dir: &Path, out: &mut Vec<(std::path::PathBuf, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            every_file(&path, out);
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, bytes));
        }
    }
}

const REVIEW: &str = r##"digraph Review {
    graph [goal="Ship the health endpoint",
           model_stylesheet="#review { model: claude-haiku-4-5; reasoning_effort: high; }"]
    start [shape=Mdiamond]; exit [shape=Msquare]
    build  [shape=parallelogram, script="echo 41 passed, 1 failed"]
    review [shape=tab, prompt="Review the build. Say fix or ship."]
    fix    [shape=parallelogram, script="echo fixing"]
    start -> build -> review
    review -> fix  [label="Fix"]
    review -> exit [label="Ship"]
    fix -> exit
}"##;

#[tokio::test]
async fn a_prompt_node_sends_the_styled_model_and_preamble_and_records_the_response_and_usage() {
    let key = fresh_key("basic");
    fake_llm().script(
        &key,
        [Reply::Turn {
            text: Some("Looks good.\n{\"preferred_next_label\": \"Ship\"}".into()),
            tool_calls: Vec::new(),
            usage: Some(FakeUsage {
                input: 1200,
                output: 300,
                reasoning: 0,
                cache_read: 1000,
                cache_write: 0,
            }),
            finish: None,
        }],
    );
    let r = run(REVIEW, &key, "", ModelChoice::default()).await;
    assert_eq!(r.conclusion.status, RunStatus::Succeeded);
    assert_eq!(
        r.sequence(),
        ["start", "build", "review", "exit"],
        "the routing directive chose the Ship edge"
    );

    let sent = bodies(&key);
    assert_eq!(sent.len(), 1, "one call");
    assert_eq!(
        sent[0]["model"], "claude-haiku-4-5",
        "the stylesheet's model"
    );
    assert!(
        sent[0]["thinking"]["budget_tokens"].as_u64().is_some(),
        "reasoning_effort=high reached the request: {}",
        sent[0]
    );
    let prompt = sent[0]["messages"][0]["content"].to_string();
    assert!(
        prompt.contains("Goal: Ship the health endpoint"),
        "{prompt}"
    );
    assert!(
        prompt.contains("41 passed, 1 failed"),
        "the compact preamble shows the command's output: {prompt}"
    );
    assert!(prompt.contains("Review the build. Say fix or ship."));

    assert!(
        r.stage_file("review", "prompt.md")
            .contains("## Completed stages")
    );
    assert!(
        r.stage_file("review", "response.md")
            .starts_with("Looks good.")
    );
    let outcome = r.outcome("review");
    assert_eq!(outcome.context_updates["last_stage"], "review");
    assert_eq!(
        outcome.context_updates["response.review"],
        "Looks good.\n{\"preferred_next_label\": \"Ship\"}"
    );
    let llm = outcome.llm.expect("usage recorded with the stage");
    assert_eq!(llm.model, "claude-haiku-4-5");
    assert_eq!(llm.spend.calls, 1);
    assert_eq!(llm.spend.usage.input, 1200);
    assert_eq!(llm.spend.usage.output, 300);
    assert_eq!(llm.spend.usage.cache_read, 1000);
    assert!(llm.spend.cost > 0.0, "the catalog prices claude-haiku-4-5");
    let status: Value =
        serde_json::from_str(&r.stage_file("review", "status.json")).expect("status.json");
    assert_eq!(status["status"], "succeeded");
    assert_eq!(r.named("llm.completed").len(), 1);
}

#[tokio::test]
async fn routing_schema_output_is_repaired_in_the_same_conversation() {
    let key = fresh_key("repair");
    fake_llm().script(
        &key,
        [
            Reply::Text("I think we should fix it.".into()),
            Reply::Text("{\"preferred_next_label\": \"Fix\"}".into()),
        ],
    );
    let source = REVIEW.replace(
        "prompt=\"Review the build. Say fix or ship.\"",
        "prompt=\"Review.\", output_schema=\"routing\"",
    );
    let r = run(&source, &key, "", ModelChoice::default()).await;
    assert_eq!(r.sequence(), ["start", "build", "review", "fix", "exit"]);
    let sent = bodies(&key);
    assert_eq!(sent.len(), 2, "one repair turn");
    let messages = sent[1]["messages"].as_array().expect("messages");
    assert_eq!(
        messages.len(),
        3,
        "prompt, the invalid reply, the correction"
    );
    assert_eq!(messages[1]["role"], "assistant");
    assert!(
        messages[2]["content"]
            .to_string()
            .contains("did not pass validation"),
        "{}",
        messages[2]
    );
    assert_eq!(
        r.outcome("review").llm.expect("usage").spend.calls,
        2,
        "the repair turn counts towards the stage's spend"
    );
}

#[tokio::test]
async fn schema_output_still_invalid_after_the_repairs_fails_the_node() {
    let key = fresh_key("norepair");
    fake_llm().script(
        &key,
        [
            Reply::Text("no json here".into()),
            Reply::Text("still none".into()),
        ],
    );
    let source = REVIEW.replace(
        "prompt=\"Review the build. Say fix or ship.\"",
        "prompt=\"Review.\", output_schema=\"routing\", output_retries=1",
    );
    let r = run(&source, &key, "", ModelChoice::default()).await;
    assert_eq!(r.named("stage.failed").len(), 1, "the review stage failed");
    let reason = r
        .outcome("review")
        .failure_reason()
        .unwrap_or_default()
        .to_string();
    assert!(
        reason.starts_with("output schema validation failed after 1 repair attempt(s)"),
        "{reason}"
    );
    assert_eq!(bodies(&key).len(), 2);
}

#[tokio::test]
async fn a_custom_schema_puts_the_parsed_output_in_context() {
    let key = fresh_key("custom");
    fake_llm().script(
        &key,
        [Reply::Text(
            "Audit done: {\"risk\": \"low\", \"findings\": 2}".into(),
        )],
    );
    let source = r#"digraph A { start [shape=Mdiamond]; exit [shape=Msquare]
        audit [shape=tab, prompt="Audit.", output_schema="@audit.schema.json"]
        start -> audit -> exit }"#;
    // The schema sits beside the workflow.
    let r = run_with(
        source,
        &key,
        "",
        ModelChoice::default(),
        &[(
            "audit.schema.json",
            r#"{"type":"object","required":["risk","findings"],
                "properties":{"risk":{"enum":["low","high"]},"findings":{"type":"integer"}}}"#,
        )],
    )
    .await;
    assert_eq!(r.conclusion.status, RunStatus::Succeeded);
    let outcome = r.outcome("audit");
    assert_eq!(outcome.context_updates["output.audit"]["risk"], "low");
    assert_eq!(outcome.context_updates["output.audit"]["findings"], 2);
}

#[tokio::test]
async fn an_auth_error_fails_the_stage_once_and_the_key_is_never_recorded() {
    let key = fresh_key("auth");
    fake_llm().script(
        &key,
        [Reply::Error {
            status: 401,
            retry_after: None,
            message: "invalid x-api-key".into(),
        }],
    );
    let r = run(REVIEW, &key, "", ModelChoice::default()).await;
    assert_eq!(r.named("stage.failed").len(), 1, "the review stage failed");
    assert_eq!(bodies(&key).len(), 1, "a 401 is not retried");
    let reason = r
        .outcome("review")
        .failure_reason()
        .unwrap_or_default()
        .to_string();
    assert!(reason.starts_with("model call failed"), "{reason}");

    let mut files = Vec::new();
    every_file(r.home.path(), &mut files);
    every_file(r.work.path(), &mut files);
    assert!(
        files.len() > 5,
        "the run wrote its database and run directory"
    );
    for (path, bytes) in files {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(&key), "{} holds the API key", path.display());
    }
}

#[tokio::test]
async fn a_provider_that_keeps_failing_fails_over_to_the_fallback_and_says_so() {
    let key = fresh_key("failover");
    fake_llm().script(
        &key,
        [
            Reply::Error {
                status: 503,
                retry_after: None,
                message: "overloaded".into(),
            },
            Reply::Text("{\"preferred_next_label\": \"Ship\"}".into()),
        ],
    );
    let r = run(
        REVIEW,
        &key,
        "[llm]\nmax_retries = 0\n",
        ModelChoice {
            fallbacks: vec!["openai".into()],
            ..ModelChoice::default()
        },
    )
    .await;
    assert_eq!(
        r.conclusion.status,
        RunStatus::Succeeded,
        "{:?}",
        r.conclusion
    );
    let sent = fake_llm().requests(&key);
    assert_eq!(sent.len(), 2);
    assert!(sent[0].path.ends_with("/v1/messages"));
    assert!(sent[1].path.ends_with("/v1/responses"), "{}", sent[1].path);
    let failover = r.named("llm.failover");
    assert_eq!(failover.len(), 1, "the failover is an event");
    let EventKind::LlmFailover { from, to, code, .. } = &failover[0].kind else {
        panic!("llm.failover");
    };
    assert!(from.starts_with("anthropic/") && to.starts_with("openai/"));
    assert_eq!(code, "llm.server");
    assert_eq!(
        r.outcome("review").llm.expect("usage").provider,
        "openai",
        "the stage names who answered"
    );
}

#[tokio::test]
async fn the_run_model_applies_to_nodes_without_one_and_truncate_fidelity_sends_only_the_goal() {
    let key = fresh_key("runmodel");
    fake_llm().script(&key, [Reply::Text("ok".into())]);
    let source = r#"digraph T { graph [goal="Tidy up"]
        start [shape=Mdiamond]; exit [shape=Msquare]
        build [shape=parallelogram, script="echo secret-build-log"]
        ask [shape=tab, prompt="Summarise.", fidelity="truncate"]
        start -> build -> ask -> exit }"#;
    let r = run(
        source,
        &key,
        "",
        ModelChoice {
            model: Some("gpt-5.2".into()),
            ..ModelChoice::default()
        },
    )
    .await;
    assert_eq!(r.conclusion.status, RunStatus::Succeeded);
    let sent = fake_llm().requests(&key);
    assert!(
        sent[0].path.ends_with("/v1/responses"),
        "gpt-5.2 is OpenAI's"
    );
    assert_eq!(sent[0].body["model"], "gpt-5.2");
    let input = sent[0].body["input"].to_string();
    assert!(input.contains("Tidy up") && input.contains("Summarise."));
    assert!(
        !input.contains("secret-build-log"),
        "truncate fidelity leaves earlier stages out: {input}"
    );
}

#[tokio::test]
async fn nodes_sharing_a_thread_at_full_fidelity_continue_one_conversation() {
    let key = fresh_key("thread");
    fake_llm().script(
        &key,
        [
            Reply::Text("Plan: add the route.".into()),
            Reply::Text("Done.".into()),
        ],
    );
    let source = r#"digraph T { graph [goal="Add /health"]
        start [shape=Mdiamond]; exit [shape=Msquare]
        plan [shape=tab, prompt="Plan it.", fidelity="full", thread_id="impl"]
        implement [shape=tab, prompt="Now do it.", fidelity="full", thread_id="impl"]
        start -> plan -> implement -> exit }"#;
    let r = run(source, &key, "", ModelChoice::default()).await;
    assert_eq!(r.conclusion.status, RunStatus::Succeeded);
    let sent = bodies(&key);
    let first = sent[0]["messages"].as_array().expect("messages");
    assert_eq!(first.len(), 1, "full fidelity: no preamble, a new thread");
    assert!(
        !first[0]["content"].to_string().contains("Goal:"),
        "no preamble at full fidelity"
    );
    let second = sent[1]["messages"].as_array().expect("messages");
    assert_eq!(
        second.len(),
        3,
        "the thread's exchange, then the new prompt"
    );
    assert!(second[0]["content"].to_string().contains("Plan it."));
    assert!(
        second[1]["content"]
            .to_string()
            .contains("Plan: add the route.")
    );
    assert!(second[2]["content"].to_string().contains("Now do it."));
}

#[tokio::test]
async fn agents_sharing_a_thread_continue_one_conversation_and_a_prompt_node_of_it_sees_the_text() {
    let key = fresh_key("agent-thread");
    fake_llm().script(
        &key,
        [
            Reply::ToolCalls(vec![ToolCall::new(
                "g1",
                "glob",
                serde_json::json!({"pattern": "*.fabro"}),
            )]),
            Reply::Text("Planned.".into()),
            Reply::Text("Implemented.".into()),
            Reply::Text("Reviewed.".into()),
        ],
    );
    let source = r#"digraph T {
        start [shape=Mdiamond]; exit [shape=Msquare]
        node [fidelity="full", thread_id="impl"]
        plan [prompt="Plan it."]
        implement [prompt="Now do it."]
        review [shape=tab, prompt="Review it."]
        start -> plan -> implement -> review -> exit }"#;
    let r = run(source, &key, "", ModelChoice::default()).await;
    assert_eq!(r.conclusion.status, RunStatus::Succeeded, "{}", r.reason());
    let sent = bodies(&key);
    assert_eq!(sent.len(), 4);
    let implement = sent[2]["messages"].as_array().expect("messages");
    let roles: Vec<&str> = implement
        .iter()
        .map(|m| m["role"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "user", "assistant", "user"],
        "the plan agent's whole session, tool call and result included, then the new prompt"
    );
    let text = serde_json::to_string(implement).expect("json");
    assert!(text.contains("Plan it.") && text.contains("tool_use") && text.contains("flow.fabro"));
    assert!(text.contains("Planned.") && text.contains("Now do it."));

    let review = &sent[3];
    assert!(
        review.get("tools").is_none(),
        "a prompt node offers no tools"
    );
    let messages = review["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 5, "{messages:#?}");
    let text = serde_json::to_string(messages).expect("json");
    assert!(
        !text.contains("tool_use") && !text.contains("tool_result"),
        "a request without tools carries no tool calls: {text}"
    );
    for said in [
        "Plan it.",
        "Planned.",
        "Now do it.",
        "Implemented.",
        "Review it.",
    ] {
        assert!(text.contains(said), "{said} in {text}");
    }
}

#[tokio::test]
async fn the_graph_default_thread_and_an_edge_thread_id_choose_the_thread_a_stage_joins() {
    let key = fresh_key("default-thread");
    fake_llm().script(
        &key,
        ["One.", "Two.", "Three.", "Four."].map(|t| Reply::Text(t.into())),
    );
    // a and b join the default thread; c is sent to thread "side" by its
    // entering edge; d is back in the default thread.
    let source = r#"digraph T {
        graph [default_fidelity="full", default_thread="main"]
        start [shape=Mdiamond]; exit [shape=Msquare]
        node [shape=tab]
        a [prompt="Say one."]; b [prompt="Say two."]; c [prompt="Say three."]; d [prompt="Say four."]
        start -> a -> b
        b -> c [thread_id="side"]
        c -> d -> exit }"#;
    let r = run(source, &key, "", ModelChoice::default()).await;
    assert_eq!(r.conclusion.status, RunStatus::Succeeded, "{}", r.reason());
    let sent = bodies(&key);
    let count = |i: usize| sent[i]["messages"].as_array().map_or(0, Vec::len);
    assert_eq!(count(0), 1, "a starts the default thread");
    assert_eq!(count(1), 3, "b continues it");
    assert_eq!(count(2), 1, "c's edge puts it in a new thread");
    assert_eq!(
        count(3),
        5,
        "d continues the default thread: a, b, then its prompt"
    );
    assert!(!sent[3]["messages"].to_string().contains("Say three."));
}

#[tokio::test]
async fn context_updates_from_a_response_reach_the_next_conditions_and_outcome_failed_fails_the_stage()
 {
    let key = fresh_key("ctx");
    fake_llm().script(
        &key,
        [
            Reply::Text("Tests pass. {\"context_updates\": {\"tests_passed\": true}}".into()),
            Reply::Text(
                "{\"outcome\": \"failed\", \"failure_reason\": \"coverage is 40%\"}".into(),
            ),
        ],
    );
    let source = r#"digraph C { start [shape=Mdiamond]; exit [shape=Msquare]
        check [shape=tab, prompt="Did the tests pass?"]
        gate [shape=diamond]
        audit [shape=tab, prompt="Audit coverage."]
        deploy [shape=parallelogram, script="echo deploy"]
        retreat [shape=parallelogram, script="echo retreat"]
        start -> check -> gate
        gate -> audit [condition="context.tests_passed=true"]
        gate -> exit
        audit -> retreat [condition="outcome=failed"]
        audit -> deploy
        deploy -> exit
        retreat -> exit }"#;
    let r = run(source, &key, "", ModelChoice::default()).await;
    assert_eq!(
        r.sequence(),
        ["start", "check", "gate", "audit", "retreat", "exit"],
        "tests_passed routed to audit; audit's outcome=failed routed to retreat"
    );
    let audit = r.outcome("audit");
    assert_eq!(audit.status, weft::model::Status::Failed);
    assert_eq!(audit.failure_reason(), Some("coverage is 40%"));
}

#[tokio::test]
async fn a_stylesheet_sends_two_nodes_to_two_providers() {
    let key = fresh_key("twoproviders");
    fake_llm().script(&key, [Reply::Text("one".into()), Reply::Text("two".into())]);
    let source = r##"digraph S {
        graph [model_stylesheet=".cheap { model: claude-haiku-4-5; } #critic { model: gpt-5.2; }"]
        start [shape=Mdiamond]; exit [shape=Msquare]
        draft [shape=tab, class="cheap", prompt="Draft."]
        critic [shape=tab, prompt="Critique."]
        start -> draft -> critic -> exit }"##;
    let r = run(source, &key, "", ModelChoice::default()).await;
    assert_eq!(r.conclusion.status, RunStatus::Succeeded);
    let sent = fake_llm().requests(&key);
    assert_eq!(sent.len(), 2);
    assert!(
        sent[0].path.ends_with("/v1/messages"),
        "draft went to Anthropic"
    );
    assert_eq!(sent[0].body["model"], "claude-haiku-4-5");
    assert!(
        sent[1].path.ends_with("/v1/responses"),
        "critic went to OpenAI"
    );
    assert_eq!(sent[1].body["model"], "gpt-5.2");
    assert_eq!(r.outcome("draft").llm.expect("usage").provider, "anthropic");
    assert_eq!(r.outcome("critic").llm.expect("usage").provider, "openai");
}

/// The Attractor spec's spellings (issue 21): `llm_model` in the
/// stylesheet, `$goal` in a prompt and in a label standing in for one.
const ATTRACTOR: &str = r##"digraph Attractor {
    graph [goal="the health endpoint",
           model_stylesheet="* { llm_model: claude-haiku-4-5; llm_provider: anthropic; }"]
    start [shape=Mdiamond]; exit [shape=Msquare]
    plan  [shape=tab, prompt="Plan $goal."]
    greet [shape=tab, label="Greet $goal"]
    start -> plan -> greet -> exit
}"##;

#[tokio::test]
async fn an_attractor_workflow_gets_its_stylesheet_model_and_the_goal_for_goal_variable() {
    let key = fresh_key("attractor");
    let turn = |text: &str| Reply::Turn {
        text: Some(text.into()),
        tool_calls: Vec::new(),
        usage: None,
        finish: None,
    };
    fake_llm().script(&key, [turn("Planned."), turn("Hello.")]);
    let r = run(ATTRACTOR, &key, "", ModelChoice::default()).await;
    assert_eq!(r.conclusion.status, RunStatus::Succeeded, "{}", r.reason());
    let sent = bodies(&key);
    assert_eq!(sent.len(), 2, "two calls");
    assert_eq!(
        sent[0]["model"], "claude-haiku-4-5",
        "llm_model in the stylesheet"
    );
    let plan = sent[0]["messages"][0]["content"].to_string();
    assert!(plan.contains("Plan the health endpoint."), "{plan}");
    let greet = sent[1]["messages"][0]["content"].to_string();
    assert!(greet.contains("Greet the health endpoint"), "{greet}");
    assert!(
        r.stage_file("greet", "prompt.md")
            .contains("Greet the health endpoint"),
        "the label standing in for the prompt is expanded when the stage runs"
    );
}
