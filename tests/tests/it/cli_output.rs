//! What `weft` writes and how it copes with where it writes: closed pipes
//! (`weft run ... 2>&1 | head -2`), colour only on a terminal, live output.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use weft::model::RunStatus;
use weft::store::{Home, Store};
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

/// A command under a pseudo-terminal (`script`), its output collected as
/// it arrives.
struct OnTerminal {
    child: std::process::Child,
    seen: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl OnTerminal {
    /// Runs `weft ARGS` on a terminal in the sandbox; `NO_COLOR` is left
    /// unset unless `no_color`.
    fn start(sb: &Sandbox, args: &[&str], no_color: bool) -> OnTerminal {
        let weft = weft_tests::binary("weft");
        let line = std::iter::once(weft.display().to_string())
            .chain(args.iter().map(|a| (*a).to_string()))
            .map(|word| format!("'{word}'"))
            .collect::<Vec<_>>()
            .join(" ");
        let mut command = std::process::Command::new("script");
        command
            .args(["-qec", &line, "/dev/null"])
            .current_dir(sb.path())
            .env("WEFT_HOME", sb.path().join("home"))
            .env("COLUMNS", "100")
            .env_remove("NO_COLOR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if no_color {
            command.env("NO_COLOR", "1");
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("script (util-linux) runs weft on a terminal: {e}"));
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut stdout = child.stdout.take().unwrap_or_else(|| panic!("stdout"));
        let sink = std::sync::Arc::clone(&seen);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = std::io::Read::read(&mut stdout, &mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend_from_slice(&buf[..n]);
            }
        });
        OnTerminal { child, seen }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.seen.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }

    /// Waits until the screen shows every one of `needles` (at most 30 s).
    fn wait_for(&self, needles: &[&str]) -> bool {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let text = self.text();
            if needles.iter().all(|n| text.contains(n)) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn wait(mut self) -> (Option<i32>, String) {
        drop(self.child.stdin.take());
        let status = self.child.wait().unwrap_or_else(|e| panic!("wait: {e}"));
        // The reader thread ends with the output.
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::sync::Arc::strong_count(&self.seen) > 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        (status.code(), self.text())
    }
}

const TWO_BRANCHES_TALKING: &str = r#"digraph Fan {
  start [shape=Mdiamond]
  exit  [shape=Msquare]
  fork  [shape=component]
  alpha [shape=parallelogram, script="echo compiling alpha-7; while [ ! -f go ]; do sleep 0.02; done"]
  beta  [shape=parallelogram, script="echo testing beta-9 >&2; while [ ! -f go ]; do sleep 0.02; done"]
  merge [shape=tripleoctagon]
  start -> fork
  fork -> alpha
  fork -> beta
  alpha -> merge
  beta -> merge
  merge -> exit
}"#;

#[test]
fn on_a_terminal_every_running_branch_shows_the_tail_of_its_output() {
    for daemon in [false, true] {
        let sb = Sandbox::new();
        sb.write("fan.fabro", TWO_BRANCHES_TALKING);
        let args: &[&str] = if daemon {
            &["run", "fan.fabro"]
        } else {
            &["run", "--no-daemon", "fan.fabro"]
        };
        let screen = OnTerminal::start(&sb, args, false);
        let shown = screen.wait_for(&["compiling alpha-7", "testing beta-9"]);
        sb.write("go", "");
        let (code, text) = screen.wait();
        assert!(
            shown,
            "daemon={daemon}: both branches' last lines show while they run:\n{text}"
        );
        assert_eq!(code, Some(0), "daemon={daemon}: {text}");
        assert!(
            text.contains("\x1b[2K"),
            "daemon={daemon}: the live lines are redrawn in place:\n{text}"
        );
    }
}

#[test]
fn without_a_terminal_progress_is_never_redrawn() {
    let sb = Sandbox::new();
    sb.write("fan.fabro", TWO_BRANCHES_TALKING);
    sb.write("go", "");
    let out = sb
        .weft()
        .env_remove("NO_COLOR")
        .args(["run", "--no-daemon", "fan.fabro"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        !stderr.contains('\r') && !stderr.contains('\x1b'),
        "no redrawing and no colour in a log: {stderr:?}"
    );
    assert!(
        stderr.contains("⑂ fork: 2 branches (alpha, beta)"),
        "{stderr}"
    );
}

#[test]
fn colour_shows_on_a_terminal_unless_no_color_is_set() {
    let sb = Sandbox::new();
    sb.write(
        "ok.fabro",
        r#"digraph Ok { start [shape=Mdiamond]; exit [shape=Msquare]
           say [shape=parallelogram, script="echo hi"]
           start -> say -> exit }"#,
    );
    let (code, text) = OnTerminal::start(&sb, &["run", "--no-daemon", "ok.fabro"], false).wait();
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("\x1b[32m✓"),
        "a green tick on a terminal: {text:?}"
    );
    let (_, text) = OnTerminal::start(&sb, &["ps", "--no-daemon"], false).wait();
    assert!(
        text.contains("\x1b[32msucceeded"),
        "ps colours the status on a terminal: {text:?}"
    );
    for args in [
        ["run", "--no-daemon", "ok.fabro"],
        ["ps", "--no-daemon", "--all"],
    ] {
        let (_, text) = OnTerminal::start(&sb, &args, true).wait();
        assert!(!has_colour(text.as_bytes()), "NO_COLOR: {args:?}: {text:?}");
        let plain = sb
            .weft()
            .env_remove("NO_COLOR")
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !plain.stdout.contains(&0x1b) && !plain.stderr.contains(&0x1b),
            "no colour without a terminal: {args:?}"
        );
    }
}

/// Whether `text` holds an SGR colour sequence (`ESC [ 32 m`); the erase
/// sequences of a live display (`ESC [ 2K`) are not colour.
fn has_colour(text: &[u8]) -> bool {
    text.windows(2).enumerate().any(|(i, pair)| {
        pair == b"\x1b[" && {
            let rest = &text[i + 2..];
            let digits = rest
                .iter()
                .take_while(|b| b.is_ascii_digit() || **b == b';')
                .count();
            rest.get(digits) == Some(&b'm')
        }
    })
}

/// `first` is written at once, `second` only once the test lets it.
const FIRST_THEN_SECOND: &str = r#"digraph Slow {
  start [shape=Mdiamond]
  exit  [shape=Msquare]
  talk  [shape=parallelogram, script="echo first; while [ ! -f go ]; do sleep 0.02; done; echo second; echo oops >&2"]
  start -> talk -> exit
}"#;

/// The lines of a followed stage's log with the stream each is under: a
/// `-- stderr --` or `-- stdout --` heading switches streams; before any
/// heading the lines are stdout's. Other `--`/`==` headings are left out.
fn by_stream(lines: &[String]) -> Vec<(&'static str, &str)> {
    let mut stream = "stdout";
    let mut out = Vec::new();
    for line in lines {
        match line.as_str() {
            "-- stderr --" => stream = "stderr",
            "-- stdout --" => stream = "stdout",
            l if l.starts_with("-- ") || l.starts_with("== ") => {}
            l => out.push((stream, l)),
        }
    }
    out
}

#[test]
fn logs_follow_streams_a_running_stages_output_as_it_arrives() {
    for daemon in [true, false] {
        let sb = Sandbox::new();
        sb.write("slow.fabro", FIRST_THEN_SECOND);
        let mut run = sb.weft();
        run.args(["run", "slow.fabro"]);
        if !daemon {
            run.arg("--no-daemon");
        }
        let mut runner = run
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        // Wait until the stage runs, then follow it.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !std::fs::read_dir(sb.path().join("home/runs"))
            .ok()
            .and_then(|mut runs| runs.next())
            .and_then(Result::ok)
            .is_some_and(|run| run.path().join("nodes/talk/stdout.log").is_file())
        {
            assert!(Instant::now() < deadline, "the stage never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut follow = sb.weft();
        follow.args(["logs", "last", "talk", "--follow"]);
        if !daemon {
            follow.arg("--no-daemon");
        }
        let mut follower = follow
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let stdout = follower.stdout.take().unwrap_or_else(|| panic!("stdout"));
        let mut lines = BufReader::new(stdout).lines();
        let mut before_go = Vec::new();
        for line in lines.by_ref() {
            let line = line.unwrap_or_default();
            before_go.push(line.clone());
            if line == "first" {
                break;
            }
        }
        assert_eq!(
            before_go,
            ["== talk@1 (running) ==", "first"],
            "daemon={daemon}: the running stage's output so far, without waiting for its end"
        );
        sb.write("go", "");
        let rest: Vec<String> = lines.map(Result::unwrap_or_default).collect();
        let status = follower.wait().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(status.code(), Some(0), "daemon={daemon}: {rest:?}");
        // Then what it writes next, each line under its stream's heading.
        // stdout and stderr are two pipes read side by side, so which of
        // `second` and `oops` arrives first is not fixed.
        let streamed = by_stream(&rest);
        assert!(
            streamed.contains(&("stdout", "second")) && streamed.contains(&("stderr", "oops")),
            "daemon={daemon}: then what it writes next: {rest:?}"
        );
        assert!(
            rest[0] == "second" || rest[..2] == ["-- stderr --", "oops"],
            "daemon={daemon}: the new output comes first: {rest:?}"
        );
        assert!(
            rest.last()
                .is_some_and(|l| l.starts_with("-- talk@1 succeeded in ")),
            "daemon={daemon}: {rest:?}"
        );
        let _ = runner.wait();
    }
}

#[test]
fn logs_of_a_running_stage_say_it_is_running_once() {
    let sb = Sandbox::new();
    sb.write("slow.fabro", FIRST_THEN_SECOND);
    let mut runner = sb
        .weft()
        .args(["run", "--no-daemon", "slow.fabro"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + Duration::from_secs(30);
    let logs = loop {
        let logs = sb.run(&["logs", "last", "talk", "--no-daemon"]);
        if logs.stdout.contains("first") {
            break logs;
        }
        assert!(Instant::now() < deadline, "{logs:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    sb.write("go", "");
    let _ = runner.wait();
    assert_eq!(logs.stdout, "== talk@1 (running) ==\nfirst\n");
}
