//! Prompt nodes from the command line: `weft run` through the daemon calls
//! the fake provider server with the caller's keys and `--model`, and
//! `weft logs` and `weft ps` show what the run spent.

use serde_json::Value;
use weft_fakellm::{FakeLlm, Reply, Usage};
use weft_tests::Sandbox;

#[test]
fn weft_run_calls_the_model_with_the_callers_key_and_logs_and_ps_show_the_spend() {
    let fake = FakeLlm::start();
    let key = format!("sk-cli-{}", std::process::id());
    fake.script(
        &key,
        [Reply::Turn {
            text: Some("All clear. {\"preferred_next_label\": \"Ship\"}".into()),
            tool_calls: Vec::new(),
            usage: Some(Usage {
                input: 12_400,
                output: 3_200,
                ..Usage::default()
            }),
            finish: None,
        }],
    );
    let sb = Sandbox::new();
    sb.write(
        "review.fabro",
        r#"digraph Review { graph [goal="Check the release"]
           start [shape=Mdiamond]; exit [shape=Msquare]
           review [shape=tab, prompt="Ship or hold?"]
           hold [shape=parallelogram, script="echo held"]
           start -> review
           review -> exit [label="Ship"]
           review -> hold [label="Hold"]
           hold -> exit }"#,
    );
    let out = sb
        .weft()
        .env("OPENAI_API_KEY", &key)
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.url()))
        .args(["run", "review.fabro", "--json", "--model", "gpt-5.2"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let conclusion: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(conclusion["status"], "succeeded");
    let run_id = conclusion["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    let sent = fake.requests(&key);
    assert_eq!(sent.len(), 1, "the daemon called the model once");
    assert_eq!(
        sent[0].body["model"], "gpt-5.2",
        "--model reached the request"
    );
    assert_eq!(
        sent[0].header("authorization"),
        Some(format!("Bearer {key}").as_str()),
        "the caller's key, not the daemon's"
    );

    let logs = sb.run(&["logs", &run_id, "review"]);
    assert_eq!(logs.code, 0, "{logs:?}");
    assert!(
        logs.stdout.contains("gpt-5.2, 12.4k in / 3.2k out, $"),
        "the stage header shows the model and its spend: {}",
        logs.stdout
    );
    assert!(logs.stdout.contains("All clear."), "{}", logs.stdout);

    let ps = sb.run(&["ps", "--json"]);
    let listed: Value = serde_json::from_str(&ps.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed[0]["llm"]["calls"], 1);
    assert_eq!(listed[0]["llm"]["input_tokens"], 12_400);
    assert!(listed[0]["llm"]["cost"].as_f64().is_some_and(|c| c > 0.0));
    let table = sb.run(&["ps"]);
    assert!(table.stdout.contains("LLM"), "{}", table.stdout);
    assert!(table.stdout.contains("15.6k tok, $"), "{}", table.stdout);
}
