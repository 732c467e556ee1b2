//! Agent (`box`) stages end to end: `weft run` through the real weftd, the
//! agent's model calls to the fake provider server (OpenAI Responses wire,
//! the caller's key), its tools on real files, and what the run keeps:
//! `files_touched` in status.json, `stage.completed` and `weft events`, the
//! transcript in `weft logs`, steering, cancellation, `--dry-run`, and a
//! crash of weftd mid-session.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weft::model::RunStatus;
use weft::os::process::is_alive;
use weft::store::{Home, Store};
use weft_fakellm::{FakeLlm, Reply, ToolCall};
use weft_tests::{Sandbox, Weftd, events, named, wait_for_status};

/// A key of its own per test and process: the fake scripts per key.
fn key(test: &str) -> String {
    format!("sk-agent-{test}-{}", std::process::id())
}

/// The environment a run needs to reach the fake with `key`.
fn model_env(fake: &FakeLlm, key: &str) -> [(String, String); 2] {
    [
        ("OPENAI_API_KEY".into(), key.to_string()),
        ("OPENAI_BASE_URL".into(), format!("{}/v1", fake.url())),
    ]
}

fn home(sb: &Sandbox) -> Home {
    Home::at(sb.path().join("home"))
}

/// Waits (polling the store) until the run has recorded an event `name`.
fn wait_for_event(sb: &Sandbox, run_id: &str, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let seen = Store::open_read_only(&home(sb))
            .and_then(|s| s.events(run_id, 0, None))
            .unwrap_or_default()
            .iter()
            .any(|e| e.kind.name() == name);
        if seen {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "run {run_id} never recorded {name}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The stage directory of `node`'s first visit.
fn stage_dir(sb: &Sandbox, run_id: &str, node: &str) -> PathBuf {
    let record = Store::open_read_only(&home(sb))
        .and_then(|s| s.find_run(run_id))
        .unwrap_or_else(|e| panic!("{e}"));
    record.run_dir.join("nodes").join(node)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What `weft run FILE --json --model gpt-5.2` against the fake gave: its
/// exit code, stderr, and the run id from the printed conclusion.
struct Ran {
    code: Option<i32>,
    stderr: String,
    run_id: String,
}

fn run_json(sb: &Sandbox, fake: &FakeLlm, key: &str, file: &str) -> Ran {
    let out = sb
        .weft()
        .envs(model_env(fake, key))
        .args(["run", file, "--json", "--model", "gpt-5.2"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let conclusion: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let run_id = conclusion["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    Ran {
        code: out.status.code(),
        stderr,
        run_id,
    }
}

/// Starts `workflow` detached in the daemon (started on demand with the
/// caller's environment) and returns the run id.
fn start_detached(sb: &Sandbox, env: &[(String, String)], workflow: &str) -> String {
    let out = sb
        .weft()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .args(["run", workflow, "--detach", "--model", "gpt-5.2"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

const FIX: &str = r#"digraph Fix { graph [goal="Fix the notes"]
    start [shape=Mdiamond]; exit [shape=Msquare]
    fix [shape=box, prompt="Fix notes.txt, then say Ship or Hold."]
    hold [shape=parallelogram, script="echo held"]
    start -> fix
    fix -> exit [label="Ship"]
    fix -> hold [label="Hold"]
    hold -> exit }"#;

#[test]
fn an_agent_reads_and_edits_a_file_routes_by_its_reply_and_the_run_keeps_what_it_touched() {
    let fake = FakeLlm::start();
    let key = key("edit");
    fake.script(
        &key,
        [
            Reply::ToolCalls(vec![ToolCall::new(
                "c1",
                "read_file",
                json!({"file_path": "notes.txt"}),
            )]),
            Reply::ToolCalls(vec![ToolCall::new(
                "c2",
                "write_file",
                json!({"file_path": "notes.txt", "content": "fixed\n"}),
            )]),
            Reply::ToolCalls(vec![ToolCall::new(
                "c3",
                "shell",
                json!({"command": "tr a-z A-Z < notes.txt"}),
            )]),
            Reply::Text("Fixed the notes. {\"preferred_next_label\": \"Ship\"}".into()),
            // The prompt node after it.
            Reply::Text("Reported.".into()),
        ],
    );
    let sb = Sandbox::new();
    sb.write("notes.txt", "broken\n");
    sb.write(
        "fix.fabro",
        FIX.replace(
            "fix -> exit [label=\"Ship\"]",
            "fix -> report [label=\"Ship\"]\n    report [shape=tab, prompt=\"Report\"]\n    report -> exit",
        ),
    );
    let Ran {
        code,
        stderr,
        run_id,
    } = run_json(&sb, &fake, &key, "fix.fabro");
    assert_eq!(code, Some(0), "{stderr}");

    assert_eq!(
        read(&sb.path().join("notes.txt")),
        "fixed\n",
        "the agent's edit landed"
    );
    let sent = fake.requests(&key);
    assert_eq!(sent.len(), 5, "four agent turns and the report");
    assert!(
        sent[3].body.to_string().contains("FIXED"),
        "the fourth turn carries the shell's output: {}",
        sent[3].body
    );
    assert!(
        sent[1].body.to_string().contains("broken"),
        "the second turn carries the file the first read: {}",
        sent[1].body
    );
    assert_eq!(sent[0].body["stream"], true, "agent turns stream");

    let all = events(&sb, &run_id);
    let edge = named(&all, "edge.selected")
        .into_iter()
        .find(|e| e["properties"]["from_node"] == "fix")
        .unwrap_or_else(|| panic!("no edge from fix: {all:?}"));
    assert_eq!(
        edge["properties"]["to_node"], "report",
        "the routing directive picked the Ship edge"
    );
    let completed = named(&all, "stage.completed");
    let fix = completed
        .iter()
        .find(|e| e["node_id"] == "fix")
        .unwrap_or_else(|| panic!("no stage.completed for fix"));
    assert_eq!(
        fix["properties"]["outcome"]["files_touched"],
        json!(["notes.txt"]),
        "stage.completed carries files_touched"
    );
    let started = named(&all, "agent.tool.started");
    let tools: Vec<&str> = started
        .iter()
        .filter_map(|e| e["properties"]["tool"].as_str())
        .collect();
    assert_eq!(tools, ["read_file", "write_file", "shell"]);
    assert_eq!(named(&all, "agent.turn.started").len(), 4);
    assert_eq!(named(&all, "llm.completed").len(), 5);
    let report = read(&stage_dir(&sb, &run_id, "report").join("prompt.md"));
    assert!(
        report.contains("Files: notes.txt"),
        "the next stage's preamble names the file the agent wrote: {report}"
    );

    let dir = stage_dir(&sb, &run_id, "fix");
    let status: Value =
        serde_json::from_str(&read(&dir.join("status.json"))).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status["files_touched"], json!(["notes.txt"]));
    assert!(read(&dir.join("response.md")).starts_with("Fixed the notes."));
    assert!(dir.join("transcript.jsonl").is_file());

    let text_events = sb.run(&["events", &run_id]);
    assert!(
        text_events.stdout.contains("agent.tool.started")
            && text_events.stdout.contains("succeeded in ")
            && text_events.stdout.contains("; wrote notes.txt"),
        "{}",
        text_events.stdout
    );

    let logs = sb.run(&["logs", &run_id, "fix"]);
    assert_eq!(logs.code, 0, "{logs:?}");
    for shown in [
        "-- transcript --",
        "user:",
        "assistant (turn 1, ",
        "  → read_file notes.txt",
        "  ← read_file ok",
        "  → write_file notes.txt",
        "(wrote notes.txt)",
        "  → shell tr a-z A-Z < notes.txt",
        "Fixed the notes.",
        "end: completed",
    ] {
        assert!(
            logs.stdout.contains(shown),
            "`{shown}` in:\n{}",
            logs.stdout
        );
    }

    let dump = sb.path().join("dumped");
    let dumped = sb.run(&["dump", &run_id, "--out", dump.to_str().unwrap_or_default()]);
    assert_eq!(dumped.code, 0, "{dumped:?}");
    let status_files = files_named(&dump, "status.json");
    assert!(
        status_files
            .iter()
            .any(|p| read(p).contains("\"files_touched\": [\n    \"notes.txt\"")),
        "the dump's status.json lists the file: {status_files:?}"
    );
}

/// Files called `name` under `dir`, recursively.
fn files_named(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if path.file_name().is_some_and(|n| n == name) {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn an_agent_at_its_turn_limit_fails_the_stage_naming_the_limit() {
    let fake = FakeLlm::start();
    let key = key("limit");
    let read = || {
        Reply::ToolCalls(vec![ToolCall::new(
            "",
            "read_file",
            json!({"file_path": "notes.txt"}),
        )])
    };
    fake.script(&key, [read(), read(), read(), read()]);
    let sb = Sandbox::new();
    sb.write("notes.txt", "x\n");
    sb.write(
        "limit.fabro",
        r#"digraph L { start [shape=Mdiamond]; exit [shape=Msquare]
           fix [shape=box, prompt="Read forever", max_turns=2, on_failure=exit]
           start -> fix -> exit }"#,
    );
    let Ran { run_id, .. } = run_json(&sb, &fake, &key, "limit.fabro");
    assert_eq!(fake.requests(&key).len(), 2, "no third turn");
    let all = events(&sb, &run_id);
    let failed = named(&all, "stage.failed");
    assert_eq!(failed.len(), 1, "{all:?}");
    let failure = &failed[0]["properties"]["outcome"]["failure"];
    assert_eq!(failure["class"], "budget_exhausted");
    assert!(
        failure["message"]
            .as_str()
            .is_some_and(|m| m.contains("max_turns (2)")),
        "{failure}"
    );
}

#[test]
fn a_dry_run_simulates_an_agent_stage_without_a_model() {
    let sb = Sandbox::new();
    sb.write("fix.fabro", FIX);
    let out = sb
        .weft()
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("GEMINI_API_KEY")
        .args(["run", "fix.fabro", "--dry-run", "--json"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let conclusion: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let run_id = conclusion["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let dir = stage_dir(&sb, &run_id, "fix");
    assert!(read(&dir.join("response.md")).starts_with("[dry run]"));
    assert!(!dir.join("transcript.jsonl").exists(), "no session ran");
}

#[test]
fn cancelling_a_run_mid_session_ends_the_agent_stage_and_steering_is_refused_after() {
    let fake = FakeLlm::start();
    let key = key("cancel");
    // The model never answers: the session is in its first call.
    fake.script(&key, [Reply::Hang]);
    let sb = Sandbox::new();
    sb.write("fix.fabro", FIX);
    let env = model_env(&fake, &key);
    let run_id = start_detached(&sb, &env, "fix.fabro");
    wait_for_event(&sb, &run_id, "agent.turn.started");

    // A message to the running agent is queued for it.
    let steered = sb.run(&["steer", &run_id, "Prefer the smaller fix", "--json"]);
    assert_eq!(steered.code, 0, "{steered:?}");
    let queued: Value = serde_json::from_str(&steered.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(queued["node_id"], "fix");
    assert_eq!(queued["visit"], 1);
    let wrong = sb.run(&["steer", &run_id, "review", "x"]);
    assert_eq!(wrong.code, 2, "{wrong:?}");
    assert!(
        wrong.stderr.contains("no agent stage `review`") && wrong.stderr.contains("fix"),
        "the error names the running agents: {}",
        wrong.stderr
    );

    let cancelled = sb.run(&["cancel", &run_id]);
    assert_eq!(cancelled.code, 0, "{cancelled:?}");
    wait_for_status(&home(&sb), &run_id, RunStatus::Cancelled);
    // A cancelled stage is not committed (a resume runs it again); its
    // session stopped on the cancel and said so in its transcript.
    let transcript = read(&stage_dir(&sb, &run_id, "fix").join("transcript.jsonl"));
    let end = transcript.lines().last().unwrap_or_default();
    assert!(
        end.contains("\"type\":\"end\"") && end.contains("cancelled"),
        "{transcript}"
    );

    let after = sb.run(&["steer", &run_id, "too late"]);
    assert_eq!(after.code, 2, "{after:?}");
    assert!(
        after.stderr.contains("no agent stage running"),
        "{}",
        after.stderr
    );
}

#[test]
fn a_run_without_a_daemon_cannot_be_steered_and_the_error_says_why() {
    let sb = Sandbox::new();
    let out = sb.run(&["steer", "01ABC", "hello"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--no-daemon"), "{}", out.stderr);
}

#[test]
fn a_weftd_crash_mid_session_restarts_the_stage_and_keeps_the_lost_attempts_transcript() {
    let fake = FakeLlm::start();
    let key = key("crash");
    fake.script(
        &key,
        [
            Reply::ToolCalls(vec![ToolCall::new(
                "c1",
                "read_file",
                json!({"file_path": "notes.txt"}),
            )]),
            // The second turn never answers: weftd is killed during it.
            Reply::Hang,
            // The restarted attempt.
            Reply::Text("Done after the crash. {\"preferred_next_label\": \"Ship\"}".into()),
        ],
    );
    let sb = Sandbox::new();
    sb.write("notes.txt", "x\n");
    sb.write("fix.fabro", FIX);
    let env = model_env(&fake, &key);
    let daemon_env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let first = Weftd::start_with(&sb, &daemon_env);
    let run_id = start_detached(&sb, &env, "fix.fabro");
    wait_until("the agent's second turn to reach the model", || {
        fake.requests(&key).len() >= 2
    });
    first.signal("-KILL");
    drop(first);

    // The next daemon finds the run interrupted and resumes it.
    let _second = Weftd::start_with(&sb, &daemon_env);
    wait_for_status(&home(&sb), &run_id, RunStatus::Succeeded);

    let dir = stage_dir(&sb, &run_id, "fix");
    let lost = read(&dir.join("transcript.1.jsonl"));
    assert!(
        lost.contains("\"name\":\"read_file\"") && lost.contains("\"type\":\"tool\""),
        "the lost attempt's call and its result: {lost}"
    );
    assert!(
        lost.lines()
            .last()
            .is_some_and(|l| l.contains("\"type\":\"end\"") && l.contains("lost")),
        "the lost attempt is ended as lost: {lost}"
    );
    let kept = read(&dir.join("transcript.jsonl"));
    assert!(kept.contains("Done after the crash."), "{kept}");
    assert!(
        !kept.contains("\"type\":\"tool\""),
        "the new attempt starts afresh: {kept}"
    );
    let logs = sb.run(&["logs", &run_id, "fix"]);
    assert!(
        logs.stdout
            .contains("-- transcript of earlier attempt 1 --"),
        "{}",
        logs.stdout
    );
}

#[test]
fn run_agent_in_run_toml_sets_limits_and_permissions_and_a_bad_value_stops_the_run() {
    let fake = FakeLlm::start();
    let key = key("config");
    let read = || {
        Reply::ToolCalls(vec![ToolCall::new(
            "",
            "read_file",
            json!({"file_path": "notes.txt"}),
        )])
    };
    fake.script(&key, [read(), read()]);
    let sb = Sandbox::new();
    sb.write("notes.txt", "x\n");
    sb.write("fix.fabro", FIX);
    sb.write(
        "run.toml",
        "_version = 1\n[workflow]\ngraph = \"fix.fabro\"\n[run.agent]\nmax_turns = 1\npermissions = \"read-only\"\nmax_turnz = 3\n",
    );
    let Ran { stderr, run_id, .. } = run_json(&sb, &fake, &key, "run.toml");
    assert!(
        stderr.contains("unknown key `run.agent.max_turnz`"),
        "an unknown [run.agent] key is warned about: {stderr}"
    );
    let sent = fake.requests(&key);
    assert_eq!(sent.len(), 1, "max_turns = 1 allows one model call");
    let offered: Vec<&str> = sent[0].body["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(offered.contains(&"read_file"), "{offered:?}");
    assert!(
        !offered.contains(&"write_file") && !offered.contains(&"shell"),
        "a read-only agent is offered no write or shell tools: {offered:?}"
    );
    let all = events(&sb, &run_id);
    let failed = named(&all, "stage.failed");
    assert!(
        failed[0]["properties"]["outcome"]["failure"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("max_turns (1)")),
        "{all:?}"
    );

    sb.write(
        "bad.toml",
        "_version = 1\n[workflow]\ngraph = \"fix.fabro\"\n[run.agent]\npermissions = \"admin\"\n",
    );
    let bad = sb.run(&["run", "bad.toml"]);
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(
        bad.stderr
            .contains("[run.agent] invalid permissions `admin`"),
        "{}",
        bad.stderr
    );
}

#[test]
fn weft_steer_reaches_a_running_agent_at_its_next_turn_and_is_recorded() {
    let fake = FakeLlm::start();
    let key = key("steer");
    fake.script(
        &key,
        [
            // A shell call that waits for the test: the agent is still
            // running when it is steered.
            Reply::ToolCalls(vec![ToolCall::new(
                "c1",
                "shell",
                json!({"command": "while [ ! -f go ]; do sleep 0.05; done; echo released key=${OPENAI_API_KEY:-withheld} node=$WEFT_NODE_ID"}),
            )]),
            Reply::Text("Done, as steered. {\"preferred_next_label\": \"Ship\"}".into()),
        ],
    );
    let sb = Sandbox::new();
    sb.write("fix.fabro", FIX);
    let env = model_env(&fake, &key);
    let run_id = start_detached(&sb, &env, "fix.fabro");
    wait_for_event(&sb, &run_id, "agent.tool.started");
    // `weft logs --follow` prints the transcript as the agent goes.
    let follower = sb
        .weft()
        .args(["logs", &run_id, "fix", "--follow"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));

    let steered = sb.run(&["steer", &run_id, "fix", "Prefer the smaller fix"]);
    assert_eq!(steered.code, 0, "{steered:?}");
    assert!(
        steered.stdout.contains("queued for fix@1 of run"),
        "{}",
        steered.stdout
    );
    sb.write("go", "");
    wait_for_status(&home(&sb), &run_id, RunStatus::Succeeded);

    let sent = fake.requests(&key);
    assert_eq!(sent.len(), 2, "two turns");
    assert!(
        !sent[0].body.to_string().contains("Prefer the smaller fix"),
        "the first turn was sent before the message"
    );
    assert!(
        sent[1].body.to_string().contains("Prefer the smaller fix"),
        "the next turn carries the message: {}",
        sent[1].body
    );
    assert!(
        sent[1]
            .body
            .to_string()
            .contains("released key=withheld node=fix"),
        "and the shell's output: the API key withheld from it, the stage's WEFT_* given: {}",
        sent[1].body
    );
    let all = events(&sb, &run_id);
    let steered = named(&all, "agent.steered");
    assert_eq!(steered.len(), 1, "{all:?}");
    assert_eq!(steered[0]["properties"]["text"], "Prefer the smaller fix");
    assert_eq!(steered[0]["node_id"], "fix");
    let followed = follower
        .wait_with_output()
        .unwrap_or_else(|e| panic!("{e}"));
    let followed = String::from_utf8_lossy(&followed.stdout);
    for shown in [
        "-- transcript --",
        "  → shell while",
        "steering:\n  Prefer the smaller fix",
        "Done, as steered.",
        "end: completed",
        "-- fix@1 succeeded in ",
    ] {
        assert!(followed.contains(shown), "`{shown}` in:\n{followed}");
    }
    let logs = sb.run(&["logs", &run_id, "fix"]);
    assert!(
        logs.stdout.contains("steering:\n  Prefer the smaller fix")
            && logs.stdout.contains("  → shell while [ ! -f go ]"),
        "{}",
        logs.stdout
    );
}

#[test]
fn cancelling_a_run_mid_shell_kills_the_agents_command_and_leaves_no_process() {
    let fake = FakeLlm::start();
    let key = key("cancel-shell");
    fake.script(
        &key,
        [Reply::ToolCalls(vec![ToolCall::new(
            "c1",
            "shell",
            json!({"command": "echo $$ > shell.pid; exec sleep 300", "timeout_ms": 600000}),
        )])],
    );
    let sb = Sandbox::new();
    sb.write("fix.fabro", FIX);
    let env = model_env(&fake, &key);
    let run_id = start_detached(&sb, &env, "fix.fabro");
    let pid_file = sb.path().join("shell.pid");
    let mut pid = None;
    wait_until("the agent's shell to start", || {
        pid = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|p| p.trim().parse::<u32>().ok());
        pid.is_some()
    });
    let pid = pid.unwrap_or_default();
    assert!(is_alive(pid), "the shell runs");
    let cancelled = sb.run(&["cancel", &run_id]);
    assert_eq!(cancelled.code, 0, "{cancelled:?}");
    wait_for_status(&home(&sb), &run_id, RunStatus::Cancelled);
    wait_until("the shell to be gone", || !is_alive(pid));
}

#[test]
fn an_agent_of_a_no_daemon_run_cannot_be_steered_through_weftd_and_the_error_says_why() {
    let fake = FakeLlm::start();
    let key = key("nodaemon");
    fake.script(&key, [Reply::Hang]);
    let sb = Sandbox::new();
    sb.write("fix.fabro", FIX);
    let mut run = sb
        .weft()
        .envs(model_env(&fake, &key))
        .args(["run", "fix.fabro", "--no-daemon", "--model", "gpt-5.2"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut run_id = String::new();
    wait_until("the agent's first turn", || {
        let Ok(store) = Store::open_read_only(&home(&sb)) else {
            return false;
        };
        let Some(record) = store
            .list_runs(&Default::default())
            .ok()
            .and_then(|runs| runs.into_iter().next())
        else {
            return false;
        };
        run_id = record.id;
        store
            .events(&run_id, 0, None)
            .unwrap_or_default()
            .iter()
            .any(|e| e.kind.name() == "agent.turn.started")
    });
    let _daemon = Weftd::start(&sb);
    let refused = sb.run(&["steer", &run_id, "hello"]);
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &run.id().to_string()])
        .status();
    let _ = run.wait();
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains("--no-daemon") && refused.stderr.contains("another process"),
        "{}",
        refused.stderr
    );
}

/// The agent example `make demo` runs, `examples/fix-failing-test.fabro`,
/// runs to completion in a copy of `examples/scratch-slug` when the model
/// does its job: the fake scripts what a model would do (run the test, read
/// the code, edit it, run the test again), and the workflow's own `verify`
/// command decides whether the run succeeds.
#[test]
fn the_fix_failing_test_example_fixes_scratch_slug_and_its_verify_stage_passes() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let fake = FakeLlm::start();
    let key = key("example");
    let old = "    words = title.lower().split(\" \")\n    return \"-\".join(words)\n";
    let new = "    words = \"\".join(c if c.isalnum() or c in \" -\" else \" \" for c in title.lower()).split()\n    return \"-\".join(words)\n";
    fake.script(
        &key,
        [
            Reply::ToolCalls(vec![ToolCall::new(
                "c1",
                "shell",
                json!({"command": "python3 test_slug.py"}),
            )]),
            Reply::ToolCalls(vec![ToolCall::new(
                "c2",
                "read_file",
                json!({"file_path": "slug.py"}),
            )]),
            Reply::ToolCalls(vec![ToolCall::new(
                "c3",
                "write_file",
                json!({"file_path": "slug.py", "content": read(&examples.join("scratch-slug/slug.py")).replace(old, new)}),
            )]),
            Reply::ToolCalls(vec![ToolCall::new(
                "c4",
                "shell",
                json!({"command": "python3 test_slug.py"}),
            )]),
            Reply::Text("Punctuation was kept and runs of spaces made empty words.".into()),
        ],
    );
    let sb = Sandbox::new();
    for file in ["slug.py", "test_slug.py"] {
        sb.write(
            &format!("scratch-slug/{file}"),
            read(&examples.join("scratch-slug").join(file)),
        );
    }
    let workflow = examples.join("fix-failing-test.fabro");
    let out = sb
        .weft()
        .envs(model_env(&fake, &key))
        .args([
            "run",
            &workflow.to_string_lossy(),
            "--json",
            "--model",
            "gpt-5.2",
        ])
        .args([
            "--work-dir",
            &sb.path().join("scratch-slug").to_string_lossy(),
        ])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let conclusion: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(conclusion["status"], "succeeded", "{conclusion}");
    let sent = fake.requests(&key);
    assert_eq!(sent.len(), 5, "five agent turns");
    assert!(
        sent[1].body.to_string().contains("AssertionError"),
        "the model saw the failing test: {}",
        sent[1].body
    );
    assert!(
        sent[4].body.to_string().contains("all 4 cases pass"),
        "the model saw the test pass: {}",
        sent[4].body
    );
    let run_id = conclusion["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let status: Value =
        serde_json::from_str(&read(&stage_dir(&sb, &run_id, "fix").join("status.json")))
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status["files_touched"], json!(["slug.py"]));
}
