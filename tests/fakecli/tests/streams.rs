//! Runs the built `weft-fakecli` as `claude`, `codex` and `gemini` (through
//! symlinks) and checks that what it prints is the documented JSON-lines
//! stream of each, that it writes files, fails, crashes and checks flags.
#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn scratch(name: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix(&format!("fakecli-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("create scratch dir");
    std::fs::create_dir(dir.path().join("work")).expect("create the work dir");
    for program in ["claude", "codex", "gemini"] {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_weft-fakecli"), dir.path().join(program))
            .expect("symlink the fake");
    }
    dir
}

/// The arguments Weft passes for a headless run.
fn headless_args(program: &str, prompt: &str) -> Vec<String> {
    let args: Vec<&str> = match program {
        "claude" => vec![
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "bypassPermissions",
            prompt,
        ],
        "codex" => vec![
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--sandbox",
            "workspace-write",
            "--",
            prompt,
        ],
        _ => vec!["-p", prompt, "-o", "stream-json", "--yolo"],
    };
    args.into_iter().map(str::to_owned).collect()
}

fn run(dir: &Path, program: &str, args: &[String], script: &Value) -> Output {
    let script_path = dir.join("script.json");
    std::fs::write(&script_path, script.to_string()).expect("write script");
    Command::new(dir.join(program))
        .args(args)
        .current_dir(dir.join("work"))
        .env("WEFT_FAKECLI_SCRIPT", &script_path)
        .env("WEFT_FAKECLI_LOG", dir.join("argv.jsonl"))
        .env_remove("WEFT_FAKECLI_AS")
        .stdin(Stdio::null())
        .output()
        .expect("run the fake")
}

/// Every stdout line as JSON; panics on a line that is not.
fn records(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

fn types(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["type"].as_str().expect("a type").to_owned())
        .collect()
}

fn session() -> Value {
    json!({
        "session_id": "sess-1",
        "usage": {"input": 500, "output": 40, "cache_read": 100},
        "cost_usd": 0.25,
        "steps": [
            {"say": "Let me look."},
            {"think": "ls first"},
            {"tool": {"name": "Bash", "input": {"command": "ls"}, "output": "a\nb"}},
            {"write": {"path": "docs/notes.md", "content": "hello"}},
            {"say": "Done."}
        ]
    })
}

#[test]
fn claude_session_is_system_assistant_user_and_a_result() {
    let scratch_dir = scratch("claude");
    let dir = scratch_dir.path();
    let output = run(dir, "claude", &headless_args("claude", "go"), &session());
    assert!(output.status.success(), "{output:?}");
    let records = records(&output);
    assert_eq!(
        types(&records),
        [
            "system",
            "assistant",
            "assistant",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant",
            "result"
        ]
    );
    assert_eq!(records[0]["subtype"], "init");
    assert_eq!(records[0]["session_id"], "sess-1");
    assert_eq!(records[3]["message"]["content"][0]["type"], "tool_use");
    assert_eq!(records[4]["message"]["content"][0]["content"], "a\nb");
    let result = records.last().expect("a result");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "Done.");
    assert_eq!(result["total_cost_usd"], 0.25);
    assert_eq!(result["usage"]["input_tokens"], 400);
    assert_eq!(result["usage"]["cache_read_input_tokens"], 100);
    assert_eq!(
        std::fs::read_to_string(dir.join("work/docs/notes.md")).expect("written"),
        "hello"
    );
}

#[test]
fn codex_session_is_thread_items_and_turn_completed() {
    let scratch_dir = scratch("codex");
    let dir = scratch_dir.path();
    let output = run(dir, "codex", &headless_args("codex", "go"), &session());
    assert!(output.status.success(), "{output:?}");
    let records = records(&output);
    assert_eq!(
        types(&records),
        [
            "thread.started",
            "turn.started",
            "item.completed",
            "item.completed",
            "item.started",
            "item.completed",
            "item.started",
            "item.completed",
            "item.completed",
            "turn.completed"
        ]
    );
    assert_eq!(records[0]["thread_id"], "sess-1");
    assert_eq!(records[5]["item"]["type"], "command_execution");
    assert_eq!(records[5]["item"]["exit_code"], 0);
    let change = &records[7]["item"];
    assert_eq!(change["type"], "file_change");
    assert_eq!(change["changes"][0]["kind"], "add");
    assert!(
        change["changes"][0]["path"]
            .as_str()
            .expect("a path")
            .ends_with("work/docs/notes.md")
    );
    assert_eq!(records[9]["usage"]["cached_input_tokens"], 100);
    assert!(dir.join("work/docs/notes.md").exists());
}

#[test]
fn gemini_session_is_init_messages_tools_and_a_result() {
    let scratch_dir = scratch("gemini");
    let dir = scratch_dir.path();
    let output = run(dir, "gemini", &headless_args("gemini", "go"), &session());
    assert!(output.status.success(), "{output:?}");
    let records = records(&output);
    assert_eq!(
        types(&records),
        [
            "init",
            "message",
            "message",
            "tool_use",
            "tool_result",
            "tool_use",
            "tool_result",
            "message",
            "result"
        ]
    );
    assert_eq!(records[1]["role"], "user");
    assert_eq!(records[1]["content"], "go");
    assert_eq!(records[2]["delta"], true);
    assert_eq!(records[3]["tool_id"], records[4]["tool_id"]);
    let result = records.last().expect("a result");
    assert_eq!(result["status"], "success");
    assert_eq!(result["stats"]["input_tokens"], 500);
    assert_eq!(result["stats"]["cached"], 100);
}

#[test]
fn failures_use_each_programs_error_shape_and_exit_code() {
    let script = json!({"steps": [{"say": "trying"}, {"fail": "quota exceeded"}]});
    let scratch_dir = scratch("fail");
    let dir = scratch_dir.path();
    let claude = run(dir, "claude", &headless_args("claude", "go"), &script);
    assert_eq!(claude.status.code(), Some(1));
    let last = records(&claude).pop().expect("a result");
    assert_eq!(last["is_error"], true);
    assert_eq!(last["errors"][0], "quota exceeded");

    let codex = run(dir, "codex", &headless_args("codex", "go"), &script);
    assert_eq!(codex.status.code(), Some(1));
    let records_codex = records(&codex);
    assert_eq!(
        types(&records_codex)[records_codex.len() - 2..],
        ["error", "turn.failed"]
    );

    let gemini = run(dir, "gemini", &headless_args("gemini", "go"), &script);
    assert_eq!(gemini.status.code(), Some(1));
    let last = records(&gemini).pop().expect("a result");
    assert_eq!(last["status"], "error");
    assert_eq!(last["error"]["message"], "quota exceeded");
}

#[test]
fn claude_api_error_is_success_subtype_with_is_error_and_exit_zero() {
    let script = json!({"steps": [{"fail": {"message": "rate limited", "api_status": 429}}]});
    let scratch_dir = scratch("api");
    let dir = scratch_dir.path();
    let output = run(dir, "claude", &headless_args("claude", "go"), &script);
    assert_eq!(output.status.code(), Some(0));
    let records = records(&output);
    assert_eq!(records[1]["error"], "rate_limit");
    let last = records.last().expect("a result");
    assert_eq!(last["subtype"], "success");
    assert_eq!(last["is_error"], true);
    assert_eq!(last["api_error_status"], 429);
}

#[test]
fn crash_garbage_and_raw_steps() {
    let script = json!({"steps": [
        {"garbage": "not json at all"},
        {"raw": {"type": "some_future_record", "x": 1}},
        {"crash": 7}
    ]});
    let scratch_dir = scratch("crash");
    let dir = scratch_dir.path();
    let output = run(dir, "codex", &headless_args("codex", "go"), &script);
    assert_eq!(output.status.code(), Some(7));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[2], "not json at all");
    assert!(lines[3].contains("some_future_record"));
    assert_eq!(lines.len(), 4, "no final record after a crash");
}

#[test]
fn missing_required_flags_exit_2_naming_them() {
    let scratch_dir = scratch("flags");
    let dir = scratch_dir.path();
    let cases: [(&str, &[&str], &str); 4] = [
        (
            "claude",
            &["-p", "--output-format", "stream-json", "go"],
            "--verbose",
        ),
        ("claude", &["-p", "--verbose", "go"], "stream-json"),
        ("codex", &["exec", "--skip-git-repo-check", "go"], "--json"),
        ("gemini", &["-p", "go", "--yolo"], "stream-json"),
    ];
    for (program, args, named) in cases {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let output = run(dir, program, &args, &json!({"steps": []}));
        assert_eq!(output.status.code(), Some(2), "{program} {args:?}");
        assert!(output.stdout.is_empty());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(named), "{program}: {stderr}");
    }
}

#[test]
fn argv_is_logged_one_json_line_per_run() {
    let scratch_dir = scratch("log");
    let dir = scratch_dir.path();
    run(dir, "gemini", &headless_args("gemini", "go"), &json!([]));
    run(dir, "claude", &headless_args("claude", "go"), &json!([]));
    let log = std::fs::read_to_string(dir.join("argv.jsonl")).expect("a log");
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["flavor"], "gemini");
    assert_eq!(lines[0]["argv"][1], "-p");
    assert_eq!(lines[0]["argv"][2], "go");
    assert_eq!(lines[1]["flavor"], "claude");
    assert!(lines[1]["cwd"].as_str().expect("cwd").ends_with("/work"));
}

#[test]
fn a_resumed_session_keeps_its_id_and_plays_the_resume_steps() {
    let script = json!({
        "session_id": "first",
        "steps": [{"say": "first answer"}],
        "resume_steps": [{"say": "second answer"}]
    });
    for program in ["claude", "codex", "gemini"] {
        let scratch_dir = scratch("resume");
        let dir = scratch_dir.path();
        let mut args = headless_args(program, "fix it");
        match program {
            // `exec [flags] resume <id> -- <prompt>`
            "codex" => {
                let at = args.len() - 2;
                args.splice(at..at, ["resume".to_owned(), "sess-9".to_owned()]);
            }
            _ => args.extend(["--resume".to_owned(), "sess-9".to_owned()]),
        }
        let out = run(dir, program, &args, &script);
        assert!(out.status.success(), "{program}: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("second answer") && !text.contains("first answer"),
            "{program}: {text}"
        );
        assert!(text.contains("sess-9"), "{program} keeps the id: {text}");

        let fresh = run(dir, program, &headless_args(program, "go"), &script);
        let text = String::from_utf8_lossy(&fresh.stdout);
        assert!(text.contains("first answer"), "{program}: {text}");
    }
}
