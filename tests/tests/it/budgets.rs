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

/// Two prompt nodes, one after the other.
const TWO_PROMPTS: &str = r#"digraph P { start [shape=Mdiamond]; exit [shape=Msquare]
    first [shape=tab, prompt="One"]
    second [shape=tab, prompt="Two"]
    start -> first -> second -> exit }"#;

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
    sb.write("p.fabro", TWO_PROMPTS);
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

/// The one run of `sb`'s home whose parent is `parent`, once it exists.
fn child_of(sb: &Sandbox, parent: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let children: Vec<String> = Store::open_read_only(&home(sb))
            .and_then(|s| s.list_runs(&weft::store::RunFilter::default()))
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r.options["parent"]["run_id"] == parent)
            .map(|r| r.id)
            .collect();
        if let [child] = children.as_slice() {
            return child.clone();
        }
        assert!(Instant::now() < deadline, "run {parent} started no child");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_sub_workflow_s_child_run_spends_against_its_parent_s_budget() {
    let fake = FakeLlm::start();
    let key = key("child");
    // The parent's prompt spends 1.5k of its 1k tokens; the child's prompt
    // must wait, though the child has no budget of its own.
    fake.script(&key, [final_turn(1_500), final_turn(10), final_turn(10)]);
    let sb = Sandbox::new();
    sb.write(
        "parent.fabro",
        r#"digraph P { start [shape=Mdiamond]; exit [shape=Msquare]
           first [shape=tab, prompt="One"]
           sub [shape=house, stack.child_workflow="child.fabro"]
           last [shape=tab, prompt="Three"]
           start -> first -> sub -> last -> exit }"#,
    );
    sb.write(
        "child.fabro",
        r#"digraph C { start [shape=Mdiamond]; exit [shape=Msquare]
           second [shape=tab, prompt="Two"]
           start -> second -> exit }"#,
    );
    let env = model_env(&fake, &key);
    let parent = start(
        &sb,
        &env,
        "parent.fabro",
        &["--model", "gpt-5.2", "--max-tokens", "1000"],
    );
    let child = child_of(&sb, &parent);
    let question = wait_for_question(&sb, &child);
    assert!(
        question.contains("Budget of 1.0k tokens reached (1.5k tokens spent)"),
        "{question}"
    );
    assert_eq!(fake.requests(&key).len(), 1, "the child's prompt waits");
    answer(&sb, &child, "R");
    // Raised to 2k for the whole run: the child's call and the parent's
    // last one (1.51k spent) go through.
    wait_for_status(&home(&sb), &parent, RunStatus::Succeeded);
    assert_eq!(fake.requests(&key).len(), 3);
    assert_eq!(
        stored_budget(&sb, &parent)["max_tokens"],
        2000,
        "the raise is stored with the run that was started"
    );
}

#[test]
fn a_child_run_stopped_at_the_budget_stops_its_parent() {
    let fake = FakeLlm::start();
    let key = key("child-stop");
    fake.script(&key, [final_turn(1_500), final_turn(10)]);
    let sb = Sandbox::new();
    sb.write(
        "parent.fabro",
        r#"digraph P { start [shape=Mdiamond]; exit [shape=Msquare]
           first [shape=tab, prompt="One"]
           sub [shape=house, stack.child_workflow="child.fabro"]
           start -> first -> sub -> exit }"#,
    );
    sb.write(
        "child.fabro",
        // Its own, looser budget is not used (and it is said so).
        r#"digraph C { graph [budget_max_tokens=1000000]
           start [shape=Mdiamond]; exit [shape=Msquare]
           second [shape=tab, prompt="Two"]
           start -> second -> exit }"#,
    );
    let env = model_env(&fake, &key);
    let parent = start(
        &sb,
        &env,
        "parent.fabro",
        &["--model", "gpt-5.2", "--max-tokens", "1000"],
    );
    let child = child_of(&sb, &parent);
    wait_for_question(&sb, &child);
    answer(&sb, &child, "S");
    wait_for_status(&home(&sb), &parent, RunStatus::Cancelled);
    assert_eq!(fake.requests(&key).len(), 1);
    let all = events(&sb, &child);
    let said = named(&all, "run.notice");
    assert!(
        said.iter().any(|e| e["properties"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("budget_* attributes are not used here"))),
        "{said:?}"
    );
}

#[test]
fn a_daily_limit_raised_at_a_pause_holds_for_the_home_s_other_runs_that_day() {
    let fake = FakeLlm::start();
    let key = key("daily-raise");
    fake.script(&key, [final_turn(1_500), final_turn(10), final_turn(10)]);
    let sb = Sandbox::new();
    std::fs::write(
        home(&sb).settings_path(),
        "[budget]\nmax_tokens_per_day = 1000\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    sb.write(
        "p.fabro",
        r#"digraph P { start [shape=Mdiamond]; exit [shape=Msquare]
           ask [shape=tab, prompt="One"]
           start -> ask -> exit }"#,
    );
    let env = model_env(&fake, &key);
    let first = start(&sb, &env, "p.fabro", &["--model", "gpt-5.2"]);
    wait_for_status(&home(&sb), &first, RunStatus::Succeeded);
    let second = start(&sb, &env, "p.fabro", &["--model", "gpt-5.2"]);
    let question = wait_for_question(&sb, &second);
    assert!(
        question.contains("Daily budget of 1.0k tokens reached"),
        "{question}"
    );
    answer(&sb, &second, "R");
    wait_for_status(&home(&sb), &second, RunStatus::Succeeded);
    let said: Vec<String> = named(&events(&sb, &second), "run.notice")
        .into_iter()
        .filter_map(|e| e["properties"]["message"].as_str().map(str::to_string))
        .collect();
    assert!(
        said.iter()
            .any(|m| m == "daily budget raised to 2.0k tokens for today"),
        "{said:?}"
    );
    // 1.51k spent today against the raised 2k: a third run asks nothing.
    let third = start(&sb, &env, "p.fabro", &["--model", "gpt-5.2"]);
    wait_for_status(&home(&sb), &third, RunStatus::Succeeded);
    assert_eq!(fake.requests(&key).len(), 3);
}

#[test]
fn a_budget_question_open_when_the_daemon_dies_is_asked_again_under_its_own_id() {
    let fake = FakeLlm::start();
    let key = key("restart");
    fake.script(&key, [final_turn(1_500), final_turn(10)]);
    let sb = Sandbox::new();
    sb.write("p.fabro", TWO_PROMPTS);
    let env = model_env(&fake, &key);
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut weftd = weft_tests::Weftd::start_with(&sb, &env_refs);
    let run_id = start(
        &sb,
        &env,
        "p.fabro",
        &["--model", "gpt-5.2", "--max-tokens", "1000"],
    );
    wait_for_question(&sb, &run_id);
    // Asked and announced (the event follows the question's row).
    weft_tests::wait_until(
        "the question is announced",
        Duration::from_secs(120),
        || named(&events(&sb, &run_id), "interview.started").len() == 1,
    );
    let pending = |sb: &Sandbox| -> Vec<String> {
        Store::open_read_only(&home(sb))
            .and_then(|s| s.questions(Some(&run_id), true))
            .unwrap_or_default()
            .into_iter()
            .map(|q| q.id)
            .collect()
    };
    let asked = pending(&sb);
    weftd.signal("-KILL");
    let _ = weftd.child.wait();
    drop(weftd);
    // The new daemon resumes the run, whose second stage asks again.
    let _weftd = weft_tests::Weftd::start_with(&sb, &env_refs);
    weft_tests::wait_until(
        "the resumed run asks again",
        Duration::from_secs(120),
        || named(&events(&sb, &run_id), "interview.started").len() == 2,
    );
    assert_eq!(pending(&sb), asked, "one question, under its first id");
    answer(&sb, &run_id, "R");
    wait_for_status(&home(&sb), &run_id, RunStatus::Succeeded);
    assert_eq!(fake.requests(&key).len(), 2);
}
