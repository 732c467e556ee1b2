//! What a run says about how it went, over the real binaries: a working
//! directory checked before the start, failed stages a run routed past, and
//! huge command output kept out of the database and events.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use weft::model::EventKind;
use weft::store::{Home, Store};
use weft_tests::{Sandbox, json};

fn store(sb: &Sandbox) -> Store {
    Store::open_read_only(&Home::at(sb.path().join("home"))).unwrap_or_else(|e| panic!("{e}"))
}

const FLAKY: &str = r#"digraph F { start [shape=Mdiamond]; exit [shape=Msquare]
  flaky [shape=parallelogram, script="echo oops >&2; exit 3"]
  after [shape=parallelogram, script="echo after"]
  start -> flaky -> after -> exit }"#;

#[test]
fn a_missing_work_dir_is_refused_before_the_run_starts_in_both_modes() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", FLAKY);
    for mode in [&["--no-daemon"][..], &[][..]] {
        let mut args = vec!["run", "wf.fabro", "--work-dir", "/nonexistent/weft-dir"];
        args.extend_from_slice(mode);
        let run = sb.run(&args);
        assert_eq!(run.code, 2, "{mode:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("/nonexistent/weft-dir") && run.stderr.contains("does not exist"),
            "{mode:?}: the message names the directory: {}",
            run.stderr
        );
    }
    let runs = store(&sb)
        .list_runs(&Default::default())
        .unwrap_or_default();
    assert!(runs.is_empty(), "nothing was recorded: {runs:?}");
}

#[test]
fn a_run_that_routed_past_a_failed_stage_says_so_in_its_conclusion_last_line_and_ps() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", FLAKY);
    for mode in [&["--no-daemon"][..], &[][..]] {
        let mut args = vec!["run", "wf.fabro", "--json"];
        args.extend_from_slice(mode);
        let run = sb.run(&args);
        assert_eq!(run.code, 0, "{mode:?}: Fabro's semantics: it succeeded");
        let c = json(&run.stdout);
        assert_eq!(c["status"], "succeeded");
        assert_eq!(c["failed_stages"], serde_json::json!(["flaky"]), "{mode:?}");
        assert!(
            run.stderr.contains("succeeded, 1 stage failed (flaky)"),
            "{mode:?}: the last line says it: {}",
            run.stderr
        );
        let dir = c["run_dir"].as_str().unwrap_or_default();
        let conclusion: Value = json(
            &std::fs::read_to_string(Path::new(dir).join("conclusion.json")).unwrap_or_default(),
        );
        assert_eq!(conclusion["failed_stages"], serde_json::json!(["flaky"]));
    }
    let ps = sb.run(&["ps", "--no-daemon"]);
    assert_eq!(
        ps.stdout.matches("succeeded (1 failed)").count(),
        2,
        "{}",
        ps.stdout
    );
    let ps = sb.run(&["ps", "--json"]);
    let rows = json(&ps.stdout);
    assert!(
        rows.as_array()
            .is_some_and(|rows| rows.iter().all(|r| r["failed_stages"][0] == "flaky")),
        "{rows}"
    );

    // A clean run lists none.
    sb.write(
        "ok.fabro",
        r#"digraph O { start [shape=Mdiamond]; exit [shape=Msquare]; start -> exit }"#,
    );
    let run = sb.run(&["run", "--no-daemon", "ok.fabro", "--json"]);
    assert_eq!(json(&run.stdout)["failed_stages"], serde_json::json!([]));
    assert!(!run.stderr.contains("failed"), "{}", run.stderr);
}

/// 8 MB of stdout: the log has all of it; events, the database and the
/// context blob only a bounded part.
#[test]
fn huge_output_is_logged_whole_but_recorded_in_events_and_the_context_only_up_to_a_bound() {
    const BYTES: usize = 8_000_000;
    let sb = Sandbox::new();
    sb.write(
        "wf.fabro",
        format!(
            r#"digraph H {{ start [shape=Mdiamond]; exit [shape=Msquare]
  loud [shape=parallelogram, script="yes | head -c {BYTES}; echo LAST"]
  start -> loud -> exit }}"#
        ),
    );
    let run = sb.run(&["run", "--no-daemon", "wf.fabro", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let c = json(&run.stdout);
    let run_id = c["run_id"].as_str().unwrap_or_default();
    let run_dir = Path::new(c["run_dir"].as_str().unwrap_or_default());

    let log = std::fs::metadata(run_dir.join("nodes/loud/stdout.log")).map(|m| m.len());
    assert_eq!(log.ok(), Some(BYTES as u64 + 5), "the log holds every byte");

    let events = store(&sb).events(run_id, 0, None).unwrap_or_default();
    let recorded: usize = events
        .iter()
        .map(|e| match &e.kind {
            EventKind::CommandOutput { text, .. } => text.len(),
            _ => 0,
        })
        .sum();
    assert!(
        recorded <= 1024 * 1024,
        "at most 1 MiB of output events, got {recorded}"
    );
    assert!(
        events.iter().any(|e| matches!(
            &e.kind,
            EventKind::RunNotice { message } if message.contains("stdout.log")
        )),
        "one notice says where the rest is"
    );

    // The blob store holds the end of the output (the context's
    // command.output), not all of it.
    let blobs: u64 = files(&sb.path().join("home/blobs"))
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    assert!(
        blobs < 3 * 1024 * 1024,
        "blobs hold a bounded tail, not the output: {blobs} bytes"
    );
    let db = std::fs::metadata(sb.path().join("home/weft.db")).map_or(0, |m| m.len())
        + std::fs::metadata(sb.path().join("home/weft.db-wal")).map_or(0, |m| m.len());
    assert!(
        db < 4 * 1024 * 1024,
        "the database holds a bounded part: {db} bytes"
    );
}

/// Every regular file under `dir`.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn a_commands_log_grows_while_it_runs() {
    let sb = Sandbox::new();
    sb.write(
        "wf.fabro",
        r#"digraph G { start [shape=Mdiamond]; exit [shape=Msquare]
  slow [shape=parallelogram, script="echo first; while [ ! -f go ]; do sleep 0.05; done; echo second"]
  start -> slow -> exit }"#,
    );
    let child = Running(Some(
        sb.weft()
            .args(["run", "--no-daemon", "wf.fabro"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn: {e}")),
    ));
    let deadline = Instant::now() + Duration::from_secs(30);
    let log = loop {
        let found = files(&sb.path().join("home/runs"))
            .into_iter()
            .find(|p| p.ends_with("nodes/slow/stdout.log"));
        if let Some(log) = found
            && std::fs::read_to_string(&log).unwrap_or_default() == "first\n"
        {
            break log;
        }
        assert!(Instant::now() < deadline, "stdout.log never showed `first`");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::fs::write(sb.path().join("go"), "").unwrap_or_else(|e| panic!("go: {e}"));
    let status = child.wait();
    assert_eq!(status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(log).unwrap_or_default(),
        "first\nsecond\n"
    );
}

/// A spawned `weft` killed (and its stages with it) if a test fails while
/// it runs.
struct Running(Option<std::process::Child>);

impl Running {
    fn wait(mut self) -> std::process::ExitStatus {
        let mut child = self.0.take().unwrap_or_else(|| panic!("still held"));
        child.wait().unwrap_or_else(|e| panic!("weft ends: {e}"))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
