//! `weft run` and `weft resume` over the real binary: exit codes, the JSON
//! conclusion, run configuration files, cancellation with SIGTERM, damaged
//! checkpoints, and a crash test that SIGKILLs runs at random moments.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use weft::model::RunStatus;
use weft::store::{Home, RunRecord, Store};
use weft_tests::{Sandbox, json, lcg, side_effect_chain};

fn home(sandbox: &Sandbox) -> Home {
    Home::at(sandbox.path().join("home"))
}

/// The only run recorded in the sandbox, if any.
fn only_run(sandbox: &Sandbox) -> Option<RunRecord> {
    let store = Store::open_read_only(&home(sandbox)).ok()?;
    let runs = store.list_runs(&Default::default()).unwrap_or_default();
    assert!(runs.len() <= 1, "one run per sandbox");
    runs.into_iter().next()
}

fn kill(child: &mut Child, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap_or_else(|e| panic!("kill: {e}"));
    assert!(status.success());
}

const LINEAR: &str = r#"digraph Linear {
  start [shape=Mdiamond]
  exit  [shape=Msquare]
  build [shape=parallelogram, script="echo built"]
  test  [shape=parallelogram, script="echo tested"]
  start -> build -> test -> exit
}"#;

#[test]
fn a_successful_run_exits_0_and_prints_its_conclusion() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", LINEAR);
    let run = sb.run(&["run", "--no-daemon", "wf.fabro", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let c = json(&run.stdout);
    assert_eq!(c["status"], "succeeded");
    let stages: Vec<String> = c["stages"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| s["node_id"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(stages, ["start", "build", "test", "exit"]);
    assert!(
        c["run_dir"]
            .as_str()
            .is_some_and(|d| Path::new(d).join("conclusion.json").is_file())
    );
    assert!(
        run.stderr.contains("✓ build"),
        "progress on stderr: {}",
        run.stderr
    );
}

#[test]
fn a_failed_run_exits_1_with_its_reason() {
    let sb = Sandbox::new();
    sb.write(
        "wf.fabro",
        r#"digraph F { graph [on_failure="exit"]; start [shape=Mdiamond]; exit [shape=Msquare]
           broken [shape=parallelogram, script="echo nope >&2; exit 4"]
           start -> broken -> exit }"#,
    );
    let run = sb.run(&["run", "--no-daemon", "wf.fabro", "--json"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let c = json(&run.stdout);
    assert_eq!(c["status"], "failed");
    assert!(
        c["failure_reason"]
            .as_str()
            .is_some_and(|r| r.contains("status 4: nope")),
        "{c}"
    );
}

#[test]
fn an_invalid_workflow_does_not_start_and_exits_2() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", "digraph X { start [shape=Mdiamond]; a -> b }");
    let run = sb.run(&["run", "--no-daemon", "wf.fabro"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("error["), "{}", run.stderr);
    assert!(only_run(&sb).is_none(), "no run was recorded");
}

#[test]
fn a_run_configuration_file_supplies_graph_goal_and_inputs() {
    let sb = Sandbox::new();
    sb.write(
        "flows/wf.fabro",
        r#"digraph Cfg { graph [goal="default goal"]
           start [shape=Mdiamond]; exit [shape=Msquare]
           say [shape=parallelogram, script="echo {{ inputs.word }} > said.txt"]
           start -> say -> exit }"#,
    );
    sb.write(
        "run.toml",
        "_version = 1\n[workflow]\ngraph = \"flows/wf.fabro\"\n[run]\ngoal = \"from the file\"\n[run.inputs]\nword = \"toml\"\n",
    );
    let run = sb.run(&["run", "--no-daemon", "run.toml", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(sb.path().join("said.txt"))
            .unwrap_or_default()
            .trim(),
        "toml"
    );
    let record = only_run(&sb).unwrap_or_else(|| panic!("a run"));
    assert_eq!(record.goal.as_deref(), Some("from the file"));

    // Flags override the file.
    let sb2 = Sandbox::new();
    sb2.write(
        "flows/wf.fabro",
        std::fs::read_to_string(sb.path().join("flows/wf.fabro")).unwrap_or_default(),
    );
    sb2.write(
        "run.toml",
        std::fs::read_to_string(sb.path().join("run.toml")).unwrap_or_default(),
    );
    let run = sb2.run(&[
        "run",
        "run.toml",
        "--input",
        "word=flag",
        "--goal",
        "from the flag",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(sb2.path().join("said.txt"))
            .unwrap_or_default()
            .trim(),
        "flag"
    );
    assert_eq!(
        only_run(&sb2).and_then(|r| r.goal).as_deref(),
        Some("from the flag")
    );
}

#[test]
fn sigterm_cancels_the_run_kills_its_command_and_resume_finishes_it() {
    let sb = Sandbox::new();
    sb.write(
        "wf.fabro",
        r#"digraph Slow { start [shape=Mdiamond]; exit [shape=Msquare]
           first [shape=parallelogram, script="echo first >> side.log"]
           slow [shape=parallelogram, script="echo $$ > slow.pid; if [ -f resumed ]; then echo slow >> side.log; else sleep 30; fi"]
           start -> first -> slow -> exit }"#,
    );
    let mut child = sb
        .weft()
        .args(["run", "--no-daemon", "wf.fabro", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let pid_file = sb.path().join("slow.pid");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !pid_file.is_file() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    kill(&mut child, "-TERM");
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("wait: {e}"));
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c = json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(c["status"], "cancelled");

    let slow_pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap_or_default()
        .trim()
        .parse()
        .unwrap_or(0);
    assert!(
        !Path::new(&format!("/proc/{slow_pid}/cmdline")).exists()
            || std::fs::read_to_string(format!("/proc/{slow_pid}/stat"))
                .is_ok_and(|s| s.contains(") Z ")),
        "the cancelled stage's process is gone"
    );

    let record = only_run(&sb).unwrap_or_else(|| panic!("a run"));
    assert_eq!(record.status, RunStatus::Cancelled);
    sb.write("resumed", "");
    let prefix = record.id[..8].to_lowercase();
    let resumed = sb.run(&["resume", "--no-daemon", &prefix, "--json"]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let c = json(&resumed.stdout);
    assert_eq!(c["status"], "succeeded");
    let side = std::fs::read_to_string(sb.path().join("side.log")).unwrap_or_default();
    assert_eq!(
        side, "first\nslow\n",
        "first ran once, slow ran to completion once"
    );

    let again = sb.run(&["resume", "--no-daemon", &record.id]);
    assert_eq!(again.code, 2);
    assert!(
        again.stderr.contains("already succeeded"),
        "{}",
        again.stderr
    );
}

/// One rule, one message: the engine decides whether a run can be resumed,
/// so weftd refuses a run that ended with the very words
/// `weft resume --no-daemon` prints (the daemon used to say it its own way).
#[test]
fn resuming_an_ended_run_is_refused_in_the_same_words_with_or_without_the_daemon() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", LINEAR);
    let run = sb.run(&["run", "--no-daemon", "wf.fabro", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let id = json(&run.stdout)["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let before = only_run(&sb).map(|r| (r.status, r.last_seq));
    assert_eq!(before.map(|b| b.0), Some(RunStatus::Succeeded));
    let error_line = |stderr: &str| {
        stderr
            .lines()
            .find(|l| l.starts_with("error: "))
            .unwrap_or_default()
            .to_string()
    };

    let in_process = sb.run(&["resume", "--no-daemon", &id]);
    assert_eq!(in_process.code, 2, "{}", in_process.stderr);
    let said = error_line(&in_process.stderr);
    assert!(
        said.starts_with(&format!("error: run {id} already succeeded at "))
            && said.ends_with("; only interrupted or cancelled runs can be resumed"),
        "{}",
        in_process.stderr
    );

    let through_daemon = sb.run(&["resume", &id]);
    assert_eq!(through_daemon.code, 2, "{}", through_daemon.stderr);
    assert_eq!(
        error_line(&through_daemon.stderr),
        said,
        "{}",
        through_daemon.stderr
    );
    assert_eq!(
        only_run(&sb).map(|r| (r.status, r.last_seq)),
        before,
        "both refusals left the run as it was"
    );
}

/// Starts `weft run` on a workflow whose `two` stage records its pid and
/// blocks until a `go` file exists, then SIGKILLs weft once `two` runs:
/// `one` is committed, `two` was in flight.
fn killed_during_two(sb: &Sandbox) -> RunRecord {
    sb.write(
        "wf.fabro",
        r#"digraph D { start [shape=Mdiamond]; exit [shape=Msquare]
           one [shape=parallelogram, script="echo one >> side.log"]
           two [shape=parallelogram, script="if [ -f go ]; then echo two >> side.log; else echo $$ > two.pid; sleep 30; fi"]
           start -> one -> two -> exit }"#,
    );
    kill_run_when(
        sb,
        "wf.fabro",
        "two.pid",
        || true,
        Duration::from_millis(50),
    );
    only_run(sb).unwrap_or_else(|| panic!("a run was recorded"))
}

fn sql(sb: &Sandbox, statement: &str) {
    let conn = rusqlite::Connection::open(sb.path().join("home/weft.db"))
        .unwrap_or_else(|e| panic!("open: {e}"));
    conn.execute(statement, [])
        .unwrap_or_else(|e| panic!("{statement}: {e}"));
}

#[test]
fn a_killed_run_resumes_without_rerunning_committed_stages() {
    let sb = Sandbox::new();
    let record = killed_during_two(&sb);
    assert_eq!(
        record.status,
        RunStatus::Running,
        "nobody recorded the crash"
    );
    sb.write("go", "");
    let resumed = sb.run(&["resume", "--no-daemon", &record.id, "--json"]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(lines(&sb.path().join("side.log")), ["one", "two"]);
}

#[test]
fn a_resumed_stage_never_reads_the_status_file_its_killed_attempt_wrote() {
    let sb = Sandbox::new();
    sb.write(
        "report.json",
        r#"{"outcome": "fail", "failure_reason": "stale"}"#,
    );
    sb.write(
        "wf.fabro",
        r#"digraph D { graph [on_failure="exit"]; start [shape=Mdiamond]; exit [shape=Msquare]
           two [shape=parallelogram, script="if [ -f go ]; then exit 0; fi; cp report.json $WEFT_STATUS_FILE; echo $$ > two.pid; sleep 30"]
           start -> two -> exit }"#,
    );
    kill_run_when(
        &sb,
        "wf.fabro",
        "two.pid",
        || true,
        Duration::from_millis(50),
    );
    let record = only_run(&sb).unwrap_or_else(|| panic!("a run was recorded"));
    sb.write("go", "");
    let resumed = sb.run(&["resume", "--no-daemon", &record.id, "--json"]);
    assert_eq!(
        resumed.code, 0,
        "the killed attempt's report was cleared: {}",
        resumed.stderr
    );
}

#[test]
fn a_torn_checkpoint_is_rebuilt_from_the_events() {
    for damage in [
        "substr(checkpoint, 1, 40)",                              // truncated
        "'not json at all'",                                      // invalid JSON
        "replace(checkpoint, '\"version\":1', '\"version\":99')", // unknown version
    ] {
        let sb = Sandbox::new();
        let record = killed_during_two(&sb);
        sql(&sb, &format!("UPDATE runs SET checkpoint = {damage}"));
        sb.write("go", "");
        let resumed = sb.run(&["resume", "--no-daemon", &record.id, "--json"]);
        assert_eq!(resumed.code, 0, "{damage}: {}", resumed.stderr);
        assert_eq!(
            lines(&sb.path().join("side.log")),
            ["one", "two"],
            "{damage}"
        );
    }
}

#[test]
fn a_checkpoint_that_cannot_be_rebuilt_is_refused_clearly() {
    let sb = Sandbox::new();
    let record = killed_during_two(&sb);
    sql(
        &sb,
        "UPDATE runs SET checkpoint = '{\"version\": 1, \"next_node'",
    );
    sql(&sb, "DELETE FROM events WHERE event = 'checkpoint.saved'");
    let resumed = sb.run(&["resume", "--no-daemon", &record.id]);
    assert_eq!(resumed.code, 2);
    assert!(
        resumed.stderr.contains("checkpoint is damaged"),
        "{}",
        resumed.stderr
    );
}

/// Runs `weft run --no-daemon WORKFLOW` until the command that writes its
/// pid to `pid_file` runs and `ready` holds (at most 20 s), waits `settle`,
/// then SIGKILLs weft — and that command's process group, which a killed
/// weft leaves behind.
fn kill_run_when(
    sb: &Sandbox,
    workflow: &str,
    pid_file: &str,
    ready: impl Fn() -> bool,
    settle: Duration,
) {
    let mut child = sb
        .weft()
        .args(["run", "--no-daemon", workflow])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let pid_file = sb.path().join(pid_file);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !(pid_file.is_file() && ready()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(settle);
    kill(&mut child, "-KILL");
    let _ = child.wait();
    let pgid = std::fs::read_to_string(&pid_file).unwrap_or_default();
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", pgid.trim())])
        .status();
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn runs_killed_at_random_moments_resume_to_the_same_stages_without_repeating_committed_work() {
    const NODES: usize = 50;
    let reference = Sandbox::new();
    reference.write("wf.fabro", side_effect_chain(NODES));
    let full = reference.run(&["run", "--no-daemon", "wf.fabro", "--json"]);
    assert_eq!(full.code, 0, "{}", full.stderr);
    let expected_stages: Vec<Value> = json(&full.stdout)["stages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|s| s["node_id"].clone())
        .collect();
    let expected_side = lines(&reference.path().join("side.log"));
    assert_eq!(expected_side.len(), NODES);

    let mut interrupted = 0;
    for seed in 0..20u64 {
        let sb = Sandbox::new();
        sb.write("wf.fabro", side_effect_chain(NODES));
        // The kill lands by progress, not by time, so a busy machine cannot
        // push every kill past the end: once `after_stages` side effects
        // are written, plus a few milliseconds (into the next stage's
        // spawn, run or commit).
        let after_stages = usize::try_from(lcg(seed) % (NODES as u64 - 1)).unwrap_or(0);
        let extra = Duration::from_millis(lcg(seed + 100) % 4);
        let mut child = sb
            .weft()
            .args(["run", "--no-daemon", "wf.fabro"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn: {e}"));
        let deadline = Instant::now() + Duration::from_secs(30);
        while (only_run(&sb).is_none() || lines(&sb.path().join("side.log")).len() < after_stages)
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(extra);
        kill(&mut child, "-KILL");
        let _ = child.wait();

        let Some(record) = only_run(&sb) else {
            // Killed before the run was recorded: nothing ran.
            assert!(lines(&sb.path().join("side.log")).is_empty(), "seed {seed}");
            continue;
        };
        let store = Store::open_read_only(&home(&sb)).unwrap_or_else(|e| panic!("{e}"));
        let before: BTreeMap<String, String> = store
            .stages(&record.id)
            .unwrap_or_default()
            .into_iter()
            .map(|s| (s.node_id, s.status))
            .collect();
        drop(store);
        let in_flight: Vec<&String> = before
            .iter()
            .filter(|(_, status)| status.as_str() == "running")
            .map(|(node, _)| node)
            .collect();
        assert!(in_flight.len() <= 1, "seed {seed}: one stage at a time");

        if record.status == RunStatus::Succeeded {
            // The kill came after the end.
            assert_eq!(lines(&sb.path().join("side.log")), expected_side);
            continue;
        }
        interrupted += 1;
        let resumed = sb.run(&["resume", "--no-daemon", &record.id, "--json"]);
        assert_eq!(resumed.code, 0, "seed {seed}: {}", resumed.stderr);
        let c = json(&resumed.stdout);
        assert_eq!(c["status"], "succeeded", "seed {seed}");
        let stages: Vec<Value> = c["stages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|s| s["node_id"].clone())
            .collect();
        assert_eq!(
            stages, expected_stages,
            "seed {seed}: the same stages as an uninterrupted run"
        );

        // Every node's side effect happened; a stage committed before the
        // kill never ran again. Only the stage in flight at the kill may
        // have run twice (at-least-once for work that was not committed).
        let side = lines(&sb.path().join("side.log"));
        for line in &expected_side {
            let count = side.iter().filter(|l| *l == line).count();
            let committed_before = before.get(line).is_some_and(|s| s == "succeeded");
            let was_in_flight = in_flight.contains(&line);
            match (committed_before, was_in_flight) {
                (true, _) => {
                    assert_eq!(count, 1, "seed {seed}: {line} was committed and ran again")
                }
                (false, true) => assert!(
                    (1..=2).contains(&count),
                    "seed {seed}: {line} ran {count} times"
                ),
                (false, false) => assert_eq!(count, 1, "seed {seed}: {line} ran {count} times"),
            }
        }
    }
    assert!(
        interrupted >= 15,
        "only {interrupted} of 20 kills landed mid-run"
    );
}

#[test]
fn a_run_killed_during_a_parallel_stage_resumes_only_the_unfinished_branch() {
    let sb = Sandbox::new();
    sb.write(
        "wf.fabro",
        r#"digraph P { start [shape=Mdiamond]; exit [shape=Msquare]
           fork [shape=component]
           quick [shape=parallelogram, script="echo quick >> side.log; echo quick-out"]
           slow [shape=parallelogram, script="if [ -f go ]; then echo slow >> side.log; echo slow-out; else echo $$ > slow.pid; sleep 30; fi"]
           merge [shape=tripleoctagon]
           report [shape=parallelogram, language="python",
                   script="import json, os\nfor r in json.load(open(os.environ['WEFT_CONTEXT']))['parallel.results']:\n    print(r['id'], r['status'], (r.get('output') or '').strip())"]
           start -> fork
           fork -> quick
           fork -> slow
           quick -> merge
           slow -> merge
           merge -> report -> exit }"#,
    );
    // Wait until the slow branch runs and the quick one has been recorded.
    let quick_committed = || {
        Store::open_read_only(&home(&sb))
            .ok()
            .and_then(|s| {
                let run = s.list_runs(&Default::default()).ok()?.into_iter().next()?;
                let stages = s.stages(&run.id).ok()?;
                Some(
                    stages
                        .iter()
                        .any(|st| st.node_id == "quick" && st.status == "succeeded"),
                )
            })
            .unwrap_or(false)
    };
    kill_run_when(&sb, "wf.fabro", "slow.pid", quick_committed, Duration::ZERO);

    let record = only_run(&sb).unwrap_or_else(|| panic!("a run"));
    sb.write("go", "");
    let resumed = sb.run(&["resume", "--no-daemon", &record.id, "--json"]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(
        lines(&sb.path().join("side.log")),
        ["quick", "slow"],
        "the finished branch did not run again; the unfinished one did"
    );
    let c = json(&resumed.stdout);
    let report = c["run_dir"]
        .as_str()
        .map(|d| Path::new(d).join("nodes/report/stdout.log"))
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    assert_eq!(
        report, "quick succeeded quick-out\nslow succeeded slow-out\n",
        "the join saw both branches' results"
    );
}

#[test]
fn resuming_a_parent_resumes_its_unfinished_child_run() {
    let sb = Sandbox::new();
    sb.write(
        "child.fabro",
        r#"digraph Child { start [shape=Mdiamond]; exit [shape=Msquare]
           first [shape=parallelogram, script="echo child-first >> side.log"]
           slow [shape=parallelogram, script="if [ -f go ]; then echo child-slow >> side.log; else echo $$ > slow.pid; sleep 30; fi"]
           start -> first -> slow -> exit }"#,
    );
    sb.write(
        "parent.fabro",
        r#"digraph Parent { start [shape=Mdiamond]; exit [shape=Msquare]
           before [shape=parallelogram, script="echo parent-before >> side.log"]
           sub [shape=house, stack.child_workflow="child.fabro"]
           after [shape=parallelogram, script="echo parent-after >> side.log"]
           start -> before -> sub -> after -> exit }"#,
    );
    kill_run_when(
        &sb,
        "parent.fabro",
        "slow.pid",
        || true,
        Duration::from_millis(100),
    );

    let store = Store::open_read_only(&home(&sb)).unwrap_or_else(|e| panic!("{e}"));
    let runs = store.list_runs(&Default::default()).unwrap_or_default();
    drop(store);
    assert_eq!(runs.len(), 2, "a parent and its child");
    let parent = runs
        .iter()
        .find(|r| r.options.get("parent").is_none())
        .unwrap_or_else(|| panic!("the parent run"));
    sb.write("go", "");
    let resumed = sb.run(&["resume", "--no-daemon", &parent.id, "--json"]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(
        lines(&sb.path().join("side.log")),
        ["parent-before", "child-first", "child-slow", "parent-after"],
        "neither the parent's nor the child's finished stages ran again"
    );
    let store = Store::open_read_only(&home(&sb)).unwrap_or_else(|e| panic!("{e}"));
    let runs = store.list_runs(&Default::default()).unwrap_or_default();
    assert_eq!(runs.len(), 2, "the child was resumed, not started again");
    assert!(runs.iter().all(|r| r.status == RunStatus::Succeeded));
}

#[test]
fn files_named_by_run_artifacts_are_captured_after_each_stage() {
    let sb = Sandbox::new();
    sb.write(
        "wf.fabro",
        r#"digraph A { start [shape=Mdiamond]; exit [shape=Msquare]
           write [shape=parallelogram, script="mkdir -p reports && echo one > reports/summary.txt && echo skip > notes.md"]
           same [shape=parallelogram, script="true"]
           change [shape=parallelogram, script="echo two > reports/summary.txt"]
           start -> write -> same -> change -> exit }"#,
    );
    sb.write(
        "run.toml",
        "[workflow]\ngraph = \"wf.fabro\"\n[run.artifacts]\ninclude = [\"reports/*.txt\"]\n",
    );
    let run = sb.run(&["run", "--no-daemon", "run.toml", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let id = json(&run.stdout)["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let listed = sb.run(&["artifacts", &id, "--json"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let records = json(&listed.stdout);
    let captured: Vec<(String, String)> = records
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|a| {
            (
                a["path"].as_str().unwrap_or_default().to_string(),
                a["node_id"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        captured,
        [
            ("reports/summary.txt".to_string(), "write".to_string()),
            ("reports/summary.txt".to_string(), "change".to_string())
        ],
        "captured when written and when changed, not again when unchanged; notes.md never"
    );
    let out = sb.path().join("latest.txt");
    let copied = sb.run(&[
        "artifacts",
        &id,
        "--cp",
        "reports/summary.txt",
        out.to_str().unwrap_or_default(),
    ]);
    assert_eq!(copied.code, 0, "{}", copied.stderr);
    assert_eq!(std::fs::read_to_string(out).unwrap_or_default(), "two\n");

    let bad = Sandbox::new();
    bad.write("wf.fabro", LINEAR);
    bad.write(
        "run.toml",
        "[workflow]\ngraph = \"wf.fabro\"\n[run.artifacts]\ninclude = [\"../outside/*\"]\n",
    );
    let refused = bad.run(&["run", "--no-daemon", "run.toml"]);
    assert_eq!(
        refused.code, 2,
        "a pattern leaving the working directory is refused"
    );
    assert!(
        refused.stderr.contains("../outside/*"),
        "{}",
        refused.stderr
    );
}

#[test]
fn dump_writes_a_parallel_stages_results() {
    let sb = Sandbox::new();
    sb.write(
        "wf.fabro",
        r#"digraph P { start [shape=Mdiamond]; exit [shape=Msquare]
           fork [shape=component]
           a [shape=parallelogram, script="echo a"]
           b [shape=parallelogram, script="echo b"]
           merge [shape=tripleoctagon]
           start -> fork
           fork -> a
           fork -> b
           a -> merge
           b -> merge
           merge -> exit }"#,
    );
    let run = sb.run(&["run", "--no-daemon", "wf.fabro", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let id = json(&run.stdout)["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let out = sb.path().join("dump");
    let dumped = sb.run(&["dump", &id, "--out", out.to_str().unwrap_or_default()]);
    assert_eq!(dumped.code, 0, "{}", dumped.stderr);
    let results = std::fs::read_to_string(out.join("stages/002-fork@1/parallel_results.json"))
        .unwrap_or_else(|e| panic!("parallel_results.json: {e}"));
    let results = json(&results);
    assert_eq!(results[0]["id"], "a");
    assert_eq!(results[1]["output"], "b\n");
}

#[test]
fn an_imported_workflow_runs_in_place_with_prefixed_stage_ids() {
    let sb = Sandbox::new();
    sb.write(
        "parts/check.fabro",
        r#"digraph Check { start [shape=Mdiamond]; exit [shape=Msquare]
           lint [shape=parallelogram, script="echo lint >> side.log"]
           test [shape=parallelogram, script="echo test >> side.log"]
           start -> lint -> test -> exit }"#,
    );
    sb.write(
        "wf.fabro",
        r#"digraph Main { start [shape=Mdiamond]; exit [shape=Msquare]
           build [shape=parallelogram, script="echo build >> side.log"]
           checks [import="parts/check.fabro"]
           ship [shape=parallelogram, script="echo ship >> side.log"]
           start -> build -> checks -> ship -> exit }"#,
    );
    let run = sb.run(&["run", "--no-daemon", "wf.fabro", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let stages: Vec<String> = json(&run.stdout)["stages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|s| s["node_id"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        stages,
        [
            "start",
            "build",
            "checks.lint",
            "checks.test",
            "ship",
            "exit"
        ]
    );
    assert_eq!(
        lines(&sb.path().join("side.log")),
        ["build", "lint", "test", "ship"]
    );
}

#[test]
fn a_run_that_died_after_its_last_stage_resumes_to_its_recorded_end() {
    let sb = Sandbox::new();
    sb.write(
        "wf.fabro",
        r#"digraph E { start [shape=Mdiamond]; exit [shape=Msquare]
           once [shape=parallelogram, script="echo once >> side.log"]
           start -> once -> exit }"#,
    );
    let run = sb.run(&["run", "--no-daemon", "wf.fabro"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // As if the process had died between committing the exit stage and
    // recording the run's end.
    sql(
        &sb,
        "UPDATE runs SET status = 'running', pid = 999999, finished_at = NULL",
    );
    let id = only_run(&sb).map(|r| r.id).unwrap_or_default();
    let resumed = sb.run(&["resume", "--no-daemon", &id, "--json"]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(json(&resumed.stdout)["status"], "succeeded");
    assert_eq!(
        lines(&sb.path().join("side.log")),
        ["once"],
        "nothing ran again"
    );
}
