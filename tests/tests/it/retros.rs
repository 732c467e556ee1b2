//! Retros (docs/engine.md, "Retros"): at a run's end, with retros enabled,
//! one call to the fake provider writes the narrative beside the figures
//! Weft computes; an invalid reply is repaired; a retro that cannot be
//! made is recorded as such and never changes the run; `weft retro` shows
//! and `--generate`s them.

use std::time::{Duration, Instant};

use serde_json::Value;
use weft_fakellm::{FakeLlm, Reply};
use weft_tests::{Run, Sandbox};

/// A workflow without model stages: the retro is its only model call.
const WORKFLOW: &str = r#"digraph Build { graph [goal="Build the thing"]
    start [shape=Mdiamond]; exit [shape=Msquare]
    build [shape=parallelogram, script="echo built"]
    start -> build -> exit }"#;

const FAILING: &str = r#"digraph Broken { graph [goal="Build the thing"]
    start [shape=Mdiamond]; exit [shape=Msquare]
    build [shape=parallelogram, goal_gate=true, script="echo no compiler >&2; exit 3"]
    start -> build -> exit }"#;

const NARRATIVE: &str = r#"Looking back: {"smoothness": "smooth",
    "intent": "Build the thing", "outcome": "It was built",
    "learnings": [{"category": "workflow", "text": "one stage is enough"}],
    "friction_points": [{"kind": "retry", "description": "a flaky echo", "stage": "build"}],
    "open_items": [{"kind": "test_gap", "description": "nothing checks the build"}]}"#;

/// Keys of real providers the host may have; a test's run must not see them.
const HOST_KEYS: [&str; 4] = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
];

fn weft(sb: &Sandbox, fake: Option<(&FakeLlm, &str)>, args: &[&str]) -> Run {
    let mut cmd = sb.weft();
    for key in HOST_KEYS {
        cmd.env_remove(key);
    }
    if let Some((fake, key)) = fake {
        cmd.env("OPENAI_API_KEY", key)
            .env("OPENAI_BASE_URL", format!("{}/v1", fake.url()));
    }
    Run::from(
        cmd.args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run weft: {e}")),
    )
}

fn run_id(run: &Run) -> String {
    let conclusion: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} {}", run.stdout, run.stderr));
    conclusion["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no run id: {}", run.stdout))
        .to_string()
}

/// The retro `weft retro RUN --json` prints, once there is one (the daemon
/// makes it after the run's end, which `weft run` returns at).
fn retro_of(sb: &Sandbox, run_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let shown = sb.run(&["retro", run_id, "--json"]);
        if shown.code == 0 {
            return serde_json::from_str(&shown.stdout)
                .unwrap_or_else(|e| panic!("{e}: {}", shown.stdout));
        }
        assert!(
            Instant::now() < deadline,
            "no retro for {run_id}: {}",
            shown.stderr
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn key(name: &str) -> String {
    format!("sk-retro-{name}-{}", std::process::id())
}

#[test]
fn a_run_with_retro_writes_the_models_narrative_and_its_own_figures() {
    let fake = FakeLlm::start();
    let key = key("valid");
    fake.script(&key, [Reply::Text(NARRATIVE.into())]);
    let sb = Sandbox::new();
    sb.write("build.fabro", WORKFLOW);
    let run = weft(
        &sb,
        Some((&fake, &key)),
        &[
            "run",
            "build.fabro",
            "--json",
            "--retro",
            "--model",
            "gpt-5.2",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let id = run_id(&run);
    let retro = retro_of(&sb, &id);

    assert_eq!(retro["run_status"], "succeeded");
    assert_eq!(retro["narrative"]["smoothness"], "smooth");
    assert_eq!(retro["narrative"]["friction_points"][0]["stage"], "build");
    assert_eq!(retro["narrative"]["open_items"][0]["kind"], "test_gap");
    assert!(retro.get("error").is_none(), "{retro}");
    assert_eq!(retro["llm"]["model"], "gpt-5.2");
    let stages: Vec<&str> = retro["stages"]
        .as_array()
        .map(|a| a.iter().filter_map(|s| s["node_id"].as_str()).collect())
        .unwrap_or_default();
    assert!(stages.contains(&"build"), "{retro}");
    assert_eq!(retro["totals"]["stages_failed"], 0);

    let sent = fake.requests(&key);
    assert_eq!(sent.len(), 1, "one model call");
    let body = sent[0].body.to_string();
    assert!(
        body.contains("build@1") && body.contains("Build the thing"),
        "the model is told about the run's stages and goal: {body}"
    );

    let run_dir = retro_dir(&sb, &id);
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(run_dir.join("retro.json"))
            .unwrap_or_else(|e| panic!("retro.json: {e}")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file, retro, "the file and the store agree");

    let shown = sb.run(&["retro", &id]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    for expected in [
        "Rating:   smooth",
        "Intent:   Build the thing",
        "[workflow] one stage is enough",
        "[retry] a flaky echo (stage build)",
        "[test_gap] nothing checks the build",
        "build@1",
    ] {
        assert!(
            shown.stdout.contains(expected),
            "{expected}: {}",
            shown.stdout
        );
    }
}

/// The run directory `weft ps --json` names for `run_id`.
fn retro_dir(sb: &Sandbox, run_id: &str) -> std::path::PathBuf {
    let ps = sb.run(&["ps", "--all", "--json"]);
    let runs: Value = serde_json::from_str(&ps.stdout).unwrap_or_else(|e| panic!("{e}"));
    runs.as_array()
        .and_then(|a| a.iter().find(|r| r["id"] == run_id))
        .and_then(|r| r["run_dir"].as_str())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| panic!("run {run_id} not listed: {}", ps.stdout))
}

#[test]
fn an_invalid_retro_reply_is_sent_back_for_repair() {
    let fake = FakeLlm::start();
    let key = key("repair");
    let invalid = NARRATIVE.replace("\"smooth\"", "\"fine\"");
    fake.script(&key, [Reply::Text(invalid), Reply::Text(NARRATIVE.into())]);
    let sb = Sandbox::new();
    sb.write("build.fabro", WORKFLOW);
    let run = weft(
        &sb,
        Some((&fake, &key)),
        &["run", "build.fabro", "--json", "--retro", "--no-daemon"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let retro = retro_of(&sb, &run_id(&run));
    assert_eq!(retro["narrative"]["smoothness"], "smooth");
    assert_eq!(retro["llm"]["calls"], 2, "the repair turn is counted");
    let sent = fake.requests(&key);
    assert_eq!(sent.len(), 2);
    let repair = sent[1].body.to_string();
    assert!(
        repair.contains("did not pass validation") && repair.contains("smoothness"),
        "the repair turn names the problem: {repair}"
    );
}

#[test]
fn a_run_without_retros_writes_none_and_calls_no_model() {
    let fake = FakeLlm::start();
    let key = key("off");
    let sb = Sandbox::new();
    // Settings say yes; the run's `--no-retro` wins.
    sb.write("home/settings.toml", "retros = true\n");
    sb.write("build.fabro", WORKFLOW);
    let run = weft(
        &sb,
        Some((&fake, &key)),
        &["run", "build.fabro", "--json", "--no-retro", "--no-daemon"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !run.stderr.contains("settings.toml"),
        "`retros` is a known setting: {}",
        run.stderr
    );
    let id = run_id(&run);
    assert!(!retro_dir(&sb, &id).join("retro.json").exists());
    let shown = sb.run(&["retro", &id]);
    assert_eq!(shown.code, 2, "{shown:?}");
    assert!(shown.stderr.contains("has no retro"), "{}", shown.stderr);

    // And by default (no settings, no flag), none either.
    let sb = Sandbox::new();
    sb.write("build.fabro", WORKFLOW);
    let run = weft(
        &sb,
        Some((&fake, &key)),
        &["run", "build.fabro", "--json", "--no-daemon"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!retro_dir(&sb, &run_id(&run)).join("retro.json").exists());
    assert!(fake.requests(&key).is_empty(), "no model was called");
}

#[test]
fn a_retro_without_a_model_is_recorded_as_failed_and_the_run_keeps_its_status() {
    let sb = Sandbox::new();
    sb.write("broken.fabro", FAILING);
    sb.write(
        "run.toml",
        "[workflow]\ngraph = \"broken.fabro\"\n[run]\nretros = true\n",
    );
    let run = weft(&sb, None, &["run", "run.toml", "--json", "--no-daemon"]);
    assert_eq!(run.code, 1, "the run failed: {}", run.stderr);
    let id = run_id(&run);
    let retro = retro_of(&sb, &id);
    assert_eq!(retro["run_status"], "failed");
    assert!(retro.get("narrative").is_none(), "{retro}");
    assert!(
        retro["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{retro}"
    );
    assert_eq!(retro["totals"]["stages_failed"], 1);
    assert!(
        retro["stages"][1]["failure_reason"].is_string()
            || retro["stages"][0]["failure_reason"].is_string(),
        "{retro}"
    );
    let ps = sb.run(&["ps", "--all", "--json"]);
    let runs: Value = serde_json::from_str(&ps.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(runs[0]["status"], "failed", "the retro changed nothing");
    let shown = sb.run(&["retro", &id]);
    assert!(
        shown.stdout.contains("Rating:   none ("),
        "{}",
        shown.stdout
    );
    let events = weft_tests::events(&sb, &id);
    let last_end = events
        .iter()
        .rposition(|e| e["event"] == "run.failed")
        .unwrap_or_else(|| panic!("no run.failed"));
    assert!(
        events[last_end + 1..]
            .iter()
            .any(|e| e["event"] == "run.notice"
                && e["properties"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("without its narrative"))),
        "a notice says the retro has no narrative"
    );
}

#[test]
fn weft_retro_generate_makes_one_for_an_ended_run() {
    let fake = FakeLlm::start();
    let key = key("generate");
    fake.script(&key, [Reply::Text(NARRATIVE.into())]);
    let sb = Sandbox::new();
    sb.write("build.fabro", WORKFLOW);
    let run = weft(&sb, None, &["run", "build.fabro", "--json", "--no-daemon"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let id = run_id(&run);
    assert_eq!(sb.run(&["retro", &id]).code, 2, "none yet");

    let made = weft(
        &sb,
        Some((&fake, &key)),
        &["retro", &id, "--generate", "--json", "--model", "gpt-5.2"],
    );
    assert_eq!(made.code, 0, "{}", made.stderr);
    let retro: Value = serde_json::from_str(&made.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(retro["narrative"]["intent"], "Build the thing");
    assert_eq!(fake.requests(&key)[0].body["model"], "gpt-5.2");
    assert_eq!(retro_of(&sb, &id), retro, "recorded for later");
    assert!(retro_dir(&sb, &id).join("retro.json").is_file());
}

#[test]
fn settings_retro_timeout_bounds_the_model_call_and_an_invalid_one_stops_the_run() {
    let fake = FakeLlm::start();
    let key = key("slow");
    fake.script(&key, [Reply::Hang]);
    let sb = Sandbox::new();
    sb.write("home/settings.toml", "retro_timeout = \"1s\"\n");
    sb.write("build.fabro", WORKFLOW);
    let run = weft(
        &sb,
        Some((&fake, &key)),
        &["run", "build.fabro", "--json", "--retro", "--no-daemon"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !run.stderr.contains("unknown key"),
        "`retro_timeout` is a known setting: {}",
        run.stderr
    );
    let retro = retro_of(&sb, &run_id(&run));
    assert!(retro.get("narrative").is_none(), "{retro}");
    assert_eq!(
        retro["error"], "the retro's model call took longer than 1s",
        "{retro}"
    );
    assert_eq!(retro["run_status"], "succeeded", "the run keeps its status");

    sb.write("home/settings.toml", "retro_timeout = \"soon\"\n");
    let refused = weft(
        &sb,
        Some((&fake, &key)),
        &["run", "build.fabro", "--json", "--retro", "--no-daemon"],
    );
    assert_ne!(refused.code, 0, "{refused:?}");
    let said = format!("{}{}", refused.stdout, refused.stderr);
    assert!(
        said.contains("retro_timeout") && said.contains("settings.toml"),
        "the error names the key and the file: {said}"
    );
}
