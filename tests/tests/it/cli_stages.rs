//! Agent stages with `backend="cli"` over the real binaries, against
//! `weft-fakecli` (tests/fakecli) linked as `claude`, `codex` and `gemini`:
//! the flags and environment each program gets, what it writes and
//! reports, a repair turn resuming its session, and how a failing, missing,
//! hanging or cancelled program ends the stage (docs/agents.md, "Headless
//! CLI agents").

use std::path::PathBuf;

use serde_json::{Value, json};
use weft_tests::{Sandbox, binary, events, named};

use super::acp_stages::{agents_alive, has_event, read, stage_dir, wait_until};

const FLAVORS: [&str; 3] = ["claude", "codex", "gemini"];

/// A sandbox whose `bin/` holds the fake under the three programs' names.
fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    let bin = bin_dir(&sb);
    std::fs::create_dir_all(&bin).unwrap_or_else(|e| panic!("{e}"));
    for program in FLAVORS {
        std::os::unix::fs::symlink(binary("weft-fakecli"), bin.join(program))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    sb
}

fn bin_dir(sb: &Sandbox) -> PathBuf {
    sb.path().join("bin")
}

/// A workflow of one CLI stage, `work`, with `attrs` added to the node.
fn workflow(attrs: &str) -> String {
    format!(
        r#"digraph D {{ start [shape=Mdiamond]; exit [shape=Msquare]
           work [shape=box, backend="cli", prompt="Write the notes" {attrs}]
           start -> work -> exit }}"#
    )
}

struct Ran {
    code: Option<i32>,
    stderr: String,
    run_id: String,
    conclusion: Value,
}

/// A `weft` command with the fakes first on PATH, the script, the argv log
/// and a key for each provider in its environment.
fn weft(sb: &Sandbox) -> std::process::Command {
    let path = format!(
        "{}:{}",
        bin_dir(sb).display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = sb.weft();
    command
        .env("PATH", path)
        .env("WEFT_FAKECLI_SCRIPT", sb.path().join("script.json"))
        .env("WEFT_FAKECLI_LOG", sb.path().join("argv.jsonl"))
        .env("ANTHROPIC_API_KEY", "sk-ant-cli-test")
        .env("OPENAI_API_KEY", "sk-openai-cli-test")
        .env("GEMINI_API_KEY", "gemini-cli-test")
        .env_remove("WEFT_FAKECLI_AS");
    command
}

/// `weft run --no-daemon [args] wf.fabro --json` with `script`.
fn run(sb: &Sandbox, script: &Value, args: &[&str]) -> Ran {
    sb.write("script.json", script.to_string());
    let out = weft(sb)
        .args(["run", "--no-daemon"])
        .args(args)
        .args(["wf.fabro", "--json"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let conclusion: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    Ran {
        code: out.status.code(),
        run_id: conclusion["run_id"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        stderr,
        conclusion,
    }
}

/// Every invocation of the fake, in order.
fn invocations(sb: &Sandbox) -> Vec<Value> {
    let log = std::fs::read_to_string(sb.path().join("argv.jsonl")).unwrap_or_default();
    log.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn argv(invocation: &Value) -> Vec<String> {
    invocation["argv"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The stage's failure message (empty when it did not fail).
fn failure_message(sb: &Sandbox, run_id: &str) -> String {
    named(&events(sb, run_id), "stage.failed")
        .first()
        .and_then(|e| e["properties"]["outcome"]["failure"]["message"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2))
        == Some("0")
}

#[test]
fn each_cli_writes_on_disk_and_reports_its_tools_tokens_and_files_like_weft_s_own_agent() {
    for flavor in FLAVORS {
        let sb = sandbox();
        weft_tests::git_repo(&sb.path().join("repo"), &[("kept.txt", "kept\n")]);
        let model = if flavor == "claude" {
            r#", model="claude-test-model""#
        } else {
            ""
        };
        sb.write(
            "wf.fabro",
            workflow(&format!(r#", cli.agent="{flavor}"{model}"#)),
        );
        let ran = run(
            &sb,
            &json!({
                "session_id": format!("sess-{flavor}"),
                "usage": {"input": 1200, "output": 80},
                "cost_usd": 0.25,
                "steps": [
                    {"think": "planning the notes"},
                    {"say": "Writing the notes."},
                    {"tool": {"name": "Bash", "input": {"command": "ls"}, "output": "kept.txt"}},
                    {"write": {"path": "notes/a.txt", "content": "alpha\n"}},
                    {"say": "Done."}
                ]
            }),
            &["--no-checkpoint", "--work-dir", "repo"],
        );
        assert_eq!(ran.code, Some(0), "{flavor}: {}", ran.stderr);
        assert_eq!(
            ran.conclusion["status"], "succeeded",
            "{flavor}: {} {}",
            ran.conclusion, ran.stderr
        );
        assert_eq!(read(&sb.path().join("repo/notes/a.txt")), "alpha\n");

        let all = events(&sb, &ran.run_id);
        let work = named(&all, "stage.completed")
            .into_iter()
            .find(|e| e["node_id"] == "work")
            .unwrap_or_else(|| panic!("{flavor}: {all:?}"));
        let outcome = &work["properties"]["outcome"];
        assert_eq!(
            outcome["files_touched"],
            json!(["notes/a.txt"]),
            "{flavor}: {outcome}"
        );
        let tools = named(&all, "agent.tool.started");
        assert!(
            tools.iter().any(
                |e| e["properties"]["summary"].as_str().unwrap_or_default() == "ls"
                    || e["properties"]["summary"]
                        .as_str()
                        .unwrap_or_default()
                        .ends_with(" ls")
            ),
            "{flavor}: {tools:?}"
        );
        assert!(
            !named(&all, "agent.tool.completed").is_empty(),
            "{flavor}: {all:?}"
        );
        let text: String = named(&all, "agent.text")
            .iter()
            .filter_map(|e| e["properties"]["text"].as_str())
            .collect();
        assert!(
            text.contains("Writing the notes.") && text.contains("Done."),
            "{flavor}: {text}"
        );
        let calls = named(&all, "llm.completed");
        assert_eq!(calls.len(), 1, "{flavor}: {calls:?}");
        assert_eq!(calls[0]["properties"]["provider"], "cli");
        assert_eq!(calls[0]["properties"]["input_tokens"], 1200, "{flavor}");
        assert_eq!(calls[0]["properties"]["output_tokens"], 80, "{flavor}");
        if flavor == "claude" {
            assert_eq!(calls[0]["properties"]["model"], "claude-test-model");
            assert_eq!(calls[0]["properties"]["cost"], 0.25);
        }

        let dir = stage_dir(&sb, &ran.run_id);
        assert_eq!(read(&dir.join("response.md")), "Done.", "{flavor}");
        let transcript = read(&dir.join("transcript.jsonl"));
        let lines: Vec<Value> = transcript
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        assert_eq!(lines[0]["type"], "session", "{transcript}");
        assert_eq!(lines[0]["provider"], "cli");
        assert_eq!(lines[0]["profile"], flavor);
        assert!(
            lines.iter().any(|l| l["type"] == "user"),
            "{flavor}: {transcript}"
        );
        assert!(
            lines.iter().any(|l| l["type"] == "tool"),
            "{flavor}: {transcript}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l["type"] == "assistant" && l["usage"]["input"] == 1200),
            "{flavor}: {transcript}"
        );
        if flavor != "gemini" {
            // Gemini's stream has no thought records.
            assert!(
                lines.iter().any(|l| l["reasoning"]
                    .as_str()
                    .is_some_and(|r| r.contains("planning"))),
                "{flavor}: {transcript}"
            );
        }
        assert_eq!(
            lines.last().map(|l| l["type"].clone()),
            Some("end".into()),
            "{flavor}: {transcript}"
        );

        // The flags and environment it was started with.
        let ran = invocations(&sb);
        assert_eq!(ran.len(), 1, "{flavor}: {ran:?}");
        let args = argv(&ran[0]);
        let env = &ran[0]["env"];
        assert!(
            ran[0]["cwd"]
                .as_str()
                .is_some_and(|cwd| cwd.ends_with("/repo")),
            "{flavor}: {}",
            ran[0]
        );
        match flavor {
            "claude" => {
                assert_eq!(
                    args[1..8],
                    [
                        "-p",
                        "--output-format",
                        "stream-json",
                        "--verbose",
                        "--permission-mode",
                        "bypassPermissions",
                        "--model"
                    ],
                    "{args:?}"
                );
                assert_eq!(env["ANTHROPIC_API_KEY"], "<set>", "{env}");
                assert_eq!(env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"], "1");
                if running_as_root() {
                    assert_eq!(env["IS_SANDBOX"], "1", "{env}");
                }
            }
            "codex" => {
                assert_eq!(args[1..4], ["exec", "--json", "--skip-git-repo-check"]);
                assert_eq!(env["OPENAI_API_KEY"], "<set>", "{env}");
            }
            _ => {
                assert!(args.contains(&"--yolo".to_string()), "{args:?}");
                assert_eq!(env["GEMINI_API_KEY"], "<set>", "{env}");
                assert_eq!(env["GEMINI_CLI_TRUST_WORKSPACE"], "true");
            }
        }
        // Each program gets its own provider's key and no other.
        let others = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"]
            .into_iter()
            .filter(|k| env.get(*k).is_some())
            .count();
        assert_eq!(others, 1, "{flavor}: {env}");
    }
}

#[test]
fn files_each_program_reports_writing_are_touched_without_a_git_repo_and_the_provider_picks_it() {
    let cases = [
        ("claude", r#", provider="anthropic""#),
        ("codex", r#", provider="openai""#),
        ("gemini", r#", provider="gemini""#),
    ];
    for (flavor, attrs) in cases {
        let sb = sandbox();
        sb.write("wf.fabro", workflow(attrs));
        let ran = run(
            &sb,
            &json!({"steps": [
                {"write": {"path": "out/b.txt", "content": "beta\n"}},
                {"tool": {"name": if flavor == "claude" { "Write" } else { "write_file" },
                          "input": {"file_path": "failed.txt"},
                          "output": "denied", "is_error": true}},
                {"say": "Wrote it."}
            ]}),
            &[],
        );
        assert_eq!(
            ran.conclusion["status"], "succeeded",
            "{flavor}: {}",
            ran.stderr
        );
        assert_eq!(invocations(&sb)[0]["flavor"], flavor);
        let all = events(&sb, &ran.run_id);
        let work = named(&all, "stage.completed")
            .into_iter()
            .find(|e| e["node_id"] == "work")
            .unwrap_or_else(|| panic!("{flavor}: {all:?}"));
        assert_eq!(
            work["properties"]["outcome"]["files_touched"],
            json!(["out/b.txt"]),
            "{flavor}: made relative to the work dir; a failed write is not counted"
        );
    }
}

#[test]
fn a_reply_failing_its_routing_schema_is_repaired_by_resuming_the_program_s_session() {
    for flavor in FLAVORS {
        let sb = sandbox();
        sb.write(
            "wf.fabro",
            workflow(&format!(
                r#", cli.agent="{flavor}", output_schema="routing""#
            )),
        );
        let ran = run(
            &sb,
            &json!({
                "session_id": "sess-repair",
                "steps": [{"say": "I did it, no JSON though."}],
                "resume_steps": [{"say": "{\"outcome\": \"success\"}"}]
            }),
            &[],
        );
        assert_eq!(
            ran.conclusion["status"], "succeeded",
            "{flavor}: {}",
            ran.stderr
        );
        let calls = invocations(&sb);
        assert_eq!(calls.len(), 2, "{flavor}: {calls:?}");
        let first = argv(&calls[0]);
        let second = argv(&calls[1]);
        assert!(
            !first.iter().any(|a| a == "resume" || a == "--resume"),
            "{first:?}"
        );
        let resumed = match flavor {
            "codex" => second.windows(2).any(|w| w == ["resume", "sess-repair"]),
            _ => second.windows(2).any(|w| w == ["--resume", "sess-repair"]),
        };
        assert!(resumed, "{flavor}: {second:?}");
        assert!(
            second.iter().any(|p| p.contains("did not pass validation")),
            "{flavor}: the repair message is the prompt: {second:?}"
        );
        let all = events(&sb, &ran.run_id);
        assert_eq!(named(&all, "llm.completed").len(), 2, "{flavor}");
        let notices: Vec<&str> = named(&all, "run.notice")
            .iter()
            .filter_map(|e| e["properties"]["message"].as_str())
            .collect();
        assert!(
            notices.iter().any(|n| n.contains("repair turn 1 of 2")),
            "{flavor}: {notices:?}"
        );
    }
}

#[test]
fn a_failing_cli_fails_the_stage_naming_the_program_and_why() {
    let cases: &[(&str, Value, &str)] = &[
        (
            "claude",
            json!({"steps": [{"say": "trying"}, {"fail": "the budget is spent"}]}),
            "claude failed: the budget is spent",
        ),
        (
            "claude",
            json!({"steps": [{"fail": {"message": "Invalid API key", "api_status": 401}}]}),
            "claude failed: Invalid API key",
        ),
        (
            "codex",
            json!({"steps": [{"fail": "stream disconnected"}]}),
            "codex failed: stream disconnected",
        ),
        (
            "gemini",
            json!({"steps": [{"fail": "quota exceeded"}]}),
            "gemini failed: quota exceeded",
        ),
        (
            "gemini",
            json!({"steps": [{"say": "working"}, {"crash": 3}]}),
            "gemini stopped short",
        ),
    ];
    for (flavor, script, expected) in cases {
        let sb = sandbox();
        sb.write("wf.fabro", workflow(&format!(r#", cli.agent="{flavor}""#)));
        let ran = run(&sb, script, &[]);
        // The failed stage's plain edge still leads to the exit.
        assert_eq!(ran.code, Some(0), "{flavor}: {}", ran.stderr);
        let message = failure_message(&sb, &ran.run_id);
        assert!(message.contains(expected), "{flavor}: {message}");
        assert!(
            !message.contains("(exit code 0)"),
            "{flavor}: a clean exit is not news: {message}"
        );
        if expected.contains("stopped short") {
            assert!(message.contains("(exit code 3)"), "{message}");
        }
        assert_eq!(agents_alive(&sb), Vec::<String>::new(), "{flavor}");
    }
}

#[test]
fn a_program_printing_no_json_fails_saying_so() {
    let sb = sandbox();
    let script = sb.write(
        "bin/not-claude",
        "#!/bin/sh\necho 'Usage: not-claude [options]'\necho 'see --help'\nexit 0\n",
    );
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{e}"));
    sb.write(
        "wf.fabro",
        workflow(r#", cli.agent="claude", cli.command="not-claude""#),
    );
    let ran = run(&sb, &json!([]), &[]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let message = failure_message(&sb, &ran.run_id);
    assert!(
        message.contains("not-claude printed no JSON lines")
            && message.contains("see --help")
            && message.contains("is it the claude CLI"),
        "{message}"
    );
}

#[test]
fn a_program_missing_from_path_fails_saying_how_to_install_it() {
    let sb = sandbox();
    sb.write(
        "wf.fabro",
        workflow(r#", cli.agent="codex", cli.command="no-such-codex""#),
    );
    let ran = run(&sb, &json!([]), &[]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let message = failure_message(&sb, &ran.run_id);
    assert!(
        message.contains("`no-such-codex` is not on PATH")
            && message.contains("npm i -g @openai/codex")
            && message.contains("cli.command"),
        "{message}"
    );

    // Without `cli.agent` or a provider there is no program to pick.
    let sb = sandbox();
    sb.write("wf.fabro", workflow(""));
    let ran = run(&sb, &json!([]), &[]);
    let message = failure_message(&sb, &ran.run_id);
    assert!(message.contains("needs `cli.agent`"), "{message}");
}

#[test]
fn a_silent_program_is_stopped_after_its_stall_timeout_and_leaves_no_process() {
    let sb = sandbox();
    sb.write(
        "wf.fabro",
        workflow(r#", cli.agent="claude", cli.stall_timeout="1s""#),
    );
    let ran = run(
        &sb,
        &json!({"steps": [{"say": "thinking"}, {"stderr": "still thinking"}, {"hang": true}]}),
        &[],
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let message = failure_message(&sb, &ran.run_id);
    assert!(
        message.contains("claude printed nothing for 1s")
            && message.contains("cli.stall_timeout")
            && message.contains("still thinking"),
        "{message}"
    );
    assert_eq!(agents_alive(&sb), Vec::<String>::new());
    let dir = stage_dir(&sb, &ran.run_id);
    assert!(read(&dir.join("agent-stderr.log")).contains("still thinking"));
}

#[test]
fn cancelling_a_run_mid_turn_stops_the_program_and_leaves_no_process() {
    let sb = sandbox();
    // Through the daemon, so the program is found by its path.
    let command = bin_dir(&sb).join("gemini");
    sb.write(
        "wf.fabro",
        workflow(&format!(
            r#", cli.agent="gemini", cli.command="{}""#,
            command.display()
        )),
    );
    sb.write(
        "script.json",
        json!({"steps": [{"say": "working on it"}, {"sleep_ms": 600_000}]}).to_string(),
    );
    let _daemon = weft_tests::Weftd::start(&sb);
    let out = weft(&sb)
        .args(["run", "wf.fabro", "--detach"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run_id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    wait_until("the program to speak", || {
        has_event(&sb, &run_id, "agent.text")
    });
    assert_eq!(agents_alive(&sb).len(), 1, "one program runs");
    let cancelled = sb.run(&["cancel", &run_id]);
    assert_eq!(cancelled.code, 0, "{cancelled:?}");
    weft_tests::wait_for_status(
        &weft::store::Home::at(sb.path().join("home")),
        &run_id,
        weft::model::RunStatus::Cancelled,
    );
    wait_until("no program to be left", || agents_alive(&sb).is_empty());
    let transcript = read(&stage_dir(&sb, &run_id).join("transcript.jsonl"));
    let end = transcript.lines().last().unwrap_or_default().to_string();
    assert!(end.contains("cancelled"), "{end}");
}

#[test]
fn an_agent_of_settings_toml_gives_the_program_its_path_environment_and_model() {
    let sb = sandbox();
    let elsewhere = sb.path().join("opt/codex-cli");
    std::fs::create_dir_all(&elsewhere).unwrap_or_else(|e| panic!("{e}"));
    let codex = elsewhere.join("codex");
    std::os::unix::fs::symlink(binary("weft-fakecli"), &codex).unwrap_or_else(|e| panic!("{e}"));
    sb.write(
        "home/settings.toml",
        format!(
            "[agents.codex]\ncli_command = [{:?}]\nmodel = \"o-small\"\nenv = {{ CODEX_HOME = \"/srv/codex-home\" }}\n",
            codex.display().to_string()
        ),
    );
    sb.write("wf.fabro", workflow(r#", cli.agent="codex""#));
    let ran = run(&sb, &json!({"steps": [{"say": "done"}]}), &[]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(ran.conclusion["status"], "succeeded", "{}", ran.conclusion);
    let calls = invocations(&sb);
    assert_eq!(calls.len(), 1, "{calls:?}");
    let words = argv(&calls[0]);
    assert_eq!(words[0], codex.display().to_string(), "{words:?}");
    assert!(
        words.windows(2).any(|w| w == ["-m", "o-small"]),
        "{words:?}"
    );
    assert_eq!(calls[0]["env"]["CODEX_HOME"], "/srv/codex-home");
    assert_eq!(
        calls[0]["env"]["OPENAI_API_KEY"], "<set>",
        "its key, logged unread"
    );
}
