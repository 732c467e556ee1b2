//! The UI's recorded fixtures (`ui/src/api/fixtures/recorded.json`): real
//! workflows run by the real CLI into one home, then dumped through
//! `weft::views::Views` exactly as the app's backend would return
//! them. The browser tests run the UI on this data, so it must be what the
//! engine really produces.
//!
//! With `WEFT_UPDATE_FIXTURES=1` the file is rewritten; otherwise the test
//! checks that the committed file still has the same shape (the same runs by
//! workflow and status, the same JSON keys in each view, the same spending
//! and retros). Ids and times
//! differ on every recording, so bytes are not compared.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use weft::ipc::protocol::RunList;
use weft::store::{Home, SpendingQuery};
use weft::views::Views;
use weft_fakellm::{FakeLlm, Reply, ToolCall, Usage};
use weft_tests::{Run, Sandbox, binary};

const STALE: &str = "UI fixtures are stale: run `WEFT_UPDATE_FIXTURES=1 cargo nextest run -p weft-tests --test it ui_fixtures`";

/// Provider variables of the real environment that must not leak in.
const PROVIDER_VARS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "GEMINI_BASE_URL",
];

/// Where the sandbox's paths are shown in the fixtures: stable, and what a
/// user's machine would look like.
const HOME_PLACEHOLDER: &str = "/home/me/.weft";
const PROJECT_PLACEHOLDER: &str = "/home/me/projects/shop";

fn fixtures_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/src/api/fixtures/recorded.json")
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Where the scripted ACP agent's binary is shown in the fixtures.
const AGENT_BIN_PLACEHOLDER: &str = "/usr/local/bin";

/// `weft` in the sandbox, with no provider settings from the real
/// environment. The daemon inherits the environment of the command that
/// starts it, so every command names the scripted ACP agent's script.
fn weft(sb: &Sandbox) -> Command {
    let mut cmd = sb.weft();
    for var in PROVIDER_VARS {
        cmd.env_remove(var);
    }
    cmd.env("WEFT_ACP_SCRIPT", sb.path().join("acp-script.json"));
    cmd
}

fn run(mut cmd: Command, args: &[&str]) -> Run {
    Run::from(
        cmd.args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run weft: {e}")),
    )
}

/// Runs a workflow in this process (`--no-daemon --json`) and returns its
/// conclusion.
fn run_here(cmd: Command, file: &str, extra: &[&str], expect_code: i32) -> Value {
    let mut args = vec!["run", "--no-daemon", "--json", file];
    args.extend_from_slice(extra);
    let out = run(cmd, &args);
    assert_eq!(out.code, expect_code, "{file}: {out:?}");
    json_of(&out.stdout)
}

/// Waits until `done` holds, polling.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Records the varied history the runs screen shows, newest last.
fn record_history(sb: &Sandbox, fake: &FakeLlm) {
    // A pipeline whose test stage fails once and succeeds on its retry.
    sb.write(
        "release.fabro",
        r#"digraph Release { graph [goal="Build, test and package the shop service"]
           start [shape=Mdiamond]; exit [shape=Msquare]
           build [shape=parallelogram, script="echo compiling shop v1.4.2; echo built target/shop"]
           test [shape=parallelogram, max_retries=2,
                 script="if [ -f .flaky-once ]; then echo '42 passed'; else touch .flaky-once; echo 'test_checkout timed out' >&2; exit 1; fi"]
           package [shape=parallelogram, script="sh report.sh"]
           start -> build -> test -> package -> exit }"#,
    );
    // Its package stage writes reports, captured as artifacts (one of each
    // preview: markdown, JSON, HTML, an image, plain text).
    sb.write(
        "report.sh",
        r##"echo packaged shop-1.4.2.tar.gz
mkdir -p reports
printf '# Release 1.4.2\n\n- 42 tests passed\n- package: `shop-1.4.2.tar.gz`\n' > reports/summary.md
printf '{"passed": 42, "failed": 0, "flaky": ["test_checkout"]}\n' > reports/tests.json
printf '<!doctype html><h1>Coverage</h1><p>81.4%% of lines</p>\n' > reports/coverage.html
printf '<svg xmlns="http://www.w3.org/2000/svg" width="90" height="20"><rect width="90" height="20" fill="#2e7d32"/><text x="8" y="14" fill="#fff" font-size="11">tests 42/42</text></svg>\n' > reports/badge.svg
printf 'shop-1.4.2.tar.gz 1834 KiB\n' > reports/package.txt
"##,
    );
    sb.write(
        "release.toml",
        "[workflow]\ngraph = \"release.fabro\"\n[run.artifacts]\ninclude = [\"reports/**\"]\n",
    );
    let c = run_here(
        weft(sb),
        "release.toml",
        &["--label", "release", "--label", "nightly"],
        0,
    );
    assert_eq!(c["status"], "succeeded", "{c}");

    // A deploy whose command exits 1: a failed run with a failure reason.
    sb.write(
        "deploy.fabro",
        r#"digraph Deploy { graph [goal="Deploy the shop to staging", on_failure="exit"]
           start [shape=Mdiamond]; exit [shape=Msquare]
           push [shape=parallelogram, script="echo connecting to staging.internal; echo 'error: host unreachable' >&2; exit 1"]
           start -> push -> smoke -> exit
           smoke [shape=parallelogram, script="echo smoke tests"] }"#,
    );
    // Its retro (`--retro`), narrated by the fake OpenAI server: a run
    // that failed, rated so.
    let key = format!("sk-ui-fixtures-deploy-{}", std::process::id());
    fake.script(&key, [narrative(DEPLOY_RETRO, 2_100, 310)]);
    let c = run_here(
        openai(weft(sb), fake, &key),
        "deploy.fabro",
        &["--label", "staging", "--retro", "--model", "gpt-5-mini"],
        1,
    );
    assert_eq!(c["status"], "failed", "{c}");

    // A prompt node against the fake Anthropic server: usage and cost.
    let key = format!("sk-ui-fixtures-{}", std::process::id());
    fake.script(
        &key,
        [Reply::Turn {
            text: Some(
                "The shop service is a small HTTP API with a checkout flow and a nightly release pipeline."
                    .into(),
            ),
            tool_calls: Vec::new(),
            usage: Some(Usage {
                input: 8_200,
                output: 950,
                ..Usage::default()
            }),
            finish: None,
        }],
    );
    sb.write(
        "summarize.fabro",
        r#"digraph Summarize { graph [goal="Summarize the repository for the README"]
           start [shape=Mdiamond]; exit [shape=Msquare]
           summarize [shape=tab, prompt="Summarize this repository: {{ goal }}"]
           start -> summarize -> exit }"#,
    );
    let mut cmd = weft(sb);
    cmd.env("ANTHROPIC_API_KEY", &key)
        .env("ANTHROPIC_BASE_URL", fake.url());
    let c = run_here(
        cmd,
        "summarize.fabro",
        &["--model", "claude-haiku-4-5", "--label", "docs"],
        0,
    );
    assert_eq!(c["status"], "succeeded", "{c}");

    // A prompt node on an OpenAI model (the spending's second model), with
    // a retro made by the same model once the run has succeeded.
    record_triage_with_retro(sb, fake);

    // An agent stage against the fake Anthropic server: it reads a file,
    // has a write refused (read-before-write), rewrites the file it read,
    // reads it back and reports; the app's transcript panel and tool-call
    // ticks show it.
    record_agent_run(sb, fake);

    // A run in a git repository: each stage's changes are a commit and a
    // diff.patch, the run's a final.patch (the Files Changed view).
    record_checkpointed_run(sb);

    // A parallel fan-out over three checks, joined again.
    sb.write(
        "checks.fabro",
        r#"digraph Checks { graph [goal="Lint, type-check and audit in parallel"]
           start [shape=Mdiamond]; exit [shape=Msquare]
           fork [shape=component]
           lint [shape=parallelogram, script="echo lint: 0 warnings"]
           types [shape=parallelogram, script="echo types: ok"]
           audit [shape=parallelogram, script="echo audit: 0 vulnerabilities"]
           merge [shape=tripleoctagon]
           start -> fork
           fork -> lint; fork -> types; fork -> audit
           lint -> merge; types -> merge; audit -> merge
           merge -> exit }"#,
    );
    let c = run_here(weft(sb), "checks.fabro", &[], 0);
    assert_eq!(c["status"], "succeeded", "{c}");

    // A long migration, started in the daemon and cancelled mid-stage.
    sb.write(
        "migrate.fabro",
        r#"digraph Migrate { graph [goal="Migrate the orders table"]
           start [shape=Mdiamond]; exit [shape=Msquare]
           backfill [shape=parallelogram, script="echo backfilling orders; sleep 30"]
           start -> backfill -> exit }"#,
    );
    let started = run(weft(sb), &["run", "migrate.fabro", "--detach", "--json"]);
    assert_eq!(started.code, 0, "{started:?}");
    let cancel_id = json_of(&started.stdout)["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // Until its first output line, so that the recorded history has it.
    wait_for("the migration's stage to print", || {
        let events = run(weft(sb), &["events", &cancel_id, "--json"]);
        events.stdout.contains("\"stage.started\"") && events.stdout.contains("backfilling orders")
    });
    let cancelled = run(weft(sb), &["cancel", &cancel_id]);
    assert_eq!(cancelled.code, 0, "{cancelled:?}");
    let followed = run(weft(sb), &["events", &cancel_id, "--follow"]);
    assert!(
        followed.stdout.contains("run.cancelled"),
        "the run ended cancelled: {followed:?}"
    );

    // An agent still working in the daemon, waiting on its model.
    record_running_agent(sb, fake);

    // An external agent waiting on a person to allow a command.
    record_permission_request(sb);

    // A release waiting at a human gate, left waiting.
    sb.write(
        "ship.fabro",
        r#"digraph Ship { graph [goal="Ship release 1.4.2 to production"]
           start [shape=Mdiamond]; exit [shape=Msquare]
           notes [shape=parallelogram, script="echo 'release notes: 3 fixes, 1 feature'"]
           approve [shape=hexagon, label="Ship 1.4.2 to production?"]
           ship [shape=parallelogram, script="echo shipped"]
           start -> notes -> approve
           approve -> ship [label="[S] Ship"]
           approve -> exit [label="[H] Hold"]
           ship -> exit }"#,
    );
    let started = run(
        weft(sb),
        &[
            "run",
            "ship.fabro",
            "--detach",
            "--json",
            "--label",
            "release",
        ],
    );
    assert_eq!(started.code, 0, "{started:?}");
    wait_for("the gate's question", || {
        let listed = run(weft(sb), &["questions", "--json"]);
        listed.code == 0
            && json_of(&listed.stdout)
                .as_array()
                .is_some_and(|a| a.iter().any(|q| q["node_id"] == "approve"))
    });
}

/// The narrative the fake provider gives the failed deploy's retro.
const DEPLOY_RETRO: &str = r#"{"smoothness": "failed",
    "intent": "Deploy the shop to staging",
    "outcome": "The push could not reach staging.internal, so nothing was deployed and the smoke tests never ran",
    "learnings": [{"category": "workflow", "text": "the deploy has no reachability check before it pushes"}],
    "friction_points": [{"kind": "tool_failure", "description": "staging.internal was unreachable", "stage": "push"}],
    "open_items": [{"kind": "investigation", "description": "find out why staging.internal stopped answering"}]}"#;

/// The narrative the fake provider gives the triage run's retro.
const TRIAGE_RETRO: &str = r#"Looking back at the run: {"smoothness": "smooth",
    "intent": "Triage the open checkout bug reports",
    "outcome": "Three reports were sorted by severity; the coupon rounding bug comes first",
    "learnings": [{"category": "code", "text": "coupon totals are rounded per line, not per order"}],
    "friction_points": [{"kind": "ambiguity", "description": "two reports describe the same timeout in different words", "stage": "triage"}],
    "open_items": [{"kind": "test_gap", "description": "no test covers a coupon on a multi-line order"},
                   {"kind": "follow_up", "description": "merge the duplicate timeout reports"}]}"#;

/// A reply carrying a retro's narrative, with its usage.
fn narrative(text: &str, input: u64, output: u64) -> Reply {
    Reply::Turn {
        text: Some(text.into()),
        tool_calls: Vec::new(),
        usage: Some(Usage {
            input,
            output,
            ..Usage::default()
        }),
        finish: None,
    }
}

/// `cmd` with the fake OpenAI server as its provider, under `key`.
fn openai(mut cmd: Command, fake: &FakeLlm, key: &str) -> Command {
    cmd.env("OPENAI_API_KEY", key)
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.url()));
    cmd
}

/// A prompt node answered as `gpt-5.2` by the fake OpenAI server, then the
/// run's retro (`--retro`, made in this process before `weft run` returns)
/// by the same model: the Retro section's and Retros page's data.
fn record_triage_with_retro(sb: &Sandbox, fake: &FakeLlm) {
    let key = format!("sk-ui-fixtures-triage-{}", std::process::id());
    fake.script(
        &key,
        [
            Reply::Turn {
                text: Some(
                    "1. Coupon totals are off by a cent on multi-line orders (high).\n2. Checkout times out under load (medium; reported twice).\n3. The receipt e-mail has a typo (low)."
                        .into(),
                ),
                tool_calls: Vec::new(),
                usage: Some(Usage {
                    input: 4_300,
                    output: 780,
                    ..Usage::default()
                }),
                finish: None,
            },
            narrative(TRIAGE_RETRO, 1_600, 240),
        ],
    );
    sb.write(
        "triage.fabro",
        r#"digraph Triage { graph [goal="Triage the open checkout bug reports"]
           start [shape=Mdiamond]; exit [shape=Msquare]
           triage [shape=tab, prompt="Sort these bug reports by severity: {{ goal }}"]
           start -> triage -> exit }"#,
    );
    let c = run_here(
        openai(weft(sb), fake, &key),
        "triage.fabro",
        &["--model", "gpt-5.2", "--retro", "--label", "bugs"],
        0,
    );
    assert_eq!(c["status"], "succeeded", "{c}");
    assert_eq!(fake.requests(&key).len(), 2, "the prompt and the retro");
}

/// An external agent (`backend="acp"`, the scripted `weft-acp-agent` in
/// Claude's name) left waiting in the daemon on its permission request
/// under `acp.permissions="ask"`: the app shows it as a permission request.
fn record_permission_request(sb: &Sandbox) {
    sb.write(
        "Cargo.toml",
        "[package]\nname = \"shop\"\nversion = \"1.4.2\"\n",
    );
    sb.write(
        "acp-script.json",
        json!({"prompts": [[
            {"say": "The changelog is ready. Checking that the crate packages before publishing."},
            {"permission": {
                "title": "Run cargo publish --dry-run",
                "kind": "execute",
                "path": "Cargo.toml",
                "input": {
                    "command": "cargo publish --dry-run",
                    "description": "Check that shop 1.4.2 packages and would upload"
                }
            }}
        ]]})
        .to_string(),
    );
    sb.write(
        "publish.fabro",
        format!(
            r#"digraph Publish {{ graph [goal="Publish shop 1.4.2 to the registry"]
               start [shape=Mdiamond]; exit [shape=Msquare]
               publish [shape=box, backend="acp", acp.agent="claude", acp.command="{}",
                        acp.permissions="ask", acp.permission_timeout="1h",
                        prompt="Publish the crate: {{{{ goal }}}}"]
               start -> publish -> exit }}"#,
            binary("weft-acp-agent").display()
        ),
    );
    let started = run(weft(sb), &["run", "publish.fabro", "--detach", "--json"]);
    assert_eq!(started.code, 0, "{started:?}");
    wait_for("the agent's permission question", || {
        let listed = run(weft(sb), &["questions", "--json"]);
        listed.code == 0
            && json_of(&listed.stdout)
                .as_array()
                .is_some_and(|a| a.iter().any(|q| q["permission"].is_object()))
    });
}

/// An agent stage left running in the daemon, its second model call
/// unanswered: the app shows a live transcript and the steering box.
fn record_running_agent(sb: &Sandbox, fake: &FakeLlm) {
    sb.write("todo.txt", "- tidy the imports\n");
    let key = format!("sk-ui-fixtures-running-{}", std::process::id());
    fake.script(
        &key,
        [
            Reply::Turn {
                text: Some("Let me see what is left to do.".into()),
                tool_calls: vec![ToolCall::new(
                    "toolu_todo",
                    "read_file",
                    json!({"file_path": "todo.txt"}),
                )],
                usage: Some(Usage {
                    input: 1_900,
                    output: 45,
                    ..Usage::default()
                }),
                finish: None,
            },
            Reply::Hang,
        ],
    );
    sb.write(
        "tidy.fabro",
        r#"digraph Tidy { graph [goal="Work through todo.txt"]
           start [shape=Mdiamond]; exit [shape=Msquare]
           tidy [shape=box, prompt="{{ goal }}"]
           start -> tidy -> exit }"#,
    );
    let mut cmd = weft(sb);
    cmd.env("ANTHROPIC_API_KEY", &key)
        .env("ANTHROPIC_BASE_URL", fake.url());
    let started = run(
        cmd,
        &[
            "run",
            "tidy.fabro",
            "--detach",
            "--json",
            "--model",
            "claude-haiku-4-5",
        ],
    );
    assert_eq!(started.code, 0, "{started:?}");
    let id = json_of(&started.stdout)["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // Until the second model call is under way: the first turn and its
    // tool call are recorded, and the agent waits on the model.
    wait_for("the agent's second model call", || {
        fake.requests(&key).len() >= 2 && {
            let events = run(weft(sb), &["events", &id, "--json"]);
            events.stdout.matches("\"agent.turn.started\"").count() >= 2
        }
    });
}

/// An agent stage's whole session, scripted turn by turn on the fake
/// Anthropic server: real tool calls on real files in the sandbox.
fn record_agent_run(sb: &Sandbox, fake: &FakeLlm) {
    sb.write("calc.py", "def add(a, b):\n    return a - b\n");
    sb.write("NOTES.md", "# Notes\n");
    let key = format!("sk-ui-fixtures-agent-{}", std::process::id());
    let usage = |input, output| {
        Some(Usage {
            input,
            output,
            ..Usage::default()
        })
    };
    fake.script(
        &key,
        [
            Reply::Turn {
                text: Some("I'll read `calc.py` first to see what `add` does.".into()),
                tool_calls: vec![ToolCall::new(
                    "toolu_read",
                    "read_file",
                    json!({"file_path": "calc.py"}),
                )],
                usage: usage(2_400, 60),
                finish: None,
            },
            Reply::Turn {
                text: Some(
                    "`add` **subtracts**. I'll note the bug and fix it:\n\n- `NOTES.md`: the finding\n- `calc.py`: the fix"
                        .into(),
                ),
                tool_calls: vec![
                    ToolCall::new(
                        "toolu_note",
                        "write_file",
                        json!({"file_path": "NOTES.md", "content": "# Notes\n\n- add() subtracted\n"}),
                    ),
                    ToolCall::new(
                        "toolu_fix",
                        "write_file",
                        json!({"file_path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}),
                    ),
                ],
                usage: usage(3_100, 140),
                finish: None,
            },
            Reply::Turn {
                text: Some("Checking the result.".into()),
                tool_calls: vec![ToolCall::new(
                    "toolu_check",
                    "read_file",
                    json!({"file_path": "calc.py"}),
                )],
                usage: usage(3_600, 40),
                finish: None,
            },
            Reply::Turn {
                text: Some(
                    "Fixed `add` in `calc.py`: it returned `a - b`.\n\nI did not change `NOTES.md`: it was not read first."
                        .into(),
                ),
                tool_calls: Vec::new(),
                usage: usage(3_900, 70),
                finish: None,
            },
        ],
    );
    sb.write(
        "fix.fabro",
        r#"digraph Fix { graph [goal="Fix the add function in calc.py"]
           start [shape=Mdiamond]; exit [shape=Msquare]
           fix [shape=box, prompt="{{ goal }}"]
           start -> fix -> exit }"#,
    );
    let mut cmd = weft(sb);
    cmd.env("ANTHROPIC_API_KEY", &key)
        .env("ANTHROPIC_BASE_URL", fake.url());
    let c = run_here(cmd, "fix.fabro", &["--model", "claude-haiku-4-5"], 0);
    assert_eq!(c["status"], "succeeded", "{c}");
    let run_id = c["run_id"].as_str().unwrap_or_default();
    assert_eq!(
        std::fs::read_to_string(sb.path().join("calc.py")).unwrap_or_default(),
        "def add(a, b):\n    return a + b\n",
        "the agent's write reached the file; its events:\n{}",
        run(weft(sb), &["events", run_id]).stdout
    );
}

/// A run in checkpoint mode in the repository `{sandbox}/shop-repo`: one
/// stage renames a module, edits a file and adds a binary one, one changes
/// nothing, one appends to the README and deletes a file.
fn record_checkpointed_run(sb: &Sandbox) {
    let root = sb.path().join("shop-repo");
    let files = [
        ("README.md", "# Shop\n\nA small shop service.\n"),
        (
            "main.py",
            "from util import total\n\nprint(total([1, 2, 3]))\n",
        ),
        ("util.py", "def total(prices):\n    return sum(prices)\n"),
        ("TODO.txt", "- move util into src/\n"),
    ];
    weft_tests::git_repo(&root, &files);
    sb.write(
        "refactor.fabro",
        r#"digraph Refactor { graph [goal="Move util into src/ and document it"]
           start [shape=Mdiamond]; exit [shape=Msquare]
           move [shape=parallelogram, script="mkdir -p src && mv util.py src/util.py && sed -i 's/from util/from src.util/' main.py && printf '\\211PNG\\r\\n\\032\\n' > logo.png && head -c 16 /dev/zero >> logo.png"]
           check [shape=parallelogram, script="echo 'total: 6'"]
           docs [shape=parallelogram, script="printf '\\n## Usage\\n\\n    python3 main.py\\n' >> README.md && rm TODO.txt"]
           start -> move -> check -> docs -> exit }"#,
    );
    let c = run_here(weft(sb), "refactor.fabro", &["--work-dir", "shop-repo"], 0);
    assert_eq!(c["status"], "succeeded", "{c}");
}

/// The filtered run-list queries the UI's tests make, recorded with the
/// store's answers (`pages`): the test host serves these instead of
/// filtering runs itself. The runs screen asks 200 runs at a time and hides
/// archived ones unless asked; a test's own call may name fewer fields.
fn recorded_queries() -> Vec<Value> {
    let screen = |filter: Value| {
        let mut query = json!({"limit": 200, "offset": 0, "archived": false});
        if let (Some(query), Some(filter)) = (query.as_object_mut(), filter.as_object()) {
            query.extend(filter.clone());
        }
        query
    };
    vec![
        json!({"status": "failed"}),
        screen(json!({"status": "failed"})),
        screen(json!({"workflow": "Release"})),
        screen(json!({"text": "orders"})),
        screen(json!({"text": "zzz-no-such-run"})),
        screen(json!({"label": "release"})),
    ]
}

/// What the app's backend returns for every run: the `Fixtures` object of
/// `ui/src/api/fixtures/index.ts`.
fn dump(home: &Home) -> Value {
    let views = Views::open(home).unwrap_or_else(|e| panic!("{e}"));
    let page = views
        .runs(&RunList::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut run_views = Vec::new();
    let mut events = Map::new();
    let mut stage_files = Map::new();
    let mut questions = Vec::new();
    let mut artifacts = Map::new();
    let mut changes = Map::new();
    for summary in &page.runs {
        let view = views.run(&summary.id).unwrap_or_else(|e| panic!("{e}"));
        let run_events = views
            .events(&summary.id, 0, 10_000)
            .unwrap_or_else(|e| panic!("{e}"));
        events.insert(summary.id.clone(), json!(run_events));
        for stage in &view.stages {
            let files = views
                .stage_files(&summary.id, &stage.node_id, stage.visit)
                .unwrap_or_else(|e| panic!("{e}"));
            stage_files.insert(
                format!("{}/{}/{}", summary.id, stage.node_id, stage.visit),
                json!(files),
            );
        }
        for artifact in &view.artifacts {
            let content = views
                .artifact(&summary.id, &artifact.path)
                .unwrap_or_else(|e| panic!("{e}"));
            artifacts.insert(format!("{}/{}", summary.id, artifact.path), json!(content));
        }
        if view.git.is_some() {
            let run_changes = views
                .run_changes(&summary.id)
                .unwrap_or_else(|e| panic!("{e}"));
            changes.insert(summary.id.clone(), json!(run_changes));
            for stage in &view.stages {
                let stage_changes = views
                    .stage_changes(&summary.id, &stage.node_id, stage.visit)
                    .unwrap_or_else(|e| panic!("{e}"));
                changes.insert(
                    format!("{}/{}/{}", summary.id, stage.node_id, stage.visit),
                    json!(stage_changes),
                );
            }
        }
        questions.extend(view.questions.iter().map(|q| json!(q)));
        run_views.push(json!(view));
    }
    let pages: Vec<Value> = recorded_queries()
        .into_iter()
        .map(|query| {
            let list: RunList = serde_json::from_value(query.clone())
                .unwrap_or_else(|e| panic!("{query} is a run-list query: {e}"));
            let page = views.runs(&list).unwrap_or_else(|e| panic!("{e}"));
            json!({"query": query, "page": page})
        })
        .collect();
    // The Spending view's answer over all time (the test host serves it
    // whatever window the screen asks for).
    let spending = views
        .spending(&SpendingQuery {
            limit: Some(100),
            ..SpendingQuery::default()
        })
        .unwrap_or_else(|e| panic!("{e}"));
    // The Retros page's list, and each retro the Retro section shows.
    let retros = views.retros().unwrap_or_else(|e| panic!("{e}"));
    let mut retro = Map::new();
    for summary in &retros {
        let made = views
            .retro(&summary.run_id)
            .unwrap_or_else(|e| panic!("{e}"));
        retro.insert(summary.run_id.clone(), json!(made));
    }
    json!({
        "retros": retros,
        "retro": retro,
        "spending": spending,
        "views": run_views,
        "events": events,
        "stageFiles": stage_files,
        "questions": questions,
        "artifacts": artifacts,
        "changes": changes,
        "pages": pages,
    })
}

/// The recorded spending's models and runs with their calls and tokens
/// (ids and times differ between recordings, these do not).
fn spending_of(fixtures: &Value) -> Vec<String> {
    let spending = &fixtures["spending"];
    let line = |name: String, spend: &Value| {
        format!(
            "{name}: {} calls {} in {} out {} unpriced",
            spend["calls"], spend["input_tokens"], spend["output_tokens"], spend["unpriced_calls"]
        )
    };
    let mut lines = vec![line("total".into(), &spending["total"])];
    for model in spending["models"].as_array().into_iter().flatten() {
        lines.push(line(
            format!("{}/{}", model["provider"], model["model"]),
            model,
        ));
    }
    for run in spending["runs"].as_array().into_iter().flatten() {
        lines.push(line(format!("run of {}", run["workflow_name"]), run));
    }
    lines
}

/// The recorded retros list, newest first: workflow, run status, rating,
/// friction points and whether it has an error (ids and times differ
/// between recordings, these do not).
fn retros_of(fixtures: &Value) -> Vec<String> {
    fixtures["retros"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            format!(
                "{} {} {} {} friction {}",
                r["workflow_name"],
                r["run_status"],
                r["smoothness"],
                r["friction_count"],
                if r["error"].is_string() {
                    "error"
                } else {
                    "no error"
                }
            )
        })
        .collect()
}

/// Replaces the sandbox's temp paths with placeholders, everywhere.
fn normalise(value: &mut Value, replacements: &[(String, &str)]) {
    match value {
        Value::String(s) => {
            for (from, to) in replacements {
                if s.contains(from.as_str()) {
                    *s = s.replace(from.as_str(), to);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| normalise(v, replacements)),
        Value::Object(map) => map.values_mut().for_each(|v| normalise(v, replacements)),
        _ => {}
    }
}

/// The recorded pages, by what they hold: each query with its runs (by
/// workflow and status) and total. Ids and times differ per recording.
fn pages_of(fixtures: &Value) -> Vec<String> {
    let pages = fixtures["pages"].as_array().cloned().unwrap_or_default();
    pages
        .iter()
        .map(|p| {
            let runs: Vec<String> = p["page"]["runs"]
                .as_array()
                .map(|runs| {
                    runs.iter()
                        .map(|r| format!("{} {}", r["workflow_name"], r["status"]))
                        .collect()
                })
                .unwrap_or_default();
            format!("{} -> {runs:?} of {}", p["query"], p["page"]["total"])
        })
        .collect()
}

/// The shape of a fixtures object, per run (named by workflow and status,
/// in list order): every key path in its view, its events, its stages'
/// files and its questions. Ids and times are values, never keys, so they
/// do not count.
fn shape(fixtures: &Value) -> Vec<(String, BTreeSet<String>)> {
    fn keys(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
        match value {
            Value::Array(items) => {
                let prefix = format!("{prefix}[]");
                for item in items {
                    keys(item, &prefix, out);
                }
            }
            Value::Object(map) => {
                for (k, v) in map {
                    let path = format!("{prefix}.{k}");
                    out.insert(path.clone());
                    keys(v, &path, out);
                }
            }
            _ => {}
        }
    }
    let views = fixtures["views"].as_array().cloned().unwrap_or_default();
    views
        .iter()
        .map(|view| {
            let run = &view["run"];
            let id = run["id"].as_str().unwrap_or_default();
            let mut paths = BTreeSet::new();
            keys(view, "view", &mut paths);
            keys(&fixtures["events"][id], "events", &mut paths);
            if let Some(files) = fixtures["stageFiles"].as_object() {
                for (key, files) in files {
                    if let Some(stage) = key.strip_prefix(&format!("{id}/")) {
                        keys(files, &format!("stageFiles.{stage}"), &mut paths);
                    }
                }
            }
            if let Some(artifacts) = fixtures["artifacts"].as_object() {
                for (key, content) in artifacts {
                    if let Some(path) = key.strip_prefix(&format!("{id}/")) {
                        keys(content, &format!("artifacts.{path}"), &mut paths);
                    }
                }
            }
            if let Some(changes) = fixtures["changes"].as_object() {
                for (key, patch) in changes {
                    if key == id || key.starts_with(&format!("{id}/")) {
                        keys(patch, "changes", &mut paths);
                        // Which stages changed something, and which nothing.
                        paths.insert(format!("changes.state.{}", patch["state"]));
                    }
                }
            }
            if !fixtures["retro"][id].is_null() {
                keys(&fixtures["retro"][id], "retro", &mut paths);
            }
            if let Some(questions) = fixtures["questions"].as_array() {
                for q in questions.iter().filter(|q| q["run_id"] == id) {
                    keys(q, "questions[]", &mut paths);
                }
            }
            (format!("{} {}", run["workflow_name"], run["status"]), paths)
        })
        .collect()
}

#[test]
fn recorded_ui_fixtures_match_what_the_engine_produces() {
    let fake = FakeLlm::start();
    let sb = Sandbox::new();
    record_history(&sb, &fake);

    // The gate's run and the agent's are still in the daemon: dump now,
    // then stop it.
    let home = Home::at(sb.path().join("home"));
    let mut fixtures = dump(&home);
    let stop = run(weft(&sb), &["daemon", "stop"]);
    assert_eq!(stop.code, 0, "{stop:?}");

    let root = sb.path().to_string_lossy().into_owned();
    let agent_dir = binary("weft-acp-agent")
        .parent()
        .map(|dir| dir.to_string_lossy().into_owned())
        .unwrap_or_default();
    normalise(
        &mut fixtures,
        &[
            (agent_dir, AGENT_BIN_PLACEHOLDER),
            (format!("{root}/home"), HOME_PLACEHOLDER),
            (root, PROJECT_PLACEHOLDER),
        ],
    );

    let runs: Vec<String> = shape(&fixtures).into_iter().map(|(run, _)| run).collect();
    for expected in [
        "\"Ship\" \"blocked\"",
        "\"Publish\" \"blocked\"",
        "\"Tidy\" \"running\"",
        "\"Migrate\" \"cancelled\"",
        "\"Checks\" \"succeeded\"",
        "\"Summarize\" \"succeeded\"",
        "\"Fix\" \"succeeded\"",
        "\"Refactor\" \"succeeded\"",
        "\"Deploy\" \"failed\"",
        "\"Release\" \"succeeded\"",
        "\"Triage\" \"succeeded\"",
    ] {
        assert!(
            runs.iter().any(|r| r == expected),
            "the history has {expected}: {runs:?}"
        );
    }
    assert_eq!(runs.len(), 11, "one view per run: {runs:?}");
    let states: BTreeSet<&str> = fixtures["changes"]
        .as_object()
        .map(|c| c.values().filter_map(|c| c["state"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        states.contains("recorded") && states.contains("empty"),
        "the checkpointed run has stages that changed files and one that changed nothing: {states:?}"
    );
    let media: BTreeSet<&str> = fixtures["artifacts"]
        .as_object()
        .map(|a| a.values().filter_map(|c| c["media"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        media,
        BTreeSet::from([
            "application/json",
            "image/svg+xml",
            "text/html",
            "text/markdown",
            "text/plain"
        ]),
        "the release run captured one artifact of each preview kind"
    );
    assert!(
        fixtures["questions"]
            .as_array()
            .is_some_and(|q| q.iter().any(|q| q["status"] == "pending")),
        "the gate's question is still pending"
    );
    assert!(
        fixtures["questions"].as_array().is_some_and(|q| q
            .iter()
            .any(|q| q["status"] == "pending" && q["permission"]["tool_kind"] == "execute")),
        "the agent's permission question is still pending, with its request"
    );
    let pages = pages_of(&fixtures);
    for expected in [
        r#"{"status":"failed"} -> ["\"Deploy\" \"failed\""] of 1"#,
        r#"{"archived":false,"label":"release","limit":200,"offset":0} -> ["\"Ship\" \"blocked\"", "\"Release\" \"succeeded\""] of 2"#,
    ] {
        assert!(
            pages.iter().any(|p| p == expected),
            "the recorded pages hold the store's filtering: {pages:#?}"
        );
    }

    let spent = spending_of(&fixtures);
    assert!(
        spent.len() > 1 && spent.iter().all(|line| line.contains(" calls ")),
        "the spending names each model that answered and each run that called one: {spent:?}"
    );

    let models: BTreeSet<&str> = fixtures["spending"]["models"]
        .as_array()
        .map(|m| m.iter().filter_map(|m| m["provider"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        models,
        BTreeSet::from(["anthropic", "openai"]),
        "the spending has a model of each provider the runs used"
    );
    let retros = retros_of(&fixtures);
    assert_eq!(
        retros,
        [
            "\"Triage\" \"succeeded\" \"smooth\" 1 friction no error",
            "\"Deploy\" \"failed\" \"failed\" 1 friction no error",
        ],
        "the two runs made with --retro have their retros, newest first"
    );
    let triage = fixtures["retros"][0]["run_id"].as_str().unwrap_or_default();
    let retro = &fixtures["retro"][triage];
    assert_eq!(retro["llm"]["model"], "gpt-5.2", "{retro}");
    assert_eq!(
        retro["totals"]["tokens"],
        4_300 + 780,
        "the retro's figures count the run's own stages, not its own call: {retro}"
    );

    let path = fixtures_path();
    if std::env::var_os("WEFT_UPDATE_FIXTURES").is_some_and(|v| v == "1") {
        let mut text = serde_json::to_string_pretty(&fixtures).unwrap_or_else(|e| panic!("{e}"));
        text.push('\n');
        std::fs::write(&path, text)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        return;
    }
    let committed = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .unwrap_or_else(|| panic!("{STALE} ({} is missing or not JSON)", path.display()));
    let want = shape(&fixtures);
    let have = shape(&committed);
    let names = |shape: &[(String, BTreeSet<String>)]| -> Vec<String> {
        shape.iter().map(|(run, _)| run.clone()).collect()
    };
    assert_eq!(names(&have), names(&want), "{STALE} (the runs differ)");
    assert_eq!(
        pages_of(&committed),
        pages_of(&fixtures),
        "{STALE} (the recorded run-list pages differ)"
    );
    assert_eq!(
        spending_of(&committed),
        spent,
        "{STALE} (the recorded spending differs)"
    );
    assert_eq!(
        retros_of(&committed),
        retros,
        "{STALE} (the recorded retros differ)"
    );
    for ((run, want_keys), (_, have_keys)) in want.iter().zip(&have) {
        let missing: Vec<_> = want_keys.difference(have_keys).collect();
        let extra: Vec<_> = have_keys.difference(want_keys).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{STALE}\nrun {run}: keys the engine produces but the file lacks: {missing:?}\nkeys the file has but the engine no longer produces: {extra:?}"
        );
    }
}
