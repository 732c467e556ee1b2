//! Claude Code's real ACP adapter (`claude-agent-acp`, installed by
//! `make deps` into tests/adapters/node_modules) in an agent stage through
//! weftd, offline: its bundled Claude Code talks to the fake LLM server
//! through `ANTHROPIC_BASE_URL` (docs/agents.md, "External agents").
//!
//! Without the adapter installed the tests say why and pass, unless
//! `WEFT_REQUIRE_ADAPTERS=1` (as `make test` sets), where they fail.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use weft_fakellm::{FakeLlm, Recorded, Reply, ToolCall};
use weft_tests::{Sandbox, Weftd, events, named};

/// The file the scripted model has Claude Code write, and what goes in it.
const NOTES: &str = "notes.txt";
const NOTES_CONTENT: &str = "written by Claude Code\n";
/// The model's last words, after the write.
const FINAL_REPLY: &str = "I wrote notes.txt.";

/// Claude Code starts slowly (Node.js, then its native CLI).
const RUN_TIMEOUT: Duration = Duration::from_secs(300);

/// The installed adapter's program, or why it cannot run here. With
/// `WEFT_REQUIRE_ADAPTERS=1` a missing adapter fails the test.
fn adapter_bin_dir() -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("adapters/node_modules/.bin");
    let why = if !bin.join("claude-agent-acp").is_file() {
        format!(
            "{} is not installed (`make deps` installs it: cd tests/adapters && npm ci)",
            bin.join("claude-agent-acp").display()
        )
    } else if !on_path("node") {
        "`node` is not on PATH (the adapter is a Node.js program)".to_string()
    } else {
        return Some(bin);
    };
    assert!(
        std::env::var("WEFT_REQUIRE_ADAPTERS").as_deref() != Ok("1"),
        "WEFT_REQUIRE_ADAPTERS=1 but Claude Code's ACP adapter cannot run: {why}"
    );
    eprintln!("skipped: Claude Code's ACP adapter cannot run: {why}");
    None
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// The model behind Claude Code. Its main turn offers the `Write` tool:
/// the first time it asks for the notes to be written, and once the tool's
/// result is in the conversation it answers with text. Claude Code's side
/// requests (a title for the session, and the like) get a short text; they
/// run concurrently with the main turn, so the replies go by content, not
/// by order.
fn model(work_dir: PathBuf) -> impl Fn(&Recorded) -> Reply + Send + Sync + 'static {
    move |request| {
        let body = &request.body;
        let offers_write = body["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == "Write"));
        let has_tool_result = body["messages"].as_array().is_some_and(|messages| {
            messages.iter().any(|m| {
                m["content"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|part| part["type"] == "tool_result"))
            })
        });
        match (offers_write, has_tool_result) {
            (true, false) => Reply::ToolCalls(vec![ToolCall::new(
                "toolu_write_notes",
                "Write",
                serde_json::json!({
                    "file_path": work_dir.join(NOTES).display().to_string(),
                    "content": NOTES_CONTENT,
                }),
            )]),
            (true, true) => Reply::Text(FINAL_REPLY.into()),
            (false, _) => Reply::Text("Notes".into()),
        }
    }
}

/// Processes still alive that were started with this `HOME` (the adapter,
/// its Claude Code, anything they ran).
fn processes_with_home(home: &Path) -> Vec<String> {
    weft_tests::processes_with_env(&format!("HOME={}\0", home.display()))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn stage_dir(sb: &Sandbox, run_id: &str) -> PathBuf {
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

/// One test's world: a sandbox with a git repository as the work dir,
/// Claude Code's own home, the fake provider answering as [`model`], and
/// weftd.
struct World {
    sb: Sandbox,
    repo: PathBuf,
    claude_home: PathBuf,
    adapter_bin: PathBuf,
    fake: FakeLlm,
    key: String,
    daemon: Weftd,
}

impl World {
    /// `settings` is Claude Code's `~/.claude/settings.json`, if any.
    fn new(adapter_bin: PathBuf, node_attrs: &str, settings: Option<Value>) -> World {
        let sb = Sandbox::new();
        let repo = sb.path().join("repo");
        weft_tests::git_repo(&repo, &[("README.md", "scratch\n")]);
        let repo = repo.canonicalize().unwrap_or_else(|e| panic!("{e}"));
        // Claude Code's own home, empty but for the settings given: it
        // needs nothing there (no `~/.claude.json`, no login) with an API
        // key in the environment.
        let claude_home = sb.path().join("claude-home");
        std::fs::create_dir_all(claude_home.join(".claude")).unwrap_or_else(|e| panic!("{e}"));
        if let Some(settings) = settings {
            std::fs::write(
                claude_home.join(".claude/settings.json"),
                settings.to_string(),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        }
        let fake = FakeLlm::start();
        let key = format!("sk-ant-claude-adapter-{}", std::process::id());
        fake.respond_with(&key, model(repo.clone()));
        sb.write(
            "wf.fabro",
            format!(
                r#"digraph D {{ start [shape=Mdiamond]; exit [shape=Msquare]
                     work [shape=box, backend="acp", acp.agent="claude", prompt="Write the notes" {node_attrs}]
                     start -> work -> exit }}"#
            ),
        );
        let daemon = Weftd::start(&sb);
        World {
            sb,
            repo,
            claude_home,
            adapter_bin,
            fake,
            key,
            daemon,
        }
    }

    /// `weft run` of the workflow in the repository through weftd, with
    /// what Claude Code needs offline in its environment (the run passes
    /// it on to the agent): the adapter on PATH, the server's URL and a
    /// key. Not `IS_SANDBOX=1`, even as root.
    fn weft_run(&self, extra: &[&str]) -> std::process::Command {
        let path = format!(
            "{}:{}",
            self.adapter_bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut command = self.sb.weft();
        command
            .env("PATH", path)
            .env("HOME", &self.claude_home)
            .env_remove("IS_SANDBOX")
            // Nothing but model calls (no telemetry, error reports or
            // update checks); without it Claude Code still works here.
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("ANTHROPIC_BASE_URL", self.fake.url())
            .env("ANTHROPIC_API_KEY", &self.key)
            .args([
                "run",
                "--no-checkpoint",
                "--work-dir",
                &self.repo.display().to_string(),
                "wf.fabro",
            ])
            .args(extra)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        command
    }

    /// What the model was asked, one line per request, for failures.
    fn seen(&self) -> Vec<String> {
        self.fake
            .requests(&self.key)
            .iter()
            .map(|r| {
                let tools: Vec<&str> = r.body["tools"]
                    .as_array()
                    .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
                    .unwrap_or_default();
                format!("{} {} tools={tools:?}", r.method, r.path)
            })
            .collect()
    }

    /// Once the run is over: no process started with Claude Code's home
    /// is left (the adapter, its Claude Code, whatever they ran).
    fn assert_nothing_left(&self) {
        weft_tests::wait_until(
            "no adapter or Claude Code process to be left",
            Duration::from_secs(30),
            || processes_with_home(&self.claude_home).is_empty(),
        );
    }
}

#[test]
fn claude_code_s_adapter_writes_a_file_in_an_acp_stage_against_the_fake_provider() {
    let Some(adapter_bin) = adapter_bin_dir() else {
        return;
    };
    let world = World::new(adapter_bin, "", None);
    let started = Instant::now();
    let mut child = world
        .weft_run(&["--json"])
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    weft_tests::wait_until("the run to end", RUN_TIMEOUT, || {
        child.try_wait().ok().flatten().is_some()
    });
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "the run with Claude Code's adapter took {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let conclusion: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(
        conclusion["status"],
        "succeeded",
        "{stderr}\n{conclusion}\nthe model was asked: {:#?}\nweftd: {}",
        world.seen(),
        world.daemon.log_text()
    );
    let run_id = conclusion["run_id"].as_str().unwrap_or_default();

    // Claude Code wrote the file itself, on disk; the git snapshot saw it.
    assert_eq!(read(&world.repo.join(NOTES)), NOTES_CONTENT);
    let all = events(&world.sb, run_id);
    let work = named(&all, "stage.completed")
        .into_iter()
        .find(|e| e["node_id"] == "work")
        .unwrap_or_else(|| panic!("{all:?}"));
    assert_eq!(
        work["properties"]["outcome"]["files_touched"],
        serde_json::json!([NOTES]),
        "{work}"
    );
    // In the mode Weft chose, Claude Code asked, and the default policy
    // (allow, inside the work dir) answered.
    let notices: Vec<&str> = named(&all, "run.notice")
        .iter()
        .filter_map(|e| e["properties"]["message"].as_str())
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("asked for permission") && n.contains("acp.permissions=allow")),
        "{notices:?}"
    );
    let tools = named(&all, "agent.tool.started");
    assert!(
        tools.iter().any(|e| e["properties"]["tool"] == "edit"
            && e["properties"]["call_id"] == "toolu_write_notes"),
        "the Write was reported as an edit: {tools:?}"
    );
    // Started once described, not with the adapter's placeholder.
    assert!(
        tools.iter().all(|e| !e["properties"]["summary"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Preparing")),
        "{tools:?}"
    );
    let text: String = named(&all, "agent.text")
        .iter()
        .filter_map(|e| e["properties"]["text"].as_str())
        .collect();
    assert!(text.contains(FINAL_REPLY), "{text}");

    let dir = stage_dir(&world.sb, run_id);
    let response = read(&dir.join("response.md"));
    assert!(response.trim_end().ends_with(FINAL_REPLY), "{response}");
    let transcript = read(&dir.join("transcript.jsonl"));
    let lines: Vec<Value> = transcript
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lines[0]["type"], "session", "{transcript}");
    assert_eq!(lines[0]["provider"], "acp");
    assert_eq!(lines[0]["model"], "claude");
    // The call's input, which the adapter sends after announcing the call.
    let write = lines
        .iter()
        .filter_map(|l| l["tool_calls"].as_array())
        .flatten()
        .find(|c| c["id"] == "toolu_write_notes")
        .unwrap_or_else(|| panic!("{transcript}"));
    assert_eq!(write["arguments"]["content"], NOTES_CONTENT, "{transcript}");
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "tool" && l["call_id"] == "toolu_write_notes"),
        "{transcript}"
    );
    assert_eq!(
        lines.last().map(|l| l["type"].clone()),
        Some("end".into()),
        "{transcript}"
    );

    // Every model call came with the key, on the Messages API, and the
    // tool's result went back to the model.
    let requests = world.fake.requests(&world.key);
    assert!(
        world.fake.requests("").is_empty(),
        "{:?}",
        world.fake.requests("")
    );
    assert!(
        requests
            .iter()
            .all(|r| r.method == "POST" && r.path.starts_with("/v1/messages")),
        "{:#?}",
        world.seen()
    );
    assert!(
        requests
            .iter()
            .any(|r| r.body["messages"].to_string().contains("toolu_write_notes")),
        "{:#?}",
        world.seen()
    );
    world.assert_nothing_left();
}

/// Weft puts Claude Code in its `default` ("Manual") mode, where it asks
/// before it writes (its out-of-the-box `auto` mode decides alone), so
/// `acp.permissions="ask"` puts the question to a person. Its own settings
/// say nothing of modes here.
#[test]
fn claude_code_s_permission_request_is_a_question_answered_from_another_client() {
    use std::io::BufRead as _;
    let Some(adapter_bin) = adapter_bin_dir() else {
        return;
    };
    let world = World::new(adapter_bin, r#", acp.permissions="ask""#, None);
    let mut follower = world
        .weft_run(&[])
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = follower.stderr.take().unwrap_or_else(|| panic!("stderr"));
    let (send, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            if send.send(line.unwrap_or_default()).is_err() {
                break;
            }
        }
    });
    let mut shown = Vec::new();
    let command = loop {
        let line = lines.recv_timeout(RUN_TIMEOUT).unwrap_or_else(|_| {
            panic!(
                "no question was shown: {shown:#?}\nthe model was asked: {:#?}",
                world.seen()
            )
        });
        shown.push(line.clone());
        if let Some((_, command)) = line.split_once("answer with: ") {
            break command.to_string();
        }
    };
    let text = shown.join("\n");
    assert!(
        text.contains("claude asks permission: Write notes.txt"),
        "{text}"
    );
    assert!(
        !world.repo.join(NOTES).exists(),
        "nothing is written before the answer"
    );
    let first = command.split("  (or").next().unwrap_or_default();
    let words: Vec<&str> = first.split_whitespace().collect();
    assert_eq!(words[..2], ["weft", "answer"], "{command}");
    let answered = world.sb.run(&[words[1], words[2], "--label", "Yes"]);
    assert_eq!(answered.code, 0, "{answered:?}");
    weft_tests::wait_until("the run to end", RUN_TIMEOUT, || {
        follower.try_wait().ok().flatten().is_some()
    });
    let status = follower.wait().unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success(), "{text}");
    assert_eq!(read(&world.repo.join(NOTES)), NOTES_CONTENT);
    let out = world.sb.run(&["ps", "--all", "--json"]);
    let runs: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let run_id = runs[0]["run_id"]
        .as_str()
        .or(runs[0]["id"].as_str())
        .unwrap_or_else(|| panic!("{runs}"));
    let all = events(&world.sb, run_id);
    let completed = named(&all, "interview.completed");
    assert_eq!(completed.len(), 1, "{all:?}");
    assert_eq!(completed[0]["properties"]["selected"], "Yes");
    world.assert_nothing_left();
}
