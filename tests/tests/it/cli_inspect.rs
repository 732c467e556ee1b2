//! `weft ps`, `weft events`, `weft logs` and `weft dump` through the real
//! binary, over runs recorded by real `weft run` invocations.

use std::path::Path;
use std::time::{Duration, Instant};

use weft_tests::Sandbox;

/// One command stage writing to both streams.
const HELLO: &str = r#"digraph Hello {
    graph [goal="Say hello"]
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    build [shape=parallelogram, script="echo hello; echo oops >&2"]
    start -> build -> exit
}
"#;

/// `count` runs twice: `check` fails until the counter file reaches 2.
const LOOP: &str = r#"digraph Loop {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    count [shape=parallelogram, script="n=$(cat counter 2>/dev/null || echo 0); n=$((n+1)); echo $n > counter; echo visit $n"]
    check [shape=parallelogram, script="test $(cat counter) -ge 2"]
    start -> count -> check
    check -> exit [condition="outcome=succeeded"]
    check -> count
}
"#;

/// `boom` fails and no edge leaves it on failure, so the run fails.
const FAIL: &str = r#"digraph Fail {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    boom [shape=parallelogram, script="echo bad; exit 3"]
    start -> boom
    boom -> exit [condition="outcome=succeeded"]
}
"#;

/// Runs `source` with `weft run --json` and returns the run id.
fn run_workflow(sb: &Sandbox, name: &str, source: &str) -> String {
    let file = format!("{name}.fabro");
    sb.write(&file, source);
    let run = sb.run(&["run", "--no-daemon", &file, "--json"]);
    assert!(
        run.code == 0 || run.code == 1,
        "the run ends (succeeded or failed): {run:?}"
    );
    let conclusion: serde_json::Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("--json prints the conclusion ({e}): {run:?}"));
    conclusion["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("the conclusion names its run: {conclusion}"))
        .to_string()
}

fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"))
        })
        .collect()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| {
            entry
                .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn ps_lists_runs_newest_first_in_a_table_and_as_json() {
    let sb = Sandbox::new();
    let hello = run_workflow(&sb, "hello", HELLO);
    let failed = run_workflow(&sb, "fail", FAIL);

    let table = sb.run(&["ps"]);
    assert_eq!(table.code, 0, "{table:?}");
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "a header and two runs: {}", table.stdout);
    assert!(lines[0].starts_with("ID"), "{}", lines[0]);
    // Each id as its shortest unique prefix (see cli_ids.rs).
    let id_of = |line: &str| line.split_whitespace().next().unwrap_or("").to_string();
    assert!(
        failed.starts_with(&id_of(lines[1])) && lines[1].contains("failed"),
        "the newest run comes first: {}",
        lines[1]
    );
    assert!(
        hello.starts_with(&id_of(lines[2])) && lines[2].contains("succeeded"),
        "{}",
        lines[2]
    );
    assert!(lines[2].contains("Say hello"), "the goal is shown");

    let json = sb.run(&["ps", "--json"]);
    assert_eq!(json.code, 0, "{json:?}");
    let runs: Vec<serde_json::Value> = serde_json::from_str(&json.stdout).expect("a JSON array");
    let ids: Vec<&str> = runs.iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(ids, [failed.as_str(), hello.as_str()], "newest first");
    assert_eq!(runs[0]["status"], "failed");
    assert!(
        runs[0]["failure_reason"]
            .as_str()
            .is_some_and(|r| r.contains("boom")),
        "{}",
        runs[0]
    );
    assert_eq!(runs[1]["goal"], "Say hello");
    for run in &runs {
        for key in [
            "workflow_name",
            "created_at",
            "started_at",
            "finished_at",
            "run_dir",
        ] {
            assert!(
                run[key].is_string(),
                "{key} is set on a finished run: {run}"
            );
        }
        assert!(run["duration_ms"].is_u64(), "a finished run has a duration");
        assert!(run["labels"].is_array());
    }

    let only_failed = sb.run(&["ps", "--json", "--status", "FAILED"]);
    let runs: Vec<serde_json::Value> =
        serde_json::from_str(&only_failed.stdout).expect("a JSON array");
    assert_eq!(runs.len(), 1, "status filters, ignoring case");
    let limited = sb.run(&["ps", "--all", "--json", "--limit", "1"]);
    let runs: Vec<serde_json::Value> = serde_json::from_str(&limited.stdout).expect("a JSON array");
    assert_eq!(runs.len(), 1, "--limit caps the list");
    assert_eq!(runs[0]["id"], failed.as_str());
    assert_eq!(sb.run(&["ps", "--status", "bogus"]).code, 2, "bad status");
}

#[test]
fn without_a_database_ps_is_empty_and_runs_are_not_found() {
    let sb = Sandbox::new();
    let table = sb.run(&["ps", "--no-daemon"]);
    assert_eq!(table.code, 0, "{table:?}");
    assert_eq!(table.stdout.trim(), "no runs yet");
    let json = sb.run(&["ps", "--json", "--no-daemon"]);
    assert_eq!(json.code, 0, "{json:?}");
    assert_eq!(json.stdout.trim(), "[]");
    for command in ["events", "logs"] {
        let run = sb.run(&[command, "01ABC", "--no-daemon"]);
        assert_eq!(run.code, 2, "{command}: {run:?}");
        assert!(
            run.stderr.contains("no run matches `01ABC`"),
            "{}",
            run.stderr
        );
    }
    assert!(
        !sb.path().join("home/weft.db").exists(),
        "inspection with --no-daemon is read-only and never creates the database"
    );
    // Through the daemon (the default), the same answers.
    let json = sb.run(&["ps", "--json"]);
    assert_eq!(json.code, 0, "{json:?}");
    assert_eq!(json.stdout.trim(), "[]");
    for command in ["events", "logs"] {
        let run = sb.run(&[command, "01ABC"]);
        assert_eq!(run.code, 2, "{command}: {run:?}");
        assert!(
            run.stderr.contains("no run matches `01ABC`"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn events_are_gap_free_lines_and_json_envelopes() {
    let sb = Sandbox::new();
    let id = run_workflow(&sb, "hello", HELLO);

    let human = sb.run(&["events", &id]);
    assert_eq!(human.code, 0, "{human:?}");
    let seqs: Vec<u64> = human
        .stdout
        .lines()
        .map(|line| {
            line.strip_prefix('#')
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|seq| seq.parse().ok())
                .unwrap_or_else(|| panic!("a line starts with #seq: {line}"))
        })
        .collect();
    let n = u64::try_from(seqs.len()).expect("few events");
    assert!(seqs.iter().copied().eq(1..=n), "gap-free: {seqs:?}");
    assert!(human.stdout.contains("run.started"));
    assert!(
        human
            .stdout
            .lines()
            .any(|l| l.contains("stage.completed") && l.contains("build@1")),
        "stage lines name node@visit: {}",
        human.stdout
    );
    assert!(
        human.stdout.contains("build → exit (unconditional)"),
        "edges show from → to (reason): {}",
        human.stdout
    );
    assert!(
        human.stdout.contains("stdout: hello"),
        "command output shows its first line: {}",
        human.stdout
    );

    let json = sb.run(&["events", &id, "--json"]);
    assert_eq!(json.code, 0, "{json:?}");
    let events = json_lines(&json.stdout);
    assert_eq!(events.len(), seqs.len(), "the same events in both formats");
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event["seq"].as_u64(), Some(i as u64 + 1));
        assert_eq!(event["run_id"], id.as_str());
        assert!(
            event["event"].is_string(),
            "an envelope has a name: {event}"
        );
        assert!(event["ts"].is_string());
    }
    assert_eq!(events[0]["event"], "run.started");
    assert_eq!(events[events.len() - 1]["event"], "run.completed");

    let after = sb.run(&["events", &id, "--json", "--after", "3"]);
    let later = json_lines(&after.stdout);
    assert_eq!(later.len(), events.len() - 3);
    assert_eq!(later[0]["seq"], 4, "--after skips what was seen");
}

#[test]
fn events_follow_on_a_finished_run_prints_everything_and_exits() {
    let sb = Sandbox::new();
    let id = run_workflow(&sb, "fail", FAIL);
    let mut child = sb
        .weft()
        .args(["events", &id, "--follow", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start weft events --follow");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll the child") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("`weft events --follow` did not exit for a finished run");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = child.wait_with_output().expect("collect the output");
    assert!(status.success(), "{status}");
    let events = json_lines(&String::from_utf8_lossy(&output.stdout));
    assert_eq!(
        events.last().map(|e| e["event"].clone()),
        Some(serde_json::json!("run.failed"))
    );
    assert!(
        events.iter().any(|e| e["event"] == "stage.failed"
            && e["node_id"] == "boom"
            && e["properties"]["outcome"]["failure"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("status 3"))),
        "the failure is recorded with its reason"
    );
}

#[test]
fn unknown_and_ambiguous_prefixes_exit_two_and_unique_ones_work_in_any_case() {
    let sb = Sandbox::new();
    let first = run_workflow(&sb, "hello", HELLO);
    let second = run_workflow(&sb, "fail", FAIL);
    let shared: String = first
        .chars()
        .zip(second.chars())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect();
    assert!(!shared.is_empty(), "ULIDs made together share a prefix");

    for command in ["events", "logs", "dump"] {
        let mut args = vec![command, shared.as_str()];
        if command == "dump" {
            args.extend(["--out", "ambiguous"]);
        }
        let ambiguous = sb.run(&args);
        assert_eq!(ambiguous.code, 2, "{command}: {ambiguous:?}");
        assert!(
            ambiguous.stderr.contains("matches more than one run")
                && ambiguous.stderr.contains(&first)
                && ambiguous.stderr.contains(&second),
            "the error lists the candidates: {}",
            ambiguous.stderr
        );
    }
    let unknown = sb.run(&["events", "ZZZZ"]);
    assert_eq!(unknown.code, 2, "{unknown:?}");
    assert!(
        unknown.stderr.contains("no run matches `ZZZZ`"),
        "{}",
        unknown.stderr
    );

    let lower = second[..shared.len() + 1].to_ascii_lowercase();
    let found = sb.run(&["events", &lower, "--json"]);
    assert_eq!(found.code, 0, "a unique lower-case prefix: {found:?}");
    assert_eq!(json_lines(&found.stdout)[0]["run_id"], second.as_str());
}

#[test]
fn logs_show_each_stage_with_stdout_and_a_stderr_section() {
    let sb = Sandbox::new();
    let id = run_workflow(&sb, "hello", HELLO);
    let logs = sb.run(&["logs", &id]);
    assert_eq!(logs.code, 0, "{logs:?}");
    let headers: Vec<&str> = logs
        .stdout
        .lines()
        .filter(|l| l.starts_with("== "))
        .collect();
    assert_eq!(headers.len(), 3, "one header per stage: {}", logs.stdout);
    assert!(headers[0].starts_with("== start@1 (succeeded, "));
    assert!(headers[1].starts_with("== build@1 (succeeded, "));
    assert!(headers[2].starts_with("== exit@1 (succeeded, "));
    assert!(
        logs.stdout.contains("== build@1")
            && logs
                .stdout
                .contains(") ==\nhello\n-- stderr --\noops\n== exit@1"),
        "stdout, then stderr under its own header: {}",
        logs.stdout
    );
    assert_eq!(
        logs.stdout.matches("-- stderr --").count(),
        1,
        "empty stderr gets no section"
    );
}

#[test]
fn logs_for_a_node_show_every_visit_or_the_one_asked_for() {
    let sb = Sandbox::new();
    let id = run_workflow(&sb, "loop", LOOP);
    let both = sb.run(&["logs", &id, "count"]);
    assert_eq!(both.code, 0, "{both:?}");
    assert!(
        both.stdout.contains("== count@1 (succeeded")
            && both.stdout.contains("visit 1")
            && both.stdout.contains("== count@2 (succeeded")
            && both.stdout.contains("visit 2"),
        "{}",
        both.stdout
    );
    assert!(!both.stdout.contains("check@"), "only the node asked for");

    let second = sb.run(&["logs", &id, "count", "--visit", "2"]);
    assert_eq!(second.code, 0, "{second:?}");
    assert!(second.stdout.contains("visit 2"), "{}", second.stdout);
    assert!(!second.stdout.contains("count@1"), "{}", second.stdout);

    let missing_visit = sb.run(&["logs", &id, "count", "--visit", "3"]);
    assert_eq!(missing_visit.code, 2, "{missing_visit:?}");
    assert!(
        missing_visit.stderr.contains("no visit 3"),
        "{}",
        missing_visit.stderr
    );
}

#[test]
fn logs_for_a_node_that_never_ran_lists_the_nodes_that_did() {
    let sb = Sandbox::new();
    let id = run_workflow(&sb, "fail", FAIL);
    let logs = sb.run(&["logs", &id, "exit"]);
    assert_eq!(logs.code, 2, "the failed run never reached exit: {logs:?}");
    assert!(
        logs.stderr.contains("node `exit` never ran")
            && logs.stderr.contains("these did: start, boom"),
        "{}",
        logs.stderr
    );
}

#[test]
fn dump_writes_stage_folders_events_and_the_checkpoint() {
    let sb = Sandbox::new();
    let id = run_workflow(&sb, "loop", LOOP);
    // As if the run's file writer had not got to them (or had crashed):
    // the dump has them all the same, from the stage's commit.
    let run_dir =
        weft::store::Store::open_read_only(&weft::store::Home::at(sb.path().join("home")))
            .and_then(|s| s.find_run(&id))
            .map(|r| r.run_dir)
            .expect("the run is recorded");
    for name in ["status.json", "stderr.log"] {
        std::fs::remove_file(run_dir.join("nodes/count-visit_2").join(name)).expect("remove");
    }
    let dump = sb.run(&["dump", &id, "--out", "out"]);
    assert_eq!(dump.code, 0, "{dump:?}");
    let out = sb.path().join("out");
    assert_eq!(
        dump.stdout.trim(),
        format!(
            "dumped 6 stages and {} events to out",
            std::fs::read_to_string(out.join("events.jsonl"))
                .expect("events.jsonl")
                .lines()
                .count()
        )
    );
    assert_eq!(
        files_in(&out),
        [
            "checkpoint.json",
            "conclusion.json",
            "events.jsonl",
            "graph.fabro",
            "manifest.json",
            "stages"
        ]
    );
    assert_eq!(
        files_in(&out.join("stages")),
        [
            "001-start@1",
            "002-count@1",
            "003-check@1",
            "004-count@2",
            "005-check@2",
            "006-exit@1"
        ]
    );
    assert_eq!(files_in(&out.join("stages/001-start@1")), ["status.json"]);
    assert_eq!(
        files_in(&out.join("stages/004-count@2")),
        [
            "script_invocation.json",
            "script_timing.json",
            "status.json",
            "stderr.log",
            "stdout.log"
        ]
    );
    assert_eq!(
        std::fs::read_to_string(out.join("stages/004-count@2/stdout.log")).expect("stdout.log"),
        "visit 2\n",
        "each visit keeps its own output"
    );

    let events = json_lines(&std::fs::read_to_string(out.join("events.jsonl")).expect("events"));
    let all = json_lines(&sb.run(&["events", &id, "--json"]).stdout);
    assert_eq!(events, all, "every event from the database, in order");

    let checkpoint: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("checkpoint.json")).expect("checkpoint.json"),
    )
    .expect("checkpoint.json parses");
    assert_eq!(
        checkpoint["completed"], 6,
        "six stages committed: {checkpoint}"
    );
    assert_eq!(checkpoint["current_node"], "exit", "{checkpoint}");
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("manifest.json")).expect("manifest.json"),
    )
    .expect("manifest.json parses");
    assert_eq!(manifest["run_id"], id.as_str());
    assert_eq!(
        std::fs::read_to_string(out.join("graph.fabro")).expect("graph.fabro"),
        LOOP,
        "the workflow as it ran"
    );
}

#[test]
fn dump_refuses_a_non_empty_directory_unless_forced() {
    let sb = Sandbox::new();
    let id = run_workflow(&sb, "hello", HELLO);
    sb.write("taken/notes.txt", "keep me");
    let refused = sb.run(&["dump", &id, "--out", "taken"]);
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(refused.stderr.contains("not empty"), "{}", refused.stderr);
    assert!(
        !sb.path().join("taken/stages").exists(),
        "nothing is written when refused"
    );

    let forced = sb.run(&["dump", &id, "--out", "taken", "--force"]);
    assert_eq!(forced.code, 0, "{forced:?}");
    assert!(
        sb.path()
            .join("taken/stages/002-build@1/stdout.log")
            .is_file()
    );
    assert_eq!(
        std::fs::read_to_string(sb.path().join("taken/notes.txt")).expect("notes"),
        "keep me",
        "--force writes beside existing files, never deletes them"
    );

    std::fs::create_dir(sb.path().join("empty")).expect("mkdir");
    let into_empty = sb.run(&["dump", &id, "--out", "empty"]);
    assert_eq!(
        into_empty.code, 0,
        "an empty directory is fine: {into_empty:?}"
    );
}
