//! What `weft` writes and how it copes with where it writes: closed pipes
//! (`weft run ... 2>&1 | head -2`), colour only on a terminal, live output.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use weft::store::{Home, RunStatus, Store};
use weft_tests::Sandbox;

/// `wait` blocks until the test has closed weft's output, so every stage
/// line after it is written into a pipe nobody reads.
const WAITS_FOR_CLOSED_OUTPUT: &str = r#"digraph Piped {
  start [shape=Mdiamond]
  exit  [shape=Msquare]
  wait  [shape=parallelogram, script="while [ ! -f closed ]; do sleep 0.02; done; echo waited"]
  after [shape=parallelogram, script="echo after > after.txt"]
  start -> wait -> after -> exit
}"#;

fn statuses(sb: &Sandbox) -> Vec<RunStatus> {
    Store::open_read_only(&Home::at(sb.path().join("home")))
        .and_then(|s| s.list_runs(&Default::default()))
        .map(|runs| runs.into_iter().map(|r| r.status).collect())
        .unwrap_or_default()
}

/// Runs `weft ARGS` with stdout and stderr piped, reads one line of stderr,
/// closes both pipes (as `| head -1` does), then lets the workflow go on.
fn run_into_closed_pipes(sb: &Sandbox, args: &[&str]) -> Option<i32> {
    let mut child = sb
        .weft()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let stderr = child.stderr.take().unwrap_or_else(|| panic!("stderr"));
    let mut first = String::new();
    BufReader::new(stderr)
        .read_line(&mut first)
        .unwrap_or_else(|e| panic!("read: {e}"));
    assert!(!first.is_empty(), "weft wrote something first");
    drop(child.stdout.take());
    // The reader above is dropped here: nobody reads either pipe any more.
    sb.write("closed", "");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("wait: {e}")) {
            return status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("weft did not finish after its output was closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_run_whose_output_pipe_closes_goes_on_to_its_end_in_process() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", WAITS_FOR_CLOSED_OUTPUT);
    let code = run_into_closed_pipes(&sb, &["run", "--no-daemon", "wf.fabro"]);
    assert_eq!(code, Some(0), "a closed pipe is not a failure of the run");
    assert!(sb.path().join("after.txt").is_file(), "the run went on");
    assert_eq!(statuses(&sb), [RunStatus::Succeeded], "and was recorded");
}

#[test]
fn a_run_whose_output_pipe_closes_goes_on_to_its_end_in_the_daemon() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", WAITS_FOR_CLOSED_OUTPUT);
    let code = run_into_closed_pipes(&sb, &["run", "wf.fabro", "--json"]);
    assert_eq!(code, Some(0), "the follower exits with the run's status");
    assert!(sb.path().join("after.txt").is_file(), "the run went on");
    assert_eq!(statuses(&sb), [RunStatus::Succeeded]);
}

#[test]
fn inspection_commands_exit_quietly_into_a_closed_pipe() {
    let sb = Sandbox::new();
    sb.write(
        "wf.fabro",
        r#"digraph Chatty { start [shape=Mdiamond]; exit [shape=Msquare]
           talk [shape=parallelogram, script="seq 1 20000"]
           start -> talk -> exit }"#,
    );
    let run = sb.run(&["run", "--no-daemon", "wf.fabro"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for args in [
        vec!["ps", "--no-daemon"],
        vec!["events", "last", "--no-daemon"],
        vec!["logs", "last", "--no-daemon"],
        vec!["logs", "last"],
    ] {
        let mut child = sb
            .weft()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn: {e}"));
        drop(child.stdout.take());
        let out = child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("wait: {e}"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("error") && !stderr.contains("panicked"),
            "{args:?} exits quietly: {stderr}"
        );
    }
}
