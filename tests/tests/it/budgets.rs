//! Spending limits end to end (docs/llm.md, "Budgets"): `weft run
//! --max-cost/--max-tokens`, settings.toml `[budget]`, against the fake
//! provider scripting each turn's usage. gpt-5.2 costs $1.80 per million
//! input tokens, so a turn of 500k input tokens costs $0.90.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weft::model::RunStatus;
use weft::store::{Home, Store};
use weft_fakellm::{FakeLlm, Reply, ToolCall, Usage};
use weft_tests::{Sandbox, events, named, wait_for_status};

fn key(test: &str) -> String {
    format!("sk-budget-{test}-{}", std::process::id())
}

fn model_env(fake: &FakeLlm, key: &str) -> [(String, String); 2] {
    [
        ("OPENAI_API_KEY".into(), key.to_string()),
        ("OPENAI_BASE_URL".into(), format!("{}/v1", fake.url())),
    ]
}

fn home(sb: &Sandbox) -> Home {
    Home::at(sb.path().join("home"))
}

/// A turn reading a file, with `input` tokens of usage.
fn read_turn(input: u64) -> Reply {
    Reply::Turn {
        text: None,
        tool_calls: vec![ToolCall::new(
            "",
            "read_file",
            json!({"file_path": "notes.txt"}),
        )],
        usage: Some(Usage {
            input,
            output: 0,
            ..Usage::default()
        }),
        finish: None,
    }
}

fn final_turn(input: u64) -> Reply {
    Reply::Turn {
        text: Some("Ship".into()),
        tool_calls: Vec::new(),
        usage: Some(Usage {
            input,
            output: 0,
            ..Usage::default()
        }),
        finish: None,
    }
}

const AGENT: &str = r#"digraph B { start [shape=Mdiamond]; exit [shape=Msquare]
    fix [shape=box, prompt="Read notes.txt, then say Ship."]
    start -> fix -> exit }"#;

/// Starts `file` detached with `args` and returns the run id.
fn start(sb: &Sandbox, env: &[(String, String)], file: &str, args: &[&str]) -> String {
    let out = sb
        .weft()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .args(["run", file, "--detach"])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The run's first pending question's text, once it is asked.
fn wait_for_question(sb: &Sandbox, run_id: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let asked = Store::open_read_only(&home(sb))
            .and_then(|s| s.questions(Some(run_id), true))
            .unwrap_or_default();
        if let Some(q) = asked.first() {
            return q.text.clone();
        }
        assert!(Instant::now() < deadline, "run {run_id} asked nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn answer(sb: &Sandbox, run_id: &str, key: &str) {
    let out = sb.run(&["answer", run_id, "--key", key]);
    assert_eq!(out.code, 0, "{out:?}");
}

fn stored_budget(sb: &Sandbox, run_id: &str) -> Value {
    Store::open_read_only(&home(sb))
        .and_then(|s| s.find_run(run_id))
        .map(|r| r.options["budget"].clone())
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_run_warns_at_80_percent_pauses_at_its_budget_and_goes_on_when_raised() {
    let fake = FakeLlm::start();
    let key = key("raise");
    // $0.90 a turn against $2: checks at $0, $0.90, $1.80 (warning), $2.70
    // (the pause).
    fake.script(
        &key,
        [
            read_turn(500_000),
            read_turn(500_000),
            read_turn(500_000),
            final_turn(1_000),
        ],
    );
    let sb = Sandbox::new();
    sb.write("notes.txt", "x\n");
    sb.write("b.fabro", AGENT);
    let env = model_env(&fake, &key);
    let run_id = start(
        &sb,
        &env,
        "b.fabro",
        &["--model", "gpt-5.2", "--max-cost", "2"],
    );
    let question = wait_for_question(&sb, &run_id);
    assert!(
        question.contains("Budget of $2.00 reached ($2.70 spent)"),
        "{question}"
    );
    assert_eq!(fake.requests(&key).len(), 3, "no call past the budget");
    wait_for_status(&home(&sb), &run_id, RunStatus::Blocked);
    answer(&sb, &run_id, "R");
    wait_for_status(&home(&sb), &run_id, RunStatus::Succeeded);
    assert_eq!(fake.requests(&key).len(), 4);
    let all = events(&sb, &run_id);
    let warnings = named(&all, "budget.warning");
    assert_eq!(warnings.len(), 1, "{all:?}");
    assert_eq!(warnings[0]["properties"]["limit"], "run.cost");
    assert_eq!(
        stored_budget(&sb, &run_id)["max_cost"],
        4.0,
        "raised durably"
    );
}

#[test]
fn a_run_stopped_at_its_budget_is_cancelled_and_resumes_with_a_higher_max_cost() {
    let fake = FakeLlm::start();
    let key = key("stop");
    fake.script(
        &key,
        [
            read_turn(500_000),
            read_turn(500_000),
            read_turn(500_000),
            // The resumed stage's session.
            final_turn(1_000),
        ],
    );
    let sb = Sandbox::new();
    sb.write("notes.txt", "x\n");
    sb.write("b.fabro", AGENT);
    let env = model_env(&fake, &key);
    let run_id = start(
        &sb,
        &env,
        "b.fabro",
        &["--model", "gpt-5.2", "--max-cost", "2"],
    );
    wait_for_question(&sb, &run_id);
    answer(&sb, &run_id, "S");
    wait_for_status(&home(&sb), &run_id, RunStatus::Cancelled);
    let record = Store::open_read_only(&home(&sb))
        .and_then(|s| s.find_run(&run_id))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        record
            .failure_reason
            .as_deref()
            .is_some_and(|r| r.contains("budget")),
        "{record:?}"
    );
    let out = sb
        .weft()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .args(["resume", &run_id, "--max-cost", "10"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for_status(&home(&sb), &run_id, RunStatus::Succeeded);
    assert_eq!(stored_budget(&sb, &run_id)["max_cost"], 10.0);
}

#[test]
fn the_daily_limit_counts_every_run_of_the_day() {
    let fake = FakeLlm::start();
    let key = key("daily");
    // $1.80 in the first run, past the $1 a day before the second calls.
    fake.script(&key, [final_turn(1_000_000), final_turn(1_000)]);
    let sb = Sandbox::new();
    std::fs::write(
        home(&sb).settings_path(),
        "[budget]\nmax_cost_per_day = 1.0\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    sb.write("notes.txt", "x\n");
    sb.write("b.fabro", AGENT);
    let env = model_env(&fake, &key);
    let first = start(&sb, &env, "b.fabro", &["--model", "gpt-5.2"]);
    wait_for_status(&home(&sb), &first, RunStatus::Succeeded);
    let second = start(&sb, &env, "b.fabro", &["--model", "gpt-5.2"]);
    let question = wait_for_question(&sb, &second);
    assert!(
        question.contains("Daily budget of $1.00 reached ($1.80 spent)"),
        "{question}"
    );
    assert_eq!(
        fake.requests(&key).len(),
        1,
        "the second run called nothing"
    );
    answer(&sb, &second, "S");
    wait_for_status(&home(&sb), &second, RunStatus::Cancelled);
}

#[test]
fn a_model_without_a_price_counts_tokens_only_and_says_so() {
    let fake = FakeLlm::start();
    let key = key("unpriced");
    fake.script(&key, [read_turn(1_000), read_turn(1_000), read_turn(1_000)]);
    let sb = Sandbox::new();
    sb.write("notes.txt", "x\n");
    sb.write("b.fabro", AGENT);
    let env = model_env(&fake, &key);
    // A cost limit it can never reach, and a token limit it does.
    let run_id = start(
        &sb,
        &env,
        "b.fabro",
        &[
            "--model",
            "house-model-7",
            "--provider",
            "openai",
            "--max-cost",
            "0.000001",
            "--max-tokens",
            "1500",
        ],
    );
    let question = wait_for_question(&sb, &run_id);
    assert!(
        question.contains("Budget of 1.5k tokens reached (2.0k tokens spent)"),
        "{question}"
    );
    answer(&sb, &run_id, "S");
    wait_for_status(&home(&sb), &run_id, RunStatus::Cancelled);
    let all = events(&sb, &run_id);
    let unpriced: Vec<_> = named(&all, "run.notice")
        .into_iter()
        .filter(|e| {
            e["properties"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("house-model-7 has no price"))
        })
        .collect();
    assert_eq!(unpriced.len(), 1, "said once: {all:?}");
}

#[test]
fn invalid_budget_values_are_refused_naming_the_key() {
    let sb = Sandbox::new();
    sb.write("b.fabro", AGENT);
    let out = sb.run(&["run", "b.fabro", "--max-cost=-1", "--no-daemon"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--max-cost"), "{}", out.stderr);
    let out = sb.run(&["run", "b.fabro", "--max-tokens", "0", "--no-daemon"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--max-tokens"), "{}", out.stderr);
    sb.write(
        "run.toml",
        "[workflow]\ngraph = \"b.fabro\"\n[run.budget]\nmax_cost = 5.0\nwarn_at = 80\n",
    );
    let out = sb.run(&["run", "run.toml", "--no-daemon"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("[run.budget] warn_at"),
        "{}",
        out.stderr
    );
    sb.write(
        "g.fabro",
        r#"digraph G { graph [budget_max_cost=0]
           start [shape=Mdiamond]; exit [shape=Msquare]; start -> exit }"#,
    );
    let out = sb.run(&["run", "g.fabro", "--no-daemon"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("budget_max_cost"), "{}", out.stderr);
}

#[test]
fn a_budget_question_nobody_answers_stops_the_run_after_the_pause_timeout() {
    let fake = FakeLlm::start();
    let key = key("timeout");
    fake.script(&key, [read_turn(1_000), read_turn(1_000)]);
    let sb = Sandbox::new();
    std::fs::write(
        home(&sb).settings_path(),
        "[budget]\nmax_tokens_per_run = 500\npause_timeout = \"1s\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    sb.write("notes.txt", "x\n");
    sb.write("b.fabro", AGENT);
    let env = model_env(&fake, &key);
    let run_id = start(&sb, &env, "b.fabro", &["--model", "gpt-5.2"]);
    wait_for_status(&home(&sb), &run_id, RunStatus::Cancelled);
    let record = Store::open_read_only(&home(&sb))
        .and_then(|s| s.find_run(&run_id))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        record
            .failure_reason
            .as_deref()
            .is_some_and(|r| r.contains("no answer within 1s")),
        "{record:?}"
    );
    assert_eq!(fake.requests(&key).len(), 1);
    let all = events(&sb, &run_id);
    assert_eq!(named(&all, "interview.timeout").len(), 1, "{all:?}");
}

#[test]
fn a_prompt_node_past_the_token_limit_pauses_before_its_call() {
    let fake = FakeLlm::start();
    let key = key("prompt");
    fake.script(&key, [final_turn(1_500), final_turn(10)]);
    let sb = Sandbox::new();
    sb.write(
        "p.fabro",
        r#"digraph P { start [shape=Mdiamond]; exit [shape=Msquare]
           first [shape=tab, prompt="One"]
           second [shape=tab, prompt="Two"]
           start -> first -> second -> exit }"#,
    );
    let env = model_env(&fake, &key);
    let run_id = start(
        &sb,
        &env,
        "p.fabro",
        &["--model", "gpt-5.2", "--max-tokens", "1000"],
    );
    let question = wait_for_question(&sb, &run_id);
    assert!(
        question.contains("Budget of 1.0k tokens reached"),
        "{question}"
    );
    assert_eq!(fake.requests(&key).len(), 1, "the second prompt waits");
    answer(&sb, &run_id, "R");
    // Raised to 2k: 1.5k spent leaves room for the second call.
    wait_for_status(&home(&sb), &run_id, RunStatus::Succeeded);
    assert_eq!(fake.requests(&key).len(), 2);
    assert_eq!(stored_budget(&sb, &run_id)["max_tokens"], 2000);
}

#[test]
fn a_graph_s_budget_attributes_limit_its_runs_unless_a_flag_says_otherwise() {
    let flow = r#"digraph P { graph [budget_max_tokens=1000]
           start [shape=Mdiamond]; exit [shape=Msquare]
           first [shape=tab, prompt="One"]
           second [shape=tab, prompt="Two"]
           start -> first -> second -> exit }"#;
    let fake = FakeLlm::start();
    let graph_key = key("graph");
    fake.script(&graph_key, [final_turn(1_500), final_turn(10)]);
    let sb = Sandbox::new();
    sb.write("p.fabro", flow);
    let env = model_env(&fake, &graph_key);
    let run_id = start(&sb, &env, "p.fabro", &["--model", "gpt-5.2"]);
    let question = wait_for_question(&sb, &run_id);
    assert!(
        question.contains("Budget of 1.0k tokens reached"),
        "{question}"
    );
    assert_eq!(
        fake.requests(&graph_key).len(),
        1,
        "the second prompt waits"
    );
    answer(&sb, &run_id, "S");
    wait_for_status(&home(&sb), &run_id, RunStatus::Cancelled);

    // `--max-tokens` comes before the graph's attribute.
    let flag_key = key("graph-flag");
    fake.script(&flag_key, [final_turn(1_500), final_turn(10)]);
    let sb = Sandbox::new();
    sb.write("p.fabro", flow);
    let env = model_env(&fake, &flag_key);
    let run_id = start(
        &sb,
        &env,
        "p.fabro",
        &["--model", "gpt-5.2", "--max-tokens", "5000"],
    );
    wait_for_status(&home(&sb), &run_id, RunStatus::Succeeded);
    assert_eq!(fake.requests(&flag_key).len(), 2);
}
