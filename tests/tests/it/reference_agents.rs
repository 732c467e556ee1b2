//! The agent workflows of the Fabro reference docs and of `examples/` run to
//! completion through weftd against the fake provider (issue 16's
//! acceptance).
//!
//! Which workflows:
//! - every complete `digraph` block of `tests/fixtures/reference/` (see
//!   `reference_blocks`) with at least one agent stage (the library's own
//!   [`Handler::Agent`]: `box`, the default shape, or an agent `type`) that
//!   validates without errors, given the files in [`COMPANIONS`]. A block
//!   with an agent stage whose only errors are files it names that the
//!   docs do not give must be in [`EXCLUDED`] with the reason. Blocks that
//!   lack a start or exit node are excerpts, not workflows, and are left to
//!   `reference_docs`.
//! - every workflow in `examples/` with an agent stage, run in place (so
//!   `@prompts/…` and child workflows resolve).
//!
//! How: one weftd (started on demand by the first `weft run`, in a sandbox
//! with its own `WEFT_HOME`) runs them all at once, as for a user who
//! launches several runs. Each workflow gets a directory of its own with a
//! work dir holding a `README.md`, and `weft run --detach --auto-approve
//! --model gpt-5.2` with every provider's key and base URL pointing at one
//! fake server (the stylesheets name Claude and Gemini models too), under an
//! API key of its own. The fake plays a model that, in each agent session,
//! reads `README.md` and globs `*` in one turn (read-only calls, run at
//! once), runs `ls` with `shell`, writes a notes file of its own, adds a
//! line to `README.md` with the profile's edit tool (`edit_file`, or
//! `apply_patch` on OpenAI), and then ends its turn with text, each step
//! only when the node offers the tool; prompt nodes (no tools offered) get
//! the text at once. The docs' `{{ inputs.* }}` get the values of
//! `reference_blocks::DOC_INPUTS`.
//! Commands that cannot run here are stubbed first on `PATH` ([`STUBS`],
//! with the reason each).
//!
//! What must hold, per workflow: its runs (the parent and any child run,
//! at any depth) reach a terminal state within a bounded wait; every agent
//! stage that started ran the agent loop: an `agent.turn.started` event,
//! tool calls that all succeeded (so the agent worked in the work dir),
//! `files_touched` equal to what its writes touched, a `transcript.jsonl`
//! in its stage directory ending `completed`; the edits are in the work
//! dir's README.md; no agent stage failed; no other stage failed unless
//! [`EXPECTED_FAILURES`] says why (and then it must fail). Problems are collected and reported
//! together at the end, one line per problem naming the workflow and where
//! it comes from.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weft::lang::{Handler, Workflow};
use weft::model::{Event, EventKind, RunStatus};
use weft::store::{Home, RunDir, RunFilter, RunRecord, Store};
use weft_fakellm::{FakeLlm, Recorded, Reply, ToolCall, Wire};
use weft_tests::Sandbox;

use crate::reference_blocks::{
    Block, DOC_INPUTS, doc_load_options, fixture_blocks, fixtures_root, is_complete,
};

/// A docs block: its `.mdx` file under `tests/fixtures/reference/` and
/// its index among the file's ```dot blocks.
type BlockKey = (&'static str, usize);

/// Blocks that name a file the docs page gives as another of its blocks:
/// (block, file name, the block that is that file). They run with it.
const COMPANIONS: &[(BlockKey, &str, BlockKey)] = &[(
    ("tutorials/sub-workflow.mdx", 1),
    "implement-and-test.fabro",
    ("tutorials/sub-workflow.mdx", 0),
)];

/// Complete blocks with agent stages that are not run, and why.
const EXCLUDED: &[(BlockKey, &str)] = &[(
    ("tutorials/plan-implement.mdx", 0),
    "`simplify [prompt=\"@prompts/simplify.md\"]`: the page never shows prompts/simplify.md, \
     so there is nothing faithful to run that stage with",
)];

/// Commands replaced by a stub first on `PATH`, per workflow: (workflow,
/// command, why). Each stub is in [`stub_script`].
const STUBS: &[(&str, &str, &str)] = &[
    (
        "workflows/variables.mdx#0",
        "git",
        "`git clone {{ inputs.repo_url }}` would fetch github.com; tests stay on loopback, so \
         the stub only makes the clone's target directory",
    ),
    (
        "examples/goal-gate-retry.fabro",
        "cargo",
        "`cargo test --test upload` needs the Rust project the example is about; the stub passes",
    ),
    (
        "examples/implement-test-fix.fabro",
        "cargo",
        "`cargo test --all-targets` needs the Rust project the example is about; the stub passes",
    ),
    (
        "examples/sub-workflow.fabro",
        "cargo",
        "its child, children/lint-and-test.fabro, runs `cargo clippy` and `cargo test` on the \
         Rust project the example is about; the stub passes",
    ),
];

/// Command stages expected to fail, and why: (workflow, node, why). The
/// run may then end `failed`; the stage must fail.
const EXPECTED_FAILURES: &[(&str, &str, &str)] = &[(
    "examples/fix-failing-test.fabro",
    "verify",
    "it runs the real `python3 test_slug.py` of scratch-slug/, which this fake model does not \
     fix (agent_stages.rs scripts one that does)",
)];

/// How long one workflow may take to reach a terminal state. Each takes
/// well under a second on an idle machine; this only bounds a hang.
const RUN_DEADLINE: Duration = Duration::from_secs(120);

/// The last line of the README.md each work dir starts with.
const README_LAST_LINE: &str = "A scratch project for the reference workflows.";

/// The text the fake model ends every turn with.
const FINAL_TEXT: &str = "Done: read the README and finished the task.";

/// One workflow to run.
struct Case {
    /// `tutorials/sub-workflow.mdx#1` or `examples/sub-workflow.fabro`.
    name: String,
    /// Where `describe` points a reader.
    origin: String,
    source: Source,
    /// `--input` values to pass.
    inputs: Vec<(String, String)>,
}

enum Source {
    /// A docs block, written to the sandbox with these companion files.
    Block {
        text: String,
        companions: Vec<(String, String)>,
    },
    /// A workflow file run where it is.
    File(PathBuf),
}

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn block_name(key: (&str, usize)) -> String {
    format!("{}#{}", key.0, key.1)
}

fn has_agent_stage(wf: &Workflow) -> bool {
    wf.graph
        .as_ref()
        .is_some_and(|g| g.nodes.iter().any(|n| n.handler == Handler::Agent))
}

/// The docs blocks to run, and problems with the tables.
fn block_cases(problems: &mut Vec<String>) -> Vec<Case> {
    let root = fixtures_root();
    let blocks: Vec<(Block, PathBuf)> = fixture_blocks(&root);
    let find = |key: (&str, usize)| blocks.iter().find(|(b, _)| b.key() == key);
    let options = doc_load_options();
    let mut cases = Vec::new();
    for (block, base_dir) in &blocks {
        if !is_complete(block) {
            continue;
        }
        let key = block.key();
        let mut companions = Vec::new();
        for (_, file, other) in COMPANIONS.iter().filter(|(k, _, _)| *k == key) {
            match find(*other) {
                Some((b, _)) => companions.push(((*file).to_string(), b.text.clone())),
                None => problems.push(format!(
                    "COMPANIONS names {other:?} for {key:?}, which is not a ```dot block"
                )),
            }
        }
        // Loaded where it will run: next to its companions.
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for (file, text) in &companions {
            std::fs::write(dir.path().join(file), text).unwrap_or_else(|e| panic!("{e}"));
        }
        let base = if companions.is_empty() {
            base_dir.as_path()
        } else {
            dir.path()
        };
        let name = block_name(key);
        let wf = Workflow::from_bytes(&name, block.text.as_bytes(), base, &options);
        if !has_agent_stage(&wf) {
            continue;
        }
        let errors: BTreeSet<&str> = wf
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.rule)
            .collect();
        let excluded = EXCLUDED.iter().any(|(k, _)| *k == key);
        if errors.contains("start_node") || errors.contains("terminal_node") {
            // An excerpt, not a workflow (reference_docs lists why).
            continue;
        }
        if excluded {
            if errors.is_empty() {
                problems.push(format!(
                    "{name} is in EXCLUDED but validates cleanly now: run it (remove the entry)"
                ));
            }
            continue;
        }
        if !errors.is_empty() {
            problems.push(format!(
                "{name} ({}:{}) has agent stages but does not validate ({errors:?}): give it \
                 its files (COMPANIONS) or exclude it with a reason (EXCLUDED)",
                block.file, block.line
            ));
            continue;
        }
        let inputs = if block.text.contains("inputs.") {
            DOC_INPUTS
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect()
        } else {
            Vec::new()
        };
        cases.push(Case {
            name,
            origin: format!("tests/fixtures/reference/{}:{}", block.file, block.line),
            source: Source::Block {
                text: block.text.clone(),
                companions,
            },
            inputs,
        });
    }
    for (key, _) in EXCLUDED {
        if find(*key).is_none() {
            problems.push(format!(
                "EXCLUDED names {key:?}, which is not a ```dot block"
            ));
        }
    }
    cases
}

/// The examples with agent stages.
fn example_cases() -> Vec<Case> {
    let dir = examples_dir();
    weft_tests::files_under(&dir, &["fabro", "dot"])
        .into_iter()
        .filter(|path| {
            let wf = Workflow::load(path, &weft::lang::LoadOptions::default())
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            has_agent_stage(&wf)
        })
        // A child workflow runs through its parent.
        .filter(|path| !path.starts_with(dir.join("children")))
        // Its implement stage is an external agent, not Weft's loop: it
        // runs against the scripted ACP agent in acp_stages.rs.
        .filter(|path| !path.ends_with("external-agent.fabro"))
        .map(|path| {
            let rel = path
                .strip_prefix(&dir)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            Case {
                name: format!("examples/{rel}"),
                origin: format!("examples/{rel}"),
                source: Source::File(path),
                inputs: Vec::new(),
            }
        })
        .collect()
}

/// The stub for `command`: what it does is in [`STUBS`].
fn stub_script(command: &str) -> &'static str {
    match command {
        "cargo" => "#!/bin/sh\necho \"cargo $* (a stub of reference_agents.rs: passes)\"\n",
        "git" => {
            "#!/bin/sh\n\
             # Only `git clone URL [DIR]`: make DIR (or the URL's last part).\n\
             [ \"$1\" = clone ] || { echo \"git stub: only clone\" >&2; exit 1; }\n\
             dir=${3:-$(basename \"$2\" .git)}\n\
             mkdir -p \"$dir\" && echo \"Cloning into '$dir'... (a stub of reference_agents.rs)\"\n"
        }
        other => panic!("no stub for `{other}`"),
    }
}

/// How many tool results the request's conversation holds since its last
/// prompt (a user turn without results), read in its wire format: an agent
/// stage of a thread (full fidelity, `thread_id`) starts after the earlier
/// stages' turns, and its session starts at its own prompt.
fn tool_results(request: &Recorded) -> usize {
    let body = &request.body;
    let items = |key: &str| body[key].as_array().cloned().unwrap_or_default();
    let results_in = |item: &Value, key: &str, is_result: &dyn Fn(&Value) -> bool| {
        item[key]
            .as_array()
            .map_or(0, |parts| parts.iter().filter(|p| is_result(p)).count())
    };
    // Per item: (a prompt starts here, results it holds).
    let per_item: Vec<(bool, usize)> = match request.provider {
        Wire::Anthropic => items("messages")
            .iter()
            .map(|m| {
                let n = results_in(m, "content", &|p| p["type"] == "tool_result");
                (m["role"] == "user" && n == 0, n)
            })
            .collect(),
        Wire::OpenAiResponses => items("input")
            .iter()
            .map(|i| {
                (
                    i["role"] == "user",
                    usize::from(i["type"] == "function_call_output"),
                )
            })
            .collect(),
        Wire::OpenAiChat => items("messages")
            .iter()
            .map(|m| (m["role"] == "user", usize::from(m["role"] == "tool")))
            .collect(),
        Wire::Gemini => items("contents")
            .iter()
            .map(|c| {
                let n = results_in(c, "parts", &|p| p.get("functionResponse").is_some());
                (c["role"] == "user" && n == 0, n)
            })
            .collect(),
    };
    per_item
        .iter()
        .fold(0, |count, &(prompt, n)| if prompt { 0 } else { count + n })
}

/// The names of the tools the request offers (Gemini nests them in
/// `functionDeclarations`).
fn offered(request: &Recorded) -> Vec<String> {
    let mut names = Vec::new();
    for tool in request.body["tools"].as_array().into_iter().flatten() {
        let declarations = tool["functionDeclarations"].as_array();
        for t in declarations
            .into_iter()
            .flatten()
            .chain(std::iter::once(tool))
        {
            let name = t["name"]
                .as_str()
                .or_else(|| t["function"]["name"].as_str());
            names.extend(name.map(str::to_string));
        }
    }
    names
}

/// The fake model. In an agent session (tools offered): first two
/// read-only calls at once (`read_file README.md`, `glob *`), then `ls`
/// with `shell` when the node may run commands, then the final text. A
/// prompt node (no tools) gets the text at once.
fn model(request: &Recorded, sessions: &AtomicUsize) -> Reply {
    let tools = offered(request);
    let has = |name: &str| tools.iter().any(|t| t == name);
    match tool_results(request) {
        0 if !tools.is_empty() => Reply::ToolCalls(vec![
            ToolCall::new("", "read_file", json!({"file_path": "README.md"})),
            ToolCall::new("", "glob", json!({"pattern": "*"})),
        ]),
        2 if has("shell") => {
            Reply::ToolCalls(vec![ToolCall::new("", "shell", json!({"command": "ls"}))])
        }
        3 if has("write_file") => {
            let n = sessions.fetch_add(1, Ordering::SeqCst) + 1;
            Reply::ToolCalls(vec![ToolCall::new(
                "",
                "write_file",
                json!({"file_path": format!("notes/agent-{n}.md"), "content": "notes\n"}),
            )])
        }
        // README.md was read in the first turn, so it may be edited, with
        // the profile's own tool: a line after the one every copy keeps.
        4 if has("edit_file") => Reply::ToolCalls(vec![ToolCall::new(
            "",
            "edit_file",
            json!({
                "file_path": "README.md",
                "old_string": README_LAST_LINE,
                "new_string": format!("{README_LAST_LINE}\nEdited by an agent."),
            }),
        )]),
        4 if has("apply_patch") => Reply::ToolCalls(vec![ToolCall::new(
            "",
            "apply_patch",
            json!({"patch": format!(
                "*** Begin Patch\n*** Update File: README.md\n@@\n {README_LAST_LINE}\n+Edited by an agent.\n*** End Patch\n"
            )}),
        )]),
        _ => Reply::Text(FINAL_TEXT.into()),
    }
}

/// Starts `case` (the `index`th) detached in the sandbox's weftd, in a
/// directory of its own, with an API key of its own at the fake, and
/// returns its run id.
fn start_case(sb: &Sandbox, index: usize, case: &Case, fake: &FakeLlm) -> Result<String, String> {
    let key = format!("sk-ref-{}-{index}", std::process::id());
    let sessions = AtomicUsize::new(0);
    fake.respond_with(&key, move |r| model(r, &sessions));

    let dir = format!("case{index}");
    let work = sb.path().join(&dir).join("work");
    sb.write(
        &format!("{dir}/work/README.md"),
        format!("# Demo\n\n{README_LAST_LINE}\n"),
    );
    if case.name == "examples/fix-failing-test.fabro" {
        for file in ["slug.py", "test_slug.py"] {
            let text = std::fs::read(examples_dir().join("scratch-slug").join(file))
                .unwrap_or_else(|e| panic!("{e}"));
            sb.write(&format!("{dir}/work/{file}"), text);
        }
    }
    let workflow = match &case.source {
        Source::Block { text, companions } => {
            for (file, body) in companions {
                sb.write(&format!("{dir}/workflow/{file}"), body);
            }
            sb.write(&format!("{dir}/workflow/workflow.fabro"), text)
        }
        Source::File(path) => path.clone(),
    };

    let mut path = std::env::var_os("PATH").unwrap_or_default();
    let stubs: Vec<_> = STUBS.iter().filter(|(w, _, _)| *w == case.name).collect();
    if !stubs.is_empty() {
        for (_, command, _) in &stubs {
            let file = sb.write(&format!("{dir}/stubs/{command}"), stub_script(command));
            std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let mut joined = sb.path().join(&dir).join("stubs").into_os_string();
        joined.push(":");
        joined.push(&path);
        path = joined;
    }

    // Every provider the workflows' stylesheets name, at the one fake.
    let url = fake.url();
    let mut cmd = sb.weft();
    cmd.env("PATH", &path)
        .env("OPENAI_API_KEY", &key)
        .env("OPENAI_BASE_URL", format!("{url}/v1"))
        .env("ANTHROPIC_API_KEY", &key)
        .env("ANTHROPIC_BASE_URL", &url)
        .env("GEMINI_API_KEY", &key)
        .env("GEMINI_BASE_URL", &url)
        .arg("run")
        .arg(&workflow)
        .args(["--detach", "--auto-approve", "--model", "gpt-5.2"])
        .arg("--work-dir")
        .arg(&work);
    for (k, v) in &case.inputs {
        cmd.args(["--input", &format!("{k}={v}")]);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run weft: {e}"));
    let run_id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.code() != Some(0) || run_id.is_empty() {
        return Err(format!(
            "`weft run` did not start it (exit {:?}): {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(run_id)
}

/// The run `top` and its sub-workflows' child runs, at any depth.
fn family<'a>(runs: &'a [RunRecord], top: &str) -> Vec<&'a RunRecord> {
    let parent = |r: &RunRecord| r.options["parent"]["run_id"].as_str().map(str::to_string);
    let mut ids = BTreeSet::from([top.to_string()]);
    loop {
        let more: Vec<String> = runs
            .iter()
            .filter(|r| !ids.contains(&r.id) && parent(r).is_some_and(|p| ids.contains(&p)))
            .map(|r| r.id.clone())
            .collect();
        if more.is_empty() {
            break;
        }
        ids.extend(more);
    }
    runs.iter().filter(|r| ids.contains(&r.id)).collect()
}

/// What is wrong with the runs of `case`, whose run is `run_id`.
fn check_case(case: &Case, run_id: &str, runs: &[RunRecord], store: &Store) -> Vec<String> {
    let mut problems = Vec::new();
    let mut failed_nodes = BTreeSet::new();
    for run in family(runs, run_id) {
        let events = store
            .events(&run.id, 0, None)
            .unwrap_or_else(|e| panic!("{e}"));
        let label = if run.id == run_id {
            "run".to_string()
        } else {
            format!("child run {} ({})", run.id, run.workflow_name)
        };
        check_agent_stages(&label, run, &events, &mut problems);
        let mut failed_here = false;
        for (node, visit, handler, why) in failed_stages(&events) {
            failed_here = true;
            let expected = EXPECTED_FAILURES
                .iter()
                .any(|(w, n, _)| *w == case.name && *n == node);
            if !expected {
                problems.push(format!(
                    "{label}: {handler} stage {node}@{visit} failed: {why}"
                ));
            }
            failed_nodes.insert(node);
        }
        match run.status {
            RunStatus::Succeeded => {}
            RunStatus::Failed if failed_here => {}
            status => problems.push(format!(
                "{label} ended {status}: {}",
                run.failure_reason.as_deref().unwrap_or("(no reason)")
            )),
        }
    }
    for (_, node, _) in EXPECTED_FAILURES.iter().filter(|(w, _, _)| *w == case.name) {
        if !failed_nodes.contains(*node) {
            problems.push(format!(
                "{node} was expected to fail (EXPECTED_FAILURES) but did not"
            ));
        }
    }
    problems
}

fn has_ended(run: &RunRecord) -> bool {
    matches!(
        run.status,
        RunStatus::Succeeded | RunStatus::Failed | RunStatus::Cancelled
    )
}

/// Waits until every run of `home` has ended, `started` among them, or
/// [`RUN_DEADLINE`] has passed, and returns them all.
fn wait_until_all_ended(home: &Home, started: &[&str]) -> Vec<RunRecord> {
    let deadline = Instant::now() + RUN_DEADLINE;
    loop {
        let runs = Store::open_read_only(home)
            .and_then(|s| s.list_runs(&RunFilter::default()))
            .unwrap_or_default();
        let all_there = started.iter().all(|id| runs.iter().any(|r| r.id == *id));
        if (all_there && runs.iter().all(has_ended)) || Instant::now() >= deadline {
            return runs;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Every agent stage that started ran the loop: a turn, tool calls that
/// succeeded, `files_touched` as its writes, a transcript that ends
/// `completed`.
fn check_agent_stages(label: &str, run: &RunRecord, events: &[Event], problems: &mut Vec<String>) {
    let at = |e: &Event, node: &str, visit: u32| {
        e.node_id.as_deref() == Some(node) && e.visit == Some(visit)
    };
    let run_dir = RunDir::open(&run.run_dir);
    for started in events {
        let EventKind::StageStarted { handler, .. } = &started.kind else {
            continue;
        };
        if handler != "agent" {
            continue;
        }
        let (Some(node), Some(visit)) = (started.node_id.as_deref(), started.visit) else {
            continue;
        };
        let turns = events
            .iter()
            .filter(|e| at(e, node, visit) && matches!(e.kind, EventKind::AgentTurnStarted { .. }))
            .count();
        // The fake's one call reads the work dir's README.md: an error
        // would mean the agent works somewhere else.
        let mut tools = 0;
        let mut written = BTreeSet::new();
        let mut outcome = None;
        for e in events.iter().filter(|e| at(e, node, visit)) {
            match &e.kind {
                EventKind::AgentToolCompleted {
                    tool,
                    is_error,
                    preview,
                    touched,
                    ..
                } => {
                    tools += 1;
                    written.extend(touched.iter().cloned());
                    if *is_error {
                        problems.push(format!(
                            "{label}: agent stage {node}@{visit}: {tool} failed: {preview}"
                        ));
                    }
                }
                EventKind::StageCompleted { outcome: o, .. }
                | EventKind::StageFailed { outcome: o, .. } => outcome = Some(o),
                _ => {}
            }
        }
        // What the writes touched is the stage's files_touched.
        if let Some(outcome) = outcome {
            let touched: BTreeSet<String> = outcome.files_touched.iter().cloned().collect();
            if touched != written {
                problems.push(format!(
                    "{label}: agent stage {node}@{visit}: files_touched {touched:?}, but its \
                     writes touched {written:?}"
                ));
            }
        }
        if turns == 0 {
            problems.push(format!(
                "{label}: agent stage {node}@{visit} started no turn"
            ));
        }
        if tools == 0 {
            problems.push(format!(
                "{label}: agent stage {node}@{visit} completed no tool call"
            ));
        }
        let transcript = run_dir.node_dir(node, visit).join("transcript.jsonl");
        match std::fs::read_to_string(&transcript) {
            Err(e) => problems.push(format!(
                "{label}: agent stage {node}@{visit}: {}: {e}",
                transcript.display()
            )),
            Ok(text) => {
                let last: Value = text
                    .lines()
                    .rfind(|l| !l.trim().is_empty())
                    .and_then(|l| serde_json::from_str(l).ok())
                    .unwrap_or_default();
                if last["type"] != "end" || last["reason"] != "completed" {
                    problems.push(format!(
                        "{label}: agent stage {node}@{visit}: the transcript does not end \
                         `completed`: {last}"
                    ));
                }
            }
        }
    }
}

/// (node, visit, handler, reason) of each `stage.failed`.
fn failed_stages(events: &[Event]) -> Vec<(String, u32, String, String)> {
    let handlers: Vec<(Option<&str>, Option<u32>, &str)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::StageStarted { handler, .. } => {
                Some((e.node_id.as_deref(), e.visit, handler.as_str()))
            }
            _ => None,
        })
        .collect();
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::StageFailed { outcome, .. } => {
                let node = e.node_id.clone().unwrap_or_default();
                let visit = e.visit.unwrap_or_default();
                let handler = handlers
                    .iter()
                    .rev()
                    .find(|(n, v, _)| *n == Some(node.as_str()) && *v == Some(visit))
                    .map_or("?", |(_, _, h)| *h)
                    .to_string();
                let why = outcome
                    .failure
                    .as_ref()
                    .map_or_else(|| "(no reason)".to_string(), |f| f.message.clone());
                Some((node, visit, handler, why))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn the_agent_workflows_of_the_reference_docs_and_the_examples_run_to_completion() {
    let mut problems = Vec::new();
    let mut cases = block_cases(&mut problems);
    let blocks = cases.len();
    cases.extend(example_cases());
    let examples = cases.len() - blocks;
    let names: BTreeSet<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    for (workflow, _, _) in STUBS {
        if !names.contains(workflow) {
            problems.push(format!("STUBS names {workflow}, which is not run"));
        }
    }
    for (workflow, _, _) in EXPECTED_FAILURES {
        if !names.contains(workflow) {
            problems.push(format!(
                "EXPECTED_FAILURES names {workflow}, which is not run"
            ));
        }
    }

    // One weftd runs them all at once, as it would for a user launching
    // several runs: the first `weft run` starts it.
    let fake = FakeLlm::start();
    let sb = Sandbox::new();
    let mut started = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        match start_case(&sb, index, case, &fake) {
            Ok(run_id) => started.push((index, case, run_id)),
            Err(why) => problems.push(format!("{} ({}): {why}", case.name, case.origin)),
        }
    }
    let ids: Vec<&str> = started.iter().map(|(_, _, id)| id.as_str()).collect();
    let home = Home::at(sb.path().join("home"));
    let runs = wait_until_all_ended(&home, &ids);
    let store = Store::open_read_only(&home).unwrap_or_else(|e| panic!("{e}"));
    for (index, case, run_id) in &started {
        let going: Vec<String> = family(&runs, run_id)
            .into_iter()
            .filter(|r| !has_ended(r))
            .map(|r| format!("{} ({}) is {}", r.id, r.workflow_name, r.status))
            .collect();
        let found = if !runs.iter().any(|r| r.id == *run_id) {
            vec![format!("its run {run_id} is not in the store")]
        } else if !going.is_empty() {
            vec![format!(
                "did not end within {}s: {}",
                RUN_DEADLINE.as_secs(),
                going.join(", ")
            )]
        } else {
            let mut found = check_case(case, run_id, &runs, &store);
            // The edits landed in the work dir the run was given.
            let readme = sb.path().join(format!("case{index}/work/README.md"));
            let text = std::fs::read_to_string(&readme).unwrap_or_default();
            if !text.contains(&format!("{README_LAST_LINE}\nEdited by an agent.")) {
                found.push(format!("no agent edit in {}: {text:?}", readme.display()));
            }
            found
        };
        problems.extend(
            found
                .into_iter()
                .map(|p| format!("{} ({}): {p}", case.name, case.origin)),
        );
    }

    println!(
        "ran {} agent workflows: {blocks} from the reference docs, {examples} from examples/",
        cases.len()
    );
    for case in &cases {
        println!("  {}", case.name);
    }
    assert!(
        blocks >= 10 && examples >= 5,
        "only {blocks} docs blocks and {examples} examples have agent stages; is the selection broken?"
    );
    problems.sort();
    assert!(
        problems.is_empty(),
        "{} problem(s) running the agent workflows:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The fake model reads each wire's own shape of tools and tool results:
/// two reads first, then `shell`, then `write_file`, then `edit_file` or
/// `apply_patch`, then the final text;
/// text at once when no tools are offered, and no step whose tool is not.
#[test]
fn the_fake_model_steps_through_its_tools_on_every_wire() {
    let recorded = |provider: Wire, body: Value| Recorded {
        method: "POST".into(),
        path: "/".into(),
        headers: Vec::new(),
        body,
        provider,
    };
    let names = ["read_file", "glob", "shell", "write_file", "edit_file"];
    let flat: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
    let chat: Vec<Value> = names
        .iter()
        .map(|n| json!({"type": "function", "function": {"name": n}}))
        .collect();
    let gemini = json!([{"functionDeclarations": flat}]);
    // (wire, tools, a conversation holding `n` tool results)
    type Conversation = fn(usize) -> Value;
    let wires: [(Wire, Value, Conversation); 4] = [
        (Wire::Anthropic, json!(flat), |n| {
            let results =
                vec![json!({"type": "tool_result", "tool_use_id": "t", "content": "x"}); n];
            json!({"messages": [{"role": "user", "content": "go"}, {"role": "user", "content": results}]})
        }),
        (Wire::OpenAiResponses, json!(flat), |n| {
            let mut input = vec![json!({"role": "user", "content": "go"})];
            input.extend(vec![
                json!({"type": "function_call_output", "call_id": "c", "output": "x"});
                n
            ]);
            json!({"input": input})
        }),
        (Wire::OpenAiChat, json!(chat), |n| {
            let mut messages = vec![json!({"role": "user", "content": "go"})];
            messages.extend(vec![
                json!({"role": "tool", "tool_call_id": "c", "content": "x"});
                n
            ]);
            json!({"messages": messages})
        }),
        (Wire::Gemini, gemini, |n| {
            let results =
                vec![json!({"functionResponse": {"name": "read_file", "response": {}}}); n];
            json!({"contents": [{"role": "user", "parts": [{"text": "go"}]}, {"role": "user", "parts": results}]})
        }),
    ];
    let called = |reply: Reply| match reply {
        Reply::ToolCalls(calls) => calls.into_iter().map(|c| c.name).collect(),
        Reply::Text(text) => vec![text],
        other => panic!("unexpected reply {other:?}"),
    };
    for (wire, tools, conversation) in wires {
        let sessions = AtomicUsize::new(0);
        let ask = |results: usize, tools: &Value| {
            let mut body = conversation(results);
            body["tools"] = tools.clone();
            called(model(&recorded(wire, body), &sessions))
        };
        assert_eq!(ask(0, &tools), ["read_file", "glob"], "{wire:?}: first");
        assert_eq!(ask(2, &tools), ["shell"], "{wire:?}: after the reads");
        assert_eq!(ask(3, &tools), ["write_file"], "{wire:?}: after shell");
        assert_eq!(ask(4, &tools), ["edit_file"], "{wire:?}: after the write");
        assert_eq!(ask(5, &tools), [FINAL_TEXT], "{wire:?}: after the edit");
        let patching: Value =
            serde_json::from_str(&tools.to_string().replace("edit_file", "apply_patch"))
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            ask(4, &patching),
            ["apply_patch"],
            "{wire:?}: OpenAI's edit tool"
        );
        assert_eq!(ask(0, &json!([])), [FINAL_TEXT], "{wire:?}: a prompt node");
        let read_only = match wire {
            Wire::Gemini => {
                json!([{"functionDeclarations": [{"name": "read_file"}, {"name": "glob"}]}])
            }
            _ => json!([{"name": "read_file"}, {"name": "glob"}]),
        };
        assert_eq!(ask(2, &read_only), [FINAL_TEXT], "{wire:?}: read-only");
    }
}
