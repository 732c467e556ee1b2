//! Agent stages with `backend="acp"` over the real binaries, against the
//! scripted ACP agent `weft-acp-agent` (tests/acpagent): what it writes
//! through Weft and on disk, what it reports, its permission requests, and
//! how a broken agent fails the stage (docs/agents.md, "External agents").

use std::path::Path;

use serde_json::Value;
use weft_tests::{Sandbox, binary, events, named};

/// A workflow of one ACP stage running the scripted agent, with `attrs`
/// added to the node.
fn workflow(attrs: &str) -> String {
    let agent = binary("weft-acp-agent");
    format!(
        r#"digraph D {{ start [shape=Mdiamond]; exit [shape=Msquare]
           work [shape=box, backend="acp", acp.command="{}", prompt="Write the notes" {attrs}]
           start -> work -> exit }}"#,
        agent.display()
    )
}

struct Ran {
    code: Option<i32>,
    stderr: String,
    run_id: String,
    conclusion: Value,
}

/// `weft run --no-daemon wf.fabro --json` with the agent's script.
fn run(sb: &Sandbox, script: &Value) -> Ran {
    let script_path = sb.write("script.json", script.to_string());
    let out = sb
        .weft()
        .env("WEFT_ACP_SCRIPT", &script_path)
        .env("WEFT_ACP_LOG", sb.path().join("client.jsonl"))
        .args(["run", "--no-daemon", "wf.fabro", "--json"])
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

pub(crate) fn stage_dir(sb: &Sandbox, run_id: &str) -> std::path::PathBuf {
    let runs = sb.path().join("home/runs");
    let dir = std::fs::read_dir(&runs)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(run_id))
        })
        .unwrap_or_else(|| panic!("no run dir for {run_id} in {}", runs.display()));
    dir.join("nodes/work")
}

/// Processes started for this sandbox's agent that are still alive (its
/// script's path is in their environment). Shared with `cli_stages`.
pub(crate) fn agents_alive(sb: &Sandbox) -> Vec<String> {
    weft_tests::processes_with_env(&sb.path().join("script.json").display().to_string())
}

pub(crate) fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn an_acp_stage_writes_through_weft_and_on_disk_and_reports_like_weft_s_own_agent() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", workflow(""));
    let ran = run(
        &sb,
        &serde_json::json!({"prompts": [[
            {"think": "planning the notes"},
            {"say": "Writing the notes. "},
            {"write": {"path": "notes/a.txt", "content": "alpha\n"}},
            {"disk_write": {"path": "b.txt", "content": "beta\n"}},
            {"read": {"path": "notes/a.txt"}},
            {"usage": {"used": 1200, "size": 200000, "cost": 0.25}},
            {"say": "Done."}
        ]]}),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(ran.conclusion["status"], "succeeded", "{}", ran.conclusion);
    assert_eq!(read(&sb.path().join("notes/a.txt")), "alpha\n");

    let all = events(&sb, &ran.run_id);
    let completed = named(&all, "stage.completed");
    let work = completed
        .iter()
        .find(|e| e["node_id"] == "work")
        .unwrap_or_else(|| panic!("{all:?}"));
    let touched: Vec<&str> = work["properties"]["outcome"]["files_touched"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(
        touched.contains(&"notes/a.txt"),
        "written through fs/write_text_file: {touched:?}"
    );
    let tools = named(&all, "agent.tool.started");
    assert!(
        tools.iter().any(|e| e["properties"]["tool"] == "edit"
            && e["properties"]["summary"] == "Write notes/a.txt"),
        "{tools:?}"
    );
    let text: String = named(&all, "agent.text")
        .iter()
        .filter_map(|e| e["properties"]["text"].as_str())
        .collect();
    assert!(
        text.contains("Writing the notes.") && text.contains("read notes/a.txt: alpha"),
        "{text}"
    );

    let dir = stage_dir(&sb, &ran.run_id);
    let response = read(&dir.join("response.md"));
    assert!(response.ends_with("Done."), "{response}");
    let transcript = read(&dir.join("transcript.jsonl"));
    let lines: Vec<Value> = transcript
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lines[0]["type"], "session", "{transcript}");
    assert_eq!(lines[0]["provider"], "acp");
    assert!(
        lines.iter().any(|l| l["type"] == "assistant"
            && l["reasoning"] == "planning the notes"
            && l["cost"] == 0.25),
        "{transcript}"
    );
    assert_eq!(
        lines.last().map(|l| l["type"].clone()),
        Some("end".into()),
        "{transcript}"
    );

    // The agent was told the work dir and what Weft serves.
    let client = read(&sb.path().join("client.jsonl"));
    let init: Value = client
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|m| m["method"] == "initialize")
        .unwrap_or_else(|| panic!("{client}"));
    assert_eq!(init["params"]["clientCapabilities"]["terminal"], true);
    assert_eq!(
        init["params"]["clientCapabilities"]["fs"]["writeTextFile"],
        true
    );
}

#[test]
fn a_write_outside_the_work_dir_is_refused_and_the_agent_is_told_why() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", workflow(""));
    let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let target = outside.path().join("escape.txt");
    let ran = run(
        &sb,
        &serde_json::json!({"prompts": [[
            {"write": {"path": target.display().to_string(), "content": "no\n"}}
        ]]}),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(!target.exists(), "nothing was written outside");
    let all = events(&sb, &ran.run_id);
    let text: String = named(&all, "agent.text")
        .iter()
        .filter_map(|e| e["properties"]["text"].as_str())
        .collect();
    assert!(
        text.contains("failed") && text.contains("outside the work directory"),
        "{text}"
    );
}

#[test]
fn terminals_run_in_the_work_dir_and_permissions_follow_the_policy() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", workflow(r#", acp.permissions="deny""#));
    let ran = run(
        &sb,
        &serde_json::json!({"prompts": [[
            {"terminal": {"command": "sh", "args": ["-c", "pwd; echo out"]}},
            {"permission": {"title": "Run rm -rf build", "kind": "execute"}}
        ]]}),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let all = events(&sb, &ran.run_id);
    let text: String = named(&all, "agent.text")
        .iter()
        .filter_map(|e| e["properties"]["text"].as_str())
        .collect();
    let here = sb.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        text.contains(&format!("terminal exit 0: {}\nout", here.display())),
        "{text}"
    );
    assert!(text.contains("permission: reject"), "{text}");
    let notices: Vec<String> = named(&all, "run.notice")
        .iter()
        .filter_map(|e| e["properties"]["message"].as_str().map(str::to_string))
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("Run rm -rf build") && n.contains("acp.permissions=deny")),
        "{notices:?}"
    );
}

#[test]
fn broken_agents_fail_the_stage_naming_the_program_and_leave_nothing_running() {
    let cases: &[(&str, Value, &str)] = &[
        (
            "exits at start",
            serde_json::json!({"start": "exit:3"}),
            "exited before its session started (exit code 3)",
        ),
        (
            "another protocol version",
            serde_json::json!({"start": "version:2"}),
            "speaks ACP version 2",
        ),
        (
            "hangs without a word",
            serde_json::json!({"prompts": [[{"say": "thinking"}, {"hang": true}]]}),
            "said nothing for 1s",
        ),
        (
            "writes anything but ACP",
            serde_json::json!({"prompts": [vec![serde_json::json!({"garbage": "log line"}); 201]]}),
            "lines that are not ACP messages",
        ),
        (
            "crash mid-session",
            serde_json::json!({"prompts": [[{"say": "working"}, {"crash": 7}]]}),
            "exited mid-session (exit code 7)",
        ),
    ];
    for (what, script, expected) in cases {
        let sb = Sandbox::new();
        sb.write("wf.fabro", workflow(r#", acp.stall_timeout="1s""#));
        let ran = run(&sb, script);
        // The failed stage's plain edge still leads to the exit.
        assert_eq!(ran.code, Some(0), "{what}: {}", ran.stderr);
        let all = events(&sb, &ran.run_id);
        let failed = named(&all, "stage.failed");
        let message = failed
            .first()
            .and_then(|e| e["properties"]["outcome"]["failure"]["message"].as_str())
            .unwrap_or_default()
            .to_string();
        assert!(
            message.contains("weft-acp-agent") && message.contains(expected),
            "{what}: {message}"
        );
        assert_eq!(
            agents_alive(&sb),
            Vec::<String>::new(),
            "{what}: nothing left running"
        );
    }

    // A few stray lines on stdout (logs that leaked there) are tolerated.
    let sb = Sandbox::new();
    sb.write("wf.fabro", workflow(""));
    let ran = run(
        &sb,
        &serde_json::json!({"start": "garbage", "prompts": [[{"garbage": "a log line"}, {"say": "fine"}]]}),
    );
    assert_eq!(ran.conclusion["status"], "succeeded", "{}", ran.stderr);
    assert!(named(&events(&sb, &ran.run_id), "stage.failed").is_empty());

    let sb = Sandbox::new();
    sb.write(
        "wf.fabro",
        workflow("").replace(
            &binary("weft-acp-agent").display().to_string(),
            "no-such-acp-agent --acp",
        ),
    );
    let ran = run(&sb, &serde_json::json!({}));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let all = events(&sb, &ran.run_id);
    let message = named(&all, "stage.failed")
        .first()
        .and_then(|e| e["properties"]["outcome"]["failure"]["message"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains("`no-such-acp-agent` is not on PATH"),
        "{message}"
    );
}

/// `weft run wf.fabro` through the daemon with the agent's script, its
/// stderr lines as they arrive.
fn follow(
    sb: &Sandbox,
    script: &Value,
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead as _;
    let script_path = sb.write("script.json", script.to_string());
    let mut child = sb
        .weft()
        .env("WEFT_ACP_SCRIPT", &script_path)
        .args(["run", "wf.fabro"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = child.stderr.take().unwrap_or_else(|| panic!("stderr"));
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            if send.send(line.unwrap_or_default()).is_err() {
                break;
            }
        }
    });
    (child, receive)
}

fn only_run_id(sb: &Sandbox) -> String {
    let out = sb.run(&["ps", "--all", "--json"]);
    let runs: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    runs.as_array()
        .and_then(|r| r.first())
        .and_then(|r| r["run_id"].as_str().or(r["id"].as_str()))
        .unwrap_or_else(|| panic!("{runs}"))
        .to_string()
}

#[test]
fn under_ask_a_permission_request_is_a_question_answered_from_another_client() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", workflow(r#", acp.permissions="ask""#));
    let (mut follower, lines) = follow(
        &sb,
        &serde_json::json!({"prompts": [[
            {"permission": {
                "title": "Run cargo publish",
                "kind": "execute",
                "path": "Cargo.toml",
                "input": {"command": "cargo", "args": ["publish", "--dry-run"]}
            }}
        ]]}),
    );
    let mut shown = Vec::new();
    let command = loop {
        let line = lines
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no question was shown: {shown:#?}"));
        shown.push(line.clone());
        if let Some((_, command)) = line.split_once("answer with: ") {
            break command.to_string();
        }
    };
    let text = shown.join("\n");
    assert!(
        text.contains("asks permission: Run cargo publish") && text.contains("Allow"),
        "{text}"
    );
    // Every client sees it as a permission request: which agent, what
    // kind of call, where, the command, and what each option grants.
    let listed = sb.run(&["questions", "--json"]);
    let questions: Value =
        serde_json::from_str(&listed.stdout).unwrap_or_else(|e| panic!("{e}: {listed:?}"));
    let permission = &questions[0]["permission"];
    assert_eq!(permission["agent"], "weft-acp-agent", "{questions}");
    assert_eq!(permission["tool_kind"], "execute");
    assert_eq!(permission["title"], "Run cargo publish");
    assert_eq!(permission["command"], "cargo publish --dry-run");
    assert!(
        permission["locations"][0]
            .as_str()
            .is_some_and(|p| p.ends_with("/Cargo.toml")),
        "{permission}"
    );
    let kinds: Vec<&str> = permission["options"]
        .as_array()
        .map(|o| o.iter().filter_map(|o| o["kind"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
    let listed = sb.run(&["questions"]);
    assert!(
        listed.stdout.contains("    execute: /")
            && listed.stdout.contains("    $ cargo publish --dry-run")
            && listed.stdout.contains("    Allow  (allow_once)"),
        "{}",
        listed.stdout
    );
    // Another client answers, by the command shown, picking "Allow".
    let first = command.split("  (or").next().unwrap_or_default();
    let words: Vec<&str> = first.split_whitespace().collect();
    assert_eq!(words[..2], ["weft", "answer"], "{command}");
    let answered = sb.run(&[words[1], words[2], "--label", "Allow"]);
    assert_eq!(answered.code, 0, "{answered:?}");
    let status = follower.wait().unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success());
    let run_id = only_run_id(&sb);
    let all = events(&sb, &run_id);
    let text: String = named(&all, "agent.text")
        .iter()
        .filter_map(|e| e["properties"]["text"].as_str())
        .collect();
    assert!(text.contains("permission: allow"), "{text}");
    assert_eq!(named(&all, "interview.completed").len(), 1, "{all:?}");
    let asked = named(&all, "interview.started");
    assert_eq!(
        asked[0]["properties"]["permission"]["command"], "cargo publish --dry-run",
        "{asked:?}"
    );
}

#[test]
fn under_ask_an_unanswered_permission_takes_its_default_after_the_timeout() {
    let sb = Sandbox::new();
    sb.write(
        "wf.fabro",
        workflow(r#", acp.permissions="ask", acp.permission_timeout="1s""#),
    );
    let (mut follower, _lines) = follow(
        &sb,
        &serde_json::json!({"prompts": [[
            {"permission": {"title": "Delete the cache", "kind": "delete"}}
        ]]}),
    );
    let status = follower.wait().unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success());
    let run_id = only_run_id(&sb);
    let all = events(&sb, &run_id);
    let text: String = named(&all, "agent.text")
        .iter()
        .filter_map(|e| e["properties"]["text"].as_str())
        .collect();
    assert!(text.contains("permission: reject"), "{text}");
    let timeouts = named(&all, "interview.timeout");
    assert_eq!(timeouts.len(), 1, "{all:?}");
    assert_eq!(timeouts[0]["properties"]["default_choice"], "Reject");
    let pending = sb.run(&["questions", "--json"]);
    assert!(
        !pending.stdout.contains("Delete the cache"),
        "no question left pending: {}",
        pending.stdout
    );
}

/// `weft run wf.fabro --detach`: the run id.
fn start_detached(sb: &Sandbox) -> String {
    let out = sb
        .weft()
        .env("WEFT_ACP_SCRIPT", sb.path().join("script.json"))
        .args(["run", "wf.fabro", "--detach"])
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

/// Waits (bounded) until `done` holds.
pub(crate) fn wait_until(what: &str, done: impl FnMut() -> bool) {
    weft_tests::wait_until(what, std::time::Duration::from_secs(60), done);
}

pub(crate) fn has_event(sb: &Sandbox, run_id: &str, name: &str) -> bool {
    weft::store::Store::open_read_only(&weft::store::Home::at(sb.path().join("home")))
        .and_then(|s| s.events(run_id, 0, None))
        .unwrap_or_default()
        .iter()
        .any(|e| e.kind.name() == name)
}

#[test]
fn cancelling_a_run_mid_session_ends_the_agent_even_one_that_ignores_session_cancel() {
    for ignores in [false, true] {
        let sb = Sandbox::new();
        sb.write("wf.fabro", workflow(""));
        let mut steps = vec![serde_json::json!({"say": "working on it"})];
        if ignores {
            steps.insert(0, serde_json::json!({"ignore_cancel": true}));
        }
        steps.push(serde_json::json!({"sleep_ms": 600_000}));
        sb.write(
            "script.json",
            serde_json::json!({"prompts": [steps]}).to_string(),
        );
        let _daemon = weft_tests::Weftd::start(&sb);
        let run_id = start_detached(&sb);
        wait_until("the agent to speak", || {
            has_event(&sb, &run_id, "agent.text")
        });
        let cancelled = sb.run(&["cancel", &run_id]);
        assert_eq!(cancelled.code, 0, "{cancelled:?}");
        weft_tests::wait_for_status(
            &weft::store::Home::at(sb.path().join("home")),
            &run_id,
            weft::model::RunStatus::Cancelled,
        );
        wait_until("no agent process to be left", || {
            agents_alive(&sb).is_empty()
        });
        // A cancelled run records no stage outcome; the transcript's end
        // says how the session ended.
        let transcript = read(&stage_dir(&sb, &run_id).join("transcript.jsonl"));
        let end = transcript.lines().last().unwrap_or_default().to_string();
        if ignores {
            assert!(end.contains("did not end its turn"), "{end}");
        } else {
            assert!(end.contains("stopped: cancelled"), "{end}");
        }
    }
}

#[test]
fn a_weftd_killed_mid_session_leaves_no_agent_and_the_resumed_run_starts_it_afresh() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", workflow(""));
    sb.write(
        "script.json",
        serde_json::json!({"prompts": [[{"say": "first attempt"}, {"hang": true}]]}).to_string(),
    );
    let first = weft_tests::Weftd::start(&sb);
    let run_id = start_detached(&sb);
    wait_until("the agent to speak", || {
        has_event(&sb, &run_id, "agent.text")
    });
    assert_eq!(agents_alive(&sb).len(), 1, "one agent runs");
    first.signal("-KILL");
    drop(first);
    wait_until("the reaper to kill the agent", || {
        agents_alive(&sb).is_empty()
    });

    // The resumed attempt's agent reads the script afresh.
    sb.write(
        "script.json",
        serde_json::json!({"prompts": [[{"say": "second attempt"}, {"write": {"path": "done.txt", "content": "ok\n"}}]]})
            .to_string(),
    );
    let _second = weft_tests::Weftd::start(&sb);
    weft_tests::wait_for_status(
        &weft::store::Home::at(sb.path().join("home")),
        &run_id,
        weft::model::RunStatus::Succeeded,
    );
    assert_eq!(read(&sb.path().join("done.txt")), "ok\n");
    let dir = stage_dir(&sb, &run_id);
    let lost = read(&dir.join("transcript.1.jsonl"));
    assert!(
        lost.lines().last().is_some_and(|l| l.contains("lost")),
        "the lost attempt is ended as lost: {lost}"
    );
    assert!(read(&dir.join("transcript.jsonl")).contains("second attempt"));
}

/// `examples/external-agent.fabro` runs to its end with every kind of
/// stage real but the model and the adapter: Weft's own agent plans
/// against the fake provider, `claude-agent-acp` on PATH is the scripted
/// agent, and `--auto-approve` answers both the agent's permission question
/// and the review gate.
#[test]
fn the_external_agent_example_plans_implements_and_ships_with_every_question_answered() {
    use weft_fakellm::{FakeLlm, Reply, ToolCall};
    let fake = FakeLlm::start();
    let key = format!("sk-acp-example-{}", std::process::id());
    fake.script(
        &key,
        [
            Reply::ToolCalls(vec![ToolCall::new(
                "p1",
                "write_file",
                serde_json::json!({"file_path": "plan.md", "content": "Add: faster start-up.\n"}),
            )]),
            Reply::Text("The plan is in plan.md.".into()),
        ],
    );
    let sb = Sandbox::new();
    sb.write("CHANGELOG.md", "# Changelog\n");
    let bin = sb.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink(binary("weft-acp-agent"), bin.join("claude-agent-acp"))
        .unwrap_or_else(|e| panic!("{e}"));
    let script = sb.write(
        "script.json",
        serde_json::json!({"prompts": [[
            {"read": {"path": "plan.md"}},
            {"permission": {"title": "Edit CHANGELOG.md", "kind": "edit"}},
            {"write": {"path": "CHANGELOG.md", "content": "# Changelog\n\n## Next\n\n- Faster start-up.\n"}},
            {"say": "Added the entry."}
        ]]})
        .to_string(),
    );
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/external-agent.fabro");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = sb
        .weft()
        .env("PATH", path)
        .env("WEFT_ACP_SCRIPT", &script)
        .env("OPENAI_API_KEY", &key)
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.url()))
        .args([
            "run",
            "--no-daemon",
            "--auto-approve",
            "--model",
            "gpt-5.2",
            &example.display().to_string(),
            "--json",
        ])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let conclusion: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(conclusion["status"], "succeeded", "{stderr}");
    assert!(read(&sb.path().join("CHANGELOG.md")).contains("- Faster start-up."));
    let run_id = conclusion["run_id"].as_str().unwrap_or_default();
    let all = events(&sb, run_id);
    let text: String = named(&all, "agent.text")
        .iter()
        .filter_map(|e| e["properties"]["text"].as_str())
        .collect();
    assert!(
        text.contains("read plan.md: Add: faster start-up.") && text.contains("permission: allow"),
        "the agent read the plan and was allowed: {text}"
    );
    let asked: Vec<&str> = named(&all, "interview.started")
        .iter()
        .filter_map(|e| e["properties"]["question"].as_str())
        .collect();
    assert_eq!(
        asked,
        [
            "claude asks permission: Edit CHANGELOG.md",
            "Ship the entry?"
        ],
        "{all:?}"
    );
}

#[test]
fn the_profile_s_provider_key_reaches_the_agent_alone_not_the_commands_it_runs() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", workflow(r#", acp.agent="claude""#));
    sb.write(
        "script.json",
        serde_json::json!({"prompts": [[
            {"terminal": {"command": "sh", "args": ["-c", "echo key=${ANTHROPIC_API_KEY:-none}"]}},
            {"hang": true}
        ]]})
        .to_string(),
    );
    let secret = "sk-ant-test-only-for-the-agent";
    let daemon = weft_tests::Weftd::start(&sb);
    let out = sb
        .weft()
        .env("WEFT_ACP_SCRIPT", sb.path().join("script.json"))
        .env("ANTHROPIC_API_KEY", secret)
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
    wait_until("the agent to report its command", || {
        events(&sb, &run_id).iter().any(|e| {
            e["event"] == "agent.text"
                && e["properties"]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("key="))
        })
    });
    let text: String = named(&events(&sb, &run_id), "agent.text")
        .iter()
        .filter_map(|e| e["properties"]["text"].as_str())
        .collect();
    assert!(
        text.contains("key=none"),
        "the command did not get the key: {text}"
    );
    let agents = agents_alive(&sb);
    assert_eq!(agents.len(), 1, "{agents:?}");
    let environ = std::fs::read(format!("/proc/{}/environ", agents[0])).unwrap_or_default();
    assert!(
        String::from_utf8_lossy(&environ).contains(&format!("ANTHROPIC_API_KEY={secret}")),
        "the agent got its key"
    );
    let cancelled = sb.run(&["cancel", &run_id]);
    assert_eq!(cancelled.code, 0, "{cancelled:?}");
    wait_until("no agent process to be left", || {
        agents_alive(&sb).is_empty()
    });
    drop(daemon);
}

#[test]
fn files_the_agent_changes_on_disk_are_found_by_the_git_snapshot() {
    let sb = Sandbox::new();
    weft_tests::git_repo(&sb.path().join("repo"), &[("kept.txt", "kept\n")]);
    sb.write("wf.fabro", workflow(""));
    sb.write(
        "script.json",
        serde_json::json!({"prompts": [[
            {"write": {"path": "through-weft.txt", "content": "a\n"}},
            {"disk_write": {"path": "on-disk.txt", "content": "b\n"}},
            {"disk_write": {"path": "kept.txt", "content": "changed\n"}}
        ]]})
        .to_string(),
    );
    // Without checkpoints the stage's commit cannot say what changed: the
    // snapshot before and after the agent does.
    let out = sb
        .weft()
        .env("WEFT_ACP_SCRIPT", sb.path().join("script.json"))
        .args([
            "run",
            "--no-daemon",
            "--no-checkpoint",
            "--work-dir",
            "repo",
            "wf.fabro",
            "--json",
        ])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let conclusion: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(conclusion["status"], "succeeded", "{stderr}");
    let all = events(&sb, conclusion["run_id"].as_str().unwrap_or_default());
    let work = named(&all, "stage.completed")
        .into_iter()
        .find(|e| e["node_id"] == "work")
        .unwrap_or_else(|| panic!("{all:?}"));
    assert_eq!(
        work["properties"]["outcome"]["files_touched"],
        serde_json::json!(["kept.txt", "on-disk.txt", "through-weft.txt"])
    );
}

#[test]
fn under_allow_a_request_naming_a_path_outside_the_work_dir_is_refused() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", workflow(""));
    let ran = run(
        &sb,
        &serde_json::json!({"prompts": [[
            {"permission": {"title": "Edit notes", "kind": "edit", "path": "notes.md"}},
            {"permission": {"title": "Edit the profile", "kind": "edit", "path": "../../.profile"}},
            {"permission": {"title": "Edit hosts", "kind": "edit", "path": "/etc/hosts"}}
        ]]}),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let all = events(&sb, &ran.run_id);
    let text: String = named(&all, "agent.text")
        .iter()
        .filter_map(|e| e["properties"]["text"].as_str())
        .collect();
    assert_eq!(
        text.matches("permission: ").collect::<Vec<_>>().len(),
        3,
        "{text}"
    );
    let answers: Vec<&str> = text
        .split("permission: ")
        .skip(1)
        .map(|rest| rest.split_whitespace().next().unwrap_or_default())
        .collect();
    assert_eq!(answers, ["allow", "reject", "reject"], "{text}");
}

#[test]
fn an_agent_of_settings_toml_brings_its_program_environment_model_and_policy() {
    let sb = Sandbox::new();
    let script = sb.write(
        "script.json",
        serde_json::json!({"models": ["slow", "fast"], "prompts": [[
            {"permission": {"title": "Run make", "kind": "execute"}},
            {"say": "built"}
        ]]})
        .to_string(),
    );
    let log = sb.path().join("client.jsonl");
    // The script and the log reach the agent through its profile's `env`
    // only: the caller's environment does not have them.
    sb.write(
        "home/settings.toml",
        format!(
            "[agents.mine]\ncommand = [{:?}]\nmodel = \"fast\"\npermissions = \"deny\"\n\
             env = {{ WEFT_ACP_SCRIPT = {:?}, WEFT_ACP_LOG = {:?} }}\n",
            binary("weft-acp-agent").display().to_string(),
            script.display().to_string(),
            log.display().to_string()
        ),
    );
    let flow = |attrs: &str| {
        format!(
            r#"digraph D {{ start [shape=Mdiamond]; exit [shape=Msquare]
               work [shape=box, backend="acp", acp.agent="mine", prompt="Build it" {attrs}]
               start -> work -> exit }}"#
        )
    };
    sb.write("wf.fabro", flow(""));
    let out = sb
        .weft()
        .args(["run", "--no-daemon", "wf.fabro", "--json"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let conclusion: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
    let run_id = conclusion["run_id"].as_str().unwrap_or_default();
    let sent: Vec<Value> = read(&log)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let chose = sent
        .iter()
        .find(|m| m["method"] == "session/set_config_option")
        .unwrap_or_else(|| panic!("no model chosen: {sent:?}"));
    assert_eq!(chose["params"]["configId"], "model");
    assert_eq!(chose["params"]["value"], "fast");
    let all = events(&sb, run_id);
    let text: String = named(&all, "agent.text")
        .iter()
        .filter_map(|e| e["properties"]["text"].as_str())
        .collect();
    assert!(text.contains("permission: reject"), "{text}");
    assert!(text.contains("built"), "{text}");

    // A node's own choices win over the profile's; a model the agent does
    // not offer fails the stage, naming those it does.
    sb.write("wf.fabro", flow(r#", acp.model="huge""#));
    let out = sb
        .weft()
        .args(["run", "--no-daemon", "wf.fabro", "--json"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let conclusion: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
    let failure = stage_failure(&sb, &conclusion);
    assert!(
        failure.contains("has no model `huge`; it offers: slow, fast"),
        "{failure}"
    );
}

/// The failure message of the run's first failed stage.
fn stage_failure(sb: &Sandbox, conclusion: &Value) -> String {
    let run_id = conclusion["run_id"].as_str().unwrap_or_default();
    named(&events(sb, run_id), "stage.failed")
        .first()
        .and_then(|e| e["properties"]["outcome"]["failure"]["message"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn an_invalid_agent_table_in_settings_toml_fails_the_stage_naming_the_file() {
    let sb = Sandbox::new();
    sb.write("home/settings.toml", "[agents.mine]\nmodel = \"m\"\n");
    sb.write(
        "wf.fabro",
        r#"digraph D { start [shape=Mdiamond]; exit [shape=Msquare]
           work [shape=box, backend="acp", acp.agent="mine", prompt="Build it"]
           start -> work -> exit }"#,
    );
    let out = sb
        .weft()
        .args(["run", "--no-daemon", "wf.fabro", "--json"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let conclusion: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
    let failure = stage_failure(&sb, &conclusion);
    assert!(
        failure.contains("settings.toml") && failure.contains("[agents.mine]"),
        "{failure}"
    );
}

#[test]
fn stages_of_one_thread_at_full_fidelity_prompt_the_same_agent_session() {
    let sb = Sandbox::new();
    let agent = binary("weft-acp-agent");
    sb.write(
        "wf.fabro",
        format!(
            r#"digraph D {{ start [shape=Mdiamond]; exit [shape=Msquare]
               node [shape=box, backend="acp", acp.command="{}"]
               plan [prompt="Plan it", thread_id="impl", fidelity="full"]
               build [prompt="Build it", thread_id="impl", fidelity="full"]
               review [prompt="Review it"]
               start -> plan -> build -> review -> exit }}"#,
            agent.display()
        ),
    );
    let ran = run(
        &sb,
        &serde_json::json!({"prompts": [
            [{"say": "planned"}], [{"say": "built"}], [{"say": "reviewed"}]
        ]}),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(ran.conclusion["status"], "succeeded", "{}", ran.conclusion);
    let sent: Vec<Value> = read(&sb.path().join("client.jsonl"))
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let prompts: Vec<(String, String)> = sent
        .iter()
        .filter(|m| m["method"] == "session/prompt")
        .map(|m| {
            (
                m["params"]["sessionId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                m["params"]["prompt"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    assert_eq!(prompts.len(), 3, "{prompts:?}");
    // One process for the thread (the log is per process: each start
    // sends `initialize`), and the thread's two prompts in one session.
    let starts = sent.iter().filter(|m| m["method"] == "initialize").count();
    assert_eq!(starts, 2, "the thread's agent and review's own");
    assert_eq!(prompts[0].0, prompts[1].0);
    assert!(prompts[1].1.ends_with("Build it"), "{prompts:?}");
    // The thread's agent remembers: its second prompt got the second
    // scripted turn. Review's own agent started at the first.
    let all = events(&sb, &ran.run_id);
    let text: Vec<String> = named(&all, "agent.text")
        .iter()
        .filter_map(|e| e["properties"]["text"].as_str().map(str::to_string))
        .collect();
    assert_eq!(text, ["planned", "built", "planned"], "{text:?}");
    let notices: Vec<String> = named(&all, "run.notice")
        .iter()
        .filter_map(|e| e["properties"]["message"].as_str().map(str::to_string))
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("continues its session of thread `impl`")),
        "{notices:?}"
    );
    // Each stage has its own transcript; nothing runs after the run.
    let runs = stage_dir(&sb, &ran.run_id);
    let nodes = runs.parent().unwrap_or_else(|| panic!("no nodes dir"));
    for node in ["plan", "build", "review"] {
        let transcript = read(&nodes.join(node).join("transcript.jsonl"));
        assert!(transcript.contains("\"user\""), "{node}: {transcript}");
    }
    assert!(read(&nodes.join("build/transcript.jsonl")).contains("built"));
    assert_eq!(agents_alive(&sb), Vec::<String>::new());
}

#[test]
fn an_invalid_reply_is_repaired_by_a_further_prompt_in_the_same_session() {
    let sb = Sandbox::new();
    let agent = binary("weft-acp-agent");
    sb.write(
        "wf.fabro",
        format!(
            r#"digraph D {{ start [shape=Mdiamond]; exit [shape=Msquare]
               work [shape=box, backend="acp", acp.command="{}", prompt="Decide", output_schema="routing"]
               fix [shape=box, backend="acp", acp.command="{}", prompt="Fix"]
               start -> work; work -> fix [label="Fix"]; work -> exit [label="Ship"]; fix -> exit }}"#,
            agent.display(),
            agent.display()
        ),
    );
    let ran = run(
        &sb,
        &serde_json::json!({"prompts": [
            [{"say": "I think we should ship."}],
            [{"say": "{\"outcome\": \"success\", \"preferred_next_label\": \"Ship\"}"}]
        ]}),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(ran.conclusion["status"], "succeeded", "{}", ran.conclusion);
    let sent: Vec<Value> = read(&sb.path().join("client.jsonl"))
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let prompts: Vec<&Value> = sent
        .iter()
        .filter(|m| m["method"] == "session/prompt")
        .collect();
    assert_eq!(prompts.len(), 2, "one repair turn: {prompts:?}");
    assert_eq!(
        prompts[0]["params"]["sessionId"], prompts[1]["params"]["sessionId"],
        "the repair is a prompt of the same session"
    );
    let repair = prompts[1]["params"]["prompt"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(repair.contains("routing"), "{repair}");
    let all = events(&sb, &ran.run_id);
    let completed: Vec<&str> = named(&all, "stage.completed")
        .iter()
        .filter_map(|e| e["properties"]["node_id"].as_str())
        .collect();
    assert!(
        !completed.contains(&"fix"),
        "routed by the repaired reply: {completed:?}"
    );
}

#[test]
fn an_agent_that_refuses_the_prompt_fails_the_stage() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", workflow(""));
    let ran = run(
        &sb,
        &serde_json::json!({"prompts": [[{"say": "I can't help with that."}, {"stop": "refusal"}]]}),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let failure = stage_failure(&sb, &ran.conclusion);
    assert!(
        failure.contains("refused the prompt") && failure.contains("weft-acp-agent"),
        "{failure}"
    );
    let response = read(&stage_dir(&sb, &ran.run_id).join("response.md"));
    assert!(response.contains("I can't help with that."), "{response}");
}

#[test]
fn the_run_config_s_backend_sends_agents_without_their_own_to_the_external_agent() {
    let sb = Sandbox::new();
    sb.write(
        "wf.fabro",
        format!(
            r#"digraph D {{ start [shape=Mdiamond]; exit [shape=Msquare]
               work [shape=box, acp.command="{}", prompt="Write the notes"]
               start -> work -> exit }}"#,
            binary("weft-acp-agent").display()
        ),
    );
    sb.write(
        "run.toml",
        "_version = 1\n[workflow]\ngraph = \"wf.fabro\"\n[run.agent]\nbackend = \"acp\"\n",
    );
    let script = sb.write(
        "script.json",
        serde_json::json!({"prompts": [[{"say": "done by the external agent"}]]}).to_string(),
    );
    let out = sb
        .weft()
        .env("WEFT_ACP_SCRIPT", &script)
        .args(["run", "--no-daemon", "run.toml", "--json"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let conclusion: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(conclusion["status"], "succeeded", "{conclusion}");
    let run_id = conclusion["run_id"].as_str().unwrap_or_default();
    let text: String = named(&events(&sb, run_id), "agent.text")
        .iter()
        .filter_map(|e| e["properties"]["text"].as_str())
        .collect();
    assert_eq!(text, "done by the external agent");

    sb.write(
        "bad.toml",
        "_version = 1\n[workflow]\ngraph = \"wf.fabro\"\n[run.agent]\nbackend = \"remote\"\n",
    );
    let bad = sb.run(&["run", "bad.toml"]);
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(
        bad.stderr.contains("[run.agent] backend = \"remote\""),
        "{}",
        bad.stderr
    );
}

#[test]
fn a_model_stylesheet_sets_the_permission_policy_of_the_agents_it_selects() {
    let sb = Sandbox::new();
    sb.write(
        "wf.fabro",
        format!(
            r#"digraph D {{
               graph [model_stylesheet=".careful {{ backend: acp; acp.permissions: deny; }}"]
               start [shape=Mdiamond]; exit [shape=Msquare]
               work [shape=box, class="careful", acp.command="{}", prompt="Clean up"]
               start -> work -> exit }}"#,
            binary("weft-acp-agent").display()
        ),
    );
    let ran = run(
        &sb,
        &serde_json::json!({"prompts": [[
            {"permission": {"title": "Run rm -rf build", "kind": "execute"}}
        ]]}),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let text: String = named(&events(&sb, &ran.run_id), "agent.text")
        .iter()
        .filter_map(|e| e["properties"]["text"].as_str())
        .collect();
    assert!(text.contains("permission: reject"), "{text}");
}
