//! Outcomes in the dialect of StrongDM's Attractor spec, over the real
//! binaries: a stage asking to be retried (`"outcome": "retry"`), the
//! status file a command may write at `$WEFT_STATUS_FILE`, the Attractor
//! fields of Weft's own status.json, and workflows with several exits.

use std::path::{Path, PathBuf};

use serde_json::Value;
use weft_fakellm::{FakeLlm, Reply};
use weft_tests::{Sandbox, events, json, named};

/// Runs `wf.fabro` in process and returns the exit code and the conclusion.
fn run(sb: &Sandbox, dot: &str) -> (i32, Value) {
    sb.write("wf.fabro", dot);
    let out = sb.run(&["run", "--no-daemon", "wf.fabro", "--json"]);
    assert!(
        out.stdout.trim_start().starts_with('{'),
        "no conclusion: {out:?}"
    );
    (out.code, json(&out.stdout))
}

fn run_id(conclusion: &Value) -> &str {
    conclusion["run_id"].as_str().unwrap_or_default()
}

/// The `stage.completed` or `stage.failed` event of `node`.
fn stage_end<'a>(all: &'a [Value], node: &str) -> &'a Value {
    all.iter()
        .find(|e| {
            (e["event"] == "stage.completed" || e["event"] == "stage.failed")
                && e["node_id"] == node
        })
        .unwrap_or_else(|| panic!("no end of {node}: {all:#?}"))
}

fn node_dir(conclusion: &Value, node: &str) -> PathBuf {
    Path::new(conclusion["run_dir"].as_str().unwrap_or_default())
        .join("nodes")
        .join(node)
}

/// Writes `retry.sh`: a command that asks to be retried (printing a
/// routing directive) the first `n` times it runs, counting in `count` in
/// the work dir, then succeeds.
fn retry_first(sb: &Sandbox, n: u32) -> &'static str {
    sb.write(
        "retry.sh",
        format!(
            r#"c=$(cat count 2>/dev/null || echo 0); c=$((c+1)); echo $c > count
if [ $c -le {n} ]; then echo '{{"outcome": "retry"}}'; else echo '{{"outcome": "success"}}'; fi
"#
        ),
    );
    "sh retry.sh"
}

#[test]
fn a_stage_asking_to_be_retried_runs_again_within_its_max_retries() {
    let sb = Sandbox::new();
    let script = retry_first(&sb, 1);
    let (code, c) = run(
        &sb,
        &format!(
            r#"digraph R {{ start [shape=Mdiamond]; exit [shape=Msquare]
               flaky [shape=parallelogram, output_schema="routing", max_retries=2, script="{script}"]
               start -> flaky -> exit }}"#
        ),
    );
    assert_eq!(code, 0, "{c}");
    assert_eq!(c["status"], "succeeded");
    let all = events(&sb, run_id(&c));
    let end = stage_end(&all, "flaky");
    assert_eq!(end["event"], "stage.completed", "{end}");
    assert_eq!(end["properties"]["attempts"], 2, "{end}");
    let retrying = named(&all, "stage.retrying");
    assert_eq!(retrying.len(), 1, "{retrying:?}");
    assert!(
        retrying[0]["properties"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("asked to be retried")),
        "{:?}",
        retrying[0]
    );
}

#[test]
fn a_stage_that_always_asks_for_a_retry_fails_when_its_budget_is_spent() {
    let sb = Sandbox::new();
    let script = retry_first(&sb, 99);
    let (code, c) = run(
        &sb,
        &format!(
            r#"digraph R {{ graph [on_failure="exit"]; start [shape=Mdiamond]; exit [shape=Msquare]
               flaky [shape=parallelogram, output_schema="routing", retry_policy="linear", script="{script}"]
               start -> flaky -> exit }}"#
        ),
    );
    assert_eq!(code, 1, "{c}");
    assert_eq!(c["status"], "failed");
    let reason = c["failure_reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("asked to be retried") && reason.contains("no attempt left after 3"),
        "{reason}"
    );
    let all = events(&sb, run_id(&c));
    assert_eq!(stage_end(&all, "flaky")["properties"]["attempts"], 3);
    assert_eq!(
        std::fs::read_to_string(sb.path().join("count"))
            .unwrap_or_default()
            .trim(),
        "3"
    );
}

#[test]
fn allow_partial_makes_a_spent_retry_request_partially_succeeded() {
    let sb = Sandbox::new();
    let script = retry_first(&sb, 99);
    let (code, c) = run(
        &sb,
        &format!(
            r#"digraph R {{ start [shape=Mdiamond]; exit [shape=Msquare]
               flaky [shape=parallelogram, output_schema="routing", retry_policy="linear", allow_partial=true, script="{script}"]
               start -> flaky -> exit }}"#
        ),
    );
    assert_eq!(code, 0, "{c}");
    let all = events(&sb, run_id(&c));
    let end = stage_end(&all, "flaky");
    assert_eq!(end["properties"]["status"], "partially_succeeded", "{end}");
    assert_eq!(end["properties"]["attempts"], 3);
}

#[test]
fn a_prompt_stage_asking_to_be_retried_without_a_schema_runs_again() {
    let fake = FakeLlm::start();
    let key = format!("sk-retry-{}", std::process::id());
    let reply = |text: &str| Reply::Turn {
        text: Some(text.into()),
        tool_calls: Vec::new(),
        usage: None,
        finish: None,
    };
    fake.script(
        &key,
        [
            reply(r#"Not yet. {"outcome": "retry"}"#),
            reply(r#"Done. {"outcome": "success"}"#),
        ],
    );
    let sb = Sandbox::new();
    sb.write(
        "wf.fabro",
        r#"digraph R { start [shape=Mdiamond]; exit [shape=Msquare]
           ask [shape=tab, prompt="Ready?", retry_policy="linear"]
           start -> ask -> exit }"#,
    );
    let out = sb
        .weft()
        .env("OPENAI_API_KEY", &key)
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.url()))
        .args([
            "run",
            "--no-daemon",
            "wf.fabro",
            "--json",
            "--model",
            "gpt-5.2",
        ])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let c = json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(fake.requests(&key).len(), 2, "asked twice: {stderr}");
    let all = events(&sb, run_id(&c));
    let end = stage_end(&all, "ask");
    assert_eq!(end["event"], "stage.completed", "{end}");
    assert_eq!(end["properties"]["attempts"], 2);
}

#[test]
fn a_status_file_routes_by_its_label_and_updates_the_context() {
    let sb = Sandbox::new();
    sb.write(
        "report.sh",
        r#"printf '{"outcome":"partial_success","preferred_next_label":"Fix","context_updates":{"k":"v"},"notes":"one flaky test"}' > "$WEFT_STATUS_FILE""#,
    );
    sb.write(
        "fix.sh",
        r#"grep -q '"k": "v"' "$WEFT_CONTEXT" && touch fixed"#,
    );
    let (code, c) = run(
        &sb,
        // `fix` names WEFT_CONTEXT in its script, so it gets the context file.
        r#"digraph S { start [shape=Mdiamond]; exit [shape=Msquare]
           check [shape=parallelogram, script="sh report.sh"]
           fix [shape=parallelogram, script="WEFT_CONTEXT=$WEFT_CONTEXT sh fix.sh"]
           ship [shape=parallelogram, script="true"]
           start -> check
           check -> ship [label="Ship"]
           check -> fix [label="Fix"]
           fix -> exit
           ship -> exit }"#,
    );
    assert_eq!(code, 0, "{c}");
    let stages: Vec<&str> = c["stages"]
        .as_array()
        .map(|s| s.iter().filter_map(|s| s["node_id"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(stages, ["start", "check", "fix", "exit"], "{c}");
    assert!(sb.path().join("fixed").exists(), "the context held k");
    let all = events(&sb, run_id(&c));
    let end = stage_end(&all, "check");
    assert_eq!(end["properties"]["status"], "partially_succeeded");
    assert_eq!(
        end["properties"]["outcome"]["context_updates"]["k"], "v",
        "{end}"
    );
    assert_eq!(end["properties"]["outcome"]["notes"][0], "one flaky test");

    // Weft's own status.json carries the Attractor fields too; the
    // command's report is kept as it wrote it.
    let dir = node_dir(&c, "check");
    let status = json(&std::fs::read_to_string(dir.join("status.json")).unwrap_or_default());
    assert_eq!(status["outcome"], "partial_success", "{status}");
    assert_eq!(status["status"], "partially_succeeded");
    assert_eq!(status["preferred_next_label"], "Fix");
    assert_eq!(status["preferred_label"], "Fix");
    let reported =
        json(&std::fs::read_to_string(dir.join("reported_status.json")).unwrap_or_default());
    assert_eq!(reported["preferred_next_label"], "Fix");
    let exit = json(
        &std::fs::read_to_string(node_dir(&c, "exit").join("status.json")).unwrap_or_default(),
    );
    assert_eq!(exit["outcome"], "success");
}

#[test]
fn a_status_file_that_is_not_a_small_regular_file_fails_the_stage() {
    for (what, body, expected) in [
        (
            "a directory",
            r#"mkdir "$WEFT_STATUS_FILE""#,
            "is a directory, not a regular file",
        ),
        (
            "a link to /dev/zero",
            r#"ln -s /dev/zero "$WEFT_STATUS_FILE""#,
            "is a symbolic link",
        ),
        (
            "too large",
            r#"head -c 70000 /dev/zero | tr '\0' x > "$WEFT_STATUS_FILE""#,
            "larger than the limit of 64 KiB",
        ),
        (
            "an invalid field",
            r#"echo '{"outcome": "maybe"}' > "$WEFT_STATUS_FILE""#,
            "`outcome` must be one of",
        ),
    ] {
        let sb = Sandbox::new();
        sb.write("report.sh", body);
        let (code, c) = run(
            &sb,
            r#"digraph S { graph [on_failure="exit"]; start [shape=Mdiamond]; exit [shape=Msquare]
               report [shape=parallelogram, script="sh report.sh"]
               start -> report -> exit }"#,
        );
        assert_eq!(code, 1, "{what}: {c}");
        let reason = c["failure_reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains(expected) && reason.contains("reported_status.json"),
            "{what}: {reason}"
        );
    }
}

#[test]
fn a_status_file_decides_over_the_exit_status_and_a_retry_clears_it() {
    let sb = Sandbox::new();
    // The first attempt exits 1 but reports a retry; the second writes
    // nothing and exits 0: the first attempt's file must not count again.
    sb.write(
        "report.sh",
        r#"if [ -e once ]; then exit 0; fi; touch once
echo '{"outcome": "retry"}' > "$WEFT_STATUS_FILE"; exit 1
"#,
    );
    let (code, c) = run(
        &sb,
        r#"digraph S { graph [on_failure="exit"]; start [shape=Mdiamond]; exit [shape=Msquare]
           report [shape=parallelogram, retry_policy="linear", script="sh report.sh"]
           start -> report -> exit }"#,
    );
    assert_eq!(code, 0, "{c}");
    let all = events(&sb, run_id(&c));
    let end = stage_end(&all, "report");
    assert_eq!(end["event"], "stage.completed", "{end}");
    assert_eq!(end["properties"]["attempts"], 2);
    assert!(
        !node_dir(&c, "report").join("reported_status.json").exists(),
        "the second attempt wrote none"
    );
}

const TWO_EXITS: &str = r#"digraph TwoExits { start [shape=Mdiamond]
  done [shape=Msquare]
  failed_exit [shape=Msquare]
  check [shape=parallelogram, script="sh check.sh"]
  start -> check
  check -> failed_exit [condition="outcome=failed"]
  check -> done }"#;

#[test]
fn a_workflow_with_two_exits_validates_with_a_note_and_ends_at_the_exit_it_reaches() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", TWO_EXITS);
    let validated = sb.run(&["validate", "wf.fabro"]);
    assert_eq!(validated.code, 0, "{validated:?}");
    let said = format!("{}{}", validated.stdout, validated.stderr);
    assert!(
        said.contains("info[terminal_node]")
            && said.contains("2 exit nodes (`done`, `failed_exit`)")
            && !said.contains("error["),
        "{said}"
    );
    let graph = sb.run(&["graph", "--json", "wf.fabro"]);
    let graph = json(&graph.stdout);
    assert_eq!(graph["exits"], serde_json::json!(["done", "failed_exit"]));
    assert_eq!(graph["exit"], Value::Null, "no single exit");

    // Succeeds: the unconditional edge to `done`, in process.
    sb.write("check.sh", "exit 0");
    let out = sb.run(&["run", "--no-daemon", "wf.fabro", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let c = json(&out.stdout);
    assert_eq!(c["exit_node"], "done", "{c}");
    assert!(out.stderr.contains("ended at `done`"), "{}", out.stderr);
    let all = events(&sb, run_id(&c));
    assert_eq!(
        named(&all, "run.completed")[0]["properties"]["exit_node"],
        "done"
    );

    // Fails: the condition leads to `failed_exit`, through the daemon.
    sb.write("check.sh", "exit 1");
    let out = sb.run(&["run", "wf.fabro", "--json"]);
    assert_eq!(out.code, 0, "reaching an exit ends the run: {out:?}");
    let c = json(&out.stdout);
    assert_eq!(c["exit_node"], "failed_exit", "{c}");
    assert_eq!(c["failed_stages"], serde_json::json!(["check"]));
    assert!(
        out.stderr.contains("ended at `failed_exit`"),
        "{}",
        out.stderr
    );
    let all = events(&sb, run_id(&c));
    assert_eq!(
        named(&all, "run.completed")[0]["properties"]["exit_node"],
        "failed_exit"
    );
    let conclusion = json(
        &std::fs::read_to_string(
            Path::new(c["run_dir"].as_str().unwrap_or_default()).join("conclusion.json"),
        )
        .unwrap_or_default(),
    );
    assert_eq!(conclusion["exit_node"], "failed_exit");
}

#[test]
fn a_single_exit_is_named_in_the_event_but_not_on_the_last_line() {
    let sb = Sandbox::new();
    let out = {
        sb.write(
            "wf.fabro",
            r#"digraph One { start [shape=Mdiamond]; exit [shape=Msquare]; start -> exit }"#,
        );
        sb.run(&["run", "--no-daemon", "wf.fabro", "--json"])
    };
    assert_eq!(out.code, 0, "{out:?}");
    let c = json(&out.stdout);
    assert_eq!(c["exit_node"], "exit");
    assert!(!out.stderr.contains("ended at"), "{}", out.stderr);
}

#[test]
fn every_exit_checks_the_goal_gates() {
    let sb = Sandbox::new();
    let (code, c) = run(
        &sb,
        r#"digraph Gated { start [shape=Mdiamond]
           done [shape=Msquare]
           failed_exit [shape=Msquare]
           gate [shape=parallelogram, goal_gate=true, script="exit 1"]
           start -> gate
           gate -> failed_exit [condition="outcome=failed"]
           gate -> done }"#,
    );
    assert_eq!(code, 1, "{c}");
    assert_eq!(c["status"], "failed");
    assert!(
        c["failure_reason"]
            .as_str()
            .is_some_and(|r| r.contains("goal gate unsatisfied for node gate")),
        "{c}"
    );
    assert_eq!(c["exit_node"], Value::Null, "it never got past the gate");
}
